"""A persistent cache of LLM outputs keyed by (prompt version, model, input hash).

A re-run after a crash finds the outputs of nodes already done and does not pay for them
again. Every entry records the node it belongs to, so deleting a node deletes its cached
outputs too; SQLite's ``secure_delete`` overwrites the freed pages. The distributed
deployment keeps it in its PostgreSQL instead, shared by every worker.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from hltm_resources.config import Settings
from hltm_resources.models import stable_hash

_SCHEMA = """
CREATE TABLE IF NOT EXISTS llm_cache (
    key TEXT PRIMARY KEY, node_id TEXT, agent TEXT, model TEXT, response TEXT, created REAL);
CREATE INDEX IF NOT EXISTS llm_cache_node ON llm_cache (node_id);
"""


def cache_path(settings: Settings) -> Path:
    return settings.cache_path / "llm.sqlite"


def cache_key(prompt_version: str, model: str, messages: object, schema: object = None) -> str:
    """The key of one request: prompt version, model, and a hash of everything sent."""
    return stable_hash(
        {"prompt": prompt_version, "model": model, "messages": messages, "schema": schema}
    )


class LLMCache:
    """Thread-safe SQLite cache (one connection per call, WAL for concurrent runs)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        with self._connect() as con:
            con.executescript(_SCHEMA)

    def _connect(self) -> sqlite3.Connection:
        con = sqlite3.connect(self.path, timeout=30)
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA secure_delete=ON")
        return con

    def get(self, key: str) -> str | None:
        with self._lock, self._connect() as con:
            row = con.execute("SELECT response FROM llm_cache WHERE key = ?", [key]).fetchone()
        return row[0] if row else None

    def put(self, key: str, node_id: str | None, agent: str, model: str, response: str) -> None:
        with self._lock, self._connect() as con:
            con.execute(
                "INSERT OR REPLACE INTO llm_cache VALUES (?, ?, ?, ?, ?, ?)",
                [key, node_id, agent, model, response, time.time()],
            )

    def count(self) -> int:
        with self._lock, self._connect() as con:
            return con.execute("SELECT count(*) FROM llm_cache").fetchone()[0]

    def purge(self, node_ids: Sequence[str]) -> int:
        """Delete the entries of ``node_ids`` and vacuum, so no copy stays in the file."""
        if not node_ids:
            return 0
        with self._lock, self._connect() as con:
            cur = con.execute(
                f"DELETE FROM llm_cache WHERE node_id IN ({','.join('?' * len(node_ids))})",
                list(node_ids),
            )
            deleted = cur.rowcount
            con.commit()
            con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            con.execute("VACUUM")
        return deleted


class PostgresLLMCache:
    """The same cache in the distributed deployment's PostgreSQL (table ``hltm_llm_cache``):
    every worker reads what any other cached, and an erasure reaches all of them at once (the
    deleted rows leave the table's pages with the ``VACUUM FULL`` that follows it)."""

    def __init__(self, url: str):
        self.url = url
        with self._connect() as con, con.cursor() as cur:
            cur.execute(
                "CREATE TABLE IF NOT EXISTS hltm_llm_cache (key TEXT PRIMARY KEY, node_id TEXT, "
                "agent TEXT, model TEXT, response TEXT, created DOUBLE PRECISION)"
            )
            cur.execute(
                "CREATE INDEX IF NOT EXISTS hltm_llm_cache_node ON hltm_llm_cache (node_id)"
            )

    @contextmanager
    def _connect(self) -> Iterator:
        import psycopg2

        con = psycopg2.connect(self.url)
        try:
            with con:  # one transaction, committed on leaving
                yield con
        finally:
            con.close()

    def get(self, key: str) -> str | None:
        with self._connect() as con, con.cursor() as cur:
            cur.execute("SELECT response FROM hltm_llm_cache WHERE key = %s", [key])
            row = cur.fetchone()
        return row[0] if row else None

    def put(self, key: str, node_id: str | None, agent: str, model: str, response: str) -> None:
        with self._connect() as con, con.cursor() as cur:
            cur.execute(
                "INSERT INTO hltm_llm_cache VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (key) "
                "DO UPDATE SET node_id = EXCLUDED.node_id, response = EXCLUDED.response, "
                "created = EXCLUDED.created",
                [key, node_id, agent, model, response, time.time()],
            )

    def count(self) -> int:
        with self._connect() as con, con.cursor() as cur:
            cur.execute("SELECT count(*) FROM hltm_llm_cache")
            return cur.fetchone()[0]

    def purge(self, node_ids: Sequence[str]) -> int:
        """Delete the entries of ``node_ids`` (the erasure's ``VACUUM FULL`` follows)."""
        if not node_ids:
            return 0
        with self._connect() as con, con.cursor() as cur:
            cur.execute("DELETE FROM hltm_llm_cache WHERE node_id = ANY(%s)", [list(node_ids)])
            return cur.rowcount


def open_cache(settings: Settings) -> LLMCache | PostgresLLMCache:
    """The cache of ``settings``: the home's SQLite file, or (distributed) PostgreSQL's."""
    if settings.distributed:
        return PostgresLLMCache(settings.catalog_url)
    return LLMCache(cache_path(settings))


def purge_nodes(settings: Settings, node_ids: Sequence[str]) -> int:
    """Delete cached outputs of ``node_ids`` if the home (or the deployment) has a cache."""
    if not node_ids:
        return 0
    if settings.distributed:
        return open_cache(settings).purge(list(node_ids))
    path = cache_path(settings)
    if not path.exists():
        return 0
    return LLMCache(path).purge(list(node_ids))
