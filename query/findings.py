"""The facts that answer a question, each with the node that holds it and its documents.

After a question is read (:class:`~hltm_resources.engines.base.Analysis`) and the leaves it is
about are found (its constraints verified on every leaf of the scope), the answer is read off
memory, never composed from what is merely similar:

- **a facet key asked** ("Where is this role located?"): each subject leaf's value of that key,
  from its facets (with the documents the facet comes from) or, where its facets hold none,
  from what its evidence states (:func:`~query.verification.leaf_values`);
- **a fact no facet holds** (a code name, a hiring lead, the candidate who was strong in
  gRPC): the passage of the subject leaves that names what is asked, and in it the words that
  answer: the value after the label that names it ("Internal code name: keen-violet-811"), or
  for "who" a person's name; the passage is quoted;
- **why**: the rejection reasons of the subject leaves, or of the one candidate the question
  names (the reasons its note on them states).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from hltm_resources.engines.base import Analysis, Finding
from hltm_resources.engines.extractive.documents import is_feedback_kind
from hltm_resources.engines.negation import NEGATORS, tokenize
from hltm_resources.engines.understanding import LEAF_WORDS, singular, stem
from hltm_resources.engines.vocabulary import (
    ALIASES,
    CHANGE_VERBS,
    KEY_ALIASES,
    SENIORITY_WORDS,
    TITLE_HEADS,
    same_value_key,
)
from hltm_resources.text import (
    NUMBER_WORDS,
    STOPWORDS,
    fold,
    humanize_key,
    number_pattern,
    unaccented,
)
from query.verification import (
    KnownValues,
    LeafFacts,
    Passage,
    ScopeLeaves,
    about_role,
    evidence_source,
    leaf_values,
    mentions,
    one_valued,
)
from query.verification import states as states_value

#: Words of a label or question that say how a thing is named, not what it is.
GENERIC_WORDS = frozenset("name names full value label text internal the of".split())
#: At most this many subject leaves get a finding each (a fact asked of many is a list).
MAX_SUBJECTS = 12
#: Where a passage's sentences end (not inside "job.offices.name").
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
#: Words a label may have at most ("Reason for rejection").
LABEL_WORDS = 4


def sentences_of(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


_SEPARATOR = re.compile(r"\s*::\s*|\s+=\s+")


def labelled(text: str, labels: frozenset[str] = frozenset()) -> list[tuple[str, str]]:
    """The ``label: value`` units of a passage, in order: export lines ("job.level: Junior",
    "Hiring Manager: Goran Yilmaz", packed one after the other) and labels in prose ("Code
    name: x."). A label is the word before a colon, or the longest run of up to four words
    before it that names a key (``labels``: snake_case names, with the alias table's)."""
    out: list[tuple[str, str]] = []
    for sentence in sentences_of(text):
        sentence = _SEPARATOR.sub(": ", sentence)  # "Manager :: Kees Bakker", "hc = 2"
        words = sentence.split(" ")
        ends = [i for i, w in enumerate(words) if w.endswith(":") and len(w) > 1]
        starts = []
        for i in ends:
            first = i
            for n in range(min(LABEL_WORDS, i + 1), 1, -1):
                name = "_".join(fold(w) for w in words[i - n + 1 : i + 1]).replace(" ", "_")
                if name in labels or name in KEY_ALIASES:
                    first = i - n + 1
                    break
            starts.append(first)
        for j, (first, end) in enumerate(zip(starts, ends, strict=True)):
            stop = starts[j + 1] if j + 1 < len(starts) else len(words)
            label = " ".join(words[first : end + 1])[:-1]
            value = " ".join(words[end + 1 : stop]).strip().rstrip(".;,")
            if value:
                out.append((label, value))
    return out


#: A person's name as documents write one: two or three capitalized words.
_UPPER, _LOWER = "A-ZÀ-ÖØ-Þ", "a-zß-öø-ÿ"
_PERSON = re.compile(rf"\b([{_UPPER}][{_LOWER}'\-]+(?:\s+[{_UPPER}][{_LOWER}'\-]+){{1,2}})\b")
#: A date as notes write one: "2026-05-01", "1 May 2026", "May 1", "29 Jan".
_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_DATE = re.compile(
    rf"\b(\d{{4}}-\d{{2}}-\d{{2}}|\d{{1,2}}\s+{_MONTH}(?:\s+\d{{4}})?|{_MONTH}\s+\d{{1,2}}"
    rf"(?:,?\s+\d{{4}})?|(?:early|mid|late)[- ]{_MONTH}|q[1-4](?:\s+\d{{4}})?)\b",
    re.I,
)
#: Words by which a note gives a date that replaces another ("new start date", "moved to",
#: "pushed back to", "postponed").
_NEW_DATE = re.compile(
    r"\b(?:new|revised|updated) (?:start(?:ing)? )?date\b|\bstart(?:ing)? (?:date )?(?:is )?"
    r"(?:now|moved|pushed|postponed|delayed)\b|\b(?:moved|pushed back|postponed|delayed) "
    r"(?:the |their |his |her )?start\b",
    re.I,
)
#: The labels of a message's date in its header, in the languages notes are written in.
_SENT_LABELS = frozenset(
    "sent date datum fecha data envoye envoye le gesendet received verzonden skickat sendt".split()
)
_SENT_BEFORE = re.compile(
    r"\b(?:" + "|".join(sorted(_SENT_LABELS, key=len, reverse=True)) + r")\s*:\s*(?:\w{3},?\s*)?$",
    re.I,
)


def _sent_on(text: str, m: re.Match) -> bool:
    """Whether the date ``m`` found in ``text`` is when a message was sent ("Sent: Mon, 10
    Feb 2025"), not a date it states."""
    return bool(_SENT_BEFORE.search(unaccented(text[max(0, m.start() - 24) : m.start()])))


#: A name written in capitals inside a sentence ("Project Kestrel", "Albatross").
_PROPER = re.compile(rf"\b([{_UPPER}][\w'\-]*(?:\s+[{_UPPER}][\w'\-]*){{0,2}})")
_NUMBER_WORDS = {**NUMBER_WORDS, "a dozen": 12}
_NUMBER = number_pattern(_NUMBER_WORDS)


#: Nouns that name a kind of thing a role asks for ("framework", "tool", "certification"):
#: a question asking "which <kind>" asks for one of the role's skills.
KIND_NOUNS = frozenset(
    "framework library language tool software system platform technology stack database "
    "cloud certification certificate card licence license qualification suite package "
    "engine editor methodology".split()
)
#: Words by which a question asks for what is nice to have rather than required.
_NICE = re.compile(r"\b(?:a plus|nice[- ]to[- ]haves?|bonus|preferred|desirable|pluses)\b", re.I)


def kind_asked(analysis: Analysis, question: str) -> str:
    """The kind of thing a one-fact question asks for by a noun no key holds ("javascript
    framework", "search technology", "warehouse management system"), or ""."""
    if analysis.form == "fact" and analysis.asked_key in ("language", "certification"):
        return humanize_key(analysis.asked_key).lower()  # "which languages are a plus"
    words = analysis.asked_phrase.split()
    if analysis.form != "fact" or analysis.asked_key or not words:
        return ""
    return analysis.asked_phrase if singular(words[-1]) in KIND_NOUNS else ""


def kind_keys(question: str) -> tuple[str, ...]:
    """The keys whose values a kind asked for is read from: nice-to-haves first when the
    question asks for what is a plus."""
    if _NICE.search(question):
        return ("preferred_skill", "skill")
    return ("skill", "preferred_skill")


#: A question about what an offer pays ("what did we offer", "the offer letter", "how much
#: was she offered").
OFFERED = re.compile(r"\boffer(?:s|ed|ing)?\b", re.I)
PAY_ASKED = re.compile(r"\bhow much\b|\bsalary\b|\bpay\b|\bpaid\b|\bcomp\b", re.I)
#: A sum of money as an offer writes it: "€ 7.700", "4 200 €", "CAD 108,000", "£52k".
_OFFER_SUM = re.compile(
    r"(?:[€£$]|\b(?:EUR|GBP|USD|CAD|CHF|PLN|SEK|NOK|DKK|AUD)\b)\s?\d[\d.,'\u2019 ]*\d(?:\s?k\b)?"
    r"|\b\d[\d.,'\u2019 ]*\d(?:\s?k)?\s?(?:[€£]|\b(?:EUR|GBP|USD|CAD|CHF|PLN|SEK|NOK|DKK)\b)"
)


def offer_findings(
    leaves: ScopeLeaves, subjects: Sequence[str], names: Mapping[str, str]
) -> list[Finding]:
    """What the subject leaves' offers pay: the first sum of money in each leaf's offer
    (a document of kind offer, else a note line that plans one: "Offer planned at CAD
    108,000"), quoted with its line. A band is the role's; an offer is one candidate's."""
    out: list[Finding] = []
    for node in subjects[:MAX_SUBJECTS]:
        facts = leaves.facts.get(node)
        if facts is None:
            continue
        passages = [p for p in facts.passages if p.kind == "offer"] or [
            p for p in facts.passages if OFFERED.search(p.text)
        ]
        for p in sorted(passages, key=lambda p: (p.doc_id, p.passage_id)):
            parts = re.split(r"\n|(?<=[.;])\s+(?=[A-Z])|\s*•\s*|\s·\s", p.text)
            said = [s for s in parts if _OFFER_SUM.search(s)]
            if p.kind != "offer":
                said = [s for s in said if OFFERED.search(s)]
            if said:
                quote = said[0].strip()
                m = _OFFER_SUM.search(quote)
                amount = m.group().strip()
                if len(quote) > 160:  # the words around the sum, in a passage of one line
                    start = quote.rfind(" ", 0, max(0, m.start() - 60)) + 1
                    end = quote.find(" ", min(len(quote), m.end() + 60))
                    quote = "… " + quote[start : end if end > 0 else None] + " …"
                out.append(Finding(node, names.get(node, node), amount, None, (p.doc_id,), quote))
                break
    return out


def key_findings(
    leaves: ScopeLeaves,
    subjects: Sequence[str],
    key: str,
    known: Sequence[str],
    names: Mapping[str, str],
) -> list[Finding]:
    """Each subject leaf's values of ``key`` (see the module docstring)."""
    out: list[Finding] = []
    cache: dict = {}
    rivals_of = KnownValues(known)
    for node in subjects[:MAX_SUBJECTS]:
        facts = leaves.facts.get(node)
        if facts is None:
            continue
        values = leaf_values(facts, key, known, cache)
        for value in values:
            sources = _facet_sources(facts, key, value)
            if not sources:
                rivals = [] if not one_valued(key) else rivals_of.rivals(value)
                doc = evidence_source(facts.passages, key, value, rivals)
                sources = (doc,) if doc else ()
            quote = _quote(facts.passages, sources, value)
            out.append(Finding(node, names.get(node, node), value, key, sources, quote))
    return out


#: How the parts of an attribute held as an object are ordered in an answer.
_PART_ORDER = ("min", "from", "low", "max", "to", "high")


def part_findings(
    leaves: ScopeLeaves, subjects: Sequence[str], key: str, names: Mapping[str, str]
) -> list[Finding]:
    """The attribute ``key`` where a leaf's export holds it as a range of parts
    (``salary.min``, ``salary.max``, ``salary.currency``: facets ``salary_min`` ...): its
    parts' values together, bounds first, with their documents."""
    prefixes = tuple(f"{a}_" for a in (key, *ALIASES.get(key, ())))
    out = []
    for node in subjects[:MAX_SUBJECTS]:
        facts = leaves.facts.get(node)
        if facts is None:
            continue
        parts = sorted(
            (k for k in facts.values if k.startswith(prefixes)),
            key=lambda k: (
                _PART_ORDER.index(k.rsplit("_", 1)[1])
                if k.rsplit("_", 1)[1] in _PART_ORDER
                else len(_PART_ORDER),
                k,
            ),
        )
        if not parts:
            continue
        bounds = [v for k in parts if k.rsplit("_", 1)[1] in _PART_ORDER for v in facts.values[k]]
        rest = [v for k in parts if k.rsplit("_", 1)[1] not in _PART_ORDER for v in facts.values[k]]
        if not bounds:
            continue  # parts that are no range ("requirements.optional") are other keys
        value = " ".join([" - ".join(bounds), *rest]).strip()
        sources = tuple(
            dict.fromkeys(d for (k, _), docs in facts.sources.items() if k in parts for d in docs)
        )
        quote = "; ".join(f"{k}: {', '.join(facts.values[k])}" for k in parts)
        out.append(Finding(node, names.get(node, node), value, key, sources, quote))
    return out


def mentioned_values(
    leaves: ScopeLeaves, node: str, key: str, known: Sequence[str], names: Mapping[str, str]
) -> list[Finding]:
    """The values of a one-value ``key`` that the passages of ``node`` mention, not negated,
    each with the sentence that does, when they name more than one and memory holds none
    (a brief saying "It's a Toronto position" beside "our design team is in Berlin"): what a
    person needs to decide, quoted, never a fact chosen for them."""
    facts = leaves.facts.get(node)
    if facts is None:
        return []
    out = []
    for value in known:
        forms = [f for f in dict.fromkeys((fold(value), fold(value.split(",")[0]))) if f]
        for p in facts.passages:
            if not any(f" {f} " in f" {fold(p.text)} " for f in forms):
                continue
            if not mentions(p.tokens, value) or not states_value(p, key, value):
                continue
            quote = _unit_around(p.text, value)
            out.append(Finding(node, names.get(node, node), value, key, (p.doc_id,), quote))
            break
    return out


def _facet_sources(facts: LeafFacts, key: str, value: str) -> tuple[str, ...]:
    same = same_value_key(key, value)
    found: list[str] = []
    for (k, v), sources in facts.sources.items():
        if k == key and (same_value_key(key, v) == same or fold(value) in fold(v)):
            found += sources
    return tuple(dict.fromkeys(found))


def _quote(passages: Sequence[Passage], sources: Sequence[str], value: str) -> str:
    """The words of a source document's passage that state ``value`` (its sentence or its
    ``label: value`` unit), if one does."""
    for p in passages:
        if p.doc_id in sources and p.text and mentions(p.tokens, value):
            return _unit_around(p.text, value)
    return ""


def _unit_around(text: str, value: str) -> str:
    """The ``label: value`` unit or the sentence of ``text`` that holds ``value`` (or, for a
    place, its name before the comma)."""
    forms = [f for f in dict.fromkeys((fold(value), fold(value.split(",")[0]))) if f]
    for form in forms:
        for label, said in labelled(text):
            if form in fold(said):
                return f"{label}: {said}"
        for sentence in sentences_of(text):
            if form in fold(sentence):
                return sentence
    return ""


#: At most this many answers from the evidence (the best passages, tied).
MAX_FINDINGS = 5
#: A passage up to this long is quoted whole when the question asks what it says.
QUOTE_CHARS = 400
#: Passages read for an answer, best scored first.
MAX_READ = 40


def evidence_findings(
    leaves: ScopeLeaves,
    subjects: Sequence[str],
    analysis: Analysis,
    question: str,
    names: Mapping[str, str],
    known_values: set[str],
    labels: frozenset[str] = frozenset(),
    meaning: Mapping[str, float] | None = None,
) -> list[Finding]:
    """What the subject leaves' passages say that answers a question about a fact no facet
    holds (see the module docstring): the best passage whose words answer, per leaf.

    ``meaning``: passage id -> closeness in meaning to the question. It orders passages the
    words score alike; and when no passage's words answer "who", the short passage closest in
    meaning names its subject ("Which candidate pulled out?": "Kenji Watanabe withdrew ...")."""
    meaning = meaning or {}
    phrase = [w for w in fold(analysis.asked_phrase).split() if w not in STOPWORDS]
    wanted = _phrase_forms(phrase)
    cues = [fold(c) for c in (*analysis.mentions, *analysis.context_words) if c]
    required = list(cues)  # a candidate, "GraphQL": the passage must name it
    if len(subjects) == 1:  # at a leaf, what the question names is said in its passages
        cues += [fold(c.value or "") for c in analysis.constraints]
    content = {
        stem(w)
        for w in fold(question).split()
        if w not in STOPWORDS and len(w) > 2 and w not in phrase
    }
    # The question's words that say what is asked, not which leaf ("accepted the offer").
    named = {stem(w) for c in analysis.constraints for w in fold(c.value or "").split()}
    named |= {stem(w) for m in analysis.mentions for w in fold(m).split()}
    own = content - named
    # A fact of the role asked by its key is read in the role's documents, not in notes on
    # candidates (as verification reads evidence: :func:`~query.verification.about_role`).
    key = analysis.asked_key
    role_fact = analysis.answer_type == "value" and key is not None and about_role(key)
    scored: list[tuple[float, str, Passage]] = []
    unworded: list[tuple[float, str, Passage]] = []
    for node in subjects:
        facts = leaves.facts.get(node)
        if facts is None:
            continue
        naming = {
            p.doc_id
            for p in facts.passages
            if any(c and f" {c} " in _read(p).folded for c in required)
        }
        for p in facts.passages:
            if required and p.doc_id not in naming:
                continue  # what the question names (a candidate, "GraphQL") must be there
            if role_fact and is_feedback_kind(p.kind):
                continue  # a note on a candidate states no pay of the role ("salary expectations")
            score = _passage_score(p, wanted, cues, content)
            if score > 0 and analysis.answer_type == "date" and _NEW_DATE.search(p.text):
                score += 100  # "New start date for all four: 10 March": the date as it stands
            if score > 0:
                scored.append((score, node, p))
            elif meaning and (not required or p.doc_id in naming):
                unworded.append((meaning.get(p.passage_id, 0.0), node, p))
    scored.sort(key=lambda t: (-t[0], -meaning.get(t[2].passage_id, 0.0), t[1], t[2].passage_id))
    out: list[Finding] = []
    seen: set[tuple[str, str]] = set()
    answered: dict[str, float] = {}  # leaf -> the score of its passages that answered
    for tried, (score, node, p) in enumerate(scored):
        if tried >= MAX_READ:
            break
        if node in answered and score < answered[node]:
            continue  # per leaf, only the passages that answer best (several notes may tie)
        value, quote = _answer_in(p, wanted, analysis, cues, known_values, labels, own, required)
        if not value or (node, fold(value)) in seen:
            continue
        answered[node] = score
        seen.add((node, fold(value)))
        if analysis.answer_type == "person" and quote and cues:
            # The note names its candidate in one unit and what the question says of them
            # in another ("Candidate: X" ... "Notes: strong gRPC depth"): quote both.
            said = _label_naming(p.text, cues)
            if said and said not in quote and not any(c and c in fold(quote) for c in cues):
                quote = f"{quote} … {said}"
        out.append(Finding(node, names.get(node, node), value, None, (p.doc_id,), quote))
        if len(out) >= MAX_FINDINGS:
            break
    notes = [u for u in unworded if len(labelled(u[2].text)) < 2]  # not an export's fields
    if not out and notes and analysis.answer_type == "person":
        # No passage says it in the question's words: the one closest in meaning, of a
        # subject leaf, names whom it is about first (a note's subject; an export's field
        # values are no one: "United States").
        _, node, p = max(notes, key=lambda t: (t[0], t[2].passage_id))
        people = [n for n in _people(p.text, known_values) if fold(n) not in cues]
        if people and len(p.text) <= QUOTE_CHARS:
            quote = _unit_naming(p.text, [fold(people[0])]) or p.text
            out.append(Finding(node, names.get(node, node), people[0], None, (p.doc_id,), quote))
    return out


def states_key(facts: LeafFacts | None, key: str) -> bool:
    """Whether a leaf states a value of ``key``: a facet of it, or a passage that names it
    as a label ("Code name: x", "codename x", "internal code name - x")."""
    if facts is None:
        return False
    if facts.values.get(key):
        return True
    forms = _phrase_forms(fold(humanize_key(key)).split())
    return any(
        any(_has_stems(_read(p).stems, [stem(w) for w in form]) for form in forms)
        for p in facts.passages
    )


def _phrase_forms(words: list[str]) -> list[list[str]]:
    """What a passage may call the asked thing: its words, their run-together form
    ("codename"), its head without the words before it ("code name" of "internal code
    name"), and the names the alias table gives the key it names ("HM" -> "hiring
    manager")."""
    if not words:
        return []
    forms = [words]
    if len(words) > 1:
        forms.append(["".join(words)])
    for i in range(1, len(words) - 1):
        forms += [words[i:], ["".join(words[i:])]]
    key = KEY_ALIASES.get("_".join(words))
    if key is not None:
        forms += [
            a.split("_")
            for a, k in KEY_ALIASES.items()
            # a word that names the searches themselves names no attribute in a note
            if k == key and a != "_".join(words) and a not in LEAF_WORDS
        ]
    return forms


@dataclass(frozen=True)
class _Read:
    """A passage's words as the findings read them, made once per passage."""

    joined: str  # " word word ... " (split as :func:`_split_tokens`)
    stems: tuple[str, ...]  # the words' stems, in order
    folded: str  # " folded text "


def _read(p: Passage) -> _Read:
    read = p.__dict__.get("_findings_read")
    if read is None:
        tokens = _split_tokens(p.text)
        read = _Read(f" {' '.join(tokens)} ", tuple(stem(t) for t in tokens), f" {fold(p.text)} ")
        p.__dict__["_findings_read"] = read  # the passage is cached with its scope
    return read


def _passage_score(
    p: Passage, wanted: list[list[str]], cues: list[str], content: set[str]
) -> float:
    read = _read(p)
    stems = set(read.stems)
    score = 0.0
    for form in wanted:
        forms = [stem(w) for w in form]
        if stems.issuperset(forms) and _has_stems(read.stems, forms):
            score += 4.0
            break
    for cue in cues:
        if cue and f" {cue} " in read.joined:
            score += 3.0
    score += sum(1.0 for s in content if s in stems) * 0.5
    return score


def _has_stems(stems: Sequence[str], form: Sequence[str]) -> bool:
    n = len(form)
    return any(tuple(stems[i : i + n]) == tuple(form) for i in range(len(stems) - n + 1))


def _split_tokens(text: str) -> list[str]:
    """Folded words with camelCase and dotted paths split ("hiringLead" -> hiring lead)."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", text)
    return [t for t in tokenize(spaced) if t.isalnum()]


def _names_thing(tokens: list[str], form: list[str]) -> bool:
    """The words of ``form`` in a row, naming the thing itself: not as a modifier of a step
    ("the hiring manager interview" names an interview)."""
    n = len(form)
    for i in range(len(tokens) - n + 1):
        if all(stem(tokens[i + k]) == stem(form[k]) for k in range(n)):
            if i + n < len(tokens) and tokens[i + n] in _STEP_WORDS:
                continue
            return True
    return False


_STEP_WORDS = frozenset("interview interviews round rounds stage screen call sync loop".split())


def _has_run(tokens: list[str], form: list[str]) -> bool:
    n = len(form)
    return any(
        all(stem(tokens[i + k]) == stem(form[k]) for k in range(n))
        for i in range(len(tokens) - n + 1)
    )


def _answer_in(
    p: Passage,
    wanted: list[list[str]],
    analysis: Analysis,
    cues: list[str],
    known_values: set[str],
    labels: frozenset[str],
    content: set[str] = frozenset(),
    named: Sequence[str] = (),
) -> tuple[str, str]:
    """The words of passage ``p`` that answer, and the unit they are quoted from:

    - the value after the label that best names what is asked ("Code name: x" for the code
      name; "Candidate: Goran Costa" for which candidate);
    - in prose, the words after "<what is asked> is", or for "who" the person the sentence
      naming what is asked (or the question's other words) names;
    - else, when the passage names who or what the question is about (``named``: the
      names and words the question requires, not the role's values), its sentence."""
    text = p.text
    units = labelled(text, labels)
    if analysis.answer_type == "quote":
        # "What happened with X?": the note on X, whole when it is short.
        unit = text.strip() if len(text) <= QUOTE_CHARS else _unit_naming(text, cues)
        return unit, unit
    best = _best_label(units, wanted)
    if best is not None:
        label, value = units[best]
        if analysis.answer_type == "person":
            person = _people(value, known_values)
            if person:
                return person[0], f"{label}: {value}"
        elif value:
            return value, f"{label}: {value}"
    if analysis.answer_type == "date":
        for label, value in units:  # "target_start: 2026-05-01" for "when ... start?"
            if fold(label) in _SENT_LABELS:
                continue  # "Sent: Mon, 10 Feb 2025": when a message was written
            if content & {stem(w) for w in _split_tokens(label)} and (m := _DATE.search(value)):
                return m.group(1), f"{label}: {value}"
    said_of_someone = ""  # a sentence that answers "who", naming no one itself
    for sentence in sentences_of(text):
        tokens = _split_tokens(sentence)
        names_it = any(_names_thing(tokens, form) for form in wanted)
        cued = any(c and c in fold(sentence) for c in cues)
        # The question's own words ("who accepted the offer?", "when ... start?"): a
        # sentence stating one of them may answer a person, a number or a date.
        worded = analysis.answer_type != "value" and bool(content & {stem(t) for t in tokens})
        if not (names_it or cued or worded):
            continue
        if (
            analysis.answer_type == "person"
            and len(units) >= 2
            and not (names_it or worded or any(c and c in fold(sentence) for c in named))
        ):
            continue  # an export's fields of the role ("level: Junior") name no one to answer
        if analysis.answer_type == "person":
            people = [n for n in _people(sentence, known_values) if fold(n) not in cues]
            if people:
                return people[0], sentence
            if worded:
                said_of_someone = said_of_someone or sentence
        elif analysis.answer_type == "number":
            m = _NUMBER.search(sentence)
            if m:
                word = m.group(1).lower()
                return str(_NUMBER_WORDS.get(word, word)), sentence
        elif analysis.answer_type == "date":
            dates = [m for m in _DATE.finditer(sentence) if not _sent_on(sentence, m)]
            if dates and (names_it or content & {stem(t) for t in tokens}):
                # of several dates, the one nearest the question's words ("start ... 1 Sept")
                at = [
                    w.start()
                    for w in re.finditer(r"\w+", sentence)
                    if stem(fold(w.group())) in content
                ]
                m = min(dates, key=lambda d: min((abs(d.start() - a) for a in at), default=0))
                return m.group(1), sentence
        elif names_it:
            after = _after_phrase(sentence, wanted) or _named_beside(sentence, wanted, known_values)
            if after:
                return after, sentence
    if analysis.answer_type == "person" and said_of_someone and len(text) <= QUOTE_CHARS:
        # A short note says it of its subject ("Joana Ribeiro - final round ... Decision:
        # OFFER."): the person it names first.
        people = [n for n in _people(text, known_values) if fold(n) not in cues]
        if people:
            unit = _unit_naming(text, [fold(people[0])]) or people[0]
            return people[0], f"{unit} … {said_of_someone}"
    if analysis.answer_type == "person" and any(c and c in fold(text) for c in named):
        # A note on one candidate names them once, as its subject ("Candidate: Goran Costa",
        # "Debrief for Yusuf Costa: ..."), when it names what the question does ("strong
        # gRPC depth").
        for label, value in units:
            people = _people(value, known_values) or _people(label, known_values)
            if people:
                return people[0], f"{label}: {value}"
        people = [n for n in _people(text, known_values) if fold(n) not in cues]
        if people:
            return people[0], _unit_naming(text, [fold(people[0])]) or text
    if analysis.mentions and analysis.answer_type in ("value", "quote"):
        unit = _unit_naming(text, [fold(m) for m in analysis.mentions])
        if unit:
            return unit, unit  # what the passage says about the one the question names
    return "", ""


def _best_label(units: list[tuple[str, str]], wanted: list[list[str]]) -> int | None:
    """The unit whose label shares most words (by stem) with what is asked, other than a
    generic word such as "name" ("Project code" for "internal code name")."""
    if not wanted:
        return None
    asked = {stem(w) for form in wanted for w in form if w not in GENERIC_WORDS}
    best, best_score = None, 0.0
    for i, (label, _) in enumerate(units):
        words = {stem(w) for w in _split_tokens(label)}
        joined = "".join(_split_tokens(label))
        score = len(asked & words) + (1.0 if any("".join(f) == joined for f in wanted) else 0.0)
        if score > best_score:
            best, best_score = i, score
    return best


def _label_naming(text: str, cues: list[str]) -> str:
    """The ``label: value`` unit naming a cue, else the sentence."""
    for label, value in labelled(text):
        if any(c and c in fold(value) for c in cues):
            return f"{label}: {value}"
    return _unit_naming(text, cues)


def _unit_naming(text: str, cues: list[str]) -> str:
    for sentence in sentences_of(text):
        if any(c and c in fold(sentence) for c in cues):
            return sentence
    return ""


def _after_phrase(sentence: str, wanted: list[list[str]]) -> str:
    """The words after "<phrase> is/was/:" in a sentence ("The code name is x"), or right
    after the phrase when they are a name or an amount ("Code name Albatross - ...", "Salary
    band €85k–€100k"), to the end of the clause."""
    for form in wanted:
        words = r"\b" + r"\W+".join(re.escape(w) for w in form) + r"\w*"
        m = re.search(words + r"\s*(?:is|was|:)\s+(.+)", sentence, re.I)
        if m:
            return _clean(m.group(1))
        m = re.search(f"(?i:{words})" + r"\s+([A-Z0-9$€£¥][^;,(]*?)(?:\s+-\s|[;,(]|$)", sentence)
        if m:
            return _clean(m.group(1))
    return ""


def _named_beside(sentence: str, wanted: list[list[str]], known_values: set[str]) -> str:
    """A name written in capitals in the sentence that names what is asked, not at its
    start and no value the scope knows ("Internally this is Project Kestrel - please keep
    the code name out of the ad")."""
    asked = {w for form in wanted for w in form}
    for m in _PROPER.finditer(sentence):
        if m.start() == 0 or not sentence[: m.start()].strip():
            continue
        name = m.group(1)
        if fold(name) in known_values or set(fold(name).split()) <= asked:
            continue
        return name
    return ""


def _clean(value: str) -> str:
    return value.strip().rstrip(".;,").strip()


def _people(text: str, known_values: set[str]) -> list[str]:
    """Persons' names in ``text``: capitalized words in a row that are no value of the
    scope's facets ("A/B Testing", "New York") and no label."""
    out = []
    for m in _PERSON.finditer(text):
        words = m.group(1).split()
        if text[m.end() : m.end() + 2].startswith(":"):
            words = words[:-1]  # "Ines Rossi Round:": the name, then a label
        name = " ".join(words)
        if len(words) < 2 or fold(name) in known_values:
            continue
        if any(fold(w) in _NOT_NAMES for w in words):
            continue  # "Declined Rejection", "Hiring Manager": words of a form, no person
        out.append(name)
    return out


#: Words of forms and decisions that are capitalized in notes but name no person.
_NOT_NAMES = frozenset(
    {a for a in KEY_ALIASES if "_" not in a}
    | set(
        "declined rejected reject advanced advance hired hire offer offered onsite interview "
        "round stage outcome decision reason rejection candidate applicant hiring manager "
        "notes note status result screen phone technical final panel feedback team".split()
    )
    | TITLE_HEADS  # "Staff Data Engineer" is a role, not a person
    | set(SENIORITY_WORDS)
)


def why_findings(
    leaves: ScopeLeaves,
    subjects: Sequence[str],
    analysis: Analysis,
    known: Sequence[str],
    names: Mapping[str, str],
) -> list[Finding]:
    """Why candidates were turned down: for a candidate the question names, the reasons the
    note naming them gives; else the subject leaves' rejection reasons."""
    key = "rejection_reason"
    people = [fold(m) for m in analysis.mentions]
    if not people:
        return key_findings(leaves, subjects, key, known, names)
    out: list[Finding] = []
    for node in subjects[:MAX_SUBJECTS]:
        facts = leaves.facts.get(node)
        if facts is None:
            continue
        notes = [p for p in facts.passages if any(n and n in fold(p.text) for n in people)]
        told: set[str] = set()
        for p in notes:
            reasons = [
                v for (k, v), sources in facts.sources.items() if k == key and p.doc_id in sources
            ]
            reasons += [
                v
                for v in known
                if v not in reasons and fold(v) and f" {fold(v)} " in f" {fold(p.text)} "
            ]
            for reason in dict.fromkeys(reasons):
                out.append(
                    Finding(node, names.get(node, node), reason, key, (p.doc_id,), p.text.strip())
                )
            if not reasons and p.doc_id not in told:
                # No reason stated as such: the note itself, whole when it is short (its
                # header names the candidate, its body says what happened).
                told.add(p.doc_id)
                note = " ".join(q.text.strip() for q in facts.passages if q.doc_id == p.doc_id)
                if len(note) > 2 * QUOTE_CHARS:
                    note = note[: 2 * QUOTE_CHARS].rsplit(" ", 1)[0] + " …"
                out.append(Finding(node, names.get(node, node), note, None, (p.doc_id,), note))
    return out


#: Words by which a sentence gives a cause ("after the budget freeze", "because the office
#: is closing", "due to ...").
_CAUSE = re.compile(
    r"\b(?:because|due to|owing to|as a result|after|since|following|given|so|"
    r"reason|why|freeze|closing|closes|approved|decided|budget|leave|consolidat\w*|"
    r"paused|cancel\w*|instead|therefore|hence|delay\w*|slip\w*|shortage|resign\w*|"
    r"declined)\b",
    re.I,
)
#: Verbs of a change, one for another: "pushed back" is said "moved", "delayed", "slips".
_CHANGED = frozenset(stem(w) for w in CHANGE_VERBS)
#: A message's headers: who wrote it and when, no cause.
_HEADERS = re.compile(
    r"\b(?:From|To|Cc|Date|Sent)\s*:.*?(?=\b(?:From|To|Cc|Date|Sent|Subject)\s*:)|\bSubject\s*:"
)
#: Question words that say nothing of what is asked about.
_WHY_WORDS = frozenset("why how come what reason is was did does do the this that any more".split())


def cause_findings(
    leaves: ScopeLeaves,
    subjects: Sequence[str],
    question: str,
    names: Mapping[str, str],
    meaning: Mapping[str, float] | None = None,
) -> list[Finding]:
    """Why something of a role is as it is (not why a candidate was turned down): the
    sentence of a subject leaf's notes that says most of what the question says and gives a
    cause, quoted with the sentence after it (a note states a change, then why)."""
    meaning = meaning or {}
    asked = {
        stem(w)
        for w in fold(question).split()
        if w not in STOPWORDS and w not in _WHY_WORDS and len(w) > 1
    }
    ranked = []
    for node in subjects[:MAX_SUBJECTS]:
        facts = leaves.facts.get(node)
        if facts is None:
            continue
        # The words naming the role ("the estates PM role") tell which role, not which of
        # its notes says why.
        naming = {stem(w) for w in fold(names.get(node, "")).split()}
        for p in facts.passages:
            said = sentences_of(_HEADERS.sub(" ", p.text))
            for i in range(len(said)):
                told = " ".join(said[i : i + 2])
                tokens = fold(told).split()
                words = {stem(w) for w in tokens}
                shared = len((asked - naming) & words)
                changed = {
                    stem(w)
                    for i, w in enumerate(tokens)
                    if stem(w) in _CHANGED and not NEGATORS & set(tokens[max(0, i - 2) : i])
                }  # "can't relocate" says no change
                if asked & _CHANGED and changed and not asked & changed:
                    shared += 1  # "why was the start pushed back": "the start moved to ..."
                if shared:
                    cause = bool(_CAUSE.search(told))
                    ranked.append(
                        (shared + cause, cause, meaning.get(p.passage_id, 0.0), node, p, told)
                    )
    if not ranked:
        return []
    score, _, _, node, p, told = max(ranked, key=lambda t: (t[0], t[1], t[2], t[4].passage_id))
    if score < 2:
        return []  # one word in common, and no cause, is no answer
    return [Finding(node, names.get(node, node), told, "cause", (p.doc_id,), told)]
