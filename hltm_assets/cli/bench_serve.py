"""``hltm bench serve``: the memory service under load, reads and writes at once, over HTTP.

On a built home (``--home DIR``: the directory of an earlier ``hltm bench live`` or ``scale``,
whose ``DIR/home`` it uses; run it on a copy, it writes), in one run:

1. the baseline: the bench's questions asked in this process, one at a time, as
   ``hltm bench query`` asks them (each asked once first, so each scope's rows are loaded;
   the second round is timed);
2. the service started as its own process (``hltm serve``); ``--readers`` clients ask the
   same questions over HTTP as fast as they are answered (or with ``--think`` seconds between
   a client's questions) while ``--writers`` clients each remember a note at a random leaf and
   wait until it is built up to its account, then send the next, for ``--seconds`` seconds.

It reports the reads' latency against the baseline's p95 (the ratio, measured side by side),
every error, and the writes' freshness; then, the service stopped, that no acknowledged write
is missing from the source of truth.
"""

from __future__ import annotations

import json
import random
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from hltm_assets.cli.bench_live import _pct, _start_service, _summary, _Writes
from hltm_resources.config import Settings

#: The bench's questions, asked at leaves, seats and accounts alike.
QUESTIONS = (
    "Where are the jobs usually located?",
    "Which roles are senior?",
    "What is the salary range?",
    "Who is the hiring manager?",
    "Which searches need Python?",
    "How many searches are remote?",
    "What seniority is asked for most?",
    "Which searches are in Berlin?",
)


def _questions(topology, n: int, seed: int) -> list[tuple[str, str]]:
    """``n`` (question, scope) pairs: half at leaves, 30 % at seats, 20 % at accounts."""
    rng = random.Random(seed)
    levels = [list(nodes.values()) for nodes in topology.levels.values()]
    accounts, seats, leaves = levels[0], levels[-2], levels[-1]
    out = []
    for _ in range(n):
        pool = rng.choices([leaves, seats, accounts], weights=[5, 3, 2])[0]
        out.append((rng.choice(QUESTIONS), rng.choice(pool).node_id))
    return out


def _baseline(settings: Settings, questions: list[tuple[str, str]]) -> dict:
    from query import Memory

    memory = Memory(settings, log_queries=False)
    try:
        memory.warm_up()
        for question, scope in questions:  # each scope's rows loaded once, as a service has
            memory.ask(question, scope)
        took = []
        for question, scope in questions:
            t0 = time.perf_counter()
            memory.ask(question, scope)
            took.append(time.perf_counter() - t0)
    finally:
        memory.close()
    return _summary(took)


def _ask(url: str, question: str, scope: str) -> tuple[int, float]:
    body = json.dumps({"question": question, "scope": scope}).encode()
    request = urllib.request.Request(
        url + "/v1/ask", data=body, headers={"Content-Type": "application/json"}
    )
    t0 = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=300) as response:
            response.read()
            status = response.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except OSError:
        status = 0
    return status, time.perf_counter() - t0


def bench_serve(
    home: str,
    readers: int = 50,
    writers: int = 4,
    seconds: float = 60.0,
    think: float = 0.0,
    questions: int = 200,
    seed: int = 17,
) -> dict:
    from hltm_resources.stores import database
    from hltm_resources.stores.sot import read_topology

    settings = Settings(home=Path(home) / "home")
    with database.connect(settings.duckdb_path, read_only=True) as con:
        topology = read_topology(con, settings.schema)
    asked = _questions(topology, questions, seed)
    out: dict = {
        "home": str(home),
        "tree": {level: len(nodes) for level, nodes in topology.levels.items()},
        "readers": readers,
        "writers": writers,
        "seconds": seconds,
        "think_s": think,
    }
    out["baseline_in_process"] = _baseline(settings, asked)

    leaf_pool = [
        (raw, topology.ancestors(node)[-1].node_id) for raw, node in topology.leaves.items()
    ]
    writes = _Writes(leaf_pool, seed)
    proc, url = _start_service(settings.home)
    reads: list[float] = []
    read_errors: list[int] = []
    fresh: list[float] = []
    write_errors: list[dict] = []
    lock = threading.Lock()
    try:
        for question, scope in asked:  # the service loads each scope once, as the baseline did
            _ask(url, question, scope)
        stop = time.perf_counter() + seconds

        def reader(k: int) -> None:
            rng = random.Random(seed + k)
            while time.perf_counter() < stop:
                status, took = _ask(url, *rng.choice(asked))
                with lock:
                    (reads.append(took) if status == 200 else read_errors.append(status))
                if think:
                    time.sleep(rng.expovariate(1 / think))

        def writer() -> None:
            while time.perf_counter() < stop:
                took, *_, ack = writes.send(url, "root")
                with lock:
                    (fresh.append(took) if ack["status"] == 200 else write_errors.append(ack))

        threads = [threading.Thread(target=reader, args=(k,)) for k in range(readers)]
        threads += [threading.Thread(target=writer) for _ in range(writers)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - t0
    finally:
        proc.terminate()
        proc.wait(timeout=120)
    base_p95 = out["baseline_in_process"]["p95_s"]
    out["reads"] = _summary(reads) | {
        "errors": len(read_errors),
        "per_s": round(len(reads) / wall, 1),
        "p95_over_baseline_p95": round(_pct(reads, 0.95) / base_p95, 2) if base_p95 else None,
    }
    out["writes"] = {
        "account_freshness": _summary(fresh),
        "errors": len(write_errors),
        "first_errors": write_errors[:3],
        "per_s": round(len(fresh) / wall, 2),
    }
    from hltm_assets.cli.bench_live import _all_stored

    out["no_write_lost"] = _all_stored(settings, writes)
    return out
