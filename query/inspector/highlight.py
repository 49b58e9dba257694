"""The sentences of a document that state a facet's value, to mark on its page.

Nothing is inferred: a sentence is marked only when its words contain the value as written
(or its head before a comma: "Lisbon" of "Lisbon, Portugal"), or a spelling the engine records
as that value (a city's name in another language, "Roma" for Rome; a workplace or seniority
word, "onsite" for on-site), and that mention is not negated ("not remote"). A JSON export is
cut at its members, so a mark covers ``"location": "Lisbon, Portugal"``, not the whole export.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hltm_resources.engines.aliases import variants
from hltm_resources.engines.negation import negated, tokenize
from hltm_resources.engines.vocabulary import canonical_value, same_value_key

#: Where prose sentences end (as the findings read them), and where JSON members start.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_JSON_MEMBER = re.compile(r"(?<=[{\[,])\s*(?=\")")
#: Longest spelling looked up in the engine's vocabularies, in words.
MAX_SPELLING_WORDS = 4
#: Keys whose values the engine knows other spellings of (places by their names in other
#: languages, workplace and seniority words), and those of them whose spellings are names
#: (only a capitalized phrase is taken for one).
SPELLED_KEYS = frozenset({"location", "workplace_type", "seniority"})
NAMED_KEYS = frozenset({"location"})


@dataclass(frozen=True)
class Piece:
    """A run of the document's text, marked when it states the value."""

    text: str
    marked: bool = False


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of the document's sentences, covering it whole: its lines, cut at
    sentence ends (prose) or before each member (a line of JSON)."""
    out: list[tuple[int, int]] = []
    pos = 0
    for line in text.splitlines(keepends=True):
        cuts = _JSON_MEMBER if line.lstrip().startswith(("{", "[")) else _SENTENCE_END
        start = 0
        for m in cuts.finditer(line):
            if m.end() > start:
                out.append((pos + start, pos + m.end()))
                start = m.end()
        if start < len(line):
            out.append((pos + start, pos + len(line)))
        pos += len(line)
    return out


def states(sentence: str, key: str, value: str) -> bool:
    """Whether ``sentence`` states ``key: value`` as written or in a recorded spelling, not
    negated."""
    tokens = tokenize(sentence)
    # A place is a name: "nice to have" does not name Nice, France.
    named = _capitalized(sentence) if key in NAMED_KEYS else None
    for seq in variants(value):
        n = len(seq)
        for i in range(len(tokens) - n + 1):
            if tokens[i : i + n] != seq or (named is not None and seq[0] not in named):
                continue
            if not negated(tokens, i, i + n):
                return True
    return _spelled(tokens, key, value, named)


def _capitalized(sentence: str) -> set[str]:
    """The words (folded) that ``sentence`` writes with a capital."""
    return {" ".join(tokenize(m.group(0))) for m in re.finditer(r"\b[A-ZÀ-Þ]\w*", sentence)}


def _spelled(tokens: list[str], key: str, value: str, named: set[str] | None) -> bool:
    """A run of up to :data:`MAX_SPELLING_WORDS` words the engine reads as ``value``, for
    the keys whose values it knows other spellings of."""
    if key not in SPELLED_KEYS:
        return False
    wanted = same_value_key(key, value)
    for n in range(1, MAX_SPELLING_WORDS + 1):
        for i in range(len(tokens) - n + 1):
            run = tokens[i : i + n]
            if any(not t.isalnum() for t in run):
                continue  # across a clause's end
            if named is not None and not named.issuperset(run):
                continue  # a place's name is written with capitals
            said = canonical_value(key, " ".join(run))
            if said and same_value_key(key, said) == wanted and not negated(tokens, i, i + n):
                return True
    return False


def marked(text: str, key: str, value: str) -> list[Piece]:
    """The document as pieces, each sentence that states ``key: value`` marked (its spaces
    around left unmarked); one unmarked piece when none does."""
    pieces: list[Piece] = []
    for start, end in sentence_spans(text):
        sentence = text[start:end]
        core = sentence.strip()
        if core and states(core, key, value):
            lead = sentence[: len(sentence) - len(sentence.lstrip())]
            trail = sentence[len(sentence.rstrip()) :]
            pieces += [Piece(lead), Piece(core, True), Piece(trail)]
        else:
            pieces.append(Piece(sentence))
    merged: list[Piece] = []
    for piece in pieces:  # plain runs joined: the page holds few elements
        if not piece.text:
            continue
        if merged and not piece.marked and not merged[-1].marked:
            merged[-1] = Piece(merged[-1].text + piece.text)
        else:
            merged.append(piece)
    return merged
