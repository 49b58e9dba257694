"""Numeric settings read from the environment: one parser, checked when a command starts.

Every ``HLTM_*`` number is read here, whether :meth:`Settings.from_env` reads it or a store
reads it where it is used (``HLTM_LOCK_WAIT``, ``HLTM_VECTOR_INDEX_MIN_ROWS``); a value that
is not a number, or out of its range, is refused in one line that says what to set, before
any work (:func:`check_numbers`, called by ``Settings.from_env``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass


class SettingError(ValueError):
    """An environment variable holding no value its setting takes."""


@dataclass(frozen=True)
class Number:
    """A numeric setting: whole or not, its least value and whether that value is allowed."""

    whole: bool
    least: float
    #: What the setting is, in a few words (for the message).
    what: str

    @property
    def kind(self) -> str:
        return "a whole number" if self.whole else "a number"

    def wanted(self) -> str:
        least = int(self.least) if self.least == int(self.least) else self.least
        return f"{self.kind} of at least {least} ({self.what})"

    def parse(self, name: str, text: str) -> int | float:
        """The value ``text`` (of variable ``name``) stands for, checked."""
        try:
            value: int | float = int(text) if self.whole else float(text)
        except ValueError:
            raise SettingError(
                f"{name}={text!r} is not {self.kind}: set it to {self.wanted()}"
            ) from None
        return self.check(name, value, shown=repr(text))

    def check(self, name: str, value: object, shown: str | None = None) -> int | float:
        """``value`` if the setting takes it (``name``: how to name it in the message)."""
        ok = isinstance(value, int) or (not self.whole and isinstance(value, float))
        if not ok or isinstance(value, bool):
            raise SettingError(f"{name}={value!r} is not {self.kind}: set it to {self.wanted()}")
        if not math.isfinite(value) or value < self.least:
            raise SettingError(
                f"{name}={shown or repr(value)} is out of range: set it to {self.wanted()}"
            )
        return value


#: Every numeric ``HLTM_*`` variable.
NUMBERS: dict[str, Number] = {
    "HLTM_CONCURRENCY": Number(True, 1, "LLM calls and nodes built at once"),
    "HLTM_TIMEOUT_S": Number(False, 0.001, "seconds an LLM or embedding request may take"),
    "HLTM_MAX_RETRIES": Number(True, 0, "retries of a failed LLM request"),
    "HLTM_MAX_INPUT_TOKENS": Number(True, 1, "tokens of one LLM prompt at most"),
    "HLTM_LLM_CONTEXT": Number(True, 1, "tokens of context the chat server serves"),
    "HLTM_SENSOR_INTERVAL_S": Number(True, 1, "seconds between sensor evaluations"),
    "HLTM_LOCK_WAIT": Number(False, 0, "seconds a writer waits for the home's lock"),
    "HLTM_VECTOR_INDEX_MIN_ROWS": Number(True, 1, "rows from which a table gets a vector index"),
    "HLTM_MAX_DOCUMENT_BYTES": Number(True, 1000, "bytes of UTF-8 one document's text may hold"),
}


#: The numeric fields of ``Settings`` and the variable that sets each (the others are read
#: where they are used).
SETTING_VARIABLES = {
    "concurrency": "HLTM_CONCURRENCY",
    "timeout_s": "HLTM_TIMEOUT_S",
    "max_retries": "HLTM_MAX_RETRIES",
    "max_input_tokens": "HLTM_MAX_INPUT_TOKENS",
    "llm_context_tokens": "HLTM_LLM_CONTEXT",
    "sensor_interval_s": "HLTM_SENSOR_INTERVAL_S",
}


def number(name: str, default: int | float | None = None, env: Mapping[str, str] | None = None):
    """The value of the numeric variable ``name`` (``default`` when unset or empty);
    :class:`SettingError` when it holds no value its setting takes."""
    text = (os.environ if env is None else env).get(name, "")
    if not text.strip():
        return default
    return NUMBERS[name].parse(name, text.strip())


def check_numbers(env: Mapping[str, str] | None = None) -> dict[str, int | float | None]:
    """Every numeric variable's value (None: unset); refuse, in one line, the first one
    that holds no value it takes."""
    return {name: number(name, env=env) for name in NUMBERS}
