"""``hltm delete``: erase a project, seat or account everywhere it leaves a trace.

The node and everything below it leave the source of truth (rows and documents); their memory
rows, vectors (in every LanceDB table version) and cached LLM replies are erased; query-log rows
scoped to them or citing them are dropped; the DuckDB file is rewritten so no freed block keeps
a copy; and the memory of the ancestors is emptied and marked for rebuild (the caller rebuilds
it, so no aggregate keeps the node's facts).
"""

from __future__ import annotations

from dataclasses import dataclass

from hltm_resources.stores import database
from hltm_resources.config import Settings
from hltm_resources.errors import ScopeError
from hltm_resources.ids import parse_node_id
from hltm_resources.stores.memory_rows import read_states
from hltm_resources.build.erasure import erase_everywhere, scrub_database
from hltm_resources.stores.sot import read_topology


@dataclass(frozen=True)
class DeleteReport:
    node_id: str
    projects: tuple[str, ...]
    documents: int
    erased_nodes: tuple[str, ...]
    invalidated: tuple[str, ...]

    def as_dict(self) -> dict:
        return {
            "node_id": self.node_id,
            "projects_deleted": len(self.projects),
            "documents_deleted": self.documents,
            "memory_nodes_erased": len(self.erased_nodes),
            "ancestors_to_rebuild": list(self.invalidated),
        }


def delete_node(settings: Settings, node: str) -> DeleteReport:
    """Erase ``node`` (``project:``, ``seat:`` or ``account:``) and its subtree."""
    target = parse_node_id(node)
    with database.connect(settings.duckdb_path) as con, database.transaction(con):
        topo = read_topology(con)
        info = topo.node(str(target))
        if info is None:
            raise ScopeError(f"{target} is not in the source of truth; nothing was deleted")
        if target.level == "project":
            projects, seats, accounts = [target.raw], [], []
        elif target.level == "seat":
            projects = [p.raw_id for p in topo.children(info)]
            seats, accounts = [target.raw], []
        else:
            seats = [s.raw_id for s in topo.children(info)]
            projects = [p.raw_id for s in seats for p in topo.children(topo.seats[s])]
            accounts = [target.raw]
        n_docs = con.execute(
            "SELECT count(*) FROM sot_documents WHERE project_id IN (SELECT unnest(?))", [projects]
        ).fetchone()[0]
        con.execute("DELETE FROM sot_documents WHERE project_id IN (SELECT unnest(?))", [projects])
        con.execute("DELETE FROM sot_projects WHERE project_id IN (SELECT unnest(?))", [projects])
        con.execute("DELETE FROM sot_seats WHERE seat_id IN (SELECT unnest(?))", [seats])
        con.execute("DELETE FROM sot_accounts WHERE account_id IN (SELECT unnest(?))", [accounts])
        states = read_states(con)
        gone = sorted(
            {f"project:{p}" for p in projects}
            | {f"seat:{s}" for s in seats}
            | {f"account:{a}" for a in accounts}
        )
        invalidate = []
        parent = info.parent_id
        while parent is not None:
            invalidate.append(parent)
            parent = topo.node(parent).parent_id
        scrub_database(con, [n for n in gone if n in states], invalidate, gone)
    erase_everywhere(settings, gone + invalidate)
    database.rewrite_file(settings.duckdb_path)
    return DeleteReport(str(target), tuple(projects), n_docs, tuple(gone), tuple(invalidate))
