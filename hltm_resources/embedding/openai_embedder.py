"""Embeddings from an OpenAI-compatible endpoint (OpenAI, Azure OpenAI, vLLM, Ollama, ...)."""

from __future__ import annotations

import time

import numpy as np

from hltm_resources.config import ConfigError, Settings
from hltm_resources.embedding.base import Embedder, EmbedderError


class OpenAIEmbedder(Embedder):
    """``client.embeddings.create`` with the same retry rules as the chat calls.

    The model id the vectors carry is ``openai:<model>``; the dimension is learned from the
    first reply (one probe when it is asked for before any embedding).
    """

    def __init__(self, settings: Settings, client=None, sleep=time.sleep):
        super().__init__()
        if not settings.embed_model:
            raise ConfigError(
                "HLTM_EMBEDDER=openai needs HLTM_EMBED_MODEL (e.g. "
                "text-embedding-3-small, or the Azure deployment name)"
            )
        from hltm_resources.engines.llm.client import make_openai_client

        self.settings = settings
        self.model = settings.embed_model
        self.model_id = f"openai:{settings.embed_model}"
        self.client = client or make_openai_client(settings)
        self.sleep = sleep
        self._dim: int | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> OpenAIEmbedder:
        return cls(settings)

    @property
    def dim(self) -> int:  # type: ignore[override]
        if self._dim is None:
            self._embed(["dimension probe"])
            self.calls += 1
        assert self._dim is not None
        return self._dim

    def _embed(self, texts: list[str]) -> np.ndarray:
        import openai

        from hltm_resources.engines.llm.client import backoff_seconds, retry_after_seconds

        attempt = 0
        while True:
            try:
                response = self.client.embeddings.create(model=self.model, input=texts)
                break
            except (
                openai.RateLimitError,
                openai.InternalServerError,
                openai.APITimeoutError,
                openai.APIConnectionError,
            ) as exc:
                if attempt >= self.settings.max_retries:
                    raise EmbedderError(f"embedding endpoint kept failing: {exc}") from exc
                self.sleep(backoff_seconds(attempt, retry_after_seconds(exc)))
                attempt += 1
        data = sorted(response.data, key=lambda d: d.index)
        vecs = np.asarray([d.embedding for d in data], dtype=np.float32)
        if vecs.shape[0] != len(texts):
            raise EmbedderError(f"asked for {len(texts)} embeddings, got {vecs.shape[0]}")
        if self._dim is None:
            self._dim = int(vecs.shape[1])
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        return vecs / np.clip(norms, 1e-12, None)
