"""A run launcher that keeps one run worker warm: what ``hltm dev`` launches runs with.

Dagster's default launcher asks the code server to start each run in a new Python process
(``spawn``), which imports Dagster, LanceDB and this package and loads the definitions before
the run's first step: about 3 s of a project run that builds for 0.5 s. Memory climbs the tree
one level a run (a seat run after its project's, an account run after its seat's, automation
requesting each), so a partition launched from the UI paid that start three times.

:class:`WarmRunLauncher` keeps one worker process started ahead (``python -m
hltm_assets.launcher``), with those imports done and the instance opened once (which imports
its storage). A launched run is handed to it as the same ``ExecuteRunArgs`` that ``dagster api
execute_run`` takes; the worker executes that one run the way that command does (Dagster's own
function, its events and failures in the run's event log), then exits, and the launcher
starts the next worker. A run whose code does not run on this interpreter (another code
location, another Python) goes through the default launcher.

Terminating a run signals its worker (SIGTERM, which Dagster turns into an interrupt: the run
ends as canceled); run monitoring asks whether the worker still lives, so a run whose worker
was killed is marked failed.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

from dagster import _check as check
from dagster._core.launcher import DefaultRunLauncher, LaunchRunContext
from dagster._core.launcher.base import CheckRunHealthResult, WorkerStatus
from dagster._core.run_coordinator import QueuedRunCoordinator

#: The run tags that name the worker of a run this launcher handed to one.
WORKER_PID_TAG = "hltm/run_worker_pid"
WORKER_HOST_TAG = "hltm/run_worker_host"


class WarmRunLauncher(DefaultRunLauncher):
    """Runs each launched run in a worker process started ahead of it (module docstring)."""

    def __init__(self, inst_data=None):
        super().__init__(inst_data=inst_data)
        self._lock = threading.Lock()
        self._ready: subprocess.Popen | None = None
        self._disposed = False

    def _start_worker(self) -> subprocess.Popen:
        from dagster._serdes import serialize_value

        worker = subprocess.Popen(
            [sys.executable, "-m", "hltm_assets.launcher"], stdin=subprocess.PIPE, text=True
        )
        assert worker.stdin is not None
        # The instance first: the worker opens it once ahead (its storage modules imported).
        worker.stdin.write(serialize_value(self._instance.get_ref()) + "\n")
        worker.stdin.flush()
        threading.Thread(target=self._reap, args=(worker,), daemon=True).start()
        return worker

    def _reap(self, worker: subprocess.Popen) -> None:
        """Wait for a worker to exit (this process may launch runs for days); then make sure
        one waits (the one started with its run may have died)."""
        worker.wait()
        self.warm_up()

    def warm_up(self) -> None:
        """Start a worker unless one waits, so that the next launched run finds it ready."""
        with self._lock:
            if not self._disposed and (self._ready is None or self._ready.poll() is not None):
                self._ready = self._start_worker()

    def dispose(self) -> None:
        """Let the waiting worker go: it exits when its stdin closes."""
        with self._lock:
            self._disposed = True
            worker, self._ready = self._ready, None
        if worker is not None and worker.stdin is not None:
            worker.stdin.close()

    def _hand_over(self, line: str) -> subprocess.Popen:
        """Give ``line`` to the waiting worker (one still importing takes it when done), or
        to a new one if none waits or it just died; and start the next one now, so that it
        is ready for the next level's run, a few seconds away (it takes about 2.5 s, and a
        worker that was still importing when its run came delayed the run by the rest)."""
        with self._lock:
            worker, self._ready = self._ready, None
        self.warm_up()
        for _ in range(2):
            if worker is None or worker.poll() is not None:
                worker = self._start_worker()
            assert worker.stdin is not None
            try:
                worker.stdin.write(line + "\n")
                worker.stdin.close()
                return worker
            except OSError:  # it died between the check and the write
                worker = None
        raise RuntimeError("two run workers in a row exited before taking the run")

    def launch_run(self, context: LaunchRunContext) -> None:
        from dagster._grpc.types import ExecuteRunArgs
        from dagster._serdes import serialize_value

        run = context.dagster_run
        origin = run.job_code_origin
        if origin is None or origin.executable_path != sys.executable:
            super().launch_run(context)  # code that runs elsewhere: its code server starts it
            return
        args = ExecuteRunArgs(
            job_origin=origin, run_id=run.run_id, instance_ref=self._instance.get_ref()
        )
        worker = self._hand_over(serialize_value(args))
        self._instance.add_run_tags(
            run.run_id, {WORKER_PID_TAG: str(worker.pid), WORKER_HOST_TAG: socket.gethostname()}
        )

    def _worker_pid(self, run_id: str) -> int | None:
        run = self._instance.get_run_by_id(run_id)
        if run is None or run.tags.get(WORKER_HOST_TAG) != socket.gethostname():
            return None
        pid = run.tags.get(WORKER_PID_TAG)
        return int(pid) if pid else None

    def terminate(self, run_id: str) -> bool:
        check.str_param(run_id, "run_id")
        pid = self._worker_pid(run_id)
        if pid is None:
            return super().terminate(run_id)
        run = self._instance.get_run_by_id(run_id)
        if run is None or run.is_finished or not _is_worker(pid):
            return False
        self._instance.report_run_canceling(run)
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return False
        return True

    @property
    def supports_check_run_worker_health(self) -> bool:
        return True

    def check_run_worker_health(self, run) -> CheckRunHealthResult:
        pid = self._worker_pid(run.run_id)
        if pid is None:
            # Launched the default way, whose worker Dagster does not check: no verdict
            # (monitoring would mark a run with any other status failed).
            return CheckRunHealthResult(WorkerStatus.RUNNING, "started by its code server")
        if _is_worker(pid):
            return CheckRunHealthResult(WorkerStatus.RUNNING)
        return CheckRunHealthResult(WorkerStatus.FAILED, f"run worker process {pid} is gone")


class WarmingRunQueue(QueuedRunCoordinator):
    """Dagster's run queue, which in the daemon (the process that launches queued runs) has
    the launcher start its warm worker as the daemon starts: the launcher itself is made only
    when a first run is launched, too late for that run."""

    def register_instance(self, instance) -> None:
        super().register_instance(instance)
        if _in_daemon() and isinstance(instance.run_launcher, WarmRunLauncher):
            instance.run_launcher.warm_up()


def _in_daemon() -> bool:
    """Whether this process is ``dagster-daemon`` (``dagster dev`` starts it as
    ``python -m dagster._daemon``)."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    name = spec.name if spec is not None else Path(sys.argv[0] if sys.argv else "").name
    return name.startswith("dagster._daemon") or name == "dagster-daemon"


def _is_worker(pid: int) -> bool:
    """Whether ``pid`` is a live run worker (not exited, not a recycled pid)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "Z":  # exited, not reaped yet
                return False
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            command = f.read()
    except OSError:  # no /proc here: the signal above is all there is to know
        return True
    return b"hltm_assets.launcher" in command or b"execute_run" in command


def _changed_since(started: float) -> list[str]:
    """Source files of this process's modules changed (or gone) since ``started``."""
    changed = []
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if path:
            try:
                if os.stat(path).st_mtime > started:
                    changed.append(path)
            except OSError:
                changed.append(path)
    return changed


def main() -> int:
    """The worker: import what every run needs, wait for one run's ``ExecuteRunArgs`` on
    stdin, execute it as ``dagster api execute_run`` does. Exits when stdin closes unused
    (the launcher's process ended). If code it imported changed while it waited (edited,
    then the definitions reloaded), it becomes that command instead, in the same process
    (same pid), so the run imports the code afresh."""
    import time

    started = time.time()
    # What a run imports: the code location (with it Dagster and the stores) and the engine.
    import onnxruntime  # noqa: F401
    import tokenizers  # noqa: F401
    from dagster._cli.api import execute_run_command
    from dagster._core.instance import DagsterInstance, InstanceRef
    from dagster._serdes import deserialize_value
    from dagster._utils.interrupts import setup_interrupt_handlers

    import hltm_assets.definitions  # noqa: F401
    import hltm_resources.engines.extractive  # noqa: F401

    setup_interrupt_handlers()  # SIGTERM (terminate) interrupts the run as Ctrl-C would
    try:
        instance_ref = sys.stdin.readline().strip()
        if not instance_ref:
            return 0
        # Opening the instance imports its storages (SQLAlchemy, alembic: about 0.45 s).
        with DagsterInstance.from_ref(deserialize_value(instance_ref, InstanceRef)):
            pass
        line = sys.stdin.readline().strip()
    except KeyboardInterrupt:  # stopped while waiting (dagster dev stopping): nothing ran
        return 0
    if not line:
        return 0
    if _changed_since(started):
        os.execv(sys.executable, [sys.executable, "-m", "dagster", "api", "execute_run", line])
    try:
        execute_run_command.main([line], standalone_mode=False)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
