"""An upstream MCP server for the MCP door's tests (stdio): its tool list grows on request.

``grow`` adds the tool ``extra`` and sends ``notifications/tools/list_changed``; ``crash``
kills the process mid-call; ``echo`` answers.
"""

from __future__ import annotations

import os
from typing import Any

import anyio
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.subscriptions import ToolsListChanged

state = {"grown": False}
bus = InMemorySubscriptionBus()


def _tool(name: str, description: str, **properties: str) -> types.Tool:
    schema = {
        "type": "object",
        "properties": {p: {"type": kind} for p, kind in properties.items()},
        "required": list(properties),
    }
    return types.Tool(name=name, description=description, input_schema=schema)


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    tools = [
        _tool("echo", "Echo a text back.", text="string"),
        _tool("grow", "Add the extra tool to this server."),
        _tool("crash", "Kill this server at once."),
    ]
    if state["grown"]:
        tools.append(_tool("extra", "A tardigrade census, added while running.", count="integer"))
    return types.ListToolsResult(tools=tools)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    arguments = params.arguments or {}
    if params.name == "crash":
        os._exit(3)
    if params.name == "grow":
        state["grown"] = True
        await bus.publish(ToolsListChanged())  # 2026-07-28 clients listen
        await ctx.session.send_tool_list_changed()  # handshake-era clients
        text = "grown"
    elif params.name == "extra":
        text = f"counted {arguments.get('count')} tardigrades"
    else:
        text = f"echo: {arguments.get('text')}"
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


server = Server(
    "changing",
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    on_subscriptions_listen=ListenHandler(bus),
)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
