"""Adaptation (paper section 3.6): mine the query log so memory precomputes what users ask.

Over a sliding window of ``query_log``:

1. each question becomes a template: facet values found in it (the memory's own vocabulary)
   are replaced by ``<key>`` slots, e.g. "which openings required <skill>";
2. near-duplicate templates are clustered by embedding (cosine >= ``cluster_cosine``);
3. a pattern is kept when it is supported by at least ``min_queries`` distinct questions
   *and* ``min_scopes`` distinct scopes (so one user asking the same thing a hundred times
   does not make a pattern); salient facet names are the keys the retrievers matched for those
   queries, with the same thresholds.

Mined hints become a versioned *proposal* (table ``adapt_hints`` and a readable JSON file under
``<home>/hints/``). Approving it makes it active: the hints version is part of every node's
input hash, so the next index (or the sensor) rebuilds what it changes. ``auto_approve`` skips
the review for non-sensitive deployments.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import numpy as np

from hltm_resources.config import Settings
from hltm_resources.embedding import Embedder, make_embedder
from hltm_resources.engines.base import ScopeVocabulary
from hltm_resources.engines.extractive.questions import parse_question
from hltm_resources.stores import database
from hltm_resources.stores.lock import home_lock
from hltm_resources.text import collapse_ws, fold

SCHEMA = """
CREATE TABLE IF NOT EXISTS adapt_hints (
    version INTEGER NOT NULL, status VARCHAR NOT NULL, created_at TIMESTAMP NOT NULL,
    approved_at TIMESTAMP, window_start TIMESTAMP, window_end TIMESTAMP, queries INTEGER,
    params VARCHAR, patterns VARCHAR NOT NULL, facets VARCHAR NOT NULL);
"""


@dataclass(frozen=True)
class MiningParams:
    window_days: float = 30.0
    min_queries: int = 3
    min_scopes: int = 2
    cluster_cosine: float = 0.9
    max_patterns: int = 20

    def as_dict(self) -> dict:
        return {
            "window_days": self.window_days,
            "min_queries": self.min_queries,
            "min_scopes": self.min_scopes,
            "cluster_cosine": self.cluster_cosine,
            "max_patterns": self.max_patterns,
        }


@dataclass
class Proposal:
    version: int
    patterns: list[dict] = field(default_factory=list)
    facets: list[dict] = field(default_factory=list)
    queries: int = 0
    status: str = "proposed"

    def as_dict(self) -> dict:
        return {
            "version": self.version,
            "status": self.status,
            "queries": self.queries,
            "patterns": self.patterns,
            "facets": self.facets,
        }


def ensure_schema(con) -> None:
    con.execute(SCHEMA)


_PUNCT = re.compile(r"[^\w<>\s-]")


def to_template(question: str, vocabulary: ScopeVocabulary) -> tuple[str, list[str]]:
    """The question with its stated facet values replaced by ``<key>`` slots, and the keys."""
    parsed = parse_question(question, vocabulary)
    text = question
    keys = []
    for m in sorted((m for m in parsed.micro if m.value), key=lambda m: -len(m.value or "")):
        pattern = re.compile(re.escape(m.value or ""), re.I)
        if pattern.search(text):
            text = pattern.sub(f"<{m.key}>", text)
            keys.append(m.key)
        else:  # stated with other punctuation or casing: replace the folded tokens
            folded = fold(m.value or "")
            text = re.sub(
                r"\b" + r"\W+".join(map(re.escape, folded.split())) + r"\b",
                f"<{m.key}>",
                text,
                flags=re.I,
            )
            keys.append(m.key)
    template = collapse_ws(_PUNCT.sub(" ", text.lower())).strip()
    return template, keys


def _vocabulary(con, count_key: str) -> ScopeVocabulary:
    values: dict[str, list[str]] = {}
    for key, value in con.execute(
        "SELECT DISTINCT key, value FROM mem_facets WHERE key <> ? ORDER BY key, value",
        [count_key],
    ).fetchall():
        values.setdefault(key, []).append(value)
    return ScopeVocabulary(values, (count_key,))


def _cluster(templates: list[str], embedder: Embedder, threshold: float) -> list[int]:
    """Greedy clustering: each template joins the first earlier centre within ``threshold``."""
    if not templates:
        return []
    vecs = embedder.embed(templates)
    centres: list[int] = []
    labels = []
    for i, v in enumerate(vecs):
        best = -1
        for c in centres:
            if float(np.dot(v, vecs[c])) >= threshold:
                best = c
                break
        if best == -1:
            centres.append(i)
            best = i
        labels.append(best)
    return labels


def mine(
    settings: Settings,
    params: MiningParams = MiningParams(),
    now: datetime | None = None,
    embedder: Embedder | None = None,
) -> Proposal:
    """Patterns and salient facet names with support, from the window of the query log."""
    now = now or datetime.now(UTC).replace(tzinfo=None)
    start = now - timedelta(days=params.window_days)
    with database.connect(settings.duckdb_path, read_only=True) as con:
        rows = con.execute(
            "SELECT scope, question, matched_keys FROM query_log "
            "WHERE asked_at >= ? AND asked_at <= ? ORDER BY asked_at",
            [start, now],
        ).fetchall()
        vocabulary = _vocabulary(con, settings.schema.leaf_count_key)
    # One (scope, question) pair is one query, however often it was asked.
    distinct: dict[tuple[str, str], list[str]] = {}
    for scope, question, keys in rows:
        distinct.setdefault((scope, collapse_ws(question)), list(keys or []))
    items = []
    for (scope, question), keys in distinct.items():
        template, slots = to_template(question, vocabulary)
        items.append((scope, question, template, slots, keys))
    unique_templates = sorted({t for _, _, t, _, _ in items})
    labels = _cluster(unique_templates, embedder or make_embedder(settings), params.cluster_cosine)
    centre_of = {t: unique_templates[c] for t, c in zip(unique_templates, labels, strict=True)}
    clusters: dict[str, list] = defaultdict(list)
    for item in items:
        clusters[centre_of[item[2]]].append(item)
    patterns = []
    for members in clusters.values():
        scopes = {m[0] for m in members}
        counts: dict[str, int] = defaultdict(int)
        for m in members:
            counts[m[2]] += 1
        template = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
        if len(members) >= params.min_queries and len(scopes) >= params.min_scopes:
            patterns.append(
                {
                    "pattern": template,
                    "support_queries": len(members),
                    "support_scopes": len(scopes),
                    "variants": sorted(counts)[:5],
                    "examples": sorted({m[1] for m in members})[:3],
                }
            )
    patterns.sort(key=lambda p: (-p["support_queries"], p["pattern"]))
    key_queries: dict[str, int] = defaultdict(int)
    key_scopes: dict[str, set] = defaultdict(set)
    for scope, _, _, slots, keys in items:
        for key in set(slots) | set(keys):
            key_queries[key] += 1
            key_scopes[key].add(scope)
    facets = [
        {"key": k, "support_queries": key_queries[k], "support_scopes": len(key_scopes[k])}
        for k in key_queries
        if key_queries[k] >= params.min_queries and len(key_scopes[k]) >= params.min_scopes
    ]
    facets.sort(key=lambda f: (-f["support_queries"], f["key"]))
    return Proposal(0, patterns[: params.max_patterns], facets, queries=len(distinct))


def active(con) -> Proposal | None:
    ensure_schema(con)
    row = con.execute(
        "SELECT version, patterns, facets, queries FROM adapt_hints "
        "WHERE status = 'active' ORDER BY version DESC LIMIT 1"
    ).fetchone()
    if row is None:
        return None
    return Proposal(row[0], json.loads(row[1]), json.loads(row[2]), row[3], "active")


def latest_proposal(con) -> Proposal | None:
    ensure_schema(con)
    row = con.execute(
        "SELECT version, patterns, facets, queries, status FROM adapt_hints "
        "ORDER BY version DESC LIMIT 1"
    ).fetchone()
    if row is None:
        return None
    return Proposal(row[0], json.loads(row[1]), json.loads(row[2]), row[3], row[4])


def _same(a: Proposal | None, b: Proposal) -> bool:
    if a is None:
        return not b.patterns and not b.facets
    return [p["pattern"] for p in a.patterns] == [p["pattern"] for p in b.patterns] and [
        f["key"] for f in a.facets
    ] == [f["key"] for f in b.facets]


def propose(
    settings: Settings,
    params: MiningParams = MiningParams(),
    auto_approve: bool = False,
    now: datetime | None = None,
    embedder: Embedder | None = None,
) -> tuple[Proposal, bool]:
    """Mine and store a new proposal unless it equals the active hints; (proposal, created)."""
    mined = mine(settings, params, now, embedder)
    with home_lock(settings, "adapt"):
        return _store(settings, mined, params, auto_approve, now)


def _store(
    settings: Settings,
    mined: Proposal,
    params: MiningParams,
    auto_approve: bool,
    now: datetime | None,
) -> tuple[Proposal, bool]:
    database.init_schema(settings.duckdb_path, settings.schema)
    with database.connect(settings.duckdb_path) as con, database.transaction(con):
        ensure_schema(con)
        current = active(con)
        if _same(current, mined):
            return (current or mined), False
        version = con.execute("SELECT coalesce(max(version), 0) + 1 FROM adapt_hints").fetchone()[0]
        mined.version = version
        stamp = now or datetime.now(UTC).replace(tzinfo=None)
        con.execute(
            "INSERT INTO adapt_hints VALUES (?, 'proposed', ?, NULL, ?, ?, ?, ?, ?, ?)",
            [
                version,
                stamp,
                stamp - timedelta(days=params.window_days),
                stamp,
                mined.queries,
                json.dumps(params.as_dict()),
                json.dumps(mined.patterns),
                json.dumps(mined.facets),
            ],
        )
    write_file(settings, mined)
    if auto_approve:
        approve(settings, version)
        mined.status = "active"
    return mined, True


def approve(settings: Settings, version: int) -> Proposal:
    """Activate a proposal (the previous active one is superseded)."""
    with home_lock(settings, "adapt"):
        return _approve(settings, version)


def _approve(settings: Settings, version: int) -> Proposal:
    with database.connect(settings.duckdb_path) as con, database.transaction(con):
        ensure_schema(con)
        row = con.execute("SELECT status FROM adapt_hints WHERE version = ?", [version]).fetchone()
        if row is None:
            known = [r[0] for r in con.execute("SELECT version FROM adapt_hints ORDER BY 1")]
            raise ValueError(
                f"no hints proposal version {version}; known versions: "
                f"{known or 'none (run hltm adapt first)'}"
            )
        con.execute("UPDATE adapt_hints SET status = 'superseded' WHERE status = 'active'")
        con.execute(
            "UPDATE adapt_hints SET status = 'active', approved_at = now() WHERE version = ?",
            [version],
        )
        proposal = active(con)
    assert proposal is not None
    write_file(settings, proposal)
    return proposal


def write_file(settings: Settings, proposal: Proposal) -> None:
    """The readable copy of a proposal: ``<home>/hints/v<N>.json``."""
    folder = settings.home / "hints"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"v{proposal.version}.json").write_text(
        json.dumps(proposal.as_dict(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )


def review(settings: Settings) -> dict:
    """The latest proposal and its diff against the active hints."""
    with database.connect(settings.duckdb_path) as con:
        latest, current = latest_proposal(con), active(con)
    if latest is None:
        return {"version": None, "patterns": [], "facets": [], "diff": {}, "active_version": None}
    old_p = {p["pattern"] for p in current.patterns} if current else set()
    old_f = {f["key"] for f in current.facets} if current else set()
    new_p = {p["pattern"] for p in latest.patterns}
    new_f = {f["key"] for f in latest.facets}
    return latest.as_dict() | {
        "active_version": current.version if current else None,
        "diff": {
            "patterns_added": sorted(new_p - old_p),
            "patterns_removed": sorted(old_p - new_p),
            "facets_added": sorted(new_f - old_f),
            "facets_removed": sorted(old_f - new_f),
        },
    }
