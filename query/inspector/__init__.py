"""The memory inspector: read-only web pages over one home's memory (``hltm inspect``).

Pages are plain HTML (Jinja2 templates with autoescaping: every piece of memory text comes from
user documents), with plain links and GET forms, so they work without JavaScript and any client
(curl) can read them. Each page reads the DuckDB file through its own short read-only
connection, so a page loaded after a rebuild shows the rebuilt memory. Questions go through one
:class:`query.Memory` (the serving path), which follows new table versions itself; it is not
thread-safe, so questions are asked one at a time.

- :class:`Inspector`: the home, its serving ``Memory`` (or one passed in, with the lock its
  owner asks under), and the scope of ``hltm inspect --scope``;
- :func:`inspector_app`: the pages as a Starlette app, each request's scope decided by
  ``scope_of(request)`` (the memory service mounts it and takes the scope from a token);
- :class:`InspectorServer`: that app under uvicorn on loopback (``hltm inspect``).

Nothing is written to the home: the query log is off and an LLM engine's replies are not cached.
A scope shows nothing outside that node's subtree (other nodes, documents and questions are
"not found") and links to nothing above it.
"""

from query.inspector.app import ScopeOf, inspector_app
from query.inspector.core import Inspector, PageError, View, serving_agents
from query.inspector.security import LOOPBACK_HOSTS, SECURITY_HEADERS, check_loopback
from query.inspector.server import InspectorServer

__all__ = [
    "LOOPBACK_HOSTS",
    "SECURITY_HEADERS",
    "Inspector",
    "InspectorServer",
    "PageError",
    "ScopeOf",
    "View",
    "check_loopback",
    "inspector_app",
    "serving_agents",
]
