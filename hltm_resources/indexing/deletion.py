"""``hltm delete``: erase a project, seat or account everywhere it leaves a trace.

The node and everything below it leave the source of truth (rows and documents); their memory
rows, vectors (in every LanceDB table version) and cached LLM replies are erased; query-log rows
scoped to them or citing them are dropped; the DuckDB file is rewritten so no freed block keeps
a copy; and the memory of the ancestors is emptied and marked for rebuild (the caller rebuilds
it, so no aggregate keeps the node's facts). The erasure outside the SOT transaction is
journaled inside it and finished by :func:`complete_erasures`, so a crash cannot lose it.
"""

from __future__ import annotations

from dataclasses import dataclass

from hltm_resources.config import Settings
from hltm_resources.errors import ScopeError
from hltm_resources.faults import fault
from hltm_resources.ids import parse_node_id
from hltm_resources.indexing.erasure import complete_erasures, scrub_database
from hltm_resources.stores import database
from hltm_resources.stores.lock import home_lock
from hltm_resources.stores.memory_rows import read_states
from hltm_resources.stores.sot import read_topology


@dataclass(frozen=True)
class DeleteReport:
    node_id: str
    leaves: tuple[str, ...]
    documents: int
    erased_nodes: tuple[str, ...]
    invalidated: tuple[str, ...]
    leaf_plural: str

    def as_dict(self) -> dict:
        return {
            "node_id": self.node_id,
            f"{self.leaf_plural}_deleted": len(self.leaves),
            "documents_deleted": self.documents,
            "memory_nodes_erased": len(self.erased_nodes),
            "ancestors_to_rebuild": list(self.invalidated),
        }


def delete_node(settings: Settings, node: str) -> DeleteReport:
    """Erase ``node`` (a node id of any level) and its subtree; its ancestors are emptied and
    marked for rebuild. The erasure is recorded with the deletion and completed before this
    returns (or by the next writing command, if this process dies)."""
    schema = settings.schema
    target = parse_node_id(node, schema)
    with home_lock(settings, "delete"):
        finished = complete_erasures(settings)  # an earlier delete or load died half-way
        if str(target) in finished:  # that was this deletion: it is complete now
            return DeleteReport(str(target), (), 0, (str(target),), (), schema.leaf.plural)
        report = _delete(settings, target)
        fault("delete:committed")
        complete_erasures(settings)
    return report


def _delete(settings: Settings, target) -> DeleteReport:
    schema = settings.schema
    with database.connect(settings.duckdb_path) as con, database.transaction(con):
        topo = read_topology(con, schema)
        info = topo.node(str(target))
        if info is None:
            raise ScopeError(f"{target} is not in the source of truth; nothing was deleted")
        subtree = [info, *topo.descendants(info)]
        leaves = [n.raw_id for n in subtree if schema.is_leaf(n.level)]
        leaf_field = schema.leaf.id_field
        n_docs = con.execute(
            f"SELECT count(*) FROM sot_documents WHERE {leaf_field} IN (SELECT unnest(?))",
            [leaves],
        ).fetchone()[0]
        con.execute(f"DELETE FROM sot_documents WHERE {leaf_field} IN (SELECT unnest(?))", [leaves])
        for level in schema.levels:
            ids = [n.raw_id for n in subtree if n.level == level.name]
            con.execute(
                f"DELETE FROM {level.table} WHERE {level.id_field} IN (SELECT unnest(?))", [ids]
            )
        states = read_states(con)
        gone = sorted(n.node_id for n in subtree)
        invalidate = [a.node_id for a in topo.ancestors(info)]
        scrub_database(con, [n for n in gone if n in states], invalidate, gone)
    return DeleteReport(
        str(target), tuple(leaves), n_docs, tuple(gone), tuple(invalidate), schema.leaf.plural
    )
