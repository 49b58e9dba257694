"""What each page reads, for one request's :class:`View`: a function per page returning the
template to render and its values (the templates only lay them out). Every read goes through
the view, so nothing outside the request's scope is read, shown or linked."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import parse_qs, quote

from hltm_resources.build.hints import load_active_hints
from hltm_resources.build.preview import support_text
from hltm_resources.errors import USER_ERRORS, QuestionError, ScopeError
from hltm_resources.ids import InvalidIdError, parse_node_id
from hltm_resources.ids import node_id as make_node_id
from hltm_resources.schema import TreeSchema
from hltm_resources.text import plural_s
from query.inspector.core import PageError, View
from query.nodes import (
    MAX_LISTED,
    Node,
    path_nodes,
    read_document,
    read_facets,
    read_leaf_documents,
    read_names,
    read_nodes,
    read_qa,
    read_summary,
    sot_path,
)

MAX_QUESTION_CHARS = 1000


@dataclass(frozen=True)
class Page:
    """A template and its values; ``title`` is the page's title (text)."""

    template: str
    title: str
    values: dict = field(default_factory=dict)


def node_path(node_id: str) -> str:
    return "/node/" + quote(node_id, safe=":@")


def doc_path(doc_id: str) -> str:
    return "/doc/" + quote(doc_id, safe=":@")  # doc ids may hold '/' and '#'


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
    """A node: who built it, its summary, facets, QA pairs, children and (leaves) documents."""
    schema = view.schema
    with view.connect() as con:
        node = view.node(con, node_id)
        crumbs = breadcrumbs(view, con, parent_path(node.path), node.name)
        active = load_active_hints(con).version
        facets = read_facets(con, node.node_id)
        qa = read_qa(con, node.node_id)
        summary = read_summary(con, node.node_id)
        children = read_nodes(con, "parent_id = ?", [node.node_id])
        is_leaf = schema.is_leaf(node.level)
        documents = (
            read_leaf_documents(con, schema, node.node_id.split(":", 1)[1])
            if is_leaf and not node.emptied
            else []
        )
    level = schema.level(node.level)
    child = schema.child(node.level)
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
            "summary": summary,
            "facets": facet_rows(schema, node, facets),
            "qa": qa,
            "children": [(c, child_size(schema, c)) for c in children[:MAX_LISTED]],
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


def doc_page(view: View, doc_id: str) -> Page:
    """A document's text, under its leaf (where the source of truth puts it now)."""
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
            "text": text,
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
