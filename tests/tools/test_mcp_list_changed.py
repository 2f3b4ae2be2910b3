"""An upstream MCP server's ``tools/list_changed``: its tools re-listed in the same session."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from bot_toolsearch._tools.mcp import _RELIST_EVERY
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


STORMING = Path(__file__).parent / "data" / "storming_server.py"


async def test_a_storm_of_list_changes_is_coalesced() -> None:
    """Issue 41, item 8: 500 notifications a second re-listed 1,144 times in 20 s (each one
    a re-list and a re-index). Now one at a time, at most one per window while they keep
    coming, and the last change is listed."""
    entry = {"name": "up", "command": sys.executable, "args": [str(STORMING)], "timeout": 30.0}
    registry = ToolRegistry(mcp_servers=[entry], mcp_backoff=(0.05, 0.2))
    try:
        first = await registry.start()
        assert sorted(first.tools) == ["up.lists", "up.storm"]
        assert await first.tools["up.storm"].invoke({"count": 1000}) == "stormed"
        deadline = asyncio.get_running_loop().time() + 30
        while "up.calm" not in registry.snapshot().tools:
            assert asyncio.get_running_loop().time() < deadline
            await asyncio.sleep(0.05)
        await asyncio.sleep(2 * _RELIST_EVERY + 0.5)  # the last window passes
        lists = int(await registry.snapshot().tools["up.lists"].invoke({}))
    finally:
        await registry.aclose()
    # The first listing, then about one per window over the storm's two seconds or so.
    assert 2 <= lists <= 20, lists
