"""What the Dagster UI shows for each partition: its own counts, read back from the memory
views, what embedding it cost, and a preview of its memory, in runs of many partitions."""

from collections import Counter
from pathlib import Path

import dagster as dg
import pytest

from hltm_assets.history import PARTITIONS_TAG
from hltm_assets.runner import dagster_instance, run_index
from hltm_resources.config import Settings
from hltm_resources.indexing.indexer import Indexer
from hltm_resources.indexing.loading import load_snapshot
from hltm_resources.stores import database
from hltm_resources.stores.vectors import TABLES, node_filter
from tests.conftest import write_tree

LEVELS = {"project_memory": "project", "seat_memory": "seat", "account_memory": "account"}


def materializations(settings: Settings) -> dict[str, dict]:
    """The newest materialization metadata of every partition, by node id."""
    out = {}
    with dagster_instance(settings) as instance:
        for asset, level in LEVELS.items():
            for record in instance.fetch_materializations(
                dg.AssetKey(asset), limit=10_000
            ).records:  # newest first
                out.setdefault(f"{level}:{record.partition_key}", record)
    return {n: r.asset_materialization.metadata for n, r in out.items()}


def stored_counts(settings: Settings) -> dict[str, Counter]:
    """Per node, its rows in each memory view (read with SQL, as a user would)."""
    counts: dict[str, Counter] = {}
    with database.connect(settings.duckdb_path, read_only=True) as con:
        for view in ("memory_facets", "memory_qa", "memory_summaries", "memory_evidence"):
            for node, n in con.execute(
                f"SELECT node_id, count(*) FROM {view} GROUP BY node_id"
            ).fetchall():
                counts.setdefault(node, Counter())[view] = n
    return counts


def embedded_texts_of(indexer: Indexer, node: str) -> set[str]:
    return {
        t
        for name in TABLES
        for t in indexer.vectors.scan(name, ["text"], node_filter([node]))
        .column("text")
        .to_pylist()
    }


@pytest.fixture
def indexed(tmp_path, snapshot_dir) -> tuple[Settings, dict]:
    settings = Settings(home=tmp_path / "home")
    load_snapshot(settings, snapshot_dir)
    indexer = Indexer(settings)
    result = run_index(settings, indexer=indexer)
    assert not result.failed
    return settings, result.as_json()


def test_each_partition_shows_its_own_counts_as_the_views_hold_them(indexed, world):
    settings, _ = indexed
    meta = materializations(settings)
    counts = stored_counts(settings)
    assert len([n for n in meta if n.startswith("project:")]) == len(world.projects)
    for node, m in meta.items():
        views = counts[node]
        assert m["node_id"].value == node and m["status"].value == "built"
        assert m["facets"].value == views["memory_facets"]
        assert m["qa_pairs"].value == views["memory_qa"]
        assert m["summaries"].value == views["memory_summaries"] == 1
        assert m["evidence_passages"].value == views["memory_evidence"]
        assert m["dagster/row_count"].value == sum(views.values())


def test_each_partition_previews_its_summary_and_best_supported_facets(indexed):
    settings, _ = indexed
    meta = materializations(settings)
    with database.connect(settings.duckdb_path, read_only=True) as con:
        summaries = dict(con.execute("SELECT node_id, concise FROM memory_summaries").fetchall())
        leaves = dict(con.execute("SELECT node_id, leaf_count FROM memory_nodes").fetchall())
        top = dict(
            con.execute(
                "SELECT node_id, arg_max(key || ': ' || value || '|' || support, support) "
                "FROM memory_facets GROUP BY node_id"
            ).fetchall()
        )
    seat = next(n for n in meta if n.startswith("seat:"))
    preview = meta[seat]["preview"].value
    assert " ".join(summaries[seat].split()) in preview
    facet, support = top[seat].rsplit("|", 1)
    assert f"| {facet} | {support} of {leaves[seat]} projects |" in preview
    for node, m in meta.items():
        assert " ".join(summaries[node].split()).replace("|", "\\|") in m["preview"].value


def test_embedded_texts_add_up_to_what_the_embedder_embedded(indexed):
    settings, result = indexed
    meta = materializations(settings)
    per_partition = sum(m["embedded_texts"].value for m in meta.values())
    assert result["embedded_texts"] > 0
    assert per_partition == result["embedded_texts"]  # the embedder's own count
    for level in LEVELS.values():  # one range run per level: its batch is the level
        mine = [m for n, m in meta.items() if n.startswith(f"{level}:")]
        assert len({m["batch"].value["embedded_texts"] for m in mine}) == 1
        assert (
            sum(m["embedded_texts"].value for m in mine)
            == (mine[0]["batch"].value["embedded_texts"])
        )


SEATS = {"a1": "a", "a2": "a"}
PROJECTS = [f"{seat}-{i}" for seat in SEATS for i in range(1, 5)]


def snapshot(directory: Path, noted: tuple[str, ...] = ()) -> Path:
    docs = [
        (
            f"d-{p}",
            p,
            "Title: Engineer\nLocation: Dublin"
            + ("\nThe team meets on Mondays in the Galway office." if p in noted else ""),
        )
        for p in PROJECTS
    ]
    return write_tree(
        directory, SEATS, [(p, p.split("-")[0], f"Project {p}") for p in PROJECTS], docs
    )


def test_a_rebuilt_node_counts_the_texts_it_did_not_have_and_its_neighbours_stay(tmp_path):
    settings = Settings(home=tmp_path / "home")
    load_snapshot(settings, snapshot(tmp_path / "v1"))
    assert not run_index(settings).failed
    before = materializations(settings)
    indexer = Indexer(settings)  # a new process: nothing cached but what the store holds
    old_texts = embedded_texts_of(indexer, "project:a1-1")

    # Two edits at the ends of seat a1: one run over a1-1..a1-4 rebuilds these two.
    load_snapshot(settings, snapshot(tmp_path / "v2", noted=("a1-1", "a1-4")))
    assert not run_index(settings, indexer=indexer).failed
    after = materializations(settings)
    new_texts = embedded_texts_of(indexer, "project:a1-1") - old_texts
    assert new_texts  # the line of prose made new passages at least
    assert after["project:a1-1"]["status"].value == "built"
    assert after["project:a1-1"]["embedded_texts"].value == len(new_texts)
    assert after["project:a1-4"]["embedded_texts"].value == 0  # a1-1 embedded the same line
    # The two between them were current: recorded in the same run, with what they hold.
    run = after["project:a1-1"]["batch"].value
    assert run["nodes_built"] == 2 and run["nodes_unchanged"] == 2
    for other in ("project:a1-2", "project:a1-3"):
        assert after[other]["status"].value == "unchanged"
        for key in ("facets", "qa_pairs", "evidence_passages", "dagster/row_count", "preview"):
            assert after[other][key].value == before[other][key].value
        assert "embedded_texts" not in after[other]


def test_a_cli_run_names_its_partition_range_for_a_person(indexed, world):
    settings, _ = indexed
    with dagster_instance(settings) as instance:
        labels = sorted(run.tags[PARTITIONS_TAG] for run in instance.get_runs())
    ends = [label.split(": ", 1)[1] for label in labels]
    assert sorted(ends) == sorted(
        [
            f"{len(world.projects)} projects of {len(world.seats)} recruiters",
            f"{len(world.seats)} recruiters of {len(world.accounts)} organizations",
            f"{len(world.accounts)} organizations",
        ]
    )
