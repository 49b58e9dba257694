"""API tokens (``hltm token``): bound to one existing scope node and to read or read+write,
shown once and stored only as a hash; revoked by id, and with the node they are scoped to
when it is deleted, leaving no trace of it."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from hltm_resources.config import Settings
from hltm_resources.stores import database
from hltm_resources.stores.tokens import TokenError, list_tokens, verify_token
from tests import test_live
from tests.test_deletion import raw_hits
from tests.test_live import hltm, service

home = test_live.home  # the fixture: a hand-written tree, loaded and indexed

pytestmark = pytest.mark.slow


def create(home: Path, *args: str) -> dict:
    done = hltm(home, "token", "create", *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_token_is_shown_once_and_kept_only_as_a_hash(home):
    made = create(home, "--scope", "seat:ana", "--name", "recruiting agent")
    assert made["rights"] == "read" and made["scope"] == "seat:ana"
    secret = made["token"].split("_", 2)[2]
    assert raw_hits(home, secret) == []  # no file of the home holds it
    settings = Settings(home=home)
    assert verify_token(settings, made["token"]).scope == "seat:ana"
    listed = hltm(home, "token", "list")
    assert made["id"] in listed.stdout and "recruiting agent" in listed.stdout
    assert made["token"] not in listed.stdout
    writer = create(home, "--scope", "account:acme", "--write")
    assert verify_token(settings, writer["token"]).can_write


def test_a_wrong_unknown_or_revoked_token_is_refused_alike(home):
    settings = Settings(home=home)
    made = create(home, "--scope", "project:p1")
    tampered = made["token"][:-2] + ("AA" if not made["token"].endswith("AA") else "BB")
    revoked = create(home, "--scope", "project:p2")
    assert hltm(home, "token", "revoke", revoked["id"]).returncode == 0
    messages = set()
    for value in (tampered, revoked["token"], "hltm_00000000_nothing", "not a token", ""):
        with pytest.raises(TokenError) as refused:
            verify_token(settings, value)
        messages.add(str(refused.value))
    assert len(messages) == 1 and "Bearer" in messages.pop()
    assert verify_token(settings, made["token"]).scope == "project:p1"


def test_a_token_needs_an_existing_scope_node(home):
    for scope, says in (
        ("seat:nobody", "no node seat:nobody"),
        ("galaxy:x", "unknown level"),
        ("ana", "malformed"),
    ):
        done = hltm(home, "token", "create", "--scope", scope)
        assert done.returncode == 2 and says in done.stderr, done.stderr
    assert list_tokens(Settings(home=home)) == []
    assert hltm(home, "token", "revoke", "abcdef12").returncode == 2


def test_deleting_a_node_revokes_its_tokens_and_leaves_no_trace_of_it(home):
    leaf = create(home, "--scope", "project:p3")
    seat = create(home, "--scope", "seat:ben")  # only emptied by the deletion: it stays
    done = hltm(home, "forget", "project:p3")
    assert done.returncode == 0, done.stderr
    left = {t.id for t in list_tokens(Settings(home=home))}
    assert left == {seat["id"]}
    assert leaf["id"] not in left
    assert b"project:p3" not in (home / "tokens.db").read_bytes()  # vacuumed too


def test_with_the_service_running_the_scope_is_checked_through_it(home):
    with service(home) as _:
        assert create(home, "--scope", "seat:ben")["scope"] == "seat:ben"
        done = hltm(home, "token", "create", "--scope", "seat:nobody")
        assert done.returncode == 2 and "no node seat:nobody" in done.stderr


def call(url: str, path: str, token: str | None = None, body: dict | None = None) -> tuple:
    """(status, JSON answer, raw bytes) of a GET (no body) or POST to the service."""
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url + path, data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            raw = response.read()
            return response.status, json.loads(raw), raw
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        return exc.code, json.loads(raw or b"{}"), raw


AT = "2026-12-07T00:00:00+00:00"
#: What only ben's seat holds (project p3, "Head Chef" in Porto).
BEN = (b"Porto", b"Chef", b"p3-d0")
#: Targets outside seat:ana: existing (ben's, the account) and not, spelled several ways.
OUTSIDE = (
    "seat:ben",
    "account:acme",
    "project:p3",
    "project:nope",
    "seat:nobody",
    "SEAT:ben",
    "seat:ana/../ben",
    "project:p3 ",
)


def test_a_reading_token_reaches_its_scope_and_nothing_else(home):
    reader = create(home, "--scope", "seat:ana")["token"]
    with service(home) as (_, url):
        status, out, _ = call(url, "/v1/ask", reader, {"question": "Where is p1 located?"})
        assert status == 200  # no scope named: the token's
        status, out, raw = call(
            url, "/v1/ask", reader, {"question": "Where is it located?", "scope": "project:p1"}
        )
        assert status == 200 and b"Lisbon" in raw
        assert call(url, "/v1/nodes/project%3Ap2", reader)[0] == 200
        for target in OUTSIDE:
            for status, out, raw in (
                call(url, "/v1/ask", reader, {"question": "Where is it?", "scope": target}),
                call(url, "/v1/nodes/" + urllib.parse.quote(target, safe=""), reader),
            ):
                assert status == 404, (target, out)
                assert out == {"error": f"no node {target!r} in this scope"}
                assert not any(word in raw for word in BEN)
        write = {"changes": [{"op": "delete", "level": "document", "id": "p1-d0"}]}
        status, out, _ = call(url, "/v1/changes", reader, write)
        assert status == 403 and "only read" in out["error"]


def test_a_writing_token_writes_only_under_its_scope(home):
    writer = create(home, "--scope", "seat:ana", "--write")["token"]

    def doc(doc_id: str, project: str) -> dict:
        record = {"doc_id": doc_id, "project_id": project, "kind": "note", "text": "x"}
        return {"op": "upsert", "level": "document", "record": record | {"updated_at": AT}}

    new_project = {
        "op": "upsert",
        "level": "project",
        "record": {"project_id": "p9", "seat_id": "ben", "name": "Sommelier", "updated_at": AT},
    }
    refused = (
        [doc("n1", "p3")],  # into ben's project
        [doc("p3-d0", "p1")],  # ben's document moved here
        [{"op": "delete", "level": "document", "id": "p3-d0"}],
        [{"op": "delete", "level": "document", "id": "nothing"}],
        [{"op": "delete", "level": "project", "id": "p3"}],
        [new_project],  # a project under ben
        [doc("n2", "p1"), doc("n3", "p3")],  # one change outside: the batch is refused
    )
    with service(home) as (_, url):
        for changes in refused:
            status, out, raw = call(url, "/v1/changes", writer, {"changes": changes})
            assert status == 404 and out["error"].endswith(" in this scope"), (changes, out)
            assert not any(word in raw for word in BEN if word != b"p3-d0")
        made = [dict(new_project, record=new_project["record"] | {"seat_id": "ana"})]
        status, out, _ = call(url, "/v1/changes", writer, {"changes": [*made, doc("n4", "p9")]})
        assert status == 200, out  # a project made under the scope, with its first document
        delete = {"changes": [{"op": "delete", "level": "project", "id": "p2"}]}
        status, out, raw = call(url, "/v1/changes", writer, delete)
        assert status == 200 and out["deleted"] == ["project:p2"], out
        assert "seat:ana" in out["emptied"] and b"acme" not in raw  # what it sees: its scope
        status, out, raw = call(url, "/v1/status", writer)
        assert status == 200 and "home" not in out and str(home).encode() not in raw
    with database.connect(home / "hltm.duckdb", read_only=True) as con:
        docs = dict(con.execute("SELECT doc_id, project_id FROM sot_documents").fetchall())
    assert docs["p3-d0"] == "p3" and docs["n4"] == "p9" and "p2-d0" not in docs
    assert not {"n1", "n2", "n3"} & set(docs)


def test_a_service_on_another_address_takes_requests_with_a_token_only(home):
    reader = create(home, "--scope", "seat:ana")["token"]
    with service(home, None, "--host", "0.0.0.0") as (_, url):
        status, out, _ = call(url, "/v1/status")
        assert status == 401 and "Bearer" in out["error"]
        assert call(url, "/v1/status", "hltm_00000000_forged")[0] == 401
        assert call(url, "/v1/status", reader)[0] == 200
