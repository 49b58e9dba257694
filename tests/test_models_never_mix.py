"""Vectors of different embedding models never mix; errors name both models."""

import pytest

from hltm_resources.build.indexer import Indexer
from hltm_resources.stores.vectors import EmbeddingModelMismatch, VectorStore
from query import Memory
from tests.test_query import KeywordEmbedder


def test_indexing_with_another_model_is_refused_naming_both(fresh_home):
    with pytest.raises(EmbeddingModelMismatch) as err:
        Indexer(fresh_home, embedder=KeywordEmbedder()).plan()
    assert "all-MiniLM-L6-v2-onnx-int8" in str(err.value) and "keywords-test" in str(err.value)


def test_querying_with_another_model_is_refused_naming_both(fresh_home, world):
    mem = Memory(fresh_home, embedder=KeywordEmbedder(), log_queries=False)
    with pytest.raises(EmbeddingModelMismatch) as err:
        mem.retrieve("where?", scope=f"seat:{world.seats[0]['seat_id']}")
    assert "all-MiniLM-L6-v2-onnx-int8" in str(err.value) and "keywords-test" in str(err.value)


def test_reset_vectors_moves_a_home_to_another_model(fresh_home, world):
    indexer = Indexer(fresh_home, embedder=KeywordEmbedder())
    indexer.vectors.drop_all()
    plan = indexer.plan()
    assert len(plan.build["project"]) == len(world.projects)  # the embedder is in every hash
    for level in ("project", "seat", "account"):
        indexer.build(level, plan.keys(level))
    store = VectorStore(fresh_home.lancedb_path, None, None)
    assert {store.table_model(t) for t in ("facets", "qa", "summaries")} == {("keywords-test", 5)}
    mem = Memory(fresh_home, embedder=KeywordEmbedder(), log_queries=False)
    assert mem.retrieve("where?", scope=f"seat:{world.seats[0]['seat_id']}").context.facets
