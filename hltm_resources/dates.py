"""Dates as memory orders them: a document's ``updated_at`` in the forms sources write it,
read into one sortable form (ISO 8601), and the date a question is asked "as of".

A fact's validity (``valid_from`` / ``valid_to``) is in this form, so comparing two strings
compares two instants: ``2026-03-02`` < ``2026-03-02T09:30`` < ``2026-03-03``.
"""

from __future__ import annotations

import re
from datetime import date, datetime

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
