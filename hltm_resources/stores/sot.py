"""The source of truth (SOT): snapshot files, their validation, and loading them into DuckDB.

A snapshot is a directory of four JSONL files (the public contract, see README):

- ``accounts.jsonl``: ``{"account_id", "name"}``
- ``seats.jsonl``: ``{"seat_id", "account_id", "name"}``
- ``projects.jsonl``: ``{"project_id", "seat_id", "name", "updated_at"}``
- ``documents.jsonl``: ``{"doc_id", "project_id", "kind", "text", "updated_at"}``

A snapshot is the whole truth: loading it upserts every row, deletes projects (and their
documents) that it no longer lists, and moves projects whose ``seat_id`` changed. Everything is
validated before anything is written, and the write is one transaction.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from hltm_resources.ids import check_doc_id, check_raw_id
from hltm_resources.models import Document, NodeInfo, stable_hash

FILES: dict[str, tuple[str, ...]] = {
    "accounts.jsonl": ("account_id", "name"),
    "seats.jsonl": ("seat_id", "account_id", "name"),
    "projects.jsonl": ("project_id", "seat_id", "name", "updated_at"),
    "documents.jsonl": ("doc_id", "project_id", "kind", "text", "updated_at"),
}
_ID_FIELDS = {
    "accounts.jsonl": "account_id",
    "seats.jsonl": "seat_id",
    "projects.jsonl": "project_id",
    "documents.jsonl": "doc_id",
}
_PARENTS = {
    "seats.jsonl": ("account_id", "accounts.jsonl"),
    "projects.jsonl": ("seat_id", "seats.jsonl"),
    "documents.jsonl": ("project_id", "projects.jsonl"),
}
MAX_ERRORS = 20


@dataclass(frozen=True)
class SnapshotProblem:
    file: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.message}"


class SnapshotError(ValueError):
    """A snapshot that cannot be loaded; nothing was written."""

    def __init__(self, directory: Path, problems: list[SnapshotProblem]):
        self.directory = directory
        self.problems = problems
        shown = "\n".join(f"  {p}" for p in problems[:MAX_ERRORS])
        extra = len(problems) - MAX_ERRORS
        more = f"\n  ... and {extra} more" if extra > 0 else ""
        super().__init__(
            f"snapshot {directory} was not loaded ({len(problems)} problem"
            f"{'s' if len(problems) != 1 else ''}; the source of truth is unchanged):\n"
            f"{shown}{more}"
        )


@dataclass
class Snapshot:
    """Validated rows of the four files."""

    accounts: list[dict] = field(default_factory=list)
    seats: list[dict] = field(default_factory=list)
    projects: list[dict] = field(default_factory=list)
    documents: list[dict] = field(default_factory=list)

    def rows(self, name: str) -> list[dict]:
        return getattr(self, name.removesuffix(".jsonl"))


def read_snapshot(directory: str | Path) -> Snapshot:
    """Parse and validate a snapshot directory; raise :class:`SnapshotError` listing problems."""
    directory = Path(directory)
    problems: list[SnapshotProblem] = []
    if not directory.is_dir():
        raise SnapshotError(
            directory, [SnapshotProblem(str(directory), None, "is not a directory")]
        )
    snap = Snapshot()
    lines_of: dict[str, dict[str, int]] = {}
    for name, fields in FILES.items():
        path = directory / name
        if not path.is_file():
            problems.append(SnapshotProblem(name, None, "file is missing"))
            continue
        rows = snap.rows(name)
        id_field = _ID_FIELDS[name]
        seen: dict[str, int] = {}
        with path.open("rb") as fh:
            for lineno, raw in enumerate(fh, start=1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    problems.append(
                        SnapshotProblem(
                            name, lineno, f"is not valid UTF-8 ({exc.reason} at byte {exc.start})"
                        )
                    )
                    continue
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    problems.append(
                        SnapshotProblem(
                            name, lineno, f"is not valid JSON ({exc.msg} at column {exc.colno})"
                        )
                    )
                    continue
                if not isinstance(obj, dict):
                    problems.append(SnapshotProblem(name, lineno, "is not a JSON object"))
                    continue
                missing = [f for f in fields if f not in obj]
                if missing:
                    problems.append(
                        SnapshotProblem(
                            name,
                            lineno,
                            f"missing field{'s' if len(missing) > 1 else ''} " + ", ".join(missing),
                        )
                    )
                    continue
                wrong = [f for f in fields if not isinstance(obj[f], str)]
                if wrong:
                    problems.append(
                        SnapshotProblem(
                            name,
                            lineno,
                            "field"
                            f"{'s' if len(wrong) > 1 else ''} "
                            + ", ".join(wrong)
                            + " must be strings",
                        )
                    )
                    continue
                bad = []
                for f in (f for f in fields if f.endswith("_id")):
                    try:
                        (check_doc_id if f == "doc_id" else check_raw_id)(obj[f], f)
                    except ValueError as exc:
                        bad.append(str(exc))
                if bad:
                    problems.extend(SnapshotProblem(name, lineno, b) for b in bad)
                    continue
                key = obj[id_field]
                if key in seen:
                    problems.append(
                        SnapshotProblem(
                            name,
                            lineno,
                            f"duplicate {id_field} {key!r} (first on line {seen[key]})",
                        )
                    )
                    continue
                seen[key] = lineno
                rows.append({f: obj[f] for f in fields})
        lines_of[name] = seen
    for name, (parent_field, parent_file) in _PARENTS.items():
        known = lines_of.get(parent_file)
        if known is None or name not in lines_of:
            continue
        for row in snap.rows(name):
            if row[parent_field] not in known:
                line = lines_of[name][row[_ID_FIELDS[name]]]
                problems.append(
                    SnapshotProblem(
                        name,
                        line,
                        f"{parent_field} {row[parent_field]!r} does not exist in {parent_file}",
                    )
                )
    if problems:
        problems.sort(
            key=lambda p: (list(FILES).index(p.file) if p.file in FILES else -1, p.line or 0)
        )
        raise SnapshotError(directory, problems)
    return snap


def _table(rows: list[dict], fields: tuple[str, ...]) -> pa.Table:
    return pa.table({f: pa.array([r[f] for r in rows], type=pa.string()) for f in fields})


@dataclass(frozen=True)
class LoadReport:
    accounts: int
    seats: int
    projects: int
    documents: int
    added: tuple[str, ...]
    changed: tuple[str, ...]
    deleted: tuple[str, ...]
    moved: tuple[str, ...]
    deleted_seats: tuple[str, ...]
    deleted_accounts: tuple[str, ...]

    def as_dict(self) -> dict:
        return {
            "accounts": self.accounts,
            "seats": self.seats,
            "projects": self.projects,
            "documents": self.documents,
            "projects_added": len(self.added),
            "projects_changed": len(self.changed),
            "projects_deleted": len(self.deleted),
            "projects_moved": len(self.moved),
            "seats_deleted": len(self.deleted_seats),
            "accounts_deleted": len(self.deleted_accounts),
        }


def project_content_hashes(con, project_ids: list[str] | None = None) -> dict[str, str]:
    """Per project, a hash of its name and documents as the SOT holds them now."""
    where = "" if project_ids is None else "WHERE p.project_id IN (SELECT unnest(?))"
    params = [] if project_ids is None else [project_ids]
    rows = con.execute(
        f"""
        SELECT p.project_id, p.name, d.doc_id, d.kind, d.text, d.updated_at
        FROM sot_projects p LEFT JOIN sot_documents d USING (project_id) {where}
        ORDER BY p.project_id, d.doc_id
        """,
        params,
    ).fetchall()
    grouped: dict[str, list] = {}
    for pid, name, *doc in rows:
        grouped.setdefault(pid, [name])
        if doc[0] is not None:
            grouped[pid].append(doc)
    return {pid: stable_hash(v) for pid, v in grouped.items()}


def _snapshot_hashes(snap: Snapshot) -> dict[str, str]:
    docs: dict[str, list] = {p["project_id"]: [p["name"]] for p in snap.projects}
    for d in sorted(snap.documents, key=lambda d: (d["project_id"], d["doc_id"])):
        docs[d["project_id"]].append([d["doc_id"], d["kind"], d["text"], d["updated_at"]])
    return {pid: stable_hash(v) for pid, v in docs.items()}


def apply_snapshot(con, snap: Snapshot, source: str) -> LoadReport:
    """Replace the SOT tables with ``snap`` on an open connection (caller owns the transaction)."""
    old_projects = dict(con.execute("SELECT project_id, seat_id FROM sot_projects").fetchall())
    old_seats = {r[0] for r in con.execute("SELECT seat_id FROM sot_seats").fetchall()}
    old_accounts = {r[0] for r in con.execute("SELECT account_id FROM sot_accounts").fetchall()}
    old_hashes = project_content_hashes(con)
    new_hashes = _snapshot_hashes(snap)
    new_projects = {p["project_id"]: p["seat_id"] for p in snap.projects}
    added = sorted(set(new_projects) - set(old_projects))
    deleted = sorted(set(old_projects) - set(new_projects))
    common = set(new_projects) & set(old_projects)
    changed = sorted(p for p in common if old_hashes.get(p) != new_hashes[p])
    moved = sorted(p for p in common if old_projects[p] != new_projects[p])
    for name, fields in FILES.items():
        table = name.removesuffix(".jsonl")
        arrow = _table(snap.rows(name), fields)  # noqa: F841 - scanned by DuckDB below
        con.execute(f"DELETE FROM sot_{table}")
        con.execute(f"INSERT INTO sot_{table} SELECT {', '.join(fields)} FROM arrow")
    load_id = con.execute("SELECT coalesce(max(load_id), 0) + 1 FROM sot_loads").fetchone()[0]
    con.execute(
        "INSERT INTO sot_loads VALUES (?, now(), ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            load_id,
            source,
            len(snap.accounts),
            len(snap.seats),
            len(snap.projects),
            len(snap.documents),
            len(added),
            len(changed),
            len(deleted),
            len(moved),
        ],
    )
    new_seats = {s["seat_id"] for s in snap.seats}
    new_accounts = {a["account_id"] for a in snap.accounts}
    return LoadReport(
        len(snap.accounts),
        len(snap.seats),
        len(snap.projects),
        len(snap.documents),
        tuple(added),
        tuple(changed),
        tuple(deleted),
        tuple(moved),
        tuple(sorted(old_seats - new_seats)),
        tuple(sorted(old_accounts - new_accounts)),
    )


# -- reading the tree ------------------------------------------------------------------------


@dataclass(frozen=True)
class Topology:
    """The tree as the SOT holds it, ordered by path (siblings are contiguous)."""

    accounts: dict[str, NodeInfo]
    seats: dict[str, NodeInfo]
    projects: dict[str, NodeInfo]

    def level(self, level: str) -> dict[str, NodeInfo]:
        return {"account": self.accounts, "seat": self.seats, "project": self.projects}[level]

    def children(self, node: NodeInfo) -> list[NodeInfo]:
        pool = self.seats if node.level == "account" else self.projects
        return [n for n in pool.values() if n.parent_id == node.node_id]

    def node(self, node_id: str) -> NodeInfo | None:
        level, raw = node_id.split(":", 1)
        return self.level(level).get(raw) if level in ("account", "seat", "project") else None

    def counts(self) -> dict[str, int]:
        return {
            "accounts": len(self.accounts),
            "seats": len(self.seats),
            "projects": len(self.projects),
        }


def read_topology(con) -> Topology:
    """Accounts, seats and projects with names, parents and paths."""
    accounts = {
        a: NodeInfo(f"account:{a}", "account", a, name, None, a)
        for a, name in con.execute(
            "SELECT account_id, name FROM sot_accounts ORDER BY account_id"
        ).fetchall()
    }
    seats: dict[str, NodeInfo] = {}
    for s, a, name in con.execute(
        "SELECT seat_id, account_id, name FROM sot_seats ORDER BY account_id, seat_id"
    ).fetchall():
        seats[s] = NodeInfo(f"seat:{s}", "seat", s, name, f"account:{a}", f"{a}/{s}")
    projects: dict[str, NodeInfo] = {}
    for p, s, name in con.execute(
        """SELECT p.project_id, p.seat_id, p.name FROM sot_projects p
           JOIN sot_seats s USING (seat_id) ORDER BY s.account_id, p.seat_id, p.project_id"""
    ).fetchall():
        projects[p] = NodeInfo(
            f"project:{p}", "project", p, name, f"seat:{s}", f"{seats[s].path}/{p}"
        )
    return Topology(accounts, seats, projects)


def read_documents(con, project_ids: list[str]) -> dict[str, list[Document]]:
    """Documents of the given projects, ordered by doc id."""
    out: dict[str, list[Document]] = {p: [] for p in project_ids}
    if not project_ids:
        return out
    rows = con.execute(
        """SELECT doc_id, project_id, kind, text, updated_at FROM sot_documents
           WHERE project_id IN (SELECT unnest(?)) ORDER BY project_id, doc_id""",
        [project_ids],
    ).fetchall()
    for row in rows:
        out[row[1]].append(Document(*row))
    return out


def snapshot_counts(snap: Snapshot) -> Counter:
    return Counter({name: len(snap.rows(name)) for name in FILES})
