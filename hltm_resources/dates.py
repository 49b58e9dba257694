"""Dates as memory orders them: a document's ``updated_at`` in the forms sources write it,
read into one sortable form (ISO 8601), and the date a question is asked "as of".

A fact's validity (``valid_from`` / ``valid_to``) is in this form, so comparing two strings
compares two instants: ``2026-03-02`` < ``2026-03-02T09:30`` < ``2026-03-03``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime

from hltm_resources.text import NUMBER_WORDS

_MONTHS = {
    m: i + 1
    for i, names in enumerate(
        (
            ("jan", "january"),
            ("feb", "february"),
            ("mar", "march"),
            ("apr", "april"),
            ("may",),
            ("jun", "june"),
            ("jul", "july"),
            ("aug", "august"),
            ("sep", "sept", "september"),
            ("oct", "october"),
            ("nov", "november"),
            ("dec", "december"),
        )
    )
    for m in names
}
#: 2026-03-02, 2026/03/02, 2026-03-02T09:30[:00][.123][Z|+01:00], "2023/05/20 (Sat) 02:21"
_NUMERIC = re.compile(
    r"^\s*(\d{4})[-/](\d{1,2})[-/](\d{1,2})"
    r"(?:\s*\(\w+\))?"
    r"(?:[T\s]+(\d{1,2}):(\d{2})(?::(\d{2}))?(?:\.\d+)?)?"
    r"\s*(?:Z|[+-]\d{2}:?\d{2})?\s*$"
)
#: "1:56 pm on 8 May, 2023" (LoCoMo), "8 May 2023", "May 8, 2023"
_TIME = r"(?:(\d{1,2}):(\d{2})\s*([ap]\.?m\.?)\s*(?:on\s+)?)?"
_DAY_MONTH = re.compile(rf"^\s*{_TIME}(\d{{1,2}})\s+([A-Za-z]+)\.?,?\s+(\d{{4}})\s*$", re.I)
_MONTH_DAY = re.compile(rf"^\s*{_TIME}([A-Za-z]+)\.?\s+(\d{{1,2}}),?\s+(\d{{4}})\s*$", re.I)


def instant(text: object) -> str:
    """``text`` as a sortable ISO date (``2026-03-02``) or date and time
    (``2026-03-02T09:30``); "" when it is no date this reads."""
    if not isinstance(text, str) or not text.strip():
        return ""
    m = _NUMERIC.match(text)
    if m:
        y, mo, d, hh, mm, ss = m.groups()
        return _iso(int(y), int(mo), int(d), hh, mm, ss)
    for pattern, order in ((_DAY_MONTH, "dm"), (_MONTH_DAY, "md")):
        m = pattern.match(text)
        if m is None:
            continue
        hh, mm, half, first, second, year = m.groups()
        day, month = (first, second) if order == "dm" else (second, first)
        number = _MONTHS.get(month.lower())
        if number is None or not day.isdigit():
            return ""
        if hh is not None:
            hour = int(hh) % 12 + (12 if half.lower().startswith("p") else 0)
            hh = str(hour)
        return _iso(int(year), number, int(day), hh, mm, None)
    return ""


def _iso(y: int, mo: int, d: int, hh: str | None, mm: str | None, ss: str | None) -> str:
    try:
        day = date(y, mo, d)
    except ValueError:
        return ""
    if hh is None:
        return day.isoformat()
    try:
        moment = datetime(y, mo, d, int(hh), int(mm or 0), int(ss or 0))
    except ValueError:
        return ""
    return moment.isoformat(timespec="seconds" if ss else "minutes")


class AsOfError(ValueError):
    """An as-of date this cannot read (a user error: the CLI and the API say so in one line)."""


def as_of_date(text: object) -> str:
    """The as-of date a caller sent, in the sortable form; :class:`AsOfError` says what to
    send otherwise. A day means the end of that day: what was true on it."""
    moment = instant(text) if isinstance(text, str) else ""
    if not moment:
        raise AsOfError(
            f"as_of must be a date such as 2026-03-02 or 2026-03-02T09:30, not {str(text)[:40]!r}"
        )
    return moment + "T23:59:59" if len(moment) == 10 else moment


def shown(moment: str) -> str:
    """A stored instant as a person reads it: the day, and the time when one is known."""
    return moment.replace("T", " ") if moment else "an unknown date"


_MONTH_WORD = "|".join(sorted(_MONTHS, key=len, reverse=True))
#: A day or a month a question names: 2026-03-02, "2 March 2026", "March 2, 2026", "March
#: 2026", "March" (the year: the latest one that is not in the future).
_WHEN_NAMED = re.compile(
    r"\b(?:(?P<iso>\d{4}-\d{2}-\d{2})"
    rf"|(?P<d1>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<m1>{_MONTH_WORD})\.?(?:,?\s+(?P<y1>\d{{4}}))?"
    rf"|(?P<m2>{_MONTH_WORD})\.?\s+(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s+(?P<y2>\d{{4}}))?\b"
    rf"|(?P<m3>{_MONTH_WORD})\.?(?:\s+(?P<y3>\d{{4}}))?\b)",
    re.I,
)
_PAST = re.compile(r"\b(?:was|were|did|had|used to)\b", re.I)
_AS_OF_BEFORE = re.compile(
    r"\b(?:in|on|as of|during|by|back in|at the (?:start|beginning|end) of|early|late|"
    r"end of|start of|beginning of)\s+$",
    re.I,
)
_SINCE_BEFORE = re.compile(r"\bsince\s+$", re.I)
_WHEN = re.compile(
    r"^\s*(?:since\s+when|when|on\s+what\s+date|what\s+date)\b.*?\b(?:did|was|were|has|have)\b"
    r".*\b(?:change[sd]?|become|became|move[sd]?|switch(?:ed)?|start(?:ed)?|beg[ia]n|turn(?:ed)?|"
    r"go|went|set|decided?|updated?)\b",
    re.I,
)


@dataclass(frozen=True)
class TimeAsked:
    """What a question asks of time: the facts "as_of" an instant (the end of the day or
    month it names: "what was the location in March"), the changes "since" one (the start
    of what it names), or "when" a fact began or changed."""

    kind: str
    moment: str = ""
    #: The words that name the time (to say what was read).
    words: str = ""
    #: Where in the question they stand, with the word before them ("in March").
    span: tuple[int, int] = (0, 0)

    def without(self, question: str) -> str:
        """The question without the words of time: what else it asks ("where was the role
        located"), read for its attribute and values."""
        start, end = self.span
        if start == end:
            return question
        return " ".join((question[:start] + question[end:]).split())


def time_asked(question: str, today: date | None = None) -> TimeAsked | None:
    """What ``question`` asks of time, if anything this reads (``today``: the date a year
    left out is counted back from; default the current date)."""
    if not isinstance(question, str):
        return None
    today = today or date.today()
    if _WHEN.search(question):
        return TimeAsked("when")
    for m in _WHEN_NAMED.finditer(question):
        period = _period(m, today)
        if period is None:
            continue
        start, end = period
        before = question[: m.start()]
        words = m.group(0)
        if said := _SINCE_BEFORE.search(before):
            return TimeAsked("since", start.isoformat(), words, (said.start(), m.end()))
        if not _PAST.search(question):
            continue
        if said := _AS_OF_BEFORE.search(before):
            if re.search(r"start|beginning|early", said.group(0), re.I):
                end = start
            moment = end.isoformat() + "T23:59:59"
            return TimeAsked("as_of", moment, words, (said.start(), m.end()))
    return None


def _period(m: re.Match, today: date) -> tuple[date, date] | None:
    """The first and last day a match names."""
    g = m.groupdict()
    try:
        if g["iso"]:
            day = date.fromisoformat(g["iso"])
            return day, day
        for d, mo, y in (("d1", "m1", "y1"), ("d2", "m2", "y2")):
            if g[mo] and g[d]:
                month = _MONTHS[g[mo].lower()]
                year = int(g[y]) if g[y] else _latest_year(today, month, int(g[d]))
                day = date(year, month, int(g[d]))
                return day, day
        if g["m3"]:
            word = g["m3"].lower()
            if word in ("may", "march") and not g["y3"] and m.group(0)[0].islower():
                return None  # "may", "march": a verb, not a month, unless capitalized
            month = _MONTHS[word]
            year = int(g["y3"]) if g["y3"] else _latest_year(today, month, 1)
            first = date(year, month, 1)
            last = date(year + month // 12, month % 12 + 1, 1).toordinal() - 1
            return first, date.fromordinal(last)
    except ValueError:
        return None
    return None


def _latest_year(today: date, month: int, day: int) -> int:
    """The latest year in which ``month``/``day`` is not after ``today``."""
    return today.year if (month, day) <= (today.month, today.day) else today.year - 1


#: How many a question counts back: a number, written as one or as words ("a", "a couple of").
_COUNT_WORDS = {**NUMBER_WORDS, "a": 1, "an": 1, "a couple of": 2, "a few": 3, "several": 4}
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
#: "a week ago", "5 days ago", "a couple of days ago": when something the question asks about
#: happened. Not "how many days ago" (which asks for the span, not a time to look at).
_AGO = re.compile(
    r"(?<!how many )(?<!how long )\b(?P<n>\d+|"
    + "|".join(sorted(_COUNT_WORDS, key=len, reverse=True))
    + r")\s+(?P<unit>day|week|month|year)s?\s+ago\b",
    re.I,
)
_LAST = re.compile(r"\b(?P<yesterday>yesterday)\b|\blast\s+(?P<unit>week|month|year)\b", re.I)


def time_window(question: str, asked_at: str) -> tuple[str, str] | None:
    """The days a question says something it asks about happened, counted back from when
    it was asked (``asked_at``, any form :func:`instant` reads): "a week ago" is 5 to 9
    days before, "two weeks ago" 10 to 18, "yesterday" the day before. None when it names no
    such time, or ``asked_at`` is no date."""
    now = instant(asked_at)
    if not now or not isinstance(question, str):
        return None
    today = date.fromisoformat(now[:10]).toordinal()
    m = _AGO.search(question)
    if m:
        n = m.group("n").lower()
        count = int(n) if n.isdigit() else _COUNT_WORDS.get(n, 1)
        back = count * _UNIT_DAYS[m.group("unit").lower()]
        slack = max(1, round(back * 0.3))  # "a week ago" is rarely exactly seven days
    elif (m := _LAST.search(question)) is not None:
        if m.group("yesterday"):
            back, slack = 1, 0
        else:
            span = _UNIT_DAYS[m.group("unit").lower()]
            back, slack = span, span // 2 + 1
    else:
        return None
    first = date.fromordinal(today - back - slack).isoformat()
    last = date.fromordinal(min(today, today - back + slack)).isoformat()
    return first, last
