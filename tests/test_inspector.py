"""The memory inspector (``hltm inspect``), over plain HTTP: what each page shows, that its
links resolve, that a scope hides everything outside it, and that it never writes the home.

Expected values are read from the home's public DuckDB views, not from the inspector's code.
"""

from __future__ import annotations

import html
import re
import signal
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote, urlencode, urlsplit

import duckdb
import pytest

from hltm_resources.config import ConfigError, Settings
from query import Memory
from query.inspector import Inspector, InspectorServer, PageError, inspector_app, serving_agents
from tests.conftest import loaded_and_built, write_tree

QUESTION = "Where are the jobs usually located?"


# -- helpers -------------------------------------------------------------------------------------


@contextmanager
def serving(settings: Settings, scope: str | None = None) -> Iterator[str]:
    """An inspector on a free loopback port, in a thread; yields its base URL (no slash)."""
    app = Inspector(settings, scope=scope)
    server = InspectorServer(app, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.url.rstrip("/")
    finally:
        server.shutdown()
        server.server_close()
        app.close()


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    """(status, body) of a GET, errors included."""
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            return reply.status, reply.read().decode("utf-8")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8")


def text(page: str) -> str:
    """What a reader sees: tags dropped, entities decoded, whitespace collapsed."""
    page = re.sub(r"<style>.*?</style>", " ", page, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "a":
            self.hrefs += [v for k, v in attrs if k == "href"]


def links(page: str) -> list[str]:
    parser = _Links()
    parser.feed(page)
    return parser.hrefs


def node_url(node_id: str) -> str:
    return "/node/" + quote(node_id, safe=":@")


def doc_url(doc_id: str) -> str:
    return "/doc/" + quote(doc_id, safe=":@")


def ask_url(scope: str, question: str) -> str:
    return "/ask?" + urlencode({"scope": scope, "q": question})


def rows(settings: Settings, sql: str, params: list | None = None) -> list[tuple]:
    con = duckdb.connect(str(settings.duckdb_path), read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def files_of(home: Path) -> dict[str, tuple[int, int]]:
    """Every file under the home with its size and modification time."""
    return {
        str(p.relative_to(home)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(home.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def base(built_home) -> Iterator[str]:
    with serving(built_home) as url:
        yield url


@pytest.fixture(scope="module")
def seat(built_home) -> tuple[str, str, int]:
    """(id, name, leaf count) of the first seat with more than one project."""
    return rows(
        built_home,
        "SELECT node_id, name, leaf_count FROM memory_nodes WHERE level = 'seat' "
        "AND leaf_count > 1 ORDER BY node_id LIMIT 1",
    )[0]


@pytest.fixture(scope="module")
def leaf(built_home, seat) -> str:
    return rows(
        built_home,
        "SELECT min(node_id) FROM memory_nodes WHERE parent_id = ?",
        [seat[0]],
    )[0][0]


# -- browsing ------------------------------------------------------------------------------------


def test_the_top_page_lists_every_node_of_the_top_level(built_home, base):
    status, page = get(base + "/")
    assert status == 200
    accounts = rows(built_home, "SELECT node_id, name FROM memory_nodes WHERE level = 'account'")
    assert accounts
    for node_id, name in accounts:
        assert node_url(node_id) in links(page)
        assert name in text(page)
    assert "/node/seat:" not in page  # one level at a time


def test_a_seat_page_shows_its_summary_and_facets_with_their_support(built_home, base, seat):
    seat_id, name, leaf_count = seat
    status, page = get(base + node_url(seat_id))
    assert status == 200
    shown = text(page)
    concise, detailed = rows(
        built_home, "SELECT concise, detailed FROM memory_summaries WHERE node_id = ?", [seat_id]
    )[0]
    assert concise in shown and detailed in shown
    # A facet held by some but not all of the seat's projects: "value: 2 of 4 projects".
    value, support = rows(
        built_home,
        "SELECT value, support FROM memory_facets WHERE node_id = ? AND key = 'location' "
        "AND support < ? ORDER BY support DESC, value LIMIT 1",
        [seat_id, leaf_count],
    )[0]
    assert f"{value}: {support} of {leaf_count} projects" in shown
    engine, hints = rows(
        built_home, "SELECT engine, hints_version FROM memory_nodes WHERE node_id = ?", [seat_id]
    )[0]
    assert engine in shown and f"hints v{hints}" in shown
    assert "level seat" in shown and name in shown


def test_a_seat_page_lists_its_qa_pairs_and_links_its_children(built_home, base, seat):
    _, page = get(base + node_url(seat[0]))
    question, answer = rows(
        built_home, "SELECT question, answer FROM memory_qa WHERE node_id = ? LIMIT 1", [seat[0]]
    )[0]
    assert question in text(page) and answer in text(page)
    children = rows(built_home, "SELECT node_id FROM memory_nodes WHERE parent_id = ?", [seat[0]])
    assert {node_url(c) for (c,) in children} <= set(links(page))


def test_a_leaf_page_links_its_documents_and_a_document_page_shows_its_text(built_home, base, leaf):
    _, page = get(base + node_url(leaf))
    documents = rows(
        built_home,
        "SELECT doc_id, text FROM sot_documents WHERE project_id = ?",
        [leaf.split(":", 1)[1]],
    )
    assert documents
    for doc_id, body in documents:
        assert doc_url(doc_id) in links(page)
        status, doc_page = get(base + doc_url(doc_id))
        assert status == 200
        assert body in html.unescape(doc_page)  # verbatim, in a <pre>


@pytest.mark.parametrize("which", ["seat", "leaf"])
def test_every_link_on_a_node_page_resolves(base, seat, leaf, which):
    """Provenance (documents at a leaf, child nodes at a seat), breadcrumbs and children."""
    node_id = seat[0] if which == "seat" else leaf
    _, page = get(base + node_url(node_id))
    hrefs = sorted(set(links(page)))
    assert any(h.startswith(("/doc/", "/node/project:")) for h in hrefs)
    for href in hrefs:
        assert get(base + href)[0] == 200, href


# -- asking --------------------------------------------------------------------------------------


def test_ask_shows_the_answer_its_citations_and_each_views_scores(built_home, base, seat):
    status, page = get(base + ask_url(seat[0], QUESTION))
    assert status == 200
    with Memory(built_home, log_queries=False) as mem:  # the serving path, asked directly
        expected = mem.ask(QUESTION, scope=seat[0])
    shown = text(page)
    assert expected.answer in shown
    assert expected.references
    for ref in expected.references:
        assert node_url(ref) in links(page)
        assert get(base + node_url(ref))[0] == 200
    for view in ("facets", "qa", "summaries"):
        top = expected.contexts[view][0]["score"]
        assert f"{top:.3f}" in shown, view
    for heading in ("Facets", "QA pairs", "Summaries", "Retrieved context"):
        assert heading in shown


def test_the_node_page_asks_within_the_node_through_a_plain_get_form(base, seat):
    _, page = get(base + node_url(seat[0]))
    forms = re.findall(r"<form[^>]*>.*?</form>", page, flags=re.S)  # the header's: search
    form = next(f for f in forms if 'class="ask"' in f)
    assert 'method="get"' in form and 'action="/ask"' in form
    assert f'name="scope" value="{seat[0]}"' in form and 'name="q"' in form
    assert "<script" not in page


def test_pages_and_questions_are_served_side_by_side(base, seat, leaf):
    """Pages read on their own connections while questions take turns on the one Memory."""
    paths = [node_url(seat[0]), node_url(leaf), "/", ask_url(seat[0], QUESTION)]
    paths += [ask_url(leaf, "Which skills are required?")]
    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = list(pool.map(lambda p: get(base + p)[0], paths * 4))
    assert statuses == [200] * len(statuses)


# -- errors --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["/node/seat:does-not-exist", "/node/nonsense", "/doc/no-such-doc", "/nowhere"]
)
def test_what_is_not_there_is_a_404_with_a_way_back(base, path):
    status, page = get(base + path)
    assert status == 404
    assert 'href="/"' in page


@pytest.mark.parametrize(
    "query",
    [
        "scope={seat}",  # no question
        "scope={seat}&q=",  # an empty one
        "scope={seat}&q=%20%20",  # a blank one
        "q=where",  # no scope
        "scope={seat}&q=a&q=b",  # a question twice
        "scope={seat}&q=%FF",  # not UTF-8
        "scope=seat%3Ano%20way&q=where",  # a malformed scope
    ],
)
def test_a_bad_query_string_is_a_400_that_says_what_to_do(base, seat, query):
    status, page = get(base + "/ask?" + query.format(seat=quote(seat[0])))
    assert status == 400
    assert 'class="error"' in page or "class=error" in page


def test_requests_for_another_host_name_are_refused(base):
    """A web page that rebinds its own DNS name to 127.0.0.1 cannot read the memory."""
    status, _ = get(base + "/", headers={"Host": "attacker.example:8765"})
    assert status == 400


def raw_status(base: str, path: str, headers: list[tuple[str, str]]) -> int:
    """The status of a GET sent as written (urllib sends one Host header, this any)."""
    where = urlsplit(base)
    with socket.create_connection((where.hostname, where.port), timeout=60) as sock:
        lines = [f"GET {path} HTTP/1.1", *(f"{k}: {v}" for k, v in headers), "Connection: close"]
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    return int(reply.split(b" ", 2)[1])


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1:8902@evil.com",
        "[::1]evil.com",
        "127.0.0.1:evil.com",
        "127.0.0.1:",
        "localhost.evil.com",
        "evil.com#127.0.0.1",
    ],
)
def test_a_host_that_only_starts_like_a_loopback_one_is_refused(base, host):
    assert raw_status(base, "/", [("Host", host)]) == 400


def hung_up_by_the_server(base: str, opened: int, sent: bytes = b"") -> int:
    """How many of ``opened`` connections that send ``sent`` and then nothing the server
    closes (each waits up to 60 s: a server that keeps them would fail here)."""
    where = urlsplit(base)
    connections = [
        socket.create_connection((where.hostname, where.port), timeout=60) for _ in range(opened)
    ]
    closed = 0
    for connection in connections:
        with connection:
            connection.sendall(sent)
            try:
                closed += connection.recv(65536) == b""
            except ConnectionResetError:  # closed with unread bytes: a reset, closed all the same
                closed += 1
    return closed


def test_connections_that_never_send_a_whole_request_are_closed_once_idle(base):
    # Idle connections must not pile up: each costs the server a file, and it has a limit.
    assert hung_up_by_the_server(base, 30) == 30
    assert hung_up_by_the_server(base, 3, b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n") == 3
    assert get(base + "/")[0] == 200


def test_a_request_with_two_host_headers_is_refused(base):
    assert raw_status(base, "/", [("Host", "127.0.0.1"), ("Host", "evil.com")]) == 400
    assert raw_status(base, "/", [("Host", "127.0.0.1"), ("Host", "127.0.0.1")]) == 400


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "127.0.0.1:8765", "localhost", "LocalHost:80", "[::1]", "[::1]:8765"]
)
def test_loopback_host_names_are_served(base, host):
    assert raw_status(base, "/", [("Host", host)]) == 200


@pytest.mark.parametrize(
    "path, headers, status",
    [
        ("/", {}, 200),
        ("/nowhere", {}, 404),
        ("/ask?q=where", {}, 400),
        ("/", {"Host": "attacker.example"}, 400),
    ],
)
def test_every_page_is_sent_with_headers_that_keep_scripts_and_frames_off(
    base, path, headers, status
):
    request = urllib.request.Request(base + path, headers=headers)
    try:
        reply = urllib.request.urlopen(request, timeout=60)
    except urllib.error.HTTPError as exc:
        reply = exc
    assert reply.status == status
    policy = reply.headers["Content-Security-Policy"]
    assert "default-src 'none'" in policy and "frame-ancestors 'none'" in policy
    assert "script-src" not in policy
    assert reply.headers["X-Content-Type-Options"] == "nosniff"
    assert reply.headers["Cache-Control"] == "no-store"
    assert reply.headers["Content-Type"] == "text/html; charset=utf-8"


def test_a_page_is_only_read(base):
    request = urllib.request.Request(base + "/", data=b"x=1", method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=60)
    assert refused.value.code == 405 and refused.value.headers["Allow"]
    assert 'class="error"' in refused.value.read().decode("utf-8")


def test_only_loopback_addresses_are_served(built_home):
    app = Inspector(built_home)
    try:
        with pytest.raises(ConfigError, match="loopback"):
            InspectorServer(app, "0.0.0.0", 0)
    finally:
        app.close()


def test_hltm_inspect_prints_its_url_and_serves_until_ctrl_c(built_home):
    proc = subprocess.Popen(
        [sys.executable, "-m", "hltm_assets.cli", "--home", str(built_home.home), "inspect"]
        + ["--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # A shell's background jobs ignore SIGINT, and exec keeps that: Ctrl-C as in a terminal.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        line = proc.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert url, line + proc.stderr.read()
        assert get(url.group(0))[0] == 200
        # Clients that hang up before their request ends, or before reading the answer.
        port = int(url.group(1))
        request = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        for sent in (b"GET /node/", request):
            with socket.create_connection(("127.0.0.1", port)) as sock:
                sock.sendall(sent)
        # One that keeps its connection open after an answer: closed once idle, not kept.
        with socket.create_connection(("127.0.0.1", port), timeout=60) as idle:
            idle.sendall(request)
            reply = b""
            while chunk := idle.recv(65536):
                reply += chunk
            assert reply.startswith(b"HTTP/1.1 200") and b"</html>" in reply
        assert get(url.group(0))[0] == 200
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
        assert proc.stdout.read() == ""  # one line, the URL
        assert "Traceback" not in proc.stderr.read()
    finally:
        proc.kill()
        proc.wait()


def test_hltm_inspect_says_in_one_line_when_its_port_is_taken(built_home, capsys):
    from hltm_assets.cli import main

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        code = main(["--home", str(built_home.home), "inspect", "--port", str(port)])
    assert code == 2
    err = capsys.readouterr().err
    assert f"cannot listen on 127.0.0.1 port {port}" in err and "--port" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_the_cli_refuses_a_non_loopback_host(built_home, capsys):
    from hltm_assets.cli import main

    code = main(["--home", str(built_home.home), "inspect", "--host", "0.0.0.0"])
    assert code == 2
    assert "loopback" in capsys.readouterr().err


# -- scope -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def scoped(built_home) -> Iterator[tuple[str, dict[str, str]]]:
    """An inspector scoped to one seat, and nodes inside and outside it."""
    seat_id, account = rows(
        built_home,
        "SELECT node_id, parent_id FROM memory_nodes WHERE level = 'seat' ORDER BY node_id LIMIT 1",
    )[0]
    sibling = rows(
        built_home,
        "SELECT node_id FROM memory_nodes WHERE parent_id = ? AND node_id <> ? LIMIT 1",
        [account, seat_id],
    )[0][0]
    other_account = rows(
        built_home,
        "SELECT node_id FROM memory_nodes WHERE level = 'account' AND node_id <> ? LIMIT 1",
        [account],
    )[0][0]

    def first_leaf(parent: str) -> str:
        return rows(
            built_home, "SELECT min(node_id) FROM memory_nodes WHERE parent_id = ?", [parent]
        )[0][0]

    def first_doc(leaf_id: str) -> str:
        return rows(
            built_home,
            "SELECT min(doc_id) FROM sot_documents WHERE project_id = ?",
            [leaf_id.split(":", 1)[1]],
        )[0][0]

    nodes = {
        "scope": seat_id,
        "inside": first_leaf(seat_id),
        "account": account,
        "sibling": sibling,
        "cousin": first_leaf(sibling),
        "other_account": other_account,
    }
    nodes["inside_doc"] = first_doc(nodes["inside"])
    nodes["cousin_doc"] = first_doc(nodes["cousin"])
    with serving(built_home, scope=seat_id) as url:
        yield url, nodes


def test_a_scoped_inspector_opens_on_its_scope_and_shows_what_is_inside(built_home, scoped):
    base, nodes = scoped
    name = rows(built_home, "SELECT name FROM memory_nodes WHERE node_id = ?", [nodes["scope"]])
    status, page = get(base + "/")
    assert status == 200 and name[0][0] in text(page)
    assert get(base + node_url(nodes["inside"]))[0] == 200
    assert get(base + doc_url(nodes["inside_doc"]))[0] == 200
    assert get(base + ask_url(nodes["inside"], QUESTION))[0] == 200


@pytest.mark.parametrize("outside", ["account", "sibling", "cousin", "other_account"])
def test_a_scoped_inspector_shows_no_node_outside_its_scope(scoped, outside):
    base, nodes = scoped
    assert get(base + node_url(nodes[outside]))[0] == 404


@pytest.mark.parametrize("outside", ["account", "sibling", "cousin", "other_account"])
def test_a_scoped_inspector_answers_no_question_outside_its_scope(scoped, outside):
    base, nodes = scoped
    status, page = get(base + ask_url(nodes[outside], QUESTION))
    assert status == 404
    assert "Answer" not in text(page)


def test_a_scoped_inspector_shows_no_document_outside_its_scope(scoped):
    base, nodes = scoped
    assert get(base + doc_url(nodes["cousin_doc"]))[0] == 404


def test_a_scoped_inspector_links_nothing_above_or_beside_its_scope(scoped):
    base, nodes = scoped
    for path in ("/", node_url(nodes["inside"]), doc_url(nodes["inside_doc"])):
        hrefs = set(links(get(base + path)[1]))
        assert node_url(nodes["account"]) not in hrefs
        for href in hrefs:
            assert get(base + href)[0] == 200, href


# -- mounted in another app, with a scope per request ------------------------------------------


@contextmanager
def serving_asgi(app) -> Iterator[str]:
    """Any ASGI app under uvicorn on a free loopback port, in a thread; yields its base URL."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


@pytest.fixture(scope="module")
def mounted(built_home, scoped) -> Iterator[str]:
    """The inspector mounted at /inspect in another app, each request's scope taken from its
    ``X-Scope`` header (as the service takes it from a token): none is a 401, ``*`` all."""
    from starlette.applications import Starlette
    from starlette.routing import Mount

    def scope_of(request) -> str | None:
        scope = request.headers.get("x-scope")
        if scope is None:
            raise PageError(401, "send the request with a token")
        return None if scope == "*" else scope

    inspector = Inspector(built_home)
    app = Starlette(routes=[Mount("/inspect", app=inspector_app(inspector, scope_of))])
    try:
        with serving_asgi(app) as url:
            yield url + "/inspect"
    finally:
        inspector.close()


def test_a_mounted_inspector_takes_each_requests_scope_from_the_request(mounted, scoped):
    _, nodes = scoped
    seat, sibling = {"X-Scope": nodes["scope"]}, {"X-Scope": nodes["sibling"]}
    assert get(mounted + node_url(nodes["inside"]), seat)[0] == 200
    assert get(mounted + node_url(nodes["inside"]), sibling)[0] == 404
    assert get(mounted + node_url(nodes["cousin"]), sibling)[0] == 200
    assert get(mounted + node_url(nodes["cousin"]), seat)[0] == 404
    assert get(mounted + doc_url(nodes["cousin_doc"]), seat)[0] == 404
    assert get(mounted + ask_url(nodes["sibling"], QUESTION), seat)[0] == 404
    assert get(mounted + ask_url(nodes["sibling"], QUESTION), sibling)[0] == 200
    for scope in ("seat:not-in-the-tree", "nonsense"):  # a scope that is not there: 404
        assert get(mounted + "/", {"X-Scope": scope})[0] == 404
    status, page = get(mounted + "/")  # scope_of refused it
    assert status == 401 and "send the request with a token" in text(page)


def test_a_mounted_inspector_links_under_its_mount(mounted, scoped):
    _, nodes = scoped
    everything = {"X-Scope": "*"}
    status, page = get(mounted + node_url(nodes["scope"]), everything)
    assert status == 200
    hrefs = set(links(page))
    assert "/inspect" + node_url(nodes["inside"]) in hrefs
    assert 'action="/inspect/ask"' in page
    root = mounted.removesuffix("/inspect")
    for href in hrefs:
        assert href.startswith("/inspect/"), href
        assert get(root + href, everything)[0] == 200, href


class CountingLock:
    """A lock that counts how often it was taken."""

    def __init__(self) -> None:
        self.lock, self.taken = threading.Lock(), 0

    def __enter__(self) -> None:
        self.lock.acquire()
        self.taken += 1

    def __exit__(self, *exc: object) -> None:
        self.lock.release()


def test_an_inspector_asks_through_a_memory_and_lock_it_is_given_and_leaves_them_open(
    built_home, seat
):
    lock = CountingLock()
    with Memory(built_home, log_queries=False) as memory:
        inspector = Inspector(built_home, memory=memory, lock=lock)
        with serving_asgi(inspector_app(inspector)) as base:
            status, page = get(base + ask_url(seat[0], QUESTION))
        assert status == 200 and lock.taken == 1
        inspector.close()
        assert memory.ask(QUESTION, scope=seat[0]).answer in text(page)  # still open


# -- read-only, escaping, rebuilds ----------------------------------------------------------------


def test_the_inspector_never_writes_the_home(built_home):
    before = files_of(built_home.home)
    with serving(built_home) as base:
        seat_id, leaf_id, doc_id = rows(
            built_home,
            "SELECT n.parent_id, n.node_id, min(d.doc_id) FROM memory_nodes n "
            "JOIN sot_documents d ON 'project:' || d.project_id = n.node_id "
            "GROUP BY 1, 2 ORDER BY 2 LIMIT 1",
        )[0]
        for path in ("/", node_url(seat_id), node_url(leaf_id), doc_url(doc_id)):
            assert get(base + path)[0] == 200
        assert get(base + ask_url(seat_id, QUESTION))[0] == 200
        assert get(base + ask_url(leaf_id, "Which skills are required?"))[0] == 200
    assert files_of(built_home.home) == before


def test_an_llm_engine_in_the_inspector_caches_no_reply_in_the_home(tmp_path):
    settings = Settings(
        home=tmp_path / "home",
        engine="openai",
        chat_model="any",
        api_key="unused",
        base_url="http://127.0.0.1:9/v1",
        llm_context_tokens=8192,
    )
    agents = serving_agents(settings)
    agents.client.cache.put("key", None, "answer", "any", "{}")
    assert agents.client.cache.get("key") is None
    assert not (tmp_path / "home").exists()


def test_memory_text_is_escaped_and_a_rebuild_is_shown_without_a_restart(tmp_path):
    snapshot = write_tree(
        tmp_path / "v1",
        {"s1": "a1"},
        [("p1", "s1", "<script>alert(1)</script> Data Engineer")],
        [("d1", "p1", "Title: Data Engineer\nLocation: Dublin, Ireland\nNote: <b>bold</b> & co")],
    )
    settings = loaded_and_built(tmp_path / "home", snapshot)
    with serving(settings) as base:
        for path in ("/node/seat:s1", "/node/project:p1", "/doc/d1"):
            status, page = get(base + path)
            assert status == 200
            assert "<script" not in page and "<b>bold" not in page
        assert (
            "&lt;script&gt;alert(1)&lt;/script&gt; Data Engineer" in get(base + "/node/seat:s1")[1]
        )
        assert get(base + ask_url("seat:s1", QUESTION))[0] == 200

        # Rebuilt while it runs: the next pages show the new memory.
        loaded_and_built(
            tmp_path / "home",
            write_tree(
                tmp_path / "v2",
                {"s1": "a1"},
                [("p1", "s1", "Data Engineer"), ("p2", "s1", "Platform Engineer")],
                [
                    ("d1", "p1", "Title: Data Engineer\nLocation: Dublin, Ireland"),
                    ("d2", "p2", "Title: Platform Engineer\nLocation: Lisbon, Portugal"),
                ],
            ),
        )
        status, page = get(base + "/node/seat:s1")
        assert status == 200 and "Platform Engineer" in text(page)
        assert get(base + "/node/project:p2")[0] == 200
        assert get(base + ask_url("seat:s1", QUESTION))[0] == 200


def test_a_warmed_up_inspector_answers_as_a_cold_one(built_home):
    """``hltm inspect`` warms its memory up in the background: it changes when the cost is
    paid, never the answer."""
    seat = rows(built_home, "SELECT min(node_id) FROM memory_nodes WHERE level = 'seat'")[0][0]
    cold, warm = Inspector(built_home), Inspector(built_home)
    try:
        warm.warm_up()
        a, b = cold.ask(QUESTION, seat), warm.ask(QUESTION, seat)
        assert (a.answer, a.references) == (b.answer, b.references) and a.references
    finally:
        cold.close()
        warm.close()


# -- why cited, where a facet comes from, search, the build run, stale memory (issue 33) ------


def citations(page: str) -> dict[str, str]:
    """The answer page's citations: per cited node id, what its item says (text)."""
    listed = re.search(r"<h2>Citations \(\d+\)</h2>\s*<ol>(.*?)</ol>", page, flags=re.S)
    items = re.split(r'(?=<li><a href="/node/)', listed.group(1))[1:] if listed else []
    return {re.match(r'<li><a href="/node/([^"]+)"', i).group(1): i for i in items}


def marks(page: str) -> list[str]:
    """The text of every ``<mark>`` of a page, unescaped."""
    return [html.unescape(m) for m in re.findall(r"<mark>(.*?)</mark>", page, flags=re.S)]


def test_each_citation_says_which_facets_of_the_node_met_the_question(built_home, base, seat):
    title, location = rows(
        built_home,
        "SELECT t.value, l.value FROM memory_nodes n "
        "JOIN memory_facets t ON t.node_id = n.node_id AND t.key = 'title' "
        "JOIN memory_facets l ON l.node_id = n.node_id AND l.key = 'location' "
        "WHERE n.parent_id = ? ORDER BY n.node_id LIMIT 1",
        [seat[0]],
    )[0]
    holding = {
        n
        for (n,) in rows(
            built_home,
            "SELECT n.node_id FROM memory_nodes n "
            "JOIN memory_facets t ON t.node_id = n.node_id AND t.key = 'title' AND t.value = ? "
            "JOIN memory_facets l ON l.node_id = n.node_id AND l.key = 'location' "
            "AND l.value = ? WHERE n.parent_id = ?",
            [title, location, seat[0]],
        )
    }
    city = location.split(",")[0]
    status, page = get(base + ask_url(seat[0], f"Which projects are for {title}s in {city}?"))
    assert status == 200
    cited = citations(page)
    assert set(cited) == holding
    for item in cited.values():
        said = text(item)
        assert f"met “title: {title}” by its facet" in said
        assert f"location: {location}" in said and "met “location: " in said
        assert said.count("by its facet") == 2


def test_a_citation_met_by_a_document_links_the_document_with_the_passage_marked(
    built_home, base, seat
):
    leaf, doc_id, body = rows(
        built_home,
        "SELECT 'project:' || d.project_id, d.doc_id, d.text FROM sot_documents d "
        "JOIN memory_nodes n ON n.node_id = 'project:' || d.project_id "
        "WHERE n.parent_id = ? AND d.text LIKE '%code name: %' ORDER BY d.doc_id LIMIT 1",
        [seat[0]],
    )[0]
    code = re.search(r"code name: ([\w-]+)", body).group(1)
    status, page = get(base + ask_url(seat[0], f"Which roles mention {code}?"))
    assert status == 200
    cited = citations(page)
    assert leaf in cited
    marked_links = [h for h in links(cited[leaf]) if h.startswith(doc_url(doc_id) + "?")]
    assert marked_links, cited[leaf]
    status, doc_page = get(base + html.unescape(marked_links[0]))
    assert status == 200
    assert marks(doc_page) and all(m in body for m in marks(doc_page))
    assert any(code in m for m in marks(doc_page))


def test_a_leaf_facet_links_its_documents_with_the_sentences_stating_it_marked(
    built_home, base, leaf
):
    key, value, sources = rows(
        built_home,
        "SELECT key, value, source_ids FROM memory_facets WHERE node_id = ? "
        "AND key = 'location' LIMIT 1",
        [leaf],
    )[0]
    _, page = get(base + node_url(leaf))
    hrefs = {html.unescape(h) for h in links(page)}
    for doc_id in sources:
        href = doc_url(doc_id) + "?" + urlencode({"key": key, "value": value})
        assert href in hrefs
        body = rows(built_home, "SELECT text FROM sot_documents WHERE doc_id = ?", [doc_id])[0][0]
        status, doc_page = get(base + href)
        assert status == 200
        found = marks(doc_page)
        if value in body:  # the engine took it as written
            assert any(value in m for m in found)
        assert all(m in body for m in found)  # whole sentences of the document, verbatim
        assert html.unescape(re.sub(r"</?mark>", "", doc_page)).count(body) == 1


def test_a_document_that_does_not_state_the_value_is_shown_unmarked_and_says_so(
    built_home, base, leaf
):
    value = rows(
        built_home,
        "SELECT value FROM memory_facets WHERE node_id = ? AND key = 'location' LIMIT 1",
        [leaf],
    )[0][0]
    doc_id, body = rows(
        built_home,
        "SELECT doc_id, text FROM sot_documents WHERE text NOT LIKE ? ORDER BY doc_id LIMIT 1",
        ["%" + value.split(",")[0] + "%"],
    )[0]
    status, page = get(
        base + doc_url(doc_id) + "?" + urlencode({"key": "location", "value": value})
    )
    assert status == 200
    assert marks(page) == [] and "No sentence of this document states" in text(page)
    assert body in html.unescape(page)


def final_url(url: str) -> tuple[int, str]:
    """(status, URL reached) of a GET that follows redirects."""
    try:
        with urllib.request.urlopen(url, timeout=60) as reply:
            return reply.status, reply.geturl()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.geturl()


def test_the_search_box_goes_to_a_node_by_id_and_lists_nodes_by_name(built_home, base, seat):
    assert final_url(base + "/search?q=" + quote(seat[0])) == (200, base + node_url(seat[0]))
    _, page = get(base + "/")
    form = next(f for f in re.findall(r"<form[^>]*>.*?</form>", page, flags=re.S) if "search" in f)
    assert 'method="get"' in form and 'action="/search"' in form and 'name="q"' in form
    word = rows(built_home, "SELECT name FROM memory_nodes WHERE level = 'project' LIMIT 1")
    part = word[0][0].split()[0][1:].upper()  # a piece of a name, in another case
    expected = {
        n
        for (n,) in rows(
            built_home,
            "SELECT node_id FROM memory_nodes WHERE contains(lower(name), lower(?))",
            [part],
        )
    }
    assert 1 < len(expected) <= 50
    status, page = get(base + "/search?" + urlencode({"q": part}))
    assert status == 200
    listed = {h.removeprefix("/node/") for h in links(page) if h.startswith("/node/")}
    assert listed == expected
    status, page = get(base + "/search?q=no-such-name-anywhere")
    assert status == 200 and "No node here" in text(page)
    assert get(base + "/search?q=%20")[0] == 400


def test_a_scoped_search_finds_nothing_outside_the_scope(built_home, scoped):
    base, nodes = scoped
    for outside in ("sibling", "account", "cousin"):
        status, reached = final_url(base + "/search?q=" + quote(nodes[outside]))
        assert status == 200 and "/search?" in reached  # not taken to it
    (path,) = rows(built_home, "SELECT path FROM memory_nodes WHERE node_id = ?", [nodes["scope"]])[
        0
    ]
    inside = {
        n
        for (n,) in rows(
            built_home,
            "SELECT node_id FROM memory_nodes WHERE contains(name, '#') "
            "AND (path = ? OR starts_with(path, ?))",
            [path, path + "/"],
        )
    }
    _, page = get(base + "/search?q=%23")
    listed = {h.removeprefix("/node/") for h in links(page) if h.startswith("/node/")}
    assert inside and listed == inside


def test_a_node_built_without_a_run_says_so(base, seat):
    _, page = get(base + node_url(seat[0]))
    assert "no Dagster run built this memory" in text(page)
    assert not [h for h in links(page) if "/runs/" in h]


def test_a_node_built_by_a_dagster_run_links_the_run_in_the_dagster_ui(tmp_path, snapshot_dir):
    import dagster as dg

    from hltm_assets.cli import main
    from hltm_assets.history import open_instance

    home = tmp_path / "home"
    assert main(["--home", str(home), "load", str(snapshot_dir)]) == 0
    assert main(["--home", str(home), "index"]) == 0
    settings = Settings(home=home, dagster_url="http://dagster.example:3001/")
    leaf, seat_id = rows(
        settings,
        "SELECT node_id, parent_id FROM memory_nodes WHERE level = 'project' ORDER BY 1 LIMIT 1",
    )[0]
    expected = {}
    with open_instance(settings) as instance:
        for node in (leaf, seat_id):
            level, raw = node.split(":", 1)
            records = instance.fetch_materializations(
                dg.AssetRecordsFilter(
                    asset_key=dg.AssetKey(f"{level}_memory"), asset_partitions=[raw]
                ),
                limit=1,
            ).records
            expected[node] = records[0].run_id
    before = files_of(home)
    with serving(settings) as base:
        for node, run_id in expected.items():
            _, page = get(base + node_url(node))
            assert f"http://dagster.example:3001/runs/{run_id}" in links(page)
    assert files_of(home) == before  # the run history is read, never written


def test_stale_memory_is_marked_on_the_node_and_in_its_parents_children(built_home, tmp_path):
    import shutil

    from hltm_resources.stores.memory_rows import add_pending, erase_rows

    home = tmp_path / "home"
    shutil.copytree(built_home.home, home)
    settings = Settings(home=home)
    seat_id = rows(
        settings, "SELECT min(node_id) FROM memory_nodes WHERE level = 'seat' AND leaf_count > 2"
    )[0][0]
    changed, emptied, fresh = [
        n
        for (n,) in rows(
            settings,
            "SELECT node_id FROM memory_nodes WHERE parent_id = ? ORDER BY 1 LIMIT 3",
            [seat_id],
        )
    ]
    with serving(settings) as base:  # before: nothing is stale
        for node in (seat_id, changed, emptied, fresh):
            assert "Stale:" not in text(get(base + node_url(node))[1])
    con = duckdb.connect(str(settings.duckdb_path))
    try:  # a write no build took (a killed writer leaves it), a deletion below, new hints
        add_pending(con, [changed])
        erase_rows(con, [], invalidate=[emptied])
        con.execute(
            "INSERT INTO adapt_hints VALUES (1, 'active', now(), now(), NULL, NULL, 0, '{}', "
            "'[]', '[]')"
        )
    finally:
        con.close()
    with serving(settings) as base:
        shown = text(get(base + node_url(changed))[1])
        assert "Stale:" in shown and "its documents changed since it was built" in shown
        assert "the active hints are v1" in shown
        shown = text(get(base + node_url(emptied))[1])
        assert "Stale:" in shown and "emptied by a deletion or a move below it" in shown
        seat_page = get(base + node_url(seat_id))[1]
        assert "1 project below changed since it was built" in text(seat_page)
        children = '<ul class="nodes">'
        items = {
            re.search(r'href="/node/([^"]+)"', li).group(1): text(li)
            for li in re.findall(r"<li>.*?</li>", seat_page.split(children)[1], flags=re.S)
        }
        assert "changed" in items[changed] and "emptied" in items[emptied]
        assert "changed" not in items[fresh] and "emptied" not in items[fresh]
        assert "old hints" in items[fresh]


@pytest.mark.parametrize(
    "sentence, key, value, states",
    [
        ("The role is in Lisbon, Portugal and is hybrid.", "location", "Lisbon, Portugal", True),
        ("Based in Lisbon.", "location", "Lisbon, Portugal", True),  # its head before a comma
        ("Based in Roma, near the river.", "location", "Rome, Italy", True),  # GeoNames' name
        ("Kubernetes is nice to have.", "location", "Nice, France", False),  # a place is a name
        ("The role is not remote.", "workplace_type", "remote", False),  # negated
        ("Fully onsite, five days a week.", "workplace_type", "on-site", True),  # its spelling
        ("Needs Python and SQL.", "skill", "Scala", False),
    ],
)
def test_a_sentence_is_marked_only_where_it_states_the_value(sentence, key, value, states):
    from query.inspector.highlight import marked

    pieces = marked(sentence, key, value)
    assert "".join(p.text for p in pieces) == sentence  # the document, verbatim
    assert any(p.marked for p in pieces) is states
