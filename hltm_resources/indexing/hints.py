"""The adaptation hints that steer memory construction (mined from the query log)."""

from __future__ import annotations

import json

from hltm_resources.engines.base import Hints


def load_active_hints(con) -> Hints:
    """The approved hints in force, or empty hints (version 0) when none were approved."""
    exists = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'adapt_hints'"
    ).fetchone()[0]
    if not exists:
        return Hints()
    row = con.execute(
        "SELECT version, patterns, facets FROM adapt_hints WHERE status = 'active' "
        "ORDER BY version DESC LIMIT 1"
    ).fetchone()
    if row is None:
        return Hints()
    patterns = [p["pattern"] for p in json.loads(row[1])]
    facets = [f["key"] for f in json.loads(row[2])]
    return Hints(int(row[0]), tuple(patterns), tuple(facets))
