"""The memory inspector: a read-only web page over one home's memory (``hltm inspect``).

Pages are plain HTML rendered here, with plain links and a GET form for questions, so they work
without JavaScript and any client (curl) can read them; every piece of memory text is escaped,
since it comes from user documents. Each page reads the DuckDB file through its own short
read-only connection, so a page loaded after a rebuild shows the rebuilt memory. Questions go
through one :class:`query.Memory` (the serving path), which follows new table versions itself;
it is not thread-safe, so questions are asked one at a time.

Nothing is written to the home: the query log is off and an LLM engine's replies are not cached.
An inspector started with a scope node shows nothing outside that node's subtree (other nodes,
documents and questions are "not found") and links to nothing above it.
"""

from __future__ import annotations

import html
import logging
import socket
import socketserver
import threading
from collections.abc import Sequence
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, unquote

from hltm_resources.build.hints import load_active_hints
from hltm_resources.build.preview import support_text
from hltm_resources.config import ConfigError, Settings
from hltm_resources.engines import MemoryAgents
from hltm_resources.errors import USER_ERRORS, QuestionError, ScopeError
from hltm_resources.ids import InvalidIdError, parse_node_id
from hltm_resources.ids import node_id as make_node_id
from hltm_resources.schema import TreeSchema
from hltm_resources.stores import database
from hltm_resources.stores.database import StoreBusyError
from hltm_resources.text import plural_s
from query.memory import AskResult, Memory
from query.nodes import (
    MAX_LISTED,
    Node,
    path_nodes,
    read_document,
    read_facets,
    read_leaf_documents,
    read_names,
    read_node,
    read_nodes,
    read_qa,
    read_summary,
    sot_path,
)
from query.scope import Scope, check_open, resolve_scope

log = logging.getLogger(__name__)

#: The only hosts the inspector listens on: it serves the memory without authentication.
LOOPBACK_HOSTS = ("127.0.0.1", "::1", "localhost")
MAX_QUESTION_CHARS = 1000
#: How long a page waits for a writer (an index, a load) to release the DuckDB file.
STORE_WAIT_S = 5.0


class PageError(Exception):
    """A page that cannot be shown: its HTTP status, what went wrong and what to do."""

    def __init__(self, status: int, message: str, back: str = "/"):
        super().__init__(message)
        self.status = status
        self.back = back


def check_loopback(host: str) -> str:
    """``host`` if it is a loopback address; the inspector has no login, so nothing else."""
    if host not in LOOPBACK_HOSTS:
        raise ConfigError(
            f"--host {host!r} is not a loopback address: the inspector shows the memory without "
            f"a login, so it only listens on {', '.join(LOOPBACK_HOSTS)}; to open it from "
            "another machine, tunnel the port (ssh -L 8765:127.0.0.1:8765 HOST)"
        )
    return host


class _NoReplyCache:
    """An LLM reply cache that keeps nothing: the inspector must not write the home."""

    def get(self, key: str) -> None:
        return None

    def put(self, *args: object) -> None:
        return None


def serving_agents(settings: Settings) -> MemoryAgents | None:
    """The engine for the inspector's questions: an LLM engine without its reply cache (which
    lives in the home); None for the offline engine (``Memory`` makes it, it writes nothing)."""
    if settings.engine == "extractive":
        return None
    from hltm_resources.engines.base import Usage
    from hltm_resources.engines.llm.agents import OpenAIAgents
    from hltm_resources.engines.llm.client import LLMClient, server_context_tokens

    client = LLMClient(settings, Usage(), cache=_NoReplyCache())  # type: ignore[arg-type]
    return OpenAIAgents(
        client, settings.max_input_tokens, settings.schema, server_context_tokens(settings)
    )


# -- the application ---------------------------------------------------------------------------


class Inspector:
    """What every page needs: the home, the scope it may show, and the serving ``Memory``."""

    def __init__(self, settings: Settings, scope: str | None = None, memory: Memory | None = None):
        check_open(settings.duckdb_path)
        self.settings = settings
        self.schema = settings.schema
        self.scope_id: str | None = None
        if scope is not None:
            with self.connect() as con:  # raises ScopeError saying why (and the known nodes)
                self.scope_id = resolve_scope(con, scope, self.schema).node_id
        self.memory = memory or Memory(settings, agents=serving_agents(settings), log_queries=False)
        self._ask_lock = threading.Lock()

    def connect(self):
        """A short read-only connection to the home's DuckDB file."""
        return database.connect(self.settings.duckdb_path, read_only=True, timeout_s=STORE_WAIT_S)

    def scope(self, con) -> Scope | None:
        """The scope node where the memory places it now (read per page: a rebuild may move
        or delete it)."""
        if self.scope_id is None:
            return None
        try:
            return resolve_scope(con, self.scope_id, self.schema)
        except ScopeError:
            raise PageError(
                404,
                f"this inspector's scope {self.scope_id} is no longer in the memory (deleted?): "
                "restart hltm inspect with another --scope",
            ) from None

    def visible(self, con, path: str) -> bool:
        scope = self.scope(con)
        return scope is None or scope.contains(path)

    def node(self, con, node_id: str) -> Node:
        """The node if the memory holds it inside the scope, else 404 (the same answer for
        both, so nothing tells what lies outside the scope)."""
        try:
            node_id = str(parse_node_id(node_id, self.schema))
        except InvalidIdError as exc:
            raise PageError(404, f"{exc}; browse from the top page instead") from None
        node = read_node(con, node_id)
        if node is None or not self.visible(con, node.path):
            where = f" under {self.scope_id}" if self.scope_id else ""
            raise PageError(
                404, f"no node {node_id} in the memory{where}; browse from the top page"
            )
        return node

    def warm_up(self) -> None:
        """Load what the first question would (the model, the tables' indexes, the tree's
        values): ``hltm inspect`` runs this in the background as it starts serving pages, so
        the first question does not pay for it (at 10k leaves the first question in the
        largest account took 2.2 s cold, 0.66 s after it). Questions asked meanwhile wait."""
        with self._ask_lock:
            self.memory.warm_up()

    def ask(self, question: str, scope: str) -> AskResult:
        """One question at a time (``Memory`` is not thread-safe)."""
        with self._ask_lock:
            try:
                return self.memory.ask(question, scope=scope)
            except USER_ERRORS:  # the question, the scope or the home is wrong: say so
                raise
            except Exception:  # a rebuild under the open tables: reopen them, once
                log.warning("question failed; reopening the memory and asking again", exc_info=True)
                self.memory.refresh()
                return self.memory.ask(question, scope=scope)

    def close(self) -> None:
        self.memory.close()


# -- HTML helpers --------------------------------------------------------------------------------

esc = html.escape

CSS = """
:root{--fg:#1d2330;--muted:#5f6b7a;--line:#e2e6ee;--accent:#2a5db0;--bg:#f7f8fb}
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
 color:var(--fg);background:var(--bg)}
header{background:#1f2a44;color:#fff;padding:.55rem 1.5rem;display:flex;gap:1rem;
 align-items:baseline}
header a{color:#fff;text-decoration:none;font-weight:650}
header span{color:#b6c1d8;font-size:.85rem}
main{max-width:1100px;margin:0 auto;padding:.8rem 1.5rem 3rem}
nav{font-size:.9rem;color:var(--muted);margin:.3rem 0 .4rem}
h1{font-size:1.6rem;margin:.1rem 0}
h2{font-size:1.08rem;margin:1.5rem 0 .4rem;padding-bottom:.2rem;border-bottom:1px solid var(--line)}
a{color:var(--accent);text-decoration:none}
a:hover{text-decoration:underline}
code{font:.84em ui-monospace,SFMono-Regular,Menlo,monospace;background:#eceff5;
 padding:0 .3em;border-radius:3px}
.meta{color:var(--muted);font-size:.88rem;margin:.2rem 0}
.lead{font-size:1.1rem;font-weight:550;margin:.3rem 0}
.detail{font-size:.9rem;color:#3a4452;max-height:9em;overflow:auto;margin:.4rem 0 0}
.box{background:#fff;border:1px solid var(--line);border-radius:6px;padding:.7rem 1rem}
table{border-collapse:collapse;width:100%;font-size:.92rem;background:#fff}
th,td{text-align:left;vertical-align:top;padding:.28rem .6rem;border-bottom:1px solid var(--line)}
th{color:var(--muted);font-weight:600;white-space:nowrap}
td.key{color:var(--muted);white-space:nowrap;width:12rem}
.score{font-variant-numeric:tabular-nums;color:var(--muted);white-space:nowrap;width:4.5rem}
.src,.src a{font-size:.8rem;color:var(--muted)}
td.src{width:11rem}
.src a{margin-right:.4rem}
details summary{cursor:pointer;color:var(--muted);font-size:.8rem}
form.ask{display:flex;gap:.5rem;margin:.9rem 0;padding:.6rem;background:#fff;
 border:1px solid var(--line);border-radius:6px;align-items:center}
form.ask label{color:var(--muted);font-size:.9rem;white-space:nowrap}
form.ask input[type=text]{flex:1;font:inherit;padding:.35rem .6rem;border:1px solid #c3cad6;
 border-radius:4px}
button{font:inherit;padding:.35rem 1.1rem;border:0;border-radius:4px;background:var(--accent);
 color:#fff;cursor:pointer}
.answer{background:#fff;border-left:4px solid var(--accent);padding:.6rem 1rem;margin:.8rem 0;
 font-size:1.05rem}
.notice{background:#fff7e0;border:1px solid #ecd38c;padding:.45rem .8rem;border-radius:4px}
.error{background:#fdecec;border:1px solid #efb4b4;padding:.6rem .9rem;border-radius:4px}
ul.nodes{columns:2;padding-left:1.2rem}
ul.nodes li{break-inside:avoid}
pre{white-space:pre-wrap;background:#fff;border:1px solid var(--line);padding:1rem;
 border-radius:6px;font-size:.9rem}
footer{color:var(--muted);font-size:.8rem;text-align:center;padding:1rem}
"""


def page(title: str, body: str, crumbs: str = "") -> str:
    """A whole page; ``title`` is text, ``body`` and ``crumbs`` HTML built with :func:`esc`."""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)} · HLTM memory</title><style>{CSS}</style></head><body>"
        '<header><a href="/">HLTM memory</a><span>inspector · read-only</span></header>'
        f"<main>{crumbs}{body}</main>"
        "<footer>HLTM memory inspector: pages read the memory as it is now; "
        "nothing here changes it.</footer></body></html>"
    )


def node_href(node_id: str) -> str:
    return "/node/" + quote(node_id, safe=":@")


def doc_href(doc_id: str) -> str:
    return "/doc/" + quote(doc_id, safe=":@")  # doc ids may hold '/' and '#'


def link(href: str, text: str) -> str:
    return f'<a href="{esc(href)}">{esc(text)}</a>'


def node_link(node_id: str, names: dict[str, str] | None = None) -> str:
    """A node by name (its id beside it) when the name is known, else by id."""
    name = (names or {}).get(node_id)
    if name is None:
        return link(node_href(node_id), node_id)
    return f"{link(node_href(node_id), name)} <code>{esc(node_id)}</code>"


def provenance(ids: Sequence[str], to_documents: bool) -> str:
    """Source ids as links: documents at leaves, child nodes at parents."""
    href = doc_href if to_documents else node_href
    return " ".join(link(href(i), i) for i in ids)


def score(value: float) -> str:
    return f'<td class="score">{value:.3f}</td>'


def ask_form(node_id: str, name: str, question: str = "") -> str:
    """A plain GET form: works without JavaScript, and its URL can be bookmarked."""
    return (
        '<form class="ask" method="get" action="/ask">'
        f'<input type="hidden" name="scope" value="{esc(node_id)}">'
        f'<label for="q">Ask within {esc(name)}</label>'
        f'<input type="text" id="q" name="q" value="{esc(question)}" required '
        f'maxlength="{MAX_QUESTION_CHARS}" placeholder="e.g. Where are the jobs usually located?">'
        '<button type="submit">Ask</button></form>'
    )


def breadcrumbs(app: Inspector, con, above: str, last: str) -> str:
    """Links to the nodes on the path ``above`` inside the scope (none above the scope node),
    then ``last`` (text): where a page sits in the tree."""
    scope = app.scope(con)
    nodes = [n for n, p in path_nodes(app.schema, above) if scope is None or scope.contains(p)]
    names = read_names(con, nodes)
    items = [] if scope else [link("/", "top")]
    items += [link(node_href(n), names.get(n, n)) for n in nodes]
    return f"<nav>{' › '.join([*items, esc(last)])}</nav>"


def parent_path(path: str) -> str:
    return path.rpartition("/")[0]


def leaves(schema: TreeSchema, n: int) -> str:
    """``12 projects``, in the leaf level's noun."""
    return plural_s(n, schema.leaf.noun)


def listed(count: int, noun: str) -> str:
    """``12 projects`` (``1000+`` when a list was cut at :data:`MAX_LISTED`)."""
    shown = f"{MAX_LISTED}+" if count > MAX_LISTED else str(count)
    return f"{shown} {noun}"


# -- pages ---------------------------------------------------------------------------------------


def tree_page(app: Inspector) -> str:
    """The top level of the tree, or the scope node's page when the inspector has a scope."""
    if app.scope_id is not None:
        return node_page(app, app.scope_id)
    root = app.schema.root
    with app.connect() as con:
        nodes = read_nodes(con, "level = ?", [root.name])
        built = con.execute(
            "SELECT DISTINCT engine, hints_version FROM mem_nodes ORDER BY 1, 2"
        ).fetchall()
        active = load_active_hints(con).version
    if not nodes:
        body = (
            "<h1>No memory yet</h1><p>The home holds no built nodes: run "
            "<code>hltm load DIR</code> and <code>hltm index</code>, then reload this page.</p>"
        )
        return page("No memory yet", body)
    engines = ", ".join(f"<code>{esc(e)}</code> (hints v{v})" for e, v in built)
    items = "".join(
        f"<li>{node_link(n.node_id, {n.node_id: n.name})} · "
        f"{esc(leaves(app.schema, n.leaf_count))}</li>"
        for n in nodes[:MAX_LISTED]
    )
    body = (
        f"<h1>{esc(listed(len(nodes), root.nouns).capitalize())}</h1>"
        f'<p class="meta">tree {esc(" › ".join(app.schema.names))} · built by {engines} · '
        f"active hints v{active} · home <code>{esc(str(app.settings.home))}</code></p>"
        f'<ul class="nodes">{items}</ul>'
        '<p class="meta">Open a node to see its summary, facets and QA pairs, and to ask a '
        "question within it.</p>"
    )
    return page(f"All {root.nouns}", body)


def node_page(app: Inspector, node_id: str) -> str:
    """A node: who built it, its summary, facets, QA pairs, children and (leaves) documents."""
    with app.connect() as con:
        node = app.node(con, node_id)
        crumbs = breadcrumbs(app, con, parent_path(node.path), node.name)
        active = load_active_hints(con).version
        facets = read_facets(con, node.node_id)
        qa = read_qa(con, node.node_id)
        summary = read_summary(con, node.node_id)
        children = read_nodes(con, "parent_id = ?", [node.node_id])
        is_leaf = app.schema.is_leaf(node.level)
        documents = (
            read_leaf_documents(con, app.schema, node.node_id.split(":", 1)[1])
            if is_leaf and not node.emptied
            else []
        )
    parts = [heading_html(app.schema, node), built_html(node, active)]
    if node.emptied:
        parts.append(
            '<p class="notice">Emptied by a deletion or a move below it: its memory was erased '
            "and the next <code>hltm index</code> rebuilds it.</p>"
        )
    parts += [
        ask_form(node.node_id, node.name),
        summary_html(summary),
        facets_html(app.schema, node, facets),
        qa_html(app.schema, node, qa),
    ]
    if children:
        parts.append(children_html(app.schema, node, children))
    if is_leaf and not node.emptied:
        parts.append(documents_html(documents))
    return page(f"{node.name} ({node.node_id})", "".join(parts), crumbs)


def heading_html(schema: TreeSchema, node: Node) -> str:
    """The node's name, then its level (noun and name), id and size."""
    level = schema.level(node.level)
    facts = [
        f"{esc(level.noun)} (level <code>{esc(level.name)}</code>)",
        f"<code>{esc(node.node_id)}</code>",
    ]
    if not schema.is_leaf(node.level):
        facts.append(esc(leaves(schema, node.leaf_count)))
    return f'<h1>{esc(node.name)}</h1><p class="meta">{" · ".join(facts)}</p>'


def built_html(node: Node, active_hints: int) -> str:
    """Which engine, embedding model and hints version built the node (stored per node)."""
    when = node.built_at.strftime("%Y-%m-%d %H:%M UTC") if node.built_at else "?"
    stale = (
        f" (the active hints are v{active_hints}: the next <code>hltm index</code> rebuilds it)"
        if node.hints_version != active_hints
        else ""
    )
    return (
        f'<p class="meta">built by engine <code>{esc(node.engine)}</code> with hints '
        f"v{node.hints_version}{stale}, embeddings <code>{esc(node.embed_model)}</code>, "
        f"{esc(when)}</p>"
    )


def summary_html(summary: tuple[str, str] | None) -> str:
    if summary is None:
        return '<h2>Summary</h2><p class="meta">No summary stored.</p>'
    concise, detailed = summary
    return (
        '<h2>Summary</h2><div class="box">'
        f'<p class="lead">{esc(concise)}</p><p class="detail">{esc(detailed)}</p></div>'
    )


def facets_html(schema: TreeSchema, node: Node, facets: list) -> str:
    """Facets grouped by key; at parents each with its support: ``Dublin, Ireland: 9 of 12
    projects`` (the leaf level's noun), and its provenance (documents or child nodes)."""
    is_leaf = schema.is_leaf(node.level)
    shown = [f for f in facets if is_leaf or f[0] != schema.leaf_count_key]
    if not shown:
        return '<h2>Facets</h2><p class="meta">No facets stored.</p>'
    child = schema.child(node.level)
    source = "document" if child is None else child.noun
    rows, previous = [], None
    for key, value, support, sources in shown:
        label = esc(key.replace("_", " ")) if key != previous else ""
        previous = key
        text = value if is_leaf else f"{value}: {support_text(support, node.leaf_count, schema)}"
        rows.append(
            f'<tr><td class="key">{label}</td><td>{esc(text)}</td><td class="src"><details>'
            f"<summary>from {esc(plural_s(len(sources), source))}</summary>"
            f"{provenance(sources, is_leaf)}</details></td></tr>"
        )
    return f"<h2>Facets ({len(shown)})</h2><table>{''.join(rows)}</table>"


def qa_html(schema: TreeSchema, node: Node, qa: list) -> str:
    if not qa:
        return '<h2>QA pairs</h2><p class="meta">No QA pairs stored.</p>'
    is_leaf = schema.is_leaf(node.level)
    rows = "".join(
        f"<tr><td><b>{esc(q)}</b><br>{esc(a)}<br>"
        f'<span class="src">from {provenance(sources, is_leaf)}</span></td></tr>'
        for q, a, sources in qa
    )
    return f"<h2>QA pairs ({len(qa)})</h2><table>{rows}</table>"


def children_html(schema: TreeSchema, node: Node, children: list[Node]) -> str:
    child = schema.child(node.level)
    noun = child.nouns if child else "children"

    def size(c: Node) -> str:
        if schema.is_leaf(c.level):
            return plural_s(c.doc_count, "document")
        return leaves(schema, c.leaf_count)

    items = "".join(
        f"<li>{node_link(c.node_id, {c.node_id: c.name})} · {esc(size(c))}"
        + (" · <i>emptied</i>" if c.emptied else "")
        + "</li>"
        for c in children[:MAX_LISTED]
    )
    return f'<h2>{esc(listed(len(children), noun).capitalize())}</h2><ul class="nodes">{items}</ul>'


def documents_html(documents: list) -> str:
    if not documents:
        return '<h2>Documents</h2><p class="meta">No documents in the source of truth.</p>'
    rows = "".join(
        f"<tr><td>{link(doc_href(d), d)}</td><td>{esc(kind)}</td><td>{esc(updated)}</td>"
        f"<td>{esc(text[:140] + ('…' if len(text) > 140 else ''))}</td></tr>"
        for d, kind, updated, text in documents[:MAX_LISTED]
    )
    return (
        f"<h2>{esc(listed(len(documents), 'documents').capitalize())}</h2>"
        "<table><tr><th>document</th><th>kind</th><th>updated</th><th>text</th></tr>"
        f"{rows}</table>"
    )


def doc_page(app: Inspector, doc_id: str) -> str:
    """A document's text, under its leaf (where the source of truth puts it now)."""
    leaf_level = app.schema.leaf.name
    with app.connect() as con:
        row = read_document(con, app.schema, doc_id)
        path = sot_path(con, app.schema, row[0]) if row else None
        if row is None or path is None or not app.visible(con, path):
            where = f" under {app.scope_id}" if app.scope_id else ""
            raise PageError(404, f"no document {doc_id!r} in the memory{where}")
        leaf_raw, kind, updated, text = row
        leaf_id = make_node_id(leaf_level, leaf_raw)
        crumbs = breadcrumbs(app, con, path, doc_id)
        names = read_names(con, [leaf_id])
    body = (
        f"<h1>Document <code>{esc(doc_id)}</code></h1>"
        f'<p class="meta">{esc(kind)} · updated {esc(updated)} · of '
        f"{node_link(leaf_id, names)}</p><pre>{esc(text)}</pre>"
    )
    return page(f"Document {doc_id}", body, crumbs)


def query_params(query: str, names: Sequence[str] = ("scope", "q")) -> dict[str, str]:
    """The named parameters of a query string, each at most once (400 otherwise)."""
    usage = "use /ask?scope=<node id>&q=<question>, URL-encoded as UTF-8"
    try:
        parsed = parse_qs(query, keep_blank_values=True, errors="strict", max_num_fields=20)
    except ValueError as exc:  # bad UTF-8 (UnicodeDecodeError is one), too many fields
        raise PageError(400, f"the query string cannot be read ({exc}): {usage}") from None
    for name in names:
        if len(parsed.get(name, [])) > 1:
            raise PageError(400, f"{name!r} is given more than once: give it once; {usage}")
    return {name: parsed[name][0] for name in names if name in parsed}


def ask_page(app: Inspector, query: str) -> str:
    """The answer to ``q`` within the node ``scope``: citations and the retrieved context."""
    params = query_params(query)
    scope_id, question = params.get("scope", ""), params.get("q", "")
    if not scope_id:
        raise PageError(400, "no scope: ask from a node's page, or use /ask?scope=<node id>&q=...")
    try:
        parse_node_id(scope_id, app.schema)
    except InvalidIdError as exc:
        raise PageError(400, f"scope rejected: {exc}") from None
    with app.connect() as con:
        node = app.node(con, scope_id)  # 404 outside the inspector's scope: never answered
    back = node_href(node.node_id)
    if not question.strip():
        raise PageError(400, "the question is empty: type one in the form on the node's page", back)
    if len(question) > MAX_QUESTION_CHARS:
        raise PageError(
            400, f"the question is longer than {MAX_QUESTION_CHARS} characters: shorten it", back
        )
    try:
        result = app.ask(question, node.node_id)
    except QuestionError as exc:
        raise PageError(400, str(exc), back) from None
    except ScopeError as exc:  # deleted since the page was read
        raise PageError(404, str(exc)) from None
    except USER_ERRORS as exc:  # e.g. built but not indexed, or another embedding model
        raise PageError(503, str(exc), back) from None
    cited = set(result.references) | _context_nodes(result.contexts)
    with app.connect() as con:
        names = read_names(con, cited | {node.node_id})
        crumbs = breadcrumbs(app, con, node.path, "answer")
    body = (
        f"<h1>{esc(question)}</h1>"
        f'<p class="meta">asked within {node_link(node.node_id, names)}</p>'
        + ask_form(node.node_id, node.name, question)
        + answer_html(result, names)
        + context_html(app.schema, result.contexts, names)
    )
    return page(question, body, crumbs)


def _context_nodes(contexts: dict[str, list[dict]]) -> set[str]:
    return {item["node_id"] for items in contexts.values() for item in items}


def answer_html(result: AskResult, names: dict[str, str]) -> str:
    refs = "".join(f"<li>{node_link(r, names)}</li>" for r in result.references)
    cites = f"<ol>{refs}</ol>" if refs else '<p class="meta">No node cited.</p>'
    t = result.timings
    return (
        f'<h2>Answer</h2><div class="answer">{esc(result.answer)}</div>'
        f"<h2>Citations ({len(result.references)})</h2>{cites}"
        f'<p class="meta">{esc(result.parsed.get("kind", ""))} question · micro-queries: '
        f"{esc(', '.join(result.parsed.get('micro_queries', [])) or 'none')} · retrieval "
        f"{t.get('retrieval_ms', 0):.0f} ms, answer {t.get('answer_ms', 0):.0f} ms · "
        f"{result.llm_calls} LLM calls</p>"
    )


def context_html(schema: TreeSchema, contexts: dict[str, list[dict]], names: dict) -> str:
    """What each view retrieved, with its scores (as ``Memory.ask`` reports them)."""
    leaf = schema.leaf.name

    def row(item: dict, cell: str) -> str:
        return f"<tr>{score(item['score'])}<td>{node_link(item['node_id'], names)}</td>{cell}</tr>"

    def facets(node: dict) -> str:
        scored = (
            f"{esc(f['text'])} <span class=src>({f['score']:.3f})</span>" for f in node["facets"]
        )
        return f"<td>{'; '.join(scored)}</td>"

    def qa(item: dict) -> str:
        sources = provenance(item["source_ids"], item["level"] == leaf)
        return (
            f"<td><b>{esc(item['text'])}</b><br>{esc(item.get('answer') or '')}<br>"
            f"<span class=src>from {sources}</span></td>"
        )

    def evidence(item: dict) -> str:
        sources = provenance(item["source_ids"], True)
        return f"<td>{esc(item['text'])}<br><span class=src>{sources}</span></td>"

    views = (
        ("Facets", "node score; each facet's own in brackets", "facets", facets),
        ("QA pairs", "question cosine", "qa", qa),
        (
            "Summaries",
            "cosine with the one-sentence summary",
            "summaries",
            lambda i: f"<td>{esc(i['text'])}</td>",
        ),
        ("Evidence", "dense + BM25, fused by rank", "evidence", evidence),
    )
    out = ["<h2>Retrieved context</h2>"]
    for title, meaning, view, cell in views:
        rows = "".join(row(item, cell(item)) for item in contexts.get(view, []))
        out.append(f"<h3>{title}</h3>")
        out.append(
            f'<table><tr><th>score</th><th>node</th><th class="meta">{esc(meaning)}</th></tr>'
            f"{rows}</table>"
            if rows
            else '<p class="meta">nothing retrieved</p>'
        )
    return "".join(out)


def error_page(exc: PageError) -> str:
    reason = HTTPStatus(exc.status).phrase
    back = "the top page" if exc.back == "/" else "the node"
    body = (
        f"<h1>{exc.status} {esc(reason)}</h1><p class=error>{esc(str(exc))}</p>"
        f"<p>{link(exc.back, 'Back to ' + back)}</p>"
    )
    return page(f"{exc.status} {reason}", body)


# -- the router and the server ------------------------------------------------------------------


def route(app: Inspector, target: str) -> tuple[int, str]:
    """(status, HTML) of a GET of ``target`` (the request's path and query string)."""
    path, _, query = target.partition("?")
    path = path.partition("#")[0]
    try:
        if path == "/":
            return 200, tree_page(app)
        if path.startswith("/node/"):
            return 200, node_page(app, _unquoted(path.removeprefix("/node/")))
        if path.startswith("/doc/"):
            return 200, doc_page(app, _unquoted(path.removeprefix("/doc/")))
        if path == "/ask":
            return 200, ask_page(app, query)
        raise PageError(404, f"there is no page at {path}: start from the top page")
    except PageError as exc:
        return exc.status, error_page(exc)
    except StoreBusyError as exc:
        return 503, error_page(PageError(503, f"{exc}; reload this page in a moment"))
    except Exception:  # one failed page must not stop the server
        log.exception("page %s failed", target)
        message = "this page failed (the server's log says why): reload it; if it keeps failing, "
        return 500, error_page(PageError(500, message + "report the log"))


def _unquoted(part: str) -> str:
    try:
        return unquote(part, errors="strict")
    except UnicodeDecodeError:
        raise PageError(
            400, "the address is not URL-encoded UTF-8: follow a link instead"
        ) from None


#: What a page may load: its own inline style and forms to itself. No script runs, even if some
#: memory text slipped past escaping.
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; "
        "frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def _loopback_name(host_header: str | None) -> bool:
    """Whether a request names a loopback host (a page from elsewhere that rebinds its DNS
    name to 127.0.0.1 sends its own name, and is refused)."""
    if host_header is None:
        return True  # HTTP/1.0 clients may omit it
    host = host_header.strip()
    host = host[1 : host.find("]")] if host.startswith("[") else host.rsplit(":", 1)[0]
    return host.lower() in LOOPBACK_HOSTS


class _Handler(BaseHTTPRequestHandler):
    server: InspectorServer
    server_version = "hltm-inspect"

    def do_GET(self) -> None:  # http.server's name for it
        if _loopback_name(self.headers.get("Host")):
            status, body = route(self.server.app, self.path)
        else:
            status = 400
            body = error_page(
                PageError(400, "this server only answers requests for 127.0.0.1 or localhost")
            )
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        for name, value in SECURITY_HEADERS.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        log.info("%s " + format, self.address_string(), *args)


class InspectorServer(ThreadingHTTPServer):
    """The inspector on a loopback address (port 0: any free port); one thread per request."""

    daemon_threads = True

    def __init__(self, app: Inspector, host: str = "127.0.0.1", port: int = 8765):
        check_loopback(host)
        if ":" in host:
            self.address_family = socket.AF_INET6
        self.app = app
        super().__init__((host, port), _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind looks up the host's FQDN, which can stall without DNS.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = str(self.server_address[0]), self.server_address[1]

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        shown = f"[{host}]" if ":" in str(host) else host
        return f"http://{shown}:{port}/"
