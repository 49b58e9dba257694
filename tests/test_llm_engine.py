"""The LLM engine end to end against a real OpenAI-compatible server (llama.cpp on loopback,
SmolLM2-135M). Assertions are on structure, never on the tiny model's wording."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hltm_resources.config import Settings
from hltm_resources.engines.llm.prompts import PROMPT_VERSION
from hltm_resources.indexing.checks import check_level
from hltm_resources.stores import database
from tests.conftest import write_jsonl, write_tree

pytestmark = [pytest.mark.llm, pytest.mark.slow]
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def tiny_snapshot(tmp_path, world):
    """One account, one seat, two projects (their real generated documents)."""
    seat = world.seats[0]
    projects = [p for p in world.projects if p["seat_id"] == seat["seat_id"]][:2]
    ids = {p["project_id"] for p in projects}
    snap = tmp_path / "tiny"
    snap.mkdir()
    write_jsonl(
        snap / "accounts.jsonl",
        [a for a in world.accounts if a["account_id"] == seat["account_id"]],
    )
    write_jsonl(snap / "seats.jsonl", [seat])
    write_jsonl(snap / "projects.jsonl", projects)
    docs = [d for d in world.documents if d["project_id"] in ids and d["kind"] != "feedback"]
    write_jsonl(snap / "documents.jsonl", docs)
    return snap, seat, projects, docs


def llm_env(url: str, home: Path) -> dict:
    return dict(
        os.environ,
        HLTM_ENGINE="openai",
        OPENAI_BASE_URL=url,
        OPENAI_API_KEY="sk-local",
        HLTM_CHAT_MODEL="smollm2-135m",
        HLTM_MAX_INPUT_TOKENS="1500",
        HLTM_CONCURRENCY="2",
        HLTM_TIMEOUT_S="300",
        HLTM_HOME=str(home),
    )


def hltm(env, *args):
    proc = subprocess.run(
        [sys.executable, "-m", "hltm_assets.cli", *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_index_and_ask_through_a_real_local_server(llm_url, tmp_path, tiny_snapshot):
    snap, seat, projects, docs = tiny_snapshot
    home = tmp_path / "home"
    env = llm_env(llm_url, home)
    hltm(env, "load", str(snap))
    out = json.loads(hltm(env, "index", "--json"))
    assert (out["leaves_built"], out["seats_built"], out["accounts_built"]) == (2, 1, 1)
    # 4 agent calls per leaf and 1 per parent, each at least one LLM call or a cache hit (the
    # tiny model can write the same detailed summary for both leaves, and then the concise
    # summary's request repeats exactly).
    assert out["engine_calls"] == 4 * 2 + 2 and out["llm_calls"] > 0
    assert out["llm_calls"] + out["cache_hits"] >= out["engine_calls"]
    assert out["prompt_tokens"] > 0 and out["completion_tokens"] > 0
    assert out["failed_runs"] == []

    settings = Settings(home=home)
    for level in ("project", "seat", "account"):
        assert check_level(settings, level).passed
    doc_ids = {d["doc_id"] for d in docs}
    with database.connect(settings.duckdb_path, read_only=True) as con:
        nodes = {
            r[0]: r[1] for r in con.execute("SELECT node_id, engine FROM memory_nodes").fetchall()
        }
        for table in ("memory_facets", "memory_qa", "memory_summaries"):
            for node, sources in con.execute(f"SELECT node_id, source_ids FROM {table}").fetchall():
                allowed = doc_ids if node.startswith("project:") else set(nodes)
                assert set(sources) <= allowed, (table, node, sources)
    engine = f"openai:smollm2-135m:{PROMPT_VERSION}"
    assert set(nodes.values()) == {engine}

    # The Dagster materializations carry the calls and tokens of their partition range, and
    # each partition its own share of them.
    import dagster as dg

    from hltm_assets.runner import dagster_instance

    with dagster_instance(settings) as instance:
        records = instance.fetch_materializations(dg.AssetKey("project_memory"), limit=100).records
    metas = [r.asset_materialization.metadata for r in records]
    meta = metas[0]
    batch = meta["batch"].value
    assert batch["llm_calls"] + batch["cache_hits"] >= 8
    assert batch["llm_calls"] > 0 and batch["prompt_tokens"] > 0
    assert meta["engine"].value == engine
    assert len(metas) == batch["nodes_built"]  # one range run built every leaf
    for key in ("llm_calls", "prompt_tokens", "completion_tokens"):
        assert sum(m[key].value for m in metas) == batch[key]

    # Asking: two LLM calls (facet parse + answer), citations inside the scope.
    answer = json.loads(
        hltm(
            env,
            "ask",
            "Where are the jobs usually located?",
            "--scope",
            f"seat:{seat['seat_id']}",
            "--json",
        )
    )
    # Two agent calls (parse, answer); a reply the tiny model gets wrong is asked again.
    assert 2 <= answer["llm_calls"] + answer["cache_hits"] <= 2 + answer["retries"]
    assert answer["answer"].strip()
    in_scope = {f"seat:{seat['seat_id']}"} | {f"project:{p['project_id']}" for p in projects}
    assert set(answer["references"]) <= in_scope
    assert answer["tokens"]["prompt"] > 0


def test_openai_embedder_against_the_local_server(llm_url, tmp_path):
    from hltm_resources.embedding.openai_embedder import OpenAIEmbedder

    settings = Settings(
        home=tmp_path,
        embedder="openai",
        embed_model="smollm2-135m",
        base_url=llm_url,
        api_key="sk-local",
    )
    emb = OpenAIEmbedder(settings)
    vecs = emb.embed(["location: Dublin", "location: Dublin", "skill: Kubernetes"])
    assert emb.model_id == "openai:smollm2-135m" and emb.dim == vecs.shape[1] > 0
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-4)
    assert np.array_equal(vecs[0], vecs[1]) and emb.texts == 2


@pytest.fixture(scope="module")
def small_context_url():
    """A llama.cpp server with 4,096 tokens of context (one slot), as Ollama-sized servers
    have: the engine's default budgets (6,000 input tokens) do not fit in it."""
    pytest.importorskip("xllamacpp", reason="the llmtest extra is not installed")
    from tests.llm_server import local_llm_server

    with local_llm_server(n_ctx=4096, threads=2, n_parallel=1) as url:
        yield url


def long_snapshot(directory: Path) -> Path:
    """One project whose brief is about 9,000 tokens: more than the whole context."""
    brief = " ".join(
        f"Note {i}: the Site Reliability Engineer works in Berlin, Germany, hybrid, and "
        f"needs Kubernetes, Terraform and on-call experience with service {i}."
        for i in range(300)
    )
    return write_tree(directory, {"ana": "acme"}, [("p1", "ana", "SRE")], [("p1-b", "p1", brief)])


def test_a_server_with_a_small_context_gets_prompts_that_fit(small_context_url, tmp_path):
    env = llm_env(small_context_url, tmp_path / "home")
    env.pop("HLTM_MAX_INPUT_TOKENS")  # the default budget, larger than this server's context
    hltm(env, "load", str(long_snapshot(tmp_path / "snap")))
    out = json.loads(hltm(env, "index", "--json"))
    assert (out["leaves_built"], out["seats_built"], out["accounts_built"]) == (1, 1, 1)
    assert out["failed_runs"] == []
    answer = json.loads(hltm(env, "ask", "Where is the job?", "--scope", "seat:ana", "--json"))
    assert "error" not in answer and answer["answer"].strip()


def test_a_context_too_small_for_any_prompt_is_refused_at_once(small_context_url, tmp_path):
    env = llm_env(small_context_url, tmp_path / "home") | {"HLTM_LLM_CONTEXT": "700"}
    proc = subprocess.run(
        [sys.executable, "-m", "hltm_assets.cli", "load", str(long_snapshot(tmp_path / "s"))],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    proc = subprocess.run(
        [sys.executable, "-m", "hltm_assets.cli", "index"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 2
    assert "HLTM_LLM_CONTEXT" in proc.stderr and "Traceback" not in proc.stderr
