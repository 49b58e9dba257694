"""Dagster resources. This module imports dagster; the query path never imports it."""

from __future__ import annotations

import os
import threading
from dataclasses import fields
from pathlib import Path

import dagster as dg
from pydantic import Field

from hltm_resources.build.indexer import Indexer
from hltm_resources.config import ConfigError, Settings

_INDEXERS: dict[Settings, Indexer] = {}
_LOCK = threading.Lock()


def shared_indexer(settings: Settings) -> Indexer:
    """One indexer (engine, embedder, stores) per settings and process."""
    with _LOCK:
        if settings not in _INDEXERS:
            _INDEXERS[settings] = Indexer(settings)
        return _INDEXERS[settings]


def forget_indexers() -> None:
    """Drop cached indexers (after the hints or the home changed)."""
    with _LOCK:
        _INDEXERS.clear()


class HLTMResource(dg.ConfigurableResource):
    """Where memory lives and which engine and embedder build it."""

    home: str = Field(description="The memory home (DuckDB file, LanceDB tables, caches).")
    engine: str = Field(default="extractive", description="extractive | openai")
    embedder: str = Field(default="local", description="local | openai")
    base_url: str | None = Field(default=None, description="OpenAI-compatible base URL.")
    api_key: str | None = Field(default=None, description="API key; wire with EnvVar.")
    chat_model: str | None = None
    embed_model: str | None = None
    azure_api_version: str | None = None
    concurrency: int = 4
    timeout_s: float = 60.0
    max_retries: int = 4
    max_input_tokens: int = 6000
    adapt_auto_approve: bool = Field(
        default=False,
        description="Activate mined hints without review (non-sensitive deployments).",
    )

    def settings(self) -> Settings:
        values = {f.name: getattr(self, f.name) for f in fields(Settings) if f.name != "home"}
        return Settings(home=Path(self.home).resolve(), **values)

    def indexer(self) -> Indexer:
        return shared_indexer(self.settings())

    @classmethod
    def from_settings(cls, settings: Settings) -> HLTMResource:
        """A resource for ``settings``; the API key comes from ``OPENAI_API_KEY`` via EnvVar.

        A key is never put into resource config as a literal (Dagster would show and store
        it): a key that did not come from ``OPENAI_API_KEY`` is refused.
        """
        api_key = None
        if settings.api_key:
            if os.environ.get("OPENAI_API_KEY") != settings.api_key:
                raise ConfigError(
                    "Dagster runs read the API key from OPENAI_API_KEY (EnvVar); "
                    "set it there instead of passing it directly"
                )
            api_key = dg.EnvVar("OPENAI_API_KEY")
        values = {f.name: getattr(settings, f.name) for f in fields(Settings)}
        return cls(**(values | {"home": str(settings.home), "api_key": api_key}))
