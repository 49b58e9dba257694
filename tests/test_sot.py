"""Snapshot validation and loading: clear errors with file and line, nothing half-written."""

import shutil

import pytest

from hltm_resources.indexing.loading import load_snapshot
from hltm_resources.stores import database
from hltm_resources.stores.sot import SnapshotError, read_snapshot
from tests.conftest import write_jsonl


def sot_rows(settings):
    with database.connect(settings.duckdb_path, read_only=True) as con:
        return {
            t: sorted(con.execute(f"SELECT * FROM sot_{t}").fetchall())
            for t in ("accounts", "seats", "projects", "documents")
        }


@pytest.fixture
def snap(tmp_path, snapshot_dir):
    target = tmp_path / "snap"
    shutil.copytree(snapshot_dir, target)
    return target


def corrupt(path, lineno, new_line):
    lines = path.read_bytes().splitlines(keepends=True)
    lines[lineno - 1] = new_line
    path.write_bytes(b"".join(lines))


@pytest.mark.parametrize(
    "file,line,content,message",
    [
        ("projects.jsonl", 2, b'{"project_id": "x1", "seat_id": \n', "is not valid JSON"),
        (
            "projects.jsonl",
            3,
            b'{"project_id": "x2", "seat_id": "nope", "name": "n", "updated_at": "2026"}\n',
            "seat_id 'nope' does not exist in seats.jsonl",
        ),
        (
            "documents.jsonl",
            1,
            b'{"doc_id": "z", "project_id": "p00001"}\n',
            "missing fields kind, text, updated_at",
        ),
        (
            "documents.jsonl",
            4,
            b'{"doc_id": "z\xff", "project_id": "p00001"}\n',
            "is not valid UTF-8",
        ),
        ("seats.jsonl", 2, b"[1, 2]\n", "is not a JSON object"),
        (
            "accounts.jsonl",
            1,
            b'{"account_id": "a\'; DROP TABLE x; --", "name": "n"}\n',
            "is not a valid id",
        ),
    ],
)
def test_bad_snapshot_names_file_and_line_and_changes_nothing(
    settings, snap, snapshot_dir, file, line, content, message
):
    load_snapshot(settings, snapshot_dir)
    before = sot_rows(settings)
    corrupt(snap / file, line, content)
    with pytest.raises(SnapshotError) as err:
        load_snapshot(settings, snap)
    assert f"{file}:{line}: " in str(err.value)
    assert message in str(err.value)
    assert "unchanged" in str(err.value)
    assert sot_rows(settings) == before


def test_duplicate_ids_point_at_both_lines(snap):
    rows = (snap / "seats.jsonl").read_text().splitlines()
    (snap / "seats.jsonl").write_text("\n".join(rows + [rows[0]]) + "\n")
    with pytest.raises(
        SnapshotError,
        match=rf"seats.jsonl:{len(rows) + 1}: duplicate seat_id .* "
        r"\(first on line 1\)",
    ):
        read_snapshot(snap)


def test_missing_file_is_reported(snap):
    (snap / "accounts.jsonl").unlink()
    with pytest.raises(SnapshotError, match="accounts.jsonl: file is missing"):
        read_snapshot(snap)


def test_reload_computes_adds_changes_deletes_and_moves(settings, snap, world):
    first = load_snapshot(settings, snap)
    assert len(first.added) == len(world.projects)
    projects = [dict(p) for p in world.projects]
    gone, moved, edited = projects[0]["project_id"], projects[1], projects[2]["project_id"]
    other_seat = next(s["seat_id"] for s in world.seats if s["seat_id"] != moved["seat_id"])
    moved["seat_id"] = other_seat
    write_jsonl(
        snap / "projects.jsonl",
        [p for p in projects if p["project_id"] != gone]
        + [
            {"project_id": "new1", "seat_id": other_seat, "name": "New", "updated_at": "2026-12-01"}
        ],
    )
    docs = [dict(d) for d in world.documents if d["project_id"] != gone]
    for d in docs:
        if d["project_id"] == edited:
            d["text"] += " Edited."
            break
    write_jsonl(snap / "documents.jsonl", docs)
    second = load_snapshot(settings, snap)
    assert second.added == ("new1",)
    assert second.deleted == (gone,)
    assert second.moved == (moved["project_id"],)
    assert second.changed == (edited,)
    with database.connect(settings.duckdb_path, read_only=True) as con:
        assert (
            con.execute(
                "SELECT count(*) FROM sot_documents WHERE project_id = ?", [gone]
            ).fetchone()[0]
            == 0
        )
        assert (
            con.execute(
                "SELECT seat_id FROM sot_projects WHERE project_id = ?", [moved["project_id"]]
            ).fetchone()[0]
            == other_seat
        )
