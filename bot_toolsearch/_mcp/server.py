"""The MCP door on the official ``mcp`` SDK: a low-level `Server` over stdio or streamable HTTP.

``tools/list`` and ``tools/call`` go to the `McpDoor` with the client session they come from:
the ``mcp-session-id`` of a streamable-HTTP session, or the one stdio connection. A search that
loads tools under ``append`` sends ``notifications/tools/list_changed`` on the call's own
stream (before its result); a new catalog or settings snapshot sends it to every session.
A streamable-HTTP session's state goes when the session ends: at once on the client's
``DELETE`` (`_ForgetEnded`), else after `door.IDLE_SECONDS` without a request.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.subscriptions import ToolsListChanged
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from .door import McpDoor

__all__ = ["SERVER_NAME", "build_server", "mcp_tool", "run_http", "run_stdio"]

logger = logging.getLogger("bot_toolsearch.mcp_door")

SERVER_NAME = "bot-toolsearch"
"""The door's ``serverInfo`` name."""
INSTRUCTIONS = (
    "Tool search: most tools are not listed. Call tool_search to find and load them; its "
    "description lists every tool's name. Loaded tools join tools/list (a "
    "notifications/tools/list_changed follows), or are called through call_tool when it is "
    "listed."
)
"""The door's ``instructions`` (what a client may show the model about it)."""
_SESSION_HEADER = "mcp-session-id"


def mcp_tool(schema: Mapping[str, Any]) -> types.Tool:
    """An MCP ``Tool`` from a Chat Completions function schema."""
    function = schema["function"]
    return types.Tool(
        name=function["name"],
        description=function.get("description") or "",
        input_schema=function.get("parameters") or {"type": "object", "properties": {}},
    )


def _key(ctx: ServerRequestContext[Any, Any], connection: object) -> object:
    """The client session of a request: its ``mcp-session-id`` over streamable HTTP, else the
    server's one connection (stdio, in-process)."""
    request = ctx.request
    headers = getattr(request, "headers", None)
    if headers is not None:
        session = headers.get(_SESSION_HEADER)
        if session:
            return f"http:{session}"
    return connection


class _ForgetEnded:
    """ASGI middleware: a ``DELETE`` of a streamable-HTTP session that the SDK accepted (a
    2xx: the session existed and has ended) makes the door forget the session's state."""

    def __init__(self, app: Any, door: McpDoor) -> None:
        self.app = app
        self.door = door

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "http" or scope.get("method") != "DELETE":
            await self.app(scope, receive, send)
            return
        session = next(
            (v for k, v in scope.get("headers", ()) if k.lower() == _SESSION_HEADER.encode()),
            None,
        )
        status = 0

        async def watch(message: Any) -> None:
            nonlocal status
            if message.get("type") == "http.response.start":
                status = int(message.get("status", 0))
            await send(message)

        await self.app(scope, receive, watch)
        if session and 200 <= status < 300:
            self.door.forget(f"http:{session.decode('latin-1')}")


def _client_name(ctx: ServerRequestContext[Any, Any]) -> str:
    params = ctx.session.client_params
    info = getattr(params, "client_info", None)
    name = getattr(info, "name", "")
    return name if isinstance(name, str) else ""


class _DoorServer(Server[Any]):
    """A low-level `Server` that announces ``tools.listChanged`` on every transport (the
    streamable-HTTP manager and in-process clients build the options themselves)."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        """The SDK's options, with ``tools.listChanged`` on unless told otherwise."""
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True),
            experimental_capabilities,
            extensions,
        )


def build_server(door: McpDoor) -> Server[Any]:
    """The low-level server of ``door`` (``tools/list``, ``tools/call`` and, for 2026-07-28
    clients, ``subscriptions/listen``)."""
    bus = InMemorySubscriptionBus()

    async def publish() -> None:
        await bus.publish(ToolsListChanged())

    door.broadcasts.append(publish)
    connection = object()  # this server's one stdio (or in-process) connection

    def state_of(ctx: ServerRequestContext[Any, Any]) -> Any:
        key = _key(ctx, connection)
        state = door.client(key, _client_name(ctx), expires=key is not connection)
        session = ctx.session
        state.notify = session.send_tool_list_changed  # the connection's own stream
        return state

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        del params  # one page: the door's list is short by design
        state = state_of(ctx)
        return types.ListToolsResult(tools=[mcp_tool(s) for s in await door.list_tools(state)])

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        state = state_of(ctx)
        outcome = await door.call(state, params.name, params.arguments)
        if outcome.list_changed:
            try:
                if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
                    await publish()  # no session: the listen streams carry it
                else:  # on the call's own stream, before its result
                    await ctx.session.send_notification(
                        types.ToolListChangedNotification(), related_request_id=ctx.request_id
                    )
            except Exception as exc:  # the result still goes out; the client re-lists later
                logger.debug("tools/list_changed not delivered: %s", exc)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=outcome.text)],
            is_error=outcome.is_error,
        )

    return _DoorServer(
        SERVER_NAME,
        version=_version(),
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_subscriptions_listen=ListenHandler(bus),
    )


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("bot-toolsearch")
    except PackageNotFoundError:  # pragma: no cover - a source tree never installed
        return "0"


async def run_stdio(door: McpDoor) -> None:
    """Serve ``door`` on this process's stdin and stdout until the client closes them."""
    from mcp.server.stdio import stdio_server

    server = build_server(door)
    options = server.create_initialization_options()
    async with stdio_server() as (read, write):
        await server.run(read, write, options)


async def run_http(door: McpDoor, host: str, port: int, *, ready: Any = None) -> None:
    """Serve ``door`` over streamable HTTP at ``http://host:port/mcp`` until cancelled."""
    import uvicorn

    server = build_server(door)
    app = _ForgetEnded(server.streamable_http_app(host=host), door)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    http = uvicorn.Server(config)
    if ready is not None:
        ready(http)
    await http.serve()
