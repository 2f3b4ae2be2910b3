"""On-demand tool loading (tool search) for OpenAI-compatible chat bots."""

from __future__ import annotations

from typing import Any

from bot_toolsearch._config.edit import get_value, set_value
from bot_toolsearch._config.file import load_settings
from bot_toolsearch._config.reload import ConfigReloader, ReloadCallback, ReloadErrorCallback
from bot_toolsearch._config.settings import (
    BotSection,
    BotSettings,
    ConversationSettings,
    EasterEggSettings,
    ModelSettings,
    PluginSettings,
    SkillsSettings,
    ToolSearchLoading,
    ToolsSettings,
)
from bot_toolsearch._core.catalog import MAX_SCHEMA_DEPTH, TOOL_SEARCH_NAME, ToolCatalog
from bot_toolsearch._core.directory import DEFAULT_DIRECTORY_BUDGET, DeferredDirectory
from bot_toolsearch._core.prompt import (
    GROUPED_DIRECTORY_RULES,
    TOOL_SEARCH_RULES,
    render_deferred_tools,
)
from bot_toolsearch._core.query import NameDecoder
from bot_toolsearch._core.result import ToolSearchResult
from bot_toolsearch._core.session import ToolSearchSession
from bot_toolsearch._protocol.calls import CallOutcome, CallRequest, CallResult, RefusalReason
from bot_toolsearch._runtime.ask_result import (
    AskResult,
    AskStats,
    CallTrace,
    FinishReason,
    OutboundMessage,
    RoundTrace,
)

# Public names are re-exported here; keep ``__all__`` sorted (tests/test_public_api.py).
from bot_toolsearch._runtime.bot import Bot, SettingsSource
from bot_toolsearch._runtime.context import AskContext
from bot_toolsearch._runtime.conversations import (
    ConversationHistory,
    ConversationStore,
    ConversationTurn,
    MemoryConversationStore,
    SQLiteConversationStore,
)
from bot_toolsearch._runtime.middleware import (
    CallHandler,
    LoggingMiddleware,
    Middleware,
    RoundRequest,
    forward_unanswered,
)
from bot_toolsearch._runtime.plugins import Plugin
from bot_toolsearch._runtime.tool_search import ToolSearchMiddleware
from bot_toolsearch._runtime.toolset import ToolFilter
from bot_toolsearch._tools.mcp_config import MCPServerConfig
from bot_toolsearch._tools.registry import ToolRegistry
from bot_toolsearch._tools.source import ToolSetSnapshot, ToolSource
from bot_toolsearch._tools.tool import (
    Agent,
    HandlerThreads,
    Tool,
    ToolDefinitionWarning,
    ToolHandler,
    ToolImportError,
    tool,
)
from bot_toolsearch._transports.base import ModelReplyError, ToolDeclaration
from bot_toolsearch._transports.names import WireNames
from bot_toolsearch._wrap.client import wrap_openai

from ._errors import (
    CatalogError,
    ConfigError,
    ConversationStoreError,
    ToolSearchError,
    ToolSearchNameCollisionError,
)

__all__ = [  # noqa: RUF022 - plain sorted(), as tests/test_public_api.py checks
    "Agent",
    "AskContext",
    "AskResult",
    "AskStats",
    "Bot",
    "BotSection",
    "BotSettings",
    "CallHandler",
    "CallOutcome",
    "CallRequest",
    "CallResult",
    "CallTrace",
    "CatalogError",
    "ConfigError",
    "ConfigReloader",
    "ConversationHistory",
    "ConversationSettings",
    "ConversationStore",
    "ConversationStoreError",
    "ConversationTurn",
    "DEFAULT_DIRECTORY_BUDGET",
    "DeferredDirectory",
    "EasterEggSettings",
    "FinishReason",
    "GROUPED_DIRECTORY_RULES",
    "HandlerThreads",
    "LoggingMiddleware",
    "MAX_SCHEMA_DEPTH",
    "MCPServerConfig",
    "MemoryConversationStore",
    "Middleware",
    "ModelReplyError",
    "ModelSettings",
    "NameDecoder",
    "OutboundMessage",
    "Plugin",
    "PluginSettings",
    "RefusalReason",
    "ReloadCallback",
    "ReloadErrorCallback",
    "RoundRequest",
    "RoundTrace",
    "SQLiteConversationStore",
    "SettingsSource",
    "SkillsSettings",
    "TOOL_SEARCH_NAME",
    "TOOL_SEARCH_RULES",
    "Tool",
    "ToolCatalog",
    "ToolDeclaration",
    "ToolDefinitionWarning",
    "ToolFilter",
    "ToolHandler",
    "ToolImportError",
    "ToolRegistry",
    "ToolSearchError",
    "ToolSearchLoading",
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
    "wrap_openai",
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
