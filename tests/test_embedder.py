"""The offline embedder: a real model from a package, checked, deterministic."""

import numpy as np
import pytest

from hltm_resources.embedding import (
    LOCAL_EMBEDDERS,
    MINILM_DIM,
    EmbedderError,
    MiniLMEmbedder,
    minilm,
)


@pytest.fixture(scope="module", params=sorted(LOCAL_EMBEDDERS))
def embedder(request):
    """Each offline embedder (``local``, ``local-float``)."""
    return LOCAL_EMBEDDERS[request.param]()


def test_vectors_are_normalized_and_semantic(embedder):
    vecs = embedder.embed(["location: Dublin, Ireland", "location: Dublin", "skill: Kubernetes"])
    assert vecs.shape == (3, MINILM_DIM)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert vecs[0] @ vecs[1] > vecs[0] @ vecs[2]


def test_same_text_same_vector_whatever_the_batch(embedder):
    alone = embedder.embed(["title: Data Engineer"])[0]
    batch = embedder.embed(
        ["a much longer text that forces padding " * 5, "title: Data Engineer", "x"]
    )[1]
    assert np.array_equal(alone, batch)


def test_duplicates_are_embedded_once(embedder):
    before = embedder.texts
    out = embedder.embed(["same", "same", "same"])
    assert embedder.texts - before == 1
    assert np.array_equal(out[0], out[2])


def test_corrupted_tokenizer_is_refused(tmp_path, monkeypatch):
    bad = tmp_path / "tokenizer.json"
    bad.write_text("{}")
    monkeypatch.setattr(minilm, "TOKENIZER_PATH", bad)
    with pytest.raises(EmbedderError, match="sha256"):
        MiniLMEmbedder().embed(["x"])


def test_the_default_int8_model_is_its_own_model_close_to_the_float_one(tmp_path, monkeypatch):
    """``HLTM_EMBEDDER=local``: int8 activations per token, derived once into the cache dir."""
    monkeypatch.setenv("HLTM_CACHE_DIR", str(tmp_path))
    tokenwise = minilm.MiniLMTokenwiseEmbedder()
    texts = ["location: Dublin, Ireland", "skill: Kubernetes", "Why was the candidate rejected?"]
    vecs = tokenwise.embed(texts)
    assert tokenwise.model_id != MiniLMEmbedder.model_id  # its vectors never mix with others
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    cosines = (vecs * MiniLMEmbedder().embed(texts)).sum(axis=1)
    assert cosines.min() > 0.99 and not np.allclose(cosines, 1.0, atol=1e-6)
    derived = list(tmp_path.glob("*.onnx"))
    assert len(derived) == 1
    stamp = derived[0].stat().st_mtime_ns
    again = minilm.MiniLMTokenwiseEmbedder().embed(texts)
    assert np.array_equal(again, vecs) and derived[0].stat().st_mtime_ns == stamp  # reused
    derived[0].write_bytes(b"not a model")  # altered: derived again, not loaded
    assert np.array_equal(minilm.MiniLMTokenwiseEmbedder().embed(texts), vecs)


def test_the_int8_model_gives_a_text_the_same_vector_in_any_batch(tmp_path, monkeypatch):
    """One activation scale per token, so neither padding nor a neighbour with larger values
    changes a text's vector (one scale per batch did: cosine about 0.99)."""
    monkeypatch.setenv("HLTM_CACHE_DIR", str(tmp_path))
    tokenwise = minilm.MiniLMTokenwiseEmbedder()
    text = "title: Data Engineer"
    alone = tokenwise.embed([text])[0]
    loud = "ZZZZ!!!! 9999999 " * 30  # long, and unusual tokens with large activations
    for batch in ([loud, text, "x"], [text, "skill: Kubernetes"], [text] + [loud] * 7):
        assert np.array_equal(tokenwise.embed(batch)[batch.index(text)], alone)


def test_the_rewrite_quantizes_per_token(monkeypatch, tmp_path):
    """No one-scale-per-tensor quantization is left in the derived graph."""
    import onnx

    monkeypatch.setenv("HLTM_CACHE_DIR", str(tmp_path))
    path = minilm.MiniLMTokenwiseEmbedder()._model_file()
    ops = {node.op_type for node in onnx.load(str(path)).graph.node}
    assert "DynamicQuantizeLinear" not in ops and "MatMulInteger" not in ops
    assert {"QuantizeLinear", "MatMulIntegerToFloat"} <= ops


@pytest.mark.parametrize("name", sorted(LOCAL_EMBEDDERS))
def test_sessions_side_by_side_give_the_same_vectors(name):
    """A build runs batches on one session per core; every vector equals one session's."""
    texts = [f"skill {i}: " + "distributed systems " * (i % 9) for i in range(300)]
    one = LOCAL_EMBEDDERS[name]()
    two = LOCAL_EMBEDDERS[name](sessions=2)
    vecs = two.embed(texts)
    assert two.calls > 2 and two._pool is not None  # many batches, run side by side
    assert np.array_equal(vecs, one.embed(texts))
