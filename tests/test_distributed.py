"""The distributed deployment, run for real: PostgreSQL, Redis and an S3 endpoint (moto) on
loopback, two Celery workers, a tree of a few hundred leaves.

Specification:
- memory built by the workers equals memory built on one machine (embedded), node by node;
- a worker killed in the middle of a run loses nothing: that index reports the lost run, the
  next one builds what is left, and ``hltm verify`` is identical;
- a deleted project leaves no trace on the object store (the lake's Parquet files, LanceDB's
  files of every version) nor in PostgreSQL (Dagster's run history, the lake's catalog), even
  when the deleting coordinator dies half-way and another one finishes the erasure;
- the workers follow the tree: indexes after loads that change it build, on the same workers;
- workers that make the catalog at the same moment all succeed.

Skipped, with the reason, where the services cannot run (no PostgreSQL or Redis binaries, no
``hltm[distributed]``); ``HLTM_REQUIRE_DISTRIBUTED=1`` (``.ci/run``) makes that a failure.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from hltm_assets.cli import services
from hltm_resources.faults import ENV as FAULT_ENV
from tests.conftest import write_tree

pytestmark = pytest.mark.slow

#: Stated only in one project's id, name and documents (node ids may be e-mail addresses).
SENTINEL = "wombatcobalt7730"
DOOMED = f"p-{SENTINEL}"


def _lacking() -> list[str]:
    out = services.missing()
    for module in ("dagster_postgres", "dagster_celery", "duckdb_extension_ducklake"):
        try:
            __import__(module)
        except ImportError:
            out.append(f"{module} (pip install 'hltm[distributed]')")
    return out


@pytest.fixture(scope="module")
def deployment():
    """The three services on free loopback ports; the environment that selects them."""
    lacking = _lacking()
    if lacking:
        reason = "the distributed deployment's services need " + ", ".join(lacking)
        if os.environ.get("HLTM_REQUIRE_DISTRIBUTED"):
            pytest.fail(reason)
        pytest.skip(reason)
    # PostgreSQL runs as its own user: its folder must not sit below pytest's private tmp.
    root = Path(tempfile.mkdtemp(prefix="hltm-services-"))
    root.chmod(0o755)
    ports = services.free_ports()
    env = services.up(root, ports)
    try:
        yield os.environ | env
    finally:
        services.down(root)


def hltm(env: dict, home: Path, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hltm_assets.cli", "--home", str(home), *args],
        capture_output=True,
        text=True,
        env=env | {"RUST_LOG": "error"},
        timeout=timeout,
    )


def local_env() -> dict:
    return {
        k: v for k, v in os.environ.items() if not k.startswith(("HLTM_DEPLOYMENT", "HLTM_CAT"))
    }


def snapshot(env: dict, directory: Path) -> Path:
    """A generated world of a few hundred projects, plus one that states the sentinel."""
    done = hltm(env, directory / "unused-home", "sample", str(directory), *WORLD)
    assert done.returncode == 0, done.stderr
    seat = json.loads((directory / "seats.jsonl").read_text().splitlines()[0])["seat_id"]
    with (directory / "projects.jsonl").open("a") as f:
        f.write(
            json.dumps(
                {
                    "project_id": DOOMED,
                    "seat_id": seat,
                    "name": f"Platform Engineer {SENTINEL}",
                    "updated_at": "2026-05-01",
                }
            )
            + "\n"
        )
    with (directory / "documents.jsonl").open("a") as f:
        for i, text in enumerate(
            [
                '{"job_title": "Platform Engineer", "office_location": "Berlin, Germany"}',
                f"The hiring manager insists on {SENTINEL} experience for this search.",
            ]
        ):
            f.write(
                json.dumps(
                    {
                        "doc_id": f"{DOOMED}-d{i}",
                        "project_id": DOOMED,
                        "kind": "note",
                        "text": text,
                        "updated_at": "2026-05-01",
                    }
                )
                + "\n"
            )
    return directory


WORLD = ("--seed", "5", "--accounts", "5", "--seats", "5", "--min-projects", "9",
         "--max-projects", "13")  # fmt: skip


class Workers:
    """``hltm worker`` processes, each in its own process group (killable as a whole)."""

    def __init__(self, env: dict, root: Path):
        self.env, self.root, self.procs = env, root, {}

    def start(self, name: str) -> None:
        log = (self.root / f"{name}.log").open("w")
        self.procs[name] = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "hltm_assets.cli",
                "--home",
                str(self.root / name),
                "worker",
                "--name",
                f"{name}@test",
            ],  # fmt: skip
            env=self.env | {"RUST_LOG": "error"},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def kill(self, name: str) -> None:
        os.killpg(self.procs[name].pid, signal.SIGKILL)
        self.procs[name].wait()

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)


def _with_env(env: dict, fn):
    with services.applied(env):
        return fn()


def _distributed_settings(env: dict, home: Path):
    from hltm_resources.config import Settings

    return _with_env(env, lambda: Settings.from_env(home))


def wait_for(condition, what: str, timeout_s: float = 120.0, every_s: float = 0.5):
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(every_s)


def memory_hashes(settings) -> dict[str, str]:
    from hltm_resources.stores import database

    with database.connect(settings.duckdb_path, read_only=True) as con:
        return dict(con.execute("SELECT node_id, memory_hash FROM memory_nodes").fetchall())


def objects_holding(env: dict, settings, text: str) -> list[str]:
    """Keys of the objects on the store whose bytes, or decoded Parquet values, hold ``text``."""
    import pyarrow.parquet as pq

    def scan() -> list[str]:
        from hltm_resources.stores.lake import ObjectStore

        store = ObjectStore.from_env(settings.object_store)
        client, found = store.client(), []
        for key in store.keys():
            body = client.get_object(Bucket=store.bucket, Key=key)["Body"].read()
            held = text.encode() in body
            if not held and key.endswith(".parquet"):
                table = pq.read_table(io.BytesIO(body))
                held = any(text in str(v) for col in table.columns for v in col.to_pylist())
            if held:
                found.append(key)
        return found

    return _with_env(env, scan)


def postgres_holding(env: dict, text: str) -> bool:
    """Whether any row of any table in the deployment's database holds ``text``."""
    dump = subprocess.run(
        [services.pg_bin("pg_dump"), "--data-only", env["HLTM_CATALOG_URL"]],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return text in dump


def test_workers_build_what_one_machine_builds_and_a_killed_worker_loses_nothing(
    deployment, tmp_path
):
    env = deployment
    snap = snapshot(local_env(), tmp_path / "snapshot")

    # The same snapshot built on one machine (the embedded default).
    embedded = tmp_path / "embedded"
    for args in (("load", str(snap)), ("index",)):
        done = hltm(local_env(), embedded, *args)
        assert done.returncode == 0, done.stderr

    coordinator = tmp_path / "coordinator"
    done = hltm(env, coordinator, "load", str(snap))
    assert done.returncode == 0, done.stderr
    assert "ducklake on s3://" in done.stdout

    settings = _distributed_settings(env, coordinator)
    workers = Workers(env, tmp_path)
    try:
        for name in ("w1", "w2"):
            workers.start(name)
        from hltm_assets.distributed import celery_app, live_workers

        app = _with_env(env, lambda: celery_app(settings))
        wait_for(lambda: len(live_workers(app, 1.0)) == 2, "two workers")

        index = subprocess.Popen(
            [sys.executable, "-m", "hltm_assets.cli", "--home", str(coordinator), "index"],
            env=env | {"RUST_LOG": "error"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

        def w1_mid_run() -> bool:
            active = app.control.inspect(timeout=1.0, destination=["w1@test"]).active() or {}
            return bool(active.get("w1@test"))

        wait_for(w1_mid_run, "a run on worker w1")
        time.sleep(1.0)  # well inside the run: it builds for seconds
        workers.kill("w1")
        out, err = index.communicate(timeout=900)
        assert index.returncode != 0, out + err
        assert "failed runs" in err and "hltm index again" in err, err

        # The next index, on the worker left, builds what the lost run did not store.
        again = hltm(env, coordinator, "index")
        assert again.returncode == 0, again.stderr
        assert json.loads(hltm(env, coordinator, "index", "--json").stdout)["leaves_built"] == 0

        verified = hltm(env, coordinator, "verify", "--json")
        assert verified.returncode == 0, verified.stdout + verified.stderr
        report = json.loads(verified.stdout)
        assert report["identical"] and not report["vector_mismatches"], report
        local = memory_hashes(_with_env(local_env(), lambda: settings.with_home(embedded)))
        assert _with_env(env, lambda: memory_hashes(settings)) == local  # node by node
        assert sum(n.startswith("project:") for n in local) >= 250

        # Deletion: the sentinel is on the store and in PostgreSQL (so its absence later
        # proves something), then gone from every object and every row.
        held = objects_holding(env, settings, SENTINEL)
        assert any("/ducklake/" in k for k in held), held
        assert any("/lancedb/" in k for k in held), held
        assert postgres_holding(env, SENTINEL)
        # The deleting coordinator dies after the erased stores were cleaned and before the
        # files were rewritten: another coordinator (another machine's home) sees the erasure
        # pending in the shared deployment and finishes it.
        deleted = hltm(env | {FAULT_ENV: "erase:journal-cleared"}, coordinator, "delete",
                       f"project:{DOOMED}")  # fmt: skip
        assert deleted.returncode == -signal.SIGKILL, deleted.stderr
        other = tmp_path / "coordinator2"
        pending = hltm(env, other, "check")
        assert pending.returncode != 0 and "erasure" in pending.stdout + pending.stderr
        finished = hltm(env, other, "index")
        assert finished.returncode == 0, finished.stderr
        assert objects_holding(env, settings, SENTINEL) == []
        assert not postgres_holding(env, SENTINEL)
        verified = hltm(env, coordinator, "verify", "--json")
        assert json.loads(verified.stdout)["identical"], verified.stdout
        checked = hltm(env, coordinator, "check")
        assert checked.returncode == 0, checked.stdout + checked.stderr

        # The tree changes under the same long-lived workers, which built every level before:
        # each index builds the tree its coordinator planned from (a worker used to run a level
        # with the definitions of the tree it first saw, and fail on a stale partition mapping).
        for file in ("projects.jsonl", "documents.jsonl"):  # the deleted project stays so
            lines = (snap / file).read_text().splitlines(keepends=True)
            (snap / file).write_text("".join(x for x in lines if DOOMED not in x))
        workers.start("w3")  # two workers again, each holding the definitions it last ran
        wait_for(lambda: len(live_workers(app, 1.0)) == 2, "two workers")
        for n in range(3):
            add_project(snap, f"late{n}")
            # A new note on many projects: each index runs the leaf level as several runs,
            # spread over both workers.
            add_note(snap, f"u{n}", "Update: the client now also asks for on-call experience.")
            for args in (("load", str(snap)), ("index",)):
                done = hltm(env, coordinator, *args)
                assert done.returncode == 0, done.stderr
        assert json.loads(hltm(env, coordinator, "index", "--json").stdout)["leaves_built"] == 0
    finally:
        workers.stop()


def add_note(snap: Path, tag: str, text: str, every: int = 5) -> None:
    """Append a document ``<project>-<tag>`` stating ``text`` to every ``every``-th project."""
    projects = [json.loads(line)["project_id"] for line in open(snap / "projects.jsonl")]
    with (snap / "documents.jsonl").open("a") as f:
        for raw in projects[::every]:
            row = {"doc_id": f"{raw}-{tag}", "project_id": raw}
            row |= {"kind": "note", "text": text, "updated_at": "2026-05-03"}
            f.write(json.dumps(row) + "\n")


def add_project(snap: Path, raw: str) -> None:
    """Append project ``raw`` (with one document) under the snapshot's first seat."""
    seat = json.loads((snap / "seats.jsonl").read_text().splitlines()[0])["seat_id"]
    rows = {
        "projects.jsonl": {"project_id": raw, "seat_id": seat, "name": "Data Engineer"},
        "documents.jsonl": {
            "doc_id": f"{raw}-d0",
            "project_id": raw,
            "kind": "note",
            "text": "Data Engineer in Lisbon, Portugal.",
        },
    }
    for file, row in rows.items():
        with (snap / file).open("a") as f:
            f.write(json.dumps(row | {"updated_at": "2026-05-02"}) + "\n")


def test_distributed_settings_say_what_is_missing():
    from hltm_resources.config import ConfigError, Settings

    with pytest.raises(ConfigError, match="HLTM_CATALOG_URL.*HLTM_OBJECT_STORE.*HLTM_BROKER_URL"):
        Settings(home=Path("/tmp/x"), deployment="distributed")
    with pytest.raises(ConfigError, match="use one of local, distributed"):
        Settings(home=Path("/tmp/x"), deployment="cluster")


def test_the_llm_reply_cache_is_shared_and_erased_in_postgresql(deployment):
    from hltm_resources.stores.llm_cache import PostgresLLMCache, open_cache, purge_nodes

    settings = _distributed_settings(deployment, Path(tempfile.mkdtemp()))
    cache = open_cache(settings)
    assert isinstance(cache, PostgresLLMCache)
    cache.put("k1", f"project:{SENTINEL}", "facets", "m", f"reply naming {SENTINEL}")
    cache.put("k2", "project:other", "facets", "m", "another reply")
    assert PostgresLLMCache(settings.catalog_url).get("k1") == f"reply naming {SENTINEL}"
    assert postgres_holding(deployment, SENTINEL)
    assert purge_nodes(settings, [f"project:{SENTINEL}"]) == 1
    assert cache.get("k1") is None and cache.get("k2") == "another reply"
    assert not postgres_holding(deployment, SENTINEL)


def test_a_second_writer_of_the_distributed_memory_is_refused_with_the_holder(deployment, tmp_path):
    from hltm_resources.stores.lock import home_lock

    settings = _distributed_settings(deployment, tmp_path / "a")
    with home_lock(settings, "index"):
        other = hltm(deployment, tmp_path / "b", "delete", "project:p00001")
    assert other.returncode == 2, other.stdout + other.stderr
    assert "hltm index (pid" in other.stderr and "writing the distributed memory" in other.stderr


def at_the_same_moment(fn, n: int) -> list[str]:
    """Run ``fn`` in ``n`` threads released together; what each that failed raised."""
    import threading

    start = threading.Barrier(n)
    failures: list[str] = []

    def one() -> None:
        start.wait()
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - every failure is the finding
            failures.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=one) for _ in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    return failures


def another_deployment(deployment: dict, name: str) -> dict:
    """The environment of a deployment of its own on the same services: a new database
    (Dagster's instance and the lake's catalog) and its own prefix of the bucket."""
    import psycopg2

    admin = psycopg2.connect(deployment["HLTM_CATALOG_URL"])
    admin.autocommit = True
    with admin.cursor() as cur:
        cur.execute(f"CREATE DATABASE {name}")
    admin.close()
    return deployment | {
        "HLTM_CATALOG_URL": deployment["HLTM_CATALOG_URL"].rsplit("/", 1)[0] + "/" + name,
        "HLTM_OBJECT_STORE": deployment["HLTM_OBJECT_STORE"] + "/" + name,
    }


def test_workers_that_make_the_catalog_at_the_same_moment_all_succeed(deployment):
    """Workers started together on an empty catalog each make it if missing: they take turns
    (one used to die with ``duplicate key value violates unique constraint``)."""
    from hltm_resources.schema import DEFAULT_SCHEMA
    from hltm_resources.stores import database
    from hltm_resources.stores.lake import Lake, ObjectStore

    for attempt in range(3):
        env = another_deployment(deployment, f"race_{os.getpid()}_{attempt}")
        lake = _with_env(
            env,
            lambda e=env: Lake(e["HLTM_CATALOG_URL"], ObjectStore.from_env(e["HLTM_OBJECT_STORE"])),
        )
        assert at_the_same_moment(lambda lk=lake: database.init_schema(lk, DEFAULT_SCHEMA), 4) == []
        with database.connect(lake, read_only=True) as con:
            assert con.execute("SELECT count(*) FROM hltm_meta").fetchone()[0] == 2


@pytest.mark.parametrize(
    "variable, value, named",
    [
        ("HLTM_BROKER_URL", "redis://:secret@127.0.0.1:{port}/0", "the broker (Redis at redis://"),
        (
            "HLTM_CATALOG_URL",
            "postgresql://postgres:secret@127.0.0.1:{port}/hltm",
            "PostgreSQL (at postgresql://postgres:***@127.0.0.1:",
        ),
        ("AWS_ENDPOINT_URL", "http://127.0.0.1:{port}", "the object store (s3://"),
    ],
)
def test_a_service_that_is_down_is_named_in_one_line_with_what_to_do(
    deployment, tmp_path, variable, value, named
):
    """A coordinator of the deployment the other tests built, with one service's address
    pointing where nothing listens (as after it died): no traceback, but which service, where
    (never its password) and what to do."""
    coordinator = tmp_path / "coordinator"
    down = deployment | {variable: value.format(port=services.free_ports().postgres)}
    # Every command that needs the service; `check` reads only the lake.
    needing = [("index", "--full")] + ([("check",)] if variable != "HLTM_BROKER_URL" else [])
    for args in needing:
        done = hltm(down, coordinator, *args, timeout=600)
        lines = done.stderr.strip().splitlines()
        assert done.returncode != 0 and len(lines) == 1, done.stderr[-3000:]
        assert named in lines[0] and "secret" not in lines[0], lines[0]
        assert "start it" in lines[0] or "is it up" in lines[0], lines[0]


def test_after_the_object_store_lost_its_files_memory_is_rebuilt_from_the_snapshot(
    deployment, tmp_path
):
    """The S3 endpoint restarted empty: every command says so in one line and how to start
    over from the snapshot; following it gives a memory identical to a full rebuild."""
    from hltm_resources.stores.lake import ObjectStore

    env = another_deployment(deployment, f"emptied_{os.getpid()}")
    snap = write_tree(
        tmp_path / "snap",
        {"ana": "acme"},
        [("p1", "ana", "Nurse"), ("p2", "ana", "Data Engineer")],
        [("p1-d0", "p1", "Nurse, Dublin"), ("p2-d0", "p2", "Data Engineer in Lisbon")],
    )
    coordinator = tmp_path / "coordinator"
    workers = Workers(env, tmp_path)
    try:
        workers.start("w9")
        for args in (("load", str(snap)), ("index",)):
            done = hltm(env, coordinator, *args)
            assert done.returncode == 0, done.stderr

        store = _with_env(env, lambda: ObjectStore.from_env(env["HLTM_OBJECT_STORE"]))
        keys = store.keys()
        assert any("/ducklake/" in k for k in keys) and any("/lancedb/" in k for k in keys)
        for key in keys:
            store.client().delete_object(Bucket=store.bucket, Key=key)

        for args in (("check",), ("index",), ("load", str(snap))):
            done = hltm(env, coordinator, *args)
            lines = done.stderr.strip().splitlines()
            assert done.returncode != 0 and len(lines) == 1, done.stderr[-3000:]
            assert "no longer holds files" in lines[0] and "hltm load --rebuild" in lines[0]

        for args in (("load", "--rebuild", str(snap)), ("index", "--full")):
            done = hltm(env, coordinator, *args)
            assert done.returncode == 0, done.stderr
        verified = hltm(env, coordinator, "verify", "--json")
        assert json.loads(verified.stdout)["identical"], verified.stdout + verified.stderr
        assert hltm(env, coordinator, "check").returncode == 0
    finally:
        workers.stop()
