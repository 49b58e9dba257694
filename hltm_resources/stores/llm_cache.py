"""A persistent cache of LLM outputs keyed by (prompt version, model, input hash).

A re-run after a crash finds the outputs of nodes already done and does not pay for them
again. Every entry records the node it belongs to, so deleting a node deletes its cached
outputs too; SQLite's ``secure_delete`` overwrites the freed pages.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Sequence
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


def purge_nodes(settings: Settings, node_ids: Sequence[str]) -> int:
    """Delete cached outputs of ``node_ids`` if the home has a cache."""
    path = cache_path(settings)
    if not path.exists() or not node_ids:
        return 0
    return LLMCache(path).purge(list(node_ids))
