"""Settings shared by the CLI, the query module and the Dagster resources.

Environment variables are read when :meth:`Settings.from_env` is called, never at import.
The API key is never part of ``repr`` or any log line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from hltm_resources.env import NUMBERS, SETTING_VARIABLES, SettingError, check_numbers
from hltm_resources.schema import DEFAULT_TREE, SchemaError, TreeSchema

if TYPE_CHECKING:
    from hltm_resources.stores.lake import Lake

ENGINES = ("extractive", "openai")
#: ``local``: everything in the home on this machine (the default). ``distributed``: Dagster's
#: instance on PostgreSQL, steps on Celery workers, memory in a DuckLake and LanceDB on S3
#: (README, "Running on more than one machine").
DEPLOYMENTS = ("local", "distributed")
#: What the distributed deployment needs, by setting, with the variable that sets it.
DISTRIBUTED_NEEDS = {
    "catalog_url": "HLTM_CATALOG_URL (postgresql://USER[:PASSWORD]@HOST:PORT/DATABASE)",
    "object_store": "HLTM_OBJECT_STORE (s3://BUCKET/PREFIX)",
    "broker_url": "HLTM_BROKER_URL (redis://HOST:PORT/0)",
}
EMBEDDERS = ("local", "local-float", "openai")
DEFAULT_HOME = ".hltm"


class ConfigError(ValueError):
    """A setting that is missing or inconsistent."""


def resolve_home(home: str | os.PathLike | None = None) -> Path:
    """The memory home: the argument, else ``$HLTM_HOME``, else ``./.hltm``."""
    value = home if home not in (None, "") else os.environ.get("HLTM_HOME") or DEFAULT_HOME
    return Path(value).expanduser().resolve()


@dataclass(frozen=True)
class Settings:
    """Where memory lives and which engine and embedder build and read it."""

    home: Path
    #: The tree schema, root first (see :mod:`hltm_resources.schema`); a home keeps the one it
    #: was created with.
    tree: str = DEFAULT_TREE
    engine: str = "extractive"
    embedder: str = "local"
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    chat_model: str | None = None
    embed_model: str | None = None
    azure_api_version: str | None = None
    concurrency: int = 4
    timeout_s: float = 60.0
    max_retries: int = 4
    max_input_tokens: int = 6000
    #: Tokens of context the chat server serves per request (prompt + reply); None: asked of
    #: the server (llama.cpp ``/props``, vLLM ``/v1/models``), else no limit but the above.
    llm_context_tokens: int | None = None
    adapt_auto_approve: bool = False
    #: Seconds between evaluations of the automation and source-of-truth sensors under
    #: ``hltm dev`` (Dagster's daemon evaluates them at most every 5 s; 1: at every pass).
    sensor_interval_s: int = 1
    #: One of :data:`DEPLOYMENTS` (``HLTM_DEPLOYMENT``).
    deployment: str = "local"
    #: PostgreSQL for Dagster's instance and the lake's catalog (distributed).
    catalog_url: str | None = field(default=None, repr=False)
    #: Where the memory lake and the vectors live: ``s3://BUCKET/PREFIX`` (distributed).
    object_store: str | None = None
    #: The Celery broker the workers take steps from (distributed).
    broker_url: str | None = None
    #: The Dagster UI the inspector links a node's build run to (``HLTM_DAGSTER_URL``; where
    #: ``hltm dev`` serves it by default).
    dagster_url: str = "http://127.0.0.1:3000"

    def __post_init__(self) -> None:
        object.__setattr__(self, "home", Path(self.home).expanduser().resolve())
        if self.engine not in ENGINES:
            raise ConfigError(f"engine {self.engine!r} is unknown: use one of {', '.join(ENGINES)}")
        if self.embedder not in EMBEDDERS:
            raise ConfigError(
                f"embedder {self.embedder!r} is unknown: use one of {', '.join(EMBEDDERS)}"
            )
        if self.deployment not in DEPLOYMENTS:
            raise ConfigError(
                f"deployment {self.deployment!r} (HLTM_DEPLOYMENT) is unknown: use one of "
                f"{', '.join(DEPLOYMENTS)}"
            )
        if self.distributed:
            lacking = [need for key, need in DISTRIBUTED_NEEDS.items() if not getattr(self, key)]
            if lacking:
                raise ConfigError(
                    "HLTM_DEPLOYMENT=distributed needs "
                    + "; ".join(lacking)
                    + " (hltm services up prints them for services on this machine)"
                )
        for key, variable in SETTING_VARIABLES.items():  # the ranges their variables have
            value = getattr(self, key)
            if value is not None:
                try:
                    NUMBERS[variable].check(f"{key} ({variable})", value)
                except SettingError as exc:
                    raise ConfigError(str(exc)) from None
        if not self.dagster_url.startswith(("http://", "https://")):
            raise ConfigError(
                f"Dagster UI URL {self.dagster_url!r} (HLTM_DAGSTER_URL) must start with "
                "http:// or https://, e.g. http://127.0.0.1:3000"
            )
        object.__setattr__(self, "dagster_url", self.dagster_url.rstrip("/"))
        try:
            TreeSchema.parse(self.tree)
        except SchemaError as exc:
            raise ConfigError(f"tree {self.tree!r} (HLTM_TREE): {exc}") from None

    @cached_property
    def schema(self) -> TreeSchema:
        """The tree schema of this home."""
        return TreeSchema.parse(self.tree)

    @classmethod
    def from_env(cls, home: str | os.PathLike | None = None, **overrides: object) -> Settings:
        """Settings from ``HLTM_*`` / ``OPENAI_*`` variables, then explicit overrides."""
        env = os.environ
        values: dict[str, object] = {
            "home": resolve_home(home),
            "tree": env.get("HLTM_TREE") or DEFAULT_TREE,
            "engine": env.get("HLTM_ENGINE") or "extractive",
            "embedder": env.get("HLTM_EMBEDDER") or "local",
            "base_url": env.get("OPENAI_BASE_URL") or None,
            "api_key": env.get("OPENAI_API_KEY") or None,
            "chat_model": env.get("HLTM_CHAT_MODEL") or None,
            "embed_model": env.get("HLTM_EMBED_MODEL") or None,
            "azure_api_version": env.get("OPENAI_API_VERSION") or None,
            "deployment": env.get("HLTM_DEPLOYMENT") or "local",
            "catalog_url": env.get("HLTM_CATALOG_URL") or None,
            "object_store": env.get("HLTM_OBJECT_STORE") or None,
            "broker_url": env.get("HLTM_BROKER_URL") or None,
        }
        if env.get("HLTM_DAGSTER_URL"):
            values["dagster_url"] = env["HLTM_DAGSTER_URL"]
        if env.get("HLTM_ADAPT_AUTO_APPROVE"):
            values["adapt_auto_approve"] = env["HLTM_ADAPT_AUTO_APPROVE"] == "1"
        try:  # every number, also those read where they are used, is checked now
            numbers = check_numbers(env)
        except SettingError as exc:
            raise ConfigError(str(exc)) from None
        for key, variable in SETTING_VARIABLES.items():
            if numbers[variable] is not None:
                values[key] = numbers[variable]
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)  # type: ignore[arg-type]

    def with_home(self, home: Path) -> Settings:
        """A copy pointing at another home, on this machine (a scratch rebuild's)."""
        return replace(self, home=Path(home).resolve(), deployment="local")

    @property
    def distributed(self) -> bool:
        return self.deployment == "distributed"

    # -- layout of the home --------------------------------------------------------------
    @cached_property
    def duckdb_path(self) -> Path | Lake:
        """The memory database: the home's DuckDB file, or (distributed) the shared lake;
        :func:`hltm_resources.stores.database.connect` opens either."""
        if self.distributed:
            from hltm_resources.stores.lake import Lake, ObjectStore

            return Lake(self.catalog_url, ObjectStore.from_env(self.object_store))
        return self.home / "hltm.duckdb"

    @property
    def lancedb_path(self) -> Path | str:
        """The LanceDB database: a folder of the home, or (distributed) a URI on the store."""
        if self.distributed:
            return f"{self.object_store.rstrip('/')}/lancedb"
        return self.home / "lancedb"

    @property
    def cache_path(self) -> Path:
        return self.home / "cache"

    @property
    def dagster_path(self) -> Path:
        return self.home / "dagster"
