"""The deterministic extractive engine: every agent, no model, byte-identical output.

Leaves: facets from :mod:`~hltm_resources.engines.extractive.documents`, QA pairs from
templates over those facets and the candidate feedback, summaries stitched from facts and the
first prose sentences.
Parents: facet distributions with support counts, pruned of rare values, plus templated QA and
summaries over them. Serving: micro-queries from the scope's own vocabulary, extractive answers.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import replace

from hltm_resources.dates import instant
from hltm_resources.engines.aliases import as_written, value_aliases
from hltm_resources.engines.base import (
    Analysis,
    Answer,
    Hints,
    MemoryAgents,
    ParsedQuery,
    RetrievedContext,
    ScopeVocabulary,
    dated,
)
from hltm_resources.engines.extractive import patterns
from hltm_resources.engines.extractive.documents import (
    RawFacet,
    document_changes,
    document_facets,
    feedback_event,
    reconcile,
    timeline,
)
from hltm_resources.engines.extractive.questions import answer_extractively, parse_question
from hltm_resources.engines.understanding import parsed_query
from hltm_resources.engines.vocabulary import (
    KEY_ORDER,
    MULTI_KEYS,
    canonical_value,
    key_label,
    key_rank,
    names_a_site,
    place_name,
    same_value_key,
)
from hltm_resources.models import Document, Facet, Memory, NodeInfo, QAPair, Summary
from hltm_resources.schema import DEFAULT_SCHEMA
from hltm_resources.text import (
    article,
    collapse_text,
    fold,
    humanize_key,
    join_human,
    plural_s,
    sentences,
)

#: Bump when templates or rules change: it is part of every node's input hash.
EXTRACTIVE_VERSION = "extractive-v10"
MAX_LEAF_QA = 10
MAX_PARENT_QA = 10
MAX_VALUES_PER_KEY = 8
#: Intermediate levels keep (almost) full distributions so that counts above them stay exact.
MAX_VALUES_PER_KEY_INTERMEDIATE = 15

_LEAF_QA = {
    "title": "What role is the {p} project hiring for?",
    "location": "Where is the {p} role located?",
    "workplace_type": "Is the {p} role remote, hybrid or on-site?",
    "skill": "Which skills does the {p} role require?",
    "preferred_skill": "Which skills are nice to have for the {p} role?",
    "rejection_reason": "Why were candidates rejected in the {p} project?",
    "seniority": "What seniority level is the {p} role?",
    "department": "Which department is the {p} project hiring for?",
    "employment_type": "What employment type is the {p} role?",
    "salary_range": "What is the salary range of the {p} role?",
}
#: "Which <projects> of a seat ..." (a parent of leaves) and "which <recruiters> at an account"
#: (a parent of parents), for the parent's most supported value.
_WHICH_LEAVES = {
    "title": "Which {n} {leaves} were for {v} roles?",
    "location": "Which {n} {leaves} were located in {v}?",
    "skill": "Which {n} {leaves} required {v}?",
}
_WHICH_CHILDREN = {
    "title": "Which {kids} at {n} hire for {v} roles?",
    "location": "Which {kids} at {n} hire in {v}?",
    "skill": "Which {kids} at {n} need {v} in their openings?",
}
_PARENT_QA = {
    "title": "What roles does {n} hire for most often?",
    "location": "Where are {n}'s jobs usually located?",
    "workplace_type": "Are {n}'s roles usually remote, hybrid or on-site?",
    "skill": "Which skills do {n}'s openings most often require?",
    "rejection_reason": "What are the most common reasons {n} rejects candidates?",
    "seniority": "What seniority levels does {n} usually hire for?",
    "department": "Which departments does {n} hire for most often?",
    "employment_type": "What employment types does {n} usually hire for?",
}


def _raw_facets(docs: Sequence[Document]) -> dict[str, list[RawFacet]]:
    """Each document's raw facets, in document id order (the order they are reconciled)."""
    ordered = sorted(docs, key=lambda d: d.doc_id)
    return {d.doc_id: [*document_facets(d), *document_changes(d)] for d in ordered}


def distribution(
    facets: Sequence[Facet], key: str, total: int, leaves: str = "projects", limit: int = 5
) -> str:
    """``Dublin, Ireland (9 of 12 projects); Lisbon (2 of 12)`` for one key."""
    items = sorted((f for f in facets if f.key == key), key=lambda f: (-f.support, fold(f.value)))
    parts = []
    for i, f in enumerate(items[:limit]):
        unit = f" {leaves}" if i == 0 else ""
        parts.append(f"{f.value} ({f.support} of {total}{unit})")
    return "; ".join(parts)


class ExtractiveAgents(MemoryAgents):
    """All memory agents as deterministic extraction and templates."""

    engine_id = EXTRACTIVE_VERSION

    # -- leaves --------------------------------------------------------------------------
    def extract_facets(self, node: NodeInfo, docs: Sequence[Document], hints: Hints) -> list[Facet]:
        self.usage.add(engine_calls=1)
        return self._facets(docs, _raw_facets(docs), hints)

    def facet_timeline(
        self, node: NodeInfo, docs: Sequence[Document], hints: Hints
    ) -> tuple[list[Facet], list[Facet]]:
        """The facts of the documents as they stood at each of their dates
        (:func:`~hltm_resources.engines.extractive.documents.timeline`): what holds now,
        since when, and what a later document replaced."""
        self.usage.add(engine_calls=1)
        raw = _raw_facets(docs)
        facets = self._facets(docs, raw, hints)
        when = {d.doc_id: instant(d.updated_at) for d in docs}
        since, history = timeline(raw, when, hints.facet_names)
        facets = [replace(f, valid_from=since.get((f.key, fold(f.value)), "")) for f in facets]
        return dated(facets, docs), history

    def _facets(
        self, docs: Sequence[Document], raw: dict[str, list[RawFacet]], hints: Hints
    ) -> list[Facet]:
        facets = reconcile([f for fs in raw.values() for f in fs], emphasized=hints.facet_names)
        if not facets:
            kinds = sorted({d.kind for d in docs})
            facets = [
                Facet("document_count", str(len(docs)), 1, tuple(sorted(d.doc_id for d in docs)))
            ]
            if kinds:
                facets.append(
                    Facet(
                        "document_kinds", ", ".join(kinds), 1, tuple(sorted(d.doc_id for d in docs))
                    )
                )
        return facets

    def generate_qa(
        self, node: NodeInfo, docs: Sequence[Document], facets: Sequence[Facet], hints: Hints
    ) -> list[QAPair]:
        self.usage.add(engine_calls=1)
        by_key = _group(facets)
        qa: list[QAPair] = []
        for key in sorted(by_key, key=lambda k: key_rank(k, hints.facet_names)):
            items = by_key[key]
            values = [f.value for f in items]
            sources = tuple(sorted({s for f in items for s in f.source_ids}))
            template = _LEAF_QA.get(key, "What is the {k} of the {p} project?")
            answer = join_human(values) if key in MULTI_KEYS else values[0]
            if key == "title" and "seniority" in by_key:
                answer = f"{by_key['seniority'][0].value} {answer}"
            if key == "location" and "workplace_type" in by_key:
                answer = f"{answer} ({by_key['workplace_type'][0].value})"
            if key == "rejection_reason":
                answer = "; ".join(values)
            qa.append(QAPair(template.format(p=node.name, k=humanize_key(key)), answer, sources))
        for doc in sorted(docs, key=lambda d: d.doc_id):
            event = feedback_event(doc)
            if event and event.rejected and event.reason and event.candidate:
                qa.append(
                    QAPair(
                        f"Why was {event.candidate} rejected for the {node.name} role?",
                        event.reason,
                        (doc.doc_id,),
                    )
                )
        if not qa:
            qa.append(
                QAPair(
                    f"How many documents does the {node.name} project have?",
                    str(len(docs)),
                    tuple(sorted(d.doc_id for d in docs)),
                )
            )
        # Questions of the workload's recurring patterns come first, on top of the templates.
        return _dedupe_qa(
            patterns.leaf_pattern_qa(node, by_key, hints) + _dedupe_qa(qa)[:MAX_LEAF_QA]
        )

    def summarize(
        self, node: NodeInfo, docs: Sequence[Document], facets: Sequence[Facet], hints: Hints
    ) -> Summary:
        self.usage.add(engine_calls=1)
        by_key = _group(facets)
        one = {k: v[0].value for k, v in by_key.items()}
        role = " ".join(x for x in (one.get("seniority"), one.get("title")) if x)
        where = one.get("location")
        how = one.get("workplace_type")
        skills = [f.value for f in by_key.get("skill", [])][:4]
        prose = _first_prose(docs)
        if role or where:
            concise = f"{node.name}: hiring " + (f"{article(role)} {role}" if role else "a role")
            concise += f" in {where}" if where else ""
            concise += f" ({how})" if how else ""
            concise += f", requiring {join_human(skills)}." if skills else "."
        else:
            concise = collapse_text(prose[0], 200) if prose else f"{node.name}: no details yet."
        parts = [f"{self.schema.leaf.noun.capitalize()} {node.name} ({node.node_id})"]
        if role or where:
            parts[0] += " is hiring " + (f"{article(role)} {role}" if role else "for a role")
            parts[0] += f" in {where}" if where else ""
            parts[0] += f", {how}" if how else ""
        parts[0] += "."
        if skills:
            parts.append(f"Required skills: {join_human([f.value for f in by_key['skill']])}.")
        if "preferred_skill" in by_key:
            nice = join_human([f.value for f in by_key["preferred_skill"]])
            parts.append(f"Nice to have: {nice}.")
        if "rejection_reason" in by_key:
            reasons = "; ".join(f.value for f in by_key["rejection_reason"])
            parts.append(f"Candidates were rejected for: {reasons}.")
        shown = {
            "seniority",
            "title",
            "location",
            "workplace_type",
            "skill",
            "preferred_skill",
            "rejection_reason",
        }
        other = [f"{humanize_key(k)}: {v[0].value}" for k, v in by_key.items() if k not in shown]
        if other:
            parts.append("Other facts: " + "; ".join(other[:8]) + ".")
        if prose:
            parts.append("From the documents: " + collapse_text(" ".join(prose[:2]), 400))
        sources = tuple(sorted(d.doc_id for d in docs))
        if sources:
            parts.append(f"Sources: {', '.join(sources)}.")
        return Summary(" ".join(parts), concise, sources)

    # -- parents -------------------------------------------------------------------------
    def aggregate(
        self, node: NodeInfo, children: Sequence[tuple[NodeInfo, Memory]], hints: Hints
    ) -> Memory:
        self.usage.add(engine_calls=1)
        children = sorted(children, key=lambda c: c[0].node_id)
        total = sum(m.leaf_count for _, m in children)
        child_ids = tuple(info.node_id for info, _ in children)
        facets = merge_child_facets(
            children, total, hints, top=node.parent_id is None, count_key=self.schema.leaf_count_key
        )
        facets.append(Facet(self.schema.leaf_count_key, str(total), total, child_ids))
        qa = self._parent_qa(node, children, facets, total, hints)
        summary = self._parent_summary(node, children, facets, total)
        return Memory(node.node_id, node.level, tuple(facets), tuple(qa), summary, total)

    def _parent_qa(
        self,
        node: NodeInfo,
        children: Sequence[tuple[NodeInfo, Memory]],
        facets: list[Facet],
        total: int,
        hints: Hints,
    ) -> list[QAPair]:
        by_key = _group(facets)
        count_key = self.schema.leaf_count_key
        leaves = self.schema.leaf.nouns
        child = self.schema.child(node.level)
        qa: list[QAPair] = []
        for key in sorted(by_key, key=lambda k: key_rank(k, hints.facet_names)):
            if key == count_key:
                continue
            template = _PARENT_QA.get(key, "What are the most common {k} across {n}'s {leaves}?")
            sources = tuple(sorted({s for f in by_key[key] for s in f.source_ids}))
            qa.append(
                QAPair(
                    template.format(n=node.name, k=key_label(key), leaves=leaves),
                    distribution(facets, key, total, leaves),
                    sources,
                )
            )
        names = {c.node_id: c.name for c, _ in children}
        for key in ("title", "location", "skill"):
            for f in sorted(by_key.get(key, []), key=lambda f: (-f.support, fold(f.value)))[:1]:
                listed = join_human(f"{names[s]} ({s})" for s in f.source_ids if s in names)
                if self.schema.is_leaf(child.name):
                    question = _WHICH_LEAVES[key].format(n=node.name, leaves=leaves, v=f.value)
                else:
                    question = _WHICH_CHILDREN[key].format(n=node.name, kids=child.nouns, v=f.value)
                qa.append(QAPair(question, listed, f.source_ids))
        qa.append(
            QAPair(
                f"How many {leaves} does {node.name} have?",
                str(total),
                tuple(info.node_id for info, _ in children),
            )
        )
        return _dedupe_qa(
            list(patterns.parent_pattern_qa(node, children, by_key, total, hints, count_key))
            + _dedupe_qa(qa)[:MAX_PARENT_QA]
        )

    def _parent_summary(
        self,
        node: NodeInfo,
        children: Sequence[tuple[NodeInfo, Memory]],
        facets: list[Facet],
        total: int,
    ) -> Summary:
        by_key = _group(facets)
        child_ids = tuple(info.node_id for info, _ in children)
        kind = self.schema.level(node.level).noun
        leaf, child = self.schema.leaf, self.schema.child(node.level)
        if total == 0:
            text = f"{node.name} ({node.node_id}) has no {leaf.nouns} yet."
            return Summary(text, f"{node.name}: no {leaf.nouns} yet.", child_ids)

        def top(key: str) -> str | None:
            """The most supported value, or the values tied for it ("Backend Engineer and
            Product Manager")."""
            items = sorted(by_key.get(key, []), key=lambda f: (-f.support, fold(f.value)))
            if not items:
                return None
            return join_human([f.value for f in items if f.support == items[0].support][:3])

        title, where, how = top("title"), top("location"), top("workplace_type")
        projects = plural_s(total, leaf.noun)
        if title or where:
            concise = f"{node.name} mostly hires " + (f"{title} roles" if title else "for roles")
            concise += f" in {where}" if where else ""
            concise += f", usually {how}" if how else ""
            concise += f" ({projects})."
        else:
            concise = f"{node.name} is {article(kind)} {kind} with {projects}."
        parts = [f"{node.name} ({node.node_id}) is {article(kind)} {kind} with {projects}"]
        if not self.schema.is_leaf(child.name):
            parts[0] += f" across {plural_s(len(children), child.noun)}"
        parts[0] += "."
        for key in sorted(by_key, key=key_rank):
            if key != self.schema.leaf_count_key:
                spread = distribution(facets, key, total, leaf.nouns)
                parts.append(f"{key_label(key).capitalize()}: {spread}.")
        highlights = [m.summary.concise for _, m in children][:12]
        if highlights:
            parts.append("Highlights: " + " ".join(collapse_text(h, 160) for h in highlights))
        return Summary(" ".join(parts), concise, child_ids)

    # -- serving -------------------------------------------------------------------------
    def parse_query(
        self, question: str, vocabulary: ScopeVocabulary, analysis: Analysis | None = None
    ) -> ParsedQuery:
        if analysis is not None:
            return parsed_query(analysis)
        return parse_question(question, vocabulary)

    def answer(self, context: RetrievedContext) -> Answer:
        return answer_extractively(context, self.schema)


def merge_child_facets(
    children: Sequence[tuple[NodeInfo, Memory]],
    total: int,
    hints: Hints,
    top: bool = True,
    count_key: str = DEFAULT_SCHEMA.leaf_count_key,
) -> list[Facet]:
    """Group equal values across children, sum their support and prune rare ones.

    At the top of the tree (``top``) a value survives when it is backed by at least two
    projects (one for nodes of fewer than five projects, or keys the adaptation hints
    emphasize), and each key keeps its :data:`MAX_VALUES_PER_KEY` most supported values.
    Intermediate nodes only cap each key at :data:`MAX_VALUES_PER_KEY_INTERMEDIATE` values, so
    the counts their parents sum stay exact.
    """
    support: dict[tuple[str, str], int] = Counter()
    forms: dict[tuple[str, str], Counter] = defaultdict(Counter)
    sources: dict[tuple[str, str], set[str]] = defaultdict(set)
    skipped = (count_key, "document_count", "document_kinds")
    for info, facets in one_key_per_attribute(children, skipped):
        for f in facets:
            ident = (f.key, same_value_key(f.key, f.value))
            support[ident] += f.support
            forms[ident][f.value] += f.support
            sources[ident].add(info.node_id)
    _join_equal_spellings(support, forms, sources)
    by_key: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for ident in support:
        by_key[ident[0]].append(ident)
    out: list[Facet] = []
    emphasized = set(hints.facet_names)
    for key in sorted(by_key, key=lambda k: key_rank(k, hints.facet_names)):
        idents = sorted(by_key[key], key=lambda i: (-support[i], i[1]))
        if top:
            min_support = 1 if total < 5 or key in emphasized else 2
            cap = MAX_VALUES_PER_KEY
        else:
            min_support, cap = 1, MAX_VALUES_PER_KEY_INTERMEDIATE
        kept = [i for i in idents if support[i] >= min_support][:cap]
        for ident in kept:
            # The commonest spelling; between equally common ones the fullest ("New York,
            # New York" over "New York"). A place by its fullest name ("Toronto, Canada"
            # over "Toronto, CA"): the same place, said in full, without a site of it
            # ("Rotterdam" over "Rotterdam - Maasstad Hospital").
            if key == "location":
                order = sorted(
                    forms[ident].items(),
                    key=lambda kv: (names_a_site(kv[0]), -len(kv[0]), -kv[1], kv[0]),
                )
            else:
                order = sorted(forms[ident].items(), key=lambda kv: (-kv[1], -len(kv[0]), kv[0]))
            display = order[0][0]
            if key == "location" and names_a_site(display):
                display = place_name(display)  # no one site stands for all
            out.append(Facet(key, display, support[ident], tuple(sorted(sources[ident]))))
    return out


def _join_equal_spellings(support: Counter, forms: dict, sources: dict) -> None:
    """Values grouped apart by :func:`same_value_key` that are spelled the same ("dublin
    ireland" and "Dublin, Ireland") are one value."""
    owner: dict[tuple[str, str], tuple[str, str]] = {}
    for ident in sorted(support, key=lambda i: (-support[i], i)):
        for form in forms[ident]:
            spelled = (ident[0], fold(form))
            home = owner.setdefault(spelled, ident)
            if home != ident and ident in support:
                support[home] += support.pop(ident)
                forms[home].update(forms.pop(ident))
                sources[home] |= sources.pop(ident)
                break


def one_key_per_attribute(
    children: Sequence[tuple[NodeInfo, Memory]], skipped: Sequence[str] = ()
) -> list[tuple[NodeInfo, list[Facet]]]:
    """Each child's facets with every key its siblings' values show to name a canonical key
    merged into that key (:func:`~hltm_resources.engines.aliases.value_aliases`: an export's
    ``toolkit`` whose values are the skills other projects state is ``skill``), values as the
    key writes them (list items, a title's seniority word apart). A child's own value of a
    one-value key stands over a merged one; a value one child holds under two keys counts
    once."""
    values: dict[str, set[str]] = defaultdict(set)
    for _, memory in children:
        for f in memory.facets:
            if f.key not in skipped:
                values[f.key].add(f.value)
    aliases = value_aliases({k: sorted(v) for k, v in values.items()})
    out = []
    for info, memory in children:
        native = {f.key for f in memory.facets}
        merged: dict[tuple[str, str], Facet] = {}
        for f in memory.facets:
            if f.key in skipped:
                continue
            key = aliases.get(f.key, f.key)
            if key != f.key and key in native and key in KEY_ORDER and key not in MULTI_KEYS:
                continue  # its own value of a one-value key stands
            for value in as_written(key, f.value) if key != f.key else [f.value]:
                if key != f.key and canonical_value(key, value) is None:
                    continue  # a merged key's value its key cannot hold ("no" is no reason)
                ident = (key, same_value_key(key, value))
                prev = merged.get(ident)
                if prev is None or prev.support < f.support:
                    merged[ident] = Facet(key, value, f.support, f.source_ids)
        out.append((info, list(merged.values())))
    return out


def _group(facets: Sequence[Facet]) -> dict[str, list[Facet]]:
    by_key: dict[str, list[Facet]] = defaultdict(list)
    for f in facets:
        by_key[f.key].append(f)
    return dict(by_key)


def _dedupe_qa(qa: list[QAPair]) -> list[QAPair]:
    seen: set[str] = set()
    out = []
    for pair in qa:
        if pair.question not in seen and pair.answer:
            seen.add(pair.question)
            out.append(pair)
    return out


def _is_prose(text: str) -> bool:
    """Not JSON, not a list of "Key: value" lines."""
    if text.startswith("{"):
        return False
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return not (len(lines) > 1 and sum(":" in ln[:45] for ln in lines) * 2 >= len(lines))


def _first_prose(docs: Sequence[Document]) -> list[str]:
    """Sentences of the documents that are prose (not JSON, not key-value lists)."""
    out: list[str] = []
    for doc in sorted(docs, key=lambda d: (d.kind != "brief", d.doc_id)):
        text = doc.text.strip()
        if not _is_prose(text):
            continue
        out.extend(sentences(text))
        if len(out) >= 3:
            break
    return out


__all__ = ["ExtractiveAgents", "EXTRACTIVE_VERSION", "KEY_ORDER", "distribution", "key_label"]
