"""The Dagster resource: a home's :class:`Settings` as Dagster config, vending an Indexer.

Its config fields are generated from the fields of :class:`Settings` (one declaration: a new
setting appears here by itself). At run time it vends the plain-library object the assets use,
an :class:`~hltm_resources.indexing.indexer.Indexer` (``create_resource``). The CLI's in-process
runs pass their own Indexer instead (see :func:`hltm_assets.definitions.build_definitions`),
so one engine and one embedder serve every run of an ``hltm index``.
"""

from __future__ import annotations

import dataclasses
import os
import typing
from pathlib import Path

import dagster as dg
from pydantic import Field, create_model

from hltm_resources.config import ConfigError, Settings
from hltm_resources.indexing.indexer import Indexer

#: Settings the UI shows with a sentence of help.
_HELP = {
    "home": "The memory home (DuckDB file, LanceDB tables, caches).",
    "tree": "The tree schema, root first, e.g. account>seat>project.",
    "engine": "extractive | openai",
    "embedder": "local | openai",
    "base_url": "OpenAI-compatible base URL.",
    "api_key": "API key; wired with EnvVar('OPENAI_API_KEY'), read when a run starts.",
    "adapt_auto_approve": "Activate mined hints without review (non-sensitive deployments).",
}


#: Settings that may hold a password: wired with EnvVar, never stored as config values.
_SECRETS = {
    "api_key": "OPENAI_API_KEY",
    "catalog_url": "HLTM_CATALOG_URL",
    "broker_url": "HLTM_BROKER_URL",
}


_WORKER_INDEXERS: dict[Settings, Indexer] = {}


class _HLTMResourceBase(dg.ConfigurableResource):
    """Where memory lives and which engine and embedder build it."""

    def settings(self) -> Settings:
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(Settings)}
        return Settings(**(values | {"home": Path(values["home"]).resolve()}))

    def create_resource(self, context: dg.InitResourceContext) -> Indexer:
        settings = self.settings()
        if not settings.distributed:
            return Indexer(settings)
        # A worker of the distributed deployment runs one run after another in one process:
        # it keeps its Indexer (engine, embedder and their caches) from run to run.
        if settings not in _WORKER_INDEXERS:
            _WORKER_INDEXERS[settings] = Indexer(settings)
        return _WORKER_INDEXERS[settings]

    @classmethod
    def from_settings(cls, settings: Settings) -> HLTMResource:
        """A resource for ``settings``; the API key and the connection URLs come from their
        variables via EnvVar (:data:`_SECRETS`).

        A secret is never put into resource config as a literal (Dagster would show and store
        it): one that did not come from its variable is refused.
        """
        secrets = {}
        for name, var in _SECRETS.items():
            value = getattr(settings, name)
            if value:
                if os.environ.get(var) != value:
                    raise ConfigError(
                        f"Dagster runs read {name} from {var} (EnvVar); set it there instead "
                        "of passing it directly"
                    )
                value = dg.EnvVar(var)
            secrets[name] = value
        values = {f.name: getattr(settings, f.name) for f in dataclasses.fields(Settings)}
        return cls(**(values | {"home": str(settings.home)} | secrets))


def _config_fields() -> dict[str, tuple]:
    hints = typing.get_type_hints(Settings)
    out = {}
    for f in dataclasses.fields(Settings):
        kind = str if f.name == "home" else hints[f.name]
        default = ... if f.default is dataclasses.MISSING else f.default
        out[f.name] = (kind, Field(default=default, description=_HELP.get(f.name)))
    return out


HLTMResource = create_model("HLTMResource", __base__=_HLTMResourceBase, **_config_fields())
HLTMResource.__module__ = __name__
