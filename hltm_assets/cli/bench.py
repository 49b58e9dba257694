"""Benchmarks (speed, not behaviour): each prints ratios measured side by side in one run."""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from hltm_assets.cli.common import print_json
from hltm_resources.config import Settings


def _fresh(root: Path, name: str, snapshot: Path) -> Settings:
    from hltm_resources.build.loading import load_snapshot

    settings = Settings(home=root / name)
    load_snapshot(settings, snapshot)
    return settings


def bench_index(seed: int = 7, single_runs: int = 12) -> dict:
    """Full index of the demo tree through Dagster, split into embedding, engine, store writes
    and Dagster overhead; the plain indexer (no Dagster) on the same tree in the same run; and
    ``single_runs`` leaves built one run per partition versus one partition-range run."""
    from hltm_assets.definitions import build_definitions, level_job_name
    from hltm_assets.runner import _QUIET, dagster_instance, run_index
    from hltm_resources.build.indexer import Indexer
    from hltm_resources.embedding import make_embedder
    from query.evaluation.data.sample_world import generate_world, write_snapshot

    world = generate_world(seed=seed)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        snapshot = write_snapshot(world, root / "snapshot")
        make_embedder(Settings(home=root)).embed(["warm up the model"])  # load once, for both

        dag = _fresh(root, "dagster", snapshot)
        t0 = time.perf_counter()
        result = run_index(dag)
        dagster_total = time.perf_counter() - t0

        plain = _fresh(root, "plain", snapshot)
        t0 = time.perf_counter()
        indexer = Indexer(plain)
        plan = indexer.plan()
        reports = indexer.build_plan(plan)
        plain_total = time.perf_counter() - t0

        leaf = plain.schema.leaf.name
        keys = plan.keys(leaf)[:single_runs]
        per = _fresh(root, "per-partition", snapshot)
        defs = build_definitions(per)
        job = defs.resolve_job_def(level_job_name(leaf))
        with dagster_instance(per) as instance:
            t0 = time.perf_counter()
            for key in keys:
                job.execute_in_process(instance=instance, partition_key=key, run_config=_QUIET)
            one_by_one = time.perf_counter() - t0
            tags = {
                "dagster/asset_partition_range_start": keys[0],
                "dagster/asset_partition_range_end": keys[-1],
            }
            per2 = _fresh(root, "range", snapshot)
            job2 = build_definitions(per2).resolve_job_def(level_job_name(leaf))
        with dagster_instance(per2) as instance2:
            t0 = time.perf_counter()
            job2.execute_in_process(instance=instance2, tags=tags, run_config=_QUIET)
            one_range = time.perf_counter() - t0

    inside = sum(result.phases.values())
    overhead = dagster_total - inside - result.plan_seconds
    plain_phases = {
        p: sum(getattr(r, f"{p}_s") for r in reports) for p in ("engine", "embed", "write")
    }
    return {
        "tree": world.counts(),
        "dagster_index": {
            "total_s": round(dagster_total, 2),
            "embed_s": round(result.phases["embed"], 2),
            "engine_s": round(result.phases["engine"], 2),
            "store_write_s": round(result.phases["write"], 2),
            "plan_s": round(result.plan_seconds, 2),
            "dagster_overhead_s": round(overhead, 2),
            "dagster_overhead_share": round(overhead / dagster_total, 3),
            "runs": result.runs,
            "embedded_texts": result.embedded_texts,
        },
        "plain_index": {
            "total_s": round(plain_total, 2),
            **{f"{k}_s": round(v, 2) for k, v in plain_phases.items()},
        },
        "ratio_dagster_over_plain": round(dagster_total / plain_total, 3),
        "batching": {
            "leaves": len(keys),
            "one_run_per_partition_s": round(one_by_one, 2),
            "one_range_run_s": round(one_range, 2),
            "ratio": round(one_by_one / one_range, 2),
        },
    }


def bench_query(seed: int = 7, repeats: int = 3) -> dict:
    """Retrieval latency (no LLM) on the demo tree: the first question of a process, the first
    question in each scope, and later questions; flat document search timed in the same run."""
    from hltm_resources.build.loading import load_and_build
    from query import Memory
    from query.evaluation.data.sample_world import generate_world, make_queries, write_snapshot
    from query.evaluation.metrics import percentile
    from query.evaluation.runners.baselines import ChunkIndex

    world = generate_world(seed=seed)
    queries = make_queries(world, seed=seed)
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(home=Path(tmp) / "home")
        load_and_build(settings, write_snapshot(world, Path(tmp) / "snapshot"))
        mem = Memory(settings, log_queries=False)
        t0 = time.perf_counter()
        mem.retrieve(queries[0]["question"], scope=queries[0]["scope"])
        first_in_process = (time.perf_counter() - t0) * 1000
        chunks = ChunkIndex(settings, mem.embedder)
        chunks.search(queries[0]["question"], 10, mem.resolve(queries[0]["scope"]).path)
        # Each question asked of both, one right after the other, so a change of load on a
        # shared machine reaches both sides of the ratio.
        first_in_scope, warm, flat = [], [], []
        seen: set[str] = set()
        for _ in range(repeats):
            for q in queries:
                r = mem.retrieve(q["question"], scope=q["scope"])
                (warm if q["scope"] in seen else first_in_scope).append(r.timings["retrieval_ms"])
                seen.add(q["scope"])
                t0 = time.perf_counter()
                chunks.search(q["question"], 10, mem.resolve(q["scope"]).path)
                flat.append((time.perf_counter() - t0) * 1000)
    warm_p50 = percentile(warm, 50)
    return {
        "queries": len(queries) * repeats,
        "first_question_of_process_ms": round(first_in_process, 1),
        "first_question_in_scope_ms": {
            "p50": round(percentile(first_in_scope, 50), 1),
            "p95": round(percentile(first_in_scope, 95), 1),
            "n": len(first_in_scope),
        },
        "hltm_retrieval_ms": {
            "p50": round(warm_p50, 1),
            "p95": round(percentile(warm, 95), 1),
            "n": len(warm),
        },
        "flat_doc_search_ms": {
            "p50": round(percentile(flat, 50), 1),
            "p95": round(percentile(flat, 95), 1),
            "n": len(flat),
        },
        "ratio_hltm_over_flat_p50": round(warm_p50 / percentile(flat, 50), 2),
    }


def bench_incremental(
    seed: int = 13,
    accounts: int = 10,
    seats: int = 10,
    projects: tuple[int, int] = (25, 35),
    change: float = 0.01,
) -> dict:
    """A few thousand projects: full build, then ``change`` of the leaves edited; incremental
    index vs a full rebuild of the same snapshot (both through Dagster, same run), engine calls
    and wall time side by side, and whether the two trees are identical."""
    from hltm_assets.runner import run_index
    from hltm_resources.build.loading import load_snapshot
    from hltm_resources.build.verify import verify
    from query.evaluation.data.sample_world import evolve, generate_world, write_snapshot

    world = generate_world(
        seed=seed, accounts=accounts, seats_per_account=seats, projects_per_seat=projects
    )
    v2, changes = evolve(world, seed=seed + 1, edit=change, delete=0.0, add=0.0)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        inc = _fresh(root, "incremental", write_snapshot(world, root / "v1"))
        first = run_index(inc)
        v2_dir = write_snapshot(v2, root / "v2")
        load_snapshot(inc, v2_dir)
        # Both timed runs start cold, as a new process would: no vectors cached by text
        # from the first build (the embedder model itself stays loaded for both).
        t0 = time.perf_counter()
        incremental = run_index(inc)
        inc_s = time.perf_counter() - t0
        full_home = _fresh(root, "full", v2_dir)
        t0 = time.perf_counter()
        full = run_index(full_home)
        full_s = time.perf_counter() - t0
        report = verify(inc)
        from hltm_resources.stores import database

        def dump(settings):
            with database.connect(settings.duckdb_path, read_only=True) as con:
                return con.execute(
                    "SELECT node_id, input_hash, memory_hash FROM mem_nodes ORDER BY node_id"
                ).fetchall()

        same_as_full = dump(inc) == dump(full_home)
    inc_j, full_j = incremental.as_json(), full.as_json()
    return {
        "tree": world.counts(),
        "edited_projects": len(changes["edited"]),
        "initial_full_build_s": round(first.seconds, 1),
        "incremental": {
            k: inc_j[k]
            for k in (
                "leaves_built",
                "seats_built",
                "accounts_built",
                "engine_calls",
                "embedded_texts",
                "dagster_runs",
            )
        }
        | {"wall_s": round(inc_s, 1)},
        "full_rebuild": {
            k: full_j[k]
            for k in (
                "leaves_built",
                "seats_built",
                "accounts_built",
                "engine_calls",
                "embedded_texts",
                "dagster_runs",
            )
        }
        | {"wall_s": round(full_s, 1)},
        "ratio_full_over_incremental": {
            "engine_calls": round(full_j["engine_calls"] / max(1, inc_j["engine_calls"]), 1),
            "wall_time": round(full_s / inc_s, 1),
        },
        "verify_identical_to_full_rebuild": report.ok,
        "verify_nodes": report.nodes,
        "incremental_tree_equals_full_rebuild_tree": same_as_full,
    }


def bench_load(seed: int = 5, accounts: int = 10, seats: int = 25, repeats: int = 3) -> dict:
    """Snapshot load of about 10k projects: validating the files (best of ``repeats``), a
    first load into a fresh home, and a reload of the same snapshot (nothing changed)."""
    from hltm_resources.build.loading import load_snapshot
    from hltm_resources.stores.sot import read_snapshot
    from query.evaluation.data.sample_world import generate_world, write_snapshot

    world = generate_world(
        seed=seed, accounts=accounts, seats_per_account=seats, projects_per_seat=(36, 44)
    )
    with tempfile.TemporaryDirectory() as tmp:
        snapshot = write_snapshot(world, Path(tmp) / "snapshot")
        reads = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            read_snapshot(snapshot)
            reads.append(time.perf_counter() - t0)
        settings = Settings(home=Path(tmp) / "home")
        t0 = time.perf_counter()
        load_snapshot(settings, snapshot)
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        load_snapshot(settings, snapshot)
        again = time.perf_counter() - t0
    return {
        "tree": world.counts(),
        "validate_s": round(min(reads), 3),
        "first_load_s": round(first, 3),
        "reload_unchanged_s": round(again, 3),
    }


BENCHMARKS = {
    "index": bench_index,
    "query": bench_query,
    "incremental": bench_incremental,
    "load": bench_load,
}


def cmd_bench(args: argparse.Namespace) -> int:
    run = BENCHMARKS[args.which]
    result = run(seed=args.seed) if args.which in ("index", "query") else run()
    print_json(result) if args.json else print(json.dumps(result, indent=2))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="speed benchmarks (results go in BENCHMARKS.md)")
    p.add_argument("which", choices=sorted(BENCHMARKS))
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_bench)
