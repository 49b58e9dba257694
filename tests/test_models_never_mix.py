"""Vectors of different embedding models never mix; errors name both models."""

import pytest

from hltm_resources.embedding import MINILM_MODEL_ID, MINILM_TOKENWISE_MODEL_ID, setting_for_model
from hltm_resources.indexing.indexer import Indexer
from hltm_resources.stores.vectors import EmbeddingModelMismatch, VectorStore
from query import Memory
from tests.test_query import KeywordEmbedder


def test_indexing_with_another_model_is_refused_naming_both(fresh_home):
    with pytest.raises(EmbeddingModelMismatch) as err:
        Indexer(fresh_home, embedder=KeywordEmbedder()).plan()
    assert MINILM_TOKENWISE_MODEL_ID in str(err.value) and "keywords-test" in str(err.value)
    assert "(HLTM_EMBEDDER=local)" in str(err.value)  # how to build with the table's model


def test_querying_with_another_model_is_refused_naming_both(fresh_home, world):
    mem = Memory(fresh_home, embedder=KeywordEmbedder(), log_queries=False)
    with pytest.raises(EmbeddingModelMismatch) as err:
        mem.retrieve("where?", scope=f"seat:{world.seats[0]['seat_id']}")
    assert MINILM_TOKENWISE_MODEL_ID in str(err.value) and "keywords-test" in str(err.value)
    assert "(HLTM_EMBEDDER=local)" in str(err.value)  # how to query with the memory's model


def test_errors_name_the_setting_that_selects_a_model():
    assert setting_for_model(MINILM_MODEL_ID) == "HLTM_EMBEDDER=local-float"
    assert setting_for_model(MINILM_TOKENWISE_MODEL_ID) == "HLTM_EMBEDDER=local"
    assert setting_for_model("openai:text-embedding-3-small") == (
        "HLTM_EMBEDDER=openai HLTM_EMBED_MODEL=text-embedding-3-small"
    )
    assert "rebuild" in setting_for_model("all-MiniLM-L6-v2-onnx-int8-dynamic")  # retired


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
