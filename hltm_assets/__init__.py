"""HLTM's Dagster code location: the memory tree as three partitioned assets, and the CLI."""
