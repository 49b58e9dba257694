"""Bad input, refused in one line: exit 2, ``file:line`` for snapshots, no traceback, and the
home's files exactly as they were.

Each case corrupts one line of a good snapshot (or passes a bad argument) and runs the real
command line in this process.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hltm_assets.cli import main
from hltm_resources.config import Settings
from hltm_resources.stores import database
from query import Memory
from tests.conftest import write_tree

NESTED = b"[" * 100_000 + b"\n"
HUGE = "9" * 5000


def good_snapshot(directory: Path) -> Path:
    return write_tree(
        directory,
        {"ana": "acme"},
        [("p1", "ana", "Data Engineer"), ("p2", "ana", "Nurse")],
        [("p1-d", "p1", "Data Engineer, Lisbon"), ("p2-d", "p2", "Nurse, Dublin")],
    )


def project(**fields: object) -> bytes:
    row = {"project_id": "p9", "seat_id": "ana", "name": "n", "updated_at": "2026-05-01"}
    return (json.dumps(row | fields) + "\n").encode()


def document(**fields: object) -> bytes:
    row = {"doc_id": "p1-x", "project_id": "p1", "kind": "note", "text": "t"}
    row["updated_at"] = "2026-05-01"
    return (json.dumps(row | fields) + "\n").encode()


# (file, replacement of line 2 or b"" to append, expected words in the error)
SNAPSHOT_CASES = {
    "truncated JSON": ("projects.jsonl", b'{"project_id": "x", "seat_id": \n', "not valid JSON"),
    "trailing garbage": ("projects.jsonl", project()[:-1] + b" x\n", "not valid JSON"),
    "not UTF-8": ("documents.jsonl", b'{"doc_id": "a\xff"}\n', "not valid UTF-8"),
    "binary garbage": ("documents.jsonl", b"\x00\x01\x02\x9f\n", "not valid"),
    "array": ("projects.jsonl", b"[1, 2]\n", "not a JSON object"),
    "string": ("projects.jsonl", b'"hello"\n', "not a JSON object"),
    "true": ("projects.jsonl", b"true\n", "not a JSON object"),
    "empty object": ("projects.jsonl", b"{}\n", "missing fields"),
    "missing text": ("documents.jsonl", b'{"doc_id": "d", "project_id": "p1"}\n', "missing"),
    "a document over the size limit": (
        "documents.jsonl",
        document(text="x" * 1_000_001),
        "1,000,001 bytes, over the 1,000,000 one field may hold (HLTM_MAX_DOCUMENT_BYTES)",
    ),
    "lone surrogate in text": (
        "documents.jsonl",
        b'{"doc_id": "p1-s", "project_id": "p1", "kind": "k", "updated_at": "2026-05-01", '
        b'"text": "a\\ud800b"}\n',
        "surrogate",
    ),
    "lone low surrogate in name": ("projects.jsonl", project()[:-3] + b'\\udfff"}\n', "surrogate"),
    "100k nested brackets": ("documents.jsonl", NESTED, "nested too deeply"),
    "5000-digit number as a field": (
        "documents.jsonl",
        b'{"doc_id": "p1-n", "project_id": "p1", "kind": "k", "updated_at": "2026-05-01", '
        + f'"text": {HUGE}}}\n'.encode(),
        "not valid JSON",
    ),
    "5000-digit number in an extra field": (
        "documents.jsonl",
        document(doc_id="p1-m")[:-2] + f', "n": {HUGE}}}\n'.encode(),
        "not valid JSON",
    ),
    "number for a name": ("projects.jsonl", project(name=3), "must be strings"),
    "null text": ("documents.jsonl", document(text=None), "must be strings"),
    "object text": ("documents.jsonl", document(text={"a": 1}), "must be strings"),
    "list text": ("documents.jsonl", document(text=["a"]), "must be strings"),
    "NaN name": ("projects.jsonl", project()[:-1].replace(b'"n"', b"NaN") + b"\n", "strings"),
    "Infinity date": (
        "projects.jsonl",
        project()[:-1].replace(b'"2026-05-01"', b"Infinity") + b"\n",
        "strings",
    ),
    "number date": ("projects.jsonl", project(updated_at=20260501), "must be strings"),
    "empty id": ("projects.jsonl", project(project_id=""), "not a valid id"),
    "id with a slash": ("projects.jsonl", project(project_id="a/b"), "not a valid id"),
    "id with dots": ("projects.jsonl", project(project_id="a..b"), "not a valid id"),
    "id with a space": ("projects.jsonl", project(project_id="a b"), "not a valid id"),
    "id with a quote": ("projects.jsonl", project(project_id="a'; DROP TABLE x; --"), "valid id"),
    "id too long": ("projects.jsonl", project(project_id="a" * 500), "not a valid id"),
    "non-ASCII id": ("projects.jsonl", project(project_id="pü"), "not a valid id"),
    "control character id": ("projects.jsonl", project(project_id="p\u0001"), "not a valid id"),
    "bad doc id": ("documents.jsonl", document(doc_id="../etc/passwd"), "not a valid"),
    "duplicate project": ("projects.jsonl", project(project_id="p1"), "duplicate project_id"),
    "unknown seat": ("projects.jsonl", project(seat_id="nobody"), "does not exist"),
    "unknown project": ("documents.jsonl", document(project_id="p404"), "does not exist"),
    "unknown account": (
        "seats.jsonl",
        b'{"seat_id": "s9", "account_id": "nowhere", "name": "S"}\n',
        "does not exist",
    ),
    "id as a number": ("projects.jsonl", project(project_id=7), "must be strings"),
}

ARGUMENT_CASES = {
    "blank question": (["ask", "   ", "--scope", "seat:ana"], "question"),
    "empty question": (["ask", "", "--scope", "seat:ana"], "question"),
    "no scope": (["ask", "Which searches?"], "--scope"),
    "scope without a level": (["ask", "q?", "--scope", "ana"], "scope"),
    "empty scope id": (["ask", "q?", "--scope", "project:"], "scope"),
    "scope escaping with dots": (["ask", "q?", "--scope", "project:../x"], "scope"),
    "unknown level": (["ask", "q?", "--scope", "galaxy:1"], "scope"),
    "scope not in the tree": (["ask", "q?", "--scope", "project:p404"], "not in the tree"),
    "delete an unknown node": (["delete", "project:p404"], "not in the source of truth"),
    "delete a malformed id": (["delete", "project:a/b"], "not a valid id"),
    "load a missing directory": (["load", "/nonexistent/snapshot"], "not a directory"),
    "load --rebuild on a home": (["load", "--rebuild", "/nonexistent/snapshot"], "distributed"),
    "--queries without --out": (["ask", "--queries", "q.jsonl"], "--out"),
}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("bad-inputs")
    good = good_snapshot(root / "good")
    assert main(["--home", str(root / "home"), "load", str(good)]) == 0
    assert main(["--home", str(root / "home"), "index", "--json"]) == 0
    return root


def home_bytes(home: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(home)): p.read_bytes()
        for p in sorted(home.rglob("*"))
        if p.is_file() and "history" not in p.parts and p.name != "hltm.lock"
    }


def refused(capsys, argv: list[str]) -> str:
    code = main(argv)
    out = capsys.readouterr()
    assert code == 2, out
    assert "Traceback" not in out.err
    lines = out.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hltm: error: "), out.err
    return lines[0]


@pytest.mark.parametrize("case", list(SNAPSHOT_CASES))
def test_a_bad_snapshot_line_is_refused_with_its_file_and_line(built, tmp_path, capsys, case):
    file, content, words = SNAPSHOT_CASES[case]
    snap = tmp_path / "snap"
    shutil.copytree(built / "good", snap)
    lines = (snap / file).read_bytes().splitlines(keepends=True)
    lines.insert(1, content)
    (snap / file).write_bytes(b"".join(lines))
    home = built / "home"
    before = home_bytes(home)
    error = refused(capsys, ["--home", str(home), "load", str(snap)])
    assert f"{file}:2: " in error
    assert words in error
    assert home_bytes(home) == before


def test_the_corpus_is_at_least_forty_cases():
    assert len(SNAPSHOT_CASES) + len(ARGUMENT_CASES) >= 40


@pytest.mark.parametrize("case", list(ARGUMENT_CASES))
def test_a_bad_argument_is_refused_in_one_line(built, capsys, case):
    argv, words = ARGUMENT_CASES[case]
    home = built / "home"
    before = home_bytes(home)
    error = refused(capsys, ["--home", str(home), *argv])
    assert words in error
    assert home_bytes(home) == before


@pytest.mark.parametrize(
    "argv",
    [
        ["ask", "   ", "--scope", "seat:ana", "--json"],
        ["ask", "Which searches?", "--scope", "project:../x", "--json"],
        ["ask", "Which searches?", "--scope", "project:p404", "--json"],
    ],
)
def test_ask_json_prints_one_object_with_the_error(built, capsys, argv):
    code = main(["--home", str(built / "home"), *argv])
    out = capsys.readouterr()
    assert code == 2
    reply = json.loads(out.out)  # exactly one JSON document
    assert reply["error"] and reply["error_type"]


def test_ask_json_prints_one_object_with_the_answer(built, capsys):
    code = main(["--home", str(built / "home"), "ask", "Where?", "--scope", "seat:ana", "--json"])
    assert code == 0
    assert "error" not in json.loads(capsys.readouterr().out)


def test_a_home_that_cannot_be_written_still_answers(built, monkeypatch, recwarn):
    real = database.connect

    def no_writes(path, read_only=False, **kw):
        if not read_only:
            raise PermissionError(f"[Errno 13] Permission denied: {path}")
        return real(path, read_only=True, **kw)

    monkeypatch.setattr(database, "connect", no_writes)

    with Memory(Settings(home=built / "home")) as mem:
        result = mem.ask("Which searches are in Lisbon?", scope="seat:ana")
    assert "project:p1" in result.references
    assert any("query log" in str(w.message) for w in recwarn)


#: Values no numeric setting takes: not numbers, not whole, not finite, below the least.
BAD_NUMBERS = ("abc", "", "1.5x", "nan", "inf", "-1", "1e400")
NUMERIC_SETTINGS = {
    "HLTM_CONCURRENCY": ("0", "2.5"),
    "HLTM_TIMEOUT_S": ("0", "-0.5"),
    "HLTM_MAX_RETRIES": ("-1", "1.5"),
    "HLTM_MAX_INPUT_TOKENS": ("0", "1e3"),
    "HLTM_LLM_CONTEXT": ("0", "12.0"),
    "HLTM_SENSOR_INTERVAL_S": ("0",),
    "HLTM_LOCK_WAIT": ("-1", "inf"),
    "HLTM_VECTOR_INDEX_MIN_ROWS": ("0", "1e9"),
    "HLTM_MAX_DOCUMENT_BYTES": ("999", "1.5e6"),
}


@pytest.mark.parametrize("name", list(NUMERIC_SETTINGS))
def test_a_numeric_setting_no_number_of_its_range_is_refused_before_any_work(
    built, capsys, monkeypatch, name
):
    home = built / "home"
    before = home_bytes(home)
    for value in (*BAD_NUMBERS, *NUMERIC_SETTINGS[name]):
        if not value:
            continue  # unset: the default
        monkeypatch.setenv(name, value)
        for argv in (["ask", "Where?", "--scope", "seat:ana"], ["index", "--json"]):
            error = refused(capsys, ["--home", str(home), *argv])
            assert name in error and "set it to" in error, (value, error)
        monkeypatch.delenv(name)
    assert home_bytes(home) == before


@pytest.mark.parametrize("scope", ["team:x", "seat:ana", "org:acme"])
def test_ask_under_another_tree_than_the_homes_is_refused_as_load_and_index_are(
    built, capsys, monkeypatch, scope
):
    monkeypatch.setenv("HLTM_TREE", "org>team>seat>project")
    home = built / "home"
    for argv in (["ask", "Where?", "--scope", scope], ["index", "--json"]):
        error = refused(capsys, ["--home", str(home), *argv])
        assert "holds a tree 'account>seat>project'" in error and "HLTM_TREE=" in error, error


def test_a_document_over_the_size_limit_is_refused_when_written_too_and_the_limit_is_a_setting(
    monkeypatch,
):
    from hltm_resources.schema import DEFAULT_SCHEMA
    from hltm_resources.stores.changes import ChangeError, parse_changes

    record = json.loads(document(text="é" * 500_001))  # 1,000,002 bytes of UTF-8
    change = {"op": "upsert", "level": "document", "record": record}
    with pytest.raises(ChangeError, match="HLTM_MAX_DOCUMENT_BYTES"):
        parse_changes([change], DEFAULT_SCHEMA, "remember")
    monkeypatch.setenv("HLTM_MAX_DOCUMENT_BYTES", "2000000")
    assert [c.record["text"] for c in parse_changes([change], DEFAULT_SCHEMA, "remember")] == [
        record["text"]
    ]
