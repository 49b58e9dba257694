"""The paper's agents as prompts, through any OpenAI-compatible endpoint.

Replies are requested as JSON (schemas with enums for every id the model may cite, so a
constrained server can only produce valid provenance), validated with pydantic, and retried
with the validation error. Counts that aggregation reports ("9 of 12 projects") are recomputed
from the children the model cites, so they are data, not model arithmetic.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field

from hltm_resources.config import ConfigError, Settings
from hltm_resources.engines.base import (
    Analysis,
    Answer,
    Hints,
    MemoryAgents,
    MicroQuery,
    ParsedQuery,
    RetrievedContext,
    ScopeVocabulary,
    Usage,
)
from hltm_resources.engines.llm import prompts
from hltm_resources.engines.llm.client import LLMClient, server_context_tokens
from hltm_resources.engines.vocabulary import (
    KEY_ORDER,
    MULTI_KEYS,
    SKIP_KEY,
    canonical_key,
    canonical_value,
)
from hltm_resources.models import Document, Facet, Memory, NodeInfo, QAPair, Summary
from hltm_resources.schema import DEFAULT_SCHEMA, TreeSchema
from hltm_resources.text import collapse_text, fold
from hltm_resources.tokens import count_tokens

MAX_INPUT_TOKENS = 6000
MAX_REPLY_TOKENS = 6000
#: On a server with a small context a reply may take at most this share of it.
REPLY_SHARE = 0.5
#: Tokens of chat framing around the system prompt and the input (role markers, template).
FRAMING_TOKENS = 64
#: Fewer input tokens than this per call and the memory would be built from scraps: refuse.
MIN_INPUT_TOKENS = 512
#: The reply the check at start reserves (each call's is its schema's bound, cut to fit).
REPLY_FLOOR = 512
_SYSTEM_PROMPTS = (
    prompts.FACETS_SYSTEM,
    prompts.QA_SYSTEM,
    prompts.DETAILED_SYSTEM,
    prompts.CONCISE_SYSTEM,
    prompts.AGGREGATE_SYSTEM,
    prompts.PARSE_SYSTEM,
    prompts.ANSWER_SYSTEM,
)


class ContextTooSmallError(ConfigError):
    """The chat server's context cannot hold a prompt, a useful input and a reply."""


# -- reply models (validation) ----------------------------------------------------------------


class FacetKV(BaseModel):
    key: str = Field(min_length=1)
    value: str | int | float | bool | None = None


class FacetsOut(BaseModel):
    facets: list[FacetKV] = Field(default_factory=list)


class QAItem(BaseModel):
    question: str = Field(min_length=3)
    answer: str = Field(min_length=1)
    source: str


class QAOut(BaseModel):
    rationale: str = ""
    question_answers: list[QAItem] = Field(min_length=1)


class SummaryOut(BaseModel):
    summary: str = Field(min_length=1)


class AggFacet(BaseModel):
    key: str = Field(min_length=1)
    value: str = Field(min_length=1)
    support: int = 1
    children: list[str] = Field(default_factory=list)


class AggQA(BaseModel):
    question: str = Field(min_length=3)
    answer: str = Field(min_length=1)
    children: list[str] = Field(default_factory=list)


class AggOut(BaseModel):
    facets: list[AggFacet] = Field(default_factory=list)
    question_answers: list[AggQA] = Field(min_length=1)
    detailed_summary: str = Field(min_length=1)
    summary: str = Field(min_length=1)


class ParseItem(BaseModel):
    key: str
    value: str | None = None


class ParseOut(BaseModel):
    kind: Literal["retrieval", "summary"] = "summary"
    facets: list[ParseItem] = Field(default_factory=list)


class AnswerOut(BaseModel):
    rationale: str = ""
    answer: str = Field(min_length=1)
    citation: list[str] = Field(default_factory=list)


class JudgeOut(BaseModel):
    rationale: str = ""
    score: float = Field(ge=0.0, le=1.0)


# -- schemas sent to the server (inline, with enums) ------------------------------------------


# Every string and array is bounded: a small model under a grammar otherwise keeps generating
# inside an unbounded string until max_tokens, which cuts the JSON short.
def _s(max_len: int, min_len: int = 0) -> dict:
    out: dict = {"type": "string", "maxLength": max_len}
    if min_len:
        out["minLength"] = min_len
    return out


def _str_enum(values: Sequence[str]) -> dict:
    return {"type": "string", "enum": list(values)} if values else _s(120)


def _arr(items: dict, max_items: int, min_items: int = 0) -> dict:
    out = {"type": "array", "items": items, "maxItems": max_items}
    if min_items:
        out["minItems"] = min_items
    return out


def _obj(props: dict, required: Sequence[str]) -> dict:
    return {
        "type": "object",
        "properties": props,
        "required": list(required),
        "additionalProperties": False,
    }


def token_ceiling(schema: dict) -> int:
    """A worst-case token count of any JSON that ``schema`` admits (strings at their maximum
    length, at most one token per two characters, arrays full). ``max_tokens`` is set to it,
    so a bounded reply always completes, even from a model that repeats itself."""
    if "enum" in schema:
        return max(len(str(v)) for v in schema["enum"]) // 2 + 3
    if "anyOf" in schema:
        return max(token_ceiling(s) for s in schema["anyOf"])
    kind = schema.get("type")
    if kind == "string":
        return schema.get("maxLength", 2000) // 2 + 3
    if kind == "array":
        return schema.get("maxItems", 50) * (token_ceiling(schema["items"]) + 2) + 2
    if kind == "object":
        return (
            sum(len(k) // 2 + 6 + token_ceiling(v) for k, v in schema.get("properties", {}).items())
            + 4
        )
    return 12


FACETS_SCHEMA = _obj(
    {"facets": _arr(_obj({"key": _s(40, 1), "value": _s(100, 1)}, ["key", "value"]), 15)},
    ["facets"],
)
SUMMARY_SCHEMA = _obj({"summary": _s(900, 1)}, ["summary"])
CONCISE_SCHEMA = _obj({"summary": _s(250, 1)}, ["summary"])
JUDGE_SCHEMA = _obj(
    {"rationale": _s(300), "score": {"type": "number", "minimum": 0, "maximum": 1}},
    ["rationale", "score"],
)


def qa_schema(doc_ids: Sequence[str]) -> dict:
    item = _obj(
        {"question": _s(160, 3), "answer": _s(200, 1), "source": _str_enum(doc_ids)},
        ["question", "answer", "source"],
    )
    return _obj(
        {"rationale": _s(200), "question_answers": _arr(item, 8, 1)},
        ["rationale", "question_answers"],
    )


def aggregate_schema(child_ids: Sequence[str]) -> dict:
    kids = _arr(_str_enum(child_ids), max(1, min(len(child_ids), 12)))
    facet = _obj(
        {
            "key": _s(40, 1),
            "value": _s(100, 1),
            "support": {"type": "integer", "minimum": 1},
            "children": kids,
        },
        ["key", "value", "support", "children"],
    )
    qa = _obj(
        {"question": _s(160, 3), "answer": _s(240, 1), "children": kids},
        ["question", "answer", "children"],
    )
    return _obj(
        {
            "facets": _arr(facet, 12),
            "question_answers": _arr(qa, 5, 1),
            "detailed_summary": _s(900, 1),
            "summary": _s(250, 1),
        },
        ["facets", "question_answers", "detailed_summary", "summary"],
    )


def parse_schema(keys: Sequence[str]) -> dict:
    item = _obj(
        {"key": _str_enum(keys), "value": {"anyOf": [_s(120), {"type": "null"}]}}, ["key", "value"]
    )
    return _obj(
        {"kind": {"type": "string", "enum": ["retrieval", "summary"]}, "facets": _arr(item, 6)},
        ["kind", "facets"],
    )


def answer_schema(node_ids: Sequence[str]) -> dict:
    return _obj(
        {
            "rationale": _s(300),
            "answer": _s(600, 1),
            "citation": _arr(_str_enum(node_ids), max(1, min(len(node_ids), 60))),
        },
        ["rationale", "answer", "citation"],
    )


def _fit(text: str, budget: int) -> str:
    """``text`` cut (at a line) to ``budget`` tokens; the model sees what fits."""
    if count_tokens(text) <= budget:
        return text
    lines, out, used = text.splitlines(), [], 0
    for line in lines:
        n = count_tokens(line) + 1
        if used + n > budget:
            break
        out.append(line)
        used += n
    return "\n".join(out) + "\n[... truncated to fit the context budget]"


class OpenAIAgents(MemoryAgents):
    """Every memory agent as a prompt to an OpenAI-compatible chat model."""

    parallel = True

    def __init__(
        self,
        client: LLMClient,
        max_input_tokens: int = MAX_INPUT_TOKENS,
        schema: TreeSchema = DEFAULT_SCHEMA,
        context_tokens: int | None = None,
    ):
        super().__init__(schema)
        client.usage = self.usage
        self.client = client
        self.engine_id = f"openai:{client.model}:{prompts.PROMPT_VERSION}"
        self.max_input_tokens = max_input_tokens
        self.context_tokens = context_tokens
        if context_tokens is not None:
            # Refuse at once, not after the first leaf: the longest prompt with a modest reply.
            longest = max(_SYSTEM_PROMPTS, key=count_tokens)
            self._budgets("the longest prompt", longest, REPLY_FLOOR)

    @classmethod
    def from_settings(cls, settings: Settings) -> OpenAIAgents:
        return cls(
            LLMClient(settings, Usage()),
            settings.max_input_tokens,
            settings.schema,
            server_context_tokens(settings),
        )

    def _budgets(self, agent: str, system: str, reply: int) -> tuple[int, int]:
        """(input tokens, reply tokens) of one call: the configured input budget and the
        reply's bound, both cut to fit the server's context when it is known."""
        if self.context_tokens is None:
            return self.max_input_tokens, reply
        reply = min(reply, int(self.context_tokens * REPLY_SHARE))
        room = self.context_tokens - reply - count_tokens(system) - FRAMING_TOKENS
        if room < MIN_INPUT_TOKENS:
            raise ContextTooSmallError(
                f"the chat server serves {self.context_tokens} tokens of context per request; "
                f"{agent} and its reply leave {room} for the input, under {MIN_INPUT_TOKENS}: "
                "start the server with a larger context (llama.cpp --ctx-size, per slot; "
                "Ollama num_ctx) or, if it has one, set HLTM_LLM_CONTEXT to it"
            )
        return min(self.max_input_tokens, room), reply

    def _call(
        self,
        agent: str,
        system: str,
        user: str,
        model_cls,
        schema: dict,
        node_id: str | None,
        validate=None,
    ):
        self.usage.add(engine_calls=1)
        budget, reply = self._budgets(
            f"the {agent} prompt", system, min(token_ceiling(schema), MAX_REPLY_TOKENS)
        )
        return self.client.structured(
            agent,
            system,
            _fit(user, budget),
            model_cls,
            node_id=node_id,
            max_tokens=reply,
            validate=validate,
            schema=schema,
        )

    # -- leaves ------------------------------------------------------------------------------
    def extract_facets(self, node: NodeInfo, docs: Sequence[Document], hints: Hints) -> list[Facet]:
        preferred = ", ".join(dict.fromkeys([*hints.facet_names, *KEY_ORDER]))
        out = self._call(
            "facets",
            prompts.FACETS_SYSTEM.format(preferred=preferred),
            prompts.render_documents(docs),
            FacetsOut,
            FACETS_SCHEMA,
            node.node_id,
        )
        facets: dict[tuple[str, str], Facet] = {}
        all_ids = tuple(sorted(d.doc_id for d in docs))
        for item in out.facets:
            raw_key, raw_value = item.key, item.value
            if raw_value is None:
                continue
            key = canonical_key(raw_key)
            if SKIP_KEY.search(key) or not key:
                continue
            text = str(raw_value)
            parts = (
                [p for p in text.split(";") if p.strip()]
                if (key in MULTI_KEYS or ";" in text)
                else [text]
            )
            for part in parts:
                value = canonical_value(key, part)
                if value is None:
                    continue
                sources = tuple(sorted(d.doc_id for d in docs if fold(value) in fold(d.text)))
                facets.setdefault((key, fold(value)), Facet(key, value, 1, sources or all_ids))
        result = list(facets.values())
        if not result:
            result = [Facet("document_count", str(len(docs)), 1, all_ids)]
        return result

    def generate_qa(
        self, node: NodeInfo, docs: Sequence[Document], facets: Sequence[Facet], hints: Hints
    ) -> list[QAPair]:
        doc_ids = sorted(d.doc_id for d in docs) or ["none"]
        patterns = ""
        if hints.patterns:
            patterns = (
                "- Where the data answers them, include questions of these recurring "
                "patterns (fill <slots> from the data): " + "; ".join(hints.patterns) + "\n"
            )
        system = prompts.QA_SYSTEM.format(
            name=node.name, doc_ids=", ".join(doc_ids), patterns=patterns
        )

        def check(out: QAOut) -> None:
            bad = [q.source for q in out.question_answers if q.source not in doc_ids]
            if bad:
                raise ValueError(f"source must be one of {doc_ids}, got {bad}")

        out = self._call(
            "qa",
            system,
            prompts.render_documents(docs),
            QAOut,
            qa_schema(doc_ids),
            node.node_id,
            validate=check,
        )
        seen: set[str] = set()
        pairs = []
        for q in out.question_answers[:10]:
            if q.question not in seen:
                seen.add(q.question)
                pairs.append(QAPair(q.question.strip(), q.answer.strip(), (q.source,)))
        return pairs

    def summarize(
        self, node: NodeInfo, docs: Sequence[Document], facets: Sequence[Facet], hints: Hints
    ) -> Summary:
        emphasis = ""
        if hints.facet_names:
            emphasis = " Make sure to cover: " + ", ".join(hints.facet_names) + "."
        detailed = self._call(
            "summary_detailed",
            prompts.DETAILED_SYSTEM.format(emphasis=emphasis),
            prompts.render_documents(docs),
            SummaryOut,
            SUMMARY_SCHEMA,
            node.node_id,
        ).summary.strip()
        concise = self._call(
            "summary_concise",
            prompts.CONCISE_SYSTEM,
            detailed,
            SummaryOut,
            CONCISE_SCHEMA,
            node.node_id,
        ).summary.strip()
        return Summary(detailed, collapse_text(concise, 400), tuple(sorted(d.doc_id for d in docs)))

    # -- parents -----------------------------------------------------------------------------
    def aggregate(
        self, node: NodeInfo, children: Sequence[tuple[NodeInfo, Memory]], hints: Hints
    ) -> Memory:
        children = sorted(children, key=lambda c: c[0].node_id)
        total = sum(m.leaf_count for _, m in children)
        child_ids = [info.node_id for info, _ in children]
        if not children:
            self.usage.add(engine_calls=1)
            leaves = self.schema.leaf.nouns
            text = f"{node.name} ({node.node_id}) has no {leaves} yet."
            return Memory(
                node.node_id,
                node.level,
                (Facet(self.schema.leaf_count_key, "0", 0, ()),),
                (QAPair(f"How many {leaves} does {node.name} have?", "0", ()),),
                Summary(text, f"{node.name}: no {leaves} yet.", ()),
                0,
            )
        emphasis = (
            " Emphasize these facets: " + ", ".join(hints.facet_names) + "."
            if hints.facet_names
            else ""
        )
        patterns = (
            " Include answerable questions for these recurring patterns where the "
            "children's data answers them: " + "; ".join(hints.patterns) + "."
            if hints.patterns
            else ""
        )
        system = prompts.AGGREGATE_SYSTEM.format(
            level=node.level,
            name=node.name,
            n=len(children),
            total=total,
            emphasis=emphasis,
            patterns=patterns,
        )

        def check(out: AggOut) -> None:
            cited = {c for f in out.facets for c in f.children}
            cited |= {c for q in out.question_answers for c in q.children}
            bad = sorted(cited - set(child_ids))
            if bad:
                raise ValueError(f"children must be among {child_ids}, got {bad}")

        out = self._call(
            "aggregate",
            system,
            prompts.render_children(children),
            AggOut,
            aggregate_schema(child_ids),
            node.node_id,
            validate=check,
        )
        memories = dict((info.node_id, m) for info, m in children)
        facets: dict[tuple[str, str], Facet] = {}
        for f in out.facets:
            key = canonical_key(f.key)
            value = canonical_value(key, f.value)
            if value is None or SKIP_KEY.search(key):
                continue
            listed = sorted(set(f.children)) or child_ids
            support = sum(_child_support(memories[c], key, value) for c in listed)
            ident = (key, fold(value))
            if ident in facets:
                prev = facets[ident]
                listed = sorted(set(prev.source_ids) | set(listed))
                support = sum(_child_support(memories[c], key, value) for c in listed)
            facets[ident] = Facet(key, value, support, tuple(listed))
        facet_list = sorted(facets.values(), key=lambda f: (f.key, -f.support, fold(f.value)))
        facet_list.append(Facet(self.schema.leaf_count_key, str(total), total, tuple(child_ids)))
        qa = [
            QAPair(
                q.question.strip(),
                q.answer.strip(),
                tuple(sorted(set(q.children))) or tuple(child_ids),
            )
            for q in out.question_answers[:10]
        ]
        summary = Summary(
            out.detailed_summary.strip(), collapse_text(out.summary.strip(), 400), tuple(child_ids)
        )
        return Memory(node.node_id, node.level, tuple(facet_list), tuple(qa), summary, total)

    # -- serving -----------------------------------------------------------------------------
    def parse_query(
        self, question: str, vocabulary: ScopeVocabulary, analysis: Analysis | None = None
    ) -> ParsedQuery:
        keys = [k for k in vocabulary.keys if k not in vocabulary.count_keys]
        out = self._call(
            "parse_query",
            prompts.PARSE_SYSTEM.format(keys=", ".join(keys) or "(none)"),
            question,
            ParseOut,
            parse_schema(keys),
            None,
        )
        micro = []
        for item in out.facets:
            key = canonical_key(item.key)
            if keys and key not in keys:
                continue
            value = item.value.strip() if item.value and item.value.strip() else None
            micro.append(MicroQuery(key, value))
        micro = list(dict.fromkeys(micro))
        targets = tuple(m.key for m in micro if m.value is None)
        return ParsedQuery(out.kind, tuple(micro), targets, ())

    def answer(self, context: RetrievedContext) -> Answer:
        return self.answer_raw(
            context.question,
            prompts.render_context(context, self.schema),
            sorted(context.node_ids()),
        )

    def answer_raw(self, question: str, context_text: str, node_ids: Sequence[str]) -> Answer:
        """Answer from an already rendered context (also used by the baselines)."""
        allowed = list(dict.fromkeys(node_ids))

        def check(out: AnswerOut) -> None:
            bad = [c for c in out.citation if c not in allowed]
            if bad:
                raise ValueError(f"citations must be node ids from the context, got {bad}")

        out = self._call(
            "answer",
            prompts.ANSWER_SYSTEM,
            prompts.answer_user(question, context_text),
            AnswerOut,
            answer_schema(allowed),
            None,
            validate=check,
        )
        return Answer(out.answer.strip(), tuple(dict.fromkeys(out.citation)), out.rationale)

    def judge(self, question: str, answer: str, gold: str) -> float:
        """LLM-as-judge correctness in [0, 1] against the gold answer only."""
        user = f"Question: {question}\nGold reference answer: {gold}\nAnswer to judge: {answer}"
        out = self._call("judge", prompts.JUDGE_SYSTEM, user, JudgeOut, JUDGE_SCHEMA, None)
        return float(out.score)


def _child_support(memory: Memory, key: str, value: str) -> int:
    """How many projects under a child carry ``key: value`` (1 if the child states it only in
    prose the model read)."""
    for f in memory.facets:
        if f.key == key and fold(f.value) == fold(value):
            return f.support
    return 1
