"""The ``hltm`` command line, run as a user runs it (a subprocess)."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def hltm(home, *args, check=True):
    proc = subprocess.run(
        [sys.executable, "-m", "hltm_assets.cli", "--home", str(home), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"hltm {args} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return proc


def test_load_error_exits_nonzero_with_file_and_line(tmp_path, snapshot_dir):
    home = tmp_path / "home"
    hltm(home, "load", str(snapshot_dir))
    bad = tmp_path / "bad"
    bad.mkdir()
    for f in snapshot_dir.iterdir():
        (bad / f.name).write_bytes(f.read_bytes())
    lines = (bad / "projects.jsonl").read_text().splitlines()
    lines[1] = lines[1].replace('"seat_id": "', '"seat_id": "missing-')
    (bad / "projects.jsonl").write_text("\n".join(lines) + "\n")
    before = (home / "hltm.duckdb").read_bytes()
    proc = hltm(home, "load", str(bad), check=False)
    assert proc.returncode == 2
    assert "projects.jsonl:2:" in proc.stderr and "does not exist in seats.jsonl" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert (home / "hltm.duckdb").read_bytes() == before


def test_index_json_builds_everything_then_nothing(tmp_path, snapshot_dir, world):
    home = tmp_path / "home"
    hltm(home, "load", str(snapshot_dir))
    first = json.loads(hltm(home, "index", "--json").stdout)
    assert (first["leaves_built"], first["seats_built"], first["accounts_built"]) == (
        len(world.projects),
        len(world.seats),
        len(world.accounts),
    )
    assert first["engine_calls"] > 0 and first["dagster_runs"] == 3
    second = json.loads(hltm(home, "index", "--json").stdout)
    assert (
        second["leaves_built"],
        second["seats_built"],
        second["accounts_built"],
        second["engine_calls"],
    ) == (0, 0, 0, 0)
    assert hltm(home, "check").returncode == 0
    # The CLI's runs are recorded in the home's Dagster instance (what `dagster dev` shows).
    assert (home / "history" / "runs.db").exists()


@pytest.mark.slow
def test_demo_end_to_end(tmp_path):
    proc = hltm(tmp_path / "home", "demo", "--no-progress")
    out = proc.stdout
    assert re.search(r"account\s+3\s+\d+\s+\d+\s+3", out)
    assert re.search(r"seat\s+12\s+\d+\s+\d+\s+12", out)
    assert re.search(r"project\s+\d{3}\s+\d+\s+\d+\s+\d{3}", out)
    assert "hltm.duckdb" in out and "lancedb" in out
    assert out.count("cites: ") >= 5
    assert "cites: project:" in out and "cites: seat:" in out


def test_readme_test_command_is_what_ci_runs():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    command = next(line.strip() for line in ci.splitlines() if line.startswith("python3 -m venv"))
    assert command in readme


def test_reload_without_a_server_on_the_port_says_so_in_one_line(tmp_path):
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = hltm(tmp_path / "home", "reload", "--port", str(port), check=False)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert f"no Dagster UI answers on 127.0.0.1:{port}" in proc.stderr
    assert "--port" in proc.stderr
