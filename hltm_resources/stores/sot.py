"""The source of truth (SOT): snapshot files, their validation, and loading them into DuckDB.

A snapshot is a directory of JSONL files, one per level of the tree schema plus
``documents.jsonl`` (the public contract, see README and :mod:`hltm_resources.schema`); for the
default tree:

- ``accounts.jsonl``: ``{"account_id", "name"}``
- ``seats.jsonl``: ``{"seat_id", "account_id", "name"}``
- ``projects.jsonl``: ``{"project_id", "seat_id", "name", "updated_at"}``
- ``documents.jsonl``: ``{"doc_id", "project_id", "kind", "text", "updated_at"}``

A snapshot is the whole truth: loading it upserts every row, deletes leaves (and their
documents) that it no longer lists, and moves leaves whose parent changed. Everything is
validated before anything is written, and the write is one transaction.

Each line is parsed by Python's strict JSON decoder (polars' and DuckDB's readers accept
numbers where strings are required and rewrite lone surrogates); everything after parsing (id
checks, duplicates, parent references, content digests, the insert) runs on polars frames.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from hltm_resources import env
from hltm_resources.ids import check_doc_id, check_raw_id
from hltm_resources.models import Document, NodeInfo, Topology
from hltm_resources.schema import DEFAULT_SCHEMA, DOCUMENTS, TreeSchema

MAX_ERRORS = 20
LINE = "_line"
#: The id formats of :mod:`hltm_resources.ids`, for polars (Rust regex, whole-string match).
_RAW_ID = r"^[A-Za-z0-9][A-Za-z0-9_.@\-]{0,127}$"
_DOC_ID = r"^[A-Za-z0-9][A-Za-z0-9_.@:#/\-]{0,255}$"
DOCUMENTS_FILE = f"{DOCUMENTS}.jsonl"


@dataclass(frozen=True)
class SnapshotProblem:
    file: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.message}"


def refusal(subject: str, problems: list[SnapshotProblem]) -> str:
    """The message of a refused input: ``subject`` ("snapshot DIR was not loaded"), then its
    problems, ``file:line`` first as compilers print them (at most :data:`MAX_ERRORS`)."""
    if len(problems) == 1:
        return f"{problems[0]} ({subject}; the source of truth is unchanged)"
    shown = "\n".join(f"  {p}" for p in problems[:MAX_ERRORS])
    extra = len(problems) - MAX_ERRORS
    more = f"\n  ... and {extra} more" if extra > 0 else ""
    return f"{subject} ({len(problems)} problems; the source of truth is unchanged):\n{shown}{more}"


class SnapshotError(ValueError):
    """A snapshot that cannot be loaded; nothing was written."""

    def __init__(self, directory: Path, problems: list[SnapshotProblem]):
        self.directory = directory
        self.problems = problems
        super().__init__(refusal(f"snapshot {directory} was not loaded", problems))


@dataclass
class Snapshot:
    """Validated rows of every file, as string frames in contract column order (plus the
    line each row came from)."""

    schema: TreeSchema
    frames: dict[str, pl.DataFrame]

    def frame(self, file: str) -> pl.DataFrame:
        return self.frames[file]

    def count(self, file: str) -> int:
        return self.frames[file].height

    def rows(self, file: str) -> list[dict]:
        """The rows of one file as dicts, in file order."""
        return self.frames[file].drop(LINE).to_dicts()


# -- reading and validating -------------------------------------------------------------------


def read_snapshot(directory: str | Path, schema: TreeSchema = DEFAULT_SCHEMA) -> Snapshot:
    """Parse and validate a snapshot directory; raise :class:`SnapshotError` listing problems."""
    directory = Path(directory)
    if not directory.is_dir():
        raise SnapshotError(
            directory, [SnapshotProblem(str(directory), None, "is not a directory")]
        )
    problems: list[SnapshotProblem] = []
    frames: dict[str, pl.DataFrame] = {}
    for name, fields in schema.files.items():
        path = directory / name
        if not path.is_file():
            problems.append(SnapshotProblem(name, None, "file is missing"))
            continue
        frame, found = _parse_file(path, name, fields)
        problems += found
        frame, found = _check_ids(frame, name, fields)
        problems += found
        frames[name] = frame
    problems += _check_parents(frames, schema)
    if problems:
        order = list(schema.files)
        problems.sort(key=lambda p: (order.index(p.file) if p.file in order else -1, p.line or 0))
        raise SnapshotError(directory, problems)
    return Snapshot(schema, frames)


def _parse_file(
    path: Path, name: str, fields: tuple[str, ...]
) -> tuple[pl.DataFrame, list[SnapshotProblem]]:
    """The well-formed rows of one file (JSON objects with every field a string)."""
    columns: dict[str, list] = {f: [] for f in (*fields, LINE)}
    problems = []
    limit = max_document_bytes()  # once per file: reading the setting costs as much as a line
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            obj, problem = _parse_line(raw, fields, limit)
            if problem:
                problems.append(SnapshotProblem(name, lineno, problem))
            elif obj is not None:
                for f in fields:
                    columns[f].append(obj[f])
                columns[LINE].append(lineno)
    schema = {f: pl.String for f in fields} | {LINE: pl.Int64}
    return pl.DataFrame(columns, schema=schema), problems


#: What :func:`decode_line` gives for a blank line (skipped, not a problem).
BLANK = object()


def decode_line(raw: bytes) -> tuple[object, str | None]:
    """One JSONL line: (the value, None), (:data:`BLANK`, None) for a blank line, or (None,
    what is wrong), by Python's strict JSON decoder."""
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"is not valid UTF-8 ({exc.reason} at byte {exc.start})"
    if not line.strip():
        return BLANK, None
    try:
        return json.loads(line), None
    except json.JSONDecodeError as exc:
        return None, f"is not valid JSON ({exc.msg} at column {exc.colno})"
    except RecursionError:
        return None, "is not valid JSON (nested too deeply)"
    except ValueError as exc:  # e.g. an integer over Python's digit limit
        return None, f"is not valid JSON ({str(exc)[:80]})"


def check_fields(
    obj: object, fields: tuple[str, ...], escaped: bool = True, limit: int | None = None
) -> str | None:
    """What is wrong with a decoded line as a record of ``fields`` (every field a string of
    text), or None. ``escaped=False``: the line held no ``\\u`` escape, so no lone
    surrogate (the check is skipped). ``limit``: the bytes one field may hold (default
    :func:`max_document_bytes`; a caller checking many lines reads it once)."""
    if not isinstance(obj, dict):
        return "is not a JSON object"
    missing = [f for f in fields if f not in obj]
    if missing:
        return f"missing field{'s' if len(missing) > 1 else ''} " + ", ".join(missing)
    wrong = [f for f in fields if not isinstance(obj[f], str)]
    if wrong:
        return f"field{'s' if len(wrong) > 1 else ''} " + ", ".join(wrong) + " must be strings"
    if escaped and not all(_is_unicode(obj[f]) for f in fields):
        return "holds a lone surrogate escape (\\ud800-\\udfff), which is not text"
    limit = max_document_bytes() if limit is None else limit
    for f in fields:
        # A character is at most 4 bytes of UTF-8: only a long value is measured.
        if len(obj[f]) * 4 > limit and (size := len(obj[f].encode("utf-8", "replace"))) > limit:
            return (
                f"field {f} holds {size:,} bytes, over the {limit:,} one field may hold "
                "(HLTM_MAX_DOCUMENT_BYTES): split a long text into several documents"
            )
    return None


#: What one document's text may hold by default: about 250 pages of text. Building a leaf
#: costs time and memory in proportion to its documents (a 50 MB one kept ``hltm index`` busy
#: for more than ten minutes at 5 GB), so a bigger one is refused when it is loaded or written.
MAX_DOCUMENT_BYTES = 1_000_000


def max_document_bytes() -> int:
    """The size limit of one document's text (``HLTM_MAX_DOCUMENT_BYTES``, checked)."""
    return env.number("HLTM_MAX_DOCUMENT_BYTES", MAX_DOCUMENT_BYTES)


def _parse_line(raw: bytes, fields: tuple[str, ...], limit: int) -> tuple[dict | None, str | None]:
    """(the object, None), (None, None) for a blank line, or (None, what is wrong)."""
    obj, problem = decode_line(raw)
    if problem or obj is BLANK:
        return None, problem
    problem = check_fields(obj, fields, escaped=b"\\u" in raw, limit=limit)
    return (None, problem) if problem else (obj, None)


def _is_unicode(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_ids(
    frame: pl.DataFrame, name: str, fields: tuple[str, ...]
) -> tuple[pl.DataFrame, list[SnapshotProblem]]:
    """Drop rows with a malformed id (reported with why) or an id seen on an earlier line."""
    problems: list[SnapshotProblem] = []
    id_fields = [f for f in fields if f.endswith("_id")]
    bad = pl.lit(False)
    for f in id_fields:
        pattern = _DOC_ID if f == "doc_id" else _RAW_ID
        bad = bad | ~pl.col(f).str.contains(pattern) | pl.col(f).str.contains("..", literal=True)
    malformed = frame.filter(bad)
    for row in malformed.iter_rows(named=True):
        for f in id_fields:
            try:
                (check_doc_id if f == "doc_id" else check_raw_id)(row[f], f)
            except ValueError as exc:
                problems.append(SnapshotProblem(name, row[LINE], str(exc)))
    frame = frame.filter(~bad)
    id_field = fields[0]
    first = frame.with_columns(pl.col(LINE).min().over(id_field).alias("_first"))
    repeated = first.filter(pl.col(LINE) != pl.col("_first"))
    for row in repeated.select(id_field, LINE, "_first").iter_rows():
        problems.append(
            SnapshotProblem(
                name, row[1], f"duplicate {id_field} {row[0]!r} (first on line {row[2]})"
            )
        )
    return first.filter(pl.col(LINE) == pl.col("_first")).drop("_first"), problems


def _check_parents(frames: dict[str, pl.DataFrame], schema: TreeSchema) -> list[SnapshotProblem]:
    """Every row's parent id exists in its parent's file (documents: in the leaves' file)."""
    problems = []
    children = [(lv.file, schema.parent(lv.name)) for lv in schema.levels[1:]]
    children.append((DOCUMENTS_FILE, schema.leaf))
    for name, parent in children:
        if name not in frames or parent.file not in frames:
            continue
        field = parent.id_field
        known = frames[parent.file].select(pl.col(field))
        orphans = frames[name].join(known, on=field, how="anti").sort(LINE)
        for value, line in orphans.select(field, LINE).iter_rows():
            problems.append(
                SnapshotProblem(name, line, f"{field} {value!r} does not exist in {parent.file}")
            )
    return problems


# -- applying ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class LoadReport:
    """What a load changed. ``added`` ... ``moved`` are raw ids of leaves."""

    schema: TreeSchema
    counts: dict[str, int]
    added: tuple[str, ...]
    changed: tuple[str, ...]
    deleted: tuple[str, ...]
    moved: tuple[str, ...]
    #: Per non-leaf level, the raw ids the snapshot no longer lists.
    deleted_parents: dict[str, tuple[str, ...]]

    @property
    def leaves(self) -> int:
        return self.counts[self.schema.leaf.plural]

    @property
    def tree_changed(self) -> bool:
        return bool(self.added or self.deleted or self.moved or any(self.deleted_parents.values()))

    def as_dict(self) -> dict:
        leaves = self.schema.leaf.plural
        out: dict[str, int] = dict(self.counts)
        out |= {
            f"{leaves}_added": len(self.added),
            f"{leaves}_changed": len(self.changed),
            f"{leaves}_deleted": len(self.deleted),
            f"{leaves}_moved": len(self.moved),
        }
        for level in self.schema.parents_bottom_up:
            out[f"{self.schema.level(level).plural}_deleted"] = len(self.deleted_parents[level])
        return out


def _digests(leaves: pl.DataFrame, docs: pl.DataFrame, schema: TreeSchema) -> dict[str, str]:
    """Per leaf, a digest of its name and documents (length-prefixed fields, so no two
    different contents share an encoding)."""
    leaf_id = schema.leaf.id_field

    def enc(column: str) -> pl.Expr:
        return pl.concat_str(pl.col(column).str.len_bytes().cast(pl.String), pl.lit(":"), column)

    per_leaf = (
        docs.sort(leaf_id, "doc_id")
        .group_by(leaf_id, maintain_order=True)
        .agg(pl.concat_str(enc("doc_id"), enc("kind"), enc("text"), enc("updated_at")).str.join())
        .rename({"doc_id": "_docs"})
    )
    rows = (
        leaves.select(leaf_id, "name")
        .join(per_leaf, on=leaf_id, how="left")
        .select(leaf_id, pl.concat_str(enc("name"), pl.col("_docs").fill_null("")).alias("_all"))
    )
    return {
        leaf: hashlib.sha256(text.encode("utf-8")).hexdigest() for leaf, text in rows.iter_rows()
    }


def _sot_frame(con, table: str, columns: tuple[str, ...]) -> pl.DataFrame:
    frame = pl.from_arrow(con.sql(f"SELECT {', '.join(columns)} FROM {table}").to_arrow_table())
    return frame.cast({c: pl.String for c in columns})


def apply_snapshot(con, snap: Snapshot, source: str) -> LoadReport:
    """Replace the SOT tables with ``snap`` on an open connection (caller owns the transaction)."""
    schema = snap.schema
    leaf = schema.leaf
    parent_field = schema.parent(leaf.name).id_field
    old_ids = {
        lv.name: {r[0] for r in con.execute(f"SELECT {lv.id_field} FROM {lv.table}").fetchall()}
        for lv in schema.levels
    }
    old_parent = dict(
        con.execute(f"SELECT {leaf.id_field}, {parent_field} FROM {leaf.table}").fetchall()
    )
    old_digests = _digests(
        _sot_frame(con, leaf.table, schema.fields(leaf.name)),
        _sot_frame(con, f"sot_{DOCUMENTS}", schema.document_fields),
        schema,
    )
    leaves = snap.frame(leaf.file)
    new_digests = _digests(leaves, snap.frame(DOCUMENTS_FILE), schema)
    new_parent = dict(leaves.select(leaf.id_field, parent_field).iter_rows())
    added = sorted(set(new_parent) - set(old_parent))
    deleted = sorted(set(old_parent) - set(new_parent))
    common = set(new_parent) & set(old_parent)
    changed = sorted(p for p in common if old_digests.get(p) != new_digests[p])
    moved = sorted(p for p in common if old_parent[p] != new_parent[p])
    for name, fields in schema.files.items():
        table = f"sot_{name.removesuffix('.jsonl')}"
        rows = snap.frame(name).select(fields).to_arrow()  # noqa: F841 - scanned by DuckDB below
        con.execute(f"DELETE FROM {table}")
        con.execute(f"INSERT INTO {table} SELECT {', '.join(fields)} FROM rows")
    counts = {name.removesuffix(".jsonl"): snap.count(name) for name in schema.files}
    load_id = con.execute("SELECT coalesce(max(load_id), 0) + 1 FROM sot_loads").fetchone()[0]
    marks = ", ".join("?" * (len(counts) + 5))  # source, counts, 4 changes
    con.execute(
        f"INSERT INTO sot_loads VALUES (?, now(), {marks})",
        [load_id, source, *counts.values(), len(added), len(changed), len(deleted), len(moved)],
    )
    deleted_parents = {}
    for level in schema.parents_bottom_up:
        lv = schema.level(level)
        now = set(snap.frame(lv.file).get_column(lv.id_field).to_list())
        deleted_parents[level] = tuple(sorted(old_ids[level] - now))
    return LoadReport(
        schema,
        counts,
        tuple(added),
        tuple(changed),
        tuple(deleted),
        tuple(moved),
        deleted_parents,
    )


# -- reading the tree ------------------------------------------------------------------------


def read_topology(con, schema: TreeSchema) -> Topology:
    """Every node with its name, parent and path, level by level in path order."""
    levels: dict[str, dict[str, NodeInfo]] = {}
    paths: dict[str, str] = {}
    for lv in schema.levels:
        parent = schema.parent(lv.name)
        parent_col = parent.id_field if parent else "NULL"
        nodes = []
        for raw, parent_raw, name in con.execute(
            f"SELECT {lv.id_field}, {parent_col}, name FROM {lv.table}"
        ).fetchall():
            parent_id = f"{parent.name}:{parent_raw}" if parent else None
            if parent_id is not None and parent_id not in paths:
                continue  # an orphan (its parent was just deleted): not part of the tree
            path = f"{paths[parent_id]}/{raw}" if parent_id else raw
            nodes.append(NodeInfo(f"{lv.name}:{raw}", lv.name, raw, name, parent_id, path))
        nodes.sort(key=lambda n: n.path.split("/"))
        levels[lv.name] = {n.raw_id: n for n in nodes}
        paths.update((n.node_id, n.path) for n in nodes)
    return Topology(schema, levels)


def read_documents(con, schema: TreeSchema, leaf_ids: list[str]) -> dict[str, list[Document]]:
    """Documents of the given leaves, ordered by doc id."""
    out: dict[str, list[Document]] = {p: [] for p in leaf_ids}
    if not leaf_ids:
        return out
    leaf_field = schema.leaf.id_field
    rows = con.execute(
        f"""SELECT doc_id, {leaf_field}, kind, text, updated_at FROM sot_{DOCUMENTS}
            WHERE {leaf_field} IN (SELECT unnest(?)) ORDER BY {leaf_field}, doc_id""",
        [leaf_ids],
    ).fetchall()
    for row in rows:
        out[row[1]].append(Document(*row))
    return out
