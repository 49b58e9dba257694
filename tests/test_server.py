"""One server for agents and people (``hltm serve``): the JSON API read with httpx against
uvicorn on loopback, the MCP tools through the ``mcp`` SDK's own client over streamable HTTP
and over stdio (``hltm mcp``), and every request held to its token's scope.

The home is a hand-written world of two accounts: ``acme`` (seats ana and bruno) and
``globex`` (seat cyrus). Tokens of seat ana must never see a byte of bruno's or globex's
memory, nor learn whether something outside exists.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import time
from pathlib import Path
from urllib.parse import quote

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import write_tree
from tests.test_live import ROOT, hltm, service

pytestmark = pytest.mark.slow

QUESTION = "Where are the jobs usually located?"
#: What only other scopes hold (their ids, names, places and words): none may reach ana.
ELSEWHERE = (
    "bruno",
    "cyrus",
    "globex",
    "pastry",
    "airline",
    "porto",
    "reykjavik",
    "zanzibar",
    "quokka",
    "p3-d0",
    "p4-d0",
    "project:p3",
    "project:p4",
)


def world(directory: Path) -> Path:
    return write_tree(
        directory,
        {"ana": "acme", "bruno": "acme", "cyrus": "globex"},
        [
            ("p1", "ana", "Data Engineer"),
            ("p2", "ana", "Nurse"),
            ("p3", "bruno", "Pastry Chef"),
            ("p4", "cyrus", "Airline Pilot"),
        ],
        [
            ("p1-d0", "p1", '{"job_title": "Data Engineer", "office_location": "Lisbon"}'),
            ("p2-d0", "p2", '{"job_title": "Registered Nurse", "office_location": "Dublin"}'),
            ("p3-d0", "p3", "Pastry Chef in Porto. The candidate must know zanzibar glazing."),
            ("p4-d0", "p4", "Airline Pilot based in Reykjavik; type rating quokka-7 required."),
        ],
    )


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("server")
    home = base / "home"
    for args in (("load", str(world(base / "snap"))), ("index",)):
        done = hltm(home, *args)
        assert done.returncode == 0, done.stderr
    return home


def token(home: Path, scope: str, write: bool = False) -> str:
    done = hltm(
        home, "token", "create", "--scope", scope, "--json", *(["--write"] if write else [])
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["token"]


def bearer(value: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {value}"}


def mcp_http(url: str, headers: dict[str, str] | None = None) -> Client:
    """The SDK's client on the service's ``/mcp``, sending ``headers`` with every request."""
    http = httpx2.AsyncClient(headers=headers or {}, timeout=60)
    return Client(streamable_http_client(url + "/mcp", http_client=http))


def tool_text(result) -> str:
    return "".join(c.text for c in result.content if getattr(c, "text", None))


# -- the JSON API ---------------------------------------------------------------------------------


def test_the_json_api_serves_the_tree_a_node_a_document_search_and_its_own_schema(home):
    with service(home) as (_, url), httpx.Client(base_url=url, timeout=120) as http:
        tree = http.get("/v1/tree", params={"depth": 3}).json()
        accounts = {n["node_id"]: n for n in tree["nodes"]}
        assert set(accounts) == {"account:acme", "account:globex"}
        seats = {s["node_id"] for s in accounts["account:acme"]["children"]}
        assert seats == {"seat:ana", "seat:bruno"}

        seat = http.get("/v1/nodes/seat:ana").json()
        assert seat["name"] == "Ana" and seat["parent_id"] == "account:acme"
        assert {c["node_id"] for c in seat["children"]} == {"project:p1", "project:p2"}
        lisbon = [f for f in seat["facets"] if f["value"] == "Lisbon"]
        assert lisbon and lisbon[0]["support"] == 1 and lisbon[0]["of"] == 2
        assert lisbon[0]["source_ids"] == ["project:p1"]  # a parent's provenance: its children
        assert "Lisbon" in seat["summary"]["paragraph"]

        leaf = http.get("/v1/nodes/project:p1").json()
        assert [d["doc_id"] for d in leaf["documents"]] == ["p1-d0"]
        assert any(f["value"] == "Lisbon" and f["source_ids"] == ["p1-d0"] for f in leaf["facets"])
        assert "Lisbon" in http.get("/v1/documents/p1-d0").json()["text"]

        found = http.post(
            "/v1/search", json={"query": "Where is the data engineer based?", "scope": "seat:ana"}
        ).json()
        evidence = found["views"]["evidence"]
        assert evidence and all(i["node_id"] in ("project:p1", "project:p2") for i in evidence)
        assert all(isinstance(i["score"], float) for i in evidence)
        by_get = http.get("/v1/search", params={"q": "Lisbon", "scope": "project:p1"}).json()
        assert by_get["scope"] == "project:p1" and by_get["views"]["evidence"]

        health = http.get("/v1/health").json()
        assert health["ok"] is True and health["queued"] == 0

        spec = http.get("/v1/openapi.json").json()
        assert spec["openapi"].startswith("3.") and "/v1/remember" in spec["paths"]
        docs = http.get("/v1/docs")
        assert docs.status_code == 200 and "/v1/nodes/{node_id}" in docs.text


def test_connections_that_never_send_a_whole_request_are_closed_once_idle(home):
    from tests.test_inspector import hung_up_by_the_server

    with service(home) as (_, url):
        assert hung_up_by_the_server(url, 30) == 30
        assert hung_up_by_the_server(url, 3, b"GET /v1/health HTTP/1.1\r\nHost: x\r\n") == 3
        assert httpx.get(url + "/v1/health", timeout=60).json()["ok"] is True


def test_remember_then_ask_then_forget_over_http(home):
    with service(home) as (_, url), httpx.Client(base_url=url, timeout=120) as http:
        made = http.post(
            "/v1/remember",
            json={"text": "The hiring manager wants a forklift licence.", "leaf": "project:p2"},
        )
        assert made.status_code == 200, made.text
        doc_id = made.json()["doc_id"]
        assert made.json()["leaves"] == ["project:p2"]
        asked = http.post(
            "/v1/ask", json={"question": "Who needs a forklift licence?", "scope": "project:p2"}
        ).json()
        assert "forklift licence" in asked["answer"] and asked["references"] == ["project:p2"]
        gone = http.post("/v1/forget", json={"target": doc_id})
        assert gone.status_code == 200, gone.text
        assert http.get(f"/v1/documents/{doc_id}").status_code == 404
        asked = http.post(
            "/v1/ask", json={"question": "Who needs a forklift licence?", "scope": "project:p2"}
        ).json()
        assert "forklift" not in asked["answer"]


def test_writes_elsewhere_leave_a_scopes_answers_alone_and_each_write_is_read_where_it_landed(
    home,
):
    """Rows a question read for a scope stay in use while writes land in other scopes, and
    every scope holding a write reads it at once (leaf, seat, account)."""
    with service(home) as (_, url), httpx.Client(base_url=url, timeout=120) as http:

        def ask(question: str, scope: str) -> dict:
            reply = http.post("/v1/ask", json={"question": question, "scope": scope})
            assert reply.status_code == 200, reply.text
            return reply.json()

        where = "Where are the jobs usually located?"
        before = ask(where, "seat:ana")
        for n, word in enumerate(("kiln", "lathe", "sextant")):
            note = {"text": f"The hiring manager wants {word} experience.", "leaf": "project:p3"}
            assert http.post("/v1/remember", json=note | {"kind": f"call{n}"}).status_code == 200
            assert ask(where, "seat:ana")["answer"] == before["answer"]  # untouched: the same
            asked = f"Who wants {word} experience?"
            assert note["text"] in ask(asked, "project:p3")["answer"]  # the leaf, at once
            assert note["text"] not in ask(asked, "seat:ana")["answer"]  # not written there
        status = http.post(
            "/v1/remember", json={"text": "Candidates need kiln experience.", "leaf": "project:p1"}
        )
        assert status.status_code == 200
        assert "project:p1" in ask("Who wants kiln experience?", "seat:ana")["references"]
        for _ in range(100):  # the account is built within seconds of the leaf
            found = ask("Who wants sextant experience?", "account:acme")
            if "sextant" in found["answer"]:
                break
            time.sleep(0.2)
        assert "sextant" in found["answer"] and found["references"] == ["project:p3"]


def test_the_inspector_pages_are_served_too_each_request_shown_its_tokens_scope(home):
    reader = token(home, "seat:ana")
    with service(home) as (_, url), httpx.Client(base_url=url, timeout=120) as http:
        top = http.get("/")  # loopback without a token: the whole tree
        assert top.status_code == 200 and "Globex" in top.text and "<script" not in top.text
        assert top.headers["content-security-policy"].startswith("default-src 'none'")
        seat = http.get("/", headers=bearer(reader))  # a token: its scope node's page
        assert seat.status_code == 200 and "Ana" in seat.text
        assert not [w for w in ELSEWHERE if w in seat.text.lower()]
        outside = http.get("/node/seat:bruno", headers=bearer(reader))
        nowhere = http.get("/node/seat:nobody", headers=bearer(reader))
        assert outside.status_code == nowhere.status_code == 404
        assert masked(outside.text, "seat:bruno") == masked(nowhere.text, "seat:nobody")
        asked = http.get(
            "/ask", params={"scope": "seat:ana", "q": QUESTION}, headers=bearer(reader)
        )
        assert asked.status_code == 200 and "Lisbon" in asked.text
        refused = http.get("/", headers=bearer("hltm_00000000_forged"))
        assert refused.status_code == 401 and "Bearer" in refused.text


# -- MCP ----------------------------------------------------------------------------------------

TOOLS = {"remember", "recall", "search", "forget", "browse"}


async def remember_recall_forget(client: Client, leaf: str, seat: str, word: str) -> None:
    """Remember a note at ``leaf``; recall at ``seat`` finds it; forget it; recall does not."""
    listed = await client.list_tools()
    assert {t.name for t in listed.tools} == TOOLS
    for tool in listed.tools:  # each says what it does, and that it keeps to a scope
        assert "scope" in tool.description, tool.name
    made = await client.call_tool(
        "remember", {"text": f"Candidates must hold a {word} certificate.", "leaf": leaf}
    )
    assert not made.is_error, tool_text(made)
    doc_id = json.loads(tool_text(made))["doc_id"]
    question = f"Who needs a {word} certificate?"
    for _ in range(100):  # the leaf is built when remember returns; its seat within seconds
        recalled = json.loads(
            tool_text(await client.call_tool("recall", {"question": question, "scope": seat}))
        )
        if word in recalled["answer"]:
            break
        await asyncio.sleep(0.2)
    assert word in recalled["answer"], recalled
    assert [c["node_id"] for c in recalled["citations"]] == [leaf]
    found = json.loads(
        tool_text(await client.call_tool("search", {"query": question, "scope": seat}))
    )
    assert any(word in i["text"] for i in found["views"]["evidence"])
    browsed = json.loads(tool_text(await client.call_tool("browse", {"node": leaf})))
    assert doc_id in [d["doc_id"] for d in browsed["documents"]]

    gone = await client.call_tool("forget", {"target": doc_id})
    assert not gone.is_error, tool_text(gone)
    recalled = json.loads(
        tool_text(await client.call_tool("recall", {"question": question, "scope": leaf}))
    )
    assert word not in recalled["answer"]
    browsed = json.loads(tool_text(await client.call_tool("browse", {"node": leaf})))
    assert doc_id not in [d["doc_id"] for d in browsed["documents"]]


def test_mcp_over_streamable_http_remembers_recalls_at_the_seat_and_forgets(home):
    writer = token(home, "seat:ana", write=True)

    async def run(url: str) -> None:
        async with mcp_http(url, bearer(writer)) as client:
            await remember_recall_forget(client, "project:p1", "seat:ana", "welding")
            outside = await client.call_tool("browse", {"node": "seat:bruno"})
            assert outside.is_error and "no node 'seat:bruno' in this scope" in tool_text(outside)
            unknown = await client.call_tool("teleport", {})
            assert unknown.is_error and "teleport" in tool_text(unknown)

    with service(home) as (_, url):
        asyncio.run(run(url))


def test_mcp_over_stdio_runs_the_service_itself_within_its_tokens_scope(home):
    writer = token(home, "seat:ana", write=True)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "hltm_assets.cli", "--home", str(home), "mcp"],
        env={**os.environ, "HLTM_TOKEN": writer},
        cwd=str(ROOT),
    )

    async def run() -> None:
        async with Client(params, read_timeout_seconds=300) as client:
            await remember_recall_forget(client, "project:p2", "seat:ana", "scaffolding")
            outside = await client.call_tool(
                "recall", {"question": "Where?", "scope": "seat:bruno"}
            )
            assert outside.is_error and "in this scope" in tool_text(outside)
            # It holds the home's writer lock, so it serves the home as `hltm serve` would:
            # the owner's own commands reach memory through it meanwhile.
            assert (home / "service.json").exists()
            asked = await asyncio.to_thread(hltm, home, "ask", QUESTION, "--scope", "seat:ana")
            assert asked.returncode == 0 and "Lisbon" in asked.stdout, asked.stderr

    asyncio.run(run())
    assert not (home / "service.json").exists()


def test_mcp_over_stdio_goes_through_a_running_service(home):
    reader = token(home, "project:p1")
    with service(home) as (_, url):
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "hltm_assets.cli", "--home", str(home), "mcp"],
            env={**os.environ, "HLTM_TOKEN": reader},
            cwd=str(ROOT),
        )

        async def run() -> None:
            async with Client(params, read_timeout_seconds=300) as client:
                browsed = json.loads(tool_text(await client.call_tool("browse", {})))
                # No node: the token's scope node's memory, as the service decides it.
                assert browsed["node_id"] == "project:p1" and "documents" in browsed
                refused = await client.call_tool("remember", {"text": "A note."})
                assert refused.is_error and "only read" in tool_text(refused)

        asyncio.run(run())


# -- scope --------------------------------------------------------------------------------------

#: Targets outside seat ana, each paired with one of the same form that exists nowhere.
OUTSIDE = [
    ("seat:bruno", "seat:nobody"),
    ("seat:cyrus", "seat:nobodi"),
    ("account:acme", "account:acmf"),
    ("account:globex", "account:globey"),
    ("project:p3", "project:p9"),
    ("project:p4", "project:p8"),
    ("p3-d0", "p9-d0"),
    ("p4-d0", "p8-d0"),
    ("Bruno", "Brunx"),
    ("Airline Pilot", "Airline Pilox"),
    ("acme/bruno", "acme/brunx"),
    ("globex/cyrus/p4", "globex/cyrus/p8"),
    ("seat%3Abruno", "seat%3Anobody"),
    ("SEAT:bruno", "SEAT:nobody"),
    (" seat:bruno", " seat:nobody"),
    ("seat:bruno/", "seat:nobody/"),
    ("seat:ana/../bruno", "seat:ana/../nobody"),
    ("project:p3\x00", "project:p9\x00"),
]


def ops(http: httpx.Client, reader: str, writer: str):
    """Every way to name a target over the JSON API: (name, call(target) -> (status, body))."""
    r, w = bearer(reader), bearer(writer)

    def get(path: str, headers, params=None):
        reply = http.get(path, headers=headers, params=params)
        return reply.status_code, reply.text

    def post(path: str, body: dict, headers):
        reply = http.post(path, json=body, headers=headers)
        return reply.status_code, reply.text

    return [  # a path segment is sent percent-encoded ('/' too), so no client rewrites it
        ("node", lambda t: get("/v1/nodes/" + quote(t, safe=":"), r)),
        ("document", lambda t: get("/v1/documents/" + quote(t, safe=":"), r)),
        ("tree", lambda t: get("/v1/tree", r, {"node": t})),
        ("ask", lambda t: post("/v1/ask", {"question": "Where is it?", "scope": t}, r)),
        ("search", lambda t: post("/v1/search", {"query": "Where is it?", "scope": t}, r)),
        ("forget", lambda t: post("/v1/forget", {"target": t}, w)),
        ("remember", lambda t: post("/v1/remember", {"text": "A note.", "leaf": t}, w)),
    ]


def masked(body: str, target: str) -> str:
    """The body with the target as the request sent it (and as JSON writes it) masked."""
    forms = set()
    for sent in (target, target.partition(":")[2]):  # an id's error may quote its raw part
        shown = repr(sent)[1:-1]
        forms |= {sent, json.dumps(sent)[1:-1], shown, json.dumps(shown)[1:-1]} - {""}
    for form in sorted(forms, key=len, reverse=True):
        body = body.replace(form, "<T>")
    return body


def test_a_seats_tokens_see_nothing_of_other_scopes_and_cannot_tell_what_exists(home):
    """300+ requests over HTTP and MCP naming other seats' and accounts' nodes and documents
    (ids, names, paths, encoded): each answered exactly as for a target that exists nowhere,
    and no byte of another scope in any response."""
    reader, writer = token(home, "seat:ana"), token(home, "seat:ana", write=True)
    seen = 0

    def check(name: str, real: tuple[int, str], fake: tuple[int, str], pair) -> None:
        nonlocal seen
        seen += 2
        assert real[0] == fake[0] and 400 <= real[0] < 500, (name, pair, real, fake)
        assert masked(real[1], pair[0]) == masked(fake[1], pair[1]), (name, pair)
        shown = masked(real[1], pair[0]).lower()
        leaked = [w for w in ELSEWHERE if w in shown]
        assert not leaked, (name, pair, leaked, real[1])

    async def over_mcp(url: str) -> None:
        async with (
            mcp_http(url, bearer(reader)) as read,
            mcp_http(url, bearer(writer)) as write,
        ):
            calls = [
                ("browse", read, lambda t: {"node": t}),
                ("recall", read, lambda t: {"question": "Where is it?", "scope": t}),
                ("search", read, lambda t: {"query": "Where is it?", "scope": t}),
                ("forget", write, lambda t: {"target": t}),
                ("remember", write, lambda t: {"text": "A note.", "leaf": t}),
            ]
            for tool, client, args in calls:
                for pair in OUTSIDE:
                    got = []
                    for target in pair:
                        result = await client.call_tool(tool, args(target))
                        got.append((400 if result.is_error else 200, tool_text(result)))
                    check(f"mcp {tool}", *got, pair)

    with service(home) as (_, url), httpx.Client(base_url=url, timeout=120) as http:
        for name, call in ops(http, reader, writer):
            for pair in OUTSIDE:
                check(name, call(pair[0]), call(pair[1]), pair)
        asyncio.run(over_mcp(url))
        # The scope's own memory still answers.
        own = http.get("/v1/nodes/seat:ana", headers=bearer(reader))
        assert own.status_code == 200 and "Lisbon" in own.text
    assert seen >= 300


# -- bad requests -------------------------------------------------------------------------------


def test_bad_requests_get_a_4xx_that_says_what_to_send_never_a_traceback(home):
    big = "x" * 1_048_576
    with service(home, None, "--host", "0.0.0.0") as (_, url):
        url = re.sub(r"//0\.0\.0\.0", "//127.0.0.1", url)
        reader = token(home, "seat:ana")
        with httpx.Client(base_url=url, timeout=120, headers=bearer(reader)) as http:
            cases = [
                (http.post("/v1/ask", content=b"{not json"), "not JSON"),
                (http.post("/v1/ask", json=[1, 2]), "JSON object"),
                (http.post("/v1/ask", json={"question": 5}), "question must be a string"),
                (http.post("/v1/ask", json={"question": big}), "at most 4,000"),
                (http.post("/v1/ask", content=b" " * (9 << 20)), "send at most"),
                (http.post("/v1/search", json={"query": "x", "limit": 0}), "limit must be"),
                (http.get("/v1/tree", params={"depth": "deep"}), "depth must be"),
                (http.post("/v1/remember", json={"text": "A note."}), "only read"),
                (http.get("/v1/teleport"), "no endpoint"),
                (http.get("/v1/health", headers=bearer("hltm_0_wrong")), "Bearer"),
            ]
            with httpx.Client(base_url=url, timeout=60) as anonymous:
                cases.append((anonymous.get("/v1/health"), "takes requests with a token only"))
                cases.append((anonymous.post("/mcp", json={}), "takes requests with a token only"))
            for reply, says in cases:
                assert 400 <= reply.status_code < 500, (reply.request.url, reply.text[:200])
                assert says in reply.json()["error"], (says, reply.text[:300])
                assert "Traceback" not in reply.text

        async def unknown_tool() -> None:
            async with mcp_http(url, bearer(reader)) as client:
                result = await client.call_tool("teleport", {"to": "mars"})
                assert result.is_error and "teleport" in tool_text(result)
                result = await client.call_tool("recall", {"question": big})
                assert result.is_error and "at most 4,000" in tool_text(result)
                result = await client.call_tool("recall", {"question": ["not", "text"]})
                assert result.is_error and "question" in tool_text(result)

        asyncio.run(unknown_tool())
