"""Every partition definition of the tree, built from the SOT topology when definitions load.

One static partition per node, keyed by the raw id; lineage from leaf to seat to account is
declared with ``StaticPartitionMapping`` (see DESIGN-partitions.md: dynamic partitions and
custom mappings do not work with automation). Keys are in path order, so the projects of one
seat are contiguous and a batch of them is one partition range.
"""

from __future__ import annotations

from dataclasses import dataclass

import dagster as dg

from hltm_resources.config import Settings
from hltm_resources.stores import database
from hltm_resources.stores.sot import Topology, read_topology

LEVEL_ASSETS = {"project": "project_memory", "seat": "seat_memory", "account": "account_memory"}


@dataclass(frozen=True)
class TreePartitions:
    """Partition definitions and parent mappings of the three levels."""

    topology: Topology
    projects: dg.StaticPartitionsDefinition
    seats: dg.StaticPartitionsDefinition
    accounts: dg.StaticPartitionsDefinition
    project_to_seat: dg.StaticPartitionMapping
    seat_to_account: dg.StaticPartitionMapping

    def of_level(self, level: str) -> dg.StaticPartitionsDefinition:
        return {"project": self.projects, "seat": self.seats, "account": self.accounts}[level]


def read_tree(settings: Settings) -> Topology:
    """The topology in the SOT, or an empty tree when nothing was loaded yet."""
    if not settings.duckdb_path.exists():
        return Topology({}, {}, {})
    with database.connect(settings.duckdb_path, read_only=True) as con:
        tables = {
            r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()
        }
        if "sot_projects" not in tables:
            return Topology({}, {}, {})
        return read_topology(con)


def tree_partitions(topology: Topology) -> TreePartitions:
    return TreePartitions(
        topology=topology,
        projects=dg.StaticPartitionsDefinition(list(topology.projects)),
        seats=dg.StaticPartitionsDefinition(list(topology.seats)),
        accounts=dg.StaticPartitionsDefinition(list(topology.accounts)),
        project_to_seat=dg.StaticPartitionMapping(
            {raw: n.parent_id.split(":", 1)[1] for raw, n in topology.projects.items()}
        ),
        seat_to_account=dg.StaticPartitionMapping(
            {raw: n.parent_id.split(":", 1)[1] for raw, n in topology.seats.items()}
        ),
    )


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
