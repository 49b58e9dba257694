"""Every prompt of the LLM engine, in one place, plus how a retrieved context is rendered.

Templates start from the paper's appendix A (facets as a flat JSON object; QA pairs with
rationale and source; detailed then one-sentence summary; answers as JSON with rationale,
answer and a ranked citation list of node ids). ``PROMPT_VERSION`` is part of every cache key
and of the engine id, so editing a prompt rebuilds what it affects.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from hltm_resources.engines.base import RetrievedContext
from hltm_resources.models import Document, Memory, NodeInfo
from hltm_resources.schema import TreeSchema

PROMPT_VERSION = "p2"

FACETS_SYSTEM = """You are a helpful assistant specializing in extracting structured information \
from the input text data. Only retain key information; no need to include all details (e.g., \
detailed activities).

Return a JSON object with key "facets" and value as a flattened dictionary written as a list \
of key-value pairs, in which the key is the facet name and the value is the corresponding \
extracted facet value in string format; no nested information. Use short snake_case facet \
names; prefer these names when they apply: {preferred}. When one facet has several values \
(e.g. several skills), join them with "; ".
{{"facets": [{{"key": "<facet_name>", "value": "<facet_value>"}}, ...]}}"""

QA_SYSTEM = """Analyze text, produce 5-10 self-contained Q&A pairs covering only the most \
critical info, and include a rationale explaining the result.

Rules
- Q&A must be explicit (no pronouns/ambiguous refs), concise, and essential-only.
- Name the project ("{name}") in every question.
- "source" is the id of the document the answer comes from (one of: {doc_ids}).
{patterns}
Output (single JSON)
{{"rationale": "...", "question_answers": [{{"question": "...", "answer": "...", \
"source": "<doc_id>"}}, ...]}}"""

DETAILED_SYSTEM = """You are a helpful assistant. Summarize this input document to retain key \
information. Please include the document ID(s) in the output when provided.{emphasis}
Return JSON: {{"summary": "..."}}"""

CONCISE_SYSTEM = """You are a helpful assistant. You are provided with the following data, \
please generate a single-sentence summary of this data, only retain key information.
Return JSON: {{"summary": "..."}}"""

AGGREGATE_SYSTEM = """You build the memory of a {level} ("{name}") from the memories of its \
{n} children. (i) Group semantically similar evidence across children, (ii) merge redundant \
content and reconcile conflicts, (iii) prune low-salience details that rarely recur across \
children. Keep provenance: every item lists the child node ids it came from (only ids from the \
input). For facets, give each distinct value with "support" = how many of the {total} projects \
below this node have it.{emphasis}{patterns}
Return JSON: {{"facets": [{{"key": "...", "value": "...", "support": 1, "children": ["..."]}}], \
"question_answers": [{{"question": "...", "answer": "...", "children": ["..."]}}], \
"detailed_summary": "...", "summary": "<one sentence>"}}"""

PARSE_SYSTEM = """Parse the user's question into facet micro-queries: key-value pairs the \
question constrains or asks about. Use only these facet keys: {keys}. A value must be stated in \
the question; when the question asks about a key without a value, give the key with value null. \
Also say whether the question asks to list matching projects ("retrieval") or to summarize \
("summary").
Return JSON: {{"kind": "retrieval" | "summary", "facets": [{{"key": "...", "value": "..." | \
null}}]}}"""

ANSWER_SYSTEM = """You are a helpful assistant that generates an answer from a provided context.
Only use the context. Cite node ids exactly as they appear in the context ([node_id]). The \
context starts with what the question asks (its form, the attribute asked, the constraints) \
and the facts found for it, each with the node that holds it and its source documents. For a \
question about one fact, state the fact first, then the node id it comes from and the document \
id it is read from (e.g. "New York — project:p00003, from p00003-d0"), and cite that node; if \
no fact is found, say what was checked and that nothing states it. For a question asking which \
projects (or recruiters) match, cite every matching node listed and only those; for a count, \
give the number first; if none in the context matches, say so and cite nothing. Evidence \
passages are the documents' own words: prefer them to derived facets where they disagree, and \
the newest statement to older ones. Leaves listed as verified match every constraint of the \
question. Never state a value the context does not contain.

Output Format: a JSON object of this schema:
{"rationale": str, "answer": str, "citation": list[str]}"""

JUDGE_SYSTEM = """You judge an answer against a gold reference answer. Rely only on the gold \
reference. Check key constraints such as numbers and named entities. Score factual consistency \
with the reference from 0 (wrong) to 1 (fully consistent).
Return JSON: {"rationale": "...", "score": <number between 0 and 1>}"""


def render_documents(docs: Sequence[Document]) -> str:
    return "\n\n".join(f"[document {d.doc_id} | {d.kind} | {d.updated_at}]\n{d.text}" for d in docs)


def render_children(children: Sequence[tuple[NodeInfo, Memory]]) -> str:
    blocks = []
    for info, memory in children:
        facets = "; ".join(f"{f.key}: {f.value} (support {f.support})" for f in memory.facets)
        qa = " | ".join(f"Q: {q.question} A: {q.answer}" for q in memory.qa[:10])
        blocks.append(
            f"[child {info.node_id} | {info.name} | {memory.leaf_count} projects]\n"
            f"facets: {facets}\nqa: {qa}\nsummary: {memory.summary.detailed}"
        )
    return "\n\n".join(blocks)


def render_context(context: RetrievedContext, schema: TreeSchema) -> str:
    """The retrieved context as the answer agent reads it (node ids in brackets; facets of
    parents with their support): first what the question asks and the facts found for it
    (the same analysis and findings the extractive engine answers from), then each view."""
    lines = render_analysis(context)
    lines.append("## Facets (by node)")
    for node in context.facets:
        parent = not schema.is_leaf(node.level)
        facets = "; ".join(
            f"{f.key}: {f.value}" + (f" ({f.support} of {node.leaf_count})" if parent else "")
            for f in node.facets
        )
        lines.append(f"[{node.node_id}] {node.name} ({node.level}): {facets}")
    lines.append("## Answerable questions")
    for item in context.qa:
        lines.append(f"[{item.node_id}] Q: {item.text} A: {item.answer}")
    lines.append("## Summaries")
    for item in context.summaries:
        lines.append(f"[{item.node_id}] {item.detailed or item.text}")
    lines.append("## Evidence (passages of the documents, verbatim)")
    for item in context.evidence:
        date = f" ({item.date})" if item.date else ""
        lines.append(f"[{item.node_id} | {', '.join(item.source_ids)}{date}] {item.text}")
    if context.matches:
        lines.append("## Leaves verified against every stated constraint (by facet or document)")
        for m in context.matches:
            lines.append(f"[{m.node_id}] {m.name}: " + ", ".join(m.how))
    return "\n".join(lines)


def render_analysis(context: RetrievedContext) -> list[str]:
    """What the question asks and what was found for it, as lines of the context."""
    analysis = context.analysis
    if analysis is None:
        return []
    lines = ["## What the question asks (read against this scope's memory)"]
    lines += [f"{k}: {v}" for k, v in analysis.describe().items() if v not in (None, "", [])]
    if context.findings:
        lines.append("## Facts found for it (node, documents, the words that state it)")
        for f in context.findings:
            quote = f' "{f.quote}"' if f.quote else ""
            what = f"{f.key}: " if f.key else ""
            lines.append(f"[{f.node_id} | {', '.join(f.source_ids)}] {what}{f.value}{quote}")
    if context.mentioned:
        lines.append("## Values its documents mention (none recorded as the fact)")
        for f in context.mentioned:
            lines.append(f'[{f.node_id} | {", ".join(f.source_ids)}] {f.value} "{f.quote}"')
    if context.groups:
        lines.append("## Nodes holding matching leaves")
        for node, (name, leaves) in context.groups.items():
            lines.append(f"[{node}] {name}: {', '.join(leaves)}")
    if context.distributions:
        lines.append(f"## Counted over {context.leaves_counted} leaves")
        for key, spread in context.distributions.items():
            shown = "; ".join(f"{v} ({n} of {context.leaves_counted})" for v, n in spread[:8])
            lines.append(f"{key}: {shown}")
    return lines


def answer_user(question: str, context: str) -> str:
    return (
        f"Here is the query to be answered:\n<query>\n{question}\n</query>\n\n"
        f"Below is the context for answering the query:\n<context>\n{context}\n</context>"
    )


def dumps(obj: object) -> str:
    return json.dumps(obj, ensure_ascii=False, sort_keys=True)
