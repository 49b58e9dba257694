"""The memory agents behind one interface, and the factory that picks an implementation."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hltm_resources.engines.base import (
    Answer,
    ContextItem,
    Hints,
    MemoryAgents,
    MicroQuery,
    NodeContext,
    ParsedQuery,
    RetrievedContext,
    ScopeVocabulary,
    Usage,
)

if TYPE_CHECKING:
    from hltm_resources.config import Settings

__all__ = [
    "Answer",
    "ContextItem",
    "Hints",
    "MemoryAgents",
    "MicroQuery",
    "NodeContext",
    "ParsedQuery",
    "RetrievedContext",
    "ScopeVocabulary",
    "Usage",
    "make_agents",
]


def make_agents(settings: Settings) -> MemoryAgents:
    """The engine the settings ask for (``extractive`` needs no model and no key)."""
    if settings.engine == "extractive":
        from hltm_resources.engines.extractive.agents import ExtractiveAgents

        return ExtractiveAgents(settings.schema)
    from hltm_resources.engines.llm.agents import OpenAIAgents

    return OpenAIAgents.from_settings(settings)
