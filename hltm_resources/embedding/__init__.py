"""Embedders behind one interface: the offline MiniLM int8 ONNX model, or an OpenAI endpoint."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from hltm_resources.embedding.base import Embedder, EmbedderError
from hltm_resources.embedding.minilm import (
    MINILM_DIM,
    MINILM_MODEL_ID,
    MINILM_TOKENWISE_MODEL_ID,
    MiniLMEmbedder,
    MiniLMTokenwiseEmbedder,
    build_sessions,
)

if TYPE_CHECKING:
    from hltm_resources.config import Settings

__all__ = [
    "MINILM_DIM",
    "LOCAL_EMBEDDERS",
    "MINILM_MODEL_ID",
    "MINILM_TOKENWISE_MODEL_ID",
    "Embedder",
    "EmbedderError",
    "MiniLMTokenwiseEmbedder",
    "MiniLMEmbedder",
    "make_embedder",
    "setting_for_model",
]


#: The offline embedders by ``HLTM_EMBEDDER`` value.
LOCAL_EMBEDDERS: dict[str, type[MiniLMEmbedder]] = {
    "local": MiniLMTokenwiseEmbedder,
    "local-float": MiniLMEmbedder,
}


@lru_cache(maxsize=4)
def _shared_minilm(name: str, serving: bool) -> MiniLMEmbedder:
    if serving:  # a question's few texts: one session, on every core
        return LOCAL_EMBEDDERS[name](spinning=False)
    return LOCAL_EMBEDDERS[name](sessions=build_sessions())


def setting_for_model(model_id: str) -> str:
    """How to select ``model_id`` again (for errors about memory embedded with it)."""
    for name, embedder in LOCAL_EMBEDDERS.items():
        if embedder.model_id == model_id:
            return f"HLTM_EMBEDDER={name}"
    if model_id.startswith("openai:"):
        return f"HLTM_EMBEDDER=openai HLTM_EMBED_MODEL={model_id.removeprefix('openai:')}"
    return "no setting of this version (rebuild with `hltm index --full --reset-vectors`)"


def make_embedder(settings: Settings, serving: bool = False) -> Embedder:
    """The embedder the settings ask for; the offline ones are shared within a process, one
    for building (a session per core) and one for ``serving`` questions (see
    :class:`MiniLMEmbedder`)."""
    if settings.embedder in LOCAL_EMBEDDERS:
        return _shared_minilm(settings.embedder, serving)
    from hltm_resources.embedding.openai_embedder import OpenAIEmbedder

    return OpenAIEmbedder.from_settings(settings)
