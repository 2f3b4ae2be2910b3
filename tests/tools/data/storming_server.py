"""An upstream MCP server that storms (stdio): ``storm`` sends ``count`` tool-list change
notifications at about 500 a second, then adds the tool ``calm`` and announces it once more;
``lists`` answers how many times its tools were listed so far."""

from __future__ import annotations

from typing import Any

import anyio
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.subscriptions import ToolsListChanged

state = {"lists": 0, "calm": False}
bus = InMemorySubscriptionBus()


def _tool(name: str, description: str, **properties: str) -> types.Tool:
    schema = {"type": "object", "properties": {p: {"type": k} for p, k in properties.items()}}
    return types.Tool(name=name, description=description, input_schema=schema)


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    state["lists"] += 1
    tools = [
        _tool("storm", "Announce many tool-list changes.", count="integer"),
        _tool("lists", "How many times the tools were listed."),
    ]
    if state["calm"]:
        tools.append(_tool("calm", "Added after the storm."))
    return types.ListToolsResult(tools=tools)


async def _announce(ctx: Any) -> None:
    await bus.publish(ToolsListChanged())  # 2026-07-28 clients listen
    await ctx.session.send_tool_list_changed()  # handshake-era clients


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    arguments = params.arguments or {}
    if params.name == "storm":
        for _ in range(int(arguments.get("count", 0))):
            await _announce(ctx)
            await anyio.sleep(0.002)
        state["calm"] = True
        await _announce(ctx)
        text = "stormed"
    else:
        text = str(state["lists"])
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


server = Server(
    "storming",
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    on_subscriptions_listen=ListenHandler(bus),
)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
