"""On-demand tool loading (tool search) for OpenAI-compatible chat bots."""

from __future__ import annotations

from typing import Any

# Each block re-exports one layer; keep ``__all__`` sorted (tests/test_public_api.py checks).
# --- errors ---
from ._errors import CatalogError, ConfigError, ToolSearchError, ToolSearchNameCollisionError

# --- settings (config issue) ---
from ._settings import BotSettings

# --- registry (tool folders, MCP servers, issue 6) ---
from ._mcp_config import MCPServerConfig
from ._registry import ToolRegistry
from ._tool_source import ToolSetSnapshot, ToolSource

# --- tools (runtime issue) ---
from ._tools import Agent, Tool, ToolImportError, tool

__all__ = [
    "Agent",
    "BotSettings",
    "CatalogError",
    "ConfigError",
    "MCPServerConfig",
    "Tool",
    "ToolImportError",
    "ToolRegistry",
    "ToolSearchError",
    "ToolSearchNameCollisionError",
    "ToolSetSnapshot",
    "ToolSource",
    "__version__",
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
