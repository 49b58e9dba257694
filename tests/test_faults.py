"""A process killed at any step of delete, load or index loses nothing and keeps nothing.

Each case copies one built home, runs the real command with ``HLTM_FAULT`` naming the step
where it dies of SIGKILL, then runs it again plainly. Afterwards the text of the deleted
project is in no file under the home (raw bytes: every LanceDB version, DuckDB, caches,
Dagster's storage) and ``verify`` finds the memory identical to a clean build. Between the
kill and the re-run, ``check`` fails and no question cites the deleted project.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from hltm_resources.config import Settings
from hltm_resources.errors import ScopeError
from hltm_resources.faults import ENV, FAULT_POINTS
from hltm_resources.indexing.verify import verify
from query import Memory
from tests.conftest import write_tree

pytestmark = pytest.mark.slow

#: Stated only in project p2's id, name and documents: node ids may be e-mail addresses, so
#: they must go too (Dagster's run history names partitions and nodes).
SENTINEL = "quokkaumbra5821"
P2 = f"p2-{SENTINEL}"

ERASE_POINTS = [p for p in FAULT_POINTS if p.startswith(("erase:", "rewrite:"))]
DELETE_POINTS = ["delete:committed", *ERASE_POINTS]
LOAD_POINTS = ["load:committed", *ERASE_POINTS]
INDEX_POINTS = [p for p in FAULT_POINTS if p.startswith("index:")]


def snapshot(directory: Path, with_p2: bool = True) -> Path:
    projects = [("p1", "ana", "Data Engineer"), ("p3", "ben", "Nurse")]
    docs = [
        ("p1-d0", "p1", '{"job_title": "Data Engineer", "office_location": "Lisbon, Portugal"}'),
        ("p3-d0", "p3", '{"job_title": "Registered Nurse", "office_location": "Dublin, Ireland"}'),
    ]
    if with_p2:
        projects.insert(1, (P2, "ana", f"Platform Engineer {SENTINEL}"))
        docs += [
            ("p2-d0", P2, '{"job_title": "Platform Engineer", "office_location": "Berlin"}'),
            ("p2-d1", P2, f"The hiring manager insists on {SENTINEL} experience for this search."),
        ]
    return write_tree(directory, {"ana": "acme", "ben": "acme"}, projects, docs)


def hltm(home: Path, *args: str, fault: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != ENV}
    if fault:
        env[ENV] = fault
    return subprocess.run(
        [sys.executable, "-m", "hltm_assets.cli", "--home", str(home), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


def files_holding(home: Path, text: str) -> list[str]:
    needle = text.encode()
    return sorted(
        str(p.relative_to(home))
        for p in home.rglob("*")
        if p.is_file() and needle in p.read_bytes()
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """A home with p2 loaded and indexed through the CLI (so Dagster's storage exists)."""
    root = tmp_path_factory.mktemp("faults")
    home = root / "home"
    for args in (("load", str(snapshot(root / "with-p2"))), ("index",)):
        done = hltm(home, *args)
        assert done.returncode == 0, done.stderr
    snapshot(root / "without-p2", with_p2=False)
    # The search below can see the sentinel where it is stored: in the DuckDB file, in
    # LanceDB's data files and in Dagster's run history (else "absent afterwards" would
    # prove nothing).
    held = files_holding(home, SENTINEL)
    assert "hltm.duckdb" in held
    assert any(f.startswith("lancedb/") for f in held)
    assert any(f.startswith("history/") for f in held)
    return root


def copy_home(built: Path, tmp_path: Path) -> Path:
    shutil.copytree(built / "home", tmp_path / "home")
    return tmp_path / "home"


def assert_erased_and_lossless(home: Path) -> None:
    assert files_holding(home, SENTINEL) == []
    report = verify(Settings(home=home))
    assert report.ok, (report.differences, report.vector_mismatches)
    assert report.nodes == 5  # acme, ana, ben, p1, p3: nothing of p2
    check = hltm(home, "check")
    assert check.returncode == 0, check.stdout + check.stderr


def no_answer_cites_p2(home: Path) -> None:
    with Memory(Settings(home=home), log_queries=False) as mem:
        for scope in ("account:acme", "seat:ana"):
            for question in (f"Who needs {SENTINEL}?", "Which searches are in Berlin?"):
                assert f"project:{P2}" not in mem.ask(question, scope=scope).references


@pytest.mark.parametrize("point", DELETE_POINTS)
def test_a_delete_killed_at_any_step_is_finished_by_running_it_again(built, tmp_path, point):
    home = copy_home(built, tmp_path)
    killed = hltm(home, "delete", f"project:{P2}", fault=point)
    assert killed.returncode == -9, killed.stderr
    no_answer_cites_p2(home)
    again = hltm(home, "delete", f"project:{P2}")
    # Killed after its transaction, the deletion is already recorded: the re-run finishes its
    # erasure and either rebuilds the ancestors or (the journal already done) says the
    # project is gone; an index then rebuilds what is left.
    assert again.returncode == 0 or "nothing was deleted" in again.stderr, again.stderr
    done = hltm(home, "index")
    assert done.returncode == 0, done.stderr
    assert_erased_and_lossless(home)


@pytest.mark.parametrize("point", LOAD_POINTS)
def test_a_load_killed_at_any_step_is_finished_by_running_it_again(built, tmp_path, point):
    home = copy_home(built, tmp_path)
    killed = hltm(home, "load", str(built / "without-p2"), fault=point)
    assert killed.returncode == -9, killed.stderr
    no_answer_cites_p2(home)
    for args in (("load", str(built / "without-p2")), ("index",)):
        done = hltm(home, *args)
        assert done.returncode == 0, done.stderr
    assert_erased_and_lossless(home)


@pytest.mark.parametrize("point", INDEX_POINTS)
def test_an_index_killed_at_any_step_is_finished_by_running_it_again(built, tmp_path, point):
    home = copy_home(built, tmp_path)
    done = hltm(home, "load", str(built / "without-p2"))
    assert done.returncode == 0, done.stderr
    killed = hltm(home, "index", fault=point)
    assert killed.returncode == -9, killed.stderr
    again = hltm(home, "index")
    assert again.returncode == 0, again.stderr
    assert_erased_and_lossless(home)
    # The run the killed index had started is marked failed, not left STARTED for good.
    statuses = run_statuses(home)
    assert "STARTED" not in statuses.values()
    if point == "index:level-built":
        assert "FAILURE" in statuses.values()


def run_statuses(home: Path) -> dict[str, str]:
    with sqlite3.connect(home / "history" / "runs.db") as con:
        return dict(con.execute("SELECT run_id, status FROM runs").fetchall())


def test_check_fails_while_an_erasure_is_pending(built, tmp_path):
    home = copy_home(built, tmp_path)
    killed = hltm(home, "delete", f"project:{P2}", fault="delete:committed")
    assert killed.returncode == -9
    check = hltm(home, "check")
    assert check.returncode == 1
    assert "erasure" in check.stdout
    with (
        Memory(Settings(home=home), log_queries=False) as mem,
        pytest.raises(ScopeError, match="was deleted"),
    ):
        mem.ask("Which searches are in Berlin?", scope=f"project:{P2}")


def test_sigterm_during_an_index_stops_it_at_once_and_the_next_index_finishes(tmp_path):
    """SIGTERM while a level's run builds: the run fails and nothing else starts (a failed
    range used to be run again in halves, building on long after the signal); the command
    says it was interrupted; the next ``hltm index`` builds what is left."""
    import signal
    import time

    from query.evaluation.data.sample_world import write_snapshot
    from tests.conftest import small_world

    home = tmp_path / "home"
    assert hltm(home, "load", str(write_snapshot(small_world(), tmp_path / "snap"))).returncode == 0
    proc = subprocess.Popen(
        [sys.executable, "-m", "hltm_assets.cli", "--home", str(home), "index"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        runs_db = home / "history" / "runs.db"
        deadline = time.monotonic() + 300
        while not dagster_runs(runs_db, "STARTED") and proc.poll() is None:
            assert time.monotonic() < deadline, "no run started"
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=300)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "hltm: interrupted", err
    statuses = [status for _, status in dagster_runs(runs_db)]
    assert statuses[-1] in ("FAILURE", "STARTED") and "FAILURE" not in statuses[:-1], statuses

    again = hltm(home, "index")
    assert again.returncode == 0, again.stderr
    report = verify(Settings(home=home))
    assert report.ok, (report.differences, report.vector_mismatches)


def dagster_runs(runs_db: Path, status: str | None = None) -> list[tuple[str, str]]:
    """(run id, status) of the home's Dagster runs in the order they were made."""
    if not runs_db.exists():
        return []
    con = sqlite3.connect(f"file:{runs_db}?mode=ro", uri=True, timeout=30)
    try:
        rows = con.execute("SELECT run_id, status FROM runs ORDER BY id").fetchall()
    except sqlite3.OperationalError:  # not made yet
        return []
    finally:
        con.close()
    return [r for r in rows if status is None or r[1] == status]
