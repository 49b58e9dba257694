"""The offline embedder: a real model from a package, checked, deterministic."""

import numpy as np
import pytest

from hltm_resources.embedding import MINILM_DIM, EmbedderError, MiniLMEmbedder, minilm


@pytest.fixture(scope="module")
def embedder():
    return MiniLMEmbedder()


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
