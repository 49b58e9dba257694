"""``hltm services up|down``: the distributed deployment's services on this machine.

PostgreSQL (Dagster's instance and the memory lake's catalog), Redis (the Celery broker) and an
S3 endpoint (moto in server mode), each on loopback with its data under one directory. This is
how the tests and the benchmark run the distributed deployment, and a way to try it without a
cluster; production points the same variables at managed services (README, "Running on more
than one machine"). ``up`` prints the environment that selects the deployment.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

BUCKET = "hltm"
DATABASE = "hltm"


@dataclass(frozen=True)
class Ports:
    postgres: int = 55432
    redis: int = 56379
    s3: int = 55900


def free_ports() -> Ports:
    """Ports nothing listens on now, one per service (a deployment beside others)."""
    socks = [socket.socket() for _ in range(3)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return Ports(*(s.getsockname()[1] for s in socks))
    finally:
        for s in socks:
            s.close()


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _wait(port: int, what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not _listening(port):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not start listening on 127.0.0.1:{port}")
        time.sleep(0.1)


def pg_bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}")) or [shutil.which(name)]
    if not found[-1]:
        raise RuntimeError(f"{name} not found: install PostgreSQL (apt-get install postgresql)")
    return found[-1]


def missing() -> list[str]:
    """The programs the local services need that this machine lacks."""
    out = []
    for name in ("initdb", "pg_ctl"):
        try:
            pg_bin(name)
        except RuntimeError:
            out.append(f"{name} (apt-get install postgresql)")
    if not shutil.which("redis-server"):
        out.append("redis-server (apt-get install redis-server)")
    try:
        import moto.server  # noqa: F401
    except ImportError:
        out.append("moto (pip install 'moto[server]')")
    return out


def _as_postgres(argv: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: as root, run it as the ``postgres`` user."""
    if os.geteuid() != 0:
        return argv
    return ["runuser", "-u", "postgres", "--", *argv]


def environment(root: Path, ports: Ports = Ports()) -> dict[str, str]:
    """The variables that point HLTM at these services."""
    return {
        "HLTM_DEPLOYMENT": "distributed",
        "HLTM_CATALOG_URL": f"postgresql://postgres@127.0.0.1:{ports.postgres}/{DATABASE}",
        "HLTM_BROKER_URL": f"redis://127.0.0.1:{ports.redis}/0",
        "HLTM_OBJECT_STORE": f"s3://{BUCKET}/memory",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{ports.s3}",
        "AWS_ACCESS_KEY_ID": "hltm-local",
        "AWS_SECRET_ACCESS_KEY": "hltm-local-secret",
        "AWS_REGION": "us-east-1",
    }


def up(root: Path, ports: Ports = Ports()) -> dict[str, str]:
    """Start the three services under ``root`` (idempotent); returns :func:`environment`."""
    root = Path(root).resolve()
    root.mkdir(parents=True, exist_ok=True)
    lacking = missing()
    if lacking:
        raise RuntimeError("the local services need " + ", ".join(lacking))
    pg = root / "postgres"
    if not _listening(ports.postgres):
        sock = root / "pg-socket"
        for d in (pg, sock):
            d.mkdir(exist_ok=True)
            if os.geteuid() == 0:
                shutil.chown(d, "postgres", "postgres")
                os.chmod(d, 0o700)
        if not (pg / "PG_VERSION").exists():
            subprocess.run(
                _as_postgres([pg_bin("initdb"), "-D", str(pg), "-A", "trust", "-U", "postgres"]),
                check=True,
                capture_output=True,
            )
        subprocess.run(
            _as_postgres(
                [
                    pg_bin("pg_ctl"),
                    "-D",
                    str(pg),
                    "-l",
                    str(pg / "server.log"),
                    "-o",
                    f"-p {ports.postgres} -k {sock} -c listen_addresses=127.0.0.1 "
                    "-c max_connections=200",
                    "-w",
                    "start",
                ]
            ),
            check=True,
            capture_output=True,
        )
        _wait(ports.postgres, "PostgreSQL")
        create_database(ports, DATABASE)
    if not _listening(ports.redis):
        (root / "redis").mkdir(exist_ok=True)
        subprocess.run(
            [
                "redis-server",
                "--port",
                str(ports.redis),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(root / "redis"),
                "--daemonize",
                "yes",
                "--pidfile",
                str(root / "redis" / "redis.pid"),
                "--logfile",
                str(root / "redis" / "redis.log"),
                "--save",
                "",
            ],
            check=True,
            capture_output=True,
        )
        _wait(ports.redis, "Redis")
    env = environment(root, ports)
    if not _listening(ports.s3):
        log = (root / "moto.log").open("ab")
        proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(ports.s3)],
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
        (root / "moto.pid").write_text(str(proc.pid))
        _wait(ports.s3, "the S3 endpoint (moto)")
    _make_bucket(env)
    return env


def _psql(ports: Ports, *args: str) -> str:
    cmd = [pg_bin("psql"), "-h", "127.0.0.1", "-p", str(ports.postgres), "-U", "postgres"]
    done = subprocess.run(_as_postgres([*cmd, *args]), check=True, capture_output=True, text=True)
    return done.stdout.strip()


def create_database(ports: Ports, name: str) -> None:
    """A database named ``name`` on the local PostgreSQL, made if missing."""
    if not _psql(ports, "-tAc", f"SELECT 1 FROM pg_database WHERE datname = '{name}'"):
        _psql(ports, "-c", f'CREATE DATABASE "{name}"')


@contextlib.contextmanager
def applied(env: dict[str, str]) -> Iterator[None]:
    """``env`` in ``os.environ`` for the block (settings and clients read it), then restored."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _make_bucket(env: dict[str, str]) -> None:
    from hltm_resources.stores.lake import ObjectStore

    with applied(env):
        client = ObjectStore.from_env(env["HLTM_OBJECT_STORE"]).client()
        if BUCKET not in {b["Name"] for b in client.list_buckets().get("Buckets", [])}:
            client.create_bucket(Bucket=BUCKET)


def down(root: Path) -> None:
    """Stop what :func:`up` started under ``root`` (data stays)."""
    root = Path(root).resolve()
    if (root / "postgres" / "postmaster.pid").exists():
        subprocess.run(
            _as_postgres([pg_bin("pg_ctl"), "-D", str(root / "postgres"), "-m", "fast", "stop"]),
            capture_output=True,
        )
    for pidfile in (root / "redis" / "redis.pid", root / "moto.pid"):
        if pidfile.exists():
            try:
                os.kill(int(pidfile.read_text().strip()), signal.SIGTERM)
            except (ProcessLookupError, ValueError):
                pass
            pidfile.unlink(missing_ok=True)


def cmd_up(args: argparse.Namespace) -> int:
    env = up(Path(args.dir))
    for key, value in env.items():
        print(f"export {key}={value}")
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    down(Path(args.dir))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "services", help="start/stop PostgreSQL, Redis and an S3 endpoint on loopback"
    )
    ssub = p.add_subparsers(dest="action", required=True)
    u = ssub.add_parser("up", help="start them (data in --dir); prints the variables to export")
    u.add_argument("--dir", default=".hltm-services")
    u.set_defaults(func=cmd_up)
    d = ssub.add_parser("down", help="stop them (data stays in --dir)")
    d.add_argument("--dir", default=".hltm-services")
    d.set_defaults(func=cmd_down)
