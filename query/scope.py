"""Identity scopes: a node id, validated before any store is touched, then looked up."""

from __future__ import annotations

from dataclasses import dataclass

from hltm_resources.errors import ScopeError
from hltm_resources.ids import InvalidIdError, parse_node_id
from hltm_resources.schema import TreeSchema
from hltm_resources.stores import database
from hltm_resources.stores.vectors import scope_filter, subtree_filter

MAX_LISTED = 10


@dataclass(frozen=True)
class Scope:
    """A resolved scope: the node, its path, and the LanceDB filter of its subtree (by the
    rows' scope labels where the tables carry them, else by path: the same rows)."""

    node_id: str
    level: str
    name: str
    path: str
    labeled: bool = False

    @property
    def where(self) -> str:
        return scope_filter(self.node_id) if self.labeled else subtree_filter(self.path)

    def contains(self, path: str) -> bool:
        return path == self.path or path.startswith(self.path + "/")


def validate_scope(scope: object, schema: TreeSchema) -> str:
    """The scope id if well formed; raise :class:`ScopeError` otherwise (no store touched)."""
    try:
        return str(parse_node_id(scope, schema))
    except InvalidIdError as exc:
        raise ScopeError(f"scope rejected: {exc}") from None


def resolve_scope(con, scope: object, schema: TreeSchema) -> Scope:
    """Look up a validated scope in the built memory (bound parameters only)."""
    node_id = validate_scope(scope, schema)
    row = con.execute(
        "SELECT node_id, level, name, path FROM mem_nodes WHERE node_id = ?", [node_id]
    ).fetchone()
    if row is not None:
        return Scope(*row)
    level, raw = node_id.split(":", 1)
    known = [
        r[0]
        for r in con.execute(
            "SELECT node_id FROM mem_nodes WHERE level = ? ORDER BY node_id LIMIT ?",
            [level, MAX_LISTED + 1],
        ).fetchall()
    ]
    listed = ", ".join(known[:MAX_LISTED]) + (", ..." if len(known) > MAX_LISTED else "")
    lv = schema.level(level)
    in_sot = con.execute(
        f"SELECT count(*) FROM {lv.table} WHERE {lv.id_field} = ?", [raw]
    ).fetchone()[0]
    if in_sot:
        raise ScopeError(
            f"scope {node_id!r} is in the source of truth but has no memory yet: run hltm index"
        )
    raise ScopeError(f"scope {node_id!r} is not in the tree; known {level}s: {listed or 'none'}")


def check_open(path) -> None:
    """Fail early with a clear message when the home has no memory."""
    if not path.exists():
        raise database.NoMemoryError(
            f"no memory store at {path}: run hltm load and hltm index first"
        )
