"""What an index run must rebuild, and why: the SOT's tree and content against stored hashes.

Pure: :func:`make_plan` takes the topology, the stored node states and the two hash functions,
and decides. A leaf is rebuilt when its input hash changed (or it is new, moved, or was
emptied by a deletion or a move); a parent when any child is rebuilt or removed, or its own
inputs changed; each node once, in level order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from hltm_resources.models import NodeInfo, Topology
from hltm_resources.schema import TreeSchema
from hltm_resources.stores.memory_rows import INVALIDATED, NodeState


@dataclass(frozen=True)
class PlanItem:
    node_id: str
    level: str
    raw_id: str
    reason: str
    #: The node's current input hash where it is known before building (leaves; parents whose
    #: children are all built); "" otherwise.
    input_hash: str = ""


@dataclass
class Plan:
    """Nodes to build per level (in path order) and nodes to purge."""

    schema: TreeSchema
    build: dict[str, list[PlanItem]] = field(default_factory=dict)
    purge: list[str] = field(default_factory=list)
    orphan_vectors: list[str] = field(default_factory=list)
    #: The tree the plan was made from (the partitions of a run follow it).
    topology: Topology | None = None

    def __post_init__(self) -> None:
        for level in self.schema.names:
            self.build.setdefault(level, [])

    def keys(self, level: str) -> list[str]:
        return [i.raw_id for i in self.build[level]]

    def counts(self) -> dict[str, int]:
        """``leaves``, then one count per parent level (``seats``, ``accounts``), ``purged``."""
        out = {"leaves": len(self.build[self.schema.leaf.name])}
        for level in self.schema.parents_bottom_up:
            out[self.schema.level(level).plural] = len(self.build[level])
        out["purged"] = len(self.purge)
        return out

    @property
    def total(self) -> int:
        return sum(len(items) for items in self.build.values())

    @property
    def empty(self) -> bool:
        return not self.total and not self.purge and not self.orphan_vectors

    def as_dict(self) -> dict:
        return {
            "build": {
                lv: [
                    {"node_id": i.node_id, "reason": i.reason, "input_hash": i.input_hash}
                    for i in self.build[lv]
                ]
                for lv in self.schema.bottom_up
            },
            "purge": list(self.purge),
            "orphan_vectors": list(self.orphan_vectors),
            "counts": self.counts(),
        }


LeafHash = Callable[[NodeInfo], str]
ParentHash = Callable[[NodeInfo, list[NodeInfo], dict[str, NodeState]], str]


def make_plan(
    topology: Topology,
    states: dict[str, NodeState],
    leaf_hash: LeafHash,
    parent_hash: ParentHash,
    vector_ids: Iterable[str] = (),
    full: bool = False,
) -> Plan:
    """The plan for ``topology`` given what is built (``states``) and which nodes have vectors."""
    schema = topology.schema
    plan = Plan(schema, topology=topology)
    dirty: set[str] = set()
    for raw, node in topology.leaves.items():
        current = leaf_hash(node)
        reason = _reason(full, states.get(node.node_id), current, node)
        if reason:
            plan.build[node.level].append(PlanItem(node.node_id, node.level, raw, reason, current))
            dirty.add(node.node_id)
    known = {n.node_id for nodes in topology.levels.values() for n in nodes.values()}
    plan.purge = sorted(n for n in states if n not in known)
    live = {n for n, s in states.items() if s.input_hash != INVALIDATED}
    plan.orphan_vectors = sorted(set(vector_ids) - live - set(plan.purge))
    stored_children: dict[str, list[str]] = {}
    for n, s in states.items():
        if s.parent_id is not None:
            stored_children.setdefault(s.parent_id, []).append(n)
    for level in schema.parents_bottom_up:
        for raw, node in topology.level(level).items():
            st = states.get(node.node_id)
            children = topology.children(node)
            reason = _reason(full, st, None, node) or _child_reason(
                children, stored_children.get(node.node_id, []), dirty
            )
            current = parent_hash(node, children, states)
            if not reason and st.input_hash != current:
                reason = "inputs changed"
            if reason:
                known_hash = "" if any(c.node_id in dirty for c in children) else current
                plan.build[level].append(PlanItem(node.node_id, level, raw, reason, known_hash))
                dirty.add(node.node_id)
    return plan


def split_changed(
    nodes: Sequence[NodeInfo], states: dict[str, NodeState], current_hash: Callable[[NodeInfo], str]
) -> tuple[list[NodeInfo], list[NodeInfo]]:
    """``nodes`` split into those to build (new, moved, emptied, or inputs changed: the plan's
    rule) and those whose stored memory is current, each in the given order.

    What a run over a partition range builds: the range also holds siblings the plan did not
    ask for. Asked at build time, once the children are built, a parent's input hash is known
    (it covers its children's ids and memory hashes), so a parent the plan lists for a rebuilt
    child is left when that child's memory came out the same.
    """
    changed: list[NodeInfo] = []
    unchanged: list[NodeInfo] = []
    for node in nodes:
        stale = _reason(False, states.get(node.node_id), current_hash(node), node)
        (changed if stale else unchanged).append(node)
    return changed, unchanged


#: Why a node emptied by a deletion or a move below it is rebuilt (the sensor requests these
#: at once instead of waiting for automation).
EMPTIED = "emptied by a deletion or a move below it"


def _reason(full: bool, st: NodeState | None, new_hash: str | None, node: NodeInfo) -> str:
    if full:
        return "full rebuild"
    if st is None:
        return "new"
    if st.parent_id != node.parent_id or st.path != node.path:
        return f"moved from {st.parent_id}"
    if st.input_hash == INVALIDATED:
        return EMPTIED
    if new_hash is not None and st.input_hash != new_hash:
        return "inputs changed"
    return ""


def _child_reason(children: list[NodeInfo], stored: list[str], dirty: set[str]) -> str:
    """Why a parent must be rebuilt for its children: some are rebuilt, some left it."""
    rebuilt = sorted(c.node_id for c in children if c.node_id in dirty)
    current = {c.node_id for c in children}
    left = sorted(n for n in stored if n not in current)
    parts = []
    if rebuilt:
        parts.append("child rebuilt: " + _few(rebuilt))
    if left:
        parts.append("child removed: " + _few(left))
    return "; ".join(parts)


def _few(ids: list[str], shown: int = 5) -> str:
    more = f" (+{len(ids) - shown})" if len(ids) > shown else ""
    return ", ".join(ids[:shown]) + more
