"""API tokens: who may read or write which part of memory through the service.

A token is bound to one scope node (its subtree is all it reaches) and to ``read`` or
``read+write``. It is shown once, when made (``hltm_<id>_<secret>``); the home keeps its id,
scope, rights and a SHA-256 of it in ``tokens.db`` (SQLite: the service may hold the DuckDB
file while tokens are made or revoked), never the token itself. The secret is 256 random
bits, so a plain hash is as strong as a slow one.

Revoking deletes the row; so does deleting the node a token is scoped to (its id may be an
e-mail address, and an erasure leaves nothing), and the file is then vacuumed so no freed
page keeps it.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from hltm_resources.config import Settings

PREFIX = "hltm"
READ, WRITE = "read", "read+write"
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS tokens (id TEXT PRIMARY KEY, digest TEXT NOT NULL, "
    "scope TEXT NOT NULL, rights TEXT NOT NULL, name TEXT NOT NULL, created_at TEXT NOT NULL)"
)


class TokenError(ValueError):
    """A token that is malformed, unknown or revoked, or a request to make a bad one."""


@dataclass(frozen=True)
class Token:
    id: str
    scope: str
    rights: str
    name: str
    created_at: str

    @property
    def can_write(self) -> bool:
        return self.rights == WRITE

    def as_dict(self) -> dict:
        return {
            "id": self.id,
            "scope": self.scope,
            "rights": self.rights,
            "name": self.name,
            "created_at": self.created_at,
        }


def tokens_path(settings: Settings) -> Path:
    return Path(settings.home) / "tokens.db"


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@contextmanager
def _connect(settings: Settings, create: bool = False) -> Iterator[sqlite3.Connection | None]:
    path = tokens_path(settings)
    if not path.exists() and not create:
        yield None
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fresh = not path.exists()
    con = sqlite3.connect(path, timeout=30)
    try:
        if fresh:
            os.chmod(path, 0o600)  # hashes only, but nobody else's business
        if create:  # a file exists only once a token was made: then it has the table
            con.execute(_SCHEMA)
        yield con
        con.commit()
    finally:
        con.close()


_COLUMNS = "id, scope, rights, name, created_at"


def _find(con: sqlite3.Connection | None, token_id: str) -> tuple[str, Token] | None:
    """(its digest, the token) of the row with this id, if any."""
    row = None
    if con is not None:
        row = con.execute(
            f"SELECT digest, {_COLUMNS} FROM tokens WHERE id = ?", [token_id]
        ).fetchone()
    return None if row is None else (row[0], Token(*row[1:]))


def create_token(settings: Settings, scope: str, write: bool = False, name: str = "") -> tuple:
    """Make a token for ``scope`` (a node id the caller checked exists); returns
    (:class:`Token`, the token string: shown once, stored nowhere)."""
    token_id = secrets.token_hex(4)
    value = f"{PREFIX}_{token_id}_{secrets.token_urlsafe(32)}"
    made = Token(
        id=token_id,
        scope=scope,
        rights=WRITE if write else READ,
        name=name,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    with _connect(settings, create=True) as con:
        con.execute(
            "INSERT INTO tokens VALUES (?, ?, ?, ?, ?, ?)",
            [made.id, _digest(value), made.scope, made.rights, made.name, made.created_at],
        )
    return made, value


def list_tokens(settings: Settings) -> list[Token]:
    with _connect(settings) as con:
        if con is None:
            return []
        rows = con.execute(f"SELECT {_COLUMNS} FROM tokens ORDER BY created_at, id").fetchall()
    return [Token(*row) for row in rows]


def revoke_token(settings: Settings, token_id: str) -> Token:
    """Delete the token with this id (or the token itself, pasted whole)."""
    token_id = _id_of(token_id) or token_id
    with _connect(settings) as con:
        found = _find(con, token_id)
        if found is None:
            raise TokenError(f"no token {token_id[:40]!r} in this home: see hltm token list")
        con.execute("DELETE FROM tokens WHERE id = ?", [token_id])
    _vacuum(settings)
    return found[1]


def revoke_scoped(settings: Settings, node_ids: Iterable[str]) -> list[str]:
    """Delete every token scoped to one of ``node_ids`` (nodes deleted from the tree);
    returns their ids."""
    nodes = sorted(set(node_ids))
    if not nodes:
        return []
    with _connect(settings) as con:
        if con is None:
            return []
        marks = ",".join("?" * len(nodes))
        ids = [r[0] for r in con.execute(f"SELECT id FROM tokens WHERE scope IN ({marks})", nodes)]
        if ids:
            con.execute(f"DELETE FROM tokens WHERE scope IN ({marks})", nodes)
    if ids:
        _vacuum(settings)
    return ids


def _vacuum(settings: Settings) -> None:
    con = sqlite3.connect(tokens_path(settings), timeout=30)
    try:
        con.execute("VACUUM")
    finally:
        con.close()


def _id_of(value: str) -> str | None:
    """The id part of ``hltm_<id>_<secret>`` (the secret may hold ``_`` too)."""
    parts = value.split("_", 2)
    if len(parts) == 3 and parts[0] == PREFIX and len(parts[1]) == 8 and parts[2]:
        return parts[1]
    return None


def verify_token(settings: Settings, value: str) -> Token:
    """The token ``value`` names, if it is one of this home's; :class:`TokenError` (the same
    message for a malformed, unknown or revoked one) otherwise."""
    refused = TokenError(
        "the token is not valid here: send a token of this home in the Authorization header "
        "('Bearer hltm_...'; make one with hltm token create)"
    )
    token_id = _id_of(value) if isinstance(value, str) else None
    if token_id is None:
        raise refused
    with _connect(settings) as con:
        found = _find(con, token_id)
    if found is None or not hmac.compare_digest(found[0], _digest(value)):
        raise refused
    return found[1]
