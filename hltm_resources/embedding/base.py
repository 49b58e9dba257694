"""The embedder interface: text -> L2-normalized float32 vectors, one model per instance."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np


class EmbedderError(RuntimeError):
    """The embedding model cannot be loaded or called."""


class Embedder(ABC):
    """Text -> L2-normalized float32 vectors. Same text, same vector, whatever the batch."""

    model_id: str
    dim: int

    def __init__(self) -> None:
        self.calls = 0
        self.texts = 0

    @abstractmethod
    def _embed(self, texts: list[str]) -> np.ndarray:
        """Vectors for a batch of (unique) texts."""

    def embed(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Vectors for ``texts``; duplicates are embedded once."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        unique = sorted(set(texts), key=lambda t: (len(t), t))
        parts = []
        for start in range(0, len(unique), batch_size):
            batch = unique[start : start + batch_size]
            parts.append(np.asarray(self._embed(batch), dtype=np.float32))
            self.calls += 1
            self.texts += len(batch)
        out = np.concatenate(parts)
        index = {t: i for i, t in enumerate(unique)}
        return out[[index[t] for t in texts]]

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]
