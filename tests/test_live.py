"""Live memory: writes of one item, read back at once, through the memory service or directly.

The home is a hand-written tree (two seats of one account, three projects); the writes name
words no document holds, so a question finds them only if memory took the write.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hltm_resources.config import Settings
from hltm_resources.faults import ENV
from hltm_resources.stores import database
from hltm_resources.stores.changes import ChangeError
from query.writer import Writer, ask_service
from tests.conftest import write_tree
from tests.test_deletion import duckdb_hits, lancedb_hits, raw_hits

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


def hltm(home: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hltm_assets.cli", "--home", str(home), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={k: v for k, v in (env or os.environ).items()},
    )


def tree(directory: Path) -> Path:
    return write_tree(
        directory,
        {"ana": "acme", "ben": "acme"},
        [("p1", "ana", "Data Engineer"), ("p2", "ana", "Nurse"), ("p3", "ben", "Chef")],
        [
            ("p1-d0", "p1", '{"job_title": "Data Engineer", "office_location": "Lisbon"}'),
            ("p2-d0", "p2", '{"job_title": "Registered Nurse", "office_location": "Dublin"}'),
            ("p3-d0", "p3", '{"job_title": "Head Chef", "office_location": "Porto"}'),
        ],
    )


@pytest.fixture
def home(tmp_path) -> Path:
    home = tmp_path / "home"
    for args in (("load", str(tree(tmp_path / "snap"))), ("index",)):
        done = hltm(home, *args)
        assert done.returncode == 0, done.stderr
    return home


@contextlib.contextmanager
def service(home: Path, fault: str | None = None, *args: str):
    """``hltm serve`` on a free port (``args`` added); yields (process, url); stopped at the
    end."""
    env = {k: v for k, v in os.environ.items() if k != ENV}
    if fault:
        env[ENV] = fault
    (home / "service.json").unlink(missing_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-m", "hltm_assets.cli", "--home", str(home), "serve", "--port", "0"]
        + list(args),
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not (home / "service.json").exists():
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline, "the service did not start"
            time.sleep(0.1)
        yield proc, json.loads((home / "service.json").read_text())["url"]
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=60)


def finds(url: str, scope: str, word: str, question: str | None = None) -> bool:
    """Whether a question at ``scope`` (default: who needs ``word``) retrieves a passage
    holding ``word``."""
    out = ask_service(url, question or f"Who needs {word}?", scope, contexts=True)
    return word in json.dumps(out["contexts"])


def test_remember_then_ask_finds_the_write_at_its_leaf_seat_and_account(home):
    with service(home) as (_, url):
        writer = Writer(Settings(home=home))
        out = writer.remember("p2", "The ward manager now insists on quillfeather triage.")
        assert out["through"] == url and out["leaves"] == ["project:p2"]
        # Read-your-writes: the call returned once the leaf was built.
        assert finds(url, "project:p2", "quillfeather")
        # Seat and account follow within the batch; a write waiting for them returns then.
        writer.remember("p3", "Menu tastings need marrowbloom sourcing.", wait="root")
        for scope in ("seat:ben", "account:acme"):
            assert finds(url, scope, "marrowbloom")
        assert finds(url, "account:acme", "quillfeather")
        assert not finds(url, "project:p1", "quillfeather")  # the write stays in its subtree
        # A new leaf is created with its parent and name.
        new = {"name": "Pastry Chef", "parent": "ben"}
        writer.remember("p4", "Pastry lead, starts in March.", **new, wait="root")
        assert finds(url, "project:p4", "Pastry") and finds(url, "seat:ben", "Pastry")
    assert hltm(home, "verify").returncode == 0


def test_a_change_feed_with_a_bad_line_is_refused_whole(home, tmp_path):
    good = {
        "op": "upsert",
        "level": "document",
        "record": {
            "doc_id": "p1-d9",
            "project_id": "p1",
            "kind": "note",
            "text": "Needs Kafka.",
            "updated_at": "2026-12-06",
        },
    }
    lines = [
        json.dumps(good),
        "{not json",
        json.dumps({"op": "upsert", "level": "document", "record": {"doc_id": "x"}}),
        json.dumps(good | {"record": good["record"] | {"doc_id": "p9-d0", "project_id": "p9"}}),
        json.dumps({"op": "delete", "level": "document", "id": "no-such-doc"}),
        json.dumps({"op": "rename", "level": "document", "id": "p1-d0"}),
    ]
    feed = tmp_path / "changes.jsonl"
    feed.write_text("\n".join(lines) + "\n")
    done = hltm(home, "apply", str(feed))
    assert done.returncode == 2
    err = done.stderr
    assert "changes.jsonl:2: is not valid JSON" in err
    assert "changes.jsonl:3: missing fields project_id, kind, text, updated_at" in err
    assert "changes.jsonl:6: op must be one of upsert, delete" in err
    assert "the source of truth is unchanged" in err
    # Lines that parse are then checked against the source of truth, as a batch.
    feed.write_text("\n".join(lines[i] for i in (0, 3, 4)) + "\n")
    with pytest.raises(ChangeError) as refused:
        Writer(Settings(home=home)).apply(
            [json.loads(line) for line in feed.read_text().splitlines()], source="changes.jsonl"
        )
    message = str(refused.value)
    assert "changes.jsonl:2: project_id 'p9' does not exist in projects.jsonl" in message
    assert "changes.jsonl:3: document 'no-such-doc' is not in the source of truth" in message
    with database.connect(home / "hltm.duckdb", read_only=True) as con:
        assert con.execute("SELECT count(*) FROM sot_documents").fetchone()[0] == 3
    # Through a running service, the same refusal, and the service goes on taking writes.
    with service(home) as (_, url):
        with pytest.raises(ChangeError, match="does not exist in projects.jsonl"):
            Writer(Settings(home=home)).apply([json.loads(lines[3])])
        assert Writer(Settings(home=home)).apply([good])["leaves"] == ["project:p1"]


WORD = "vexmarrowquint"


def no_trace(home: Path) -> None:
    """The word is nowhere: no table, no LanceDB version, no byte of any file in the home
    (DuckDB, LanceDB, caches, Dagster's run history); memory equals a full rebuild."""
    assert duckdb_hits(home / "hltm.duckdb", WORD) == []
    assert lancedb_hits(home / "lancedb", WORD) == []
    assert raw_hits(home, WORD) == []
    assert hltm(home, "verify").returncode == 0


def test_forget_through_the_service_leaves_no_trace_of_the_document(home):
    writer = Writer(Settings(home=home))
    # --max-runs 0: every materialization is reported without a run, and must be erased too.
    with service(home, None, "--max-runs", "0") as (_, url):
        doc = writer.remember("p1", f"The client asked for {WORD} clearance.", wait="root")
        # Asked without the word: the query log keeps questions, which must not hold it.
        asked = "Which clearance did the client ask for?"
        assert finds(url, "account:acme", WORD, asked)
        out = writer.forget(doc["doc_id"], wait="root")
        assert out["leaves"] == ["project:p1"] and "project:p1" in out["emptied"]
        assert not finds(url, "account:acme", WORD, asked)
        assert finds(url, "project:p1", "Lisbon")  # the leaf keeps its other documents
    no_trace(home)


def test_forget_without_a_service_leaves_no_trace_of_the_document(home):
    done = hltm(home, "remember", "p1", f"The client asked for {WORD} clearance.", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["through"] == "direct" and out["built"]["leaves_built"] == 1
    assert duckdb_hits(home / "hltm.duckdb", WORD)
    done = hltm(home, "forget", out["doc_id"])
    assert done.returncode == 0, done.stderr
    no_trace(home)


def test_a_batch_built_without_a_run_is_recorded_in_dagster_for_each_partition(home):
    import dagster as dg

    from hltm_assets.history import REPORTED, TRIGGER_TAG, open_instance

    with service(home, None, "--max-runs", "0") as _:
        Writer(Settings(home=home)).remember("p3", "Needs a sommelier.", wait="root")
    with open_instance(Settings(home=home)) as instance:
        for asset, partition in (
            ("project_memory", "p3"),
            ("seat_memory", "ben"),
            ("account_memory", "acme"),
        ):
            records = instance.fetch_materializations(
                dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[partition]),
                limit=1,
            ).records
            latest = records[0].asset_materialization
            assert latest.tags[TRIGGER_TAG] == REPORTED, (asset, latest.tags)
            # The leaf was built; a parent whose memory came out the same is recorded as such.
            expected = {"built"} if asset == "project_memory" else {"built", "unchanged"}
            assert latest.metadata["status"].value in expected
            assert "preview" in latest.metadata and "batch" in latest.metadata


def test_writes_from_four_processes_at_once_all_land(home):
    code = (
        "import sys; from hltm_resources.config import Settings; from query.writer import Writer;"
        "w = Writer(Settings(home=sys.argv[1]));"
        "[w.remember(sys.argv[2], f'client {sys.argv[3]} note {i}: needs skill{sys.argv[3]}x{i}',"
        " doc_id=f'c{sys.argv[3]}-{i}') for i in range(5)]"
    )
    with service(home) as (_, url):
        clients = [
            subprocess.Popen(
                [sys.executable, "-c", code, str(home), f"p{1 + k % 3}", str(k)],
                cwd=ROOT,
                stderr=subprocess.PIPE,
                text=True,
            )
            for k in range(4)
        ]
        for client in clients:
            assert client.wait(timeout=300) == 0, client.stderr.read()
        for k in range(4):
            assert finds(url, "account:acme", f"skill{k}x4")
    with database.connect(home / "hltm.duckdb", read_only=True) as con:
        written = {r[0] for r in con.execute("SELECT doc_id FROM sot_documents").fetchall()}
    assert {f"c{k}-{i}" for k in range(4) for i in range(5)} <= written
    assert hltm(home, "verify").returncode == 0


def test_a_service_killed_mid_batch_loses_no_acknowledged_write(home):
    writer = Writer(Settings(home=home))
    with service(home, fault="index:level-built") as (proc, _):
        # Acknowledged once durable; the service then dies after storing the leaf level.
        out = writer.remember("p3", "Sous chef must know brindlewort curing.", wait="applied")
        assert out["applied_ms"] is not None
        assert proc.wait(timeout=120) == -signal.SIGKILL
    with database.connect(home / "hltm.duckdb", read_only=True) as con:
        row = con.execute("SELECT text FROM sot_documents WHERE doc_id = ?", [out["doc_id"]])
        assert "brindlewort" in row.fetchone()[0]
    # A restart builds what the killed batch left (the seat and account above the leaf).
    with service(home) as (_, url):
        assert finds(url, "account:acme", "brindlewort")
    assert hltm(home, "verify").returncode == 0


def test_a_direct_write_killed_before_its_build_is_built_by_the_next_write(home):
    env = dict(os.environ, **{ENV: "write:committed"})
    killed = hltm(home, "remember", "p2", "Night shifts need a kestrelwing badge.", env=env)
    assert killed.returncode == -signal.SIGKILL
    assert hltm(home, "verify").returncode == 1  # written, not built: memory is behind
    done = hltm(home, "remember", "p3", "Tasting menu changes weekly.")
    assert done.returncode == 0, done.stderr
    # The second write's plan took the leaf the killed one left (journaled with its write).
    assert "project:p2" in done.stdout
    assert hltm(home, "verify").returncode == 0


def test_bad_requests_get_a_4xx_that_says_what_to_send(home):
    """Malformed JSON, wrong types, a 1 MB question: each a 4xx with a message, never a
    traceback, and the service goes on answering."""
    import urllib.error
    import urllib.request

    def post(url: str, path: str, raw: bytes) -> tuple[int, dict]:
        request = urllib.request.Request(url + path, data=raw, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    ask = {"question": "Where is it located?", "scope": "project:p1"}
    record = {"doc_id": "t1", "project_id": "p1", "kind": "note", "text": "Needs a forklift."}
    note = {"op": "upsert", "level": "document", "record": record | {"updated_at": "2026-12-01"}}
    bad = [
        ("/v1/ask", b"{not json", "not JSON"),
        ("/v1/ask", b"[1, 2]", "JSON object"),
        ("/v1/ask", json.dumps({"question": 5, "scope": "project:p1"}).encode(), "string"),
        ("/v1/ask", json.dumps({"question": "Where?", "scope": 7}).encode(), "node id"),
        ("/v1/ask", json.dumps({"question": "Where?", "scope": "galaxy:x"}).encode(), "level"),
        ("/v1/ask", json.dumps(ask | {"question": "x" * 1_048_576}).encode(), "at most 4,000"),
        ("/v1/changes", json.dumps({"changes": "all of them"}).encode(), "non-empty list"),
        (
            "/v1/changes",
            json.dumps({"changes": [{"op": "upsert"}], "wait": "never"}).encode(),
            "wait must be",
        ),
        ("/v1/changes", json.dumps({"changes": [note], "timeout_s": "soon"}).encode(), "timeout"),
        (
            "/v1/changes",
            json.dumps({"changes": [{"op": "drop", "level": "project"}]}).encode(),
            "op",
        ),
    ]
    with service(home) as (_, url):
        for path, raw, says in bad:
            status, out = post(url, path, raw)
            assert 400 <= status < 500 and says in out["error"], (path, raw[:80], out)
            assert "Traceback" not in out["error"]
        status, out = post(url, "/v1/ask", json.dumps(ask).encode())
        assert status == 200 and "Lisbon" in json.dumps(out)
    with database.connect(home / "hltm.duckdb", read_only=True) as con:  # nothing was written
        written = con.execute("SELECT count(*) FROM sot_documents WHERE doc_id = 't1'")
        assert written.fetchone()[0] == 0
