"""``hltm bench live``: how soon a write of one item is answerable, through the memory service.

On a generated tree (``--leaves``, kept in ``--home``; ``--reuse`` measures again on one built
before, by this bench or by ``hltm bench scale``), the service runs as its own process
(``hltm serve``) and clients talk to it over HTTP, as agents would:

1. single writes, one at a time: each remembers a note naming a word no document holds, at a
   random leaf; *leaf* is the time until ``remember`` returns (it returns once the leaf is
   built) and a question at the leaf finds the word; *account* until a question at the leaf's
   account finds it (asked every 50 ms);
2. sustained writes: ``--clients`` clients together send ``--rate`` writes a second for
   ``--seconds`` seconds, each waiting until its whole path is built; *freshness* is that wait;
3. a burst of ``--burst`` writes sent at once, a client each (each returns when its write is
   durable); the time until the service has built all of them up to their accounts.

"Finds the word" means the word is in a passage of the answer's retrieved context. After the
writes the service is stopped, every written document is looked up in the source of truth (no
write lost) and ``hltm verify`` compares memory with a full rebuild.
"""

from __future__ import annotations

import json
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from hltm_resources.config import Settings
from query.writer import ask_service, post_json


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def _summary(values: list[float]) -> dict:
    if not values:  # JSON has no NaN
        return {"n": 0, "p50_s": None, "p95_s": None, "max_s": None, "mean_s": None}
    return {
        "n": len(values),
        "p50_s": round(_pct(values, 0.5), 3),
        "p95_s": round(_pct(values, 0.95), 3),
        "max_s": round(max(values), 3) if values else None,
        "mean_s": round(statistics.fmean(values), 3) if values else None,
    }


class _Writes:
    """Notes with a word of their own, at random leaves; what was acknowledged."""

    def __init__(self, leaves: list[tuple[str, str]], seed: int):
        self.leaves = leaves  # (leaf raw id, account node id)
        self.rng = random.Random(seed)
        self.tag = f"{int(time.time()) % 1_000_000:06d}"  # this run's writes, apart from others
        self.n = 0
        self.lock = threading.Lock()
        self.acknowledged: dict[str, tuple[str, str, str]] = {}  # doc id -> leaf, account, word

    def next(self) -> tuple[dict, str, str, str]:
        with self.lock:
            self.n += 1
            n = self.n
            leaf, account = self.rng.choice(self.leaves)
        word = f"zolvex{self.tag}n{n:05d}"
        doc = {
            "doc_id": f"live-{self.tag}-{n:05d}",
            "project_id": leaf,
            "kind": "note",
            "text": f"Call note: the hiring manager now asks for {word} experience on this search.",
            "updated_at": "2026-12-06",
        }
        return {"op": "upsert", "level": "document", "record": doc}, leaf, account, word

    def send(self, url: str, wait: str) -> tuple[float, str, str, str, dict]:
        change, leaf, account, word = self.next()
        t0 = time.perf_counter()
        body = {"changes": [change], "wait": wait}
        status, out = post_json(url, "/v1/changes", body, timeout=600)
        took = time.perf_counter() - t0
        if status == 200:
            with self.lock:
                self.acknowledged[change["record"]["doc_id"]] = (leaf, account, word)
        return took, leaf, account, word, out | {"status": status}


def _finds(url: str, scope: str, word: str) -> bool:
    out = ask_service(url, f"Who asks for {word}?", scope, contexts=True)
    return word in json.dumps(out.get("contexts", {}))


def _start_service(home: Path) -> tuple[subprocess.Popen, str]:
    service_file = home / "service.json"
    service_file.unlink(missing_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-m", "hltm_assets.cli", "--home", str(home), "serve", "--port", "0"],
        stdout=subprocess.DEVNULL,
        stderr=open(home / "serve.log", "a"),  # noqa: SIM115 - the child's stderr, kept open
    )
    deadline = time.monotonic() + 1800
    while not service_file.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the service did not start; see {home / 'serve.log'}")
        time.sleep(0.2)
    return proc, json.loads(service_file.read_text())["url"]


def bench_live(
    leaves: int = 10_000,
    home: str | None = None,
    reuse: bool = False,
    singles: int = 40,
    rate: float = 20.0,
    seconds: float = 60.0,
    clients: int = 4,
    burst: int = 1000,
    seed: int = 17,
) -> dict:
    from hltm_resources.indexing.verify import verify
    from hltm_resources.stores import database
    from hltm_resources.stores.sot import read_topology

    tmp = None
    if home is None:
        if reuse:
            raise ValueError("--reuse needs --home (the directory of an earlier bench)")
        tmp = tempfile.TemporaryDirectory()
        home = tmp.name
    root = Path(home)
    settings = Settings(home=root / "home")
    out: dict = {"home": str(root)}
    try:
        if not reuse:
            from hltm_assets.runner import run_index
            from hltm_resources.indexing.loading import load_snapshot
            from query.evaluation.data.sample_world import stream_snapshot

            stream_snapshot(root / "v1", leaves, seed=seed)
            load_snapshot(settings, root / "v1")
            t0 = time.perf_counter()
            run_index(settings)
            out["first_build_s"] = round(time.perf_counter() - t0, 1)
        with database.connect(settings.duckdb_path, read_only=True) as con:
            topo = read_topology(con, settings.schema)
        leaf_pool = [(raw, topo.ancestors(node)[-1].node_id) for raw, node in topo.leaves.items()]
        out["tree"] = {lv: len(nodes) for lv, nodes in topo.levels.items()}
        writes = _Writes(leaf_pool, seed)
        t0 = time.perf_counter()
        proc, url = _start_service(settings.home)
        out["service_start_s"] = round(time.perf_counter() - t0, 1)
        try:
            out["single"] = _singles(url, writes, singles)
            out["sustained"] = _sustained(url, writes, rate, seconds, clients)
            out["burst"] = _burst(url, writes, burst)
        finally:
            proc.terminate()
            proc.wait(timeout=120)
        out["no_write_lost"] = _all_stored(settings, writes)
        t0 = time.perf_counter()
        report = verify(settings)
        out["verify"] = {
            "identical": report.ok,
            "nodes": report.nodes,
            "seconds": round(time.perf_counter() - t0, 1),
        }
    finally:
        if tmp is not None:
            tmp.cleanup()
    return out


def _singles(url: str, writes: _Writes, n: int) -> dict:
    ack_s, leaf_s, account_s, misses = [], [], [], 0
    for _ in range(n):
        t0 = time.perf_counter()
        took, leaf, account, word, ack = writes.send(url, "leaf")
        if ack["status"] != 200:
            misses += 1
            continue
        ack_s.append(took)
        found_leaf = _finds(url, f"project:{leaf}", word)
        leaf_s.append(time.perf_counter() - t0)
        misses += not found_leaf
        deadline = t0 + 60
        while not _finds(url, account, word):
            if time.perf_counter() > deadline:
                misses += 1
                break
            time.sleep(0.05)
        else:
            account_s.append(time.perf_counter() - t0)
    return {
        "writes": n,
        "remember_returned": _summary(ack_s),
        "leaf_answerable": _summary(leaf_s),
        "account_answerable": _summary(account_s),
        "not_found": misses,
    }


def _sustained(url: str, writes: _Writes, rate: float, seconds: float, clients: int) -> dict:
    total = int(rate * seconds)
    fresh: list[float] = []
    failed: list[dict] = []
    lock = threading.Lock()

    def client(k: int) -> None:
        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=64) as pool:
            for i in range(k, total, clients):
                due = start + i / rate
                time.sleep(max(0.0, due - time.perf_counter()))
                pool.submit(one)

    def one() -> None:
        took, *_, ack = writes.send(url, "root")
        with lock:
            (fresh.append(took) if ack["status"] == 200 else failed.append(ack))

    t0 = time.perf_counter()
    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {
        "clients": clients,
        "writes": total,
        "rate_per_s": rate,
        "wall_s": round(time.perf_counter() - t0, 1),
        "account_freshness": _summary(fresh),
        "refused_or_failed": len(failed),
        "first_failures": failed[:3],
    }


def _burst(url: str, writes: _Writes, n: int) -> dict:
    """``n`` writes sent at once (each returns when durable), then the time until the
    service has built every one up to its account."""
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=min(n, 1000)) as pool:  # all at once: a client each
        results = list(pool.map(lambda _: writes.send(url, "applied"), range(n)))
    sent = time.perf_counter() - t0
    ok = [r for r in results if r[4]["status"] == 200]
    last = max((r[4]["seq"] for r in ok), default=0)
    deadline = t0 + 600
    while _status(url)["built_seq"] < last and time.perf_counter() < deadline:
        time.sleep(0.1)
    wall = time.perf_counter() - t0
    sample = random.Random(0).sample(ok, min(50, len(ok)))
    found = sum(_finds(url, r[2], r[3]) for r in sample)
    return {
        "writes": n,
        "acknowledged": len(ok),
        "all_durable_s": round(sent, 1),
        "all_built_at_account_s": round(wall, 1),
        "sample_answerable_at_account": f"{found}/{len(sample)}",
    }


def _status(url: str) -> dict:
    with urllib.request.urlopen(url + "/v1/status", timeout=60) as response:
        return json.loads(response.read())


def _all_stored(settings: Settings, writes: _Writes) -> dict:
    from hltm_resources.stores import database

    with database.connect(settings.duckdb_path, read_only=True) as con:
        stored = {
            r[0]
            for r in con.execute(
                "SELECT doc_id FROM sot_documents WHERE doc_id LIKE 'live-%'"
            ).fetchall()
        }
    missing = sorted(set(writes.acknowledged) - stored)
    return {"acknowledged": len(writes.acknowledged), "missing": len(missing), "ok": not missing}
