"""The paper's basic baselines, in the same harness as HLTM, with the same embedder and the
same answer engine.

- flat RAG: documents cut into fixed-size chunks, embedded; the top-k chunks by cosine (inside
  the scope, or unscoped to show what leaks) are the context.
- full context: every document in the scope, in tree order, truncated to a token budget.
- schema filter: each document parsed into a (doc, key, value) table at ingest; filters parsed
  from the question; the documents matching every filter are the context.

With the offline engine the answer comes from an extractive *reader* over raw text: it parses
each context chunk with the engine's own document parser, parses the question with the
engine's own parser (vocabulary: the values found in the context), cites the projects whose
chunks state every value the question constrains, and for summary questions counts values per
project. With an LLM engine, the LLM answers from the rendered context.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from hltm_resources.config import Settings
from hltm_resources.embedding import Embedder
from hltm_resources.engines.base import Answer, ScopeVocabulary
from hltm_resources.engines.extractive.documents import document_facets
from hltm_resources.engines.extractive.questions import parse_question
from hltm_resources.engines.vocabulary import key_label
from hltm_resources.models import Document
from hltm_resources.stores import database
from hltm_resources.stores.sot import read_documents, read_topology
from hltm_resources.stores.vectors import VectorStore, subtree_filter
from hltm_resources.text import fold, join_human, plural_s
from hltm_resources.tokens import count_tokens

CHUNK_CHARS = 512
CHUNK_OVERLAP = 64
CONTEXT_BUDGET_TOKENS = 8000


@dataclass(frozen=True)
class Chunk:
    """A window of one document's text, with the leaf it hangs off (``node_id``, ``path``)."""

    chunk_id: str
    node_id: str
    path: str
    kind: str
    updated_at: str
    text: str

    def as_document(self) -> Document:
        leaf = self.node_id.split(":", 1)[1]
        return Document(self.chunk_id, leaf, self.kind, self.text, self.updated_at)


def chunk_text(text: str, size: int = CHUNK_CHARS, overlap: int = CHUNK_OVERLAP) -> list[str]:
    """Fixed-size character windows with overlap, cut at whitespace when possible."""
    if len(text) <= size:
        return [text]
    out, start = [], 0
    while start < len(text):
        end = min(len(text), start + size)
        if end < len(text):
            cut = text.rfind(" ", start + size // 2, end)
            end = cut if cut > start else end
        out.append(text[start:end].strip())
        if end >= len(text):
            break
        start = max(end - overlap, start + 1)
    return [c for c in out if c]


def load_chunks(settings: Settings) -> list[Chunk]:
    """Every document of the SOT, chunked, in tree (path) order."""
    with database.connect(settings.duckdb_path, read_only=True) as con:
        topology = read_topology(con, settings.schema)
        docs = read_documents(con, settings.schema, list(topology.leaves))
    chunks = []
    for leaf in topology.leaves.values():
        for doc in docs[leaf.raw_id]:
            for i, piece in enumerate(chunk_text(doc.text)):
                chunk = Chunk(
                    f"{doc.doc_id}#{i}", leaf.node_id, leaf.path, doc.kind, doc.updated_at, piece
                )
                chunks.append(chunk)
    return chunks


class ChunkIndex:
    """A LanceDB table of embedded chunks (for flat RAG), with paths for scoped search."""

    def __init__(self, settings, embedder: Embedder, rebuild: bool = False):
        self.embedder = embedder
        self.chunks = load_chunks(settings)
        self.by_id = {c.chunk_id: c for c in self.chunks}
        self.store = VectorStore(settings.home / "eval" / "lancedb", None, None)
        name = f"chunks_{embedder.model_id.replace('-', '_').replace('.', '_')}"
        if (
            rebuild
            or name not in self.store.db.table_names()
            or self.store.db.open_table(name).count_rows() != len(self.chunks)
        ):
            vecs = embedder.embed([c.text for c in self.chunks])
            table = pa.table(
                {
                    "chunk_id": [c.chunk_id for c in self.chunks],
                    "path": [c.path for c in self.chunks],
                    "vector": pa.FixedSizeListArray.from_arrays(
                        pa.array(np.ascontiguousarray(vecs).reshape(-1), pa.float32()), embedder.dim
                    ),
                }
            )
            self.table = self.store.db.create_table(name, data=table, mode="overwrite")
        else:
            self.table = self.store.db.open_table(name)

    def search(self, question: str, k: int, path: str | None) -> list[Chunk]:
        vec = self.embedder.embed([question])[0]
        query = self.table.search(vec, vector_column_name="vector").distance_type("cosine")
        if path is not None:
            query = query.where(subtree_filter(path), prefilter=True)
        hits = query.select(["chunk_id", "_distance"]).limit(k).to_arrow()
        return [self.by_id[c] for c in hits.column("chunk_id").to_pylist()]

    def in_scope(self, path: str) -> list[Chunk]:
        return [c for c in self.chunks if c.path == path or c.path.startswith(path + "/")]


def budgeted(chunks: Sequence[Chunk], budget: int = CONTEXT_BUDGET_TOKENS) -> list[Chunk]:
    """The longest prefix of ``chunks`` that fits in ``budget`` tokens."""
    out, used = [], 0
    for c in chunks:
        n = count_tokens(c.text)
        if used + n > budget:
            break
        out.append(c)
        used += n
    return out


def render_chunks(chunks: Sequence[Chunk]) -> str:
    return "\n\n".join(f"[{c.node_id} | {c.chunk_id}]\n{c.text}" for c in chunks)


def read_extractively(question: str, chunks: Sequence[Chunk]) -> Answer:
    """The offline answer engine over raw text chunks (see the module docstring)."""
    facets = {c.chunk_id: document_facets(c.as_document()) for c in chunks}
    vocab: dict[str, Counter] = defaultdict(Counter)
    for fs in facets.values():
        for f in fs:
            vocab[f.key][f.value] += 1
    parsed = parse_question(
        question, ScopeVocabulary({k: [v for v, _ in c.most_common()] for k, c in vocab.items()})
    )
    if parsed.unmatched:
        return Answer(
            "None in scope: nothing in the context matches " + "; ".join(parsed.unmatched) + ".",
            (),
            "unmatched constraint",
        )
    valued = [(m.key, fold(m.value)) for m in parsed.micro if m.value]
    if parsed.kind == "retrieval":
        if not valued:
            return Answer(
                "I could not tell which projects the question asks for.", (), "no constraint found"
            )
        cited: list[str] = []
        for c in chunks:
            have = {(f.key, fold(f.value)) for f in facets[c.chunk_id]}
            if all(v in have for v in valued) and c.node_id not in cited:
                cited.append(c.node_id)
        if not cited:
            return Answer("None of the projects in the context matches.", (), "no match")
        return Answer(
            f"{len(cited)} projects match: {join_human(cited)}.",
            tuple(cited),
            "chunks stating every constrained value",
        )
    targets = list(parsed.target_keys) or [m.key for m in parsed.micro if not m.value]
    for key in targets:
        per_project: dict[str, set[str]] = defaultdict(set)
        for c in chunks:
            for f in facets[c.chunk_id]:
                if f.key == key:
                    per_project[f.value].add(c.node_id)
        if per_project:
            projects = {c.node_id for c in chunks}
            ranked = sorted(per_project.items(), key=lambda kv: (-len(kv[1]), fold(kv[0])))[:5]
            shown = "; ".join(f"{v} ({len(p)} of {len(projects)})" for v, p in ranked)
            return Answer(
                f"Most common {key_label(key)} in the context "
                f"({plural_s(len(projects), 'project')}): {shown}.",
                tuple(sorted(ranked[0][1])),
                "counted per project over the context",
            )
    if chunks:
        return Answer(chunks[0].text[:300], (chunks[0].node_id,), "first context chunk")
    return Answer("Nothing in the context answers this.", (), "empty context")
