"""What a question asks, read against the memory of its scope (shared by both engines).

A question is read into an :class:`Analysis`:

- **its form**: one fact, a list of nodes matching constraints, a count, a distribution, or
  why; from the question's own syntax (its wh-word, "how many", "most common", the noun it
  asks for), not from a list of phrasings;
- **what it asks about**: a facet key of the scope, or, when no key is what it names, the
  words that name it ("code name", "hiring lead"), looked for in the evidence;
- **its constraints**: values of the scope that the question names *in that role*. A value
  is named as itself, its head ("Lisbon" for "Lisbon, Portugal"), another inflection of its
  words ("data engineering" for "Data Engineer"), its initials ("SRE", "ML Engineer"), or for a
  title by words only one of the scope's titles holds ("the backend search"). A value that
  modifies some other noun ("the onsite interview", "strong gRPC depth") is not a constraint
  on the role: it is left to the evidence;
- **names**: a recruiter the question names ("Kaito's searches") narrows the scope to their
  subtree; other names (a candidate) are looked for in the evidence.

Values are then matched by identity (see ``same_value_key``), never by a similarity
threshold: Junior is not Senior, Backend Engineer is not Frontend Engineer.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import Stemmer

from hltm_resources.engines.base import Analysis, MicroQuery, ParsedQuery, ScopeVocabulary
from hltm_resources.engines.negation import negated_in_text
from hltm_resources.engines.vocabulary import (
    CANDIDATE_KEYS,
    CURRENCY_WORDS,
    KEY_ALIASES,
    KEY_ORDER,
    MULTI_KEYS,
    NUMBER_DESCRIPTIONS,
    OPENING_NOUNS,
    TITLE_HEADS,
    WORKPLACE_WORDS,
    YES_NO_KEYS,
    country_of_place,
    is_title,
    place_name,
    region_of,
    same_place,
    same_value_key,
)
from hltm_resources.places import city_name, country_code, country_name
from hltm_resources.schema import TreeSchema
from hltm_resources.text import (
    NUMBER_WORDS,
    STOPWORDS,
    fold,
    humanize_key,
    unaccented,
    without_asides,
)

FORMS = ("fact", "list", "count", "distribution", "why")
#: What a question over a scope asks when it asks for countries: no facet holds it, the
#: scope's locations do (each counted by the country it is in).
COUNTRY_KEY = "country"
_STEMMER = Stemmer.Stemmer("english")

#: Words by which a question names the leaves themselves (a search, a req, ...).
LEAF_WORDS = frozenset(
    "search project opening requisition req job position posting vacancy role hire".split()
)
#: Nouns that, right after a value, keep it a constraint on the role ("remote roles", "Python
#: skills", "Toronto office", "senior level"): the leaves, their attributes and their setting.
ROLE_NOUNS = LEAF_WORDS | frozenset(
    "one ones level levels work working setup arrangement arrangements skill skills "
    "experience expertise knowledge background stack office offices based site location "
    "locations city cities team teams engineer engineers people person candidates hiring "
    "seniority title titles".split()
)
#: Words that mark a question about what is most common (a distribution).
DISTRIBUTION_WORDS = re.compile(
    r"\b(most|usually|typically|typical|common|commonest|frequent|frequently|mostly|"
    r"generally|tend to|top(?! out)|"
    r"preferences?|what kinds?|kinds? of|types? of|how often|on average|overall|main|"
    r"breakdown|distribution|mix of|split of)\b",
    re.I,
)
_WH = re.compile(
    r"(?:^\W*(?:(?:so|and|ok|okay|hey|quick question|remind me|tell me|can you tell me|"
    r"do you know|at|in|on|for|from|with|by|to|and)\W+)*|[,;:?.!\u2013\u2014]\s*|\s-\s*)"
    r"(how many|how much|what|which|who|whom|whose|where|when|why|list|show|find|"
    r"(?:the\s+)?(?:total\s+)?(?:number|count)\s+of|remind me of|tell me about|give me)\b(.*)$",
    re.I | re.S,
)
#: A question asked inside a sentence ("now that Declan is leaving who do I send ...").
_WH_INSIDE = re.compile(
    r"\b(who|whom|what|which|where|when|how many|how much)\s+"
    r"(?=(?:do|does|did|is|are|was|were|should|will|would|can|could)\b)(.*)$",
    re.I | re.S,
)
#: "Is there a code name for ...?", "Do we have a hiring manager on ...?": what is there.
#: Words before an attribute's name that say which of its values ("current salary band").
_WHICH_ONE = frozenset("current new latest present previous old original final actual".split())
#: A wh-word and "is" written as one word without the apostrophe ("whats", "wheres").
_CONTRACTED = re.compile(r"\b(what|where|who|when|how|that|there)s\b", re.I)
_THERE = re.compile(
    r"^\W*(is there|are there|do we have|do you have|does (?:it|this(?: \w+)?) have)\b(.*)$",
    re.I | re.S,
)
_WH_WORDS = frozenset(
    "how many|how much|what|which|who|whom|whose|where|when|why|list|show|find".split("|")
)
_YES_NO = re.compile(r"^\W*(is|are|was|were|does|do|did|has|have|can|will|could|any)\b", re.I)
_ANY = re.compile(r"\b(any|anything|are there|is there|do i have|do we have)\b", re.I)
_LEADING = frozenset(
    "s is are was were do does did the this that these those its their our my "
    "his her a an of all".split()
)
#: "How big", "how long": a question for a measure, answered by a number.
_HOW_MEASURE = re.compile(
    r"^\W*how\s+(?:big|large|long|old|high|far|small)\b(?:\s+(?:a|an|the|is|are|was)\s+(\w+))?",
    re.I,
)
#: "have a code name", "with an internal name": an attribute the leaves must state.
_HAVING = re.compile(
    r"\b(?:have|has|having|with|carry|carries|go(?:es)? by|use|uses|tied to|linked to)\s+"
    r"(?:a|an|any|some)\s+"
    r"((?:[\w-]+\s+){0,2}[\w-]+?)"
    r"\s*(?:\?|$|\b(?:and|or|in|at|for|on)\b)",
    re.I,
)
#: Nouns that ask for a date.
_DATE_NOUNS = frozenset("date day deadline".split())
#: Words by which a "who" asks for the recruiters ("who on the team is recruiting for ...").
_RECRUITING = re.compile(
    r"\b(?:recruit(?:s|ing)|on the team|(?:has|have) (?:\w+ ){0,2}open|is hiring(?! manager))\b",
    re.I,
)
#: Words that rank what follows ("the most common location"): not part of the noun.
_RANKING = frozenset("most more common commonest frequent usual typical top main popular".split())
#: Verbs a wh-question may go on with, which end the noun it asks for: regular past forms
#: and participles, and the common irregular past forms.
_VERBISH = re.compile(r"(ed|ing)$")
_IRREGULAR_PAST = frozenset(
    "stood got went came made took gave won left ran held kept brought felt put saw said "
    "told found became began chose did had".split()
)
_PERSON_KEYS = frozenset({"hiring_manager", "candidate", "applicant", "recruiter"})
_EVIDENCE_KEYS = frozenset({"candidate", "stage", "decision", "reason"})


#: Words by which questions ask about a key without naming a value of it.
_KEY_WORDS: dict[str, tuple[str, ...]] = {
    "title": (
        "what roles",
        "which roles",
        "kinds of roles",
        "kind of roles",
        "types of roles",
        "title",
        "titles",
        "hire for",
        "hires for",
        "hiring for",
        "what positions",
        "which positions",
        "job title",
        "job titles",
    ),
    "location": (
        "where",
        "located",
        "location",
        "locations",
        "city",
        "cities",
        "based",
        "office",
        "offices",
    ),
    "workplace_type": (
        "remote",
        "hybrid",
        "on-site",
        "onsite",
        "workplace",
        "work arrangement",
        "work setup",
        "working setup",
        "work model",
        "working model",
        "working pattern",
        "in office",
        "in-office",
    ),
    "skill": (
        "skill",
        "skills",
        "require",
        "required",
        "requires",
        "requiring",
        "requirement",
        "requirements",
        "technologies",
        "tech stack",
        "must have",
        "must-have",
    ),
    "rejection_reason": (
        "reject",
        "rejected",
        "rejects",
        "rejection",
        "rejections",
        "turned down",
        "declined",
        "passed on",
        "why not",
    ),
    "seniority": ("seniority", "senior", "junior", "level", "levels"),
    "department": ("department", "departments", "team", "teams"),
    "visa_sponsorship": ("sponsor", "sponsors", "sponsorship", "visa", "visas", "work permit"),
    "code_name": ("code name", "code names", "codename", "internal name", "internally"),
    "salary_range": ("salary", "salaries", "pay", "pays", "paid", "compensation", "wage"),
}


def asked_keys(question: str, keys: list[str] | set[str]) -> list[str]:
    """The facet keys among ``keys`` a question asks about by its wording ("where" ->
    location, "rejection reasons" -> rejection_reason, ...)."""
    low = question.lower()
    out = [
        k
        for k, words in _KEY_WORDS.items()
        if k in keys and any(re.search(rf"(?<![a-z]){re.escape(w)}(?![a-z])", low) for w in words)
    ]
    return out


@dataclass(frozen=True)
class Mention:
    """A value of the scope the question names: where (token span) and how."""

    key: str
    value: str
    start: int
    end: int
    how: str  # "exact" | "stem" | "initials" | "part"


@dataclass
class QuestionWords:
    """A question as folded tokens, with what each looked like."""

    text: str
    tokens: list[str] = field(default_factory=list)
    upper: list[bool] = field(default_factory=list)  # written in capitals (an acronym)
    capital: list[bool] = field(default_factory=list)  # written with a capital first letter
    possessive: list[bool] = field(default_factory=list)  # written with "'s" ("Kaito's")
    first: list[bool] = field(default_factory=list)  # the first word of a sentence
    raw: list[str] = field(default_factory=list)  # as written
    joined: list[bool] = field(default_factory=list)  # one word with the next ("on-site")

    @classmethod
    def of(cls, text: str) -> QuestionWords:
        out = cls(text)
        plain = unaccented(text)
        for m in re.finditer(r"[A-Za-z0-9][A-Za-z0-9+#&/.'\u2019-]*", plain):
            starts = not re.search(
                r"[^\s\"'(\-]", plain[: m.start()].split("?")[-1].split(". ")[-1].split("! ")[-1]
            )
            raw = m.group(0).rstrip(".'\u2019")
            possessive = bool(re.search(r"['\u2019]s$", raw))
            raw = re.sub(r"['\u2019]s$", "", raw)
            pieces = fold(raw).split()
            written = [w for w in re.split(r"[^A-Za-z0-9+#&']+", raw) if w]
            written = written if len(written) == len(pieces) else [raw] * len(pieces)
            for k, piece in enumerate(pieces):
                out.tokens.append(piece)
                letters = re.sub(r"[^A-Za-z]", "", raw)
                out.upper.append(len(letters) >= 2 and letters.isupper())
                out.capital.append(written[k][:1].isupper())  # "level" of "Senior-level": no
                out.possessive.append(possessive and k == len(pieces) - 1)
                out.first.append(starts and k == 0)
                out.raw.append(raw if len(pieces) == 1 else piece)
                out.joined.append(k < len(pieces) - 1)
        return out


@lru_cache(maxsize=100_000)
def stem(word: str) -> str:
    return _STEMMER.stemWord(word)


def _word_matches(q: str, v: str) -> str | None:
    """How a question word states a value's word: "exact", "stem" (same stem, or one stem the
    start of the other over six letters or more: "biostatistics", "biostatistician"), None."""
    if q == v or (len(v) >= 3 and q in (v + "s", v + "es")):
        return "exact"
    if len(q) < 4 or len(v) < 4:
        return None
    if q.endswith("ed") and v.endswith(("er", "or")):
        return None  # a past participle is no agent noun: "managed" is no "Manager"
    sq, sv = stem(q), stem(v)
    if sq == sv:
        return "stem"
    short, long_ = sorted((sq, sv), key=len)
    if len(short) >= 6 and long_.startswith(short):
        return "stem"
    return None


class ValueIndex:
    """The scope's values by their words and stems, so a question is matched only against
    the values that may occur in it (built once per vocabulary)."""

    def __init__(self, vocabulary: ScopeVocabulary):
        self.entries: list[tuple[str, str, tuple[str, ...]]] = []
        self.by_stem: dict[str, list[int]] = {}
        self.by_initials: dict[str, list[int]] = {}
        self.title_words: dict[str, dict[str, list[str]]] = {}
        for key, values in vocabulary.values.items():
            if key in vocabulary.count_keys:
                continue
            for value in values:
                words = tuple(fold(value).split())
                if not words or (len(words) == 1 and singular(words[0]) in LEAF_WORDS):
                    continue
                n = len(self.entries)
                self.entries.append((key, value, words))
                for w in (*words, *_city_words(key, value)):
                    self.by_stem.setdefault(stem(w)[:6], []).append(n)
                for i in range(len(words)):
                    for j in range(i + 2, min(len(words), i + 5) + 1):
                        initials = "".join(w[0] for w in words[i:j])
                        self.by_initials.setdefault(initials, []).append(n)
                if key == "title":
                    for w in set(words):
                        self.title_words.setdefault(w, {}).setdefault(key, []).append(value)

    def candidates(self, q: QuestionWords) -> list[int]:
        found: set[int] = set()
        for i, t in enumerate(q.tokens):
            found.update(self.by_stem.get(stem(t)[:6], ()))
            if q.upper[i]:
                found.update(self.by_initials.get(t, ()))
        return sorted(found)


def _city_words(key: str, value: str) -> tuple[str, ...]:
    """A place's city by its name in English, when the value writes it in another language
    ("rome" of "Roma, Italia"): a question names it either way."""
    if key != "location":
        return ()
    name = city_name(place_name(value))
    words = tuple(fold(name).split()) if name else ()
    return words if words != tuple(fold(place_name(value)).split()) else ()


def value_index(vocabulary: ScopeVocabulary) -> ValueIndex:
    index = vocabulary.derived.get("understanding_index")
    if not isinstance(index, ValueIndex):
        index = vocabulary.derived["understanding_index"] = ValueIndex(vocabulary)
    return index


def singular(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("es") and word[:-2].endswith(("ch", "sh", "x")):
        return word[:-2]
    return word[:-1] if word.endswith("s") and len(word) > 3 else word


def find_mentions(q: QuestionWords, vocabulary: ScopeVocabulary) -> list[Mention]:
    """Every way the question names a value of the scope (overlaps not yet resolved)."""
    index = value_index(vocabulary)
    out: list[Mention] = []
    tokens = q.tokens
    for n in index.candidates(q):
        key, value, words = index.entries[n]
        if key in YES_NO_KEYS and not _names_key(q, key):
            continue  # "say no to our offer" names no sponsorship: a flag needs its key
        forms = [words]
        head = tuple(fold(value.split(",")[0]).split())
        if head != words and len("".join(head)) >= 4:
            forms.append(head)
        bare = tuple(fold(without_asides(value)).split())
        if bare and bare not in forms:
            forms.append(bare)  # "Senior Staff" of "Senior Staff (L7)"
        if city := _city_words(key, value):
            forms.append(city)  # "Rome" for "Roma, Italia"
        if key == "location" and (region := region_of(value)) and region != fold(value):
            # "Portland, OR" named "Portland, Oregon": its region written out
            forms.append((*head, *region.split()))
        if key == "title":
            # "Encargado/a de tienda (Store Manager)": the role in the words in parentheses
            for aside in re.findall(r"\(([^()]+)\)", value):
                if len(aside.split()) >= 2 and is_title(aside):
                    forms.append(tuple(fold(aside).split()))
        if value in vocabulary.outside.get(key, ()) and key not in KEY_ORDER:
            forms = [words]  # a note of another scope is named in full or not at all
        for form in forms:
            found = _runs(q, key, value, form)
            if (
                key == "location"
                and form == head
                and head != words
                and _shared_city(vocabulary, value)
            ):
                # "Portland" where the scope has Portland, ME and Portland, OR: the city, in
                # whichever region
                found = [Mention(key, place_name(value), m.start, m.end, m.how) for m in found]
            out += found
        if key == "title" and len(words) >= 2 and value not in vocabulary.outside.get(key, ()):
            out += _parts(q, key, value, words, vocabulary)  # a part names a title in scope
    # A value written as a phrase, stated in other words ("turned down because we couldn't
    # sponsor a visa" for "no visa sponsorship available"): most of its words, by their stems.
    stems = [stem(t) for t in tokens]
    about_candidates = bool(REJECTION_WORDS.search(" ".join(tokens)))
    for n in index.candidates(q):
        key, value, words = index.entries[n]
        if key in CANDIDATE_KEYS and not about_candidates:
            continue  # "Which searches can sponsor a visa?" names no reason to turn one down
        if value in vocabulary.outside.get(key, ()):
            continue  # stated in other words, a value of another scope is too far a guess
        if (key in CANDIDATE_KEYS or key not in KEY_ORDER) and sum(
            w not in STOPWORDS for w in words
        ) >= 3:
            out += [
                m
                for m in _paraphrased(key, value, tokens, stems, 2 if key in KEY_ORDER else 3)
                # A person's name is named by itself, not paraphrased ("Tiago Ferreira").
                if not all(
                    q.capital[i]
                    for i in range(m.start, m.end)
                    if stems[i] in {stem(w) for w in fold(value).split()}
                )
            ]
    # A currency by its name or code ("paid in pounds", "in euros", "GBP").
    currencies = set(vocabulary.values.get("currency", ()))
    for i, token in enumerate(tokens):
        named = " ".join(tokens[i - 1 : i + 1]) if i else ""
        if CURRENCY_WORDS.get(named) in currencies:  # "Danish kroner"
            out.append(Mention("currency", CURRENCY_WORDS[named], i - 1, i + 1, "exact"))
        elif CURRENCY_WORDS.get(token) in currencies and token.isalpha():
            # "Swiss francs", "US dollars": the country's word is the currency's, no place.
            start = i - 1 if i and (q.capital[i - 1] or q.upper[i - 1]) else i
            out.append(Mention("currency", CURRENCY_WORDS[token], start, i + 1, "exact"))
    # A country the scope's places are in ("based outside Sweden", "roles in Italy" where
    # the documents write "Roma, Italia" and "Stockholm, SE"), written with its capital.
    countries = _scope_countries(vocabulary)
    for i in range(len(tokens)):
        for j in range(min(len(tokens), i + 3), i, -1):
            code = country_code(" ".join(tokens[i:j])) if q.capital[i] or q.upper[i] else None
            if code in countries and (name := country_name(code)):
                out.append(Mention("location", name, i, j, "exact"))
                break
    # A workplace stated in other words ("in the office", "from home").
    known = set(vocabulary.values.get("workplace_type", ()))
    for words, value in WORKPLACE_WORDS.items():
        if value in known and words != value:
            seq = words.split()
            for i in range(len(tokens) - len(seq) + 1):
                if tokens[i : i + len(seq)] == seq:
                    out.append(Mention("workplace_type", value, i, i + len(seq), "exact"))
    return out


#: Words of a "why" about candidates turned down, not about the role.
REJECTION_WORDS = re.compile(
    r"\b(?:reject\w*|turn(?:ed)? down|declin\w*|pass(?:ed)? on|say no|said no|not hired|"
    r"didn'?t get|did not get|fail\w*|drop(?:ped)? out|withdr[ae]w\w*|candidates?|"
    r"not (?:moving|moved|move) forward|let go)\b",
    re.I,
)
#: A "why" in other words: "what made us switch ...", "what led to the move", "how come".
_WHY_IN_OTHER_WORDS = re.compile(r"\b(?:what (?:made|caused|led to|prompted)|how come)\b")
#: Nouns by which "how many" asks for the people a role hires, not for roles.
_PEOPLE_NOUNS = frozenset("hire person people head".split())
#: Words that bound an amount ("more than one hire", "at least 2 openings").
BOUNDS = {
    "more than": ">",
    "over": ">",
    "above": ">",
    "greater than": ">",
    "at least": ">=",
    "fewer than": "<",
    "less than": "<",
    "under": "<",
    "below": "<",
    "at most": "<=",
    "no more than": "<=",
    "exactly": "=",
}
#: The mark of a bound on the low end of a pay range ("starting from at least 60000").
LOW_END = "starting from"


@dataclass(frozen=True)
class Bound:
    """A bound a question sets on a number: the comparison, the amount, whether it bounds
    the low end of a pay range (else its top, or the number), and the currency it is in."""

    op: str
    amount: int
    low: bool = False
    currency: str | None = None
    #: How the question words the comparison ("over", "at least").
    words: str = ""

    def said(self) -> str:
        """The bound as a constraint's value ("at least 60000 GBP"), read by
        :func:`amount_bound`."""
        words = self.words or next(w for w, o in BOUNDS.items() if o == self.op)
        text = f"{words} {self.amount}" + (f" {self.currency}" if self.currency else "")
        return f"{LOW_END} {text}" if self.low else text


#: Words that say an amount exactly ("for a single opening", "with just two hires").
_EXACTLY = frozenset("a an just only exactly for with".split())
#: Words a count of hires is said in ("more than one person", "over 2 seats").
_HIRE_NOUNS = OPENING_NOUNS | {"person", "people", "head", "heads"}


def _compared_amount(
    q: QuestionWords, vocabulary: ScopeVocabulary
) -> tuple[MicroQuery, tuple[int, int]] | None:
    """A bound on a number of hires the question sets ("hiring more than one person", "at
    least 2 openings"): the constraint (``headcount: more than 1``) and the words it spans."""
    t = q.tokens
    for i in range(len(t)):
        # "a band that starts at £60k or higher", "minimum pay of at least 50k": the low end
        if t[i] in _LOW_END_WORDS and (low := _low_end_bound(q, i)) is not None:
            return low
        said = [*sorted(BOUNDS, key=lambda b: -len(b.split())), *sorted(_EXACTLY)]
        for words in said:
            bound = words.split()
            j = i + len(bound)
            if t[i:j] != bound or j >= len(t):
                continue
            if words in _EXACTLY and (t[j].isdigit() or t[j] not in NUMBER_WORDS):
                continue  # "for 2026", "with Python": no count said exactly
            words = "exactly" if words in _EXACTLY else words
            money = _money_after(q, j)
            if money is not None:  # "top out above $150k": a bound on the pay
                said = Bound(BOUNDS[words], money[0], currency=money[2], words=words).said()
                return MicroQuery("salary_range", said), (i, money[1])
            amount = int(t[j]) if t[j].isdigit() else NUMBER_WORDS.get(t[j])
            after = t[j + 1 : j + 3]
            if amount is None or not any(
                singular(w) in _HIRE_NOUNS or w in _HIRE_NOUNS for w in after
            ):
                continue
            noun = next(
                k for k, w in enumerate(after) if singular(w) in _HIRE_NOUNS or w in _HIRE_NOUNS
            )
            bound = Bound(BOUNDS[words], amount, words=words)
            return MicroQuery("headcount", bound.said()), (i, j + 2 + noun)
    return None


#: Words that name the low end of a pay range ("starts at", "a minimum of", "the floor").
_LOW_END_WORDS = frozenset(
    "start starts starting begin begins minimum min floor bottom lowest".split()
)
#: Words after a sum that make it a bound ("£60k or higher", "50k and up", "40k+").
_OR_MORE = {("or", "higher"): ">=", ("or", "more"): ">=", ("or", "above"): ">=",
            ("and", "up"): ">=", ("and", "above"): ">=", ("or", "over"): ">=",
            ("or", "less"): "<=", ("or", "lower"): "<=", ("or", "below"): "<="}  # fmt: skip


def _low_end_bound(q: QuestionWords, i: int) -> tuple[MicroQuery, tuple[int, int]] | None:
    """A bound on the low end of the pay range a question sets from word ``i`` ("starts at
    £60k or higher", "minimum of at least 50k", "starting above 40k"); None otherwise."""
    t = q.tokens
    j = i + 1
    while j < len(t) and j <= i + 4 and _money_after(q, j) is None:
        j += 1
    money = _money_after(q, j) if j < len(t) else None
    if money is None:
        return None
    between = " ".join(t[i + 1 : j])
    words = next((w for w in BOUNDS if between.endswith(w)), "")
    after = tuple(t[money[1] : money[1] + 2])
    if after in _OR_MORE:  # "£60k or higher"
        words = "at least" if _OR_MORE[after] == ">=" else "at most"
    if not words or BOUNDS[words] == "=":
        return None
    end = money[1] + (2 if after in _OR_MORE else 0)
    said = Bound(BOUNDS[words], money[0], low=True, currency=money[2], words=words).said()
    return MicroQuery("salary_range", said), (i, end)


def _money_after(q: QuestionWords, j: int) -> tuple[int, int, str | None] | None:
    """A sum of money written from token ``j`` ("150k", "$150,000", "100 000 EUR"): the
    amount, the end of its tokens and its currency when written; None for a number that is no
    sum ("2 hires")."""
    t = q.tokens
    m = re.fullmatch(r"(\d+)(k)?", t[j])
    if m is None:
        return None
    amount, end = int(m.group(1)), j + 1
    if not m.group(2) and end < len(t) and re.fullmatch(r"\d{3}", t[end]):
        amount, end = amount * 1000 + int(t[end]), end + 1  # "100,000" as written
    amount *= 1000 if m.group(2) else 1
    code = None
    if end < len(t) and t[end] in CURRENCY_WORDS:
        code, end = CURRENCY_WORDS[t[end]], end + 1  # "100,000 EUR"
    sign = re.search(r"([$\u20ac\u00a3])\s*$", q.text[: q.text.find(q.raw[j])])
    code = code or (CURRENCY_WORDS.get(sign.group(1)) if sign else None)
    return (amount, end, code) if amount >= 1000 or sign or m.group(2) else None


def amount_bound(value: str | None) -> Bound | None:
    """The bound a constraint's value states (:meth:`Bound.said`): "more than 1" -> (>, 1),
    "starting from at least 60000 GBP" -> (>=, 60000, the low end, in GBP); None for a plain
    value."""
    if not value:
        return None
    low = value.startswith(LOW_END + " ")
    value = value[len(LOW_END) + 1 :] if low else value
    for words, op in BOUNDS.items():
        m = re.fullmatch(re.escape(words) + r" (\d+)(?: ([A-Z]{3}))?", value)
        if m:
            return Bound(op, int(m.group(1)), low, m.group(2), words)
    return None


def _scope_countries(vocabulary: ScopeVocabulary) -> frozenset[str]:
    """The countries the scope's places are in (found once per vocabulary)."""
    found = vocabulary.derived.get("countries")
    if not isinstance(found, frozenset):
        places = vocabulary.values.get("location", ())
        found = vocabulary.derived["countries"] = frozenset(
            filter(None, map(country_of_place, places))
        )
    return found


def _shared_city(vocabulary: ScopeVocabulary, value: str) -> bool:
    """Whether another place of the scope has the city of ``value`` in another region (the
    cities that do are found once per vocabulary)."""
    shared = vocabulary.derived.get("shared_cities")
    if not isinstance(shared, frozenset):
        by_city: dict[str, list[str]] = {}
        for v in vocabulary.values.get("location", ()):
            by_city.setdefault(same_value_key("location", v), []).append(v)
        shared = vocabulary.derived["shared_cities"] = frozenset(
            city
            for city, places in by_city.items()
            if any(not same_place(a, b) for a in places for b in places)
        )
    return same_value_key("location", value) in shared


def _names_key(q: QuestionWords, key: str) -> bool:
    """Whether the question names ``key`` itself: its words ("visa", "sponsor") or a name of
    it."""
    pattern = _YES_NO_WORDS.get(key)
    if pattern is not None and pattern.search(" ".join(q.tokens)):
        return True
    return any(KEY_ALIASES.get(t) == key for t in q.tokens)


def _paraphrased(
    key: str, value: str, tokens: list[str], stems: list[str], least: int = 2
) -> list[Mention]:
    """A value of three words or more of which the question states most (``least`` at
    least, three for a key of the data's own: a note's words, and 60 %) by their stems, in
    one stretch of at most twice its length."""
    words = [w for w in fold(value).split() if w not in STOPWORDS and len(w) > 1]
    if len(words) < 3:
        return []
    wanted = {stem(w) for w in words}
    hits = [
        i
        for i, s in enumerate(stems)
        if s in wanted
        or any(min(len(s), len(w)) >= 6 and (w.startswith(s) or s.startswith(w)) for w in wanted)
    ]
    found = {stems[i] for i in hits}
    if len(hits) < least or len(found) < max(least, 0.6 * len(wanted)):
        return []
    if hits[-1] - hits[0] + 1 > 2 * len(fold(value).split()):
        return []
    return [Mention(key, value, hits[0], hits[-1] + 1, "part")]


def _runs(q: QuestionWords, key: str, value: str, form: tuple[str, ...]) -> list[Mention]:
    """The value's words ``form`` in a row in the question, each as itself or by its stem;
    a capitalized question word may stand for several of them by their initials."""
    out = []
    tokens, n = q.tokens, len(form)
    for start in range(len(tokens)):
        i, j, how = start, 0, "exact"
        while j < n and i < len(tokens):
            match = _word_matches(tokens[i], form[j])
            if match:
                how = "stem" if match == "stem" and how == "exact" else how
                i, j = i + 1, j + 1
                continue
            span = _initials_span(tokens[i], q.upper[i], form, j)
            if span and _separate_words(value, j, span) and not _a_person(key, value):
                how = "initials"
                i, j = i + 1, j + span
                continue
            break
        if j == n and i > start and (len("".join(form)) > 3 or _written_as(q, start, value)):
            out.append(Mention(key, value, start, i, how))
    return out


_EXCLUDING = frozenset(
    "not no except excluding without besides non dont doesnt isnt arent didnt cant never "
    "outside".split()
)


def _key_phrases(q: QuestionWords) -> list[tuple[int, int, str]]:
    """Where the question names a key in two words or more ("hiring manager", "work
    model"), and which."""
    t = q.tokens
    return [
        (i, j, KEY_ALIASES["_".join(t[i:j])])
        for i in range(len(t))
        for j in range(i + 2, min(len(t), i + 4) + 1)
        if "_".join(t[i:j]) in KEY_ALIASES
    ]


def _negated_in_question(q: QuestionWords, m: Mention) -> bool:
    """A value the question excludes: "not in Toronto", "except remote ones", "other than
    Berlin" (a negator or an exception word in the few words before it, in its clause)."""
    tokens = q.tokens
    for i in range(m.start - 1, max(-1, m.start - 4), -1):
        t = tokens[i]
        if t in ("and", "or", "but", "which", "that", "who") and i < m.start - 1:
            break
        if (
            t in _EXCLUDING
            or (t == "t" and i > 0 and tokens[i - 1].endswith("n"))
            or (t == "than" and i > 0 and tokens[i - 1] in ("other", "rather"))
            or (t == "to" and i > 0 and tokens[i - 1] == "opposed")
            or (t == "of" and i > 0 and tokens[i - 1] == "instead")
        ):
            return True
    return False


def _excluded_mentions(q: QuestionWords, mentions: Sequence[Mention]) -> set[Mention]:
    """The mentions a question excludes (:func:`_negated_in_question`), and the values listed
    after an excluded one ("not Staff, Principal or Lead": all three)."""
    out: set[Mention] = set()
    previous: Mention | None = None
    for m in sorted(mentions, key=lambda m: m.start):
        between = q.tokens[previous.end : m.start] if previous else None
        if _negated_in_question(q, m) or (
            previous in out
            and previous.key == m.key
            and between is not None
            and all(t in ("or", "and", "nor", "the", "a", "an") for t in between)
        ):
            out.add(m)
        previous = m
    return out


def _a_person(key: str, value: str) -> bool:
    """A value naming a person ("ML" is no initials of Maya Lindqvist, a hiring manager)."""
    return key in _PERSON_KEYS or (key not in KEY_ORDER and _looks_like_name(value))


def _separate_words(value: str, j: int, k: int) -> bool:
    """Whether the value's words ``j`` to ``j + k`` are written apart: "ML" stands for
    "Machine Learning", not for the one word "Mid-level"."""
    owner = [n for n, word in enumerate(value.split()) for _ in fold(word).split()]
    return len(set(owner[j : j + k])) == k if j + k <= len(owner) else True


def _written_as(q: QuestionWords, start: int, value: str) -> bool:
    """A short value ("Go", "R") counts only written with its capital: "go" is a verb."""
    return not value[:1].isupper() or q.capital[start] or q.upper[start]


def _initials_span(token: str, upper: bool, form: tuple[str, ...], j: int) -> int:
    """How many of ``form``'s words from ``j`` on the acronym ``token`` stands for (0: none)."""
    if not upper or len(token) < 2:
        return 0
    k = len(token)
    if j + k <= len(form) and "".join(w[0] for w in form[j : j + k]) == token:
        return k
    return 0


def _parts(
    q: QuestionWords, key: str, value: str, words: tuple[str, ...], vocabulary: ScopeVocabulary
) -> list[Mention]:
    """A title named by some of its words that no other title of the scope holds ("the
    backend search" where only "Backend Engineer" has "backend")."""
    out = []
    others = [fold(v).split() for v in vocabulary.values.get(key, ()) if v != value]
    written = re.findall(r"[^\s,/()]+", value)
    written = written if len(written) == len(words) else []
    for i in range(len(words)):
        for j in range(i + 1, len(words) + 1):
            part = words[i:j]
            if len(part) == len(words):
                continue
            content = [w for w in part if w not in STOPWORDS]
            if all(w in _GENERIC_TITLE_WORDS for w in part) and not (
                len(content) >= 2 and content[0] in TITLE_HEADS
            ):
                continue  # "data" alone names no title; "head of data" does
            if all(singular(w) in LEAF_WORDS for w in part):
                continue  # "searches" names the leaves, not the title "..., Search & Ranking"
            if len(part) == 1 and part[0] in KEY_ALIASES:
                continue  # "level" names the seniority, not the title "Level Designer"
            short = all(len(w) < 4 for w in part)
            if short and not (written and all(_cased(w) for w in written[i:j])):
                continue  # "it" of "Healthcare IT Specialist" is no name of it alone
            if any(_contains_stems(o, part) for o in others):
                continue
            out += [
                Mention(key, value, m.start, m.end, "part")
                for m in _runs(q, key, value, part)
                if m.how != "initials"
                or len(part) >= 2  # "ML" of Machine Learning Engineer
                # "iOS", "QA": a short word counts written as the value writes it
                and (not short or q.raw[m.start : m.end] == written[i:j])
            ]
    return out


def _cased(word: str) -> bool:
    """A word whose capitals are its own ("iOS", "QA", "UX"), not a sentence's."""
    return len(word) >= 2 and any(c.isupper() for c in word[1:])


def _contains_stems(words: Sequence[str], part: Sequence[str]) -> bool:
    n = len(part)
    return any(
        all(_word_matches(words[i + k], part[k]) for k in range(n))
        for i in range(len(words) - n + 1)
    )


#: Words of titles that say what kind of job, not which one.
_GENERIC_TITLE_WORDS = frozenset(
    "engineer manager analyst specialist lead senior junior staff associate assistant "
    "officer director head data and of the a team leader customer service group".split()
)
_KIND_RANK = {"exact": 3, "stem": 2, "initials": 2, "part": 1}


def resolve(
    mentions: list[Mention], vocabulary: ScopeVocabulary, question: str = ""
) -> list[Mention]:
    """Non-overlapping mentions: the longest span first, then the most literal, then (one
    value of two keys: "Kubernetes" required or nice to have) the key the question's
    words call for, required by default, then the scope's best-supported value (its order
    in the vocabulary)."""
    rank = {(k, v): i for k, values in vocabulary.values.items() for i, v in enumerate(values)}
    nice = any(  # "a must-have (not nice-to-have)" asks for the required one
        not negated_in_text(question, m.start(), m.end()) for m in _NICE.finditer(question)
    )

    def key_rank(key: str) -> int:
        # Only a required and a nice-to-have skill are told apart by the question's words.
        return int(key == ("skill" if nice else "preferred_skill"))

    order = sorted(
        set(mentions),
        key=lambda m: (
            -(m.end - m.start),
            -_KIND_RANK[m.how],
            key_rank(m.key),
            rank.get((m.key, m.value), 1 << 30),
            m.key,
            m.value,
        ),
    )
    taken: list[Mention] = []
    for m in order:
        if any(m.start < t.end and t.start < m.end for t in taken):
            continue
        taken.append(m)
    return sorted(_one_title(taken, question), key=lambda m: m.start)


def _one_title(mentions: list[Mention], question: str) -> list[Mention]:
    """Of two titles named in two places ("the Staff backend engineer on the TMS
    platform"), the one the question states every word of, when it holds the other's words
    too: one role is meant, not two ("Backend Engineer - TMS Platform", not also "Backend
    Engineer (Shipment Tracking)")."""
    titles = [m for m in mentions if m.key == "title"]
    if len(titles) < 2:
        return mentions

    def words(m: Mention) -> set[str]:
        return {stem(w) for w in fold(without_asides(m.value)).split()}

    asked = {stem(w) for w in fold(question).split()}
    whole = sorted((m for m in titles if words(m) <= asked), key=lambda m: -len(words(m)))
    if not whole or (len(whole) > 1 and not words(whole[1]) < words(whole[0])):
        return mentions
    keep = whole[0]
    return [m for m in mentions if m is keep or m.key != "title" or not words(m) <= words(keep)]


#: "What does this role ...", "what will the position ...": the leaf is the question's subject.
_SUBJECT = re.compile(
    r"^\W*what\s+(?:does|do|did|will|would|should|can)\s+(?:this|that|the|our|my|your)\s+"
    r"(?:[\w-]+\s+){0,5}?(?:role|job|search|position|opening|req|vacancy|post)s?\b",
    re.I,
)
#: The words that ask about a yes/no key in a list or a count.
_YES_NO_WORDS = {
    "visa_sponsorship": re.compile(r"\b(visas?|sponsor\w*|work permits?)\b", re.I),
}
#: Words that ask for what is nice to have rather than required.
_NICE = re.compile(r"\b(nice|preferred|bonus|plus|optional|desirable|extra)\b", re.I)

#: Keys whose values are also ordinary words of other phrases ("the onsite interview", "the
#: hiring lead", "a senior candidate"): named before another noun, they are not constraints.
ADJECTIVAL_KEYS = frozenset({"workplace_type", "seniority"})
#: Words after a value that end its phrase (no noun it could modify).
_FUNCTION_WORDS = frozenset(
    "versus vs plus either both only too also now please right yet still anymore ones "
    "first instead rather already ever just really usually currently full every most".split()
)


def _in_role(m: Mention, q: QuestionWords, spans: list[tuple[int, int]], nouns: set[str]) -> bool:
    """Whether a mention names a value of the role: the word after it is none that makes
    it modify another noun (the onsite *interview*, strong gRPC *depth*)."""
    after = m.end
    if after >= len(q.tokens):
        return True
    nxt = q.tokens[after]
    if nxt in STOPWORDS or nxt in _FUNCTION_WORDS or not nxt.isalpha():
        return True
    if any(s <= after < e for s, e in spans):
        return True
    return singular(nxt) in nouns or nxt in nouns


def level_of_noun(word: str, schema: TreeSchema) -> str | None:
    """The level a noun names ("recruiters" -> seat), by the schema's level names and nouns."""
    w = singular(word)
    for level in schema.levels:
        if w in (level.name, level.noun) or word in (level.plural, level.nouns):
            return level.name
    if w in LEAF_WORDS or w == "one":
        return schema.leaf.name
    return None


def attribute_key(words: Sequence[str], vocabulary: ScopeVocabulary | None = None) -> str | None:
    """The key a noun phrase names: a known name of a key (alias table) as the phrase or its
    end ("job title", "interview round" -> stage, "HM" -> hiring_manager), or a key of the
    scope whose label it is."""
    words = [w for w in words if w]
    runs = [
        (j - i, KEY_ALIASES["_".join(words[i:j])])
        for i in range(len(words))
        for j in range(i + 2, len(words) + 1)
        if "_".join(words[i:j]) in KEY_ALIASES
    ]
    if runs:
        return max(runs)[1]  # "nice to have skill" is a nice-to-have, not a skill
    for i in range(len(words)):
        name = "_".join(words[i:])
        for n in (name, "_".join(words[i:-1] + [singular(words[-1])])):
            if n in KEY_ALIASES:
                return KEY_ALIASES[n]
            if vocabulary is not None and n in vocabulary.values:
                return n
    if vocabulary is not None:
        phrase = " ".join(words)
        for key in vocabulary.values:
            label = fold(humanize_key(key))
            if key not in KEY_ORDER and label and (label == phrase or label == singular(phrase)):
                return key
    return None


def asked_noun(question: str, schema: TreeSchema) -> tuple[str, list[str], str | None]:
    """The wh-word of a question, the words of the noun it asks for, and the level that noun
    names when it names the nodes themselves ("Which of Kaito's openings ..." -> the leaves).

    After the wh-word, copulas, determiners, "kind of" and a possessive name ("Kaito's") are
    skipped; a noun naming a level within the next few words is what a list or a count is
    of ("What Backend Engineer roles ...", "How many senior-level openings ..."); otherwise
    the noun is up to three words before the next function word, verb or name ("What's the
    code name of ...?" -> "code name")."""
    m = _WH.search(question) or _THERE.match(question) or _WH_INSIDE.search(question)
    if not m:
        # "my searches where Aoife is the hiring manager?": the nodes named, listed
        named = re.match(r"^\W*(?:all\s+(?:of\s+)?)?(?:my|our|the)\s+(\w+)", question, re.I)
        level = level_of_noun(fold(named.group(1)), schema) if named else None
        if level:
            return "list", [fold(named.group(1))], level
        # "salary band?", "pay range on the community manager?", "start date for ...": a
        # question that is the name of what it asks
        # ("current salary band pls", "new HM?": after a word or two that say which)
        folded = fold(question).split()
        skips = 0
        while skips < 2 and folded[skips : skips + 1] and folded[skips] in _WHICH_ONE:
            skips += 1
        for skip in range(skips + 1):
            words = folded[skip : skip + 3]
            for n in range(len(words), 0, -1):
                if "_".join(words[:n]) in KEY_ALIASES or (
                    n > 1 and singular(words[n - 1]) in _DATE_NOUNS
                ):
                    return "what", words[:n], None
        # "data steward search in the library - salary band?", "cloud security req - HM?":
        # the name of what it asks, after the words that say which role
        tail = re.split(r"\s[-\u2013\u2014]\s|[:;,]\s", question.strip().rstrip("?!. "))
        words = fold(tail[-1]).split() if len(tail) > 1 else []
        if 0 < len(words) <= 3 and "_".join(words) in KEY_ALIASES:
            return "what", words, None
        return "", [], None
    wh = m.group(1).lower()
    if wh.endswith((" number of", " count of")) or wh.startswith(
        ("number", "count", "the ", "total")
    ):
        wh = "how many"  # "number of searches with ...", "count of my searches ..."
    elif wh not in _WH_WORDS:
        wh = "what"  # "Is there an internal code name ...?" asks what it is
    q = QuestionWords.of(m.group(2))
    tokens = q.tokens
    if wh in ("which", "how many") and tokens[:2] in (["of", "mine"], ["of", "ours"]):
        return wh, ["searches"], schema.leaf.name  # "how many of mine ...": my searches
    i = 0
    while i < len(tokens):
        t = tokens[i]
        if t in _LEADING or t in _RANKING:
            i += 1  # "the most frequent hiring manager": the hiring manager
        elif t in ("kind", "kinds", "type", "types", "sort", "sorts") and tokens[i + 1 : i + 2] == [
            "of"
        ]:
            i += 2
        elif q.capital[i] and not q.upper[i] and True in q.possessive[i : i + 3]:
            i = q.possessive.index(True, i) + 1  # "Kaito's", "Dara Varga's"
        else:
            break
    for j in range(i, min(len(tokens), i + 6)):
        if tokens[j] in STOPWORDS and not (q.capital[j] or q.upper[j] or q.joined[j]):
            break  # "on" of "on-site" is no function word
        level = level_of_noun(tokens[j], schema)
        nxt = tokens[j + 1] if j + 1 < len(tokens) else ""
        # A singular level noun before another noun names that noun's kind ("the project
        # code"); a plural one is the head ("searches require", "roles list").
        one = singular(tokens[j]) == tokens[j]
        modifies = one and nxt and nxt not in STOPWORDS and not _VERBISH.search(nxt)
        if level is not None and not (modifies and level_of_noun(nxt, schema) is None):
            return wh, [tokens[j]], level  # not "project code": a project's code
    words: list[str] = []
    pieces = 0  # words of hyphenated compounds ("nice-to-have") count as one
    for j in range(i, len(tokens)):
        w = tokens[j]
        compound = q.joined[j] or (j > 0 and q.joined[j - 1])
        verb = (words and _VERBISH.search(w) and len(w) > 4) or w in _IRREGULAR_PAST
        name = words and q.capital[j] and not q.upper[j]
        stop = (w in STOPWORDS or w == "s") and not compound
        if stop or verb or name or len(words) - pieces == 3:
            break
        pieces += bool(q.joined[j])
        words.append(w)
    return wh, words, None


def analyze(
    question: str,
    vocabulary: ScopeVocabulary,
    schema: TreeSchema,
    scope_level: str,
    names: Mapping[str, str] | None = None,
    scope_node: str | None = None,
    above: Collection[str] = (),
) -> Analysis:
    """Read ``question`` against the scope's ``vocabulary`` (see the module docstring).

    ``names``: node id -> name of the scope node (``scope_node``), of the nodes above it
    (``above``: "Priya's fraud data scientist" asked of the project) and of the nodes below
    it that a question may name by name (recruiters, teams): a node below narrows the
    answer to its subtree; the scope node and the nodes above are only recognized as such."""
    question = _CONTRACTED.sub(r"\1's", question)  # "whats the code name": what's
    q = QuestionWords.of(question)
    low = question.lower()
    leaf = schema.leaf.name
    at_leaf = scope_level == leaf
    wh, noun, noun_level = asked_noun(question, schema)
    if (
        noun_level
        and schema.has(scope_level)
        and schema.rank(noun_level) <= schema.rank(scope_level)
    ):
        noun_level = None  # a seat's question names no account of its own to list
    if wh in ("where", "when", "why"):
        noun, noun_level = [], None  # what follows describes the subject, not what is asked
    # The attribute a noun names ("the hiring lead", "the code name") is what is asked, never
    # a constraint: the seniority Lead is not named in "the hiring lead".
    if (
        noun
        and (singular(noun[0]) in LEAF_WORDS or singular(noun[-1]) in LEAF_WORDS)
        and (subject := _SUBJECT.search(question))
    ):
        # "What does this role require?", "what does the pharmacy technician job pay?": the
        # role is the subject (its words say which), not what is asked
        noun = []
        verb = fold(question[subject.end() :]).split()[:1]
        if verb and KEY_ALIASES.get(verb[0]) in KEY_ORDER:
            noun = verb  # "What does this role pay?": the key the verb names
    named, attribute = _attribute_prefix(noun, vocabulary) if not noun_level else (noun, None)
    if noun and (noun[0] in _IRREGULAR_PAST or (len(noun[0]) > 4 and noun[0].endswith("ed"))):
        named, attribute, noun = [], None, []  # "what happened with X", "who showed ..."
        verb_question = True
    else:
        verb_question = False
    noun_span = _span_of(q.tokens, named) if (attribute or _is_phrase(named)) else (0, 0)
    within, name_spans = _named_node(q, names or {})
    if within is not None and (within == scope_node or within in above):
        within = None  # "Kaito's searches" asked of Kaito's own seat
    phrases = _key_phrases(q)
    mentions = [
        m
        for m in resolve(find_mentions(q, vocabulary), vocabulary, question)
        if not _overlaps(m, [noun_span, *name_spans])
        # "manager" of "the hiring manager" is no seniority Manager: words of a key's name.
        and not any(s <= m.start and m.end <= e and k != m.key for s, e, k in phrases)
    ]
    nouns = set(ROLE_NOUNS) | {w for k in vocabulary.values for w in fold(humanize_key(k)).split()}
    spans = [(m.start, m.end) for m in mentions]
    constraints: list[MicroQuery] = []
    context: list[str] = []
    loose: list[MicroQuery] = []
    excluded: list[MicroQuery] = []
    compared = _compared_amount(q, vocabulary)
    if compared is not None:
        # "hiring more than one person": the count is a bound, no value of any key.
        mentions = [m for m in mentions if not _overlaps(m, [compared[1]])]
    negated = _excluded_mentions(q, mentions)
    for m in mentions:
        if (
            m in negated
            and m.key not in CANDIDATE_KEYS
            and (m.key not in ADJECTIVAL_KEYS or _in_role(m, q, spans, nouns))
        ):
            excluded.append(MicroQuery(m.key, m.value))  # "... but not in Toronto"
        elif _in_role(m, q, spans, nouns):
            constraints.append(MicroQuery(m.key, m.value))
        elif m.key in ADJECTIVAL_KEYS:
            # "the onsite interview", "the hiring lead": the words as written are what a
            # passage says ("Stage: Onsite"), the value too.
            context += [" ".join(q.raw[m.start : m.end]), m.value]
        else:
            # "Terraform know-how" in a list is still Terraform; "strong GraphQL depth" in
            # a question about one candidate is words of a note (decided with the form). A
            # value that says which role ("the fraud data scientist supposed to start") is
            # a constraint whatever follows it.
            constraints.append(MicroQuery(m.key, m.value))
            if m.key in MULTI_KEYS or m.key not in KEY_ORDER:
                loose.append(MicroQuery(m.key, m.value))
    if compared is not None:
        constraints.append(compared[0])
    constraints = list(dict.fromkeys(constraints))
    if wh in ("which", "how many", "list", "show", "find") and not at_leaf:
        # "Which roles can sponsor a visa?": the leaves whose yes/no key says yes (or no,
        # "... can't sponsor").
        for key, pattern in _YES_NO_WORDS.items():
            said = pattern.search(question)
            if said and all(
                c.key != key and c.key not in CANDIDATE_KEYS for c in constraints
            ):  # "... rejected because we couldn't sponsor a visa" names a reason instead
                # (a scope that states no sponsorship at all lists none, not every search)
                no = negated_in_text(question, said.start(), said.end())
                constraints.append(MicroQuery(key, "no" if no else "yes"))
    # Several values of one key named as alternatives are the options of what is asked.
    options: tuple[str, ...] = ()
    by_key: dict[str, list[str]] = {}
    for c in constraints:
        by_key.setdefault(c.key, []).append(c.value or "")
    # The key whose values stand on both sides of the "or" ("remote or office-based").
    ors = [i for i, t in enumerate(q.tokens) if t in ("or", "versus", "vs")]
    listed = [
        k
        for k, vs in by_key.items()
        if len(vs) >= 2
        and any(
            any(m.key == k and m.end <= i for m in mentions)
            and any(m.key == k and m.start > i for m in mentions)
            for i in ors
        )
    ]
    listed.sort(key=lambda k: min(abs(m.start - i) for m in mentions if m.key == k for i in ors))
    asked_key = attribute
    if listed:
        asked_key = asked_key or listed[0]
        options = tuple(by_key[listed[0]])
        constraints = [c for c in constraints if c.key != listed[0]]
    level = leaf
    form = "fact"
    answer_type = "value"
    phrase = ""
    covered = [(m.start, m.end) for m in mentions] + [noun_span, *name_spans]
    covered += [compared[1]] if compared is not None else []
    names_left = _other_names(question, q, covered)
    # Names that are values of a key the data made up (an export's "owner" field holding a
    # person) are names to find in the evidence, not constraints on the role.
    for c in [c for c in constraints if c.key not in KEY_ORDER and _looks_like_name(c.value)]:
        constraints.remove(c)
        names_left.append(c.value or "")
    for name in list(names_left):
        key = _slot_key(question, name)
        if key is not None and not any(c.key == key for c in constraints):
            # "in Dublin" where no facet holds Dublin: a location, read in the evidence (a
            # leaf whose facets hold another location is not in Dublin because an old
            # requisition said so).
            names_left.remove(name)
            constraints.append(MicroQuery(key, name))
    person_key = next(
        (k for _, _, k in phrases if k in _PERSON_KEYS),
        next((KEY_ALIASES[t] for t in q.tokens if KEY_ALIASES.get(t) in _PERSON_KEYS), None),
    )
    if person_key and noun_level and not any(c.key == person_key for c in constraints):
        # "Which searches is Declan Moran still hiring manager on?", "where Aoife is the
        # HM": the person named is a value of the part named, not a word of any note.
        for name in [n for n in names_left if _looks_like_name(n) or n[:1].isupper()]:
            names_left.remove(name)
            constraints.append(MicroQuery(person_key, name))
    about_one = bool(constraints or names_left or within)
    counted = wh == "how many" and bool(noun_level)
    lists = wh in ("which", "list", "show", "find") and noun_level is not None
    if options and not at_leaf and (counted or lists or not about_one):
        # "How many searches are Staff or Principal level?", "Which searches are remote or
        # hybrid?": the leaves holding either; "How many roles are remote versus in the
        # office?": how the scope splits over them.
        spread = "count" if counted else "list" if lists else "distribution"
        return Analysis(
            form=spread,
            asked_key=asked_key,
            answer_type={"count": "number", "list": "nodes"}.get(spread, "value"),
            level=noun_level if counted or lists else leaf,
            constraints=tuple(constraints),
            mentions=tuple(names_left),
            within=within,
            context_words=tuple(context),
            options=options,
            excluded=tuple(excluded),
        )
    role_noun = bool(noun) and singular(noun[-1]) in {"role", "position", "job"}
    if measure := _HOW_MEASURE.match(question):
        # "How big a team ...", "How long ...": a number, said of the noun that follows.
        answer_type, phrase = "number", measure.group(1) or ""
    elif wh in ("how many", "how much"):
        if noun and singular(noun[0]) in _PEOPLE_NOUNS:
            noun_level = None  # "how many hires?": the people a role hires, not the roles
        if noun_level and not at_leaf:
            form, level, answer_type = "count", noun_level, "number"
        else:
            answer_type, phrase = "number", " ".join(noun)
    elif (
        wh == "why"
        or _WHY_IN_OTHER_WORDS.search(low)
        or (re.search(r"\breasons?\b", low) and not noun_level)
    ):
        # A why about candidates turned down asks for reasons; one about the role (a change,
        # a decision) for the note that gives its cause.
        about = REJECTION_WORDS.search(question) or not (
            re.search(r"\bwhy\b", low) or _WHY_IN_OTHER_WORDS.search(low)
        )
        form, asked_key = "why", "rejection_reason" if about else None
        if not at_leaf and not about_one:
            form = "distribution"  # "why do candidates drop out?" over the whole scope
        elif not at_leaf and any(_is_reason(c, vocabulary) for c in constraints):
            # The question states the reason ("Where was 'weak system design skills' the
            # reason to say no?"): it asks where, not why.
            form, level, answer_type, asked_key = "list", leaf, "nodes", None
    elif DISTRIBUTION_WORDS.search(question) and not at_leaf:
        form = "distribution"
        if wh == "where":
            asked_key = "location"  # "Where are most of her roles based?"
        elif noun_level == leaf and role_noun:
            asked_key = asked_key or "title"
    elif noun_level and not at_leaf and noun_level != scope_level:
        if noun_level == leaf and role_noun and not constraints and not within and not excluded:
            form, asked_key = "distribution", "title"  # "what roles does she hire for?"
        else:
            form, level, answer_type = "list", noun_level, "nodes"
    elif wh in ("list", "show", "find") and not at_leaf:
        form, level, answer_type = "list", leaf, "nodes"
    elif not at_leaf and _ANY.search(question) and constraints and not asked_key:
        form, level, answer_type = "list", leaf, "nodes"
    elif wh == "where":
        asked_key = "location"
    elif (
        wh in ("who", "whom", "whose")
        and _RECRUITING.search(question)
        and not at_leaf
        and (
            (people := level_of_noun("recruiters", schema))
            and schema.rank(scope_level) < schema.rank(people)
        )
    ):
        # "Who on the team is recruiting for roles in Madrid?": the recruiters, listed.
        form, level, answer_type = "list", people, "nodes"
    elif wh in ("who", "whom", "whose"):
        answer_type = "person"
    elif wh == "when":
        answer_type, phrase = "date", " ".join(noun)
    worded: list[str] = []
    if (
        form in ("fact", "distribution")
        and asked_key is None
        and not (named and not noun_level and form == "fact")
        and not (measure and phrase)
    ):
        # Words that go with a key ("office" with locations) are a hint, weighed with the
        # question's meaning where the question is read (Memory._asked_by_meaning).
        taken = {c.key for c in constraints}
        worded = [
            k
            for k in asked_keys(question, {*vocabulary.values, "title", "location"})
            if k not in taken
        ]
        if wh in ("who", "whom", "whose") and person_key:
            # "Who do I go to as hiring manager for the emergency department nurses?": the
            # person's part it names, not the department its other words name
            worded = [person_key, *[k for k in worded if k != person_key]]
        if _YES_NO.match(question) and not wh:
            # "Does the senior nurse opening come with visa sponsorship?": a yes or no of the
            # flag it names; "senior" says which role
            worded.sort(key=lambda k: k not in YES_NO_KEYS)
        asked_key = worded[0] if worded else None
    if form == "fact" and wh in ("how many", "how much") and asked_key not in NUMBER_DESCRIPTIONS:
        # "How many site managers are we hiring?": a number, of the key that holds it (read
        # by meaning), not the manager the noun's last word names.
        asked_key, answer_type = None, "number"
    if form == "fact":
        if asked_key is None and named and noun_level is None:
            phrase = " ".join(named)
        if asked_key in _PERSON_KEYS or wh in ("who", "whom", "whose"):
            answer_type = "person"
        if asked_key and asked_key not in KEY_ORDER:
            # A key of the data or of notes on candidates: its words are looked for in the
            # evidence too (another leaf may hold it under another name).
            phrase = phrase or " ".join(named)
            if asked_key in _EVIDENCE_KEYS:
                answer_type = "person" if asked_key == "candidate" else answer_type
                asked_key = None
        if verb_question and wh == "what":
            answer_type = "quote"  # "what happened with ...": the passage itself
        if answer_type == "value" and noun and singular(noun[-1]) in _DATE_NOUNS:
            phrase = " ".join(noun)  # "the start date" where a key of the data is "start"
        if answer_type == "value" and phrase and singular(phrase.split()[-1]) in _DATE_NOUNS:
            answer_type = "date"  # "what's the start date", "what target day"
            if len(phrase.split()) > 1 and phrase.split()[-1] != "deadline":
                # what a passage says of the date: "Start by 1 June", "StartBy: 2024-06-01"
                phrase = " ".join(phrase.split()[:-1])
        if not at_leaf and not about_one and asked_key in vocabulary.values and not phrase:
            form = "distribution"  # a fact about the whole scope: how it is spread
    if (
        asked_key is None
        and not at_leaf
        and form in ("fact", "distribution")
        and not constraints
        and COUNTRY_KEY not in vocabulary.values
        and vocabulary.values.get("location")
        and {"country", "countries"} & set(q.tokens)
    ):
        # "Which country has the most searches?": the scope's places, by their countries
        form, asked_key, phrase = "distribution", COUNTRY_KEY, ""
    if form in ("fact", "why") and loose:
        constraints = [c for c in constraints if c not in loose]
        context += [c.value or "" for c in loose]
    asked_by = "words" if worded and asked_key in worded else ""
    # "which hiring manager ...", "where ...", "the most common work setup": named outright
    named_outright = (
        attribute is not None
        or wh == "where"
        or asked_key == COUNTRY_KEY
        or bool(asked_key and any(" " in w and w in low for w in _KEY_WORDS.get(asked_key, ())))
    )
    if (
        form == "distribution"
        and asked_key
        and wh != "why"
        and asked_key != "rejection_reason"
        and not named_outright
    ):
        # Over a whole scope the words are a hint; the question's meaning decides
        # (Memory._asked_by_meaning): "what do these searches mostly need?" is about skills.
        asked_by, worded = "words", list(dict.fromkeys([asked_key, *worded]))
    yes_no = bool(_YES_NO.match(question)) and form == "fact" and not wh
    if form == "fact" and not asked_key and not phrase and answer_type == "value" and yes_no:
        # "Is this role remote?": the key of the value it names.
        asked_key = constraints[0].key if constraints else None
        subject = next(
            (i for i, t in enumerate(q.tokens) if singular(t) in LEAF_WORDS), len(q.tokens)
        )
        after = [
            c
            for c in constraints
            if any(m.key == c.key and m.value == c.value and m.start > subject for m in mentions)
        ]
        if not at_leaf and after and len(after) < len(constraints):
            # "Is the Dublin SRE search remote?": the values before the role's noun say which
            # role, the one after it is what is asked (an option to check, not a filter).
            asked_key, options = after[-1].key, (after[-1].value or "",)
            constraints = [c for c in constraints if c != after[-1]]
    if form == "fact" and not asked_key and wh in ("who", "whom", "whose"):
        # "who do I send feedback to as HM?": the key a short name of a person's part names
        asked_key = next(
            (KEY_ALIASES[t] for t in q.tokens if KEY_ALIASES.get(t) in _PERSON_KEYS), None
        )
    if form == "fact" and asked_key and not options and not at_leaf:
        named = [c for c in constraints if c.key == asked_key]
        if named and len(named) < len(constraints):
            # "What level is the Barcelona analytics engineer? Senior?": the value of the key
            # asked about is an option to check, the others say which role.
            options = tuple(c.value or "" for c in named)
            constraints = [c for c in constraints if c.key != asked_key]
    # "player insights analyst": the words of one value read as a second value of another
    # key ("Analyst" of "Data Analyst II (Player Insights)") say nothing more.
    words = {c: set(fold(c.value or "").split()) for c in constraints}
    constraints = [
        c
        for c in constraints
        if not any(o.key != c.key and words[c] and words[c] < words[o] for o in constraints)
    ]
    holding: tuple[str, ...] = ()
    if form in ("list", "count") and (having := _HAVING.search(question)):
        # "Which searches have a code name?": the leaves that state one, whatever it is.
        key = attribute_key(fold(having.group(1)).split(), vocabulary)
        if key in vocabulary.values and all(c.key != key for c in constraints):
            holding = (key,)
    return Analysis(
        form=form,
        asked_key=asked_key,
        asked_phrase=phrase,
        answer_type=answer_type,
        level=level,
        constraints=tuple(constraints),
        mentions=tuple(names_left),
        within=within,
        context_words=tuple(context),
        yes_no=yes_no,
        options=options,
        asked_by=asked_by,
        worded=tuple(worded),
        excluded=tuple(excluded),
        holding=holding,
    )


def _attribute_prefix(noun: list[str], vocabulary: ScopeVocabulary) -> tuple[list[str], str | None]:
    """The attribute ``noun`` names (its key, read from its head back: "office attendance
    expectation" names no key, "job title" names ``title``) with its words; else ``noun``
    and None. Its last word may be a verb the noun ran into ("seniority level shows")."""
    for words in (noun, noun[:-1]):
        key = attribute_key(words, vocabulary) if words else None
        if key is not None:
            return words, key
    return noun, None


def _is_reason(c: MicroQuery, vocabulary: ScopeVocabulary) -> bool:
    """A constraint on a reason: the canonical key, or a key of the data whose values are
    phrases (three words or more, as reasons are written)."""
    if c.key in CANDIDATE_KEYS:
        return True
    if c.key in KEY_ORDER:
        return False
    values = vocabulary.values.get(c.key, [])
    return bool(values) and sum(len(fold(v).split()) >= 3 for v in values) * 2 >= len(values)


def _looks_like_name(value: str | None) -> bool:
    """Two or three capitalized words of letters: a person's name, as data writes one."""
    words = (value or "").split()
    return 2 <= len(words) <= 3 and all(w[:1].isupper() and w.isalpha() for w in words)


def _is_phrase(words: list[str]) -> bool:
    """Words naming something other than the leaves themselves ("code name", not "role")."""
    return bool(words) and not any(singular(w) in LEAF_WORDS for w in words)


def _span_of(tokens: list[str], words: list[str]) -> tuple[int, int]:
    n = len(words)
    if not n:
        return (0, 0)
    for i in range(len(tokens) - n + 1):
        if tokens[i : i + n] == words:
            return (i, i + n)
    return (0, 0)


def _overlaps(m: Mention, spans: Sequence[tuple[int, int]]) -> bool:
    return any(s < e and m.start < e and s < m.end for s, e in spans)


def _named_node(
    q: QuestionWords, names: Mapping[str, str]
) -> tuple[str | None, list[tuple[int, int]]]:
    """A node the question names by its name, its first word ("Kaito's") or its id
    ("Tallyfin" for ``account:tallyfin`` named "Tally Financial"), when only one node of the
    scope answers to it; and where."""
    by_first: dict[str, list[str]] = {}
    full: dict[tuple[str, ...], list[str]] = {}
    for node, name in names.items():
        words = tuple(fold(name).split())
        if words:
            full.setdefault(words, []).append(node)
            by_first.setdefault(words[0], []).append(node)
        own = tuple(fold(node.split(":", 1)[-1].replace("-", " ").replace("_", " ")).split())
        if own and own != words:
            full.setdefault(own, []).append(node)
    tokens = q.tokens
    for words, nodes in sorted(full.items(), key=lambda kv: -len(kv[0])):
        n = len(words)
        for i in range(len(tokens) - n + 1):
            if tuple(tokens[i : i + n]) == words and len(nodes) == 1:
                return nodes[0], [(i, i + n)]
    for i, t in enumerate(tokens):
        nodes = by_first.get(t, [])
        if len(nodes) == 1 and q.capital[i] and len(t) >= 3:
            return nodes[0], [(i, i + 1)]
    return None, []


#: Where a question states a value of a key in so many words ("in <place>", "for <title>
#: roles"): a name no facet holds found there is a value of that key.
_SLOTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "title",
        re.compile(r"\bfor\s+(?:an?\s+)?(.+?)\s+(?:roles?|positions?|jobs?|openings?)\b", re.I),
    ),
    (
        "location",
        re.compile(
            r"\b(?:in|located in|based in|at)\s+([A-Z][\w'.-]*(?:(?:,\s*|\s+)"
            r"[A-Z][\w'.-]*){0,3})"
        ),
    ),
    ("skill", re.compile(r"\brequir(?:ed|es|e|ing)\s+(.+?)\s*(?:\?|$|\bin\b|\bfor\b)", re.I)),
    ("rejection_reason", re.compile(r"\bbecause(?:\s+of)?\s+(.+?)\s*(?:\?|$)", re.I)),
)


def _slot_key(question: str, span: str) -> str | None:
    """The key whose slot pattern ("in <place>", "for <title> roles") holds ``span``."""
    for key, pattern in _SLOTS:
        m = pattern.search(question)
        if m and span in m.group(1):
            return key
    return None


def _other_names(question: str, q: QuestionWords, covered: list[tuple[int, int]]) -> list[str]:
    """Names nothing else accounts for ("Viktor Rossi", "Kubernetes", "HL7"): words written
    with a capital or with digits, in a row, not first in their sentence, outside every span
    already read (values, the noun asked for, the nodes named): looked for in the evidence."""
    taken = {i for s, e in covered for i in range(s, e)}
    out: list[str] = []
    run: list[str] = []
    for i, token in enumerate(q.tokens):
        named = (q.capital[i] or q.upper[i] or any(c.isdigit() for c in token)) and not (
            q.first[i] or i in taken or len(token) < 2 or token in KEY_ALIASES  # "HM"
        )
        if named:
            run.append(q.raw[i])
        if run and (not named or q.possessive[i] or i == len(q.tokens) - 1):
            out.append(" ".join(run))
            run = []
    return list(dict.fromkeys(out))


#: The key of a name a question states that no facet holds: verified in the leaves' evidence.
MENTION_KEY = "mention"


def parsed_query(analysis: Analysis) -> ParsedQuery:
    """The micro-queries of an analysis, as the facet retriever and the query log read them:
    its constraints, the names it looks for in the evidence, and the key it asks about."""
    micro = [*analysis.constraints, *(MicroQuery(MENTION_KEY, m) for m in analysis.mentions)]
    if analysis.asked_key:
        micro.append(MicroQuery(analysis.asked_key, None))
    kind = "retrieval" if analysis.form in ("list", "count") else "summary"
    targets = (analysis.asked_key,) if analysis.asked_key else ()
    return ParsedQuery(kind, tuple(dict.fromkeys(micro)), targets, ())
