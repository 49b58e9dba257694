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
import unicodedata
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

import snowballstemmer

from hltm_resources.text import STOPWORDS

K1 = 1.2
B = 0.75
#: Longer "words" (hashes, run-together text) are not indexed.
MAX_WORD_LENGTH = 40
_WORD = re.compile(r"[a-z0-9]+")
_STEMMER = snowballstemmer.stemmer("english")


def terms(text: str) -> list[str]:
    """The indexed terms of ``text``, in order (repeats kept)."""
    if not text.isascii():
        text = "".join(
            c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)
        )
    return [
        _stem(w)
        for w in _WORD.findall(text.lower())
        if w not in STOPWORDS and len(w) <= MAX_WORD_LENGTH
    ]


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    return _STEMMER.stemWord(word)


class _Field:
    """One text field of every passage: postings of its terms and the passages' lengths."""

    def __init__(self, texts: Sequence[str]):
        self.size = len(texts)
        self.postings: dict[str, list[tuple[int, int]]] = {}
        lengths = []
        for i, text in enumerate(texts):
            counted = Counter(terms(text or ""))
            lengths.append(sum(counted.values()))
            for term, tf in counted.items():
                self.postings.setdefault(term, []).append((i, tf))
        self.lengths = lengths
        self.mean_length = (sum(lengths) / len(lengths)) if lengths else 0.0

    def add_scores(self, query: Sequence[str], boost: float, scores: dict[int, float]) -> None:
        n, mean = self.size, self.mean_length or 1.0
        for term in query:
            posting = self.postings.get(term)
            if not posting:
                continue
            idf = math.log(1 + (n - len(posting) + 0.5) / (len(posting) + 0.5))
            for i, tf in posting:
                norm = tf + K1 * (1 - B + B * self.lengths[i] / mean)
                scores[i] = scores.get(i, 0.0) + boost * idf * tf * (K1 + 1) / norm


class PassageIndex:
    """BM25 over one scope's passages: ``ids`` name them, ``fields`` are (texts, boost)
    pairs with one text per passage (the passage's own text, its context). Neither scores
    nor ranks depend on the order the passages come in."""

    def __init__(self, ids: Sequence[str], fields: Sequence[tuple[Sequence[str], float]]):
        self.ids = list(ids)
        self.fields = [(_Field(texts), boost) for texts, boost in fields]

    def search(self, question: str, limit: int) -> list[str]:
        """Ids of the ``limit`` best passages for ``question`` (those with at least one of
        its terms), best first; equal scores by id."""
        query = list(dict.fromkeys(terms(question)))
        scores: dict[int, float] = {}
        for field, boost in self.fields:
            field.add_scores(query, boost, scores)
        ids = self.ids
        return [ids[i] for i in sorted(scores, key=lambda i: (-scores[i], ids[i]))[:limit]]
