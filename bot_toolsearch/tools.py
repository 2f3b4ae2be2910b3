"""Tool sources, public: the registry, live tool sources, filters, handlers and MCP servers.

from bot_toolsearch.tools import MCPServerConfig, ToolSource
"""

from __future__ import annotations

from bot_toolsearch import _set_public_module
from bot_toolsearch._runtime.toolset import ToolFilter
from bot_toolsearch._tools.mcp_config import MCPServerConfig
from bot_toolsearch._tools.registry import ToolRegistry
from bot_toolsearch._tools.source import ToolSetSnapshot, ToolSource
from bot_toolsearch._tools.tool import HandlerThreads, ToolHandler

__all__ = [
    "HandlerThreads",
    "MCPServerConfig",
    "ToolFilter",
    "ToolHandler",
    "ToolRegistry",
    "ToolSetSnapshot",
    "ToolSource",
]


_set_public_module(__name__, __all__)
