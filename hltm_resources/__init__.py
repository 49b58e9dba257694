"""HLTM's plain library: source of truth, stores, engines and embedders.

Nothing here imports dagster; the Dagster wrappers live in :mod:`hltm_resources.dagster`.
"""

__version__ = "0.1.0"
