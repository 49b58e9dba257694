"""What each page reads, for one request's :class:`View`: a function per page returning the
template to render and its values (the templates only lay them out). Every read goes through
the view, so nothing outside the request's scope is read, shown or linked."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import parse_qs, quote, urlencode

from hltm_resources.engines.understanding import MENTION_KEY as MENTION
from hltm_resources.errors import USER_ERRORS, QuestionError, ScopeError
from hltm_resources.ids import InvalidIdError, parse_node_id
from hltm_resources.ids import node_id as make_node_id
from hltm_resources.indexing.hints import load_active_hints
from hltm_resources.indexing.preview import support_text
from hltm_resources.schema import TreeSchema
from hltm_resources.text import plural_s
from query.inspector.core import PageError, View
from query.inspector.highlight import Piece, marked
from query.nodes import (
    MAX_LISTED,
    Node,
    path_nodes,
    read_build_run,
    read_document,
    read_facets,
    read_history,
    read_leaf_documents,
    read_names,
    read_nodes,
    read_pending_paths,
    read_qa,
    read_summary,
    sot_path,
)

MAX_QUESTION_CHARS = 1000
#: Longest value a document page highlights, and longest search (characters).
MAX_VALUE_CHARS = 300
#: Matches the search page lists at most.
MAX_FOUND = 50


@dataclass(frozen=True)
class Page:
    """A template and its values; ``title`` is the page's title (text)."""

    template: str
    title: str
    values: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Redirect:
    """Go to another page of the inspector (``path``, inside its mount)."""

    path: str


def node_path(node_id: str) -> str:
    return "/node/" + quote(node_id, safe=":@")


def doc_path(doc_id: str) -> str:
    return "/doc/" + quote(doc_id, safe=":@")  # doc ids may hold '/' and '#'


def marked_doc_path(doc_id: str, key: str | None, value: str) -> str:
    """A document's page with the sentences stating ``key: value`` marked."""
    return doc_path(doc_id) + "?" + urlencode({"key": key or "", "value": value})


def leaves(schema: TreeSchema, n: int) -> str:
    """``12 projects``, in the leaf level's noun."""
    return plural_s(n, schema.leaf.noun)


def listed(count: int, noun: str) -> str:
    """``12 projects`` (``1000+`` when a list was cut at :data:`MAX_LISTED`)."""
    shown = f"{MAX_LISTED}+" if count > MAX_LISTED else str(count)
    return f"{shown} {noun}"


def breadcrumbs(view: View, con, above: str, last: str) -> list[tuple[str | None, str]]:
    """(path or None, text) of the nodes on the path ``above`` inside the scope (none above
    the scope node), then ``last`` (no link): where a page sits in the tree."""
    scope = view.scope(con)
    nodes = [n for n, p in path_nodes(view.schema, above) if scope is None or scope.contains(p)]
    names = read_names(con, nodes)
    items: list[tuple[str | None, str]] = [] if scope else [("/", "top")]
    items += [(node_path(n), names.get(n, n)) for n in nodes]
    return [*items, (None, last)]


def parent_path(path: str) -> str:
    return path.rpartition("/")[0]


# -- the pages ---------------------------------------------------------------------------------


def tree_page(view: View) -> Page:
    """The top level of the tree, or the scope node's page when the request has a scope."""
    if view.scope_id is not None:
        return node_page(view, view.scope_id)
    schema = view.schema
    with view.connect() as con:
        nodes = read_nodes(con, "level = ?", [schema.root.name])
        built = con.execute(
            "SELECT DISTINCT engine, hints_version FROM mem_nodes ORDER BY 1, 2"
        ).fetchall()
        active = load_active_hints(con).version
    if not nodes:
        return Page("empty.html", "No memory yet")
    return Page(
        "tree.html",
        f"All {schema.root.nouns}",
        {
            "heading": listed(len(nodes), schema.root.nouns).capitalize(),
            "levels": schema.names,
            "built": built,
            "active": active,
            "home": str(view.settings.home),
            "nodes": [(n, leaves(schema, n.leaf_count)) for n in nodes[:MAX_LISTED]],
        },
    )


def node_page(view: View, node_id: str) -> Page:
    """A node: who built it (and the Dagster run), whether its memory is stale, its summary,
    facets, QA pairs, children and (leaves) documents."""
    schema = view.schema
    with view.connect() as con:
        node = view.node(con, node_id)
        crumbs = breadcrumbs(view, con, parent_path(node.path), node.name)
        active = load_active_hints(con).version
        facets = read_facets(con, node.node_id)
        qa = read_qa(con, node.node_id)
        replaced = read_history(con, node.node_id)
        summary = read_summary(con, node.node_id)
        children = read_nodes(con, "parent_id = ?", [node.node_id])
        pending = read_pending_paths(con, schema)
        is_leaf = schema.is_leaf(node.level)
        documents = (
            read_leaf_documents(con, schema, node.node_id.split(":", 1)[1])
            if is_leaf and not node.emptied
            else []
        )
    level = schema.level(node.level)
    child = schema.child(node.level)
    run = None if view.settings.distributed else read_build_run(view.settings.home, schema, node)
    return Page(
        "node.html",
        f"{node.name} ({node.node_id})",
        {
            "crumbs": crumbs,
            "node": node,
            "level": level,
            "is_leaf": is_leaf,
            "size": None if is_leaf else leaves(schema, node.leaf_count),
            "active_hints": active,
            "run": run,
            "run_url": f"{view.settings.dagster_url}/runs/{quote(run.run_id)}"
            if run and run.run_id
            else None,
            "history": "PostgreSQL" if view.settings.distributed else None,
            "stale": stale(schema, node, pending, active),
            "summary": summary,
            "facets": facet_rows(schema, node, facets),
            "replaced": replaced,
            "qa": qa,
            "children": [
                (c, child_size(schema, c), stale(schema, c, pending, active))
                for c in children[:MAX_LISTED]
            ],
            "children_heading": listed(
                len(children), child.nouns if child else "children"
            ).capitalize(),
            "documents": None
            if not is_leaf or node.emptied
            else [(d, kind, upd, excerpt(text)) for d, kind, upd, text in documents[:MAX_LISTED]],
            "documents_heading": listed(len(documents), "documents").capitalize(),
            "max_question_chars": MAX_QUESTION_CHARS,
        },
    )


def stale(schema: TreeSchema, node: Node, pending: dict[str, str], active_hints: int) -> list:
    """Why the node's memory is not what the next ``hltm index`` would build, as (short
    label, sentence) pairs: emptied, its source of truth changed by a write no build has taken
    yet (the leaf, or leaves below it), built with other hints than the active ones."""
    out = []
    if node.emptied:
        out.append(
            (
                "emptied",
                "emptied by a deletion or a move below it: its memory was erased and the next "
                "hltm index rebuilds it",
            )
        )
    if node.node_id in pending:
        out.append(
            (
                "changed",
                "its documents changed since it was built (a write no build has taken yet)",
            )
        )
    else:
        below = [n for n, p in pending.items() if p.startswith(node.path + "/")]
        if below:
            out.append(
                (
                    "changed",
                    f"{leaves(schema, len(below))} below changed since it was built (writes no "
                    "build has taken yet)",
                )
            )
    if node.hints_version != active_hints:
        out.append(
            (
                "old hints",
                f"built with hints v{node.hints_version}; the active hints are v{active_hints}",
            )
        )
    return out


def facet_rows(schema: TreeSchema, node: Node, facets: list) -> list[dict]:
    """Facets grouped by key (the key shown on a key's first row); at parents each with its
    support, ``Dublin, Ireland: 9 of 12 projects`` in the leaf level's noun, and its
    provenance (documents at a leaf, child nodes at parents)."""
    is_leaf = schema.is_leaf(node.level)
    child = schema.child(node.level)
    source = "document" if child is None else child.noun
    rows, previous = [], None
    for key, value, support, sources in facets:
        if not is_leaf and key == schema.leaf_count_key:
            continue
        text = value if is_leaf else f"{value}: {support_text(support, node.leaf_count, schema)}"
        rows.append(
            {
                "label": key.replace("_", " ") if key != previous else "",
                "key": key,
                "value": value,
                "text": text,
                "sources": list(sources),
                "sources_text": plural_s(len(sources), source),
                # At a leaf, each document with the sentences that state the value marked.
                "links": [
                    (marked_doc_path(d, key, value) if is_leaf else node_path(d), d)
                    for d in sources
                ],
            }
        )
        previous = key
    return rows


def excerpt(text: str, chars: int = 140) -> str:
    return text[:chars] + ("…" if len(text) > chars else "")


def child_size(schema: TreeSchema, c: Node) -> str:
    if schema.is_leaf(c.level):
        return plural_s(c.doc_count, "document")
    return leaves(schema, c.leaf_count)


def doc_page(view: View, doc_id: str, query: str = "") -> Page:
    """A document's text, under its leaf (where the source of truth puts it now); with
    ``?key=&value=``, the sentences that state that value marked (or a note that none does)."""
    usage = "use /doc/<document id>?key=<facet key>&value=<value>, URL-encoded as UTF-8"
    params = query_params(query, ("key", "value"), usage)
    key, value = params.get("key", ""), params.get("value", "")
    if len(value) > MAX_VALUE_CHARS or len(key) > MAX_VALUE_CHARS:
        raise PageError(400, f"the value to mark is longer than {MAX_VALUE_CHARS} characters")
    schema = view.schema
    with view.connect() as con:
        row = read_document(con, schema, doc_id)
        path = sot_path(con, schema, row[0]) if row else None
        if row is None or path is None or not view.visible(con, path):
            raise PageError(404, f"no document {doc_id!r} in the memory{view.where()}")
        leaf_raw, kind, updated, text = row
        leaf_id = make_node_id(schema.leaf.name, leaf_raw)
        crumbs = breadcrumbs(view, con, path, doc_id)
        names = read_names(con, [leaf_id])
    pieces = marked(text, key, value) if value.strip() else [Piece(text)]
    return Page(
        "doc.html",
        f"Document {doc_id}",
        {
            "crumbs": crumbs,
            "doc_id": doc_id,
            "kind": kind,
            "updated": updated,
            "leaf_id": leaf_id,
            "names": names,
            "pieces": pieces,
            "key": key,
            "value": value if value.strip() else None,
            "found": sum(p.marked for p in pieces),
        },
    )


def search_page(view: View, query: str) -> Page | Redirect:
    """Nodes by id or name within the request's scope: an exact id goes to its page, else
    the nodes whose name holds ``q`` (any case), at most :data:`MAX_FOUND`."""
    usage = "use /search?q=<a node's name or id>"
    q = query_params(query, ("q",), usage).get("q", "").strip()
    if not q:
        raise PageError(400, "nothing to find: type part of a node's name, or its id")
    if len(q) > MAX_VALUE_CHARS:
        raise PageError(400, f"the search is longer than {MAX_VALUE_CHARS} characters")
    schema = view.schema
    with view.connect() as con:
        scope = view.scope(con)
        try:
            exact = view.node(con, q)  # parsed and confined to the scope first
        except PageError:
            exact = None
        if exact is not None:
            return Redirect(node_path(exact.node_id))
        where, params = "contains(lower(name), lower(?))", [q]
        if scope is not None:  # the scope node and what lies under it
            where += " AND (path = ? OR starts_with(path, ?))"
            params += [scope.path, scope.path + "/"]
        rows = con.execute(
            "SELECT node_id, level, name, path, leaf_count, doc_count FROM mem_nodes "
            f"WHERE {where} ORDER BY length(name), name, node_id LIMIT {MAX_FOUND + 1}",
            params,
        ).fetchall()
        crumbs = breadcrumbs(view, con, "", "search") if scope is None else None
    found = [
        {
            "node_id": node_id,
            "name": name,
            "level": schema.level(level).noun if schema.has(level) else level,
            "size": plural_s(docs, "document") if schema.is_leaf(level) else leaves(schema, count),
        }
        for node_id, level, name, _, count, docs in rows[:MAX_FOUND]
    ]
    return Page(
        "search.html",
        f"Find {q}",
        {
            "crumbs": crumbs,
            "q": q,
            "found": found,
            "more": len(rows) > MAX_FOUND,
            "max_found": MAX_FOUND,
        },
    )


def query_params(query: str, names: Sequence[str], usage: str) -> dict[str, str]:
    """The named parameters of a query string, each at most once (400 otherwise)."""
    try:
        parsed = parse_qs(query, keep_blank_values=True, errors="strict", max_num_fields=20)
    except ValueError as exc:  # bad UTF-8 (UnicodeDecodeError is one), too many fields
        raise PageError(400, f"the query string cannot be read ({exc}): {usage}") from None
    for name in names:
        if len(parsed.get(name, [])) > 1:
            raise PageError(400, f"{name!r} is given more than once: give it once; {usage}")
    return {name: parsed[name][0] for name in names if name in parsed}


def ask_page(view: View, query: str) -> Page:
    """The answer to ``q`` within the node ``scope``: citations and the retrieved context."""
    usage = "use /ask?scope=<node id>&q=<question>, URL-encoded as UTF-8"
    params = query_params(query, ("scope", "q"), usage)
    scope_id, question = params.get("scope", ""), params.get("q", "")
    if not scope_id:
        raise PageError(400, "no scope: ask from a node's page, or use /ask?scope=<node id>&q=...")
    try:
        parse_node_id(scope_id, view.schema)
    except InvalidIdError as exc:
        raise PageError(400, f"scope rejected: {exc}") from None
    with view.connect() as con:
        node = view.node(con, scope_id)  # 404 outside the request's scope: never answered
    back = node_path(node.node_id)
    if not question.strip():
        raise PageError(400, "the question is empty: type one in the form on the node's page", back)
    if len(question) > MAX_QUESTION_CHARS:
        raise PageError(
            400, f"the question is longer than {MAX_QUESTION_CHARS} characters: shorten it", back
        )
    try:
        result = view.ask(question, node.node_id)
    except QuestionError as exc:
        raise PageError(400, str(exc), back) from None
    except ScopeError as exc:  # deleted since the page was read
        raise PageError(404, str(exc)) from None
    except USER_ERRORS as exc:  # e.g. built but not indexed, or another embedding model
        raise PageError(503, str(exc), back) from None
    contexts = result.contexts
    cited = set(result.references) | {i["node_id"] for items in contexts.values() for i in items}
    cited |= {n for rs in result.reasons.values() for r in rs for n in r.get("leaves", ())}
    with view.connect() as con:
        names = read_names(con, cited | {node.node_id})
        crumbs = breadcrumbs(view, con, node.path, "answer")
    leaf = view.schema.leaf.name
    return Page(
        "ask.html",
        question,
        {
            "crumbs": crumbs,
            "node": node,
            "question": question,
            "result": result,
            "names": names,
            "why": {
                ref: [reason_line(view.schema, r) for r in result.reasons.get(ref, [])]
                for ref in result.references
            },
            "kind": result.parsed.get("kind", ""),
            "micro_queries": ", ".join(result.parsed.get("micro_queries", [])) or "none",
            "views": [
                ("Facets", "node score; each facet's own in brackets", "facets"),
                ("QA pairs", "question cosine", "qa"),
                ("Summaries", "cosine with the one-sentence summary", "summaries"),
                ("Evidence", "dense + BM25, fused by rank", "evidence"),
            ],
            "contexts": contexts,
            "leaf_level": leaf,
            "max_question_chars": MAX_QUESTION_CHARS,
        },
    )


#: The views of the retrieved context, as the answer page names them.
VIEW_TITLES = {
    "facets": "facets",
    "qa": "QA pairs",
    "summaries": "summaries",
    "evidence": "evidence",
}


def reason_line(schema: TreeSchema, reason: dict) -> dict:
    """One reason a node is cited (:func:`query.citations.why_cited`) as the answer page
    says it: a sentence, then links (documents with the value marked, or nodes), then the
    words quoted from a passage."""
    by = reason.get("by")
    key = reason.get("key")
    label = (key or "").replace("_", " ")
    value = str(reason.get("value", ""))
    text, links, quote_ = "", [], ""
    if by == "facet":
        asked = reason.get("asked") or value
        text = f"met “{label}: {asked}” by its facet"
        if asked != value:  # "Lisbon" by "Lisbon, Portugal"
            text += f" “{label}: {value}”"
    elif by == "evidence":
        doc = reason["doc_id"]
        text = f"names “{value}” in" if key == MENTION else f"met “{label}: {value}” by evidence in"
        links = [(marked_doc_path(doc, key, value), doc)]
    elif by == "subject":
        text = f"one of the {schema.leaf.nouns} the question is about"
    elif by == "finding":
        text = f"holds “{label}: {value}”, from" if key else f"holds “{value}”, from"
        links = [(marked_doc_path(d, key, value), d) for d in reason.get("source_ids", [])]
        quote_ = reason.get("quote", "")
    elif by == "group":
        held = reason.get("leaves", [])
        text = f"holds {leaves(schema, len(held))} that meet the question:"
        links = [(node_path(n), n) for n in held]
    elif by == "distribution":
        text = f"the answer counts its {label} over {leaves(schema, reason.get('counted', 0))}"
    elif by == "retrieved":
        view = VIEW_TITLES.get(reason.get("view", ""), reason.get("view", ""))
        text = f"retrieved by the {view} view (score {reason.get('score', 0):.3f})"
    return {"by": by, "text": text, "links": links, "quote": quote_}
