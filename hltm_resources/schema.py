"""The tree schema: the one declaration of the memory tree's levels.

Everything that depends on the shape of the tree is derived from a :class:`TreeSchema`: node ids
(``<level>:<id>``), the snapshot files and source-of-truth tables, Dagster's partitions and the
asset of each level, the order levels are built in, and how retrieval ranks levels. The default
is ``account > seat > project``; another tree is one string away (``HLTM_TREE=org>team>seat>
project``).

For a level named ``seat`` (plural ``seats``) and its parent ``account``:

- node ids are ``seat:<id>`` and paths are ``<account id>/<seat id>``;
- the snapshot file is ``seats.jsonl`` with fields ``seat_id``, ``account_id``, ``name``; the
  leaf level also has ``updated_at``, and ``documents.jsonl`` hangs off the leaves;
- the SOT table is ``sot_seats`` with the same columns;
- the Dagster asset is ``seat_memory`` with one partition per seat.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from hltm_resources.text import pluralize

_NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")
#: Names a level cannot take: they are columns or tables of their own in the contract.
_RESERVED = frozenset({"doc", "document", "documents", "name", "node", "path", "level", "sot"})
DOCUMENTS = "documents"


class SchemaError(ValueError):
    """A tree schema that cannot be used."""


@dataclass(frozen=True)
class Level:
    """One level of the tree."""

    name: str
    #: How user-facing text names one node of this level ("recruiter" for a seat).
    noun: str = ""
    plural: str = ""

    def __post_init__(self) -> None:
        if not _NAME.fullmatch(self.name) or self.name in _RESERVED:
            raise SchemaError(
                f"level name {self.name!r} is not usable: use 1-32 lowercase letters, digits and "
                f"'_', starting with a letter, other than {', '.join(sorted(_RESERVED))}"
            )
        object.__setattr__(self, "noun", self.noun or self.name.replace("_", " "))
        object.__setattr__(self, "plural", self.plural or pluralize(self.name))

    @property
    def id_field(self) -> str:
        """The id column of this level's file and table (``seat_id``)."""
        return f"{self.name}_id"

    @property
    def table(self) -> str:
        """The source-of-truth table (``sot_seats``)."""
        return f"sot_{self.plural}"

    @property
    def file(self) -> str:
        """The snapshot file (``seats.jsonl``)."""
        return f"{self.plural}.jsonl"

    @property
    def asset(self) -> str:
        """The Dagster asset of this level (``seat_memory``)."""
        return f"{self.name}_memory"

    @property
    def nouns(self) -> str:
        return pluralize(self.noun)


@dataclass(frozen=True)
class TreeSchema:
    """Levels from the root to the leaf; each level's parent is the one before it."""

    levels: tuple[Level, ...]

    def __post_init__(self) -> None:
        names = [lv.name for lv in self.levels]
        if len(names) < 2:
            raise SchemaError("a tree schema needs at least two levels (a root and leaves)")
        if len(set(names)) != len(names) or len({lv.plural for lv in self.levels}) != len(names):
            raise SchemaError(f"level names must be distinct: {' > '.join(names)}")
        if DOCUMENTS in {lv.plural for lv in self.levels}:
            raise SchemaError("no level may be called 'document(s)': documents hang off leaves")

    @classmethod
    def parse(cls, spec: str) -> TreeSchema:
        """``"org>team>seat>project"``; the default spec gives :data:`DEFAULT_SCHEMA`."""
        names = [part.strip() for part in str(spec).split(">")]
        if names == list(DEFAULT_SCHEMA.names):
            return DEFAULT_SCHEMA
        return cls(tuple(Level(name) for name in names))

    @property
    def spec(self) -> str:
        return ">".join(self.names)

    @cached_property
    def names(self) -> tuple[str, ...]:
        """Level names, root first."""
        return tuple(lv.name for lv in self.levels)

    @property
    def root(self) -> Level:
        return self.levels[0]

    @property
    def leaf(self) -> Level:
        return self.levels[-1]

    @cached_property
    def _by_name(self) -> dict[str, Level]:
        return {lv.name: lv for lv in self.levels}

    def level(self, name: str) -> Level:
        try:
            return self._by_name[name]
        except KeyError:
            raise SchemaError(f"level {name!r} is not in the tree schema {self.spec}") from None

    def has(self, name: str) -> bool:
        return name in self._by_name

    def rank(self, name: str) -> int:
        """Depth of a level: 0 at the root."""
        return self.names.index(name)

    def parent(self, name: str) -> Level | None:
        i = self.rank(name)
        return self.levels[i - 1] if i else None

    def child(self, name: str) -> Level | None:
        i = self.rank(name)
        return self.levels[i + 1] if i + 1 < len(self.levels) else None

    def is_leaf(self, name: str) -> bool:
        return name == self.leaf.name

    @property
    def bottom_up(self) -> tuple[str, ...]:
        """Level names in build order: leaves first, the root last."""
        return tuple(reversed(self.names))

    @property
    def parents_bottom_up(self) -> tuple[str, ...]:
        """The levels built by aggregation, lowest first."""
        return self.bottom_up[1:]

    @property
    def leaf_count_key(self) -> str:
        """The facet a parent holds its number of leaves in (``project_count``)."""
        return f"{self.leaf.name}_count"

    # -- the snapshot contract -----------------------------------------------------------------
    def fields(self, level: str) -> tuple[str, ...]:
        """The fields of a level's snapshot file and SOT table, in order."""
        lv = self.level(level)
        parent = self.parent(level)
        out = [lv.id_field] + ([parent.id_field] if parent else []) + ["name"]
        if self.is_leaf(level):
            out.append("updated_at")
        return tuple(out)

    @property
    def document_fields(self) -> tuple[str, ...]:
        return ("doc_id", self.leaf.id_field, "kind", "text", "updated_at")

    @cached_property
    def files(self) -> dict[str, tuple[str, ...]]:
        """Snapshot file name -> fields, parents before children, documents last."""
        out = {lv.file: self.fields(lv.name) for lv in self.levels}
        out[f"{DOCUMENTS}.jsonl"] = self.document_fields
        return out


#: The recruiting tree of the public contract: account (organization) > seat (recruiter) >
#: project (a hiring project, the leaf).
DEFAULT_SCHEMA = TreeSchema(
    (
        Level("account", noun="organization"),
        Level("seat", noun="recruiter"),
        Level("project", noun="project"),
    )
)
DEFAULT_TREE = DEFAULT_SCHEMA.spec
