"""Extractive answers from what retrieval found: facts with their node and document, the nodes
a list or count names, distributions counted over leaves.

The answer states the fact first, then where it comes from: "New York, New York —
Backend Engineer (New York) #003 (project:p00003), from p00003-d0 ("job.offices.name: New
York")". It cites the nodes whose memory holds what it states, and only those.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

from hltm_resources.engines.base import (
    Analysis,
    Answer,
    ContextItem,
    Finding,
    RetrievedContext,
)
from hltm_resources.engines.vocabulary import MULTI_KEYS, key_label, same_value_key
from hltm_resources.schema import TreeSchema
from hltm_resources.text import content_tokens, humanize_key, join_human, sentences

#: Findings of more nodes than this are listed by count first.
SHOWN_NODES = 12


def answer_analyzed(context: RetrievedContext, schema: TreeSchema) -> Answer | None:
    """The answer to an analyzed question, or None to answer it the older way (a scope too
    large to hold, a summary the counts do not cover)."""
    analysis = context.analysis
    if analysis is None:
        return None
    if analysis.form == "fact":
        return _fact(context, analysis, schema)
    if analysis.form == "why":
        return _why(context, analysis, schema)
    if analysis.form in ("list", "count") and context.matches is not None:
        return _nodes(context, analysis, schema)
    return None


def _what(analysis: Analysis) -> str:
    parts = [f"{humanize_key(m.key)} {m.value}" for m in analysis.constraints]
    if analysis.options and analysis.asked_key and analysis.form != "fact":
        parts.append(f"{humanize_key(analysis.asked_key)} {' or '.join(analysis.options)}")
    parts += [f"not {humanize_key(m.key)} {m.value}" for m in analysis.excluded]
    parts += [f"a stated {humanize_key(k)}" for k in analysis.holding]
    return join_human(parts)


def _asked(analysis: Analysis) -> str:
    if analysis.asked_key:
        return humanize_key(analysis.asked_key)
    if analysis.asked_phrase:
        return analysis.asked_phrase
    return {"person": "person", "number": "number", "date": "date"}.get(
        analysis.answer_type, "answer"
    )


def _source(f: Finding) -> str:
    where = f"{f.name} ({f.node_id})" if f.name and f.name != f.node_id else f.node_id
    docs = f", from {', '.join(f.source_ids)}" if f.source_ids else ""
    quote = f' ("{f.quote}")' if f.quote and f.quote != f.value else ""
    return f"{where}{docs}{quote}"


#: Passages quoted when no fact answers a question.
CLOSEST_SHOWN = 2


def _stem(token: str) -> str:
    """A token without a plural or third-person ``s`` ("prefers" ~ "prefer")."""
    return (
        token[:-1] if len(token) > 3 and token.endswith("s") and not token.endswith("ss") else token
    )


def _closest_passages(context: RetrievedContext) -> list[ContextItem]:
    """The retrieved passages that share the most of what the question is about (its
    content words but those of what it asks for), each word weighted by how few of the
    retrieved passages hold it; at least one word shared, retrieval's order among equals:
    quoted, never restated, when no fact answers the question."""
    asked = {_stem(t) for t in content_tokens(context.question)}
    # What the question asks for ("the notes say", "needs") frames it; the rest is what it
    # is about, and what a passage must share.
    framing = context.analysis.asked_phrase if context.analysis else ""
    about = asked - {_stem(t) for t in content_tokens(framing or "")}
    asked = about or asked
    if not asked:
        return []
    held = [asked & {_stem(t) for t in content_tokens(item.text)} for item in context.evidence]
    holding = {word: sum(word in words for words in held) for word in asked}
    scored = [
        (round(sum(1 / holding[w] for w in words), 6), rank, item)
        for rank, (words, item) in enumerate(zip(held, context.evidence, strict=True))
        if words
    ]
    best = max((s[0] for s in scored), default=0)
    ranked = sorted((s for s in scored if s[0] == best), key=lambda s: s[1])
    return [_the_sentences(item, held[rank]) for _, rank, item in ranked[:CLOSEST_SHOWN]]


def _the_sentences(item: ContextItem, words: set[str]) -> ContextItem:
    """``item`` cut to its sentences that hold ``words`` (the whole passage if none does)."""
    kept = [
        sentence
        for sentence in sentences(item.text)
        if words & {_stem(t) for t in content_tokens(sentence)}
    ]
    return replace(item, text=" … ".join(kept)) if kept else item


def _passage_source(item: ContextItem) -> str:
    docs = ", ".join(item.source_ids)
    return f"{docs}, {item.node_id}" if docs else item.node_id


def _by_node(findings: list[Finding]) -> dict[str, list[Finding]]:
    out: dict[str, list[Finding]] = defaultdict(list)
    for f in findings:
        out[f.node_id].append(f)
    return dict(out)


def _joined(items: list[Finding]) -> Finding:
    """One node's findings as one: its values joined, their documents together."""
    first = items[0]
    values = list(dict.fromkeys(f.value for f in items))
    docs = tuple(dict.fromkeys(d for f in items for d in f.source_ids))
    quote = first.quote if len(items) == 1 else ""
    sep = "; " if first.key == "rejection_reason" else ", "
    value = sep.join(values) if first.key in MULTI_KEYS or len(values) > 1 else values[0]
    return Finding(first.node_id, first.name, value, first.key, docs, quote)


def _fact(context: RetrievedContext, analysis: Analysis, schema: TreeSchema) -> Answer:
    leaf = schema.leaf
    if analysis.constraints and context.matches == []:
        what = _what(analysis)
        return Answer(
            f"None in scope: no {leaf.noun} under {context.scope} matches {what}.",
            (),
            f"No leaf of {context.scope} holds {what} (by facet or document).",
        )
    findings = context.findings
    if not findings and context.mentioned:
        node = context.mentioned[0]
        said = "; ".join(
            f'{f.value} ("{f.quote}", {", ".join(f.source_ids)})' for f in context.mentioned
        )
        return Answer(
            f"Not recorded as a fact for {node.name} ({node.node_id}): its documents name "
            f"more than one {_asked(analysis)} and none says which is the role's. They "
            f"mention: {said}.",
            (node.node_id,),
            "Memory holds no value of this one-value key; the passages that mention one are "
            "quoted for a person to decide.",
        )
    if not findings:
        checked = [m.node_id for m in context.matches or []][:SHOWN_NODES]
        if schema.is_leaf(context.scope.split(":", 1)[0]):
            checked = [context.scope]
        # A known attribute that no facet or passage states is unstated; a question about
        # anything else is shown the passages that share its words.
        closest = _closest_passages(context) if analysis.asked_key is None else []
        if closest:
            quoted = "; ".join(f'"{p.text}" ({_passage_source(p)})' for p in closest)
            return Answer(
                f"No stored fact answers this; what the documents say closest to it: {quoted}.",
                tuple(dict.fromkeys(p.node_id for p in closest)),
                "No facet or passage states the answer as a fact; the retrieved passages "
                "sharing the question's words are quoted for a person to judge.",
            )
        if not checked:
            return Answer(
                f"Nothing under {context.scope} states the {_asked(analysis)} asked for.",
                (),
                "No facet or passage in scope answers it.",
            )
        return Answer(
            f"No {_asked(analysis)} is stated for {join_human(checked)}: nothing in "
            f"{'its' if len(checked) == 1 else 'their'} memory or documents says it.",
            tuple(checked),
            f"Read the facets and passages of {', '.join(checked)}; none states it.",
        )
    from_facets = findings[0].key is not None
    # Facts of facets are one line per node; passages each answer with their own quote.
    grouped = [_joined(items) for items in _by_node(findings).values()] if from_facets else findings
    nodes = list(dict.fromkeys(f.node_id for f in grouped))
    prefix = _yes_no(analysis, findings)
    if len(grouped) == 1:
        f = grouped[0]
        text = f"{prefix}{f.value} — {_source(f)}."
    else:
        shown = "; ".join(f"{f.value} — {_source(f)}" for f in grouped[:SHOWN_NODES])
        more = f" (+{len(grouped) - SHOWN_NODES} more)" if len(grouped) > SHOWN_NODES else ""
        what = f" matching {_what(analysis)}" if analysis.constraints else ""
        noun = leaf.noun if len(nodes) == 1 else leaf.nouns
        head = (
            f"{len(nodes)} {noun}{what}"
            if from_facets
            else f"{len(grouped)} answers in {len(nodes)} {noun}{what}"
        )
        counts = [int(f.value) for f in grouped if f.value.isdigit()]
        if from_facets and grouped[0].key == "headcount" and len(counts) == len(grouped):
            # "how many people are we hiring?" over several roles: their sum, then each
            head = f"{sum(counts)} in total across {head}"
        text = f"{prefix}{head}: {shown}{more}."
    if analysis.kind and analysis.asked_key:
        label = key_label(analysis.asked_key)
        text += (
            f" (No document names the {analysis.kind} as such: these are the {label}, closest"
            " in meaning first.)"
        )
    if analysis.unmet:
        # the closest roles: all the question's values but one, which the answer names
        unmet = " and ".join(f"{humanize_key(m.key).lower()} {m.value}" for m in analysis.unmet)
        text += f" (Closest match: no {leaf.noun} here states {unmet} with the other values asked.)"
    how = "facets" if from_facets else "passages"
    return Answer(
        text,
        tuple(nodes),
        f"The {_asked(analysis)} read from the {how} of {', '.join(nodes)}.",
    )


def _yes_no(analysis: Analysis, findings: list[Finding]) -> str:
    """ "Yes: " / "No: " for a yes/no question about a value of the key the findings hold."""
    if not analysis.yes_no or not analysis.asked_key or len(analysis.options) > 1:
        return ""  # "Is it remote, hybrid or on-site?" asks which, not whether
    asked = [c.value or "" for c in analysis.constraints if c.key == analysis.asked_key]
    asked += list(analysis.options)  # "Is the Dublin search remote?" asked over a seat
    if not asked:
        return ""
    key = analysis.asked_key
    wanted = {same_value_key(key, a) for a in asked}
    says: dict[str, bool] = {}  # per node: does it hold what is asked?
    for f in findings:
        says[f.node_id] = says.get(f.node_id, False) or same_value_key(key, f.value) in wanted
    if all(says.values()):
        return "Yes: "
    return "No: " if not any(says.values()) else ""  # several nodes, not all alike


def _why(context: RetrievedContext, analysis: Analysis, schema: TreeSchema) -> Answer:
    findings = context.findings
    if findings and all(f.key == "cause" for f in findings):
        shown = "; ".join(f"{f.value} — {_source(f)}" for f in findings[:SHOWN_NODES])
        return Answer(
            f"The notes say: {shown}.",
            tuple(dict.fromkeys(f.node_id for f in findings)),
            "The sentences of the notes that say most of what the question says, with a cause",
        )
    if not findings and analysis.asked_key != "rejection_reason":
        return Answer(
            f"Nothing under {context.scope} says why.", (), "No note in scope answers it."
        )
    if not findings:
        who = join_human(analysis.mentions) or "candidates"
        return Answer(
            f"Nothing under {context.scope} says why {who} "
            f"{'was' if analysis.mentions else 'were'} turned down.",
            (),
            "No rejection reason or note in scope answers it.",
        )
    grouped = [_joined(items) for items in _by_node(findings).values()]
    who = join_human(analysis.mentions)
    lead = f"{who} was turned down for: " if who else "Candidates were turned down for: "
    if who and all(f.key is None for f in findings):
        lead = f"What the notes say of {who}: "  # a whole note: who said no, and why
    shown = "; ".join(f"{f.value} — {_source(f)}" for f in grouped[:SHOWN_NODES])
    return Answer(
        f"{lead}{shown}.",
        tuple(f.node_id for f in grouped),
        "Rejection reasons from the facets and notes of " + ", ".join(f.node_id for f in grouped),
    )


def _nodes(context: RetrievedContext, analysis: Analysis, schema: TreeSchema) -> Answer:
    """A list or a count of the nodes matching the question's constraints, at the level it
    asks for (projects, or the recruiters holding them)."""
    leaf = schema.leaf
    matches = context.matches or []
    what = _what(analysis) or join_human(analysis.mentions)
    matching = f" matching {what}" if what else ""
    if analysis.level and analysis.level != leaf.name:
        level = schema.level(analysis.level)
        groups = context.groups
        n = len(groups)
        if not n:
            return Answer(
                f"{'0' if analysis.form == 'count' else 'None'}: no {level.noun} under "
                f"{context.scope} has {leaf.nouns}{matching}.",
                (),
                "No leaf matches, so no node above one does.",
            )
        names = {m.node_id: m.name for m in matches}
        listed = "; ".join(
            f"{name} ({node}): " + join_human(f"{names.get(x, x)} ({x})" for x in kids)
            for node, (name, kids) in groups.items()
        )
        noun = level.noun if n == 1 else level.nouns
        return Answer(
            f"{n} {noun} with {leaf.nouns}{matching}: {listed}.",
            tuple(groups),
            f"The {level.nouns} above the leaves matching {what or 'the question'}.",
        )
    n = len(matches)
    if not n:
        return Answer(
            f"{'0' if analysis.form == 'count' else 'None in scope'}: no {leaf.noun} under "
            f"{context.scope}{' matches ' + what if what else ''}.",
            (),
            "No leaf matches every constraint.",
        )
    listed = join_human(f"{m.name} ({m.node_id})" for m in matches)
    noun = leaf.noun if n == 1 else leaf.nouns
    return Answer(
        f"{n} {noun}{matching}: {listed}.",
        tuple(m.node_id for m in matches),
        f"Leaves whose facets or documents state every constraint ({what}).",
    )
