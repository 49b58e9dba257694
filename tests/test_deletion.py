"""`hltm delete` leaves nothing behind: no table, view, table version, cache or log keeps the
deleted project's content, and no query at any scope cites it."""

import json
import subprocess
import sys
from pathlib import Path

import duckdb
import lancedb
import pytest

from hltm_assets.partitions import read_tree
from hltm_resources.config import Settings
from query.evaluation.data.sample_world import generate_world, make_queries, write_snapshot

ROOT = Path(__file__).resolve().parent.parent


def hltm(env_home, *args):
    proc = subprocess.run(
        [sys.executable, "-m", "hltm_assets.cli", "--home", str(env_home), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def duckdb_hits(path: Path, needle: str) -> list[str]:
    """Every table and view column (text or list of text) that contains ``needle``."""
    con = duckdb.connect(str(path), read_only=True)
    hits = []
    rels = con.execute("SELECT table_name FROM information_schema.tables").fetchall()
    for (rel,) in rels:
        for col, dtype in con.execute(
            "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = ?",
            [rel],
        ).fetchall():
            if "VARCHAR" not in dtype:
                continue
            expr = f"array_to_string(\"{col}\", ' ')" if "[]" in dtype else f'"{col}"'
            n = con.execute(
                f'SELECT count(*) FROM "{rel}" WHERE {expr} LIKE ?', [f"%{needle}%"]
            ).fetchone()[0]
            if n:
                hits.append(f"{rel}.{col}")
    con.close()
    return hits


def lancedb_hits(path: Path, needle: str) -> list[str]:
    """Search every remaining version of every table."""
    db = lancedb.connect(str(path))
    hits = []
    for name in db.table_names():
        table = db.open_table(name)
        versions = [v["version"] for v in table.list_versions()]
        for version in versions:
            table.checkout(version)
            data = table.to_arrow()
            for col in data.column_names:
                if col == "vector":
                    continue
                if needle in json.dumps(data.column(col).to_pylist(), default=str):
                    hits.append(f"{name}@v{version}.{col}")
        table.checkout_latest()
    return hits


def raw_hits(home: Path, needle: str) -> list[str]:
    return [
        str(p.relative_to(home))
        for p in home.rglob("*")
        if p.is_file() and needle.encode() in p.read_bytes()
    ]


@pytest.mark.slow
def test_delete_project_leaves_nothing_behind(tmp_path):
    world = generate_world(seed=21, accounts=2, seats_per_account=2, projects_per_seat=(4, 5))
    home = tmp_path / "home"
    hltm(home, "load", str(write_snapshot(world, tmp_path / "snap")))
    hltm(home, "index")
    # The first partition of its level: the range a run's checks covered starts with it.
    first = next(iter(read_tree(Settings(home=home)).level("project")))
    victim = next(p for p in world.projects if p["project_id"] == first)
    pid = victim["project_id"]
    sentence = f"Internal code name: {world.truth[pid].codename}"
    seat = victim["seat_id"]
    account = next(s["account_id"] for s in world.seats if s["seat_id"] == seat)
    # The sentence is in the SOT, the stores, and a query log citing the project.
    assert duckdb_hits(home / "hltm.duckdb", world.truth[pid].codename)
    title = world.truth[pid].title
    hltm(home, "ask", f"Which of my searches were for {title} roles?", "--scope", f"seat:{seat}")
    hltm(home, "ask", "Where is this role located?", "--scope", f"project:{pid}")
    con = duckdb.connect(str(home / "hltm.duckdb"), read_only=True)
    cited = con.execute(
        "SELECT count(*) FROM query_log WHERE list_contains(references_, ?) OR scope = ?",
        [f"project:{pid}", f"project:{pid}"],
    ).fetchone()[0]
    con.close()
    assert cited >= 1

    out = json.loads(hltm(home, "delete", f"project:{pid}", "--json"))
    assert out["ancestors_to_rebuild"] == [f"seat:{seat}", f"account:{account}"]
    assert out["rebuilt"]["seats_built"] == 1 and out["rebuilt"]["accounts_built"] == 1

    needle = world.truth[pid].codename
    assert duckdb_hits(home / "hltm.duckdb", needle) == []
    assert duckdb_hits(home / "hltm.duckdb", f"project:{pid}") == []
    assert lancedb_hits(home / "lancedb", needle) == []
    assert lancedb_hits(home / "lancedb", f"project:{pid}") == []
    # Byte level: the DuckDB file (rewritten), LanceDB files (compacted, old versions
    # removed), caches, and Dagster's run storage under the home.
    assert raw_hits(home, needle) == []
    assert sentence not in json.dumps(raw_hits(home, sentence))
    # Nor its id: not in Dagster's run history, nor in its asset checks' results (whose
    # metadata names the partitions a run checked).
    assert raw_hits(home, pid) == []
    # No question at any scope cites the deleted project.
    queries = make_queries(world, seed=3)
    from query import Memory

    mem = Memory(Settings(home=home), log_queries=False)
    for q in queries:  # every seat and account scope
        r = mem.ask(q["question"], scope=q["scope"])
        assert f"project:{pid}" not in r.references
    assert hltm(home, "verify").startswith("memory is identical")
