"""Text helpers shared by the extractive engine, the query parser and the evaluation."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache

_WS = re.compile(r"\s+")
_WORD = re.compile(r"[a-z0-9]+(?:[+#][a-z0-9+#]*)?|[+#]+")
_SENT_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")

STOPWORDS = frozenset(
    """a an the and or of in on at to for with by from as is are was were be been being this that
    these those it its our we us my your their his her they them i you he she what which who whom
    whose where when why how do does did done have has had any all some most more much many
    often usually typically common commonly about into over under than then so such not no
    can could should would will shall may might must there here""".split()
)


def collapse_ws(text: str) -> str:
    """Collapse runs of whitespace and strip."""
    return _WS.sub(" ", text).strip()


def unaccented(text: str) -> str:
    """``text`` with its accents stripped ("Zürich" -> "Zurich"), and the letters that carry
    theirs in their shape written plain ("złoty" -> "zloty", "Sørensen" -> "Sorensen")."""
    if text.isascii():  # ASCII has no accents to strip (and normalizes to itself)
        return text
    text = text.translate(_PLAIN_LETTERS)
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


#: Letters NFKD does not decompose into a base letter and an accent.
_PLAIN_LETTERS = str.maketrans(
    {"ł": "l", "Ł": "L", "ø": "o", "Ø": "O", "đ": "d", "Đ": "D", "ħ": "h", "ı": "i"}
    | {"æ": "ae", "Æ": "Ae", "œ": "oe", "Œ": "Oe", "ß": "ss", "þ": "th", "Þ": "Th", "ð": "d"}
)


@lru_cache(maxsize=200_000)
def fold(text: str) -> str:
    """Lowercase, strip accents and punctuation: the comparison form of a value."""
    return " ".join(_WORD.findall(unaccented(text).lower()))


def tokens(text: str) -> list[str]:
    """Folded word tokens."""
    return fold(text).split()


def content_tokens(text: str) -> list[str]:
    """Folded tokens without stopwords."""
    return [t for t in tokens(text) if t not in STOPWORDS]


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def snake_key(raw: str) -> str:
    """Normalize a facet key to ``snake_case`` ASCII (``workplaceType`` -> ``workplace_type``)."""
    raw = re.sub(r"\(s\)", "s", raw.replace("&", " and "), flags=re.I)  # "Work Location(s)"
    key = fold(_CAMEL.sub(" ", raw))
    return key.replace(" ", "_")[:64]


def sentences(text: str) -> list[str]:
    """Split prose into sentences (a simple, deterministic splitter)."""
    out: list[str] = []
    for block in re.split(r"\n\s*\n|\n(?=\s*[-*\u2022])", text):
        block = collapse_ws(block)
        if block:
            out.extend(s.strip() for s in _SENT_SPLIT.split(block) if s.strip())
    return out


_BOX = re.compile(r"\[[ xX\u2713\u2714]\]|[\u2610\u2611\u2612]")
_TICKED = re.compile(r"(?:\[[xX\u2713\u2714]\]|[\u2611\u2612])\s*([^\[\u2610\u2611\u2612]+)")


def clean_value(value: str, max_len: int = 120) -> str:
    """Strip quotes, whitespace and trailing punctuation from an extracted value; of a
    form's check boxes ("[ ] Yes [x] No"), the options ticked."""
    if _BOX.search(value):
        value = "; ".join(m.strip() for m in _TICKED.findall(value))
    value = collapse_ws(value).strip(" \"'`")
    value = re.sub(r"[\s.;:,!]+$", "", value)
    if len(value) > max_len:
        cut = value[:max_len].rsplit(" ", 1)[0]
        value = cut + "..."
    return value


_LIST_SPLIT = re.compile(r"\s*(?:[,;|](?:\s*(?:and|or)\s)?|\s(?:and|or|&|/)\s)\s*", re.I)
_ASIDE = re.compile(r"\s*\([^()]*\)")


def without_asides(value: str, sep: str = "") -> str:
    """``value`` without its parenthesized asides ("Berlin (Kreuzberg)" -> "Berlin"), each
    replaced by ``sep``."""
    return _ASIDE.sub(sep, value)


def split_list(value: str, max_words: int = 6) -> list[str]:
    """Items of a list written as text (``a, b and c``; ``a; b``, ``a, and b``), each at most
    ``max_words`` words (longer pieces are prose, not items). A parenthesis is part of its
    item ("Spark (PySpark is fine, Scala not needed)" is one item); an item too long with it
    is its words before it ("Spark")."""
    parts: list[str] = []
    for piece in _split_outside_parentheses(value):
        part = clean_value(piece)
        if len(part.split()) > max_words:
            part = clean_value(without_asides(part))
        if part and len(part.split()) <= max_words:
            parts.append(part)
    return parts


def _split_outside_parentheses(value: str) -> list[str]:
    pieces, start = [], 0
    for m in _LIST_SPLIT.finditer(value):
        if value.count("(", 0, m.start()) > value.count(")", 0, m.start()):
            continue  # a separator inside a parenthesis
        pieces.append(value[start : m.start()])
        start = m.end()
    pieces.append(value[start:])
    return pieces


def join_human(items: Iterable[str], conj: str = "and") -> str:
    """``a, b and c``."""
    items = list(items)
    if not items:
        return ""
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + f" {conj} " + items[-1]


def humanize_key(key: str) -> str:
    """``rejection_reason`` -> ``rejection reason``."""
    return key.replace("_", " ").strip()


def pluralize(word: str) -> str:
    """A naive English plural, good enough for facet labels."""
    if word.endswith(("s", "x", "ch", "sh")):
        return word + "es"
    if word.endswith("y") and len(word) > 1 and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


_VOWEL_LETTER_ACRONYM = set("AEFHILMNORSX")


def article(phrase: str) -> str:
    """``a`` or ``an`` for ``phrase`` (acronyms by their first letter's sound)."""
    word = phrase.split()[0] if phrase.split() else ""
    if len(word) > 1 and word.isupper():
        return "an" if word[0] in _VOWEL_LETTER_ACRONYM else "a"
    return "an" if word[:1].lower() in "aeiou" else "a"


def plural_s(n: int, word: str) -> str:
    """``1 project``, ``2 projects``."""
    return f"{n} {word if n == 1 else pluralize(word)}"


_SMALL_WORDS = {"of", "and", "or", "the", "a", "an", "in", "for", "to", "at", "on"}


def title_case(value: str) -> str:
    """Title-case an all-lowercase phrase, keeping small words and acronyms as they are."""
    if not value.islower():
        return value
    words = value.split()
    return " ".join(
        w if (i and w in _SMALL_WORDS) else w[:1].upper() + w[1:] for i, w in enumerate(words)
    )


def collapse_text(text: str, limit: int) -> str:
    """Whitespace-collapsed text cut at a word boundary."""
    text = collapse_ws(text)
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + "..."


def near_word(a: str, b: str) -> bool:
    """Equal, or (for words of five letters or more) one edit apart, a swap counting as one."""
    if a == b:
        return True
    la, lb = len(a), len(b)
    if la < 5 or lb < 5 or la - lb > 1 or lb - la > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        swap = (
            len(diff) == 2
            and diff[1] == diff[0] + 1
            and a[diff[0]] == b[diff[1]]
            and a[diff[1]] == b[diff[0]]
        )
        return len(diff) == 1 or swap
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    return any(long_[:i] + long_[i + 1 :] == short for i in range(len(long_)))


def near_spelling(a: str, b: str) -> bool:
    """Two values that differ by a typo: as many words, each :func:`near_word` its peer."""
    wa, wb = fold(a).split(), fold(b).split()
    return len(wa) == len(wb) and all(near_word(x, y) for x, y in zip(wa, wb, strict=True))


#: Numbers written as words, as notes and answers write small ones.
NUMBER_WORDS = {
    "one": 1,
    "single": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}


def number_pattern(words: Iterable[str]) -> re.Pattern[str]:
    """A number in digits or as one of ``words`` (a whole word, any case); digits that end an
    identifier ("TF-R-0427", "v2") are none."""
    return re.compile(r"(?<![\w-])(\d+|" + "|".join(re.escape(w) for w in words) + r")\b", re.I)
