"""The serving path: identity-scoped retrieval and answers with node-id citations.

    from query import Memory
    mem = Memory.open("/path/to/home")
    r = mem.ask("Where are the jobs usually located?", scope="seat:acme-r01")
    r.answer, r.references, r.contexts, r.timings

This package never imports dagster.
"""

from query.memory import AskResult, Memory, Retrieval

__all__ = ["AskResult", "Memory", "Retrieval"]
