"""``hltm dev`` and ``hltm reload``: the Dagster UI on this home; ``hltm worker``: a worker of
the distributed deployment."""

from __future__ import annotations

import argparse
import os
import socket
import sys
from pathlib import Path

from hltm_assets.cli.common import EXIT_FAILED, CliError, settings_of

#: The repository root: workspace.yaml and dagster.yaml live there.
ROOT = Path(__file__).resolve().parents[2]


def cmd_dev(args: argparse.Namespace) -> int:
    """Start ``dagster dev`` on this home (same storage as the CLI)."""
    import subprocess

    settings = settings_of(args)
    settings.home.mkdir(parents=True, exist_ok=True)
    # DAGSTER_HOME unset and the repo root as working directory: `dagster dev` then reads the
    # repo's dagster.yaml, which keeps Dagster's storage in $HLTM_HOME (the CLI's instance).
    env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}
    if settings.distributed:  # the deployment's instance: PostgreSQL, runs onto the workers
        from hltm_assets.history import distributed_instance_dir

        env["DAGSTER_HOME"] = str(distributed_instance_dir(settings))
    env["HLTM_HOME"] = str(settings.home)
    env["HLTM_TREE"] = settings.tree
    dagster = str(Path(sys.executable).with_name("dagster"))
    cmd = [dagster, "dev", "-w", str(ROOT / "workspace.yaml"), "-p", str(args.port)]
    cmd += ["-h", args.host]
    print(f"starting: HLTM_HOME={settings.home} {' '.join(cmd)}")
    return subprocess.call(cmd, env=env, cwd=ROOT)


def free_port() -> int:
    """A TCP port free on loopback now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ui_graphql(url: str, query: str, variables: dict) -> dict:
    """The ``data`` of a query to the GraphQL API of the Dagster UI at ``url``; its errors
    raised."""
    import json
    import urllib.request

    body = json.dumps({"query": query, "variables": variables}).encode()
    request = urllib.request.Request(url + "/graphql", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        answer = json.loads(response.read())
    if "errors" in answer:
        raise RuntimeError(f"GraphQL errors from {url}: {answer['errors']}")
    return answer["data"]


LATEST_MATERIALIZATION = """
query($key: AssetKeyInput!, $partitions: [String!]) {
  assetOrError(assetKey: $key) {
    ... on Asset { assetMaterializations(partitions: $partitions, limit: 1) { timestamp runId } }
  }
}"""


def latest_materialization(url: str, asset: str, partition: str) -> tuple[float, str] | None:
    """(timestamp in seconds, run id) of a partition's latest materialization, as the UI at
    ``url`` shows it; None before its first."""
    variables = {"key": {"path": [asset]}, "partitions": [partition]}
    events = ui_graphql(url, LATEST_MATERIALIZATION, variables)["assetOrError"][
        "assetMaterializations"
    ]
    return (float(events[0]["timestamp"]) / 1000, events[0]["runId"]) if events else None


def _listening(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


def cmd_reload(args: argparse.Namespace) -> int:
    """Reload the code location of a running ``dagster dev`` after the tree changed."""
    from dagster_graphql import DagsterGraphQLClient, DagsterGraphQLClientError

    where = f"{args.host}:{args.port}"
    if not _listening(args.host, args.port):
        raise CliError(
            f"no Dagster UI answers on {where}: pass the port `hltm dev` runs on "
            "(hltm reload --port N), or start it (hltm dev)"
        )
    client = DagsterGraphQLClient(args.host, port_number=args.port)
    try:
        info = client.reload_repository_location(args.location)
    except DagsterGraphQLClientError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CliError(
            f"the server on {where} did not reload {args.location} ({first}); "
            "is it the Dagster UI of `hltm dev`?"
        ) from exc
    print(f"reload of {args.location}: {info.status}")
    return 0 if str(info.status).endswith("SUCCESS") else EXIT_FAILED


def cmd_worker(args: argparse.Namespace) -> int:
    """A Celery worker of the distributed deployment: it executes HLTM's Dagster runs."""
    settings = settings_of(args)
    if not settings.distributed:
        raise CliError(
            "hltm worker serves the distributed deployment: set HLTM_DEPLOYMENT=distributed "
            "and its connection variables (README, 'Running on more than one machine')"
        )
    from hltm_assets.distributed import run_worker

    run_worker(settings, name=args.name)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("dev", help="start dagster dev on this home")
    p.add_argument("--port", type=int, default=3000)
    p.add_argument(
        "--host", default="127.0.0.1", help="address to serve on (0.0.0.0 in a container)"
    )
    p.set_defaults(func=cmd_dev)

    p = sub.add_parser("reload", help="reload the code location of a running dagster dev")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=3000)
    p.add_argument("--location", default="hltm_assets.definitions")
    p.set_defaults(func=cmd_reload)
    p = sub.add_parser("worker", help="run a worker of the distributed deployment (blocks)")
    p.add_argument("--name", default=None, help="Celery node name (default hltm-PID@HOST)")
    p.set_defaults(func=cmd_worker)
