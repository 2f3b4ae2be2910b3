"""The ``tool_search`` plugin: the entry point that puts tool search into the pipeline."""

from __future__ import annotations

from dataclasses import dataclass

from ._middleware import Middleware
from ._settings import BotSettings
from ._tool_search_middleware import ToolSearchMiddleware

__all__ = ["ToolSearchPlugin", "plugin"]


@dataclass(frozen=True, slots=True)
class ToolSearchPlugin:
    """Creates the tool-search middleware; it reads every setting from the ask's snapshot."""

    name: str = "tool_search"

    def create(self, settings: BotSettings) -> Middleware:
        """A fresh middleware (settings are read per ask, so ``settings`` is unused)."""
        del settings
        return ToolSearchMiddleware()


plugin = ToolSearchPlugin()
"""Registered as ``bot_toolsearch._tool_search_plugin:plugin`` in ``bot_toolsearch.plugins``."""
