"""Losslessness, verified: rebuild every node from the current SOT into a scratch home and
compare it with the incrementally maintained memory, node by node.

With the deterministic engine the two must be byte-identical (canonical JSON of facets, QA
pairs and summary, and the input hashes). The scratch build skips embedding (vectors are a
function of the texts); instead the live home's vectors are checked against its rows: every
node's LanceDB texts must be exactly its DuckDB items.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from hltm_resources.config import Settings
from hltm_resources.embedding import make_embedder
from hltm_resources.engines import make_agents
from hltm_resources.indexing.erasure import complete_erasures
from hltm_resources.indexing.hints import load_active_hints
from hltm_resources.stores import database
from hltm_resources.stores.lock import home_lock
from hltm_resources.stores.memory_rows import INVALIDATED, read_memories
from hltm_resources.stores.vectors import TABLES, VectorStore, embedded_texts


@dataclass
class VerifyReport:
    nodes: int = 0
    identical: int = 0
    differences: dict[str, str] = field(default_factory=dict)
    vector_mismatches: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.differences and not self.vector_mismatches

    def as_dict(self) -> dict:
        return {
            "identical": self.ok,
            "nodes": self.nodes,
            "identical_nodes": self.identical,
            "differences": self.differences,
            "vector_mismatches": self.vector_mismatches,
        }


def full_rebuild(settings: Settings, scratch: Path) -> Settings:
    """Copy the SOT into ``scratch`` and build every node there (no vectors)."""
    from hltm_resources.indexing.indexer import Indexer

    target = settings.with_home(scratch)
    database.init_schema(target.duckdb_path, settings.schema)
    with database.connect(settings.duckdb_path, read_only=True) as src:
        tables = {
            f"sot_{t}": src.sql(f"SELECT * FROM sot_{t}").to_arrow_table()
            for t in database.sot_tables(settings.schema)
        }
        hints = load_active_hints(src)
    with database.connect(target.duckdb_path) as dst, database.transaction(dst):
        for name, table in tables.items():
            dst.register("_rows", table)
            dst.execute(f"INSERT INTO {name} SELECT * FROM _rows")
            dst.unregister("_rows")
    # The live home's agents (and LLM reply cache): an LLM engine re-reads cached replies.
    indexer = Indexer(
        target,
        agents=make_agents(settings),
        embedder=make_embedder(settings),
        hints=hints,
        write_vectors=False,
    )
    indexer.build_all()
    return target


def _memories(settings: Settings) -> tuple[dict, dict]:
    with database.connect(settings.duckdb_path, read_only=True) as con:
        hashes = dict(con.execute("SELECT node_id, input_hash FROM mem_nodes").fetchall())
        memories = read_memories(con, list(hashes))
    return hashes, memories


def _vector_texts(settings: Settings) -> dict[str, dict[str, Counter]]:
    """Per table, per node, the multiset of embedded texts in LanceDB."""
    store = VectorStore(settings.lancedb_path, None, None)
    out: dict[str, dict[str, Counter]] = {}
    for name in TABLES:
        per: dict[str, Counter] = {}
        if store.exists(name):
            rows = store.scan(name, ["node_id", "text"])
            for n, t in zip(
                rows.column("node_id").to_pylist(), rows.column("text").to_pylist(), strict=True
            ):
                per.setdefault(n, Counter())[t] += 1
        out[name] = per
    return out


def verify(settings: Settings) -> VerifyReport:
    """Compare the live memory with a full rebuild of the current SOT, node by node (after
    finishing any erasure a crashed command left recorded)."""
    with home_lock(settings, "verify"):
        complete_erasures(settings)
    report = VerifyReport()
    with tempfile.TemporaryDirectory(prefix="hltm-verify-") as tmp:
        scratch = full_rebuild(settings, Path(tmp) / "scratch")
        full_hashes, full = _memories(scratch)
    live_hashes, live = _memories(settings)
    nodes = sorted(set(full_hashes) | set(live_hashes))
    report.nodes = len(nodes)
    for node in nodes:
        if node not in live_hashes:
            report.differences[node] = "missing from the live memory (not built yet?)"
        elif node not in full_hashes:
            report.differences[node] = "in the live memory but not in the source of truth"
        elif live_hashes[node] == INVALIDATED:
            report.differences[node] = "emptied by a deletion or a move and not rebuilt yet"
        elif node not in live or node not in full:
            report.differences[node] = "has no memory rows"
        else:
            a, b = live[node].canonical(), full[node].canonical()
            differ = [
                part
                for part in ("facets", "qa", "summary", "evidence", "leaf_count")
                if json.dumps(a[part], sort_keys=True) != json.dumps(b[part], sort_keys=True)
            ]
            if live_hashes[node] != full_hashes[node]:
                differ.append("input_hash")
            if differ:
                report.differences[node] = "differs in " + ", ".join(differ)
            else:
                report.identical += 1
    texts = _vector_texts(settings)
    for node, memory in live.items():
        expected = {name: Counter(texts) for name, texts in embedded_texts(memory).items()}
        bad = [t for t in TABLES if texts[t].get(node, Counter()) != expected[t]]
        if bad:
            report.vector_mismatches[node] = "vectors differ from rows in " + ", ".join(bad)
    for table in TABLES:
        for node in set(texts[table]) - set(live):
            report.vector_mismatches[node] = f"vectors in {table} without memory rows"
    return report
