"""Public long-term-memory benchmarks (LoCoMo, LongMemEval_S) in the HLTM tree.

Each dataset is written as a snapshot of the public contract and built with the plain indexer:

- LoCoMo: account ``locomo`` > seat = one conversation (``conv-26``) > project = one session
  (``conv-26-s1``) > documents = turns (``conv-26:D1:3``, text ``"Speaker: text"``).
- LongMemEval_S: account ``longmemeval`` > seat = one question's haystack > project = one haystack
  session (``<qid>-<session_id>``) > documents = turns (``<project_id>:<turn_index>``). Doc ids
  carry the project id because the same session id occurs in several questions' haystacks, and
  doc ids must be unique in a snapshot.

Two systems answer every question at its seat scope, in the same run:

- ``hltm``: the three views of :meth:`Memory.retrieve` (through :meth:`Memory.ask` on LoCoMo,
  which also answers), items ranked by score across views, each item contributing its
  provenance document ids. Leaf items cite turns directly (in turn order when an item cites
  several). Parent items cite child node ids; they are skipped by default
  (``PARENT_ITEMS = "skip"``): expanding ``project:X`` into every turn of the session would let
  one seat-level item fill the top k with a whole session. ``"expand"`` is available.
- ``flat_rag``: fixed-size chunks of the turns, same embedder, searched inside the same seat
  subtree (:class:`query.evaluation.runners.baselines.ChunkIndex`); ranked doc ids in chunk order.

Metrics (ratios are fractions in [0, 1]):

- LoCoMo: evidence recall@k over dialog ids (categories 1-4; 5 is adversarial and not scored),
  per category and overall; ``context_tokens@k`` = tokens of the distinct turns among the first
  k ranked turns; answer token-F1 (categories 1-4).
- LongMemEval_S: session recall@k of ``answer_session_ids`` (sessions ranked by the first
  appearance of any of their turns), per ``question_type`` and overall; abstention questions
  (``_abs``) are not scored. ``turn_recall@k`` of the ``has_answer`` turns;
  ``context_tokens@k`` = tokens of the first k ranked *turns* (not sessions, whose turns would
  be most of the haystack).
- Latency p50 / p95 per system.

``limit`` counts samples, and only those are built: the first N conversations (LoCoMo, with all
their QA), or N questions (LongMemEval, each its own haystack) taken round-robin over question
types in file order, because the file is sorted by type (``--limit 6`` covers all six).
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from hltm_resources.config import Settings
from hltm_resources.engines.base import ContextItem, RetrievedContext
from hltm_resources.ids import MAX_ID_LEN, is_doc_id, is_raw_id
from hltm_resources.tokens import count_tokens, encoding_name
from query.evaluation import metrics
from query.evaluation.runners.baselines import ChunkIndex, read_extractively

if TYPE_CHECKING:
    from tqdm import tqdm

BENCHMARKS = ("locomo", "longmemeval")
SYSTEMS = ("hltm", "flat_rag")
KS = (5, 10, 25)
#: Bump when the snapshot layout changes, so a sub-home built by an older loader is rebuilt.
LOADER_VERSION = "1"
#: How parent-level items (whose provenance is child node ids) enter the ranked turn list.
PARENT_ITEMS = "skip"
#: Chunks the flat-RAG reader answers from (as in the hiring benchmark).
FLAT_RAG_READ_K = 10
#: Chunks fetched to rank turns (LoCoMo turns are one chunk each) or sessions (LongMemEval turns
#: are long; enough chunks to rank more than max(KS) sessions).
FLAT_RAG_SEARCH_K = {"locomo": 60, "longmemeval": 600}
LOCOMO_CATEGORIES = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
LOCOMO_ANCHOR = {5: 0.588, 10: 0.675, 25: 0.799}

_SESSION_KEY = re.compile(r"session_(\d+)")
_NOT_RAW = re.compile(r"[^A-Za-z0-9_.@-]+")
_NOT_DOC = re.compile(r"[^A-Za-z0-9_.@:#/-]+")


# -- loading ----------------------------------------------------------------------------------


@dataclass
class PublicQuestion:
    """One benchmark question with its scope and gold."""

    qid: str
    scope: str
    question: str
    answer: str | None
    group: str  # LoCoMo category number, LongMemEval question_type
    gold: tuple[str, ...]  # LoCoMo dia ids, LongMemEval original session ids
    gold_turns: tuple[str, ...] = ()  # LongMemEval has_answer doc ids
    skip: str | None = None  # why it is not scored: adversarial, abstention, no_evidence


@dataclass
class PublicData:
    """A benchmark as snapshot rows plus what scoring needs (turn order, texts, gold)."""

    benchmark: str
    accounts: list[dict] = field(default_factory=list)
    seats: list[dict] = field(default_factory=list)
    projects: list[dict] = field(default_factory=list)
    documents: list[dict] = field(default_factory=list)
    questions: list[PublicQuestion] = field(default_factory=list)
    project_turns: dict[str, list[str]] = field(default_factory=dict)
    doc_project: dict[str, str] = field(default_factory=dict)
    doc_text: dict[str, str] = field(default_factory=dict)
    doc_unit: dict[str, str] = field(default_factory=dict)  # LoCoMo: dia id
    project_session: dict[str, str] = field(default_factory=dict)  # LongMemEval: session id
    malformed_evidence: int = 0
    _position: dict[str, int] = field(default_factory=dict, repr=False)

    def position(self, doc_id: str) -> int:
        """A turn's index in its session."""
        if not self._position:
            self._position = {
                d: i for turns in self.project_turns.values() for i, d in enumerate(turns)
            }
        return self._position[doc_id]

    def add_document(
        self, doc_id: str, project_id: str, text: str, updated_at: str, unit: str | None = None
    ) -> None:
        self.documents.append(
            {
                "doc_id": doc_id,
                "project_id": project_id,
                "kind": "turn",
                "text": text,
                "updated_at": updated_at,
            }
        )
        self.project_turns.setdefault(project_id, []).append(doc_id)
        self.doc_project[doc_id] = project_id
        self.doc_text[doc_id] = text
        if unit is not None:
            self.doc_unit[doc_id] = unit


def safe_id(value: object, used: set[str] | None = None, doc: bool = False) -> str:
    """``value`` mapped onto the id charset (unique within ``used``, which it updates)."""
    limit = 256 if doc else MAX_ID_LEN
    out = (_NOT_DOC if doc else _NOT_RAW).sub("-", str(value))
    out = re.sub(r"\.{2,}", ".", out).lstrip("_.@:#/-")[:limit] or "x"
    base, n = out, 1
    while used is not None and out in used:
        n += 1
        suffix = f"-{n}"
        out = base[: limit - len(suffix)] + suffix
    if used is not None:
        used.add(out)
    assert is_doc_id(out) if doc else is_raw_id(out), out
    return out


def _read_json_list(path: Path, benchmark: str, fields: Sequence[str]) -> list[dict]:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"{benchmark} data file {path} does not exist: pass the dataset "
            "file with --data (see ../shared/data/README.md)"
        )
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(
            f"{path} is not a JSON file ({exc}): pass the {benchmark} dataset"
        ) from exc
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise ValueError(
            f"{path} is not in the {benchmark} layout: expected a JSON list of records"
        )
    for i, r in enumerate(records):
        missing = [f for f in fields if f not in r]
        if missing:
            raise ValueError(
                f"{path} is not in the {benchmark} layout: record {i} has no " + ", ".join(missing)
            )
    return records


def load_locomo(path: Path, limit: int | None = None) -> PublicData:
    """LoCoMo conversations (the first ``limit`` of them) as a tree of sessions of turns."""
    records = _read_json_list(path, "locomo", ("sample_id", "conversation", "qa"))
    if limit:
        records = records[:limit]
    data = PublicData("locomo")
    data.accounts.append({"account_id": "locomo", "name": "LoCoMo"})
    seats: set[str] = set()
    projects: set[str] = set()
    docs: set[str] = set()
    for rec in records:
        conv = rec["conversation"]
        if not isinstance(conv, dict) or not isinstance(rec["qa"], list):
            raise ValueError(
                f"{path} is not in the locomo layout: {rec['sample_id']!r} needs a "
                "conversation object and a qa list"
            )
        seat = safe_id(rec["sample_id"], seats)
        speakers = " & ".join(str(conv[k]) for k in ("speaker_a", "speaker_b") if k in conv)
        data.seats.append(
            {
                "seat_id": seat,
                "account_id": "locomo",
                "name": f"{speakers} ({rec['sample_id']})" if speakers else seat,
            }
        )
        known: set[str] = set()
        # Only session_N keys hold turns: some conversations have date keys with no session.
        sessions = sorted(
            (int(m.group(1)), k)
            for k in conv
            if (m := _SESSION_KEY.fullmatch(k)) and isinstance(conv[k], list)
        )
        for n, key in sessions:
            date = str(conv.get(f"{key}_date_time") or "")
            project = safe_id(f"{seat}-s{n}", projects)
            name = f"session {n} ({date})" if date else f"session {n}"
            data.projects.append(
                {"project_id": project, "seat_id": seat, "name": name, "updated_at": date}
            )
            data.project_turns[project] = []
            for turn in conv[key]:
                dia = str(turn.get("dia_id", ""))
                norm = metrics.normalize_dia_ids([dia])[0]
                unit = norm[0] if norm else dia
                known.add(unit)
                text = f"{turn.get('speaker', '')}: {turn.get('text', '')}"
                if turn.get("blip_caption"):
                    text += f" [image: {turn['blip_caption']}]"
                doc = safe_id(f"{rec['sample_id']}:{dia}", docs, doc=True)
                data.add_document(doc, project, text, date, unit)
        for i, qa in enumerate(rec["qa"]):
            if not isinstance(qa, dict) or "question" not in qa:
                raise ValueError(
                    f"{path} is not in the locomo layout: qa item {i} of "
                    f"{rec['sample_id']!r} has no question"
                )
            category = int(qa.get("category", 0))
            gold, bad = metrics.normalize_dia_ids(qa.get("evidence") or [], known=known)
            skip = None
            if category == 5:
                skip = "adversarial"
            elif category not in LOCOMO_CATEGORIES:
                skip = "unknown_category"
            else:
                data.malformed_evidence += bad
                if not gold:
                    skip = "no_evidence"
            answer = qa.get("answer")
            data.questions.append(
                PublicQuestion(
                    f"{seat}:{i}",
                    f"seat:{seat}",
                    str(qa["question"]),
                    None if answer is None else str(answer),
                    str(category),
                    tuple(gold),
                    skip=skip,
                )
            )
    return data


def stratified(records: Sequence[dict], limit: int | None, key: str) -> list[dict]:
    """The first ``limit`` records taking one of each ``key`` value in turn (file order)."""
    if not limit or limit >= len(records):
        return list(records)
    groups: dict[str, list[int]] = {}
    for i, r in enumerate(records):
        groups.setdefault(str(r[key]), []).append(i)
    picked: list[int] = []
    for rank in range(max(len(g) for g in groups.values())):
        picked += [g[rank] for g in groups.values() if rank < len(g)]
    return [records[i] for i in sorted(picked[:limit])]


def load_longmemeval(path: Path, limit: int | None = None) -> PublicData:
    """LongMemEval_S questions (``limit`` of them, see :func:`stratified`), one seat per
    question's haystack."""
    fields = (
        "question_id",
        "question_type",
        "question",
        "answer",
        "answer_session_ids",
        "haystack_session_ids",
        "haystack_dates",
        "haystack_sessions",
    )
    # The file is sorted by question type: the first N questions would all be one type.
    records = stratified(_read_json_list(path, "longmemeval", fields), limit, "question_type")
    data = PublicData("longmemeval")
    data.accounts.append({"account_id": "longmemeval", "name": "LongMemEval_S"})
    seats: set[str] = set()
    projects: set[str] = set()
    for rec in records:
        qid = str(rec["question_id"])
        seat = safe_id(qid, seats)
        data.seats.append(
            {"seat_id": seat, "account_id": "longmemeval", "name": f"haystack of question {qid}"}
        )
        ids, dates, sessions = (
            rec["haystack_session_ids"],
            rec["haystack_dates"],
            rec["haystack_sessions"],
        )
        if not len(ids) == len(dates) == len(sessions):
            raise ValueError(
                f"{path} is not in the longmemeval layout: question {qid} has "
                f"{len(ids)} session ids, {len(dates)} dates, {len(sessions)} "
                "sessions"
            )
        gold_turns: list[str] = []
        for sid, date, turns in zip(ids, dates, sessions, strict=True):
            # A haystack may list the same session id twice: the project id is made unique.
            project = safe_id(f"{qid}-{sid}", projects)
            data.projects.append(
                {
                    "project_id": project,
                    "seat_id": seat,
                    "name": f"{sid} ({date})",
                    "updated_at": str(date),
                }
            )
            data.project_session[project] = str(sid)
            data.project_turns[project] = []
            for i, turn in enumerate(turns):
                doc = f"{project}:{i}"
                data.add_document(
                    doc, project, f"{turn.get('role', '')}: {turn.get('content', '')}", str(date)
                )
                if turn.get("has_answer"):
                    gold_turns.append(doc)
        gold = tuple(str(s) for s in rec["answer_session_ids"] or ())
        skip = "abstention" if qid.endswith("_abs") else (None if gold else "no_evidence")
        answer = rec.get("answer")
        data.questions.append(
            PublicQuestion(
                qid,
                f"seat:{seat}",
                str(rec["question"]),
                None if answer is None else str(answer),
                str(rec["question_type"]),
                gold,
                tuple(gold_turns),
                skip,
            )
        )
    return data


def load_public(benchmark: str, path: Path, limit: int | None = None) -> PublicData:
    """The benchmark's loader by name."""
    if benchmark == "locomo":
        return load_locomo(path, limit)
    if benchmark == "longmemeval":
        return load_longmemeval(path, limit)
    raise ValueError(f"unknown benchmark {benchmark!r}: use one of {', '.join(BENCHMARKS)}")


def write_public_snapshot(data: PublicData, directory: Path) -> Path:
    """Write ``data`` as the four JSONL files of the snapshot contract."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for name in ("accounts", "seats", "projects", "documents"):
        with (directory / f"{name}.jsonl").open("w", encoding="utf-8") as fh:
            for row in getattr(data, name):
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    return directory


# -- ranking ----------------------------------------------------------------------------------


def hltm_ranked_docs(
    context: RetrievedContext, data: PublicData, parents: str = PARENT_ITEMS
) -> list[str]:
    """Provenance turn ids of the retrieved items, by descending item score, deduplicated."""
    items: list[ContextItem] = [f for node in context.facets for f in node.facets]
    items += list(context.qa) + list(context.summaries)
    out: dict[str, None] = {}
    for item in sorted(items, key=lambda i: -i.score):  # stable: ties keep view order
        if item.level != "project":
            if parents != "expand":
                continue
            for child in item.source_ids:
                if child.startswith("project:"):
                    out.update(dict.fromkeys(data.project_turns.get(child[8:], ())))
            continue
        docs = [d for d in item.source_ids if d in data.doc_project]
        out.update(dict.fromkeys(sorted(docs, key=data.position)))
    return list(out)


def chunk_ranked_docs(chunks: Iterable) -> list[str]:
    """Doc ids in the order their first chunk ranks (chunk ids are ``doc_id#i``)."""
    return list(dict.fromkeys(c.chunk_id.rsplit("#", 1)[0] for c in chunks))


def ranked_sessions(docs: Sequence[str], data: PublicData) -> list[str]:
    """Original session ids by the first appearance of any of their turns."""
    return list(dict.fromkeys(data.project_session[data.doc_project[d]] for d in docs))


# -- running ----------------------------------------------------------------------------------


def _marker(data_path: Path, limit: int | None) -> str:
    path = Path(data_path).resolve()
    key = f"{LOADER_VERSION}|{path}|{path.stat().st_size}|{limit or 'all'}"
    return hashlib.sha256(key.encode()).hexdigest()


def prepare(
    settings: Settings,
    benchmark: str,
    data_path: Path,
    limit: int | None = None,
    bar: tqdm | None = None,
) -> tuple[Settings, PublicData, bool]:
    """Load the dataset, build its memory in a sub-home unless already built; (settings,
    data, built now)."""
    from query.evaluation.runners.build import build_memory

    data = load_public(benchmark, data_path, limit)
    if not data.questions:
        raise ValueError(f"{data_path} holds no {benchmark} questions to evaluate")
    sub = settings.with_home(settings.home / "eval" / f"{benchmark}-{limit or 'all'}")
    marker = sub.home / "public-data.txt"
    digest = _marker(data_path, limit)
    if marker.is_file() and marker.read_text() == digest:
        return sub, data, False
    if bar is not None:
        bar.set_description(f"{benchmark}: building memory of {len(data.projects)} sessions")
    sub.home.mkdir(parents=True, exist_ok=True)
    marker.unlink(missing_ok=True)  # a half-built home must not pass for a built one
    build_memory(sub, write_public_snapshot(data, sub.home / "snapshot"))
    marker.write_text(digest)
    return sub, data, True


@dataclass
class Outcome:
    """One system on one question: ranked turns, answer, latency."""

    ranked: list[str]
    answer: str | None
    latency_ms: float


def _tokens_at(ranked: Sequence[str], k: int, tokens: dict[str, int], data: PublicData) -> int:
    total = 0
    for d in ranked[:k]:
        if d not in tokens:
            tokens[d] = count_tokens(data.doc_text[d])
        total += tokens[d]
    return total


def _run_questions(
    settings: Settings, data: PublicData, rebuilt: bool, bar: tqdm | None = None
) -> dict[str, dict[str, Outcome]]:
    from query.memory import Memory

    memory = Memory(settings, log_queries=False)
    if bar is not None:
        bar.set_description(f"{data.benchmark}: embedding chunks for flat_rag")
    chunks = ChunkIndex(settings, memory.embedder, rebuild=rebuilt)
    search_k = FLAT_RAG_SEARCH_K[data.benchmark]
    answer = data.benchmark == "locomo"  # LongMemEval is scored on retrieval only
    paths: dict[str, str] = {}
    scored = [q for q in data.questions if q.skip is None]
    out: dict[str, dict[str, Outcome]] = {s: {} for s in SYSTEMS}
    memory.embedder.embed(["warm-up"])  # the model loads here, not inside a timed question
    if bar is not None:
        bar.set_description(f"{data.benchmark}: questions")
    for q in scored:
        t0 = time.perf_counter()
        if answer:
            r = memory.ask(q.question, scope=q.scope)
            assert r.retrieved is not None
            context, said = r.retrieved, r.answer
        else:
            context, said = memory.retrieve(q.question, scope=q.scope).context, None
        ms = (time.perf_counter() - t0) * 1000
        out["hltm"][q.qid] = Outcome(hltm_ranked_docs(context, data), said, ms)
        t0 = time.perf_counter()
        if q.scope not in paths:
            paths[q.scope] = memory.resolve(q.scope).path
        hits = chunks.search(q.question, search_k, paths[q.scope])
        said = read_extractively(q.question, hits[:FLAT_RAG_READ_K]).answer if answer else None
        ms = (time.perf_counter() - t0) * 1000
        out["flat_rag"][q.qid] = Outcome(chunk_ranked_docs(hits), said, ms)
        if bar is not None:
            bar.update(1)
    return out


def _mean(values: Sequence[float]) -> tuple[float, float]:
    mean, sem = metrics.mean_sem(values)
    return round(mean, 4), round(sem, 4)


def score(data: PublicData, outcomes: dict[str, dict[str, Outcome]]) -> dict[str, dict]:
    """Per system, the metrics of the module docstring."""
    scored = [q for q in data.questions if q.skip is None]
    skipped: dict[str, int] = defaultdict(int)
    for q in data.questions:
        if q.skip:
            skipped[q.skip] += 1
    tokens: dict[str, int] = {}
    result: dict[str, dict] = {}
    for system, per_q in outcomes.items():
        recall: dict[str, list[float]] = defaultdict(list)
        ctx: dict[int, list[int]] = defaultdict(list)
        f1s, lat, length = [], [], []
        for q in scored:
            o = per_q[q.qid]
            lat.append(o.latency_ms)
            length.append(len(o.ranked))
            if data.benchmark == "locomo":
                units = list(dict.fromkeys(data.doc_unit[d] for d in o.ranked))
                turn_gold: tuple[str, ...] = ()
            else:
                units = ranked_sessions(o.ranked, data)
                turn_gold = q.gold_turns
            for k in KS:
                r = metrics.recall_at_k(units, q.gold, k)
                recall[f"recall@{k}"].append(r)
                recall[f"recall@{k}_{_group_key(data, q.group)}"].append(r)
                if turn_gold:
                    recall[f"turn_recall@{k}"].append(metrics.recall_at_k(o.ranked, turn_gold, k))
                ctx[k].append(_tokens_at(o.ranked, k, tokens, data))
            if o.answer is not None and q.answer is not None:
                f1s.append(metrics.token_f1(o.answer, q.answer))
        row: dict[str, float | int] = {"questions": len(scored)}
        for name in sorted(recall, key=_metric_order):
            row[name], sem = _mean(recall[name])
            if "_" not in name.split("@")[1]:
                row[f"{name}_sem"] = sem
        for k in KS:
            row[f"context_tokens@{k}"] = round(sum(ctx[k]) / max(1, len(ctx[k])), 1)
        if f1s:
            row["token_f1"], row["token_f1_sem"] = _mean(f1s)
        row["ranked_turns_mean"] = round(sum(length) / max(1, len(length)), 1)
        row["latency_p50_ms"] = round(metrics.percentile(lat, 50), 2)
        row["latency_p95_ms"] = round(metrics.percentile(lat, 95), 2)
        if data.benchmark == "locomo":
            row["malformed_evidence"] = data.malformed_evidence
            row["adversarial_skipped"] = skipped["adversarial"]
        else:
            row["abstention_skipped"] = skipped["abstention"]
        row["no_evidence_skipped"] = skipped["no_evidence"]
        result[system] = row
    return result


def _group_key(data: PublicData, group: str) -> str:
    return f"cat{group}" if data.benchmark == "locomo" else group


def _metric_order(name: str) -> tuple:
    base, _, group = name.partition("_") if name.startswith("recall") else (name, "", "")
    kind = 1 if name.startswith("turn_") else 0
    k = int(re.search(r"@(\d+)", name).group(1))  # type: ignore[union-attr]
    return (kind, group != "", group, k, base)


# -- reporting --------------------------------------------------------------------------------


def markdown(
    data: PublicData, scores: dict[str, dict], data_path: Path, home: Path, limit: int | None = None
) -> str:
    """Result tables (systems as rows) with the definitions they need."""
    first = next(iter(scores.values()))
    unit = "evidence (dialog-turn)" if data.benchmark == "locomo" else "session"
    sample = "conversations" if data.benchmark == "locomo" else "questions, round-robin by type"
    limited = f", limit {limit} {sample}" if limit else ""
    lines = [
        f"## {data.benchmark}: {first['questions']} scored questions from {data_path} "
        f"({len(data.seats)} seats, {len(data.projects)} sessions, "
        f"{len(data.documents)} turns{limited}; memory in {home})",
        "",
    ]
    cols = [f"recall@{k}" for k in KS] + [f"context_tokens@{k}" for k in KS]
    if data.benchmark == "longmemeval":
        cols[len(KS) : len(KS)] = [f"turn_recall@{k}" for k in KS]
    extra = ["token_f1"] if "token_f1" in first else []
    head = ["system", *cols, *extra, "ranked turns", "p50 ms", "p95 ms"]
    lines += ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for system, row in scores.items():
        cells = []
        for c in cols + extra:
            v = row.get(c)
            if v is None:
                cells.append("-")
            elif c.startswith("context_tokens"):
                cells.append(f"{v:.0f}")
            elif f"{c}_sem" in row:
                cells.append(f"{v:.3f} ± {row[f'{c}_sem']:.3f}")
            else:
                cells.append(f"{v:.3f}")
        cells += [
            f"{row['ranked_turns_mean']:.1f}",
            f"{row['latency_p50_ms']:.1f}",
            f"{row['latency_p95_ms']:.1f}",
        ]
        lines.append(f"| {system} | " + " | ".join(cells) + " |")
    groups = sorted({_group_key(data, q.group) for q in data.questions if q.skip is None})
    if groups:
        lines += [
            "",
            f"{unit.capitalize()} recall@10 by "
            + ("category" if data.benchmark == "locomo" else "question type")
            + ":",
            "",
        ]
        n = defaultdict(int)
        for q in data.questions:
            if q.skip is None:
                n[_group_key(data, q.group)] += 1
        names = [
            f"{g} {LOCOMO_CATEGORIES[int(g[3:])]} (n={n[g]})"
            if data.benchmark == "locomo"
            else f"{g} (n={n[g]})"
            for g in groups
        ]
        lines += ["| system | " + " | ".join(names) + " |", "|" + " --- |" * (len(groups) + 1)]
        for system, row in scores.items():
            lines.append(
                f"| {system} | "
                + " | ".join(f"{row.get(f'recall@10_{g}', float('nan')):.3f}" for g in groups)
                + " |"
            )
    lines += [
        "",
        f"Recall@k: share of gold {unit} ids among the first k distinct ranked ones "
        "(mean ± SEM over questions). context_tokens@k: tokens of the distinct turns among "
        f"the first k ranked turns ({encoding_name()}). hltm ranks its retrieved items "
        "(facets, QA, summaries) by score and lists their provenance turns; parent-level "
        f"items are {'skipped' if PARENT_ITEMS == 'skip' else 'expanded to their turns'}; "
        "its list holds only what its default retrieval returns (see ranked turns). "
        + (
            "Latency: retrieval and answer per question."
            if data.benchmark == "locomo"
            else "Latency: retrieval per question."
        ),
    ]
    if data.benchmark == "locomo":
        lines += [
            f"Categories 1-4 scored; {first['adversarial_skipped']} adversarial (5) and "
            f"{first['no_evidence_skipped']} without valid evidence not scored; "
            f"{first['malformed_evidence']} malformed or unknown evidence ids skipped. "
            "token_f1 is the offline extractive answer against the gold answer.",
            "Published anchor (LoCoMo paper, RAG over dialog turns, not our number): "
            + ", ".join(f"recall@{k} {v:.1%}" for k, v in LOCOMO_ANCHOR.items())
            + ".",
        ]
    else:
        lines += [
            f"{first['abstention_skipped']} abstention questions (_abs) not scored. "
            "turn_recall@k: gold = has_answer turns. Sessions are ranked by the first "
            "appearance of any of their turns."
        ]
    return "\n".join(lines)


def run_public(
    settings: Settings,
    benchmark: str,
    data_path: Path,
    limit: int | None = None,
    show_progress: bool = False,
) -> dict:
    """Build the benchmark's memory (once) and score hltm and flat_rag on its questions."""
    if benchmark not in BENCHMARKS:
        raise ValueError(f"unknown benchmark {benchmark!r}: use one of {', '.join(BENCHMARKS)}")
    data_path = Path(data_path)
    bar: tqdm | None = None
    if show_progress:
        from tqdm import tqdm

        # One bar from the start: building and embedding take most of a first run.
        bar = tqdm(total=None, desc=f"{benchmark}: loading {data_path.name}", unit="q")
    try:
        sub, data, rebuilt = prepare(settings, benchmark, data_path, limit, bar)
        if bar is not None:
            bar.reset(total=sum(1 for q in data.questions if q.skip is None))
        outcomes = _run_questions(sub, data, rebuilt, bar)
    finally:
        if bar is not None:
            bar.close()
    scores = score(data, outcomes)
    return {"json": scores, "markdown": markdown(data, scores, data_path, sub.home, limit)}
