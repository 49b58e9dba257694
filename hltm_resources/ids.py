"""Node ids (``<level>:<id>``, e.g. ``seat:acme-r01``) and tree paths.

Every id that reaches a store query goes through :func:`parse_node_id` or :func:`check_raw_id`
first: raw ids are letters, digits and ``_ . @ -`` only, so they can never carry quotes, SQL or
path tricks into a filter. The levels themselves come from the tree schema
(:mod:`hltm_resources.schema`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hltm_resources.schema import TreeSchema

MAX_ID_LEN = 128
_RAW_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@\-]{0,127}")
_LEVEL = re.compile(r"[a-z][a-z0-9_]{0,31}")


class InvalidIdError(ValueError):
    """An id or node id that is malformed or unsafe."""


_DOC_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@:#/\-]{0,255}")


def is_doc_id(value: object) -> bool:
    """Document ids never reach a filter or a path, so they may also hold ``: # /``
    (LoCoMo's ``D1:3``); still no quotes, spaces or control characters."""
    return isinstance(value, str) and bool(_DOC_ID.fullmatch(value))


def check_doc_id(value: object, what: str = "doc_id") -> str:
    if not is_doc_id(value):
        raise InvalidIdError(
            f"{what} {repr(value)[:80]} is not a valid document id: use 1-256 characters from "
            "letters, digits and '_ . @ : # / -', starting with a letter or digit"
        )
    return value  # type: ignore[return-value]


def is_raw_id(value: object) -> bool:
    """True when ``value`` is a well-formed raw id (no level prefix)."""
    return isinstance(value, str) and bool(_RAW_ID.fullmatch(value)) and ".." not in value


def check_raw_id(value: object, what: str = "id") -> str:
    """Return ``value`` if it is a well-formed raw id, else raise :class:`InvalidIdError`."""
    if not is_raw_id(value):
        shown = repr(value)[:80]
        raise InvalidIdError(
            f"{what} {shown} is not a valid id: use 1-{MAX_ID_LEN} characters from letters, "
            "digits, '_', '.', '@' and '-', starting with a letter or digit, without '..'"
        )
    return value  # type: ignore[return-value]


@dataclass(frozen=True, order=True)
class NodeId:
    """A parsed node id."""

    level: str
    raw: str

    def __str__(self) -> str:
        return f"{self.level}:{self.raw}"


def parse_node_id(value: object, schema: TreeSchema | None = None) -> NodeId:
    """Parse ``level:id``; raise :class:`InvalidIdError` with a helpful message otherwise.

    With a ``schema`` the level must be one of its levels; without one, any well-formed level
    name passes (enough for a store filter, which only needs the id to be safe).
    """
    examples = ", ".join(f"'{lv}:<id>'" for lv in schema.names) if schema else "'<level>:<id>'"
    if not isinstance(value, str) or ":" not in value:
        raise InvalidIdError(f"node id {repr(value)[:80]} is malformed: expected {examples}")
    level, raw = value.split(":", 1)
    if not _LEVEL.fullmatch(level) or (schema is not None and not schema.has(level)):
        known = ", ".join(schema.names) if schema else "a lowercase level name"
        raise InvalidIdError(
            f"node id {value[:80]!r} has unknown level {level[:20]!r}: expected {known}"
        )
    check_raw_id(raw, f"{level} id")
    return NodeId(level, raw)


def node_id(level: str, raw: str) -> str:
    """Format a node id."""
    return f"{level}:{raw}"


def make_path(*raw_ids: str) -> str:
    """Join raw ids into a tree path (``account/seat/project``)."""
    return "/".join(raw_ids)
