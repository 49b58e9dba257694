"""Reading a structured export (JSON, XML, HTML, "Key: value" lines, a table, a CSV or
fixed-width record) into attributes.

Every ATS names its fields its own way, so a field's attribute is read from three things, in
this order:

1. **Its name.** A known name (:data:`~hltm_resources.engines.vocabulary.KEY_ALIASES`) that is
   the field's name, or the head of its flattened path: the path without its generic parts
   (``name``, ``label``, ``value``, ``tags``, ...), read from its last word back.
   ``job.role_name`` is a ``title`` (its head is ``role``), ``job.techStack[].name`` a
   ``skill`` (``tech_stack``), ``data.attributes.skillTags[].label`` a ``skill``; but
   ``hiringTeam[].member`` is not a ``department``: ``team`` is not its head.
2. **Its shape.** The fields of one object that are the parts of a place (a city, its region,
   its country) are one location: ``offices: [{name: New York, region: New York, country:
   United States}]`` and ``hiringCity`` + ``hiringState`` + ``hiringCountry`` are both
   "New York, New York".
3. **Its values.** A field no name explains is a ``seniority`` when every value is a seniority
   word, a ``workplace_type`` when every value describes where people work (``Work from
   home``, ``Office-based``), a ``title`` when every value ends with a word for an occupation.

What none of them explains keeps its own name; the leaf then asks its other documents
(:func:`agreeing_key`), and parents ask their other children (value overlap,
:mod:`~hltm_resources.engines.aliases`).
"""

from __future__ import annotations

import csv
import json
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from html.parser import HTMLParser
from xml.etree import ElementTree

from hltm_resources.engines.vocabulary import (
    CURRENCIES,
    FEEDBACK_KEYS,
    FLAG_WORDS,
    KEY_ALIASES,
    MULTI_KEYS,
    REASON_CHARS,
    SENIORITY_WORDS,
    SKIP_KEY,
    WORKPLACE_WORDS,
    YES_NO_KEYS,
    canonical_value,
    currency_of,
    is_title,
    unabbreviated,
    workplace_of,
)
from hltm_resources.text import clean_value, fold, snake_key, split_list

#: Parts of a flattened path that say how a value is stored, not what it is.
GENERIC_PARTS = frozenset(
    "name names value values label labels text tag tags list items item entries entry data "
    "attributes attribute fields field info details kind mode full display raw "
    # a unit a value is stated in ("salary_eur")
    "eur usd gbp cad aud chf pln sek nok dkk "
    # a type an export marks its field with ("reqTitle_txt", "numOpenings_int", "visa_flag")
    "txt str int flag cd bool yn ok".split()
)
#: The parts of a place in field names: a locality, its region, its country.
PLACE_PARTS: dict[str, str] = {
    "city": "city",
    "town": "city",
    "municipality": "city",
    "locality": "city",
    "region": "region",
    "state": "region",
    "province": "region",
    "subdivision": "region",
    "county": "region",
    "country": "country",
    "nation": "country",
    # a site of the city, said beside it: part of the place, not of the location's name
    "building": "site",
    "facility": "site",
    "campus": "site",
    "premises": "site",
    "street": "site",
    "address": "site",
    "site": "site",
}
#: Marks a value that was one item of a JSON array: it is never split again.
ITEM = "\x00"


@dataclass(frozen=True)
class ExportField:
    """One value of a structured document: the field's raw key (its flattened path), the
    attribute it states (a canonical key, or None when nothing says), and whether it was
    one item of a list."""

    raw_key: str
    key: str | None
    value: str
    listed: bool = False
    #: How ``key`` was read: "name", "place" or "value" (None when it was not).
    by: str | None = None


def read_export(text: str) -> tuple[list[ExportField], bool]:
    """The fields of a JSON (object or array) or text export (:func:`text_fields`), and
    whether it is structured (JSON, or at least two lines and half of them fields, and not a
    chat)."""
    text = text.strip()
    if text.startswith(("{", "[")):
        try:
            obj = json.loads(text)
        except (json.JSONDecodeError, ValueError, RecursionError):
            obj = None  # "[09:14] Marloes: ..." is a chat, not JSON
        if isinstance(obj, dict) or (isinstance(obj, list) and obj):
            return _typed(list(_json_fields(obj, ()))), True
    if (tree := xml_tree(text)) is not None:
        return _typed(list(_json_fields(tree, ()))), True
    lines = [ln for ln in markup_text(without_quoted(text)).splitlines() if ln.strip()]
    pairs, used = text_fields(lines)
    ranges = _ranges(dict(pairs), ())  # "salary_min=...", "salary_max=...": one range
    used_parts = {part for _, _, parts in ranges for part in parts}
    pairs = [
        (k, v) for k, v in pairs if k not in used_parts or snake_key(k).split("_")[-1] in _UNIT
    ]
    pairs += [("_".join(k), v) for k, v, _ in ranges]
    pairs = [(k, _inline_range(k, v)) for k, v in pairs]
    structured = len(pairs) >= 2 and len(used) * 2 >= len(lines) and not _is_chat(pairs)
    fields = [_named(snake_key(k), field_key((snake_key(k),)), v) for k, v in pairs]
    return _typed(fields), structured


def xml_tree(text: str) -> dict | None:
    """An XML document as the JSON object it stands for (elements by tag, repeated ones as
    a list, attributes beside children, an element's text with attributes under ``value``),
    or None when the text is no XML (HTML is read as text: :func:`markup_text`)."""
    if not text.startswith("<") or re.match(
        r"<(?:!doctype\s+)?html\b|<(?:body|table|dl|h\d|p|div)\b", text, re.I
    ):
        return None
    if re.search(r"<!(?:DOCTYPE|ENTITY)", text, re.I):
        return None  # declarations can expand without bound: such a file is read as text
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError:
        return None
    return {root.tag: _xml_value(root)}


def _xml_value(element: ElementTree.Element) -> object:
    text = (element.text or "").strip()
    children = list(element)
    if not children and not element.attrib:
        return text
    own = field_key((snake_key(element.tag),)) if text else None
    # An attribute naming what its element's text names is a code of it: <grade
    # band="P3">Senior</grade> is Senior (a place's parts are parts: <site city="Leeds">).
    # An element named by a field's name is that field, unless its label names another:
    # <location type="remote">United States</location> is a location (of a remote role),
    # <skill type="preferred">Python</skill> a preferred skill.
    out: dict[str, object] = {
        (f"{element.tag}_{k}" if own and _qualifies(k, v) else k): v
        for k, v in element.attrib.items()
        if own is None or snake_key(k) in PLACE_PARTS or field_key((snake_key(k),)) != own
    }
    for child in children:
        value = _xml_value(child)
        if child.tag in out:
            held = out[child.tag]
            out[child.tag] = [*held, value] if isinstance(held, list) else [held, value]
        else:
            out[child.tag] = value
    if text:
        out["value"] = text
    return out


def _qualifies(attribute: str, value: str) -> bool:
    """Whether an attribute labelling an element says something of its value rather than
    naming the field it is (``type="remote"``, not ``type="preferred"``)."""
    if snake_key(attribute) not in LABEL_FIELDS:
        return False
    word = fold(value)
    return (
        field_key((snake_key(value),)) is None
        or word in WORKPLACE_WORDS
        or (word in SENIORITY_WORDS)
    )


class _Lines(HTMLParser):
    """HTML as lines of text: a row of two cells and a definition as "name: value", a wider
    row as "| a | b | c |"."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lines: list[str] = []
        self.cells: list[str] | None = None
        self.term: str | None = None
        self.buffer: list[str] = []

    def flush(self) -> str:
        text = " ".join("".join(self.buffer).split())
        self.buffer = []
        return text

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "tr":
            self.cells = []
        if tag in ("tr", "dt") or tag in _BLOCKS:
            self.lines.append(self.flush())  # text before a row or a term is a line of its own

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self.cells is not None:
            self.cells.append(self.flush())
        elif tag == "tr" and self.cells is not None:
            cells = [c for c in self.cells if c]
            # A row of a name and a value is a field; a wider row stays a table's row.
            row = f"{cells[0]}: {cells[1]}" if len(cells) == 2 else "| " + " | ".join(cells) + " |"
            self.lines.append(row)
            self.cells = None
        elif tag == "dt":
            self.term = self.flush()
        elif tag == "dd":
            self.lines.append(f"{self.term}: {self.flush()}" if self.term else self.flush())
            self.term = None
        elif tag in _BLOCKS:
            self.lines.append(self.flush())

    def handle_data(self, data: str) -> None:
        self.buffer.append(data)


_BLOCKS = frozenset("p div br li h1 h2 h3 h4 h5 h6 table ul ol dl body html".split())


def markup_text(text: str) -> str:
    """An HTML document as plain lines (:class:`_Lines`); any other text as it is."""
    if not re.match(r"\s*<(?:!doctype\s+)?(?:html|body|table|dl|h\d|p|div)\b", text, re.I):
        return text
    reader = _Lines()
    reader.feed(text)
    reader.close()
    return "\n".join(ln for ln in [*reader.lines, reader.flush()] if ln.strip())


#: The check boxes of a scanned form ("[ ] Junior    [X] Medior").
_BOXES = re.compile(r"\[\s*[xX\u2713\u2714]?\s*\]")


def _is_chat(pairs: Sequence[tuple[str, str]]) -> bool:
    """Lines of "Name: sentence" (a chat, minutes, a list of notes on candidates), not of
    "Key: value": most values are sentences (more than six words)."""
    long = sum(len(_BOXES.sub(" ", v).split()) > 6 for _, v in pairs)  # "[X] Medior" is one
    if long * 2 > len(pairs):
        return True
    # "Ewan: Lauren accepted?" / "Marcus: yes, £37k" / "Ewan: 👍": people taking turns, a
    # name leading two lines and no line led by a field's name.
    labels = [snake_key(k) for k, _ in pairs]
    return len(set(labels)) < len(labels) and all(
        k not in KEY_ALIASES and field_key((k,)) is None for k in labels
    )


#: A "Key: value" line ("Key = value", "Key :: value", "KEY >> value", "Key => value", "key
#: ....... value", and "Key — value"
#: with a spaced dash; "KEY - value" with a spaced hyphen when the key is written in capitals
#: or is a known name: "Joana Ribeiro - final round" is no field).
KV_LINE = re.compile(
    r"^\s*[-*\u2022]?\s*([^\W\d_][\w /().&'\u00ba\u00b0-]{0,40}?)"
    r"(?:\s*(?:::|=>|>>|\u2192|[:=])|\s*\.{3,}:?|\s+[\u2013\u2014])\s*(.+?)\s*$"
)
_HYPHEN_LINE = re.compile(r"^\s*([^\W\d_][\w /().&'\u00ba\u00b0]{0,40}?)\s+-\s+(.+?)\s*$")
_MARKUP = re.compile(r"\*\*|(?<!_)__(?!_)|`")
_ENUMERATOR = re.compile(r"^\s*(?:\[\d{1,2}\]|\(\d{1,2}\)|\d{1,2}[.)])\s+")
_TABLE_RULE = re.compile(r"^[\s|:+-]+$")


def _line_pair(line: str) -> tuple[str, str] | None:
    """The label and value of one "Key: value" line (see :data:`KV_LINE`), or None. A
    form's item number ("[5] Headcount: 3", "2) Level: II") and the rule a value is written
    on ("____QC Analyst II____") are no part of either."""
    line = _ENUMERATOR.sub("", _MARKUP.sub("", line))
    line = re.sub(r"_{2,}", " ", line)
    m = KV_LINE.match(line)
    if m and m.group(1)[-1:].isdigit() and m.group(2)[:1].isdigit():
        return None  # "Joost van Dam 16:40": a time, not a field
    dashed = m is not None and re.match(r"\s+[\u2013\u2014]", line[m.end(1) :]) is not None
    if dashed and is_title(m.group(1)) and snake_key(m.group(1)) not in KEY_ALIASES:
        return None  # "Assistant Store Manager – York": a heading naming the role
    long = m is not None and len(m.group(2).split()) > (8 if dashed else 14)
    if long and field_key((snake_key(m.group(1)),)) is None:
        # "Good news – finance signed off on ...", "Quick heads-up: Graham starts leave ...":
        # a sentence led by a few words, not a field
        return None
    if m and _is_label(m.group(1)):
        return m.group(1).strip(), _plain_value(m.group(2))
    m = _HYPHEN_LINE.match(line)
    if m and _is_label(m.group(1)):
        label = m.group(1).strip()
        # Only a whole known name: "Customs Compliance Manager - interviews" is a heading.
        if label.isupper() or snake_key(label) in KEY_ALIASES:
            return label, m.group(2)
    return None


#: A YAML comment after a value ("hybrid   # 3 studio days").
_COMMENT = re.compile(r"\s{2,}#.*$|\s+#\s.*$")
#: A YAML mapping written on one line ("{city: Montreal, province: QC, country: Canada}").
_FLOW_MAPPING = re.compile(r"^\{\s*(\w[\w ]*:\s*[^{}]*)\}$")


#: The parts of a range written as a mapping ("{currency: USD, min: 90000, max: 110000}").
_RANGE_PARTS = frozenset("min max from to low high minimum maximum".split())


def _plain_value(value: str) -> str:
    """A field's value without a YAML comment after it, and a mapping written on one line
    as its values ("Montreal, QC, Canada")."""
    value = _COMMENT.sub("", value).strip()
    if m := _FLOW_MAPPING.match(value):
        parts = [p.split(":", 1) for p in m.group(1).split(",")]
        keys = {fold(p[0]) for p in parts}
        if all(len(p) == 2 for p in parts) and not keys & _RANGE_PARTS:  # a range: one value
            return ", ".join(v.strip().strip("\"'") for _, v in parts if v.strip())
    return value


def _cells(line: str, sep: str) -> list[str]:
    if sep == "|":
        return [c.strip() for c in line.strip().strip("|").split("|")]
    return [c.strip() for c in next(csv.reader([line], delimiter=sep))]


def text_fields(lines: Sequence[str]) -> tuple[list[tuple[str, str]], set[int]]:
    """The labelled values of a text export, and which lines hold them. An export is written
    as "Key: value" lines (:func:`_line_pair`), as a table of two columns (markdown ``| Key |
    Value |`` rows, ``Key;Value`` rows), or as a header line over one row of values (CSV, or a
    markdown table): each is read as the "Key: value" lines it stands for."""
    rows = [i for i, ln in enumerate(lines) if ln.strip().startswith("|")]
    if len(rows) < 2:  # "FIELD | VALUE" rows written without their outer bars
        piped = [i for i, ln in enumerate(lines) if "|" in ln]
        rows = piped if len(piped) >= 2 and len(piped) * 2 >= len(lines) else rows
    if len(rows) < 2 and len(lines) >= 3:
        for sep in (";", "\t"):
            width = lines[1].count(sep)
            if width >= 2 and lines[2].count(sep) == width and lines[0].count(sep) < width:
                # "Greenhouse export · 2025-01-21" above a header and its rows: the table
                pairs, used = text_fields(lines[1:])
                return pairs, {i + 1 for i in used}
    if len(rows) >= 2:
        sep, table = "|", [i for i in rows if not _TABLE_RULE.match(lines[i])]
    else:
        first = lines[0] if lines else ""
        sep = ";" if first.count(";") >= 1 and first.count(";") >= first.count(",") else ","
        sep = "\t" if first.count("\t") >= 1 else sep
        table = list(range(len(lines))) if len(lines) >= 2 and first.count(sep) >= 1 else []
    if table:
        cells = [_cells(lines[i], sep) for i in table]
        width = len(cells[0])
        if width >= 2 and all(len(c) == width for c in cells):
            head = [fold(c) for c in cells[0]]
            lines_used = set(rows if sep == "|" else table)
            if width == 2:  # a column of names, a column of values
                body = cells[1:] if head[1] in VALUE_FIELDS else cells
                pairs = [(a, b) for a, b in body if _is_label(a) and b]
                if len(pairs) * 2 >= len(body):
                    return pairs, lines_used
            elif len(cells) == 2 and all(_is_label(h) for h in cells[0]):  # header, one record
                return [(h, v) for h, v in zip(*cells, strict=True) if v], lines_used
    columns = _fixed_width(lines)
    if columns is not None:
        return columns
    pairs, used = [], set()
    for i, line in enumerate(lines):
        pair = _line_pair(line)
        if pair is not None:
            pairs.append(pair)
            used.add(i)
    return pairs, used


_RULE = re.compile(r"^\s*-{2,}(?:\s+-{2,}){2,}\s*$")


def _fixed_width(lines: Sequence[str]) -> tuple[list[tuple[str, str]], set[int]] | None:
    """A fixed-width table: a header line over a rule of dashes, one group per column, and
    rows beneath. Each column is one field; the distinct values of its rows are listed with
    ";" (a role open in two cities has a row per city)."""
    rule = next((i for i, ln in enumerate(lines) if i and _RULE.match(ln)), None)
    if rule is None:
        return None
    spans = [m.span() for m in re.finditer(r"-+", lines[rule])]
    spans = [(a, spans[n + 1][0] if n + 1 < len(spans) else None) for n, (a, _) in enumerate(spans)]
    rows = [
        i for i in range(rule + 1, len(lines)) if lines[i].strip() and not _RULE.match(lines[i])
    ]
    pairs = []
    for a, b in spans:
        name = lines[rule - 1][a:b].strip()
        values = list(dict.fromkeys(lines[i][a:b].strip() for i in rows if lines[i][a:b].strip()))
        if _is_label(name) and values:
            pairs.append((name, "; ".join(values)))
    return pairs, {rule - 1, rule, *rows}


#: Words that make a line's lead a clause ("This one is remote-friendly: ..."), not a label.
_CLAUSE_WORDS = frozenset("is are was were be been it this that we you they i our".split())


#: Words written short with a period inside a field's name ("No. of positions", "Ref. no.").
_ABBREVIATED = frozenset("no nr ref approx incl excl dept min max st num".split())


def _is_label(text: str) -> bool:
    """A field's name: at most four words, none of them making it a clause, no colon
    ("[10:04] Rania: ok" leads a line of a chat) and no end of a sentence."""
    ends = [m for m in re.finditer(r"(\w*)[.!?]\s", text) if fold(m.group(1)) not in _ABBREVIATED]
    if ":" in text.strip().rstrip(":") or ends:
        return False  # "One hire. Hybrid — 3 days ...": a sentence, then another ("No. of": one)
    if "/" in text:  # "Modalità di lavoro / Work mode": a name in two languages
        return all(_is_label(side) for side in text.split("/") if side.strip())
    words = fold(text).split()
    return 0 < len(words) <= 4 and not set(words) & _CLAUSE_WORDS


#: Where a message quotes an earlier one: what follows is older than the message.
_QUOTED = re.compile(
    r"^\s*>|^-{2,}\s*Original Message\s*-{2,}|^On .{0,80}\bwrote:\s*$|^El .{0,80}escribi\w*:\s*$|"
    r"^Le .{0,80}\b\u00e9crit\s*:\s*$|^Il .{0,80}\bscritto\s*:\s*$|^Am .{0,80}schrieb\b",
    re.I | re.M,
)


#: A message that forwards another: what it quotes is what it passes on.
_FORWARDED = re.compile(r"^\s*-{2,}\s*Forwarded message\s*-{2,}", re.I | re.M)


#: A question a reply quotes ("> 2. Site and working pattern?", "> - pay:"), answered on the
#: next line.
_QUOTED_QUESTION = re.compile(
    r"^\s*>\s?(?:\d{1,2}[.)]\s*|[-*\u2022]\s*)?([^>?:\n]{2,60}?)\s*[?:]\s*$"
)


def _inline_answers(text: str) -> list[str]:
    """The answers a reply writes under the questions it quotes, as "question: answer" lines
    ("> 3. Band?" then "€145,000 – €185,000 per year" is "Band: €145,000 – €185,000 ...")."""
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines[:-1]):
        asked = _QUOTED_QUESTION.match(line)
        answer = lines[i + 1].strip()
        if asked and answer and not answer.startswith(">"):
            out.append(f"{asked.group(1).strip()}: {answer}")
    return out


def without_quoted(text: str) -> str:
    """A message without the earlier messages it quotes (lines led by ">", what follows an
    "Original Message" rule or an "On ..., X wrote:" line): they state what was, not what
    is. A forwarded message passes on what it quotes: its quoted lines are read as its own;
    a reply that answers the questions it quotes under each one states its answers
    (:func:`_inline_answers`)."""
    if _FORWARDED.search(text):  # "> Sted: Oslo" of a forwarded request is the request
        return re.sub(r"^[ \t]*>[ \t]?", "", text, flags=re.M)
    m = _QUOTED.search(text)
    if not m or m.start() == 0:
        return text
    answers = _inline_answers(text[m.start() :])
    return "\n".join([text[: m.start()].rstrip(), *answers]).rstrip()


def prose_of(text: str) -> str:
    """The part of a text document that is prose: all of it, or in a list of "Key: value"
    lines the lines that are not (a brief in bullets mixes both), without the messages it
    quotes."""
    text = without_quoted(text.strip())
    if text.startswith("{") or (text.startswith("[") and _is_json(text)):
        return ""
    if xml_tree(text) is not None:
        return ""
    text = markup_text(text)
    lines = [ln for ln in text.splitlines() if ln.strip()]
    pairs, used = text_fields(lines)
    if len(used) < 2 or len(used) * 2 < len(lines) or _is_chat(pairs):
        return text  # prose, whatever a line of it looks like
    return "\n".join(ln for i, ln in enumerate(lines) if i not in used)


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except (json.JSONDecodeError, ValueError, RecursionError):
        return False
    return True


def field_key(path: Sequence[str]) -> str | None:
    """The canonical key a field's flattened path names (see the module docstring), or None.

    ``path`` holds the snake_case names of the JSON keys from the root (one name for a
    "Key: value" line)."""
    parts = [p for name in path for p in unabbreviated(name).split("_") if p]
    whole = "_".join(parts)
    if whole in KEY_ALIASES:
        return KEY_ALIASES[whole]
    while parts and parts[-1] in GENERIC_PARTS:
        parts.pop()
    if not parts:
        return None
    for start in range(len(parts)):
        window = "_".join(parts[start:])
        for name in (window, _singular(window)):
            if name in KEY_ALIASES:
                return KEY_ALIASES[name]
    return None


def _singular(name: str) -> str:
    if name.endswith("ies") and len(name) > 4:
        return name[:-3] + "y"
    if name.endswith("s") and not name.endswith("ss") and len(name) > 3:
        return name[:-1]
    return name


def _json_fields(obj: object, path: tuple[str, ...], item: bool = False) -> Iterable[ExportField]:
    """The fields of a JSON value at ``path``; an object's place parts as one location."""
    if isinstance(obj, list):
        for element in obj:
            yield from _json_fields(element, path, item=True)
        return
    if isinstance(obj, dict):
        labelled = _labelled(obj)
        if labelled is not None:
            yield labelled
            return
        place, used = _place(obj, path)
        if place is not None:
            where = "_".join(p for p in path) or "location"
            yield ExportField(where, "location", (ITEM if item else "") + place, item, "place")
        for where, amount, parts in _ranges(obj, path):
            yield _named("_".join(where), field_key(where) or "salary_range", amount, item)
            used |= parts
        for key, value in obj.items():
            if key in used:
                continue
            yield from _json_fields(value, (*path, snake_key(str(key))), item)
        return
    if obj is None or not path:
        return
    value = ("yes" if obj else "no") if isinstance(obj, bool) else str(obj)
    raw = "_".join(path)
    yield _named(raw, field_key(path), (ITEM if item else "") + value, item)


#: Field names that, in an object of two fields, say which attribute the other one holds
#: (``{"label": "Job title", "value": "Staff Data Engineer"}``, ``{"role": "hiring manager",
#: "name": "Ciara Byrne"}``) ...
LABEL_FIELDS = frozenset(
    "label key k field attribute property name role kind type capacity".split()
)
#: ... and the names of the field that holds the value.
VALUE_FIELDS = frozenset("value values v name person member who answer text content".split())


def labelled_pair(obj: dict) -> tuple[str, str] | None:
    """The label and the value of a two-field object that states one value under the name
    its other field gives (see :data:`LABEL_FIELDS`): ``("Job title", "Staff Data
    Engineer")``. ``{"name": "Python", "level": "Senior"}`` is not one: "level" holds no
    value of "Python"."""
    if len(obj) != 2 or not all(
        isinstance(v, str | int | float) and not isinstance(v, bool) for v in obj.values()
    ):
        return None
    (a, va), (b, vb) = ((snake_key(str(k)), v) for k, v in obj.items())
    for label_field, label, value_field, value in ((a, va, b, vb), (b, vb, a, va)):
        if (
            label_field in LABEL_FIELDS
            and value_field in VALUE_FIELDS
            and label_field != value_field
            and isinstance(label, str)
            and _is_label(label)
            and not label.strip().isdigit()
        ):
            return label.strip(), str(value).strip()
    return None


def _labelled(obj: dict) -> ExportField | None:
    """The field a labelled pair is (:func:`labelled_pair`): its label is the field's name,
    as a "Key: value" line's key would be."""
    pair = labelled_pair(obj)
    if pair is None:
        return None
    raw = snake_key(pair[0])
    return _named(raw, field_key((raw,)), pair[1], False)


_LOW = frozenset("min minimum low lower lo from floor start".split())
_HIGH = frozenset("max maximum high upper hi to ceiling end".split())
_UNIT = frozenset("currency curr ccy unit period frequency per".split())


def _ranges(obj: dict, path: tuple[str, ...]) -> list[tuple[tuple[str, ...], str, set[str]]]:
    """The ranges an object states in two number fields, a low and a high one, each as one
    value with the currency and period beside them (``{"currency": "EUR", "min": 62000,
    "max": 72000}`` is "EUR 62000-72000"; ``baseMin``/``baseMax`` is "95000-110000" under
    ``base``): where it stands, the value, and the fields it used. A range with no name
    that says what it measures is a sum of money when a currency comes with it."""
    numbers: dict[str, dict[str, tuple[str, object]]] = defaultdict(dict)
    for key, value in obj.items():
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            continue
        if isinstance(value, str) and not re.fullmatch(r"\s*\d[\d,.]*\s*[kK]?\s*", value):
            continue
        *head, last = snake_key(str(key)).split("_")
        code = ""
        if head and last.upper() in CURRENCIES:  # "comp_lo_usd": a low end, in dollars
            code, (*head, last) = last.upper(), head
        end = "low" if last in _LOW else "high" if last in _HIGH else None
        if end:
            numbers["_".join(head)][end] = (key, value)
            if code:
                numbers["_".join(head)]["code"] = (key, code)
    out = []
    for head, ends in numbers.items():
        if "low" not in ends or "high" not in ends:
            continue
        units = [
            (key, str(value))
            for key, value in obj.items()
            if isinstance(value, str) and snake_key(str(key)).split("_")[-1] in _UNIT
        ]
        units += [ends["code"]] if "code" in ends and not units else []
        currency = next((v for k, v in units if "period" not in snake_key(str(k))), "")
        period = next((v for k, v in units if v != currency), "")
        amount = f"{ends['low'][1]}-{ends['high'][1]}"
        amount = " ".join(p for p in (currency, amount, period) if p)
        where = (*path, head) if head else path or (("salary",) if currency else ())
        if not where or (field_key(where) is None and not currency):
            continue
        out.append((where, amount, {ends["low"][0], ends["high"][0], *(k for k, _ in units)}))
    return out


def _inline_range(key: str, value: str) -> str:
    """A YAML mapping written on one line ("{currency: USD, min: 90000, max: 110000}") as
    the range it states, else the value as it is."""
    m = re.fullmatch(r"\s*\{(.*)\}\s*", value)
    if not m:
        return value
    obj = dict(
        (a.strip(), b.strip().strip("'\""))
        for a, _, b in (part.partition(":") for part in m.group(1).split(","))
        if b.strip()
    )
    found = _ranges(obj, (snake_key(key),))
    return found[0][1] if found else value


def _named(raw: str, key: str | None, value: str, listed: bool = False) -> ExportField:
    return ExportField(raw, key, value, listed, "name" if key else None)


def _place(obj: dict, path: tuple[str, ...]) -> tuple[str | None, set[str]]:
    """One location made of the scalar fields of ``obj`` that are parts of a place (by the
    last word of their names, in groups sharing what comes before it), and the fields it
    used. A group needs two parts, or one part and a generic name in an object that a
    location key holds (``offices: [{name: ...}]``)."""
    groups: dict[str, dict[str, tuple[str, str]]] = defaultdict(dict)
    for key, value in obj.items():
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            continue
        words = snake_key(str(key)).split("_")
        role = PLACE_PARTS.get(words[-1])
        if words[-2:] == ["country", "code"]:
            role, words = "country", words[:-1]
        if role is None and len(words) == 1 and words[0] in GENERIC_PARTS:
            role = "name"
        if role is None and len(words) == 1 and field_key((str(key),)) == "location":
            role = "name"  # {"site": "Berlin", "countryCode": "DE"}: the site is the place
        if role:
            groups["_".join(words[:-1])].setdefault(role, (str(key), str(value).strip()))
    in_place = bool(path) and field_key(path) == "location"
    for parts in groups.values():
        named = {r for r in parts if r not in ("name", "site")}
        if len(named) + ("site" in parts) >= 2 or (in_place and (named or "name" in parts)):
            city = parts.get("city") or parts.get("name") or parts.get("site")
            region, country = parts.get("region"), parts.get("country")
            pieces = [p[1] for p in (city, region) if p and p[1]]
            if not region and country and fold(country[1]) != fold(pieces[0] if pieces else ""):
                pieces.append(country[1])  # "Singapore" in Singapore is Singapore
            if pieces:
                return ", ".join(pieces), {p[0] for p in parts.values()}
    return None, set()


def _typed(fields: list[ExportField]) -> list[ExportField]:
    """Fields no name explains, given the key every value of theirs is (see
    :func:`value_type`); the others as they are. Identifiers and feedback fields pass
    through: the caller drops them."""
    values: dict[str, list[str]] = defaultdict(list)
    for f in fields:
        if f.key is None:
            values[f.raw_key].append(f.value.lstrip(ITEM))
    typed = {raw: value_type(vs) for raw, vs in values.items()}
    out = []
    for f in fields:
        if f.key is None and (key := typed.get(f.raw_key)):
            f = ExportField(f.raw_key, key, f.value, f.listed, "value")
        f = _by_value_form(f)
        if f is not None:
            out.append(f)
    return out


#: A sum of money: a currency sign or code beside a number, or thousands ("85k", "85,000").
MONEY = re.compile(r"[€£$¥₹]\s?\d|\b[A-Z]{3}\s?\d|\d\s?[kK]\b|\b\d{1,3}(?:[,.\s]\d{3})+\b")
#: What a pay field's value holds: money, or a number as big as pay ("95000-110000").
_AMOUNT_OF_MONEY = re.compile(MONEY.pattern + r"|\d{4,}")
#: Keys whose values are words, never sums of money.
_WORDED_KEYS = frozenset({"seniority", "title", "location", "workplace_type", "department"})


def _by_value_form(f: ExportField) -> ExportField | None:
    """A field whose value contradicts its name, by the value's form: a sum of money is a
    salary whatever its field is called ("Band: €75,000–€88,000" is no seniority), a bare
    number names no title or place (the field keeps its own name); a yes/no
    flag of a key that is not a yes/no question states the value its field is named after
    ("remote: yes" is remote), or nothing ("remote: no" says only what the role is not)."""
    value = f.value.lstrip(ITEM)
    if f.key == "salary_range" and f.by == "name" and not _AMOUNT_OF_MONEY.search(value):
        return ExportField(f.raw_key, None, f.value, f.listed, "form")  # "Base: London"
    said = fold(re.split(r"[,.;(]", value)[0])
    arrangement = any(said == w or said.startswith(w + " ") for w in WORKPLACE_WORDS)
    if f.key == "location" and f.by == "name" and arrangement and len(value.split()) > 1:
        # "Where: fully remote, anywhere in the UK": how people work, not a place
        return ExportField(f.raw_key, "workplace_type", f.value, f.listed, "value")
    if f.key in _WORDED_KEYS and MONEY.search(value):
        return ExportField(f.raw_key, "salary_range", f.value, f.listed, "value")
    if f.key == "department" and is_title(value):
        return ExportField(f.raw_key, "title", f.value, f.listed, "value")  # "Function: Driver"
    if f.key in _WORDED_KEYS and value.strip().isdigit():
        return ExportField(f.raw_key, None, f.value, f.listed, None)  # "Positions: 1"
    flag = FLAG_WORDS.get(fold(value))
    if f.key is None or f.key in YES_NO_KEYS or flag is None:
        return f
    named = canonical_value(f.key, f.raw_key.rsplit("_", 1)[-1])
    if flag and f.key == "workplace_type" and named in WORKPLACE_WORDS.values():
        return ExportField(f.raw_key, f.key, named, f.listed, f.by)
    return None


def value_type(values: Sequence[str]) -> str | None:
    """The key every one of ``values`` is a value of, by its form alone: a seniority word, a
    workplace arrangement, a job title; None when they are not all one of these."""
    values = [v for v in (clean_value(x) for x in values) if v]
    if not values:
        return None
    if all(seniority_of(v) for v in values):
        return "seniority"
    if all(MONEY.search(v) and currency_of(v) for v in values):
        return "salary_range"  # "Salario: 34.000–40.000 € brutos/año"
    if all(is_title(v) for v in values):
        return "title"  # before workplaces: a "Site Reliability Engineer" is no place
    if all(workplace_of(v) and _arrangement_only(v) for v in values):
        return "workplace_type"
    return None


def _arrangement_only(value: str) -> bool:
    """A value that says only how people work ("Office-based", "3 days in office"), not a
    note that names an office ("CFO office, 12/01/2024")."""
    return len(value.split()) <= 6 and not re.search(r"\d{1,2}/\d{1,2}/\d{2,4}|\d{4}", value)


def seniority_of(value: str) -> str | None:
    """The seniority a value is ("Mid-level", "senior level" -> "Senior"), else None."""
    folded = fold(value)
    if folded in SENIORITY_WORDS:
        return SENIORITY_WORDS[folded]
    if folded.endswith(" level") and folded[: -len(" level")] in SENIORITY_WORDS:
        return SENIORITY_WORDS[folded[: -len(" level")]]
    return None


def items(value: str, key: str | None) -> list[str]:
    """A field's value as the values it states: a JSON array item whole; a text list split
    for a key that holds several values."""
    if value.startswith(ITEM):
        return [clean_value(value[1:])]
    if key == "rejection_reason":
        # A reason is a sentence, not a list: "he needs a visa sponsored and this role has
        # none" is one reason (several are set apart by semicolons).
        first = re.split(r"\.\s", value)[0]  # its first sentence says it
        return [v for v in (clean_value(p, REASON_CHARS) for p in first.split(";")) if v]
    if key in MULTI_KEYS:
        return split_list(value)
    if key == "location" and (";" in value or " | " in value):  # several places
        return [clean_value(v) for v in re.split(r";|\s\|\s", value) if clean_value(v)]
    return [value]


def is_skipped(field: ExportField, key: str) -> bool:
    """Identifiers, timestamps, contact details and notes on candidates are not facets of
    the role (a known name wins: ``posting.text`` is a title)."""
    named = key if field.by == "name" else field.raw_key
    return key in FEEDBACK_KEYS or bool(SKIP_KEY.search(named)) or _negated_label(field.raw_key)


#: Words after "No" that make it "number" ("No. of hires", "Nº de vacantes").
_NUMBER_OF = frozenset("of de di du des der del".split())


def _negated_label(raw_key: str) -> bool:
    """A field named by what does not hold ("Not possible: visa sponsorship, remote work",
    "Excluded: agencies"): its values are no facts of the role ("No. of openings" is a
    count)."""
    words = snake_key(raw_key.rsplit(".", 1)[-1]).split("_")
    return bool(set(words) & {"not", "without", "never", "excluded", "excluding"}) or (
        words[0] == "no" and len(words) > 1 and words[1] not in _NUMBER_OF
    )
