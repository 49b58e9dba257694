"""Writes of one item: a batch of changes (:mod:`hltm_resources.stores.changes`) applied to
the source of truth in one transaction, with what it means for memory, then the touched leaves
and their ancestors rebuilt.

What the transaction records besides the rows, as ``hltm load`` and ``hltm delete`` do:

- a node deleted (with its subtree) is erased from every store, its surviving ancestors are
  emptied and marked for rebuild;
- a node that moved (an upsert naming another parent) is emptied with its old and new
  ancestors, so no question at the old scope finds it;
- a document deleted (forgotten) is erased as a deletion is: its leaf and the leaf's ancestors
  are emptied and their traces in every store (vectors in every table version, cached replies,
  run history) are erased before they are rebuilt without it.

The erasure is journaled inside the transaction and completed right after it
(:func:`complete_erasures`), and so are the touched leaves (``build_pending``, cleared once
they are built): a process killed at any point leaves work that the next writer finishes. The
rebuild is a plan limited to the pending leaves (:meth:`Indexer.plan_for`): every other leaf's
stored hash stands, which holds because every change to the source of truth went through here
(and is pending until built) or through a load, whose index planned the whole tree.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from hltm_resources.config import Settings
from hltm_resources.faults import fault
from hltm_resources.indexing.erasure import complete_erasures, gone_and_emptied, scrub_database
from hltm_resources.models import Topology
from hltm_resources.stores import database
from hltm_resources.stores.changes import DOCUMENT, Applied, Change, ChangeError, SotIds
from hltm_resources.stores.lock import home_lock
from hltm_resources.stores.memory_rows import (
    add_pending,
    drop_pending,
    pending_leaves,
    read_states,
)
from hltm_resources.stores.sot import SnapshotProblem, read_topology


@dataclass
class WriteReport:
    """What a batch of writes changed and what it left for the build."""

    changes: int
    #: Node ids of the leaves to rebuild (their documents or their own row changed).
    leaves: list[str] = field(default_factory=list)
    #: Node ids that left the tree (erased everywhere).
    deleted: list[str] = field(default_factory=list)
    #: Node ids emptied until their rebuild (ancestors of a deletion or a move, leaves that
    #: forgot a document, and their ancestors).
    emptied: list[str] = field(default_factory=list)
    documents_deleted: int = 0
    built: dict[str, int] = field(default_factory=dict)
    #: The tree after the changes (what the caller passed in when only documents changed).
    tree: Topology | None = field(default=None, repr=False)
    #: Per batch given to :func:`record_changes`, the node ids of the leaves it touched.
    batch_leaves: list[list[str]] = field(default_factory=list)
    #: Leaves an earlier writer applied and did not build (it was killed), built with these.
    earlier: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "changes": self.changes,
            "leaves": self.leaves,
            "deleted": self.deleted,
            "emptied": self.emptied,
            "documents_deleted": self.documents_deleted,
            "built": self.built,
        } | ({"earlier_unbuilt_leaves": self.earlier} if self.earlier else {})


def record_changes(
    con,
    schema,
    ids: SotIds,
    batches: Sequence[tuple[Sequence[Change], str]],
    topology: Topology | None = None,
) -> tuple[WriteReport, list[list[SnapshotProblem]]]:
    """Inside the caller's transaction: check each batch (changes, source) against the source
    of truth as the batches before it left it and apply it if it holds; then record what the
    applied changes mean for memory (:func:`scrub_database`: rows erased or emptied, the
    erasure of the other stores journaled). Returns the report and each batch's problems
    (none: it was applied).

    ``topology``: the tree before the batches, when the caller keeps it; a batch that changes
    only documents leaves it as it is, so it is not read again."""
    documents_only = topology is not None and all(
        ch.level == DOCUMENT for changes, _ in batches for ch in changes
    )
    before = {} if documents_only else read_states(con)
    applied = Applied(deleted={name: set() for name in schema.names})
    problems: list[list[SnapshotProblem]] = []
    batch_leaves: list[list[str]] = []
    leaf = schema.leaf.name
    for changes, source in batches:
        problems.append(ids.problems(changes, source))
        if problems[-1]:
            batch_leaves.append([])
            continue
        step = ids.apply(con, changes)
        batch_leaves.append(sorted(f"{leaf}:{raw}" for raw in step.leaves))
        applied.leaves |= step.leaves
        applied.documents_deleted |= step.documents_deleted
        applied.changes += step.changes
        for level, gone in step.deleted.items():
            applied.deleted[level] |= gone
    applied.leaves -= applied.deleted[schema.leaf.name]
    topo = topology if documents_only else read_topology(con, schema)
    gone, emptied = gone_and_emptied(before, topo)  # nothing, with documents only
    if applied.documents_deleted:  # forgotten: erased from its leaf and what aggregates it
        built = before if before else read_states(con)
        for raw in applied.leaves:
            node = topo.node(f"{leaf}:{raw}")
            if node is not None and node.node_id in built:
                emptied |= {node.node_id} | {a.node_id for a in topo.ancestors(node)}
    deleted = sorted(f"{level}:{raw}" for level, raws in applied.deleted.items() for raw in raws)
    scrub_database(con, gone, sorted(emptied), deleted)
    touched = sorted(f"{leaf}:{raw}" for raw in applied.leaves)
    add_pending(con, touched)
    report = WriteReport(
        changes=applied.changes,
        leaves=touched,
        deleted=deleted,
        emptied=sorted(emptied),
        documents_deleted=len(applied.documents_deleted),
        tree=topo,
        batch_leaves=batch_leaves,
    )
    return report, problems


def clear_pending(settings: Settings, leaves: Sequence[str]) -> None:
    """``leaves`` were built (or found current): off the journal."""
    if leaves:
        with database.connect(settings.duckdb_path) as con:
            drop_pending(con, leaves)


#: Builds the plan of a write: ``build(leaves)`` with the node ids of the touched leaves,
#: returning the nodes built per level.
Build = Callable[[list[str]], dict[str, int]]


def write(
    settings: Settings,
    changes: Sequence[Change],
    source: str,
    build: Build | None = None,
    lock_wait_s: float | None = None,
) -> WriteReport:
    """Check ``changes`` against the source of truth, apply them in one transaction, complete
    any erasure they record, then ``build`` the touched leaves and their ancestors (default:
    the plain indexer, no Dagster). Refused whole (:class:`ChangeError`) with nothing
    written if any change is invalid."""
    schema = settings.schema
    database.init_schema(settings.duckdb_path, schema)
    with home_lock(settings, "write", wait_s=lock_wait_s):
        complete_erasures(settings)  # an earlier writer may have died half-way
        with database.connect(settings.duckdb_path) as con, database.transaction(con):
            ids = SotIds(con, schema)
            report, (problems,) = record_changes(con, schema, ids, [(changes, source)])
            if problems:
                raise ChangeError(source, problems)  # rolls the transaction back
            leaves = pending_leaves(con)  # this write's, and any a killed writer left
        fault("write:committed")
        if report.deleted or report.emptied:
            complete_erasures(settings)
        report.earlier = sorted(set(leaves) - set(report.leaves))
        report.built = (build or plain_build(settings))(leaves)
        clear_pending(settings, leaves)
    return report


def plain_build(settings: Settings) -> Build:
    """Build a write's plan with the plain indexer (no Dagster run is recorded)."""

    def build(leaves: list[str]) -> dict[str, int]:
        from hltm_resources.indexing.indexer import Indexer

        indexer = Indexer(settings)
        plan = indexer.plan_for(leaves)
        indexer.build_plan(plan)
        return plan.counts()

    return build
