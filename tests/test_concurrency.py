"""One writer per home, and changes that take effect for questions at load time.

Writers (load, index, delete, verify, adapt) hold the home's lock: a second one is refused
with the holder's pid, so two indexes never interleave their rows and a load can never delete
projects under a running index. Questions never take the lock. A project moved to another
account is out of its old account's answers as soon as the load returns.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from hltm_resources.config import Settings
from hltm_resources.indexing.checks import check_level
from hltm_resources.stores import database
from hltm_resources.stores.lock import home_lock
from query import Memory
from tests.conftest import write_tree
from tests.test_faults import hltm

pytestmark = pytest.mark.slow


def snapshot(directory: Path, p1_account: str = "acme", drop: tuple[str, ...] = ()) -> Path:
    """Two accounts with one recruiter each; p1 is a Berlin search at ``p1_account``."""
    seat = {"acme": "ana", "zeta": "zed"}[p1_account]
    projects = [
        ("p1", seat, "Platform Engineer Berlin"),
        ("p2", "ana", "Data Engineer Lisbon"),
        ("p3", "zed", "Nurse Dublin"),
        ("p4", "ana", "Designer Lisbon"),
    ]
    docs = {
        "p1": '{"job_title": "Platform Engineer", "office_location": "Berlin, Germany"}',
        "p2": '{"job_title": "Data Engineer", "office_location": "Lisbon, Portugal"}',
        "p3": '{"job_title": "Registered Nurse", "office_location": "Dublin, Ireland"}',
        "p4": '{"job_title": "Product Designer", "office_location": "Lisbon, Portugal"}',
    }
    kept = [p for p in projects if p[0] not in drop]
    return write_tree(
        directory,
        {"ana": "acme", "zed": "zeta"},
        kept,
        [(f"{p}-d", p, docs[p]) for p, _, _ in kept],
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("concurrency")
    for args in (("load", str(snapshot(root / "v1"))), ("index",)):
        done = hltm(root / "home", *args)
        assert done.returncode == 0, done.stderr
    snapshot(root / "moved", p1_account="zeta")
    snapshot(root / "without-p2", drop=("p2",))
    return root


@pytest.fixture
def home(built, tmp_path) -> Path:
    shutil.copytree(built / "home", tmp_path / "home")
    return tmp_path / "home"


def cited(home: Path, question: str, scope: str) -> list[str]:
    with Memory(Settings(home=home), log_queries=False) as mem:
        return mem.ask(question, scope=scope).references


def healthy(home: Path) -> None:
    settings = Settings(home=home)
    for level in settings.schema.bottom_up:
        result = check_level(settings, level)
        assert result.passed, result.problems  # no "N rows but 2N vectors"


@pytest.mark.parametrize("command", [("index",), ("load", "{v1}"), ("delete", "project:p2")])
def test_a_writer_is_refused_while_another_holds_the_home(home, built, command):
    args = [a.format(v1=built / "v1") for a in command]
    before = (home / "hltm.duckdb").read_bytes()
    with home_lock(home, "index"):
        refused = hltm(home, *args)
    assert refused.returncode == 2
    assert f"hltm index (pid {os.getpid()}) is writing" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert (home / "hltm.duckdb").read_bytes() == before  # nothing was touched


def test_the_lock_is_reentrant_in_one_process_and_exclusive_across_processes(tmp_path):
    with home_lock(tmp_path, "index"), home_lock(tmp_path, "delete"):
        probe = subprocess.run(
            [
                sys.executable,
                "-c",
                "from hltm_resources.stores.lock import home_lock; import sys\n"
                f"with home_lock({str(tmp_path)!r}, 'load'): pass",
            ],
            capture_output=True,
            text=True,
        )
        assert probe.returncode != 0 and "HomeBusyError" in probe.stderr
    with home_lock(tmp_path, "load"):  # released: free again
        pass


def test_two_indexes_started_together_leave_one_copy_of_every_row(built, tmp_path):
    home = tmp_path / "home"
    assert hltm(home, "load", str(built / "v1")).returncode == 0
    # Two first runs on a fresh home (no Dagster instance yet): one builds, the other is
    # refused in one line or finds nothing left to do.
    runs = [
        subprocess.Popen(
            [sys.executable, "-m", "hltm_assets.cli", "--home", str(home), "index"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    results = [(r.wait(timeout=600), r.stderr.read()) for r in runs]
    for code, err in results:
        assert code == 0 or (code == 2 and "is writing" in err), err
        assert "Traceback" not in err
    assert any(code == 0 for code, _ in results)
    healthy(home)
    again = hltm(home, "index", "--json")
    assert '"leaves_built": 0' in again.stdout


def test_a_load_during_an_index_never_brings_a_deleted_project_back(built, tmp_path):
    home = tmp_path / "home"
    assert hltm(home, "load", str(built / "v1")).returncode == 0
    index = subprocess.Popen(
        [sys.executable, "-m", "hltm_assets.cli", "--home", str(home), "index"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    load = hltm(home, "load", str(built / "without-p2"))
    code, err = index.wait(timeout=600), index.stderr.read()
    # Whichever takes the writer lock first runs; the other is refused with "is writing".
    assert code == 0 or (code == 2 and "is writing" in err and load.returncode == 0), err
    assert load.returncode == 0 or "is writing" in load.stderr, load.stderr
    if load.returncode != 0:  # refused while the index ran: load again, as its message says
        assert hltm(home, "load", str(built / "without-p2")).returncode == 0
    assert hltm(home, "index").returncode == 0
    with database.connect(home / "hltm.duckdb", read_only=True) as con:
        nodes = {r[0] for r in con.execute("SELECT node_id FROM mem_nodes").fetchall()}
    assert "project:p2" not in nodes
    assert "project:p2" not in cited(home, "Which searches are in Lisbon?", "account:acme")
    healthy(home)


def test_questions_asked_during_load_and_index_get_answers_or_documented_errors(home, built):
    from hltm_resources.errors import USER_ERRORS

    errors: list[BaseException] = []
    answers: list[list[str]] = []
    stop = threading.Event()

    def ask_forever() -> None:
        with Memory(Settings(home=home), log_queries=False) as mem:
            while not stop.is_set():
                try:
                    answers.append(mem.ask("Which searches are in Lisbon?", "seat:ana").references)
                except USER_ERRORS:
                    pass  # documented: store busy for too long, scope being rebuilt
                except BaseException as exc:  # anything else is a defect
                    errors.append(exc)

    asker = threading.Thread(target=ask_forever)
    asker.start()
    try:
        for args in (("load", str(built / "without-p2")), ("index",)):
            done = hltm(home, *args)
            assert done.returncode == 0, done.stderr
    finally:
        stop.set()
        asker.join(timeout=120)
    assert errors == []
    assert answers
    assert "project:p2" not in answers[-1]


def test_a_moved_project_leaves_its_old_account_s_answers_at_load_time(home, built):
    question = "Which searches are in Berlin?"
    assert "project:p1" in cited(home, question, "account:acme")
    done = hltm(home, "load", str(built / "moved"))
    assert done.returncode == 0, done.stderr
    # No index yet: the old seat and account must already be without it.
    for scope in ("account:acme", "seat:ana"):
        assert "project:p1" not in cited(home, question, scope)
    assert hltm(home, "index").returncode == 0
    assert "project:p1" in cited(home, question, "account:zeta")
    assert "project:p1" not in cited(home, question, "account:acme")


def test_a_seat_emptied_by_a_deletion_answers_from_its_projects_until_rebuilt(home):
    done = hltm(home, "delete", "project:p2", "--no-rebuild")
    assert done.returncode == 0, done.stderr
    # The seat's own memory is emptied (no vectors), its remaining projects still answer.
    assert cited(home, "Which searches are in Lisbon?", "seat:ana") == ["project:p4"]
