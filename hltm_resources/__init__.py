"""HLTM's plain library (nothing here imports dagster), in rooms by role:

- :mod:`hltm_resources.schema`: the tree schema, the one declaration of the tree's levels;
- :mod:`hltm_resources.config`, :mod:`~hltm_resources.ids`, :mod:`~hltm_resources.models`:
  settings, node ids, the data structures (documents, memory items, node memories, topology);
- ``stores/``: the DuckDB file (SOT and memory tables, public views), snapshots, LanceDB
  vectors, the LLM reply cache;
- ``engines/``: the memory agents behind one interface, the shared facet vocabulary, the
  offline ``extractive/`` engine and the ``llm/`` engine;
- ``embedding/``: embedders behind one interface (offline MiniLM, OpenAI-compatible);
- ``build/``: planning, indexing, loading, deletion and erasure, verification, the nearline
  decision, adaptation, checks and stats.

The Dagster code location that wraps it lives in :mod:`hltm_assets`; serving in :mod:`query`.
"""

__version__ = "0.1.0"
