"""Leaf evidence: every document of a leaf, kept verbatim as passages.

Facets, QA pairs and summaries are what an engine *recognized* in the documents; a value
stated in a way it did not recognize would otherwise be unreachable. Passages are built the
same way whatever the engine: documents in natural id order (``D1:2`` before ``D1:10``), each
cut into units (a conversation turn, a sentence, a ``key: value`` line) packed into passages
of about :data:`PASSAGE_CHARS`. Each passage also carries its context (itself with the passage
before and after it in the leaf), full-text indexed beside it and searched by meaning through
a context vector made of the neighbouring passages' vectors: a turn that says "yes, that one"
is found by what the turns around it say.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence

from hltm_resources.engines.extractive.exports import labelled_pair, markup_text, xml_tree
from hltm_resources.models import Document, Passage
from hltm_resources.text import collapse_ws, sentences

#: Bump when passages are cut differently: it is part of every leaf's input hash.
EVIDENCE_VERSION = 6
PASSAGE_CHARS = 320
#: How much of each neighbour a passage's context carries.
NEIGHBOUR_CHARS = 300
_DIGITS = re.compile(r"(\d+)")
_KV = re.compile(
    r"^\s*[-*\u2022]?\s*[^\W\d_][\w /().&'\u00ba-]{0,40}(?:\s*[:=]|\s+[\u2013\u2014])\s*\S"
)


def natural_key(doc_id: str) -> list:
    """``D1:2`` before ``D1:10``: digit runs compare as numbers."""
    return [int(part) if part.isdigit() else part for part in _DIGITS.split(doc_id)]


def _flatten(obj: object, prefix: str = "") -> Iterable[str]:
    if isinstance(obj, dict) and (pair := labelled_pair(obj)) is not None:
        yield f"{pair[0]}: {pair[1]}"  # {"label": "Job title", "value": "..."} as a person reads it
    elif isinstance(obj, dict):
        for key, value in obj.items():
            yield from _flatten(value, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(obj, list):
        if all(not isinstance(v, dict | list) for v in obj):
            yield f"{prefix}: {', '.join(str(v) for v in obj if v is not None)}"
        else:
            for value in obj:
                yield from _flatten(value, prefix)
    elif obj is not None:
        yield f"{prefix}: {obj}"


def units(text: str) -> list[str]:
    """The smallest spans of a document a passage is made of: ``key: value`` lines of an
    export (JSON or text), else sentences."""
    text = text.strip()
    if text.startswith("{"):
        try:
            return [collapse_ws(line) for line in _flatten(json.loads(text)) if line.strip()]
        except (ValueError, RecursionError):
            pass
    if (tree := xml_tree(text)) is not None:  # XML read as the fields it holds
        return [collapse_ws(line) for line in _flatten(tree) if line.strip()]
    text = markup_text(text)  # HTML as the lines a person reads
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) > 1 and sum(bool(_KV.match(ln)) for ln in lines) * 2 >= len(lines):
        return [collapse_ws(ln) for ln in lines]
    return sentences(text)


def _join(pieces: Iterable[str], limit: int) -> list[str]:
    """Consecutive pieces joined with spaces into strings of about ``limit`` characters."""
    out: list[str] = []
    current = ""
    for piece in pieces:
        if current and len(current) + 1 + len(piece) > limit:
            out.append(current)
            current = piece
        else:
            current = f"{current} {piece}" if current else piece
    return out + ([current] if current else [])


def pack(spans: Sequence[str], limit: int = PASSAGE_CHARS) -> list[str]:
    """Consecutive spans joined into passages of about ``limit`` characters; a span longer
    than twice the limit is first cut at word boundaries."""
    pieces = (
        piece
        for span in spans
        for piece in ([span] if len(span) <= 2 * limit else _join(span.split(), limit))
    )
    return _join(pieces, limit)


def leaf_passages(docs: Sequence[Document]) -> tuple[Passage, ...]:
    """Every document of a leaf as passages, in document order, each with its context."""
    cut: list[tuple[Document, int, str]] = []
    for doc in sorted(docs, key=lambda d: natural_key(d.doc_id)):
        for i, text in enumerate(pack(units(doc.text))):
            cut.append((doc, i, text))
    out = []
    for n, (doc, i, text) in enumerate(cut):
        before = _tail(cut[n - 1][2]) if n > 0 else ""
        after = _head(cut[n + 1][2]) if n + 1 < len(cut) else ""
        context = " ".join(part for part in (before, text, after) if part)
        passage = Passage(f"{doc.doc_id}#{i}", doc.doc_id, text, context, doc.updated_at, doc.kind)
        out.append(passage)
    return tuple(out)


def _head(text: str, limit: int = NEIGHBOUR_CHARS) -> str:
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0]


def _tail(text: str, limit: int = NEIGHBOUR_CHARS) -> str:
    return text if len(text) <= limit else text[-limit:].split(" ", 1)[-1]
