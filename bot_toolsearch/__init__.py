"""On-demand tool loading (tool search) for OpenAI-compatible chat bots."""

from __future__ import annotations

from typing import Any

# Each block re-exports one layer; keep ``__all__`` sorted (tests/test_public_api.py checks).
# --- errors ---
from ._errors import CatalogError, ConfigError, ToolSearchError, ToolSearchNameCollisionError

# --- settings (config issue) ---
from ._config_file import load_settings
from ._settings import (
    BotSection,
    BotSettings,
    EasterEggSettings,
    ModelSettings,
    PluginSettings,
    SkillsSettings,
    ToolsSettings,
)

# --- registry (tool folders, MCP servers, issue 6) ---
from ._mcp_config import MCPServerConfig
from ._registry import ToolRegistry
from ._tool_source import ToolSetSnapshot, ToolSource

# --- tools (runtime issue) ---
from ._tools import Agent, Tool, ToolImportError, tool

__all__ = [
    "Agent",
    "BotSection",
    "BotSettings",
    "CatalogError",
    "ConfigError",
    "EasterEggSettings",
    "MCPServerConfig",
    "ModelSettings",
    "PluginSettings",
    "SkillsSettings",
    "Tool",
    "ToolImportError",
    "ToolRegistry",
    "ToolSearchError",
    "ToolSearchNameCollisionError",
    "ToolSetSnapshot",
    "ToolSource",
    "ToolsSettings",
    "__version__",
    "load_settings",
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
