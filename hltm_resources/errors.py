"""Exceptions that the CLI reports in one line, without a traceback."""

from __future__ import annotations

from hltm_resources.config import ConfigError
from hltm_resources.dates import AsOfError
from hltm_resources.embedding import EmbedderError
from hltm_resources.env import SettingError
from hltm_resources.ids import InvalidIdError
from hltm_resources.indexing.indexer import StaleTopologyError
from hltm_resources.stores.changes import ChangeError
from hltm_resources.stores.database import NoMemoryError, StoreBusyError
from hltm_resources.stores.lake import DeploymentError
from hltm_resources.stores.lock import HomeBusyError
from hltm_resources.stores.sot import SnapshotError
from hltm_resources.stores.tokens import TokenError
from hltm_resources.stores.vectors import EmbeddingModelMismatch


class ScopeError(ValueError):
    """A query scope that is malformed or not in the tree."""


class ScopeLeakError(RuntimeError):
    """Retrieval found a node outside the question's scope (a defect guard: never answered)."""


class QuestionError(ValueError):
    """A question that cannot be asked (empty, not text)."""


USER_ERRORS: tuple[type[BaseException], ...] = (
    AsOfError,
    ChangeError,
    ConfigError,
    DeploymentError,
    EmbedderError,
    EmbeddingModelMismatch,
    InvalidIdError,
    NoMemoryError,
    QuestionError,
    ScopeError,
    SettingError,
    SnapshotError,
    StaleTopologyError,
    StoreBusyError,
    FileNotFoundError,
    HomeBusyError,
    TokenError,
)
