"""BM25 over the passages of one scope, with that scope's own statistics.

A scope whose evidence rows are held in memory (see :meth:`Retriever.rows`) is searched by
words here, not through LanceDB's full-text index. Three reasons:

- **The ranking depends on the scope's passages alone.** With the table-wide index, a
  passage's score inside one account also depended on every other account's text, and on how
  the table was written: two homes holding the same rows ranked them differently. Here a home
  built incrementally ranks as a rebuilt one.
- **It costs what the scope holds.** The table-wide index reads the full postings of every word
  of the question, however small the scope: 16 ms a question in a seat of 150 passages at
  100k leaves, against well under 1 ms here.
- **The index is made once per held scope** (about 30 ms per 1,000 passages, on the first
  question that reads words) and kept with its rows.

Scoring is Okapi BM25 (``K1``, ``B``) per field, the fields summed with their boosts (a
passage, and its context at :data:`CONTEXT_BOOST`), as LanceDB's multi-match query does. Words
are folded to lowercase ASCII, stop words dropped and the rest stemmed (Snowball, English).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import Stemmer

from hltm_resources.text import STOPWORDS, unaccented

K1 = 1.2
B = 0.75
#: Longer "words" (hashes, run-together text) are not indexed.
MAX_WORD_LENGTH = 40
_WORD = re.compile(r"[a-z0-9]+")
#: Every byte that is no word character becomes a space (words are what is left).
_SPACED = bytes(c if chr(c) in "abcdefghijklmnopqrstuvwxyz0123456789" else 32 for c in range(256))
_STEMMER = Stemmer.Stemmer("english")


def terms(text: str) -> list[str]:
    """The indexed terms of ``text``, in order (repeats kept)."""
    return [
        _stem(w)
        for w in _WORD.findall(_folded(text))
        if w not in STOPWORDS and len(w) <= MAX_WORD_LENGTH
    ]


def _folded(text: str | None) -> str:
    """``text`` lowercased with its accents dropped (only ASCII letters make words)."""
    return unaccented(text).lower() if text else ""


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    return _STEMMER.stemWord(word)


class _Field:
    """One text field of every passage: postings of its terms and the passages' lengths.

    Made in bulk, as :func:`terms` would make it word by word: the words are split by Arrow
    and counted by numpy, and only each distinct word is stemmed (15,000 passages with
    their contexts in about 100 ms, against 500 ms word by word)."""

    def __init__(self, texts: Sequence[str]):
        n = self.size = len(texts)
        spaced = [_folded(t).encode("ascii", "replace").translate(_SPACED) for t in texts]
        split = pc.ascii_split_whitespace(
            pa.array(spaced, pa.large_binary()).cast(pa.large_string())
        )
        doc = pc.list_parent_indices(split).to_numpy()
        words = pc.dictionary_encode(pc.list_flatten(split))
        self.term_id: dict[str, int] = {}
        word_term = np.fromiter(
            (
                self.term_id.setdefault(_stem(w), len(self.term_id))
                if w and w not in STOPWORDS and len(w) <= MAX_WORD_LENGTH
                else -1
                for w in words.dictionary.to_pylist()
            ),
            dtype=np.int64,
        )
        term = word_term[words.indices.to_numpy()] if len(doc) else np.empty(0, np.int64)
        kept = term >= 0
        doc, term = doc[kept].astype(np.int64), term[kept]
        self.lengths = np.bincount(doc, minlength=n)
        self.mean_length = float(self.lengths.sum() / n) if n else 0.0
        # Postings sorted by term, then passage: those of term t are starts[t]:starts[t + 1].
        pairs, self.tfs = np.unique(term * max(n, 1) + doc, return_counts=True)
        self.docs = pairs % max(n, 1)
        self.starts = np.searchsorted(pairs // max(n, 1), np.arange(len(self.term_id) + 1))

    def add_scores(self, query: Sequence[str], boost: float, scores: np.ndarray) -> None:
        n, mean = self.size, self.mean_length or 1.0
        for term in query:
            t = self.term_id.get(term)
            if t is None:
                continue
            lo, hi = self.starts[t], self.starts[t + 1]
            docs, tf = self.docs[lo:hi], self.tfs[lo:hi]
            df = int(hi - lo)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            norm = tf + K1 * (1 - B + B * self.lengths[docs] / mean)
            scores[docs] += boost * idf * tf * (K1 + 1) / norm


class PassageIndex:
    """BM25 over one scope's passages: ``ids`` name them, ``fields`` are (texts, boost)
    pairs with one text per passage (the passage's own text, its context). Neither scores
    nor ranks depend on the order the passages come in."""

    def __init__(self, ids: Sequence[str], fields: Sequence[tuple[Sequence[str], float]]):
        self.ids = list(ids)
        self.fields = [(_Field(texts), boost) for texts, boost in fields]
        # Equal scores are ranked by id.
        self._id_rank = np.empty(len(self.ids), dtype=np.int64)
        self._id_rank[np.argsort(np.asarray(self.ids, dtype=object), kind="stable")] = np.arange(
            len(self.ids)
        )

    def search(self, question: str, limit: int) -> list[str]:
        """Ids of the ``limit`` best passages for ``question`` (those with at least one of
        its terms), best first; equal scores by id."""
        query = list(dict.fromkeys(terms(question)))
        scores = np.zeros(len(self.ids))
        for field, boost in self.fields:
            field.add_scores(query, boost, scores)
        found = np.flatnonzero(scores > 0)  # every term found scores above 0
        order = found[np.lexsort((self._id_rank[found], -scores[found]))]
        return [self.ids[i] for i in order[:limit].tolist()]
