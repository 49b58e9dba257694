"""``hltm bench dagster``: how soon a project partition launched by hand reaches its account
under ``hltm dev``, with this repository's Dagster settings and with Dagster's defaults.

On the demo's home (or ``--home``, a built home), ``dagster dev`` runs as a user runs it. Two
paths, ``--trials`` times each, then poll until the project, its seat and its account each
have a materialization newer than the start (automation builds the seat and the account, each
in its own run):

- *ui*: one project partition's run launched through the UI's GraphQL API (what its
  "Materialize…" dialog sends);
- *sensor*: one document written to the project in the source of truth and not built; the
  ``hltm_sot_changes`` sensor requests the project's run.

Trials take different projects, a random pause apart (sensors tick periodically; the pause
samples where in that period a start falls).

The two settings are measured one after the other in this run, on the same home:

- *hltm*: the repository's ``dagster.yaml`` (runs start in a warm worker, the queue hands a run
  over within 1 s) and both sensors evaluated at every pass of Dagster's daemon (about 5 s);
- *dagster defaults*: the same storage, Dagster's own launcher and queue (a new process per
  run, the queue read every 5 s) and the sensors every 30 s (this repository's setting before).
"""

from __future__ import annotations

import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import yaml

from hltm_assets.cli.server import ROOT, free_port, latest_materialization
from hltm_resources.config import Settings
from hltm_resources.stores import database
from query.writer import Writer

#: Settings this repository's dagster.yaml adds for speed; the defaults run goes without them.
TUNED_KEYS = ("run_launcher", "run_coordinator")
DEFAULT_SENSOR_INTERVAL_S = 30


class _Dev:
    """``dagster dev`` on the home, with this repository's settings or Dagster's defaults."""

    def __init__(self, home: Path, tuned: bool, scratch: Path):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}
        env["HLTM_HOME"] = str(home)
        if not tuned:
            config = yaml.safe_load((ROOT / "dagster.yaml").read_text())
            for key in TUNED_KEYS:
                config.pop(key, None)
            instance_dir = scratch / "dagster-defaults"
            instance_dir.mkdir(parents=True, exist_ok=True)
            (instance_dir / "dagster.yaml").write_text(yaml.safe_dump(config))
            env["DAGSTER_HOME"] = str(instance_dir)
            env["HLTM_SENSOR_INTERVAL_S"] = str(DEFAULT_SENSOR_INTERVAL_S)
        else:
            env.pop("HLTM_SENSOR_INTERVAL_S", None)
        dagster = str(Path(sys.executable).with_name("dagster"))
        cmd = [dagster, "dev", "-w", str(ROOT / "workspace.yaml"), "-p", str(self.port)]
        self.log = open(scratch / f"dev-{'hltm' if tuned else 'defaults'}.log", "w")
        self.proc = subprocess.Popen(
            cmd,
            cwd=ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_up(self, timeout_s: float = 180) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                urllib.request.urlopen(self.url + "/server_info", timeout=5)
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"dagster dev did not come up (log: {self.log.name})"
                    ) from None
                time.sleep(1)

    def stop(self) -> None:
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.log.close()


def _launch(url: str, settings: Settings, project: str) -> None:
    """What the UI's "Materialize…" dialog sends for one project partition."""
    from dagster_graphql import DagsterGraphQLClient

    host, port = url.removeprefix("http://").split(":")
    DagsterGraphQLClient(host, port_number=int(port)).submit_job_execution(
        "project_memory_job",
        repository_location_name="hltm_assets.definitions",
        tags={"dagster/partition": project},
    )


def _write_unbuilt(url: str, settings: Settings, project: str) -> None:
    """A document written to the source of truth and left for the sensor to build (what a
    loaded snapshot or a write that does not build leaves)."""
    note = f"bench note {time.time_ns()}: the client asked for weekly reports."
    Writer(settings, build=lambda leaves: {}).remember(project, note)


def _trial(
    start, url: str, settings: Settings, path: tuple[str, str, str], timeout_s: float
) -> dict:
    project, seat, account = path
    t0 = time.time()
    start(url, settings, project)
    chain = (
        ("project", "project_memory", project),
        ("seat", "seat_memory", seat),
        ("account", "account_memory", account),
    )
    found: dict[str, float] = {}
    while len(found) < len(chain):
        if time.time() - t0 > timeout_s:
            raise RuntimeError(f"{project}: only {sorted(found)} materialized in {timeout_s} s")
        for level, asset, partition in chain:
            if (
                level not in found
                and (seen := latest_materialization(url, asset, partition))
                and seen[0] > t0
            ):
                found[level] = round(seen[0] - t0, 2)
        time.sleep(0.25)
    return {"project_id": project} | {f"{level}_s": found[level] for level, _, _ in chain}


def _summary(trials: list[dict]) -> dict:
    out: dict = {"trials": trials}
    for level in ("project", "seat", "account"):
        values = [t[f"{level}_s"] for t in trials]
        out[level] = {
            "p50_s": round(statistics.median(values), 2),
            "max_s": max(values),
            "min_s": min(values),
        }
    return out


def bench_dagster(trials: int = 5, home: str | None = None, seed: int = 7) -> dict:
    scratch = Path(tempfile.mkdtemp(prefix="hltm-bench-dagster-"))
    if home is None:
        home_path = scratch / "home"
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "hltm_assets.cli",
                "--home",
                str(home_path),
                "demo",
                "--no-progress",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise RuntimeError(f"hltm demo failed: {done.stderr[-2000:]}")
    else:
        home_path = Path(home)
    settings = Settings(home=home_path)
    with database.connect(settings.duckdb_path, read_only=True) as con:
        paths = con.execute(
            "SELECT p.project_id, p.seat_id, s.account_id FROM sot_projects p "
            "JOIN sot_seats s USING (seat_id) ORDER BY 1"
        ).fetchall()
    rng = random.Random(seed)
    picked = rng.sample(paths, min(len(paths), 2 * trials))
    result: dict = {"home": str(home_path), "leaves": len(paths), "trials_per_setting": trials}
    for name, tuned, chosen in (
        ("hltm", True, picked[:trials]),
        ("dagster_defaults", False, picked[trials:] or picked[:trials]),
    ):
        dev = _Dev(home_path, tuned, scratch)
        try:
            dev.wait_up()
            time.sleep(15)  # the daemon's first pass, and the code location loaded
            result[name] = {}
            for path_name, start in (("ui", _launch), ("sensor", _write_unbuilt)):
                runs = []
                for path in chosen:
                    runs.append(_trial(start, dev.url, settings, path, timeout_s=600))
                    print(f"{name} {path_name}: {runs[-1]}", file=sys.stderr, flush=True)
                    time.sleep(rng.uniform(0, 5))
                result[name][path_name] = _summary(runs)
        finally:
            dev.stop()
    for path_name in ("ui", "sensor"):
        hltm = result["hltm"][path_name]["account"]["p50_s"]
        defaults = result["dagster_defaults"][path_name]["account"]["p50_s"]
        result[f"{path_name}_account_p50_ratio_defaults_over_hltm"] = round(defaults / hltm, 2)
    return result
