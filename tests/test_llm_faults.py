"""The LLM engine's resilience against a scripted server of the test's own: 429 with
Retry-After, malformed JSON, a server that never returns valid JSON, a killed run."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import dagster as dg
import pytest

from hltm_assets.definitions import build_definitions
from hltm_resources.config import Settings
from hltm_resources.engines.llm.client import backoff_seconds
from hltm_resources.indexing.indexer import Indexer, NodeBuildError
from hltm_resources.indexing.loading import load_snapshot
from hltm_resources.stores import database
from tests.conftest import write_jsonl
from tests.fake_openai import Script, fake_openai

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent


def llm_settings(home: Path, base_url: str, **kw) -> Settings:
    return Settings(
        home=home,
        engine="openai",
        base_url=base_url,
        api_key="sk-test",
        chat_model="fake-model",
        concurrency=1,
        max_retries=3,
        **kw,
    )


def test_backoff_honours_retry_after_and_grows():
    assert backoff_seconds(0, 5.0, rng=lambda: 0.0) == 5.0
    assert backoff_seconds(3, None, rng=lambda: 1.0) == pytest.approx(4.0)
    assert backoff_seconds(20, None, rng=lambda: 1.0) == 30.0


def test_429_then_malformed_json_then_valid_still_builds(tmp_path, snapshot_dir, world):
    script = Script(faults=["429", "bad_json"])
    with fake_openai(script) as url:
        settings = llm_settings(tmp_path / "home", url)
        load_snapshot(settings, snapshot_dir)
        indexer = Indexer(settings)
        leaf = world.projects[0]["project_id"]
        t0 = time.perf_counter()
        report = indexer.build("project", [leaf])
        elapsed = time.perf_counter() - t0
    assert report.nodes == [f"project:{leaf}"]
    usage = report.usage
    assert usage["retries"] == 2  # one for the 429, one for the malformed reply
    assert usage["llm_calls"] == 5  # 4 agents (facets, QA, detailed, concise) + the bad reply
    assert usage["prompt_tokens"] == 11 * 5 and usage["completion_tokens"] == 7 * 5
    assert elapsed >= 0.2  # waited for Retry-After
    # The retry after the malformed reply carried the validation error to the model.
    retried = script.requests[2]["messages"]
    assert retried[-1]["role"] == "user" and "not valid" in retried[-1]["content"]


def test_a_reply_cut_off_at_max_tokens_is_asked_again_for_less(tmp_path, snapshot_dir, world):
    script = Script(faults=["cut"])
    with fake_openai(script) as url:
        settings = llm_settings(tmp_path / "home", url)
        load_snapshot(settings, snapshot_dir)
        report = Indexer(settings).build("project", [world.projects[0]["project_id"]])
    assert report.usage["retries"] == 1 and report.usage["llm_calls"] == 5
    first, again = script.requests[0]["messages"], script.requests[1]["messages"]
    # The cut reply is not echoed back (it would eat the room the next reply needs); the same
    # request is made again with an instruction to be shorter.
    assert [m["role"] for m in again] == ["system", "user"]
    assert again[1]["content"].startswith(first[1]["content"])
    assert "cut off" in again[1]["content"] and len(again) == len(first)


def test_repeated_cuts_do_not_pile_up_the_instruction(tmp_path, snapshot_dir, world):
    script = Script(faults=["cut", "cut"])
    with fake_openai(script) as url:
        settings = llm_settings(tmp_path / "home", url)
        load_snapshot(settings, snapshot_dir)
        Indexer(settings).build("project", [world.projects[0]["project_id"]])
    third = script.requests[2]["messages"]
    assert third[1]["content"].count("cut off") == 1


def test_never_valid_json_keeps_previous_memory_and_fails_only_that_partition(
    tmp_path, snapshot_dir, world, monkeypatch
):
    from hltm_assets.runner import dagster_instance, run_index

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # Dagster resources read it via EnvVar
    good, bad = world.projects[0], world.projects[1]
    with fake_openai(Script()) as url:
        settings = llm_settings(tmp_path / "home", url)
        load_snapshot(settings, snapshot_dir)
        indexer = Indexer(settings)
        indexer.build("project", [good["project_id"], bad["project_id"]])
    with database.connect(settings.duckdb_path, read_only=True) as con:
        before = dict(con.execute("SELECT node_id, memory_hash FROM mem_nodes").fetchall())
    # Both projects get edited; the server never returns valid JSON for the bad one's prompts.
    v2 = tmp_path / "v2"
    shutil.copytree(snapshot_dir, v2)
    docs = [dict(d) for d in world.documents]
    for d in docs:
        if d["project_id"] in (good["project_id"], bad["project_id"]) and d["kind"] == "brief":
            d["text"] += " Updated."
    write_jsonl(v2 / "documents.jsonl", docs)
    load_snapshot(settings, v2)
    # The poison is in the bad project's documents only (its code name), not in what the fake
    # server's replies put into memory, so its seat's prompt stays clean.
    with fake_openai(Script(poison=world.truth[bad["project_id"]].codename)) as url:
        settings2 = llm_settings(tmp_path / "home", url)
        with pytest.raises(NodeBuildError, match=f"project:{bad['project_id']}"):
            Indexer(settings2).build("project", [good["project_id"], bad["project_id"]])
        with database.connect(settings.duckdb_path, read_only=True) as con:
            after = dict(con.execute("SELECT node_id, memory_hash FROM mem_nodes").fetchall())
        assert after[f"project:{bad['project_id']}"] == before[f"project:{bad['project_id']}"]
        # Through Dagster: the range run fails; the parts around the bad partition run again.
        result = run_index(settings2, full=True)
    assert result.failed == [f"project:{bad['project_id']}"]
    project_memory = build_definitions(settings2).get_assets_def("project_memory")
    keys = project_memory.partitions_def.get_partition_keys()
    with dagster_instance(settings2) as instance:
        status = instance.get_status_by_partition(
            project_memory.key, keys, project_memory.partitions_def
        )
    assert {k for k, s in status.items() if s == dg.AssetPartitionStatus.FAILED} == {
        bad["project_id"]
    }
    assert status[good["project_id"]] == dg.AssetPartitionStatus.MATERIALIZED


def test_killed_run_is_resumed_from_the_cache(tmp_path, snapshot_dir, world):
    """Kill `hltm index` mid-run; the re-run pays only for what was not done (cache hits)."""
    script = Script()
    with fake_openai(script) as url:
        home = tmp_path / "home"
        env = dict(
            os.environ,
            HLTM_ENGINE="openai",
            OPENAI_BASE_URL=url,
            OPENAI_API_KEY="sk-test",
            HLTM_CHAT_MODEL="fake-model",
            HLTM_CONCURRENCY="1",
            HLTM_HOME=str(home),
        )
        cli = [sys.executable, "-m", "hltm_assets.cli", "--home", str(home)]
        subprocess.run(
            [*cli, "load", str(snapshot_dir)], check=True, env=env, cwd=ROOT, capture_output=True
        )
        proc = subprocess.Popen(
            [*cli, "index", "--json"],
            env=env,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        deadline = time.time() + 120
        while len(script.requests) < 6 and time.time() < deadline:  # mid-way through leaf 2
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        paid_first = len(script.requests)
        out = subprocess.run(
            [*cli, "index", "--json"], env=env, cwd=ROOT, capture_output=True, text=True, check=True
        )
    result = json.loads(out.stdout)
    assert result["cache_hits"] >= 1
    assert result["leaves_built"] == len(world.projects)
    n_nodes = len(world.projects) + len(world.seats) + len(world.accounts)
    # Every agent call was paid once: the re-run's calls plus what the killed run paid (minus
    # replies that were cached but not stored) cover the whole tree.
    assert result["llm_calls"] + result["cache_hits"] == 4 * len(world.projects) + (
        n_nodes - len(world.projects)
    )
    assert result["llm_calls"] < 4 * len(world.projects) + n_nodes - len(world.projects)
    assert paid_first >= 6


def test_an_unreachable_endpoint_builds_no_parent_from_no_children(tmp_path, monkeypatch):
    from hltm_assets.runner import run_index
    from tests.test_concurrency import snapshot

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    settings = replace(llm_settings(tmp_path / "home", "http://127.0.0.1:9/v1"), max_retries=0)
    load_snapshot(settings, snapshot(tmp_path / "snap"))
    result = run_index(settings)
    assert result.built == {"project": 0, "seat": 0, "account": 0}
    assert {f.split(":")[0] for f in result.failed} == {"project", "seat", "account"}
    assert len(result.failed) == 4 + 2 + 2  # every leaf, and every parent refused
    with database.connect(settings.duckdb_path, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM mem_nodes").fetchone()[0] == 0
