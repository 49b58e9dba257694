"""Deterministic facet extraction from documents: JSON exports, "Key: value" lines and prose.

Pure functions, no model. Keys are normalized to ``snake_case`` and mapped onto a small set of
canonical keys (``title``, ``location``, ...) through an alias table, so that exports from
different applicant tracking systems aggregate onto the same facets.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from hltm_resources.engines.vocabulary import (
    FEEDBACK_KEYS,
    KEY_ALIASES,
    MULTI_KEYS,
    SENIORITY_WORDS,
    SKIP_KEY,
    canonical_key,
    canonical_value,
    key_rank,
)
from hltm_resources.models import Document, Facet
from hltm_resources.text import clean_value, fold, sentences, snake_key, split_list

_REJECT_WORDS = re.compile(
    r"\b(reject(?:ed|ing)?|declin(?:ed|ing)|passed on|pass on|"
    r"not (?:to )?(?:moving|move|going|go) forward|"
    r"did not (?:advance|proceed|progress)|not (?:advancing|proceeding)|turned down|no[- ]hire|"
    r"not a fit|decided against)\b",
    re.I,
)
_POSITIVE_DECISION = re.compile(
    r"\b(advance|advanced|hire|hired|offer|accepted|moved? forward|"
    r"next round|onsite|proceed|strong yes|yes)\b",
    re.I,
)
_NEGATIVE_DECISION = re.compile(
    r"\b(reject|rejected|declined?|no|no hire|not a fit|pass|"
    r"passed|turned down|do not hire|not moving forward)\b",
    re.I,
)
_REASON_AFTER = re.compile(
    r"\b(?:because of|because|due to|owing to|citing|reason:|as a result of|on account of)\s+"
    r"(?:(?:his|her|their|the candidate'?s?|a|an|the)\s+)?(.+)$",
    re.I,
)
_SUBJECT_VERB = re.compile(
    r"^(?:(?:he|she|they|the candidate|candidate|it)\s+)"
    r"(?:(?:had|has|have|showed|shows|was|were|is|are|did not have|didn't have|lacked|lacks)\s+)?",
    re.I,
)
_TITLE_HEADS = (
    "engineer|scientist|manager|designer|analyst|developer|architect|recruiter|specialist|"
    "consultant|administrator|director|researcher|representative|accountant|coordinator|officer|"
    "writer|strategist|technician|marketer|executive|associate|advisor|lead|sre|nurse|teacher"
)
_TITLE_IN_PROSE = re.compile(
    r"\b(?:hiring(?! manager)|hire|looking for|seeking|recruiting|searching for|search for|"
    r"need|open(?:ed)? (?:a|an|the) (?:role|position|req) for)\s+(?:an?\s+|one\s+|two\s+|three\s+)?"
    r"((?:[A-Za-z][\w/&+.-]*\s+){0,4}?(?:" + _TITLE_HEADS + r"))s?\b",
    re.I,
)
_LOCATION_IN_PROSE = re.compile(
    r"\b(?:based (?:in|out of)|located in|office in|offices in|relocate to|on-?site in|"
    r"hybrid (?:from|in)|work(?:ing)? from our|in our|position is in|role is in|job is in)\s+"
    r"((?:[A-Z][\w'\u2019.-]*)(?:(?:,\s*|\s+)(?:[A-Z][\w'\u2019.-]*)){0,3})"
)
_WORKPLACE_IN_PROSE = re.compile(
    r"\b(fully[- ]remote|remote[- ]first|remote|hybrid|on[- ]?site|in[- ]office|office[- ]based)\b",
    re.I,
)
_SKILLS_IN_PROSE = re.compile(
    r"\b(?:must[- ]have skills?|must[- ]haves?|required skills?|key skills|skills required|"
    r"requires?|hands-on experience with|experience with|proficiency in|proficient in|"
    r"expertise in)\s*:?\s+((?:[^.;\n]|\.(?=\w))+)",
    re.I,
)
#: A negation right before a phrase ("not remote", "is not a remote role", "no hybrid").
_NEGATED_BEFORE = re.compile(r"\b(?:not|no|never|n't|without|non)\b[\s-]*(?:\w+\s+){0,2}$", re.I)
_KV_LINE = re.compile(r"^\s*[-*\u2022]?\s*([A-Za-z][A-Za-z0-9 _/().&'-]{0,40}?)\s*[:=]\s*(.+?)\s*$")
_LOCATION_STOP = {"Office", "Team", "Hub", "Campus", "The", "Our", "We", "This"}


@dataclass(frozen=True)
class RawFacet:
    """A facet as found in one document, before a leaf's facets are reconciled."""

    key: str
    value: str
    doc_id: str
    structured: bool
    updated_at: str
    #: One item of a list in an export: the key holds several values, whatever its name.
    listed: bool = False


@dataclass(frozen=True)
class FeedbackEvent:
    """A candidate decision found in a feedback document."""

    doc_id: str
    candidate: str | None
    rejected: bool
    reason: str | None


#: Marks a value that was one item of a JSON array: it is never split again.
_ITEM = "\x00"


def _flatten_json(obj: object, prefix: str = "", item: bool = False) -> Iterable[tuple[str, str]]:
    if isinstance(obj, dict):  # an object in an array: each of its fields is a list item
        for key, value in obj.items():
            yield from _flatten_json(value, f"{prefix}_{key}" if prefix else str(key), item)
    elif isinstance(obj, list):
        for element in obj:
            yield from _flatten_json(element, prefix, item=True)
    elif obj is None:
        return
    elif isinstance(obj, bool):
        yield prefix, "yes" if obj else "no"
    else:
        yield prefix, (_ITEM if item else "") + str(obj)


def _split_multi(value: str) -> list[str]:
    """Items of a list written as text (``a, b and c``); JSON array items stay whole."""
    if value.startswith(_ITEM):
        return [clean_value(value[1:])]
    return split_list(value)


def is_feedback_kind(kind: str) -> bool:
    """A document kind that holds notes on candidates rather than a description of the role."""
    kind = kind.lower()
    return any(w in kind for w in ("feedback", "interview", "scorecard", "reject", "debrief"))


def _is_feedback(doc: Document) -> bool:
    return is_feedback_kind(doc.kind)


def _structured_pairs(doc: Document) -> tuple[list[tuple[str, str]], bool]:
    """Key-value pairs of a JSON or "Key: value" document, and whether it is structured."""
    text = doc.text.strip()
    if text.startswith("{"):
        try:
            obj = json.loads(text)
        except (json.JSONDecodeError, ValueError):
            obj = None
        if isinstance(obj, dict):
            return [(k, v) for k, v in _flatten_json(obj) if k], True
    lines = [ln for ln in text.splitlines() if ln.strip()]
    pairs = [(m.group(1), m.group(2)) for ln in lines if (m := _KV_LINE.match(ln))]
    structured = len(pairs) >= 2 and len(pairs) * 2 >= len(lines)
    return pairs, structured


def feedback_event(doc: Document) -> FeedbackEvent | None:
    """The candidate decision a feedback document records, if it records one."""
    if not _is_feedback(doc) and not _REJECT_WORDS.search(doc.text):
        return None
    pairs, _ = _structured_pairs(doc)
    fields: dict[str, str] = {}
    for raw_key, raw_value in pairs:
        key = canonical_key(raw_key)
        if key in ("candidate", "decision", "reason", "rejection_reason") and key not in fields:
            fields[key] = clean_value(str(raw_value).lstrip(_ITEM))
    decision = fields.get("decision", "")
    reason = fields.get("rejection_reason") or fields.get("reason")
    if decision:
        rejected = bool(_NEGATIVE_DECISION.search(decision)) and not (
            _POSITIVE_DECISION.search(decision) and not _REJECT_WORDS.search(decision)
        )
    else:
        rejected = bool(_REJECT_WORDS.search(doc.text)) or "rejection_reason" in fields
    if rejected and not reason:
        reason = _reason_from_prose(doc.text)
    candidate = fields.get("candidate")
    if not candidate:
        m = re.search(
            r"\b(?:feedback (?:for|on)|candidate:?|interviewed)\s+([A-Z][a-z]+(?: [A-Z]"
            r"[a-z'-]+){0,2})",
            doc.text,
        )
        candidate = m.group(1) if m else None
    if not rejected and not candidate:
        return None
    return FeedbackEvent(doc.doc_id, candidate, rejected, reason if rejected else None)


def _reason_from_prose(text: str) -> str | None:
    for sentence in sentences(text):
        if not _REJECT_WORDS.search(sentence):
            continue
        m = _REASON_AFTER.search(sentence)
        if m:
            reason = _SUBJECT_VERB.sub("", m.group(1).strip())
            reason = clean_value(re.split(r"\s+(?:but|although|though|however)\b", reason)[0])
            if reason and len(reason.split()) <= 12:
                return reason
    return None


def _prose_facets(doc: Document) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    text = doc.text
    for m in _TITLE_IN_PROSE.finditer(text):
        words = m.group(1).split()
        # Drop leading filler words that are not part of a title.
        while words and fold(words[0]) in {"a", "an", "the", "our", "new", "great", "strong"}:
            words = words[1:]
        if words:
            out.append(("title", " ".join(words)))
            break
    for m in _LOCATION_IN_PROSE.finditer(text):
        words = m.group(1).replace(",", " , ").split()
        kept: list[str] = []
        for w in words:
            if w.strip(",") in _LOCATION_STOP:
                break
            kept.append(w)
        loc = " ".join(kept).replace(" , ", ", ").strip(" ,")
        loc = re.split(r"\.\s", loc)[0].strip(" .,")  # the sentence ends at its period
        if loc:
            out.append(("location", loc))
            break
    for m in _WORKPLACE_IN_PROSE.finditer(text):
        if not _NEGATED_BEFORE.search(text[max(0, m.start() - 30) : m.start()]):
            out.append(("workplace_type", m.group(1)))  # "not remote" states no workplace
            break
    for m in _SKILLS_IN_PROSE.finditer(text):
        for part in _split_multi(m.group(1)):
            if part[:1].isalpha() and fold(part) not in {"a", "the", "experience"}:
                out.append(("skill", part))
    return out


def document_facets(doc: Document) -> list[RawFacet]:
    """Every facet one document states, with normalized keys and cleaned values."""
    pairs, structured = _structured_pairs(doc)
    found: list[tuple[str, str, bool]] = []
    feedback = _is_feedback(doc)
    event = feedback_event(doc) if feedback or _REJECT_WORDS.search(doc.text) else None
    for raw_key, raw_value in pairs:
        key = canonical_key(raw_key)
        if key in FEEDBACK_KEYS or SKIP_KEY.search(key):
            continue
        if not structured and snake_key(raw_key) not in KEY_ALIASES:
            continue  # in prose, only a line led by a well-known key name counts
        found.append((key, str(raw_value), True))
    if not structured and not feedback:
        found.extend((k, v, False) for k, v in _prose_facets(doc))
    if event and event.rejected and event.reason:
        found.append(("rejection_reason", event.reason, structured))
    out: list[RawFacet] = []
    for key, raw_value, is_structured in found:
        listed = raw_value.startswith(_ITEM)
        values = _split_multi(raw_value) if key in MULTI_KEYS else [raw_value.lstrip(_ITEM)]
        for value in values:
            canon = canonical_value(key, value)
            if canon is not None:
                out.append(RawFacet(key, canon, doc.doc_id, is_structured, doc.updated_at, listed))
    return out


def _split_seniority(facets: list[RawFacet]) -> list[RawFacet]:
    """Move a leading seniority word out of titles into the seniority facet."""
    out: list[RawFacet] = []
    has_seniority = any(f.key == "seniority" for f in facets)
    for f in facets:
        if f.key == "title":
            words = f.value.split()
            for n in (2, 1):
                head = fold(" ".join(words[:n]))
                if len(words) > n and head in SENIORITY_WORDS:
                    if not has_seniority:
                        out.append(
                            RawFacet(
                                "seniority",
                                SENIORITY_WORDS[head],
                                f.doc_id,
                                f.structured,
                                f.updated_at,
                            )
                        )
                    f = RawFacet("title", " ".join(words[n:]), f.doc_id, f.structured, f.updated_at)
                    break
        out.append(f)
    return out


def reconcile(
    raw: Sequence[RawFacet], max_facets: int = 30, emphasized: Sequence[str] = ()
) -> list[Facet]:
    """Merge one leaf's raw facets: union multi-valued keys, resolve conflicts on the others.

    A conflict on a single-valued key keeps the value from structured documents over prose,
    then the most recent document, then the most documents; ties go to the smallest doc id.
    """
    by_key: dict[str, dict[str, list[RawFacet]]] = defaultdict(lambda: defaultdict(list))
    for f in _split_seniority(list(raw)):
        by_key[f.key][fold(f.value)].append(f)
    facets: list[Facet] = []
    for key in sorted(by_key, key=lambda k: key_rank(k, emphasized)):
        groups = by_key[key]
        if key in MULTI_KEYS or any(i.listed for g in groups.values() for i in g):
            chosen = sorted(groups)
        else:
            # Stable sorts: the last one decides, earlier ones break its ties.
            order = sorted(groups, key=lambda g: min(i.doc_id for i in groups[g]))
            order.sort(
                key=lambda g: (
                    any(i.structured for i in groups[g]),
                    max(i.updated_at for i in groups[g]),
                    len({i.doc_id for i in groups[g]}),
                ),
                reverse=True,
            )
            chosen = order[:1]
        for folded in chosen:
            items = groups[folded]
            display = sorted(i.value for i in items)[0]
            sources = tuple(sorted({i.doc_id for i in items}))
            facets.append(Facet(key, display, 1, sources))
    return facets[:max_facets]
