"""On-demand tool loading (tool search) for OpenAI-compatible chat bots.

The root holds what a bot developer needs: `Bot`, `tool`/`Tool`/`Agent`, `BotSettings`,
`wrap_openai` (and `wrap_anthropic`), the ask results and the errors. The other public doors:
`bot_toolsearch.core` (catalog, session, query results, directory, prompts),
`bot_toolsearch.config` (config file, settings sections, reload), `bot_toolsearch.middleware`,
`bot_toolsearch.conversations`, `bot_toolsearch.tools`, `bot_toolsearch.offline` and
`bot_toolsearch.testing`.
"""

from __future__ import annotations

from typing import Any

from bot_toolsearch._config.settings import BotSettings
from bot_toolsearch._runtime.ask_result import (
    AskResult,
    AskStats,
    CallTrace,
    FinishReason,
    OutboundMessage,
    RoundTrace,
)
from bot_toolsearch._runtime.bot import Bot
from bot_toolsearch._tools.tool import Agent, Tool, ToolDefinitionWarning, ToolImportError, tool
from bot_toolsearch._transports.base import ModelReplyError
from bot_toolsearch._wrap.anthropic_client import wrap_anthropic
from bot_toolsearch._wrap.client import wrap_openai

from ._errors import (
    CatalogError,
    ConfigError,
    ConversationStoreError,
    ToolNotPermittedError,
    ToolSearchError,
    ToolSearchNameCollisionError,
    UnsupportedCallError,
)

# Public names are re-exported here; keep ``__all__`` sorted (tests/test_public_api.py).
__all__ = [
    "Agent",
    "AskResult",
    "AskStats",
    "Bot",
    "BotSettings",
    "CallTrace",
    "CatalogError",
    "ConfigError",
    "ConversationStoreError",
    "FinishReason",
    "ModelReplyError",
    "OutboundMessage",
    "RoundTrace",
    "Tool",
    "ToolDefinitionWarning",
    "ToolImportError",
    "ToolNotPermittedError",
    "ToolSearchError",
    "ToolSearchNameCollisionError",
    "UnsupportedCallError",
    "__version__",
    "tool",
    "wrap_anthropic",
    "wrap_openai",
]

_MOVED: dict[str, str] = {
    **dict.fromkeys(
        (
            "DEFAULT_DIRECTORY_BUDGET",
            "DeferredDirectory",
            "GROUPED_DIRECTORY_RULES",
            "MAX_SCHEMA_DEPTH",
            "NameDecoder",
            "TOOL_SEARCH_NAME",
            "TOOL_SEARCH_RULES",
            "ToolCatalog",
            "ToolSearchResult",
            "ToolSearchSession",
            "WireNames",
            "render_deferred_tools",
        ),
        "bot_toolsearch.core",
    ),
    **dict.fromkeys(
        (
            "BotSection",
            "ConfigReloader",
            "ConversationSettings",
            "EasterEggSettings",
            "ModelSettings",
            "PluginSettings",
            "ReloadCallback",
            "ReloadErrorCallback",
            "SettingsSource",
            "SkillsSettings",
            "ToolSearchLoading",
            "ToolsSettings",
            "get_value",
            "load_settings",
            "set_value",
        ),
        "bot_toolsearch.config",
    ),
    **dict.fromkeys(
        (
            "AskContext",
            "CallHandler",
            "CallOutcome",
            "CallRequest",
            "CallResult",
            "LoggingMiddleware",
            "Middleware",
            "Plugin",
            "RefusalReason",
            "RoundRequest",
            "ToolSearchMiddleware",
            "forward_unanswered",
        ),
        "bot_toolsearch.middleware",
    ),
    **dict.fromkeys(
        (
            "ConversationHistory",
            "ConversationStore",
            "ConversationTurn",
            "MemoryConversationStore",
            "SQLiteConversationStore",
        ),
        "bot_toolsearch.conversations",
    ),
    **dict.fromkeys(
        (
            "HandlerThreads",
            "MCPServerConfig",
            "ToolFilter",
            "ToolHandler",
            "ToolRegistry",
            "ToolSetSnapshot",
            "ToolSource",
        ),
        "bot_toolsearch.tools",
    ),
}
"""Root names of the last release that moved to another public door: name -> new module."""


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from importlib.metadata import version

        return version("bot-toolsearch")
    door = _MOVED.get(name)
    if door is not None:
        import importlib
        import warnings

        warnings.warn(
            f"bot_toolsearch.{name} moved: use `from {door} import {name}`"
            " (the root import goes in the next release)",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(door), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _set_public_module(module: str, names: list[str]) -> None:
    """Point tracebacks at ``bot_toolsearch...X`` instead of the private module."""
    import inspect
    import sys

    namespace = vars(sys.modules[module])
    for name in names:
        obj = namespace.get(name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            obj.__module__ = module


_set_public_module(__name__, __all__)
