"""Every partition definition of the tree, built from the SOT topology when definitions load.

One static partition per node, keyed by the raw id; lineage from each level to its parent is
declared with ``StaticPartitionMapping`` (see DESIGN-partitions.md: dynamic partitions and
custom mappings do not work with automation). Keys are in path order, so the children of one
parent are contiguous and a batch of them is one partition range.
"""

from __future__ import annotations

from dataclasses import dataclass

import dagster as dg

from hltm_resources.config import Settings
from hltm_resources.models import Topology
from hltm_resources.stores import database
from hltm_resources.stores.sot import read_topology


@dataclass(frozen=True)
class TreePartitions:
    """Per level, its partitions and the mapping of its partitions onto its parent's."""

    topology: Topology
    partitions: dict[str, dg.StaticPartitionsDefinition]
    to_parent: dict[str, dg.StaticPartitionMapping]

    def of_level(self, level: str) -> dg.StaticPartitionsDefinition:
        return self.partitions[level]


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


def contiguous_ranges(keys: list[str], ordered: list[str]) -> list[tuple[str, str]]:
    """Split ``keys`` into maximal runs of consecutive partitions of ``ordered``."""
    position = {k: i for i, k in enumerate(ordered)}
    idx = sorted(position[k] for k in keys)
    ranges: list[tuple[str, str]] = []
    start = prev = None
    for i in idx:
        if start is None:
            start = prev = i
        elif i == prev + 1:
            prev = i
        else:
            ranges.append((ordered[start], ordered[prev]))
            start = prev = i
    if start is not None:
        ranges.append((ordered[start], ordered[prev]))
    return ranges
