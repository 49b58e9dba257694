"""Offline query parsing and extractive answering (the serving half of the extractive engine).

Parsing never looks outside the scope: micro-queries come from matching the question against
the facet keys and values that exist in the scope. A constraint the question states but the
scope does not hold (say, a title only other recruiters hire for) is reported as unmatched, and
the answer is then "none in scope" with no references.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from functools import lru_cache

from hltm_resources.engines.base import (
    Answer,
    MicroQuery,
    NodeContext,
    ParsedQuery,
    RetrievedContext,
    ScopeVocabulary,
)
from hltm_resources.engines.extractive.answers import answer_analyzed
from hltm_resources.engines.understanding import _SLOTS, MENTION_KEY, _slot_key, asked_keys
from hltm_resources.engines.vocabulary import WORKPLACE_WORDS, key_label
from hltm_resources.schema import DEFAULT_SCHEMA, TreeSchema
from hltm_resources.text import STOPWORDS, content_tokens, fold, humanize_key, join_human, plural_s

#: A leaf matches a valued micro-query when its best facet cosine reaches this.
MATCH_COSINE = 0.9

_RETRIEVAL = re.compile(
    r"\b(?:(?:which|what)\s+(?:of\s+)?(?:my|our|the|his|her|their|these|those)?\s*"
    r"(?:[\w./+-]+\s+){0,4}?(?:searches|projects|openings|requisitions|reqs|jobs|positions|postings|"
    r"hiring projects|vacancies)|in which\s+(?:\w+\s+)?(?:searches|projects|openings|roles|"
    r"requisitions|jobs)|list\s+(?:all\s+|the\s+|my\s+)*(?:projects|searches|openings)|"
    r"(?:find|show)(?: me)?\s+(?:all\s+|the\s+|my\s+)*(?:projects|searches|openings))\b",
    re.I,
)
_SUMMARY_MARKERS = re.compile(
    r"\b(most often|usually|typically|most common|mostly|generally|tend to|top|preferences?|"
    r"what kinds?|how often|on average|overall)\b",
    re.I,
)
_GENERIC_SLOT_WORDS = frozenset({"my", "our", "the", "this", "that", "which", "what"})


def question_kind(question: str) -> str:
    """``retrieval`` for "which of my projects ..." questions, else ``summary``."""
    if _RETRIEVAL.search(question) and not _SUMMARY_MARKERS.search(question):
        return "retrieval"
    return "summary"


def _value_matches(value: str, q_tokens: list[str], q_folded: str) -> float:
    """How well a facet value is stated in the question (0 when it is not)."""
    folded = fold(value)
    if not folded:
        return 0.0
    # A value is stated as itself or in the plural ("Backend Engineers"), or by its head
    # before a comma ("Lisbon" for "Lisbon, Portugal").
    if _stated(folded, q_folded):
        return 1.0 + len(folded) / 1000.0
    head = fold(value.split(",")[0])
    if head != folded and len(head) >= 4 and _stated(head, q_folded):
        return 1.0 + len(head) / 1000.0
    v_tokens = [t for t in folded.split() if t not in STOPWORDS]
    if len(v_tokens) < 3:
        return 0.0
    present = sum(1 for t in v_tokens if t in q_tokens)
    share = present / len(v_tokens)
    return share if share >= 0.75 else 0.0


_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")


def _stated(folded: str, q_folded: str) -> bool:
    """``folded`` occurs in the question as whole words, the last one perhaps in the plural:
    ``(?<![a-z0-9])folded(?:e?s)?(?![a-z0-9])``, matched without compiling a pattern per
    value."""
    start = q_folded.find(folded)
    while start >= 0:
        end = start + len(folded)
        if start == 0 or q_folded[start - 1] not in _ALNUM:
            for plural in ("es", "s", ""):
                if q_folded.startswith(plural, end):
                    after = end + len(plural)
                    if after == len(q_folded) or q_folded[after] not in _ALNUM:
                        return True
        start = q_folded.find(folded, start + 1)
    return False


_RUN = re.compile(r"[a-z0-9]+")


@lru_cache(maxsize=200_000)
def _anchors(value: str) -> tuple[tuple[str | None, ...], frozenset[str]]:
    """What a question must contain for :func:`_value_matches` to find ``value`` in it.

    - Stated as itself (or by its head): the first run of letters and digits of the folded
      value (of the head), or None when it has none (then it is always tried). In a match, a
      value's runs are whole runs of the question, except the last one, which the question
      may write with ``s`` or ``es`` after it.
    - Stated in part (three words or more): one of its words, as a word of the question."""
    folded = fold(value)
    if not folded:
        return (), frozenset()
    forms = [folded]
    head = fold(value.split(",")[0])
    if head != folded and len(head) >= 4:
        forms.append(head)
    runs = tuple(next(iter(_RUN.findall(f)), None) for f in forms)
    words = [t for t in folded.split() if t not in STOPWORDS]
    return runs, frozenset(words) if len(words) >= 3 else frozenset()


class _ValueLookup:
    """A vocabulary's values (without count keys and leaf nouns) by their anchors
    (:func:`_anchors`): a question is matched against the values it may state, not all."""

    def __init__(self, vocabulary: ScopeVocabulary):
        self.entries: list[tuple[str, str]] = []  # (key, value) in the vocabulary's order
        self.by_run: dict[str, list[int]] = defaultdict(list)
        self.by_word: dict[str, list[int]] = defaultdict(list)
        self.always: list[int] = []
        for key, values in vocabulary.values.items():
            if key in vocabulary.count_keys:
                continue
            for value in values:
                if _singular(fold(value)) in _LEAF_NOUNS:
                    continue  # "jobs" names what the question asks for, not a constraint
                runs, words = _anchors(value)
                if not runs:
                    continue  # nothing to state
                n = len(self.entries)
                self.entries.append((key, value))
                for run in set(runs):
                    (self.always if run is None else self.by_run[run]).append(n)
                for word in words:
                    self.by_word[word].append(n)

    def candidates(self, q_folded: str, q_tokens: list[str]) -> list[tuple[str, str]]:
        """The (key, value) entries a question may state, in the vocabulary's order."""
        runs = set(_RUN.findall(q_folded))
        runs |= {r[:-1] for r in runs if r.endswith("s")} | {
            r[:-2] for r in runs if r.endswith("es")
        }
        found = set(self.always)
        for run in runs:
            found.update(self.by_run.get(run, ()))
        for word in set(q_tokens):
            found.update(self.by_word.get(word, ()))
        return [self.entries[n] for n in sorted(found)]


def _lookup(vocabulary: ScopeVocabulary) -> _ValueLookup:
    lookup = vocabulary.derived.get("value_lookup")
    if not isinstance(lookup, _ValueLookup):
        lookup = vocabulary.derived["value_lookup"] = _ValueLookup(vocabulary)
    return lookup


def parse_question(question: str, vocabulary: ScopeVocabulary) -> ParsedQuery:
    """Micro-queries for ``question`` built from the scope's own keys and values."""
    micro = _value_micro_queries(_stated_values(question, vocabulary))
    kind = _kind(question, vocabulary, micro)
    listed: set[str] = set()
    if kind == "summary":
        micro, listed = _without_listed_options(micro, vocabulary)
    valued_keys = {m.key for m in micro}
    targets = _asked_targets(question, vocabulary, listed)
    unvalued = [k for k in targets if k not in valued_keys]
    if kind == "retrieval":
        named = _named_spans(question, micro, vocabulary)
        asked = unvalued[0] if len(unvalued) == 1 and len(named) == 1 else MENTION_KEY
        opened = [MicroQuery(_slot_key(question, span) or asked, span) for span in named]
        micro += opened
        valued_keys |= {m.key for m in opened}
        unvalued = [k for k in unvalued if k not in valued_keys]
    # A summary question names what it wants; valued keys are its filters.
    targets = unvalued if kind == "retrieval" else unvalued or targets
    if kind == "summary":
        micro += [MicroQuery(key, None) for key in targets if key not in valued_keys]
    unmatched = _unmatched_constraints(question, kind, micro, valued_keys)
    return ParsedQuery(kind, tuple(micro), tuple(targets), tuple(unmatched))


#: Words by which questions name the leaves themselves; a facet value that is one of them
#: (a JSON:API export's ``type: jobs``) is never a constraint.
_LEAF_NOUNS = frozenset(
    "search project opening requisition req job position posting vacancy role".split()
)
_SENTENCE_START = re.compile(r"(?:^|[.!?:]\s+)[\"'(]*$")
#: A name in a question: capitalized words (or acronyms, or words with digits) in a row.
_WORD = r"(?:[A-Z][\w+#.'-]*|[\w+#.-]*\d[\w+#.-]*)"
_NAME = re.compile(rf"(?<![\w.]){_WORD}(?:\s+{_WORD})*")


def _singular(word: str) -> str:
    return word[:-1] if word.endswith("s") and len(word) > 3 else word


def _named_spans(question: str, micro: list[MicroQuery], vocabulary: ScopeVocabulary) -> list[str]:
    """Names a question states that none of its valued micro-queries, key labels or
    question words account for: values the scope's facets do not hold, which only the
    evidence can confirm."""
    covered = " ".join(_singular(w) for m in micro if m.value for w in fold(m.value).split())
    labels = {fold(humanize_key(k)) for k in vocabulary.values} | {
        fold(key_label(k)) for k in vocabulary.values
    }
    known = covered.split()
    out = []
    for m in _NAME.finditer(question):
        text = m.group(0)
        if _SENTENCE_START.search(question[: m.start()]):  # capitalized as the first word
            text = text.split(maxsplit=1)[1] if " " in text else ""
        words = [w for w in fold(text).split() if w not in STOPWORDS]
        span = " ".join(words)
        if len(span) < 2 or span in labels or all(_singular(w) in known for w in words):
            continue
        out.append(" ".join(text.split()[-len(words) :]).rstrip(".,;:!?'"))
    return out


def _kind(question: str, vocabulary: ScopeVocabulary, micro: list[MicroQuery]) -> str:
    """Retrieval-style when worded so ("which of my searches ..."), or when the question
    states values, asks for no other key and has no summary wording ("Have I recruited any
    Store Managers?", "Backend Engineer roles in Toronto?"): the values are what to match."""
    kind = question_kind(question)
    if kind == "retrieval" or not micro or _SUMMARY_MARKERS.search(question):
        return kind
    valued = {m.key for m in micro}
    others = [
        k
        for k in asked_keys(question, {*vocabulary.values, "title", "location"})
        if k not in valued
    ]
    return "summary" if others or _listed_keys(micro, vocabulary) else "retrieval"


_PLACE_WORDS = re.compile(r"\b(located|locations?|based|cit(?:y|ies)|offices?)\b", re.I)


def _stated_values(
    question: str, vocabulary: ScopeVocabulary
) -> dict[str, list[tuple[float, str]]]:
    """Per key, the (score, value) pairs of the scope's values the question states."""
    q_folded = fold(question)
    q_tokens = q_folded.split()
    matched: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for key, value in _lookup(vocabulary).candidates(q_folded, q_tokens):
        score = _value_matches(value, q_tokens, q_folded)
        if score:
            matched[key].append((score, value))
    # A workplace stated in other words ("in the office" for on-site).
    known = set(vocabulary.values.get("workplace_type", ()))
    for words, value in WORKPLACE_WORDS.items():
        if value in known and words != value and _stated(words, q_folded):
            matched["workplace_type"].append((1.0 + len(words) / 1000.0, value))
    return matched


def _value_micro_queries(matched: dict[str, list[tuple[float, str]]]) -> list[MicroQuery]:
    """Valued micro-queries, best key and longest value first, skipping overlapped spans."""
    micro: list[MicroQuery] = []
    used_spans: list[str] = []
    for key in sorted(matched, key=lambda k: -max(s for s, _ in matched[k])):
        exact = any(score >= 1.0 for score, _ in matched[key])
        # Stated as such before stated in part (only when nothing is stated as such); then
        # the longest.
        for score, value in sorted(matched[key], key=lambda sv: (-sv[0], -len(fold(sv[1])), sv[1])):
            if exact and score < 1.0:
                continue
            folded = fold(value)
            if any(folded in span for span in used_spans):
                continue
            used_spans.append(folded)
            micro.append(MicroQuery(key, value))
    return micro


def _without_listed_options(
    micro: list[MicroQuery], vocabulary: ScopeVocabulary
) -> tuple[list[MicroQuery], set[str]]:
    """The micro-queries minus listed-option keys (:func:`_listed_keys`), and those keys."""
    listed = _listed_keys(micro, vocabulary)
    return [m for m in micro if m.key not in listed], listed


def _listed_keys(micro: list[MicroQuery], vocabulary: ScopeVocabulary) -> set[str]:
    """Keys stated twice or more as alternatives: "remote, hybrid or on-site?" lists the
    options of one key, which is the target. Values one known value states together
    ("Toronto" and "Canada" in "Toronto, Canada") are not alternatives: they narrow the same
    constraint."""
    by_key: dict[str, list[str]] = defaultdict(list)
    for m in micro:
        by_key[m.key].append(m.value or "")
    return {
        key
        for key, stated in by_key.items()
        if len(stated) >= 2 and not _together(stated, vocabulary.values.get(key, ()))
    }


def _together(stated: list[str], known) -> bool:
    """Some known value contains every one of ``stated`` (as words)."""
    wanted = [fold(v).split() for v in stated]
    for w in known:
        words = fold(w).split()
        if all(_contains(words, seq) for seq in wanted):
            return True
    return False


def _contains(words: list[str], seq: list[str]) -> bool:
    n = len(seq)
    return any(words[i : i + n] == seq for i in range(len(words) - n + 1))


def _asked_targets(question: str, vocabulary: ScopeVocabulary, listed: set[str]) -> list[str]:
    """Listed-option keys, then keys asked about by wording, then keys named by their label."""
    targets: list[str] = sorted(listed)
    # Keys the question asks about without a value ("where", "which skills").
    in_scope = {*vocabulary.values, "title", "location"}
    targets += [key for key in asked_keys(question, in_scope) if key not in targets]
    q_folded = fold(question)
    for key in vocabulary.values:
        label = humanize_key(key)
        if key not in targets and len(label) > 3 and re.search(rf"\b{re.escape(label)}", q_folded):
            targets.append(key)
    return targets


def _unmatched_constraints(
    question: str, kind: str, micro: list[MicroQuery], valued_keys: set[str]
) -> list[str]:
    """Constraints stated in the question (slot patterns) that the scope does not hold."""
    unmatched: list[str] = []
    for key, pattern in _SLOTS:
        m = pattern.search(question)
        if not m:
            continue
        slot = m.group(1).strip(" ?.,")
        slot_tokens = {t for t in content_tokens(slot) if t not in _GENERIC_SLOT_WORDS}
        if not slot_tokens or _slot_covered(key, slot_tokens, micro, valued_keys):
            continue
        if kind == "retrieval" or key in ("title", "skill"):
            unmatched.append(f"{humanize_key(key)}: {slot}")
    return unmatched


def _slot_covered(
    key: str, slot_tokens: set[str], micro: list[MicroQuery], valued_keys: set[str]
) -> bool:
    """True when the valued micro-queries state the slot's constraint."""
    covered: set[str] = set()
    for v in micro:
        if v.value and (v.key == key or key not in valued_keys):
            covered |= set(content_tokens(v.value))
    # The scope must hold a value that states the whole constraint: "Demand Forecasting"
    # is not matched by a scope value "Forecasting".
    if key in valued_keys:
        return slot_tokens <= covered
    return bool(slot_tokens & covered)


def _matching_leaves(context: RetrievedContext, schema: TreeSchema) -> list[NodeContext]:
    """Leaves that satisfy every valued micro-query: the verified matches when retrieval
    verified them (facets or evidence), else leaves whose facets match each one (cosine >=
    MATCH_COSINE).

    Without a facet view (ablations), leaves whose QA answers or summaries state every value.
    """
    if context.matches is not None:
        ranked = {n.node_id: n for n in context.facets}
        order = {n.node_id: i for i, n in enumerate(context.facets)}
        leaves = [
            ranked.get(m.node_id) or NodeContext(m.node_id, schema.leaf.name, m.name, 0.0, 1, ())
            for m in context.matches
        ]
        return sorted(leaves, key=lambda n: (order.get(n.node_id, len(order)), n.node_id))
    valued = [i for i, m in enumerate(context.parsed.micro) if m.value]
    if not valued:
        return []
    if context.facets:
        return [
            n
            for n in context.facets
            if schema.is_leaf(n.level) and all(n.best[i] >= MATCH_COSINE for i in valued)
        ]
    texts: dict[str, list[str]] = defaultdict(list)
    scores: dict[str, float] = {}
    for item in [*context.qa, *context.summaries]:
        if schema.is_leaf(item.level):
            texts[item.node_id] += [item.text, item.answer or "", item.detailed or ""]
            scores[item.node_id] = max(scores.get(item.node_id, 0.0), item.score)
    values = [fold(context.parsed.micro[i].value or "") for i in valued]
    out = []
    for node_id, parts in texts.items():
        text = f" {fold(' '.join(parts))} "
        if all(f" {v} " in text for v in values):
            out.append(NodeContext(node_id, schema.leaf.name, node_id, scores[node_id], 1, ()))
    return sorted(out, key=lambda n: (-n.score, n.node_id))


def _constraint_text(parsed: ParsedQuery) -> str:
    return join_human(f"{humanize_key(m.key)} {m.value}" for m in parsed.micro if m.value)


def answer_extractively(context: RetrievedContext, schema: TreeSchema = DEFAULT_SCHEMA) -> Answer:
    """Answer from retrieved memory alone; references are node ids of the context."""
    analyzed = answer_analyzed(context, schema)
    if analyzed is not None:
        return analyzed
    parsed = context.parsed
    if parsed.unmatched:
        what = "; ".join(parsed.unmatched)
        return Answer(
            f"None in scope: nothing under {context.scope} matches {what}.",
            (),
            f"The question asks for {what}, which no memory inside {context.scope} holds.",
        )
    if parsed.kind == "retrieval":
        return _answer_retrieval(context, schema)
    return _answer_summary(context, schema)


def _answer_retrieval(context: RetrievedContext, schema: TreeSchema) -> Answer:
    parsed = context.parsed
    leaf = schema.leaf
    leaves = _matching_leaves(context, schema)
    if not any(m.value for m in parsed.micro):
        return Answer(
            f"I could not tell which {leaf.nouns} under {context.scope} the question asks for.",
            (),
            "No facet value of this scope is stated in the question.",
        )
    what = _constraint_text(parsed)
    if not leaves:
        return Answer(
            f"None in scope: no {leaf.noun} under {context.scope} matches {what}.",
            (),
            "No leaf in the retrieved facets matches every constraint.",
        )
    listed = join_human(f"{n.name} ({n.node_id})" for n in leaves)
    noun = f"{leaf.noun} matches" if len(leaves) == 1 else f"{leaf.nouns} match"
    return Answer(
        f"{len(leaves)} {noun} {what}: {listed}.",
        tuple(n.node_id for n in leaves),
        f"Leaves verified against every constraint ({what}) by facet value or document."
        if context.matches is not None
        else f"Leaves whose facets match every micro-query ({what}) with cosine >= "
        f"{MATCH_COSINE} (no verification in this context).",
    )


def _answer_summary(context: RetrievedContext, schema: TreeSchema) -> Answer:
    parsed = context.parsed
    targets = [k for k in parsed.target_keys] or [m.key for m in parsed.micro if not m.value]
    filters = [m for m in parsed.micro if m.value and m.key not in targets]
    counted = _counted_distribution(context, targets, filters, schema)
    if counted is not None:
        return counted
    if targets and filters:
        leaves = _matching_leaves(context, schema)
        if leaves:
            return _distribution_over(leaves, targets, filters, schema)
    for key in targets:
        node = _best_aggregate(context, key, schema)
        if node is not None:
            facets = sorted(
                (f for f in node.facets if f.key == key),
                key=lambda f: (-(f.support or 0), fold(f.value or "")),
            )
            shown = "; ".join(f"{f.value} ({f.support} of {node.leaf_count})" for f in facets[:5])
            label = key_label(key)
            return Answer(
                f"Most common {label} in {node.name} "
                f"({plural_s(node.leaf_count, schema.leaf.noun)}): "
                f"{shown}.",
                (node.node_id,),
                f"Aggregated {label} facets of {node.node_id}, with support counts.",
            )
    if context.qa and context.qa[0].score >= 0.6:
        item = context.qa[0]
        return Answer(
            item.answer or "",
            (item.node_id,),
            f"Closest answerable question: {item.text!r} (cosine {item.score:.2f}).",
        )
    if context.summaries:
        item = sorted(context.summaries, key=lambda s: (schema.rank(s.level), -s.score))[0]
        return Answer(item.text, (item.node_id,), "Summary of the broadest node in the context.")
    return Answer(
        f"Nothing in memory under {context.scope} answers this.",
        (),
        "The retrieved context is empty.",
    )


def _counted_distribution(
    context: RetrievedContext,
    targets: list[str],
    filters: list[MicroQuery],
    schema: TreeSchema,
) -> Answer | None:
    """The distribution retrieval counted over the leaves concerned (facets and evidence)."""
    key = next((k for k in targets if context.distributions.get(k)), None)
    if key is None:
        return None
    total, label = context.leaves_counted, key_label(key)
    shown = "; ".join(f"{v} ({c} of {total})" for v, c in context.distributions[key][:5])
    if filters and context.matches:
        what = join_human(f"{humanize_key(m.key)} {m.value}" for m in filters)
        return Answer(
            f"For {schema.leaf.nouns} matching {what}, the most common {label}: {shown}.",
            tuple(m.node_id for m in context.matches),
            f"Counted {humanize_key(key)} over the {total} leaves matching {what}.",
        )
    name = next((n.name for n in context.facets if n.node_id == context.scope), context.scope)
    return Answer(
        f"Most common {label} in {name} ({plural_s(total, schema.leaf.noun)}): {shown}.",
        (context.scope,),
        f"{label.capitalize()} counted over the {total} leaves of {context.scope}, from their "
        "facets and evidence.",
    )


def _best_aggregate(context: RetrievedContext, key: str, schema: TreeSchema) -> NodeContext | None:
    """The broadest node of the context that has facets for ``key``."""
    nodes = [n for n in context.facets if any(f.key == key for f in n.facets)]
    if not nodes:
        return None
    return sorted(nodes, key=lambda n: (schema.rank(n.level), -n.leaf_count, -n.score))[0]


def _distribution_over(
    leaves: list[NodeContext],
    targets: list[str],
    filters: list[MicroQuery],
    schema: TreeSchema,
) -> Answer:
    key = targets[0]
    counts: Counter[str] = Counter()
    for leaf in leaves:
        for value in {f.value for f in leaf.facets if f.key == key and f.value}:
            counts[value] += 1
    what = join_human(f"{humanize_key(m.key)} {m.value}" for m in filters)
    if not counts:
        return Answer(
            f"The {len(leaves)} {schema.leaf.nouns} matching {what} do not state a "
            f"{humanize_key(key)}.",
            tuple(n.node_id for n in leaves),
            "Matching leaves have no facet for the asked key.",
        )
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], fold(kv[0])))
    shown = "; ".join(f"{v} ({c} of {len(leaves)})" for v, c in ranked[:5])
    return Answer(
        f"For {schema.leaf.nouns} matching {what}, the most common {key_label(key)}: {shown}.",
        tuple(n.node_id for n in leaves),
        f"Counted {humanize_key(key)} over the {len(leaves)} leaves matching {what}.",
    )
