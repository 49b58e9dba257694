"""Changes of one item: upserts and deletes of single records, validated as snapshot lines are.

A change names a record of the source of truth by its level (a level of the tree schema, or
``document``) and either upserts it (``record``: exactly the fields of that level's snapshot
line) or deletes it (``id``: its raw id; a node's whole subtree goes with it). A change feed is
a JSONL file of them, one object a line, as an ATS or a CDC stream writes them::

    {"op": "upsert", "level": "document", "record": {"doc_id": "d9", "project_id": "p1",
     "kind": "note", "text": "The search moved to Berlin.", "updated_at": "2026-12-06"}}
    {"op": "delete", "level": "document", "id": "d3"}
    {"op": "upsert", "level": "project", "record": {"project_id": "p7", "seat_id": "s1",
     "name": "Data engineer", "updated_at": "2026-12-06"}}

Every field is checked with the snapshot's own rules and messages (:mod:`stores.sot`); a
record's parent must exist in the source of truth or be upserted by an earlier change of the
same batch, and a delete must name a record that exists. A batch with any problem is refused
whole (:class:`ChangeError`, ``file:line`` first) and nothing is written.

:class:`SotIds` holds every record's id and parent: it checks a batch against the source of
truth (:meth:`SotIds.problems`) and writes it inside the caller's transaction, saying which
leaves it touched (:meth:`SotIds.apply`); what that means for memory (moves, erasures) is
decided by :mod:`hltm_resources.indexing.writes`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hltm_resources.ids import check_doc_id, check_raw_id
from hltm_resources.schema import DOCUMENTS, TreeSchema
from hltm_resources.stores.sot import (
    BLANK,
    SnapshotProblem,
    check_fields,
    decode_line,
    refusal,
)

#: The level name of a document in a change (the tree's levels are the others).
DOCUMENT = "document"
OPS = ("upsert", "delete")


@dataclass(frozen=True)
class Change:
    """One upsert or delete. ``line`` is where it came from (a feed's line, a batch's index)."""

    op: str
    level: str
    record: dict[str, str] = field(default_factory=dict)
    id: str = ""
    line: int | None = None

    @property
    def key(self) -> str:
        """The raw id of the record it changes."""
        return self.id if self.op == "delete" else next(iter(self.record.values()))

    def as_dict(self) -> dict:
        out: dict = {"op": self.op, "level": self.level}
        if self.op == "delete":
            out["id"] = self.id
        else:
            out["record"] = dict(self.record)
        return out


class ChangeError(ValueError):
    """A batch of changes that cannot be applied; nothing was written."""

    def __init__(self, source: str, problems: list[SnapshotProblem]):
        self.source = source
        self.problems = problems
        super().__init__(refusal(f"{source} was not applied", problems))

    @classmethod
    def saying(cls, message: str) -> ChangeError:
        """A refusal whose reasons are already one message (e.g. from the memory service)."""
        error = cls.__new__(cls)
        ValueError.__init__(error, message)
        error.source, error.problems = "", []
        return error


def fields_of(schema: TreeSchema, level: str) -> tuple[str, ...]:
    return schema.document_fields if level == DOCUMENT else schema.fields(level)


def table_of(schema: TreeSchema, level: str) -> str:
    return f"sot_{DOCUMENTS}" if level == DOCUMENT else schema.level(level).table


def _levels(schema: TreeSchema) -> tuple[str, ...]:
    return (*schema.names, DOCUMENT)


def parse_change(obj: object, schema: TreeSchema, line: int | None = None) -> Change | str:
    """A :class:`Change` from a decoded JSON value, or what is wrong with it (one line)."""
    if not isinstance(obj, dict):
        return "is not a JSON object"
    op, level = obj.get("op"), obj.get("level")
    if op not in OPS:
        return f"op must be one of {', '.join(OPS)} (got {op!r})"
    if level not in _levels(schema):
        return f"level must be one of {', '.join(_levels(schema))} (got {level!r})"
    extra = sorted(set(obj) - {"op", "level", "record" if op == "upsert" else "id"})
    if extra:
        return f"unexpected field{'s' if len(extra) > 1 else ''} " + ", ".join(extra)
    id_field = fields_of(schema, level)[0]
    if op == "delete":
        raw = obj.get("id")
        if not isinstance(raw, str):
            return "a delete needs id, the raw id (a string) of the record to delete"
        try:
            (check_doc_id if level == DOCUMENT else check_raw_id)(raw, id_field)
        except ValueError as exc:
            return str(exc)
        return Change("delete", level, id=raw, line=line)
    record = obj.get("record")
    if not isinstance(record, dict):
        return f"an upsert needs record, an object with {', '.join(fields_of(schema, level))}"
    fields = fields_of(schema, level)
    unknown = sorted(set(record) - set(fields))
    if unknown:
        return f"record has unknown field{'s' if len(unknown) > 1 else ''} " + ", ".join(unknown)
    problem = check_fields(record, fields)
    if problem:
        return problem
    for f in fields:
        if f.endswith("_id"):
            try:
                (check_doc_id if f == "doc_id" else check_raw_id)(record[f], f)
            except ValueError as exc:
                return str(exc)
    return Change("upsert", level, record={f: record[f] for f in fields}, line=line)


def read_feed(path: str | Path, schema: TreeSchema) -> list[Change]:
    """The changes of a JSONL change feed, each checked on its own (:func:`parse_change`);
    :class:`ChangeError` listing every bad line (``file:line``) if any is."""
    path = Path(path)
    if not path.is_file():
        raise ChangeError(str(path), [SnapshotProblem(str(path), None, "is not a file")])
    changes: list[Change] = []
    problems: list[SnapshotProblem] = []
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            obj, problem = decode_line(raw)
            if obj is BLANK:
                continue
            parsed = problem or parse_change(obj, schema, lineno)
            if isinstance(parsed, str):
                problems.append(SnapshotProblem(path.name, lineno, parsed))
            else:
                changes.append(parsed)
    if problems:
        raise ChangeError(str(path), problems)
    return changes


def parse_changes(objs: Iterable[object], schema: TreeSchema, source: str) -> list[Change]:
    """Changes from decoded JSON values (an API call's list; ``line`` is the 1-based index)."""
    changes, problems = [], []
    for i, obj in enumerate(objs, start=1):
        parsed = obj if isinstance(obj, Change) else parse_change(obj, schema, i)
        if isinstance(parsed, str):
            problems.append(SnapshotProblem(source, i, parsed))
        else:
            changes.append(parsed)
    if problems:
        raise ChangeError(source, problems)
    return changes


# -- checking against the source of truth and applying ---------------------------------------


@dataclass
class Applied:
    """What a batch changed, in raw ids: the leaves whose documents or own row changed (new
    ones included), and per level the nodes deleted (their subtrees went with them)."""

    leaves: set[str] = field(default_factory=set)
    deleted: dict[str, set[str]] = field(default_factory=dict)
    documents_deleted: set[str] = field(default_factory=set)
    changes: int = 0


class SotIds:
    """Every record's id and parent id, per level (documents too), as the source of truth
    holds them; kept current by :meth:`apply`. A service that is the home's only writer keeps
    one for its life instead of reading the ids at every batch."""

    def __init__(self, con, schema: TreeSchema):
        self.schema = schema
        self.parent: dict[str, dict[str, str | None]] = {}
        for level in _levels(schema):
            table, fields = table_of(schema, level), fields_of(schema, level)
            parent_field = self.parent_field(level)
            rows = con.execute(
                f"SELECT {fields[0]}, {parent_field or 'NULL'} FROM {table}"
            ).fetchall()
            self.parent[level] = dict(rows)

    def parent_field(self, level: str) -> str | None:
        if level == DOCUMENT:
            return self.schema.leaf.id_field
        parent = self.schema.parent(level)
        return parent.id_field if parent else None

    def parent_level(self, level: str) -> str | None:
        if level == DOCUMENT:
            return self.schema.leaf.name
        parent = self.schema.parent(level)
        return parent.name if parent else None

    def _copy(self) -> SotIds:
        other = object.__new__(SotIds)
        other.schema = self.schema
        other.parent = {level: dict(ids) for level, ids in self.parent.items()}
        return other

    def problems(self, changes: Sequence[Change], source: str) -> list[SnapshotProblem]:
        """What is wrong with ``changes`` as a batch applied after everything applied so far:
        a parent that does not exist, a delete of a record that does not (nothing changes).

        The batch is played on an overlay of the ids it touches; a batch that deletes a node
        (its subtree goes too) is played on a copy of all of them."""
        subtree = any(ch.op == "delete" and ch.level != DOCUMENT for ch in changes)
        ids = self._copy() if subtree else self
        overlay: dict[tuple[str, str], bool] = {}  # (level, id) -> exists after the change

        def exists(level: str, raw: str | None) -> bool:
            known = overlay.get((level, raw))
            return known if known is not None else raw in ids.parent[level]

        problems: list[SnapshotProblem] = []
        for ch in changes:
            if ch.op == "delete":
                if not exists(ch.level, ch.id):
                    problems.append(
                        SnapshotProblem(
                            source, ch.line, f"{ch.level} {ch.id!r} is not in the source of truth"
                        )
                    )
                elif subtree:
                    for level, gone in ids._drop(ch.level, ch.id).items():
                        overlay.update(((level, raw), False) for raw in gone)
                else:
                    overlay[(ch.level, ch.id)] = False
                continue
            pfield, plevel = ids.parent_field(ch.level), ids.parent_level(ch.level)
            parent = ch.record[pfield] if pfield else None
            if plevel is not None and not exists(plevel, parent):
                file = self.schema.level(plevel).file
                problems.append(
                    SnapshotProblem(
                        source, ch.line, f"{pfield} {parent!r} does not exist in {file}"
                    )
                )
                continue
            overlay[(ch.level, ch.key)] = True
        return problems

    def check(self, changes: Sequence[Change], source: str) -> None:
        """:class:`ChangeError` if :meth:`problems` finds any."""
        problems = self.problems(changes, source)
        if problems:
            raise ChangeError(source, problems)

    def _drop(self, level: str, raw: str) -> dict[str, list[str]]:
        """Take ``raw`` and everything below it out; the ids taken, per level (one pass over
        each level below)."""
        self.parent[level].pop(raw, None)
        out = {level: [raw]}
        if level == DOCUMENT:
            return out
        frontier = {raw}
        for child in (*self.schema.names[self.schema.rank(level) + 1 :], DOCUMENT):
            gone = [k for k, p in self.parent[child].items() if p in frontier]
            for k in gone:
                del self.parent[child][k]
            out[child] = gone
            frontier = set(gone)
        return out

    def apply(self, con, changes: Sequence[Change]) -> Applied:
        """Write ``changes`` in order on an open connection (the caller owns the transaction
        and has checked them with :meth:`check`)."""
        schema = self.schema
        out = Applied(deleted={name: set() for name in schema.names}, changes=len(changes))
        leaf = schema.leaf.name
        for ch in changes:
            table, fields = table_of(schema, ch.level), fields_of(schema, ch.level)
            if ch.op == "upsert":
                if ch.level == DOCUMENT:
                    old = self.parent[DOCUMENT].get(ch.key)
                    if old is not None:
                        out.leaves.add(old)  # a document that moved leaves its old leaf too
                    out.leaves.add(ch.record[schema.leaf.id_field])
                elif ch.level == leaf:
                    out.leaves.add(ch.key)
                con.execute(f"DELETE FROM {table} WHERE {fields[0]} = ?", [ch.key])
                con.execute(
                    f"INSERT INTO {table} ({', '.join(fields)}) VALUES "
                    f"({', '.join('?' * len(fields))})",
                    [ch.record[f] for f in fields],
                )
                pfield = self.parent_field(ch.level)
                self.parent[ch.level][ch.key] = ch.record[pfield] if pfield else None
                continue
            if ch.level == DOCUMENT:
                out.leaves.add(self.parent[DOCUMENT][ch.id])
                out.documents_deleted.add(ch.id)
            for lv, gone in self._drop(ch.level, ch.id).items():
                con.execute(
                    f"DELETE FROM {table_of(schema, lv)} WHERE {fields_of(schema, lv)[0]} "
                    "IN (SELECT unnest(?))",
                    [gone],
                )
                if lv != DOCUMENT:
                    out.deleted[lv].update(gone)
        out.leaves -= out.deleted[leaf]
        return out
