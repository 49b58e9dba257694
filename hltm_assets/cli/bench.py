"""Benchmarks (speed, not behaviour): each prints ratios measured side by side in one run."""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time
from pathlib import Path

from hltm_assets.cli.common import CliError, print_json
from hltm_resources.config import Settings


def _fresh(root: Path, name: str, snapshot: Path) -> Settings:
    from hltm_resources.indexing.loading import load_snapshot

    settings = Settings(home=root / name)
    load_snapshot(settings, snapshot)
    return settings


def bench_index(seed: int = 7, single_runs: int = 12) -> dict:
    """Full index of the demo tree through Dagster, split into embedding, engine, store writes
    and Dagster overhead; the plain indexer (no Dagster) on the same tree in the same run; and
    ``single_runs`` leaves built one run per partition versus one partition-range run."""
    from hltm_assets.definitions import build_definitions, level_job_name
    from hltm_assets.runner import _QUIET, dagster_instance, run_index
    from hltm_resources.embedding import make_embedder
    from hltm_resources.indexing.indexer import Indexer
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
    from hltm_resources.indexing.loading import load_and_build
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
    from hltm_resources.indexing.loading import load_snapshot
    from hltm_resources.indexing.verify import verify
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
    from hltm_resources.indexing.loading import load_snapshot
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


def _rss_mb() -> float:
    """This process's resident memory now (Linux), in MB."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _reset_peak_rss() -> None:
    """Start this process's peak resident memory (``VmHWM``) again from what it holds now
    (Linux: ``clear_refs``)."""
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")


def _peak_rss_mb() -> float:
    """This process's peak resident memory (Linux ``VmHWM``), in MB. Not ``getrusage``: its
    ``ru_maxrss`` survives ``exec``, so a process started by a large one reports its parent's
    peak."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _embedder_side_by_side(settings: Settings, sample: int = 4000) -> dict:
    """Texts/s on ``sample`` texts this build stored: the embedding path before this round
    (the float model in fixed batches of 64, sorted by characters), the float model in batches
    by token budget (``local-float``), and the default int8 model (``local``) on one session
    (all cores) and as a build runs it (a session per core), one after the other in this
    process."""
    import random

    import lancedb

    from hltm_resources.embedding import Embedder, MiniLMEmbedder, MiniLMTokenwiseEmbedder
    from hltm_resources.embedding.minilm import build_sessions

    db = lancedb.connect(str(settings.lancedb_path))
    texts: list[str] = []  # the build's mix: texts of every view, then a random sample
    for name in ("facets", "qa", "summaries", "evidence"):
        if name in db.table_names():
            texts += (
                db.open_table(name)
                .search()
                .select(["text"])
                .limit(10 * sample)
                .to_arrow()["text"]
                .to_pylist()
            )
    texts = list(dict.fromkeys(texts))
    texts = random.Random(0).sample(texts, min(sample, len(texts)))
    out = {"texts": len(texts)}
    float_model, one_session = MiniLMEmbedder(), MiniLMTokenwiseEmbedder()
    int8_model = MiniLMTokenwiseEmbedder(sessions=build_sessions())  # as a build embeds
    for e in (float_model, one_session, int8_model):
        e.embed(["warm up"])
    for label, run in (
        ("fixed_batches_of_64", lambda: Embedder.embed(float_model, texts, 64)),
        ("token_budget_batches", lambda: float_model.embed(texts)),
        ("local_int8_one_session", lambda: one_session.embed(texts)),
        ("local_int8", lambda: int8_model.embed(texts)),
    ):
        t0 = time.perf_counter()
        run()
        out[f"{label}_texts_per_s"] = round(len(texts) / (time.perf_counter() - t0), 1)
    base = out["fixed_batches_of_64_texts_per_s"]
    out["ratio_token_budget_over_fixed"] = round(out["token_budget_batches_texts_per_s"] / base, 2)
    out["ratio_local_int8_one_session_over_fixed"] = round(
        out["local_int8_one_session_texts_per_s"] / base, 2
    )
    out["ratio_local_int8_over_fixed"] = round(out["local_int8_texts_per_s"] / base, 2)
    return out


def _edit_leaves(snapshot: Path, target: Path, share: float, seed: int) -> list[str]:
    """A copy of ``snapshot`` where ``share`` of the projects have one document edited."""
    import random
    import shutil

    import polars as pl

    shutil.copytree(snapshot, target)
    docs = pl.read_ndjson(snapshot / "documents.jsonl")
    projects = docs["project_id"].unique().sort().to_list()
    chosen = sorted(random.Random(seed).sample(projects, max(1, int(len(projects) * share))))
    first = (
        docs.group_by("project_id")
        .agg(pl.col("doc_id").min())
        .filter(pl.col("project_id").is_in(chosen))["doc_id"]
    )
    docs = docs.with_columns(
        pl.when(pl.col("doc_id").is_in(first.to_list()))
        .then(pl.col("text") + " (Reviewed again this week with the hiring manager.)")
        .otherwise(pl.col("text"))
        .alias("text")
    )
    docs.write_ndjson(target / "documents.jsonl")
    return chosen


#: Asked in every scope: preferences across the scope, then questions naming values the
#: generated tree holds, which list every matching project (up to ``MAX_MATCHED_NODES``).
SCALE_QUESTIONS = (
    "Which locations does this team usually hire for?",
    "What skills come up most often in these roles?",
    "Why are candidates usually turned down?",
    "Are these jobs mostly remote, hybrid or on-site?",
    "What seniority are most of the openings?",
    "Which job titles does this team recruit for most?",
    "Which projects are based in Singapore?",
    "Which roles need Kubernetes?",
    "How many of the openings are remote?",
    "Who are the hiring managers for the senior roles?",
    "Why were candidates for the Toronto roles rejected?",
    "Which data engineering roles are hybrid?",
)


def scale_queries(
    home: str, embedder: str = "local", seats: int = 20, seed: int = 3, account_rounds: int = 3
) -> dict:
    """Retrieval latency at scale, in this (fresh) process, after :meth:`Memory.warm_up`
    (timed on its own): ``seats`` random seat scopes, each question once (the first is the
    scope's first), then the largest account, its questions asked ``account_rounds`` times
    over (one scope: enough questions for a median that holds)."""
    import random

    from hltm_resources.stores import database
    from query import Memory
    from query.evaluation.metrics import percentile

    settings = Settings(home=Path(home), embedder=embedder)
    schema = settings.schema
    seat_level, account_level = schema.parents_bottom_up[0], schema.parents_bottom_up[-1]
    with database.connect(settings.duckdb_path, read_only=True) as con:
        seat_ids = [
            r[0]
            for r in con.execute(
                f"SELECT {schema.level(seat_level).id_field} FROM {schema.level(seat_level).table}"
                " ORDER BY 1"
            ).fetchall()
        ]
        leaf = schema.leaf
        biggest = con.execute(
            f"SELECT s.{schema.level(account_level).id_field}, count(*) FROM {leaf.table} p "
            f"JOIN {schema.level(seat_level).table} s USING ({schema.level(seat_level).id_field})"
            " GROUP BY 1 ORDER BY 2 DESC LIMIT 1"
        ).fetchone()
    scopes = [
        f"{seat_level}:{s}" for s in random.Random(seed).sample(seat_ids, min(seats, len(seat_ids)))
    ]
    t0 = time.perf_counter()
    mem = Memory(settings, log_queries=False).warm_up()
    out: dict = {"warm_up_ms": round((time.perf_counter() - t0) * 1e3)}
    first_scope, later = {"seat": [], "account": []}, {"seat": [], "account": []}
    account = [f"{account_level}:{biggest[0]}"] * account_rounds
    for kind, scope_list in (("seat", scopes), ("account", account)):
        for n, scope in enumerate(scope_list):
            for i, question in enumerate(SCALE_QUESTIONS):
                t1 = time.perf_counter()
                mem.retrieve(question, scope=scope)
                ms = (time.perf_counter() - t1) * 1000
                (later if i or (kind == "account" and n) else first_scope)[kind].append(ms)
    for kind in ("seat", "account"):
        out[f"{kind}_scope"] = {
            "p50_ms": round(percentile(later[kind], 50), 1),
            "p95_ms": round(percentile(later[kind], 95), 1),
            "first_question_in_scope_max_ms": round(max(first_scope[kind]), 1),
            "questions": len(later[kind]) + len(first_scope[kind]),
        }
    out["largest_account"] = {"id": biggest[0], "leaves": biggest[1]}
    out["serving_process_peak_rss_mb"] = round(_peak_rss_mb())
    return out


def _dagster_at_scale(settings: Settings) -> dict:
    """Definitions load and one tick of the change sensor with nothing changed."""
    import dagster as dg

    from hltm_assets.definitions import build_definitions

    t0 = time.perf_counter()
    defs = build_definitions(settings)
    load_s = time.perf_counter() - t0
    sensor = defs.resolve_sensor_def("hltm_sot_changes")
    with dg.instance_for_test() as instance:
        context = dg.build_sensor_context(
            instance=instance, resources={"hltm": defs.resources["hltm"]}
        )
        t0 = time.perf_counter()
        result = sensor(context)
        tick_s = time.perf_counter() - t0
    requested = len(getattr(result, "run_requests", None) or [])
    return {
        "definitions_load_s": round(load_s, 2),
        "sensor_tick_nothing_changed_s": round(tick_s, 2),
        "sensor_run_requests": requested,
    }


def _full_index(settings: Settings, leaves: int) -> tuple[dict, float]:
    """A first build of the loaded tree through Dagster: wall time, stages, memory."""
    import sys

    from hltm_assets.runner import run_index

    t0 = time.perf_counter()
    full = run_index(settings, show_progress=sys.stderr.isatty())
    wall = time.perf_counter() - t0
    stages = _stages(full, wall)
    return {
        "wall_s": round(wall, 1),
        "leaves_per_s": round(leaves / wall, 1),
        "stages_s": {k: round(v, 1) for k, v in stages.items()},
        "stages_share": {k: f"{100 * v / wall:.1f} %" for k, v in stages.items()},
        "embedded_texts": full.embedded_texts,
        "embedding_texts_per_s": round(full.embedded_texts / max(1e-9, stages["embedding"])),
        "engine_calls": full.as_json()["engine_calls"],
        "dagster_runs": full.runs,
        "failed": full.failed,
        "rss_now_mb": round(_rss_mb()),
        "peak_rss_mb": round(_peak_rss_mb()),
    }, wall


def _stages(report, wall: float) -> dict[str, float]:
    """Seconds per stage of an index run (``IndexResult``) that took ``wall`` seconds; the
    time outside every stage is Dagster's."""
    inside = sum(report.phases.values())
    return {
        "planning": report.plan_seconds,
        "engine": report.phases["engine"],
        "embedding": report.phases["embed"],
        "writes": report.phases["write"],
        "dagster": wall - inside - report.plan_seconds,
    }


def _churn(settings: Settings, root: Path, share: float, seed: int, full: dict, check: bool):
    """Edit ``share`` of the leaves of the newest snapshot under ``root``, load, index."""
    from hltm_assets.runner import run_index
    from hltm_resources.indexing.loading import load_snapshot
    from hltm_resources.indexing.verify import verify
    from hltm_resources.stores import database
    from hltm_resources.stores.sot import read_topology

    versions = sorted(int(p.name[1:]) for p in root.glob("v[0-9]*") if p.is_dir())
    base, target = root / f"v{versions[-1]}", root / f"v{versions[-1] + 1}"
    edited = _edit_leaves(base, target, share, seed + versions[-1])
    load_snapshot(settings, target)
    with database.connect(settings.duckdb_path, read_only=True) as con:
        topo = read_topology(con, settings.schema)
    seats = {topo.level(settings.schema.leaf.name)[p].parent_id for p in edited}
    seat_level = settings.schema.parents_bottom_up[0]
    accounts = {topo.level(seat_level)[s.split(":", 1)[1]].parent_id for s in seats}
    t0 = time.perf_counter()
    inc = run_index(settings)
    wall = time.perf_counter() - t0
    j = inc.as_json()
    out = {
        "snapshot": target.name,
        "edited_leaves": len(edited),
        "touched_seats": len(seats),
        "touched_accounts": len(accounts),
        "dagster_runs": inc.runs,
        "run_bound_2_seats_plus_accounts": 2 * len(seats) + len(accounts),
        "built": {k: v for k, v in j.items() if k.endswith("_built")},
        "engine_calls": j["engine_calls"],
        "embedded_texts": inc.embedded_texts,
        "wall_s": round(wall, 1),
        "stages_s": {k: round(v, 1) for k, v in _stages(inc, wall).items()},
        "ratio_full_over_incremental_wall": round(full["wall_s"] / wall, 1),
        "ratio_full_over_incremental_engine_calls": round(
            full["engine_calls"] / max(1, j["engine_calls"]), 1
        ),
    }
    if check:
        t0 = time.perf_counter()
        report = verify(settings)
        out["verify_identical"] = report.ok
        out["verify_nodes"] = report.nodes
        out["verify_s"] = round(time.perf_counter() - t0, 1)
    return out


def bench_scale(
    leaves: int = 10_000,
    home: str | None = None,
    embedder: str = "local",
    churn: float = 0.01,
    check: bool = False,
    seed: int = 17,
    reuse: bool = False,
) -> dict:
    """Build a generated tree of ``leaves`` projects (a few very large accounts) through
    Dagster, reporting each stage and the process's memory; then the embedder's throughput
    side by side, Dagster at this many partitions, ``churn`` of the leaves edited and indexed
    again (against the full build; ``check`` also runs ``hltm verify``), and retrieval latency
    in a fresh serving process.

    ``home`` keeps the tree (default: a temporary directory) and the report of its full build
    (``bench-scale.json``); ``reuse`` then skips generating and building and measures the rest
    on it (the churn edits the newest snapshot again)."""
    import subprocess
    import sys

    from hltm_resources.indexing.loading import load_snapshot
    from query.evaluation.data.sample_world import stream_snapshot

    tmp = None
    if home is None:
        if reuse:
            raise ValueError("--reuse needs --home (the directory of an earlier bench scale)")
        tmp = tempfile.TemporaryDirectory()
        home = tmp.name
    root = Path(home)
    settings = Settings(home=root / "home", embedder=embedder)
    report = root / "bench-scale.json"
    try:
        if reuse:
            out = json.loads(report.read_text())
            out["reused"] = True
        else:
            out = {"leaves": leaves, "embedder": embedder, "home": str(root)}
            t0 = time.perf_counter()
            out["tree"] = stream_snapshot(root / "v1", leaves, seed=seed)
            out["generate_s"] = round(time.perf_counter() - t0, 1)
            t0 = time.perf_counter()
            load_snapshot(settings, root / "v1")
            out["sot_load_s"] = round(time.perf_counter() - t0, 1)
            out["rss_after_load_mb"] = round(_rss_mb())
            out["peak_rss_load_mb"] = round(_peak_rss_mb())
            _reset_peak_rss()  # the build's own peak from here (hltm load is its own command)
            out["full_index"], _ = _full_index(settings, leaves)
            report.write_text(json.dumps(out, indent=2))
        out["embedder_side_by_side"] = _embedder_side_by_side(settings)
        out["dagster_at_this_many_partitions"] = _dagster_at_scale(settings)
        if churn:
            out["churn"] = _churn(settings, root, churn, seed, out["full_index"], check)
        code = (
            "import json; from hltm_assets.cli.bench import scale_queries; "
            f"print(json.dumps(scale_queries({str(settings.home)!r}, {embedder!r})))"
        )
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        if done.returncode:
            out["retrieval"] = {"error": done.stderr.strip().splitlines()[-1:]}
        else:
            out["retrieval"] = json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        if tmp is not None:
            tmp.cleanup()
    return out


def bench_distributed(**kwargs) -> dict:
    from hltm_assets.cli.bench_distributed import bench_distributed as run

    return run(**kwargs)


def bench_live(**kwargs) -> dict:
    from hltm_assets.cli.bench_live import bench_live as run

    return run(**kwargs)


def bench_serve(**kwargs) -> dict:
    from hltm_assets.cli.bench_serve import bench_serve as run

    return run(**kwargs)


def bench_dagster(**kwargs) -> dict:
    from hltm_assets.cli.bench_dagster import bench_dagster as run

    return run(**kwargs)


BENCHMARKS = {
    "dagster": bench_dagster,
    "distributed": bench_distributed,
    "live": bench_live,
    "index": bench_index,
    "query": bench_query,
    "incremental": bench_incremental,
    "load": bench_load,
    "scale": bench_scale,
    "serve": bench_serve,
}


def cmd_bench(args: argparse.Namespace) -> int:
    run = BENCHMARKS[args.which]
    if args.which == "scale":
        result = run(
            leaves=args.leaves,
            home=args.home,
            embedder=args.embedder,
            churn=args.churn,
            check=args.verify,
            reuse=args.reuse,
        )
    elif args.which == "distributed":
        workers = tuple(int(w) for w in args.workers.split(","))
        result = run(leaves=args.leaves, workers=workers, home=args.home)
    elif args.which == "live":
        result = run(
            leaves=args.leaves,
            home=args.home,
            reuse=args.reuse,
            singles=args.singles,
            rate=args.rate,
            seconds=args.seconds,
            clients=args.clients,
            burst=args.burst,
        )
    elif args.which == "serve":
        if not args.home:
            raise CliError("hltm bench serve needs --home: a built home of hltm bench live/scale")
        result = run(
            home=args.home,
            readers=args.readers,
            writers=args.writers,
            seconds=args.seconds,
            think=args.think,
        )
    elif args.which == "dagster":
        result = run(trials=args.trials, home=args.home, seed=args.seed)
    elif args.which in ("index", "query"):
        result = run(seed=args.seed)
    else:
        result = run()
    print_json(result) if args.json else print(json.dumps(result, indent=2))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="speed benchmarks (results go in BENCHMARKS.md)")
    p.add_argument("which", choices=sorted(BENCHMARKS))
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--json", action="store_true")
    scale = p.add_argument_group("scale")
    scale.add_argument("--leaves", type=int, default=10_000, help="projects in the tree")
    scale.add_argument("--home", help="keep the generated tree and its memory here")
    scale.add_argument("--embedder", default="local", choices=("local", "local-float"))
    scale.add_argument("--churn", type=float, default=0.01, help="share of leaves edited")
    scale.add_argument("--verify", action="store_true", help="hltm verify after the churn")
    scale.add_argument(
        "--reuse", action="store_true", help="measure again on the tree built in --home"
    )
    live = p.add_argument_group("live (also --leaves, --home, --reuse)")
    live.add_argument("--singles", type=int, default=40, help="single writes, one at a time")
    live.add_argument("--rate", type=float, default=20.0, help="sustained writes per second")
    live.add_argument("--seconds", type=float, default=60.0, help="how long they are sustained")
    live.add_argument("--clients", type=int, default=4, help="clients sharing that rate")
    live.add_argument("--burst", type=int, default=1000, help="writes sent at once")
    serve = p.add_argument_group("serve (also --home, --seconds; on a copy: it writes)")
    serve.add_argument("--readers", type=int, default=50, help="clients asking questions")
    serve.add_argument("--writers", type=int, default=4, help="clients remembering notes")
    serve.add_argument(
        "--think", type=float, default=0.0, help="mean seconds between a reader's questions"
    )
    dagster = p.add_argument_group("dagster (also --home: a built home instead of the demo's)")
    dagster.add_argument("--trials", type=int, default=5, help="launches per setting")
    distributed = p.add_argument_group("distributed (also --leaves, --home)")
    distributed.add_argument(
        "--workers", default="1,2,4", help="worker counts to build with, side by side"
    )
    p.set_defaults(func=cmd_bench)
