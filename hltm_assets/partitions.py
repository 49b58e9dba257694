"""Every partition definition of the tree, built from the SOT topology when definitions load.

One static partition per node, keyed by the raw id; lineage from each level to its parent is
declared with ``StaticPartitionMapping`` (see DESIGN-partitions.md: dynamic partitions and
custom mappings do not work with automation). Keys are in path order, so the children of one
parent are contiguous and a batch of them is one partition range.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import dagster as dg

from hltm_resources.config import Settings
from hltm_resources.models import Topology, stable_hash
from hltm_resources.stores import database
from hltm_resources.stores.sot import read_topology
from hltm_resources.text import plural_s


@dataclass(frozen=True)
class TreePartitions:
    """Per level, its partitions and the mapping of its partitions onto its parent's."""

    topology: Topology
    partitions: dict[str, dg.StaticPartitionsDefinition]
    to_parent: dict[str, dg.StaticPartitionMapping]

    def of_level(self, level: str) -> dg.StaticPartitionsDefinition:
        return self.partitions[level]

    @cached_property
    def fingerprint(self) -> str:
        """A hash of the tree: every node and its parent, in partition order."""
        return stable_hash(
            [
                [level, [[raw, n.parent_id] for raw, n in nodes.items()]]
                for level, nodes in self.topology.levels.items()
            ]
        )


def read_tree(settings: Settings) -> Topology:
    """The topology in the SOT, or an empty tree when nothing was loaded yet."""
    schema = settings.schema
    if not settings.duckdb_path.exists():
        return Topology.empty(schema)
    with database.connect(settings.duckdb_path, read_only=True) as con:
        tables = {
            r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()
        }
        if schema.leaf.table not in tables:
            return Topology.empty(schema)
        return read_topology(con, schema)


def tree_partitions(topology: Topology) -> TreePartitions:
    partitions = {
        level: dg.StaticPartitionsDefinition(list(nodes))
        for level, nodes in topology.levels.items()
    }
    to_parent = {
        level: dg.StaticPartitionMapping(
            {raw: n.parent_id.split(":", 1)[1] for raw, n in topology.level(level).items()}
        )
        for level in topology.schema.names[1:]
    }
    return TreePartitions(topology, partitions, to_parent)


@dataclass(frozen=True)
class KeyRange:
    """One partition-range run: ``start`` to ``end`` in partition order, of which ``keys`` are
    to build and ``recorded`` are current but to be recorded (see :func:`sibling_ranges`);
    the others in between are current too."""

    start: str
    end: str
    keys: tuple[str, ...]
    recorded: tuple[str, ...] = ()


def sibling_ranges(
    keys: Sequence[str],
    ordered: Sequence[str],
    parent_of: Mapping[str, str | None],
    recorded: Collection[str] = (),
    gap: int = 0,
    most: int | None = None,
) -> list[KeyRange]:
    """One range per parent of ``keys`` (and of ``recorded``), from its first key in
    ``ordered`` to its last; ranges with at most ``gap`` partitions between them merged; a
    range of more than ``most`` partitions cut into ranges of at most ``most``.

    Dagster runs only contiguous partition ranges (dagster-io/dagster#32335); a range per
    contiguous run of ``keys`` made scattered edits one run per leaf. Spanning each parent's
    keys makes it one run per touched parent, its unchanged children in between included (the
    caller has the run skip them). With ``gap``, the ranges of nearby parents become one run:
    a run costs far more than recording a current partition, so spanning a few untouched
    nodes is cheaper than a run of its own. A parent whose children a range recorded must be
    recorded as well (``recorded``): Dagster would otherwise see it older than its children
    and its automation would rebuild it. Nodes without a parent (the top level) form one
    group. A full build is one range per level, cut by ``most``: what a run holds until its
    end (each partition's metadata and materialization event) grows with its partitions, so
    the cut bounds a build's memory whatever the number of leaves.
    """
    position = {k: i for i, k in enumerate(ordered)}
    groups: dict[str | None, list[int]] = {}
    for key in [*keys, *recorded]:
        groups.setdefault(parent_of[key], []).append(position[key])
    spans = sorted((min(idx), max(idx), idx) for idx in groups.values())
    merged: list[tuple[int, int, list[int]]] = []
    for first, last, idx in spans:
        if merged and first <= merged[-1][1] + 1 + gap:
            merged[-1] = (merged[-1][0], last, merged[-1][2] + idx)
        else:
            merged.append((first, last, idx))
    if most is not None:
        merged = [piece for span in merged for piece in _cut(span[2], most)]
    to_build = set(keys)
    out = []
    for first, last, idx in merged:
        named = [ordered[i] for i in sorted(idx)]
        out.append(
            KeyRange(
                ordered[first],
                ordered[last],
                tuple(k for k in named if k in to_build),
                tuple(k for k in named if k not in to_build),
            )
        )
    return out


def _cut(positions: list[int], most: int) -> list[tuple[int, int, list[int]]]:
    """``positions`` (of one merged range) in ranges of at most ``most`` partitions, each
    from its first position to its last."""
    pieces: list[list[int]] = []
    for i in sorted(positions):
        if not pieces or i - pieces[-1][0] >= most:
            pieces.append([])
        pieces[-1].append(i)
    return [(piece[0], piece[-1], piece) for piece in pieces]


def ranges_around(
    span: KeyRange, failed: Collection[str], ordered: Sequence[str]
) -> list[KeyRange]:
    """The parts of ``span`` between its ``failed`` keys, each from its first key to build or
    record to its last: after a range run whose other nodes were stored, these record them
    without the failed ones (which a run over them would try, and fail on, again)."""
    position = {k: i for i, k in enumerate(ordered)}
    to_build = set(span.keys)
    anchors = sorted([*span.keys, *span.recorded], key=position.__getitem__)
    parts: list[list[str]] = [[]]
    for key in anchors:
        if key in failed:
            parts.append([])
        else:
            parts[-1].append(key)
    out = []
    for part in parts:
        if part:
            # Unchanged keys between them are no failed key: span.keys hold every key to build.
            out.append(
                KeyRange(
                    part[0],
                    part[-1],
                    tuple(k for k in part if k in to_build),
                    tuple(k for k in part if k not in to_build),
                )
            )
    return out


def range_label(tree: TreePartitions, level: str, start: str, end: str) -> str:
    """A run's partition range as a person reads it: ``p00060..p00068: 9 projects of
    recruiter Farah Fischer (seat:bluefin-0-r03)``, or ``... of 3 recruiters`` (in the levels'
    nouns; the keys are raw ids in tree order)."""
    schema = tree.topology.schema
    keys = tree.of_level(level).get_partition_keys()
    span = keys[keys.index(start) : keys.index(end) + 1]
    what = plural_s(len(span), schema.level(level).noun)
    nodes = tree.topology.level(level)
    parents = list(dict.fromkeys(nodes[k].parent_id for k in span))
    if parents == [None]:
        return f"{start}..{end}: {what}"
    up = schema.parent(level)
    if len(parents) == 1:
        parent = tree.topology.node(parents[0])
        return f"{start}..{end}: {what} of {up.noun} {parent.name} ({parent.node_id})"
    return f"{start}..{end}: {what} of {plural_s(len(parents), up.noun)}"
