"""HLTM's Dagster code location: the memory tree as three partitioned assets, and the CLI."""

from hltm_assets.history import erase_runs
from hltm_resources.indexing.erasure import RUN_HISTORY, register_outer_store

register_outer_store(RUN_HISTORY, erase_runs)
