"""Building memory with the plain indexer (no Dagster), on real DuckDB and LanceDB."""

import pytest

from hltm_resources.embedding import MINILM_TOKENWISE_MODEL_ID
from hltm_resources.indexing.checks import check_level
from hltm_resources.indexing.indexer import Indexer
from hltm_resources.indexing.loading import load_snapshot
from hltm_resources.indexing.stats import tree_stats
from hltm_resources.stores import database
from hltm_resources.stores.memory_rows import read_memories
from hltm_resources.stores.vectors import TABLES, VectorStore
from tests.conftest import stored_vectors


def test_every_node_has_all_views_and_vectors(built_home, world):
    stats = tree_stats(built_home)
    assert stats["levels"]["project"]["nodes"] == len(world.projects)
    assert stats["levels"]["seat"]["nodes"] == len(world.seats)
    assert stats["levels"]["account"]["nodes"] == len(world.accounts)
    for level in ("project", "seat", "account"):
        result = check_level(built_home, level)
        assert result.passed, result.problems


def test_nothing_to_build_after_a_build(built_home):
    assert Indexer(built_home).plan().empty


def test_stored_memory_round_trips_to_the_same_hash(built_home):
    with database.connect(built_home.duckdb_path, read_only=True) as con:
        hashes = dict(con.execute("SELECT node_id, memory_hash FROM mem_nodes").fetchall())
        memories = read_memories(con, list(hashes))
    assert memories and all(m.content_hash() == hashes[n] for n, m in memories.items())


def test_provenance_points_at_real_documents_and_children(built_home, world):
    doc_ids = {d["doc_id"] for d in world.documents}
    with database.connect(built_home.duckdb_path, read_only=True) as con:
        rows = con.execute("""SELECT n.level, f.source_ids FROM memory_facets f
                              JOIN memory_nodes n USING (node_id)""").fetchall()
        nodes = {r[0] for r in con.execute("SELECT node_id FROM memory_nodes").fetchall()}
    for level, sources in rows:
        assert sources, "every facet keeps its provenance"
        expected = doc_ids if level == "project" else nodes
        assert set(sources) <= expected


def test_vectors_carry_path_and_model(built_home):
    store = VectorStore(built_home.lancedb_path, None, None)
    for name in TABLES:
        model, dim = store.table_model(name)
        assert model == MINILM_TOKENWISE_MODEL_ID and dim == 384
        rows = store.scan(name, ["node_id", "level", "path", "text"])
        assert rows.num_rows and all(rows.column("path").to_pylist())


def test_two_builds_are_byte_identical(tmp_path, snapshot_dir, built_home):
    from hltm_resources.config import Settings

    other = Settings(home=tmp_path / "other")
    load_snapshot(other, snapshot_dir)
    indexer = Indexer(other)
    for level in ("project", "seat", "account"):
        indexer.build(level, indexer.plan().keys(level))

    def dump(settings):
        with database.connect(settings.duckdb_path, read_only=True) as con:
            return {
                v: con.execute(f"SELECT * FROM {v} ORDER BY ALL").fetchall()
                for v in ("memory_facets", "memory_qa", "memory_summaries")
            } | {
                "nodes": con.execute(
                    "SELECT node_id, input_hash, memory_hash FROM memory_nodes ORDER BY node_id"
                ).fetchall()
            }

    assert dump(other) == dump(built_home)


def test_a_build_that_overflows_the_vector_cache_stores_the_same_memory(
    tmp_path, snapshot_dir, built_home
):
    from hltm_resources.config import Settings

    small = Settings(home=tmp_path / "small-cache")
    load_snapshot(small, snapshot_dir)
    # Three vectors fit: every chunk of every level clears the cache, many times over.
    indexer = Indexer(small, embed_cache_size=3)
    indexer.build_all()
    assert indexer.embedder.texts > 10 * indexer.embed_cache_size

    def rows(settings):
        with database.connect(settings.duckdb_path, read_only=True) as con:
            memory = con.execute(
                "SELECT node_id, input_hash, memory_hash FROM memory_nodes ORDER BY node_id"
            ).fetchall()
        return memory, stored_vectors(settings)

    assert rows(small) == rows(built_home)


def test_a_write_that_conflicted_with_another_writers_commit_is_run_again_whole(tmp_path):
    """The lake's writers commit optimistically: a refused commit is rolled back and run
    again; any other failure is not."""
    import duckdb

    from hltm_resources.stores import database

    path, calls = tmp_path / "x.duckdb", []

    def write(con) -> None:
        calls.append(1)
        con.execute("CREATE TABLE IF NOT EXISTS t (x INT)")
        con.execute("INSERT INTO t VALUES (1)")
        if len(calls) == 1:
            raise duckdb.TransactionException("Transaction conflict - another transaction ...")

    database.write_retrying(path, write)
    assert len(calls) == 2
    with database.connect(path, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM t").fetchone()[0] == 1

    def broken(con) -> None:
        calls.append(1)
        raise duckdb.TransactionException("something else")

    with pytest.raises(duckdb.TransactionException, match="something else"):
        database.write_retrying(path, broken)
    assert len(calls) == 3
