"""Deterministic facet extraction from documents: JSON exports, "Key: value" lines and prose.

Pure functions, no model. Keys are normalized to ``snake_case`` and mapped onto a small set of
canonical keys (``title``, ``location``, ...) through an alias table, so that exports from
different applicant tracking systems aggregate onto the same facets.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace

from hltm_resources.engines.extractive.exports import (
    ITEM,
    is_skipped,
    items,
    prose_of,
    read_export,
)
from hltm_resources.engines.negation import negated_in_text, superseded_in_text
from hltm_resources.engines.vocabulary import (
    CHANGE_VERBS,
    CURRENCIES,
    FLAG_WORDS,
    KEY_ALIASES,
    KEY_ORDER,
    MULTI_KEYS,
    OPENING_NOUNS,
    REASON_CHARS,
    SENIORITY_WORDS,
    TITLE_HEADS,
    YES_NO_KEYS,
    canonical_key,
    canonical_value,
    currency_of,
    is_title,
    key_rank,
    place_name,
    polarity,
    same_place,
    some_days,
    workplace_of,
)
from hltm_resources.models import Document, Facet
from hltm_resources.places import city_name
from hltm_resources.text import (
    NUMBER_WORDS,
    clean_value,
    fold,
    near_spelling,
    sentences,
    snake_key,
    without_asides,
)

_REJECT_WORDS = re.compile(
    r"\b(reject(?:ed|ing)?|declin(?:ed|ing)|passed on|pass on|not selected|unsuccessful|"
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
_TITLE_HEADS = "|".join(sorted(TITLE_HEADS, key=len, reverse=True))
_TITLE_IN_PROSE = re.compile(
    r"\b(?:hiring(?! manager)|hire|looking for|seeking|recruiting|searching for|search for|"
    r"need|open(?:ed)? (?:a|an|the) (?:role|position|req) for|"
    r"(?:raise|open|post)(?:d)? (?:a|an|the) (?:req|requisition|vacancy) for)\s+"
    r"(?:an?\s+|(one|two|three|four|five|\d)\s+)?"
    r"((?:[A-Za-z][\w/&+.-]*\s+){0,4}?(?:" + _TITLE_HEADS + r"))s?\b",
    re.I,
)
_LOCATION_IN_PROSE = re.compile(
    r"\b(?:[Bb]ased (?:in|out of|at(?: the| our)?(?: main)?)|located in|office in|offices in|"
    r"relocate to|on-?site in|will (?:now )?(?:sit|work) (?:in|from)|"
    r"hybrid (?:from|in)|work(?:ing)? from our|in our|position is in|role is in|job is in|"
    r"(?:mov\w*|relocat\w*) to(?: the| our)?(?= [A-Z][\w'\u2019.-]*(?: [A-Z][\w'\u2019.-]*)? "
    r"(?:office|site|hub|campus|depot|branch)\b))\s+"
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
#: Sponsorship in prose ("We can sponsor a Critical Skills permit", "we'll support a work
#: permit", "no visa sponsorship for the Keystone role"): yes, or no when negated (a
#: candidate who needs a visa says nothing of the role).
_VISA_IN_PROSE = re.compile(
    r"\b(sponsor\w*|(?:support|offer|provid)\w*\s+(?:a\s+|the\s+)?(?:visas?|work permits?))\b",
    re.I,
)
#: A person's name: two or three capitalized words ("Sanne de Wit", "Inês Carvalho").
_NAME_WORDS = r"([A-Z][\w'\u2019-]+(?:\s+(?:de |van |da |O')?[A-Z][\w'\u2019-]+){1,2})"
_PERSON_NAME = re.compile(_NAME_WORDS)
#: The hiring manager named in prose ("Niall Doherty is the hiring manager for ...", "the
#: hiring manager is Niall Doherty", "HM = Dr Saoirse Madigan").
_MANAGER_IN_PROSE = re.compile(
    _NAME_WORDS + r"\s*(?:\([^()]{0,60}\)|,[^,.]{0,60},)?\s+(?:is|will be)\s+(?:now\s+)?the\s+"
    r"hiring\s+manager\b"
    r"|" + _NAME_WORDS + r"\s*(?:\([^()]{0,60}\))?\s+(?:is\s+|will\s+)?(?:tak(?:ing|es|e)\s+over|"
    r"step(?:ping|s)?\s+in)\s+as\s+(?:the\s+)?hiring\s+manager\b"
    r"|\b(?:[Hh]iring\s+manager|HM)\s*(?:is|will be|[:=\u2013\u2014]|-\s)\s*(?:now\s+)?"
    + _NAME_WORDS
    # "I am handing over the ED physician search ... to Dr. Miriam Okafor": the search's
    # manager from now on
    + r"|\b[Hh]and(?:ing|s|ed)?\s+(?:it\s+|this\s+)?over\s+(?:the\s+)?(?:[\w()/,-]+\s+){0,10}?"
    r"(?:search|req|requisition|role|hire|vacancy|position)\b[^.;]{0,60}?\bto\s+"
    r"(?:(?:Dr|Prof|Mr|Mrs|Ms)\.?\s+)*" + _NAME_WORDS
)
#: Words of a role, not of a person's name ("Frontend Engineer", "VP Digital Health"), and
#: greetings ("Hi Priya", "Ciao Chiara"): a name after them is the reader's.
_NOT_A_PERSON = (
    TITLE_HEADS
    | set(SENIORITY_WORDS)
    | {"vp", "director", "chief", "head"}
    | {"hi", "hello", "hey", "dear", "ciao", "hola", "bonjour", "hallo", "thanks", "interview"}
)
#: A negation right before a phrase ("not remote", "is not a remote role", "no hybrid").
_NEGATED_BEFORE = re.compile(r"\b(?:not|no|never|n't|without|non)\b[\s-]*(?:\w+\s+){0,2}$", re.I)
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
    #: False for an export field whose attribute nothing read so far tells (its key is its
    #: own name).
    resolved: bool = True
    #: Stated in prose as a change of the role ("Marigold is now hybrid"): it weighs as much
    #: as an export's field, so the later of the two stands.
    changes: bool = False
    #: For a change written "from X to Y" (key :data:`CHANGED_FROM`), the X: which key the
    #: Y is a value of is the key the leaf's other documents give X for
    #: (:func:`resolve_changes`).
    was: str = ""


@dataclass(frozen=True)
class FeedbackEvent:
    """A candidate decision found in a feedback document."""

    doc_id: str
    candidate: str | None
    rejected: bool
    reason: str | None


def is_feedback_kind(kind: str) -> bool:
    """A document kind that holds notes on candidates rather than a description of the role."""
    kind = kind.lower()
    return any(
        w in kind for w in ("feedback", "interview", "scorecard", "reject", "debrief", "offer")
    )


def _is_feedback(doc: Document) -> bool:
    return is_feedback_kind(doc.kind)


def _structured_pairs(doc: Document) -> tuple[list[tuple[str, str]], bool]:
    """Raw key-value pairs of a JSON or "Key: value" document, and whether it is structured."""
    fields, structured = read_export(doc.text)
    return [(f.raw_key, f.value) for f in fields], structured


def feedback_event(doc: Document) -> FeedbackEvent | None:
    """The candidate decision a feedback document records, if it records one."""
    if not _is_feedback(doc) and not _REJECT_WORDS.search(doc.text):
        return None
    pairs, _ = _structured_pairs(doc)
    fields: dict[str, str] = {}
    for raw_key, raw_value in pairs:
        key = canonical_key(raw_key)
        if key in ("candidate", "decision", "reason", "rejection_reason") and key not in fields:
            fields[key] = clean_value(str(raw_value).lstrip(ITEM), REASON_CHARS)
    by_values = {} if "decision" in fields or not pairs else _decided_by_values(pairs, fields)
    fields.update(by_values)
    decision = fields.get("decision", "")
    reason = fields.get("rejection_reason") or fields.get("reason")
    if decision and not reason and not by_values and _against(decision):
        reason = _decided_by_values(pairs, fields).get("reason")  # the phrase after it
    if by_values:
        rejected = True  # read from the values: a decision against the candidate
    elif decision:
        positive = [
            m
            for m in _POSITIVE_DECISION.finditer(decision)
            if not negated_in_text(decision, m.start(), m.end())  # "not progressing"
        ]
        negative = _NEGATIVE_DECISION.search(decision) or _against(decision)
        rejected = bool(negative) and not (positive and not _REJECT_WORDS.search(decision))
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


def _decided_by_values(pairs: list[tuple[str, str]], named: dict[str, str]) -> dict[str, str]:
    """A note's decision and reason where its field names are unknown, read from the values:
    the field whose value is a decision against the candidate ("Closed - not selected"), and
    then, for the reason, the first phrase of three words or more after it that names no
    person (a note gives its reason after its decision)."""
    values = [(k, clean_value(str(v).lstrip(ITEM))) for k, v in pairs]
    decided = [v for _, v in values if _against(v)]
    if not decided:
        return {}
    out = {"decision": decided[0]}
    if "reason" in named or "rejection_reason" in named:
        return out
    after = [v for _, v in values][[v for _, v in values].index(decided[0]) + 1 :]
    phrases = [v for v in after if len(v.split()) >= 3 and not _PERSON_NAME.fullmatch(v)]
    if phrases:
        out["reason"] = phrases[0]
    return out


def _against(value: str) -> bool:
    """A short value that decides against a candidate: rejection words, or a negated
    outcome ("not selected", "no-go")."""
    words = fold(value).split()
    if not words or len(words) > 5:
        return False
    return bool(_REJECT_WORDS.search(value)) or bool(set(words) & {"no", "not", "non"})


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


def _prose_facets(text: str) -> list[tuple[str, str, bool]]:
    """What a prose document states about the role, where it states it (a negated mention
    states nothing: "the role is not based in Toronto", "we are not hiring a Data Scientist",
    "Kubernetes is not required"), and whether its sentence states it as a change."""
    out: list[tuple[str, str, bool]] = []
    for m in _TITLE_IN_PROSE.finditer(text):
        if negated_in_text(text, m.start(2), m.end(2), cue=m.start()):
            continue
        if m.group(1) and m.group(2):  # "looking for two Concept Artists": two hires
            count = fold(m.group(1))
            out.append(
                ("headcount", str(NUMBER_WORDS.get(count, count)), _as_change(text, m.start()))
            )
        words = m.group(2).split()
        # Drop leading filler words that are not part of a title.
        while words and fold(words[0]) in {"a", "an", "the", "our", "new", "great", "strong"}:
            words = words[1:]
        if words:
            out.append(("title", " ".join(words), _as_change(text, m.start(2))))
            break
    else:
        # A heading names the role ("Assistant Store Manager – York", "Concept Artist
        # (12-month contract)"), or a brief's first bullet ("- Community Manager, L3").
        heading = re.split(r"\s[-\u2013\u2014|]\s|[(:,]", text.strip().split("\n", 1)[0])[0]
        bullets = re.finditer(r"^\s*[-*\u2022]\s*([^,(;:\n]+)", text, re.M)
        for named in [heading.strip(), *(m.group(1).strip() for m in bullets)]:
            if is_title(named) and not re.search(r"\b(?:not|no)\b", named, re.I):
                out.append(("title", named, False))
                break
    places = []
    for m in _LOCATION_IN_PROSE.finditer(text):
        if negated_in_text(text, m.start(1), m.end(1), cue=m.start()):
            continue
        if superseded_in_text(text, m.start(), m.end(1)):
            continue  # "moved from Rotterdam to Antwerp"
        words = m.group(1).replace(",", " , ").split()
        kept: list[str] = []
        for w in words:
            if w.strip(",") in _LOCATION_STOP:
                break
            kept.append(w)
        loc = " ".join(kept).replace(" , ", ", ").strip(" ,")
        loc = re.split(r"\.\s", loc)[0].strip(" .,")  # the sentence ends at its period
        if loc:
            places.append((loc, _as_change(text, m.start(1))))
    # "Payroll Specialist – London (hybrid)": a heading naming the role, then its city
    head = text.strip().split("\n", 1)[0]
    parts = re.split(r"\s[-\u2013\u2014|]\s", head)
    if len(parts) == 2 and is_title(parts[0]):
        place = without_asides(parts[1], " ").strip(" ,.")
        if city_name(place_name(place)):
            places.append((place, False))
    for sentence in sentences(text):
        # "change the location on the role: it's now Edinburgh, not Glasgow"
        said = _NOW_IN_PLACE.search(sentence)
        if said and _PLACE_WORDS.search(sentence) and fold(said.group(1)) not in _NOT_PLACES:
            places.append((said.group(1), True))
    if places:
        out.append(_latest_said(places, "location"))
    stated = [
        (_workplace_said(text, m), _as_change(text, m.start(1)))
        for m in _WORKPLACE_IN_PROSE.finditer(text)
        # "moves on to the onsite next week": a step of the interviews; "(QA, remote from
        # Kraków)": an aside on someone else
        if not _interview_stage(text, m)
        and not _unstated(text, m.start(1), m.end(1))
        and not _in_aside(text, m.start(1))
    ]
    if stated:
        out.append(_latest_said(stated, "workplace_type"))
    else:
        # A short sentence that says people work from home, all or part of the week
        # ("Working from home full time is fine", "Three office days, the rest from home"),
        # and nothing negated. A mention of an office alone says where a team sits more
        # often than how the role works ("The team sits in our Toronto office").
        for sentence in sentences(text):
            kind = workplace_of(without_asides(sentence, " "))  # not "(QA, remote from X)"
            if kind in ("remote", "hybrid"):
                out.append(("workplace_type", kind, bool(_CHANGE.search(sentence))))
                break
    for m in _MANAGER_IN_PROSE.finditer(text):
        name = next(g for g in m.groups() if g)
        if not negated_in_text(text, m.start(), m.end()):
            handed = m.group().lower().startswith("hand")  # a handover is a change
            out.append(("hiring_manager", name, handed or _as_change(text, m.start())))
            break
    else:
        # "Alan Whitcombe, Director of Clinical Engineering (hiring manager)", "reports to
        # Thijs Mulder, who ... is the hiring manager": the sentence's first person, named in
        # apposition before the words.
        for sentence in sentences(text):
            cue = re.search(r"\bhiring\s+manager\b", sentence, re.I)
            if not cue or negated_in_text(sentence, cue.start(), cue.end()):
                continue
            if _SELF_MANAGER.search(sentence):
                continue  # "Salut Delphine, ... I'm the hiring manager": the writer is
            named = next(
                (
                    n
                    for n in re.finditer(_NAME_WORDS, sentence[: cue.start()])
                    if not {fold(w) for w in n.group(1).split()} & _NOT_A_PERSON
                ),
                None,
            )
            if named:
                out.append(("hiring_manager", named.group(1), bool(_CHANGE.search(sentence))))
                break
                break
    for m in _VISA_IN_PROSE.finditer(text):
        if _asked(text, m.start()):
            continue  # "and sponsorship?" asks, it does not state
        rest = text[m.end() :].split("\n", 1)[0]
        if rest.lstrip().startswith(":"):  # "Sponsorship: not available"
            said = polarity(rest.lstrip()[1:])
        else:
            said = "no" if negated_in_text(text, m.start(1), m.end(1)) else "yes"
        if said:
            out.append(("visa_sponsorship", said, _as_change(text, m.start(1))))
        break
    for m in _CODE_NAME_IN_PROSE.finditer(text):
        name = m.group(1) or m.group(2)  # "codenamed Atlas", "Project Kestrel" as written
        last = fold(name.split()[-1])
        if last not in TITLE_HEADS and last not in _COMMON_AFTER_PROJECT:
            out.append(("code_name", name, False))  # "sits under Project Tailwind"
            break
    else:
        for sentence in sentences(text):
            quoted = _QUOTED_NAME.search(sentence) if _CODE_NAME_WORD.search(sentence) else None
            if quoted:
                out.append(("code_name", quoted.group(1), False))
                break
    amounts = [
        (key, value, bool(_CHANGE.search(sentence)))
        for sentence in sentences(text)
        for key, value in _amounts(sentence)
    ]
    for key in ("salary_range", "headcount"):
        stated = [(value, changes) for k, value, changes in amounts if k == key]
        if stated:  # "two heads ... moved teams. So it drops to 1 head": the last change
            out.append(_latest_said(stated, key))
    for m in _SKILLS_IN_PROSE.finditer(text):
        if negated_in_text(text, m.start(1), m.start(1), cue=m.start()):
            continue
        for part in items(m.group(1), "skill"):
            if part[:1].isalpha() and fold(part) not in {"a", "the", "experience"}:
                out.append(("skill", part, False))
    return out


#: Words by which a sentence says a fact of the role changed ("is now hybrid", "moved to
#: Berlin", "no longer remote").
_CHANGE = re.compile(
    r"\b(?:now|no longer|any ?more|chang(?:e|ed|es|ing)|switch(?:ed|es)?|mov(?:e|ed|es|ing)|agreed|"
    r"instead|updated?|going forward|from now on|from today|as of|decided|approved|from \S+ to|"
    r"tak(?:e|es|ing) over|took over|replac(?:es|ed|ing)|effective|rais(?:e|ed|es|ing)|"
    r"drop(?:s|ped|ping)?|"
    # "we're making both roles fully remote", "the team goes hybrid": a state it turns into
    r"(?:go(?:es|ing)?|went|mak(?:e|es|ing)|made|turn(?:s|ed|ing)?|becom(?:e|es|ing)|became)"
    r"\s+(?:[\w-]+\s+){0,5}?(?:fully\s+)?(?:remote|hybrid|on-?site)|"
    r"increas(?:e|ed|es|ing)|reduc(?:e|ed|es|ing)|revis(?:e|ed|es|ing)|uplift|"
    r"new (?:\w+ )?(?:range|band|budget|salary|location|office|headcount|manager|HM))\b",
    re.I,
)


_AMOUNT = r"(\d+|" + "|".join(NUMBER_WORDS) + r")"
#: A month after a number makes it a date ("6 Feb"), no count.
_MONTHS = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\b"


def _nouns(words: frozenset[str]) -> str:
    return r"\b(?:" + "|".join(sorted(words, key=len, reverse=True)) + r")\b"


_HEADS = _nouns(OPENING_NOUNS)
#: ... and after a number, heads ("drops to 1 head"; "Head of Data" counts nobody).
_COUNTED = _nouns(OPENING_NOUNS | {"head", "heads"})
#: A count of hires in a sentence that names one: "from 2 to 3", "3 posts", "fill ONE
#: Research Computing Systems Engineer post", "headcount is now 3", "headcount as 1".
_HEADCOUNT = re.compile(
    r"\bfrom\s+\d+\s+to\s+" + _AMOUNT + r"\b"
    r"|\b"
    + _AMOUNT
    + r"[ \t]+(?!of\b|"
    + _MONTHS
    + r")(?:\w+[ \t]+){0,4}?"
    + _COUNTED
    + r"|"
    + _HEADS
    + r"\s+(?:\w+\s+){0,3}?(?:of|to|is|as|at|:)\s+(?:now\s+)?"
    + _AMOUNT
    + r"\b"
    + r"|\bhiring\s+(?:now\s+)?"
    + _AMOUNT
    + r"\b(?!\s*(?:days?|weeks?|months?|years?|%))",
    re.I,
)
#: A range of pay: "EUR 66,000 - 76,000", "€70k–€80k", "$120,000 to $140,000".
_CODES = "|".join(CURRENCIES)  # the currency codes of the vocabulary
_PAY_RANGE = re.compile(
    r"(?:[€£$]|\b(?:" + _CODES + r")\s?)\d[\d,.]*\s?[kK]?"
    r"\s*(?:-|\u2013|\u2014|to)\s*(?:[€£$]|(?:" + _CODES + r")\s?)?\d[\d,.]*\s?[kK]?"
)


_PAY_WORDS = re.compile(
    r"\b(?:salary|pay|paid|band|comp\w*|base|range|budget|package|gross)\b", re.I
)


#: Words before a value a fact had: "(was €70,000 – €85,000)", "previously 2", "up from".
_WAS_BEFORE = re.compile(
    r"\b(?:was|were|previously|formerly|old|instead of|up from|down from|originally)\s*:?\s*$",
    re.I,
)


def _amounts(sentence: str) -> list[tuple[str, str]]:
    """The pay range and number of hires a sentence gives, the last one it names ("the band
    goes to EUR 66,000 - 76,000", "headcount goes from 2 to 3", "£85-95k base")."""
    out = []
    pay = list(_PAY_RANGE.finditer(sentence))
    # "€76,000 – €90,000 (was €70,000 – €85,000)": the range it had is no range it has
    pay = [m for m in pay if not _WAS_BEFORE.search(sentence[max(0, m.start() - 16) : m.start()])]
    alone = bool(pay) and len(pay[-1].group(0)) * 2 >= len(sentence.strip(" -*\u2022."))
    if pay and (alone or _PAY_WORDS.search(sentence)):  # "- CAD 60,000 – 72,000" says pay
        out.append(("salary_range", pay[-1].group(0)))
    if re.search(_COUNTED, sentence, re.I) and (count := list(_HEADCOUNT.finditer(sentence))):
        word = fold(next(g for g in reversed(count[-1].groups()) if g))
        out.append(("headcount", str(NUMBER_WORDS.get(word, word))))
    return out


_NOW_IN_PLACE = re.compile(r"\bnow\s+(?:in\s+|based\s+in\s+)?([A-Z][\w'.-]+(?:\s+[A-Z][\w'.-]+)?)")
_PLACE_WORDS = re.compile(r"\b(?:location|located|based|office|site|city)\b", re.I)
_NOT_PLACES = frozenset("hybrid remote on-site onsite fully the a".split())


def _workplace_said(text: str, m: re.Match) -> str:
    """The arrangement a mention states: an office some days of the week is hybrid ("three
    days on site, two from home", "3 days in office")."""
    value = m.group(1)
    before = text[max(0, m.start(1) - 20) : m.start(1)]
    if workplace_of(value) == "on-site" and some_days(before):
        return "hybrid"
    return value


def _unstated(text: str, start: int, end: int) -> bool:
    """A mention that states nothing of the role now: negated ("not remote"), the state a
    change leaves ("from on-site to hybrid", "dropping the on-site requirement"), or asked
    about ("is this really remote?")."""
    return (
        negated_in_text(text, start, end)
        or superseded_in_text(text, start, end)
        or _asked(text, start)
    )


def _asked(text: str, at: int) -> bool:
    """Whether the sentence around ``at`` is a question."""
    start, end = _sentence_around(text, at)
    return text[end : end + 1] == "?"


def _in_aside(text: str, at: int) -> bool:
    """Whether position ``at`` lies in parentheses opened on its line ("Panel: Ana (QA,
    remote from Kraków)")."""
    line = text[text.rfind("\n", 0, at) + 1 : at]
    return line.rfind("(") > line.rfind(")")


def _sentence_around(text: str, at: int) -> tuple[int, int]:
    """Where the sentence around ``at`` starts and ends (at its mark, or the end of its
    line). A line of prose wrapped at a width goes on on the next line ("... will be the
    hiring manager for the Senior Credit Risk\nModeller from now on."): only a short line
    (a heading, a label, an item) ends where it breaks."""

    def breaks(i: int) -> bool:
        if text[i] in ".!?":
            return True
        if text[i] != "\n":
            return False
        line_start = text.rfind("\n", 0, i) + 1
        return i - line_start < _WRAPPED or text[i + 1 : i + 2] in ("\n", "")

    start = next((i + 1 for i in range(at - 1, -1, -1) if breaks(i)), 0)
    end = next((i for i in range(at, len(text)) if breaks(i)), len(text))
    return start, end


#: A line at least this long is prose wrapped at a width, not a line of its own.
_WRAPPED = 60


def _latest_said(stated: list[tuple[str, bool]], key: str) -> tuple[str, str, bool]:
    """Of a document's mentions of one fact, in order, the last one stated as a change
    ("We'll allow hybrid ... Please change the ad from on-site to hybrid"), else the first
    (a count or a pay range: what the document states, not each figure it passes on)."""
    changed = [value for value, changes in stated if changes]
    return (key, changed[-1], True) if changed else (key, stated[0][0], False)


def _as_change(text: str, at: int) -> bool:
    """Whether the sentence around ``at`` states a change."""
    start, end = _sentence_around(text, at)
    return bool(_CHANGE.search(text[start:end]))


#: A code name in prose: "Project Heron", "the programme Project Kestrel", "codenamed Atlas".
_CODE_NAME_IN_PROSE = re.compile(
    r"\b(?:code[- ]?named|code[- ]?name(?:\s+is)?:?)\s+([A-Z][A-Za-z]+)\b"
    r"|\b((?:Project|Programme|Program|Operation)\s+[A-Z][A-Za-z]+)\b"
)
#: A name quoted in a sentence that speaks of a code name ('calls the programme "Kittiwake"
#: (project code name)').
_CODE_NAME_WORD = re.compile(
    r"\bcode[- ]?names?\b|\bcodenamed?\b|\binternally\b|\binternal name\b", re.I
)
_QUOTED_NAME = re.compile(r"[\"\u201c\u2018']([A-Z][A-Za-z]+(?: [A-Z][A-Za-z]+)?)[\"\u201d\u2019']")
#: Words after "Project" that name no project ("Project Manager", "Project Finance").
_COMMON_AFTER_PROJECT = frozenset(
    "the a an management manager finance lead leader plan planning team budget office "
    "delivery controls engineer engineering coordinator director".split()
)


_STAGE_AFTER = re.compile(r"\s*(?:interviews?|rounds?|loops?|stages?|visits?|debriefs?)\b", re.I)
_NOUN_BEFORE = re.compile(r"\b(?:the|an|after|before|at|for|during)\s*$", re.I)
_ROLE_AFTER = re.compile(r"\s*(?:roles?|positions?|jobs?|work|setup|basis|presence)\b", re.I)


def _interview_stage(text: str, m: re.Match) -> bool:
    """An "onsite" that is a step of the interviews, not how the role works: followed by
    "interview" or "round", or used as a noun ("the onsite", "after the onsite")."""
    if not fold(m.group(1)).replace(" ", "").replace("-", "").startswith("onsite"):
        return False
    after = text[m.end(1) :]
    if _STAGE_AFTER.match(after):
        return True
    return bool(_NOUN_BEFORE.search(text[: m.start(1)])) and not _ROLE_AFTER.match(after)


#: The name a message is from ("From: Maja Ek <maja.ek@...>"), and a writer who says they
#: manage the hire ("I'm the hiring manager").
_SENDER = re.compile(r"^\s*From:\s*([^<\n@]+?)\s*(?:<[^>\n]*>)?\s*$", re.M)
_SELF_MANAGER = re.compile(r"\bI(?:'m|\u2019m| am)\s+(?:also\s+)?the\s+hiring\s+manager\b", re.I)


def document_facets(doc: Document) -> list[RawFacet]:
    """Every facet one document states, with normalized keys and cleaned values. An export
    field whose attribute nothing in the document tells keeps its own name as its key
    (``resolved`` is False): the leaf's other documents may tell (:func:`resolve_by_agreement`)."""
    fields, structured = read_export(doc.text)
    found: list[tuple[str, str, bool, bool, bool]] = []  # key, value, structured, resolved, changes
    feedback = _is_feedback(doc)
    event = feedback_event(doc) if feedback or _REJECT_WORDS.search(doc.text) else None
    for f in fields:
        # A field its value's form says is not what its name says keeps its own name.
        key = f.key or (f.raw_key if f.by == "form" else canonical_key(f.raw_key))
        if is_skipped(f, key):
            continue
        if not structured and snake_key(f.raw_key) not in KEY_ALIASES:
            continue  # in prose, only a line led by a well-known key name counts
        if feedback and f.by not in ("name", None):
            continue  # a note on a candidate is not read for the role's facts by their form
        if feedback and key in YES_NO_KEYS | {"location"}:
            # "Visa: not required (settled status)", "Location: Seattle — US citizen": the
            # candidate's, not the role's
            continue
        if feedback and f.key is None and key not in KEY_ORDER:
            continue  # "Slurm / scheduler ops: 5/5", "Pau Ferrer: too junior": of a candidate
        # A note on candidates (an offer, a scorecard) restates the role in passing: its
        # fields weigh as prose does, below the role's own export.
        value = f.value
        if (
            key in ("salary_range", "base")
            and snake_key(f.raw_key) == "base"
            and not any(c.isdigit() for c in value)
        ):
            key = "location"  # "Base: Gothenburg Landvetter (GOT)": a crew's base, no pay
        if key == "salary_range" and not currency_of(value):
            code = next((c for w in snake_key(f.raw_key).split("_") if (c := currency_of(w))), "")
            value = f"{code} {value}".strip()  # "salary_eur_year: 70,000 - 82,000" is in EUR
        label = f.raw_key.split("_")[-1]
        if key == "seniority" and value.strip().isdigit() and label.isalpha():
            value = f"{label.capitalize()} {value.strip()}"  # "Grade: 7" states Grade 7
        found.append((key, value, not feedback, f.key is not None or key in KEY_ORDER, False))
    if not feedback:
        found.extend((k, v, False, True, c) for k, v, c in _prose_facets(prose_of(doc.text)))
        sender = _SENDER.search(doc.text)
        if sender and (said := _SELF_MANAGER.search(doc.text)):  # "I'm the hiring manager"
            start, end = _sentence_around(doc.text, said.start())
            changes = bool(_CHANGE.search(doc.text[start:end]))  # "as of this week I'm ..."
            found.append(("hiring_manager", sender.group(1).strip(), False, True, changes))
    if event and event.rejected and event.reason:
        found.append(("rejection_reason", event.reason, structured, True, False))
    # Openings counted per place ("Posts: 2 (Rotterdam x1, Utrecht x1)") name the places.
    for k, v, *flags in list(found):
        places = _PER_PLACE.findall(v) if k == "headcount" else []
        if len(places) > 1:
            found += [("location", ITEM + place, *flags) for place in places]
    # Openings listed per place add up: one in Dublin and one in Amsterdam are two hires.
    counts = [v for k, v, *_ in found if k == "headcount" and v.startswith(ITEM)]
    if len(counts) > 1 and all(v[1:].strip().isdigit() for v in counts):
        found = [f for f in found if not (f[0] == "headcount" and f[1].startswith(ITEM))]
        found.append(("headcount", str(sum(int(v[1:]) for v in counts)), True, True, False))
    # The currency a pay range is stated in is an attribute of its own ("paid in pounds").
    found += [
        ("currency", code, s, r, c)
        for k, v, s, r, c in list(found)
        if k == "salary_range" and (code := currency_of(v))
    ]
    # One item of a list is listed when its list holds several ("offices": [Dublin,
    # Amsterdam]); a list of one office states one place, as a field would.
    in_lists = defaultdict(int)
    for key, raw_value, *_ in found:
        in_lists[key] += raw_value.startswith(ITEM)
    out: list[RawFacet] = []
    for key, raw_value, is_structured, resolved, changes in found:
        values = items(raw_value, key)
        listed = (raw_value.startswith(ITEM) and in_lists[key] > 1) or len(values) > 1
        for value in values:
            canon = canonical_value(key, value)
            if canon is not None:
                out.append(
                    RawFacet(
                        key,
                        canon,
                        doc.doc_id,
                        is_structured,
                        doc.updated_at,
                        listed,
                        resolved,
                        changes,
                    )
                )
    return out


def document_changes(doc: Document) -> list[RawFacet]:
    """The changes a document states as "from X to Y" ("the role moves from Boston to San
    Diego"), each under the key :data:`CHANGED_FROM` until the leaf tells which attribute
    X is a value of (:func:`resolve_changes`, in :func:`reconcile`). A note on candidates
    states no change of the role."""
    if _is_feedback(doc):
        return []
    return [
        RawFacet(CHANGED_FROM, new, doc.doc_id, False, doc.updated_at, changes=True, was=old)
        for old, new in _changed_from(prose_of(doc.text))
    ]


#: A place and the openings there, in a count of hires: "Rotterdam x1", "Utrecht × 2".
_PER_PLACE = re.compile(r"([A-Z][\w'\u2019.-]*(?: [A-Z][\w'\u2019.-]*)?)\s*[x\u00d7]\s*\d")


#: The key of a change written "from X to Y" before the leaf tells whose value X is.
CHANGED_FROM = "_changed_from"
#: What a change names on either side: a name ("Boston, MA") or a few plain words ("fully
#: on-site"), as many as end before a mark or another word.
_PHRASE = (
    r"([A-Z][\w'\u2019.-]*(?:,?\s+[A-Z][\w'\u2019.-]*){0,3}"
    r"|[\w'\u2019.-]+(?:\s+[\w'\u2019.-]+){0,2})"
)
_FROM_TO = re.compile(
    r"\b(?:"
    # each verb's forms: "move", "moved", "moving"
    + "|".join(f"{v[:-1] if v.endswith('e') else v}\\w*" for v in CHANGE_VERBS)
    + r")\s+"
    r"(?:\w+\s+){0,5}?from\s+"
    + _PHRASE
    + r"\s+to\s+"
    + _PHRASE
    + r"(?=\s*(?:[.,;:!?()]|$)|\s+[a-z])"
)
#: A value a role leaves, named after "no longer": "no longer tied to Boston".
_NO_LONGER = re.compile(
    r"\bno longer\s+(?:[a-z]+\s+){0,3}?([A-Z][\w'\u2019.-]*(?:\s+[A-Z][\w'\u2019.-]*){0,2})"
)


def _changed_from(text: str) -> list[tuple[str, str]]:
    """The changes a text states as "from X to Y" ("the role moves from Boston to San
    Diego", "switched from on-site to hybrid") or as "no longer ... X" (Y empty: "no longer
    tied to Boston"), whatever attribute they change: which one the leaf's other documents
    tell (:func:`resolve_changes`)."""
    out = []
    for sentence in sentences(text):
        for m in _FROM_TO.finditer(sentence):
            if not negated_in_text(sentence, m.start(), m.end()):
                out.append((m.group(1).strip(" ,."), m.group(2).strip(" ,.")))
        out += [(m.group(1).strip(" ,."), "") for m in _NO_LONGER.finditer(sentence)]
    return out


def resolve_changes(raw: Sequence[RawFacet]) -> list[RawFacet]:
    """A leaf's facets with each change "from X to Y" taken as a change of the one
    single-valued key another of its documents states X for (the location when X is its
    city), and dropped when none does: a change says what it replaces, so it is read only
    where the leaf holds what it replaces. A value a later document says the role no longer
    has is no longer stated."""
    stated = [f for f in raw if f.key != CHANGED_FROM]
    out = list(stated)
    for change in (f for f in raw if f.key == CHANGED_FROM):
        keys = {
            f.key
            for f in stated
            if f.key not in MULTI_KEYS and not f.listed and _same_value(f.key, f.value, change.was)
        }
        if len(keys) != 1:
            continue
        key = keys.pop()
        if not change.value:  # "no longer tied to Boston": what earlier documents said goes
            out = [
                f
                for f in out
                if not (
                    f.key == key
                    and f.updated_at < change.updated_at
                    and _same_value(key, f.value, change.was)
                )
            ]
            continue
        value = canonical_value(key, change.value)
        if value is not None:
            out.append(replace(change, key=key, value=value, structured=False))
    return out


def _same_value(key: str, value: str, named: str) -> bool:
    """Whether ``named`` names the value: equal after folding, or the same place."""
    if key == "location":
        return same_place(value, named) or fold(place_name(value)) == fold(named)
    return fold(value) == fold(named) or _bare(key, value) == fold(named)


def resolve_by_agreement(raw: Sequence[RawFacet]) -> list[RawFacet]:
    """A leaf's facets, with each export key no name or form explained taken for the
    canonical key whose values most of its own values are in the leaf's other documents: an
    export's ``vacancyName: Backend Engineer`` is the title a brief of the same project
    states ("we are hiring a Backend Engineer")."""
    known: dict[str, set[str]] = defaultdict(set)
    for f in raw:
        if f.resolved and f.key in KEY_ORDER:
            known[f.key].add(_bare(f.key, f.value))
    unresolved: dict[str, set[str]] = defaultdict(set)
    for f in raw:
        if not f.resolved:
            unresolved[f.key].add(_bare("title", f.value))
    for values in unresolved.values():
        values.difference_update(FLAG_WORDS)  # a scorecard's "overall: Yes" is no visa sponsorship
    renamed: dict[str, str] = {}
    for key, values in unresolved.items():
        hits = {k for k, vs in known.items() if len(values & vs) * 2 > len(values)}
        if len(hits) == 1:
            renamed[key] = hits.pop()  # most of its values: one tag of five is no key
    out = []
    for f in raw:
        if f.key in renamed:
            target = renamed[f.key]
            value = canonical_value(target, f.value) or f.value
            f = replace(f, key=target, value=value, resolved=True)
        out.append(f)
    return out


def _bare(key: str, value: str) -> str:
    """A value as compared across documents: folded, without a leading seniority word."""
    words = fold(value).split()
    if key == "title" and len(words) > 1 and words[0] in SENIORITY_WORDS:
        words = words[1:]
    return " ".join(words)


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


def _merge_misspellings(groups: dict[str, list[RawFacet]]) -> None:
    """Fold a value only prose states into the value an export states that it misspells
    ("Team Leadersip" in a brief, "Team Leadership" in the export): one fact, both sources."""
    exported = [g for g, fs in groups.items() if any(f.structured for f in fs)]
    for g in [g for g, fs in groups.items() if not any(f.structured for f in fs)]:
        right = next((e for e in exported if e != g and near_spelling(e, g)), None)
        if right is not None:
            groups[right] += [replace(f, value=groups[right][0].value) for f in groups.pop(g)]


#: Two sums written as a range: "55,000–64,000", "60-72k", "60000 to 72000".
_A_RANGE = re.compile(r"\d[\d,.' ]*\s*k?\s*(?:[-\u2013\u2014]|to)\s*\D{0,4}\d")


def reconcile(
    raw: Sequence[RawFacet], max_facets: int = 30, emphasized: Sequence[str] = ()
) -> list[Facet]:
    """Merge one leaf's raw facets: union multi-valued keys, resolve conflicts on the others.

    A conflict on a single-valued key keeps the value from structured documents (or prose
    that states a change: "the role is now hybrid") over prose, then the most recent
    document, then the most documents; ties go to the smallest doc id.
    """
    by_key: dict[str, dict[str, list[RawFacet]]] = defaultdict(lambda: defaultdict(list))
    for f in _split_seniority(resolve_changes(resolve_by_agreement(raw))):
        by_key[f.key][fold(f.value)].append(f)
    facets: list[Facet] = []
    for key in sorted(by_key, key=lambda k: key_rank(k, emphasized)):
        groups = by_key[key]
        if key in MULTI_KEYS or any(i.listed for g in groups.values() for i in g):
            _merge_misspellings(groups)
            chosen = sorted(groups)
        else:
            # Stable sorts: the last one decides, earlier ones break its ties.
            order = sorted(groups, key=lambda g: min(i.doc_id for i in groups[g]))
            order.sort(
                key=lambda g: (
                    # a role's pay is a band: one sum is an offer's, unless stated as a change
                    key != "salary_range"
                    or any(_A_RANGE.search(i.value) for i in groups[g])
                    or any(i.changes for i in groups[g]),
                    any(i.structured or i.changes for i in groups[g]),
                    # of one date, the value stated as a change ("drops to 1 head")
                    max((i.updated_at, i.changes) for i in groups[g]),
                    len({i.doc_id for i in groups[g]}),
                    # a site and its city in one export ("site: Sint-Servaas", "city:
                    # Maastricht"): the city
                    key != "location" or city_name(place_name(groups[g][0].value)) is not None,
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


#: The most dates a leaf's timeline reads its documents at (each is one reconciliation of
#: the documents up to it). A leaf with more dates of documents stating facts reads the
#: latest ones, and takes everything before them as of the earliest of those.
MAX_TIMELINE_DATES = 120


def timeline(
    raw: dict[str, list[RawFacet]], when: dict[str, str], emphasized: Sequence[str] = ()
) -> tuple[dict[tuple[str, str], str], list[Facet]]:
    """A leaf's facts as its documents stood at each date: reconcile the documents dated up
    to it (and the undated ones), date after date, as a rebuild on that day would.

    ``raw``: each document's raw facets, in the order :func:`reconcile` reads them;
    ``when``: each document's date (:func:`hltm_resources.dates.instant`, "" undated).

    Returns, for each fact holding at the last date (by key and folded value), the date
    since when it holds; and the facts that held once and stopped, each with
    ``valid_from`` and ``valid_to``: replaced by another value of its key, or no longer
    stated by any. A fact that only moved (another key now holds its value, the same place
    is now written another way) or was written differently is not history."""
    dates = sorted({when[d] for d, facts in raw.items() if facts and when.get(d)})
    if len(dates) < 2:
        return {}, []
    dates = dates[-MAX_TIMELINE_DATES:]
    opened: dict[tuple[str, str], tuple[str, Facet]] = {}
    history: list[Facet] = []
    for t in dates:
        known = [f for d, facts in raw.items() if not when.get(d) or when[d] <= t for f in facts]
        now = reconcile(known, max_facets=len(known) + 1, emphasized=emphasized)
        held = {(f.key, fold(f.value)): f for f in now}
        values_now = {fold(f.value) for f in now}
        carried: dict[tuple[str, str], str] = {}
        for ident, (start, old) in list(opened.items()):
            if ident in held:
                opened[ident] = (start, held[ident])
                continue
            del opened[ident]
            same = [f for f in now if f.key == old.key and _same_value(old.key, f.value, old.value)]
            if same:  # the same value, written another way: it holds on
                carried[(same[0].key, fold(same[0].value))] = start
            elif any(f.key == old.key for f in now) or fold(old.value) not in values_now:
                history.append(replace(old, support=1, valid_from=start, valid_to=t))
        for ident, f in held.items():
            if ident not in opened:
                opened[ident] = (carried.get(ident, t), f)
    return {ident: start for ident, (start, _) in opened.items()}, history
