"""On-demand tool loading (tool search) for OpenAI-compatible chat bots."""

from __future__ import annotations

from typing import Any

# Public names are re-exported here; keep ``__all__`` sorted (tests/test_public_api.py).
from ._bot import Bot
from ._catalog import MAX_SCHEMA_DEPTH, TOOL_SEARCH_NAME, ToolCatalog
from ._config_file import load_settings
from ._context import AskContext
from ._edit import get_value, set_value
from ._errors import CatalogError, ConfigError, ToolSearchError, ToolSearchNameCollisionError
from ._mcp_config import MCPServerConfig
from ._middleware import (
    CallRequest,
    CallResult,
    LoggingMiddleware,
    Middleware,
    RoundRequest,
    forward_unanswered,
)
from ._names import WireNames
from ._plugins import Plugin
from ._prompt import TOOL_SEARCH_RULES, render_deferred_tools
from ._registry import ToolRegistry
from ._reload import ConfigReloader
from ._result import ToolSearchResult
from ._results import AskResult, AskStats, CallTrace, OutboundMessage, RoundTrace
from ._session import ToolSearchSession
from ._settings import (
    BotSection,
    BotSettings,
    EasterEggSettings,
    ModelSettings,
    PluginSettings,
    SkillsSettings,
    ToolsSettings,
)
from ._tool_search_middleware import ToolSearchMiddleware
from ._tool_source import ToolSetSnapshot, ToolSource
from ._tools import Agent, Tool, ToolImportError, tool
from ._transport import ModelReplyError

__all__ = [  # noqa: RUF022 - plain sorted(), as tests/test_public_api.py checks
    "Agent",
    "AskContext",
    "AskResult",
    "AskStats",
    "Bot",
    "BotSection",
    "BotSettings",
    "CallRequest",
    "CallResult",
    "CallTrace",
    "CatalogError",
    "ConfigError",
    "ConfigReloader",
    "EasterEggSettings",
    "LoggingMiddleware",
    "MAX_SCHEMA_DEPTH",
    "MCPServerConfig",
    "Middleware",
    "ModelReplyError",
    "ModelSettings",
    "OutboundMessage",
    "Plugin",
    "PluginSettings",
    "RoundRequest",
    "RoundTrace",
    "SkillsSettings",
    "TOOL_SEARCH_NAME",
    "TOOL_SEARCH_RULES",
    "Tool",
    "ToolCatalog",
    "ToolImportError",
    "ToolRegistry",
    "ToolSearchError",
    "ToolSearchMiddleware",
    "ToolSearchNameCollisionError",
    "ToolSearchResult",
    "ToolSearchSession",
    "ToolSetSnapshot",
    "ToolSource",
    "ToolsSettings",
    "WireNames",
    "__version__",
    "forward_unanswered",
    "get_value",
    "load_settings",
    "render_deferred_tools",
    "set_value",
    "tool",
]


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from importlib.metadata import version

        return version("bot-toolsearch")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _set_public_module() -> None:
    """Point tracebacks at ``bot_toolsearch.X`` instead of the private module."""
    import inspect

    for name in __all__:
        obj = globals().get(name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            obj.__module__ = __name__


_set_public_module()
