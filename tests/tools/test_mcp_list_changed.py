"""An upstream MCP server's ``tools/list_changed``: its tools re-listed in the same session."""

from __future__ import annotations

import sys

from bot_toolsearch.tools import ToolRegistry
from tests.mcp.conftest import CHANGING


async def test_a_servers_list_change_is_relisted_and_reindexed() -> None:
    entry = {"name": "up", "command": sys.executable, "args": [str(CHANGING)], "timeout": 30.0}
    registry = ToolRegistry(mcp_servers=[entry], mcp_backoff=(0.05, 0.2))
    try:
        first = await registry.start()
        assert sorted(first.tools) == ["up.crash", "up.echo", "up.grow"]
        assert await first.tools["up.grow"].invoke({}) == "grown"
        grown = await registry.wait_for_generation(first.generation + 1)
        assert "up.extra" in grown.tools
        assert "tardigrade" in (grown.catalog.schema("up.extra") or {})["function"]["description"]
        # Only the process that grew has the tool: the session was kept, not reconnected.
        assert await grown.tools["up.extra"].invoke({"count": 2}) == "counted 2 tardigrades"
        assert registry.mcp_status == {"up": ("ready", None)}
    finally:
        await registry.aclose()
