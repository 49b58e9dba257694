"""The warm run launcher of ``hltm dev`` (``hltm_assets/launcher.py``): a launched run executes
in a worker process started before it, to its end, and the next worker starts after it; a
dead waiting worker is replaced; terminating the run cancels it; run monitoring sees a killed
worker as failed; changed code runs on a fresh interpreter. A real Dagster instance on disk,
real processes."""

from __future__ import annotations

import os
import signal
import time

import dagster as dg
import pytest
from dagster._core.definitions.reconstruct import ReconstructableJob
from dagster._core.launcher import LaunchRunContext
from dagster._core.launcher.base import WorkerStatus

from hltm_assets.launcher import WORKER_PID_TAG, WarmRunLauncher

pytestmark = pytest.mark.slow


@dg.op
def quick() -> int:
    return 1


@dg.op
def slow() -> None:
    for _ in range(600):  # a minute, unless the run is terminated
        time.sleep(0.1)


@dg.job
def quick_job():
    quick()


@dg.job
def slow_job():
    slow()


def launch(instance, launcher: WarmRunLauncher, job, python: str | None = None) -> str:
    """Create a run of ``job`` (its code on ``python``, default this one) and launch it."""
    # By file: the worker imports it from its path (pytest's module name is its own).
    origin = ReconstructableJob.for_file(__file__, job.name).get_python_origin()
    if python is not None:
        repository = origin.repository_origin._replace(executable_path=python)
        origin = origin._replace(repository_origin=repository)
    run = instance.create_run_for_job(job_def=job, job_code_origin=origin, remote_job_origin=None)
    launcher.launch_run(LaunchRunContext(dagster_run=run, workspace=None))
    return run.run_id


def wait_status(instance, run_id: str, statuses: set, timeout_s: float = 120) -> dg.DagsterRun:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        run = instance.get_run_by_id(run_id)
        if run.status in statuses:
            return run
        if run.is_finished:
            break
        time.sleep(0.2)
    log = "\n".join(
        f"{e.dagster_event_type}: {e.user_message[:300]}"
        + (f" {e.dagster_event.event_specific_data.error.message}" if _error(e) else "")
        for e in instance.all_logs(run_id)
    )
    raise AssertionError(f"run {run_id} is {run.status}, expected one of {statuses}:\n{log}")


def _error(entry) -> bool:
    data = entry.dagster_event.event_specific_data if entry.dagster_event else None
    return getattr(data, "error", None) is not None


@pytest.fixture
def instance(tmp_path):
    with dg.instance_for_test(temp_dir=str(tmp_path)) as instance:
        yield instance


@pytest.fixture
def launcher(instance):
    launcher = WarmRunLauncher()
    launcher.register_instance(instance)
    launcher.warm_up()
    yield launcher
    launcher.dispose()


def test_a_run_executes_to_its_end_in_the_worker_started_before_it(instance, launcher):
    warm = launcher._ready
    run_id = launch(instance, launcher, quick_job)
    run = wait_status(instance, run_id, {dg.DagsterRunStatus.SUCCESS})
    assert run.tags[WORKER_PID_TAG] == str(warm.pid) != str(os.getpid())
    assert warm.wait(timeout=60) == 0  # one run a worker: it exits after it
    deadline = time.monotonic() + 30  # and the next one is started
    while launcher._ready is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert launcher._ready is not None and launcher._ready.pid != warm.pid


def test_a_run_whose_waiting_worker_died_runs_in_a_new_one(instance, launcher):
    dead = launcher._ready
    dead.kill()
    dead.wait(timeout=30)
    run_id = launch(instance, launcher, quick_job)
    run = wait_status(instance, run_id, {dg.DagsterRunStatus.SUCCESS})
    assert run.tags[WORKER_PID_TAG] != str(dead.pid)


def test_terminating_a_run_cancels_it_in_its_worker(instance, launcher):
    run_id = launch(instance, launcher, slow_job)
    wait_status(instance, run_id, {dg.DagsterRunStatus.STARTED})
    assert launcher.terminate(run_id)
    run = wait_status(instance, run_id, {dg.DagsterRunStatus.CANCELED}, timeout_s=60)
    assert run.status == dg.DagsterRunStatus.CANCELED


def test_monitoring_sees_a_killed_worker_as_failed(instance, launcher):
    run_id = launch(instance, launcher, slow_job)
    run = wait_status(instance, run_id, {dg.DagsterRunStatus.STARTED})
    assert launcher.check_run_worker_health(run).status == WorkerStatus.RUNNING
    pid = int(run.tags[WORKER_PID_TAG])
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while launcher.check_run_worker_health(run).status == WorkerStatus.RUNNING:
        assert time.monotonic() < deadline, "the killed worker still looks alive"
        time.sleep(0.2)
    assert launcher.check_run_worker_health(run).status == WorkerStatus.FAILED


def test_a_run_of_another_interpreter_goes_to_its_code_server(instance, launcher):
    """Code that runs on another Python is started the default way (which needs the
    workspace's code server: here none, so the default launcher's own refusal shows), and
    the warm worker stays for the next run."""
    warm = launcher._ready
    with pytest.raises(Exception, match="requires a workspace"):
        launch(instance, launcher, quick_job, python="/another/python")
    assert launcher._ready is warm and warm.poll() is None


def test_a_worker_whose_code_changed_runs_the_run_on_a_fresh_interpreter(instance):
    """Code edited after the worker imported it (a developer's change, then "Reload
    definitions"): the worker becomes Dagster's own ``execute_run`` in its process."""
    import hltm_assets.launcher as module

    path = module.__file__
    before = os.stat(path)
    later = time.time() + 3600
    os.utime(path, (later, later))  # "changed" after any worker started now
    try:
        launcher = WarmRunLauncher()
        launcher.register_instance(instance)
        launcher.warm_up()
        run_id = launch(instance, launcher, slow_job)
        run = wait_status(instance, run_id, {dg.DagsterRunStatus.STARTED})
        pid = int(run.tags[WORKER_PID_TAG])
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            assert b"execute_run" in f.read()
        assert launcher.terminate(run_id)
        wait_status(instance, run_id, {dg.DagsterRunStatus.CANCELED}, timeout_s=60)
        launcher.dispose()
    finally:
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
