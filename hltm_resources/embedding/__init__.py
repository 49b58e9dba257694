"""Embedders behind one interface: the offline MiniLM int8 ONNX model, or an OpenAI endpoint."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from hltm_resources.embedding.base import Embedder, EmbedderError
from hltm_resources.embedding.minilm import (
    MINILM_DIM,
    MINILM_DYNAMIC_MODEL_ID,
    MINILM_MODEL_ID,
    MiniLMDynamicEmbedder,
    MiniLMEmbedder,
)

if TYPE_CHECKING:
    from hltm_resources.config import Settings

__all__ = [
    "MINILM_DIM",
    "MINILM_DYNAMIC_MODEL_ID",
    "MINILM_MODEL_ID",
    "Embedder",
    "EmbedderError",
    "MiniLMDynamicEmbedder",
    "MiniLMEmbedder",
    "make_embedder",
]


@lru_cache(maxsize=4)
def _shared_minilm(fast: bool = False) -> MiniLMEmbedder:
    return MiniLMDynamicEmbedder() if fast else MiniLMEmbedder()


def make_embedder(settings: Settings) -> Embedder:
    """The embedder the settings ask for; the offline one is shared within a process."""
    if settings.embedder in ("local", "local-fast"):
        return _shared_minilm(fast=settings.embedder == "local-fast")
    from hltm_resources.embedding.openai_embedder import OpenAIEmbedder

    return OpenAIEmbedder.from_settings(settings)
