"""Writes of one item for agents: ``remember`` a text at a leaf, ``forget`` a document or a
node, ``apply`` a batch of changes.

When the home's memory service runs (``hltm serve``; it leaves ``<home>/service.json``), every
write goes through it: it queues writes from any number of clients and answers once the leaf is
built, so a question at the leaf's scope finds the new text as soon as a call returns (its
seat and account follow within seconds). When none runs, the write is applied here and built
with ``build`` (the CLI passes one that runs the Dagster assets; by default the plain indexer,
which records no Dagster run).

This module never imports Dagster; it talks to the service over HTTP with the standard library.
"""

from __future__ import annotations

import hashlib
import json
import os
import urllib.error
import urllib.request
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from hltm_resources.config import Settings
from hltm_resources.ids import check_raw_id, parse_node_id
from hltm_resources.indexing.writes import Build, write
from hltm_resources.schema import TreeSchema
from hltm_resources.stores.changes import DOCUMENT, Change, ChangeError, parse_changes
from hltm_resources.stores.lock import running_service

#: Seconds a direct write (no service) waits for another writer of the home.
DIRECT_LOCK_WAIT_S = 120.0


class ServiceError(RuntimeError):
    """The memory service applied a write but could not build it (yet), or failed."""


def now_iso() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


#: The running services' keys by URL, as :func:`service_url` found them.
_KEYS: dict[str, str] = {}


def service_url(settings: Settings) -> str | None:
    """The URL of the home's running memory service, or None. Its key (in
    ``<home>/service.json``, which only the home's owner reads) is kept for
    :func:`auth_headers`: this user's requests to it need no token."""
    info = running_service(settings.home)
    if not info:
        return None
    url = str(info["url"])
    if info.get("key"):
        _KEYS[url] = str(info["key"])
    return url


def remember_changes(
    schema: TreeSchema,
    leaf: str,
    text: str,
    kind: str = "note",
    doc_id: str | None = None,
    at: str | None = None,
    name: str | None = None,
    parent: str | None = None,
) -> tuple[list[dict], str]:
    """The changes that store ``text`` as a document of ``leaf`` (:meth:`Writer.remember`),
    and the document's id."""
    raw = raw_id(schema, leaf, schema.leaf.name)
    at = at or now_iso()
    if doc_id is None:
        digest = hashlib.sha256(f"{raw}\n{at}\n{text}".encode()).hexdigest()[:16]
        doc_id = f"{raw}-{digest}"
    changes: list[dict] = []
    if parent is not None or name is not None:
        if parent is None or name is None:
            raise ChangeError.saying(
                f"to create or update {leaf}, give both its parent and its name "
                "(nothing was written)"
            )
        leaf_level = schema.leaf
        parent_field = schema.parent(leaf_level.name).id_field
        record = {leaf_level.id_field: raw, parent_field: parent, "name": name}
        if "updated_at" in schema.fields(leaf_level.name):
            record["updated_at"] = at
        changes.append({"op": "upsert", "level": leaf_level.name, "record": record})
    document = {
        "doc_id": doc_id,
        schema.leaf.id_field: raw,
        "kind": kind,
        "text": text,
        "updated_at": at,
    }
    changes.append({"op": "upsert", "level": DOCUMENT, "record": document})
    return changes, doc_id


def forget_change(schema: TreeSchema, target: str) -> dict:
    """The change that erases ``target``: a node and its subtree (``<level>:<id>``), or else
    the document of that id."""
    level, _, raw = target.partition(":")
    if raw and schema.has(level):
        node = parse_node_id(target, schema)
        return {"op": "delete", "level": node.level, "id": node.raw}
    return {"op": "delete", "level": DOCUMENT, "id": target}


def raw_id(schema: TreeSchema, value: str, level: str) -> str:
    """``value``'s raw id at ``level``, given raw or as ``<level>:<id>``."""
    prefix = f"{level}:"
    raw = value[len(prefix) :] if value.startswith(prefix) else value
    return check_raw_id(raw, schema.level(level).id_field)


class Writer:
    """remember / forget / apply on one home (:mod:`query.writer`)."""

    def __init__(self, settings: Settings, build: Build | None = None, timeout_s: float = 300.0):
        self.settings = settings
        self.schema = settings.schema
        self.build = build
        self.timeout_s = timeout_s

    @classmethod
    def open(cls, home: str | Path | None = None, **overrides: object) -> Writer:
        return cls(Settings.from_env(home=home, **overrides))

    # -- the calls -------------------------------------------------------------------------
    def remember(
        self,
        leaf: str,
        text: str,
        kind: str = "note",
        doc_id: str | None = None,
        at: str | None = None,
        name: str | None = None,
        parent: str | None = None,
        wait: str = "leaf",
    ) -> dict:
        """Store ``text`` as a document of ``leaf`` (a raw id or ``project:<id>``) and build.

        ``doc_id`` defaults to one derived from the leaf, the text and its time (the same
        call twice stores one document); ``at`` (ISO 8601, default now) is its ``updated_at``.
        A leaf that does not exist yet is created when ``parent`` (its seat's raw id) and
        ``name`` are given; given for an existing leaf they update it (a move, a rename)."""
        changes, doc_id = remember_changes(self.schema, leaf, text, kind, doc_id, at, name, parent)
        return self.apply(changes, source="remember", wait=wait) | {"doc_id": doc_id}

    def forget(self, target: str, wait: str = "leaf") -> dict:
        """Erase a document (its doc id) or a node and its subtree (``<level>:<id>``), from
        every store, and rebuild what held it."""
        change = forget_change(self.schema, target)
        return self.apply([change], source="forget", wait=wait)

    def apply(
        self, changes: Iterable[dict | Change], source: str = "changes", wait: str = "leaf"
    ) -> dict:
        """Apply a batch of changes (dicts as in a change feed, or :class:`Change`), refused
        whole if any is invalid (:class:`ChangeError`, nothing written)."""
        parsed = parse_changes(list(changes), self.schema, source)
        url = service_url(self.settings)
        if url is not None:
            return self._through(url, parsed, source, wait)
        report = write(
            self.settings, parsed, source, build=self.build, lock_wait_s=DIRECT_LOCK_WAIT_S
        )
        return report.as_dict() | {"through": "direct"}

    # -- helpers ---------------------------------------------------------------------------
    def _through(self, url: str, changes: list[Change], source: str, wait: str) -> dict:
        body = {
            "changes": [c.as_dict() for c in changes],
            "source": source,
            "wait": wait,
            "timeout_s": self.timeout_s,
        }
        status, out = post_json(url, "/v1/changes", body, timeout=self.timeout_s + 30)
        if status == 400:
            raise ChangeError.saying(out.get("error", f"{source} was refused"))
        if status not in (200, 202) or out.get("error"):
            raise ServiceError(out.get("error") or f"the memory service answered {status}")
        return out | {"through": url}


def ask_service(
    url: str, question: str, scope: str, contexts: bool = False, as_of: str | None = None
) -> dict:
    """Ask the memory service at ``url`` (what :meth:`Memory.ask` returns, as a dict;
    ``contexts``: with the retrieved context). :class:`ScopeError`-like refusals come back as
    :class:`QuestionError`."""
    from hltm_resources.errors import QuestionError

    body = {"question": question, "scope": scope, "contexts": contexts, "as_of": as_of}
    status, out = post_json(url, "/v1/ask", body, timeout=120.0)
    if status == 400:
        raise QuestionError(out.get("error", "the memory service refused the question"))
    if status != 200:
        raise ServiceError(out.get("error") or f"the memory service answered {status}")
    return out


def auth_headers(url: str | None = None) -> dict[str, str]:
    """The API token of ``$HLTM_TOKEN`` as a request header; without one, the key of the
    service at ``url`` if :func:`service_url` found it (none otherwise)."""
    token = service_token(url)
    return {"Authorization": f"Bearer {token}"} if token else {}


def service_token(url: str | None = None) -> str | None:
    """What this process sends the service at ``url``: ``$HLTM_TOKEN``, else the service's
    key if :func:`service_url` found it."""
    return os.environ.get("HLTM_TOKEN") or _KEYS.get(url or "")


def post_json(url: str, path: str, body: dict, timeout: float) -> tuple[int, dict]:
    """POST ``body`` to the service at ``url`` + ``path`` (with ``$HLTM_TOKEN``, if set):
    (HTTP status, the JSON answer)."""
    request = urllib.request.Request(
        url + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", **auth_headers(url)},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")
