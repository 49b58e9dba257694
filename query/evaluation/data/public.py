"""Public long-term-memory benchmarks (LoCoMo, LongMemEval_S) as HLTM trees.

Each dataset becomes a three-level tree, written as a snapshot of the public contract (the
default tree schema, by depth):

- LoCoMo: dataset ``locomo`` > one conversation (``conv-26``) > one session (``conv-26-s1``) >
  documents = turns (``conv-26:D1:3``, text ``"Speaker: text"``).
- LongMemEval_S: dataset ``longmemeval`` > one question's haystack > one haystack session
  (``<qid>-<session_id>``) > documents = turns (``<session>:<turn_index>``). Doc ids carry the
  session because the same session id occurs in several questions' haystacks, and doc ids must
  be unique in a snapshot.

``limit`` counts samples, and only those are built: the first N conversations (LoCoMo, with all
their QA), or N questions (LongMemEval, each its own haystack) taken round-robin over question
types in file order, because the file is sorted by type (``--limit 6`` covers all six).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hltm_resources.ids import MAX_ID_LEN, is_doc_id, is_raw_id
from hltm_resources.schema import DEFAULT_SCHEMA, DOCUMENTS, TreeSchema
from query.evaluation import metrics

BENCHMARKS = ("locomo", "longmemeval")
LOCOMO_CATEGORIES = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}

_SESSION_KEY = re.compile(r"session_(\d+)")
_NOT_RAW = re.compile(r"[^A-Za-z0-9_.@-]+")
_NOT_DOC = re.compile(r"[^A-Za-z0-9_.@:#/-]+")


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
    asked_at: str = ""  # LongMemEval's question_date: when the question is asked


@dataclass
class PublicData:
    """A benchmark as the rows of a three-level tree (dataset > conversation > session, with
    turns as documents) plus what scoring needs (turn order, texts, gold). The rows become a
    snapshot of ``schema`` (the default tree) by depth: :func:`write_public_snapshot`."""

    benchmark: str
    schema: TreeSchema = DEFAULT_SCHEMA
    #: (id, name) of the root.
    datasets: list[tuple[str, str]] = field(default_factory=list)
    #: (id, dataset id, name): a LoCoMo conversation, a LongMemEval question's haystack.
    conversations: list[tuple[str, str, str]] = field(default_factory=list)
    #: (id, conversation id, name, updated_at): the leaves.
    sessions: list[tuple[str, str, str, str]] = field(default_factory=list)
    #: (doc id, session id, text, updated_at): one per turn.
    turns: list[tuple[str, str, str, str]] = field(default_factory=list)
    questions: list[PublicQuestion] = field(default_factory=list)
    session_turns: dict[str, list[str]] = field(default_factory=dict)
    doc_session: dict[str, str] = field(default_factory=dict)
    doc_text: dict[str, str] = field(default_factory=dict)
    doc_unit: dict[str, str] = field(default_factory=dict)  # LoCoMo: dia id
    original_session: dict[str, str] = field(default_factory=dict)  # LongMemEval: session id
    malformed_evidence: int = 0
    _position: dict[str, int] = field(default_factory=dict, repr=False)

    def scope(self, conversation: str) -> str:
        """The node id a conversation's questions are asked at."""
        return f"{self.schema.levels[1].name}:{conversation}"

    def position(self, doc_id: str) -> int:
        """A turn's index in its session."""
        if not self._position:
            self._position = {
                d: i for turns in self.session_turns.values() for i, d in enumerate(turns)
            }
        return self._position[doc_id]

    def add_session(self, session: str, conversation: str, name: str, updated_at: str) -> None:
        self.sessions.append((session, conversation, name, updated_at))
        self.session_turns[session] = []

    def add_turn(
        self, doc_id: str, session: str, text: str, updated_at: str, unit: str | None = None
    ) -> None:
        self.turns.append((doc_id, session, text, updated_at))
        self.session_turns.setdefault(session, []).append(doc_id)
        self.doc_session[doc_id] = session
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
    data.datasets.append(("locomo", "LoCoMo"))
    conversations: set[str] = set()
    sessions_seen: set[str] = set()
    docs: set[str] = set()
    for rec in records:
        conv = rec["conversation"]
        if not isinstance(conv, dict) or not isinstance(rec["qa"], list):
            raise ValueError(
                f"{path} is not in the locomo layout: {rec['sample_id']!r} needs a "
                "conversation object and a qa list"
            )
        conversation = safe_id(rec["sample_id"], conversations)
        speakers = " & ".join(str(conv[k]) for k in ("speaker_a", "speaker_b") if k in conv)
        name = f"{speakers} ({rec['sample_id']})" if speakers else conversation
        data.conversations.append((conversation, "locomo", name))
        known: set[str] = set()
        # Only session_N keys hold turns: some conversations have date keys with no session.
        sessions = sorted(
            (int(m.group(1)), k)
            for k in conv
            if (m := _SESSION_KEY.fullmatch(k)) and isinstance(conv[k], list)
        )
        for n, key in sessions:
            date = str(conv.get(f"{key}_date_time") or "")
            session = safe_id(f"{conversation}-s{n}", sessions_seen)
            name = f"session {n} ({date})" if date else f"session {n}"
            data.add_session(session, conversation, name, date)
            for turn in conv[key]:
                dia = str(turn.get("dia_id", ""))
                norm = metrics.normalize_dia_ids([dia])[0]
                unit = norm[0] if norm else dia
                known.add(unit)
                text = f"{turn.get('speaker', '')}: {turn.get('text', '')}"
                if turn.get("blip_caption"):
                    text += f" [image: {turn['blip_caption']}]"
                doc = safe_id(f"{rec['sample_id']}:{dia}", docs, doc=True)
                data.add_turn(doc, session, text, date, unit)
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
                    f"{conversation}:{i}",
                    data.scope(conversation),
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
    data.datasets.append(("longmemeval", "LongMemEval_S"))
    conversations: set[str] = set()
    sessions_seen: set[str] = set()
    for rec in records:
        qid = str(rec["question_id"])
        haystack = safe_id(qid, conversations)
        data.conversations.append((haystack, "longmemeval", f"haystack of question {qid}"))
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
            # A haystack may list the same session id twice: the leaf id is made unique.
            session = safe_id(f"{qid}-{sid}", sessions_seen)
            data.add_session(session, haystack, f"{sid} ({date})", str(date))
            data.original_session[session] = str(sid)
            for i, turn in enumerate(turns):
                doc = f"{session}:{i}"
                text = f"{turn.get('role', '')}: {turn.get('content', '')}"
                data.add_turn(doc, session, text, str(date))
                if turn.get("has_answer"):
                    gold_turns.append(doc)
        gold = tuple(str(s) for s in rec["answer_session_ids"] or ())
        skip = "abstention" if qid.endswith("_abs") else (None if gold else "no_evidence")
        answer = rec.get("answer")
        data.questions.append(
            PublicQuestion(
                qid,
                data.scope(haystack),
                str(rec["question"]),
                None if answer is None else str(answer),
                str(rec["question_type"]),
                gold,
                tuple(gold_turns),
                skip,
                str(rec.get("question_date") or ""),
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
    """Write ``data`` as the snapshot files of its tree schema, level by depth."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    schema = data.schema
    levels = (data.datasets, data.conversations, data.sessions)
    rows = {
        lv.file: [dict(zip(schema.fields(lv.name), row, strict=True)) for row in level]
        for lv, level in zip(schema.levels, levels, strict=True)
    }
    rows[f"{DOCUMENTS}.jsonl"] = [
        dict(zip(schema.document_fields, (doc, session, "turn", text, date), strict=True))
        for doc, session, text, date in data.turns
    ]
    for file, items in rows.items():
        with (directory / file).open("w", encoding="utf-8") as fh:
            for row in items:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    return directory
