"""The DuckDB file of a home: source-of-truth tables, memory tables, public views, query log.

DuckDB lets one process write a file at a time, and a writer also keeps readers in other
processes out. Every access here is therefore short: connect, do the work, close. When another
process holds the lock, :func:`connect` retries with backoff until ``timeout_s``.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.util
import os
import random
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from hltm_resources.faults import fault
from hltm_resources.schema import DEFAULT_TREE
from hltm_resources.stores.lake import Lake

if TYPE_CHECKING:
    from hltm_resources.schema import TreeSchema

SCHEMA_VERSION = 1

# DuckDB's Python client tries `import pandas` twice for every element of a list parameter
# (`IN (SELECT unnest(?))`); without pandas installed, each try searches every path entry
# again: 0.2 s for a list of 3,000 node ids, 5 times the query itself. When pandas is absent,
# a finder first in line says so at once (pyarrow and polars take that as they take its
# absence).


class _PandasAbsent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "pandas":
            raise ModuleNotFoundError("No module named 'pandas'", name="pandas")
        return None


if importlib.util.find_spec("pandas") is None and not any(
    isinstance(f, _PandasAbsent) for f in sys.meta_path
):
    sys.meta_path.insert(0, _PandasAbsent())

MEMORY_SCHEMA = """
CREATE TABLE IF NOT EXISTS hltm_meta (key VARCHAR, value VARCHAR);
CREATE TABLE IF NOT EXISTS mem_nodes (
    node_id VARCHAR NOT NULL, level VARCHAR NOT NULL, name VARCHAR, parent_id VARCHAR,
    path VARCHAR NOT NULL, input_hash VARCHAR NOT NULL, memory_hash VARCHAR NOT NULL,
    engine VARCHAR NOT NULL, embed_model VARCHAR NOT NULL, hints_version INTEGER NOT NULL,
    leaf_count INTEGER NOT NULL, doc_count INTEGER NOT NULL, built_at TIMESTAMP NOT NULL);
CREATE TABLE IF NOT EXISTS mem_facets (
    node_id VARCHAR NOT NULL, ord INTEGER NOT NULL, key VARCHAR NOT NULL, value VARCHAR NOT NULL,
    support INTEGER NOT NULL, source_ids VARCHAR[] NOT NULL, valid_from VARCHAR);
CREATE TABLE IF NOT EXISTS mem_history (
    node_id VARCHAR NOT NULL, ord INTEGER NOT NULL, key VARCHAR NOT NULL, value VARCHAR NOT NULL,
    source_ids VARCHAR[] NOT NULL, valid_from VARCHAR, valid_to VARCHAR NOT NULL);
CREATE TABLE IF NOT EXISTS mem_qa (
    node_id VARCHAR NOT NULL, ord INTEGER NOT NULL, question VARCHAR NOT NULL,
    answer VARCHAR NOT NULL, source_ids VARCHAR[] NOT NULL);
CREATE TABLE IF NOT EXISTS mem_summaries (
    node_id VARCHAR NOT NULL, detailed VARCHAR NOT NULL, concise VARCHAR NOT NULL,
    source_ids VARCHAR[] NOT NULL);
CREATE TABLE IF NOT EXISTS mem_evidence (
    node_id VARCHAR NOT NULL, ord INTEGER NOT NULL, passage_id VARCHAR NOT NULL,
    doc_id VARCHAR NOT NULL, text VARCHAR NOT NULL, context VARCHAR NOT NULL,
    updated_at VARCHAR NOT NULL, kind VARCHAR NOT NULL);
CREATE TABLE IF NOT EXISTS query_log (
    query_id VARCHAR, asked_at TIMESTAMP NOT NULL, scope VARCHAR NOT NULL,
    question VARCHAR NOT NULL, references_ VARCHAR[] NOT NULL, latency_ms DOUBLE NOT NULL,
    matched_keys VARCHAR[], kind VARCHAR, engine VARCHAR);
CREATE TABLE IF NOT EXISTS adapt_hints (
    version INTEGER NOT NULL, status VARCHAR NOT NULL, created_at TIMESTAMP NOT NULL,
    approved_at TIMESTAMP, window_start TIMESTAMP, window_end TIMESTAMP, queries INTEGER,
    params VARCHAR, patterns VARCHAR NOT NULL, facets VARCHAR NOT NULL);
ALTER TABLE mem_facets ADD COLUMN IF NOT EXISTS valid_from VARCHAR;
CREATE OR REPLACE VIEW memory_nodes AS
    SELECT node_id, level, parent_id, path, input_hash, engine, built_at, name, memory_hash,
           embed_model, hints_version, leaf_count, doc_count
    FROM mem_nodes;
CREATE OR REPLACE VIEW memory_facets AS
    SELECT node_id, key, value, support, source_ids, NULLIF(valid_from, '') AS valid_from,
           CAST(NULL AS VARCHAR) AS valid_to
    FROM mem_facets;
CREATE OR REPLACE VIEW memory_facet_history AS
    SELECT node_id, key, value, source_ids, NULLIF(valid_from, '') AS valid_from, valid_to
    FROM mem_history;
CREATE OR REPLACE VIEW memory_qa AS
    SELECT node_id, question, answer, source_ids FROM mem_qa;
CREATE OR REPLACE VIEW memory_summaries AS
    SELECT node_id, detailed, concise, source_ids FROM mem_summaries;
CREATE OR REPLACE VIEW memory_evidence AS
    SELECT node_id, passage_id, doc_id, text, updated_at, kind FROM mem_evidence;
"""


def sot_ddl(schema: TreeSchema) -> str:
    """The source-of-truth tables of a tree schema: one per snapshot file, all columns text."""
    statements = []
    for file, fields in schema.files.items():
        columns = ", ".join(f"{f} VARCHAR NOT NULL" for f in fields)
        statements.append(
            f"CREATE TABLE IF NOT EXISTS sot_{file.removesuffix('.jsonl')} ({columns});"
        )
    counts = ", ".join(f"{name} INTEGER" for name in sot_tables(schema))
    statements.append(
        "CREATE TABLE IF NOT EXISTS sot_loads (load_id INTEGER, loaded_at TIMESTAMP, "
        f"source VARCHAR, {counts}, added INTEGER, changed INTEGER, deleted INTEGER, "
        "moved INTEGER);"
    )
    return "\n".join(statements)


def sot_tables(schema: TreeSchema) -> list[str]:
    """The SOT table names without the ``sot_`` prefix, root first, documents last."""
    return [file.removesuffix(".jsonl") for file in schema.files]


class StoreBusyError(RuntimeError):
    """Another process kept the DuckDB file locked for longer than the timeout."""


class NoMemoryError(FileNotFoundError):
    """The home has no DuckDB file yet."""


class _OwnedFile:
    """A DuckDB file this process writes alone for a long time (the memory service).

    One connection stays open, so the database stays loaded and each short connection costs
    microseconds instead of opening the file. Every connection opens read-write (DuckDB
    refuses a read-only and a read-write connection to one file in one process). Connections
    share the file; replacing it (:func:`rewrite_file`) waits until none is open, so no thread
    keeps reading, or writing, the file that was replaced."""

    def __init__(self, key: str):
        self.key = key
        self.cond = threading.Condition()
        self.users = 0
        self.replacing: int | None = None
        self.anchor: duckdb.DuckDBPyConnection | None = duckdb.connect(key)

    @contextmanager
    def used(self) -> Iterator[None]:
        with self.cond:
            if self.replacing == threading.get_ident():  # the replacing thread itself
                self.users += 1
            else:
                while self.replacing is not None:
                    self.cond.wait()
                self.users += 1
        try:
            yield
        finally:
            with self.cond:
                self.users -= 1
                self.cond.notify_all()

    @contextmanager
    def replaced(self) -> Iterator[None]:
        with self.cond:
            while self.replacing is not None or self.users:
                self.cond.wait()
            self.replacing = threading.get_ident()
        if self.anchor is not None:
            self.anchor.close()
            self.anchor = None
        try:
            yield
        finally:
            self.anchor = duckdb.connect(self.key)
            with self.cond:
                self.replacing = None
                self.cond.notify_all()

    def close(self) -> None:
        if self.anchor is not None:
            self.anchor.close()
            self.anchor = None


_OWNED: dict[str, _OwnedFile] = {}


@contextmanager
def owned(path: Path) -> Iterator[None]:
    """While inside, this process is the file's only writer and keeps it open."""
    key = str(Path(path).resolve())
    _OWNED[key] = _OwnedFile(key)
    try:
        yield
    finally:
        _OWNED.pop(key).close()


def _owned(path: Path) -> _OwnedFile | None:
    return _OWNED.get(str(path.resolve())) if _OWNED else None


def _service_of(path: Path) -> str | None:
    """Who the running memory service of the home holding ``path`` is, if one runs."""
    from hltm_resources.stores.lock import running_service

    info = running_service(path.parent)
    return f"hltm serve, pid {info['pid']}, {info.get('url', '')}" if info else None


def _is_lock_error(exc: Exception) -> bool:
    text = str(exc).lower()
    return "lock" in text or "conflicting" in text or "already open" in text


@contextmanager
def connect(
    path: Path | Lake, read_only: bool = False, timeout_s: float = 30.0
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A short-lived connection; waits (with backoff) while another process holds the lock.

    ``path`` is a home's DuckDB file or (the distributed deployment) the shared lake, which
    any number of processes attach at once (``read_only`` is then not enforced)."""
    if isinstance(path, Lake):
        con = duckdb.connect(":memory:")
        try:
            path.attach(con)
            yield con
        finally:
            con.close()
        return
    path = Path(path)
    if read_only and not path.exists():
        raise NoMemoryError(
            f"no memory store at {path}: load a snapshot first (hltm --home {path.parent} load DIR)"
        )
    owner = _owned(path)
    if owner is not None:
        with owner.used():
            con = duckdb.connect(str(path))
            try:
                yield con
            finally:
                con.close()
        return
    if not read_only:
        path.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout_s
    delay = 0.02
    while True:
        try:
            con = duckdb.connect(str(path), read_only=read_only)
            break
        except (duckdb.IOException, duckdb.ConnectionException) as exc:
            if _is_lock_error(exc) and (owner := _service_of(path)):
                raise StoreBusyError(
                    f"the memory service ({owner}) owns {path.parent} while it runs: ask "
                    "through it (hltm ask, or POST /v1/ask), write through it (hltm remember, "
                    "forget, apply), or stop it first"
                ) from exc
            if not _is_lock_error(exc) or time.monotonic() >= deadline:
                if _is_lock_error(exc):
                    raise StoreBusyError(
                        f"{path} stayed locked by another process for {timeout_s:.0f} s "
                        "(a running index or load?); try again when it finishes"
                    ) from exc
                raise
            time.sleep(delay * (1 + random.random()))
            delay = min(delay * 2, 0.5)
    try:
        yield con
    finally:
        con.close()


def init_schema(path: Path | Lake, schema: TreeSchema) -> None:
    """Create tables and views if missing (idempotent); a home keeps the tree it was made with.
    Processes of the distributed deployment that start at once take turns."""
    if isinstance(path, Lake):
        with path.one_at_a_time():
            _init_schema(path, schema)
    else:
        _init_schema(path, schema)


def _init_schema(path: Path | Lake, schema: TreeSchema) -> None:
    if path.exists():
        with connect(path, read_only=True) as con:
            if _recorded(con, "schema_version") is not None:
                _check(path, con, schema)
                if _current(con):
                    return
    with connect(path) as con:
        con.execute(MEMORY_SCHEMA)
        con.execute(sot_ddl(schema))
        for key, value in (("schema_version", str(SCHEMA_VERSION)), ("tree", schema.spec)):
            if _recorded(con, key) is None:
                con.execute("INSERT INTO hltm_meta VALUES (?, ?)", [key, value])
        _check(path, con, schema)


def _current(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the memory tables have every column this HLTM writes (a home made before
    facts had validity gets them, empty until its next index, at its next
    :func:`init_schema`)."""
    found = con.execute(
        "SELECT count(*) FROM duckdb_columns() WHERE table_name = 'mem_facets' "
        "AND column_name = 'valid_from'"
    ).fetchone()[0]
    tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    return bool(found) and "mem_history" in tables


def _recorded(con: duckdb.DuckDBPyConnection, key: str) -> str | None:
    tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    if "hltm_meta" not in tables:
        return None
    row = con.execute("SELECT value FROM hltm_meta WHERE key = ?", [key]).fetchone()
    return row[0] if row else None


def check_tree(path: Path | Lake, schema: TreeSchema) -> None:
    """:class:`ConfigError` unless the home at ``path`` was made with ``schema`` (what a
    reader checks before a question: ``HLTM_TREE`` set for another home)."""
    with connect(path, read_only=True) as con:
        _check(path, con, schema)


def _check(path: Path, con: duckdb.DuckDBPyConnection, schema: TreeSchema) -> None:
    version = _recorded(con, "schema_version")
    if version is not None and int(version) != SCHEMA_VERSION:
        raise RuntimeError(
            f"{path} has schema version {version}, this HLTM expects {SCHEMA_VERSION}"
        )
    tree = _recorded(con, "tree") or DEFAULT_TREE  # homes made before schemas were data
    if tree != schema.spec:
        from hltm_resources.config import ConfigError

        raise ConfigError(
            f"{path} holds a tree {tree!r}, but this run uses {schema.spec!r}: set "
            f"HLTM_TREE={tree!r} (or Settings(tree=...)) to work with this home"
        )


def rewrite_file(path: Path | Lake, timeout_s: float = 60.0) -> None:
    """Copy the database into a fresh file and swap it in.

    DuckDB keeps deleted rows in freed blocks of the file (VACUUM does not reclaim them), so
    after an erasure the only way to make sure no copy remains in the file is to rewrite it.
    A lake rewrites the data files holding deleted rows and drops every older snapshot and
    file (:meth:`Lake.compact`), then its catalog's tables (:meth:`Lake.vacuum`).
    """
    if isinstance(path, Lake):
        with connect(path) as con:
            path.compact(con)
        path.vacuum()
        return
    path = Path(path)
    fresh = path.with_name(path.name + ".rewrite")
    for leftover in (fresh, fresh.with_name(fresh.name + ".wal")):
        leftover.unlink(missing_ok=True)
    owner = _owned(path)
    with owner.replaced() if owner else contextlib.nullcontext():
        with connect(path, timeout_s=timeout_s) as con:
            con.execute("CHECKPOINT")
            name = con.execute("SELECT current_database()").fetchone()[0]
            con.execute(f"ATTACH '{fresh}' AS hltm_fresh")
            con.execute(f'COPY FROM DATABASE "{name}" TO hltm_fresh')
            con.execute("DETACH hltm_fresh")
            fault("rewrite:copied")
            os.replace(fresh, path)  # atomic; still under our lock
        path.with_name(path.name + ".wal").unlink(missing_ok=True)


#: How often a write that conflicted with another writer's commit is run again (the lake's
#: writers commit optimistically; a home's file has one writer at a time and never conflicts).
CONFLICT_RETRIES = 8


def write_retrying(path: Path | Lake, write: Callable[[duckdb.DuckDBPyConnection], object]) -> None:
    """Run ``write`` in one transaction of ``path``. In the lake, runs on several workers
    write at once, and DuckLake refuses a commit that conflicts with one made meanwhile
    ("Transaction conflict"): the transaction is rolled back whole, so it is run again after a
    random pause."""
    for attempt in range(CONFLICT_RETRIES + 1):
        try:
            with connect(path) as con, transaction(con):
                write(con)
            return
        except duckdb.TransactionException as exc:
            if "conflict" not in str(exc).lower() or attempt == CONFLICT_RETRIES:
                raise
            time.sleep(random.uniform(0.05, 0.5) * (attempt + 1))


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """BEGIN ... COMMIT, or ROLLBACK on any error."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield con
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")
