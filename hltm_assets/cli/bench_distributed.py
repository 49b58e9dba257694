"""``hltm bench distributed``: the same tree built embedded and by 1, 2, 4 ... workers.

Everything runs side by side in one invocation on this machine: the embedded build first, then
for each worker count a deployment of its own (a fresh PostgreSQL database, bucket prefix and
Redis database on the loopback services of ``hltm services``), the snapshot loaded, the
workers started and ``hltm index`` timed from launch to its last run. The workers share this
machine's cores, so on a small machine the speedup is bounded by them; the ratios say what the
deployment costs and how far more workers help here.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hltm_assets.cli import services


def _hltm(env: dict, home: Path, *args: str) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "hltm_assets.cli", "--home", str(home), *args],
        capture_output=True,
        text=True,
        env=env | {"RUST_LOG": "error"},
    )
    if done.returncode:
        raise RuntimeError(f"hltm {' '.join(args)} failed: {done.stderr.strip()[-2000:]}")
    return done


def _timed_index(env: dict, home: Path, leaves: int) -> dict:
    t0 = time.perf_counter()
    out = json.loads(_hltm(env, home, "index", "--json").stdout)
    wall = time.perf_counter() - t0
    return {
        "wall_s": round(wall, 1),
        "leaves_per_s": round(leaves / wall, 1),
        "dagster_runs": out["dagster_runs"],
        "leaves_built": out["leaves_built"],
    }


def _deployment(base: dict, ports: services.Ports, name: str, db_index: int) -> dict:
    """A deployment of its own on the shared services: database, bucket prefix, Redis db."""
    services.create_database(ports, name)
    return base | {
        "HLTM_CATALOG_URL": f"postgresql://postgres@127.0.0.1:{ports.postgres}/{name}",
        "HLTM_OBJECT_STORE": f"s3://{services.BUCKET}/{name}",
        "HLTM_BROKER_URL": f"redis://127.0.0.1:{ports.redis}/{db_index}",
    }


def bench_distributed(
    leaves: int = 10_000, workers: tuple[int, ...] = (1, 2, 4), home: str | None = None
) -> dict:
    from hltm_assets.distributed import celery_app, live_workers
    from hltm_resources.config import Settings
    from query.evaluation.data.sample_world import stream_snapshot

    tmp = tempfile.TemporaryDirectory() if home is None else None
    root = Path(home or tmp.name)
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o755)  # PostgreSQL runs as its own user and keeps its data below
    out: dict = {"leaves": leaves, "cores": os.cpu_count()}
    snap = root / "snapshot"
    out["tree"] = stream_snapshot(snap, leaves, seed=17)
    local = {k: v for k, v in os.environ.items() if not k.startswith("HLTM_DEPLOYMENT")}
    _hltm(local, root / "embedded", "load", str(snap))
    out["embedded"] = _timed_index(local, root / "embedded", leaves)
    ports = services.free_ports()
    base = os.environ | services.up(root / "services", ports)
    try:
        runs = {}
        for i, count in enumerate(workers, start=1):
            env = _deployment(base, ports, f"bench_w{count}", i)
            coordinator = root / f"coordinator-{count}"
            _hltm(env, coordinator, "load", str(snap))
            procs = []
            try:
                for w in range(count):
                    log = (root / f"worker-{count}-{w}.log").open("w")
                    procs.append(
                        subprocess.Popen(
                            [
                                sys.executable,
                                "-m",
                                "hltm_assets.cli",
                                "--home",
                                str(root / f"worker-{count}-{w}"),
                                "worker",
                                "--name",
                                f"w{w}@bench",
                            ],  # fmt: skip
                            env=env | {"RUST_LOG": "error"},
                            stdout=log,
                            stderr=subprocess.STDOUT,
                            start_new_session=True,
                        )
                    )
                with services.applied(env):
                    app = celery_app(Settings.from_env(coordinator))
                deadline = time.monotonic() + 120
                while len(live_workers(app, 1.0)) < count:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"{count} workers did not come up")
                runs[count] = _timed_index(env, coordinator, leaves)
            finally:
                for proc in procs:
                    os.killpg(proc.pid, signal.SIGTERM)
                for proc in procs:
                    try:
                        proc.wait(timeout=60)
                    except subprocess.TimeoutExpired:
                        os.killpg(proc.pid, signal.SIGKILL)
        one = runs[workers[0]]["wall_s"]
        embedded = out["embedded"]["wall_s"]
        for run in runs.values():
            run["speedup_vs_first"] = round(one / run["wall_s"], 2)
            run["time_vs_embedded"] = round(run["wall_s"] / embedded, 2)
        out["distributed"] = {str(k): v for k, v in runs.items()}
    finally:
        services.down(root / "services")
        if tmp is not None:
            tmp.cleanup()
    return out
