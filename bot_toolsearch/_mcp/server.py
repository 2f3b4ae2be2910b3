"""The MCP door on the official ``mcp`` SDK: a low-level `Server` over stdio or streamable HTTP.

``tools/list`` and ``tools/call`` go to the `McpDoor` with the client session they come from:
the ``mcp-session-id`` of a streamable-HTTP session, or the one stdio connection. A search that
loads tools under ``append`` sends ``notifications/tools/list_changed`` on the call's own
stream (before its result); a new catalog or settings snapshot sends it to every session.
A 2026-07-28 client has no session: it gets the ``bridge`` list (the same for every such
client, with ``ttlMs``/``cacheScope``) and each of its calls is answered with nothing kept, as
is every HTTP session's under ``bridge`` loading. Over HTTP, `Sessions` keeps the open
sessions bounded without ending a session that holds loads, and `BearerKeys` answers 401 to a
request without one of ``--api-key``'s keys, before the SDK reads it.
"""

from __future__ import annotations

import hmac
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.subscriptions import ToolsListChanged
from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from .door import IDLE_SECONDS, MAX_CLIENTS, McpDoor, SessionsFull

__all__ = [
    "LIST_TTL_MS",
    "MAX_SESSIONS",
    "SERVER_NAME",
    "BearerKeys",
    "Sessions",
    "build_server",
    "mcp_tool",
    "run_http",
    "run_stdio",
]

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
_VERSION_HEADER = b"mcp-protocol-version"
LIST_TTL_MS = 60_000
"""The ``ttlMs`` of a sessionless client's ``tools/list``: how long it may reuse the list
without asking (a catalog or settings change also reaches its ``subscriptions/listen``)."""
MAX_SESSIONS = MAX_CLIENTS
"""Streamable-HTTP sessions open at most (the SDK's default is 10,000 for 30 minutes). To
open another, `Sessions` ends the least recently used session that holds no loads; when every
one holds loads, the SDK answers 503 until one ends."""
_MARGIN = 64
"""Sessions the SDK may open beyond `MAX_SESSIONS` while their opening requests are still
being answered (`Sessions` counts a session once its id is known)."""


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


def _header(scope: Mapping[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


class Sessions:
    """ASGI middleware over the SDK's streamable-HTTP app: which sessions are open, and room
    for a new one.

    It learns a session's id from the answer that opens it and counts each request of it
    (least recently used first). A request that would open a session while `MAX_SESSIONS`
    are open ends the least recently used one that holds no loads (`McpDoor.has_state`), as
    its client's ``DELETE`` would (its client gets 404 next and opens a new one, as the spec
    says); a session holding loads is never ended for another. A session's ``DELETE`` (or
    `IDLE_SECONDS` without a request, when the SDK ends it) makes the door forget its state.
    """

    def __init__(self, app: Any, door: McpDoor, limit: int = MAX_SESSIONS) -> None:
        self.app = app
        self.door = door
        self.limit = limit
        self.open: OrderedDict[str, float] = OrderedDict()
        """Session id -> when it last sent a request (`time.monotonic`)."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        method = scope.get("method")
        session = _header(scope, _SESSION_HEADER.encode())
        version = _header(scope, _VERSION_HEADER)
        opening = (
            method == "POST"
            and session is None
            and (version is None or version in HANDSHAKE_PROTOCOL_VERSIONS)
        )
        if opening and not await self._make_room(scope):
            logger.warning("refusing a new session: %d sessions hold loads", len(self.open))
            await _refuse(send, 503, "Too many open sessions: every one holds loads")
            return
        if session is not None and session in self.open:
            self.open[session] = time.monotonic()
            self.open.move_to_end(session)
        status = 0
        opened: str | None = None

        async def watch(message: Any) -> None:
            nonlocal status, opened
            if message.get("type") == "http.response.start":
                status = int(message.get("status", 0))
                opened = _header(message, _SESSION_HEADER.encode())
            await send(message)

        await self.app(scope, receive, watch)
        if opening and opened and status < 400:
            self.open[opened] = time.monotonic()
        if method == "DELETE" and session and (200 <= status < 300 or status == 404):
            self._ended(session)

    def _ended(self, session: str) -> None:
        self.open.pop(session, None)
        self.door.forget(f"http:{session}")

    async def _make_room(self, scope: Any) -> bool:
        now = time.monotonic()
        for session, used in list(self.open.items()):  # the SDK ended these already
            if now - used < IDLE_SECONDS:
                break
            self._ended(session)
        while len(self.open) >= self.limit:
            victim = next((s for s in self.open if not self.door.has_state(f"http:{s}")), None)
            if victim is None:
                return False  # every open session holds loads
            self._ended(victim)
            await self._end(scope, victim)
        return True

    async def _end(self, scope: Any, session: str) -> None:
        """End ``session`` in the SDK as its client's ``DELETE`` would."""
        headers = [(k, v) for k, v in scope.get("headers", ()) if k.lower() == b"host"]
        headers.append((_SESSION_HEADER.encode(), session.encode("latin-1")))
        delete = {**scope, "method": "DELETE", "headers": headers, "query_string": b""}
        sent = False

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if sent:
                return {"type": "http.disconnect"}
            sent = True
            return {"type": "http.request", "body": b"", "more_body": False}

        async def discard(message: Any) -> None:
            del message

        try:
            await self.app(delete, receive, discard)
        except Exception as exc:  # the session is gone from the count either way
            logger.debug("ending session %s failed: %s", session[:16], exc)


class BearerKeys:
    """ASGI middleware: a request without ``Authorization: Bearer <one of the keys>`` gets
    401 before anything else reads it (keys compared in constant time, never logged)."""

    def __init__(self, app: Any, keys: Iterable[str]) -> None:
        self.app = app
        self._keys = [key.encode("utf-8") for key in keys]
        if not self._keys:
            raise ValueError("--api-key: give at least one key")

    def allows(self, header: str | None) -> bool:
        """Whether an ``Authorization`` header value carries one of the keys."""
        scheme, _, token = (header or "").partition(" ")
        given = token.strip().encode("latin-1", "replace")
        found = False
        for key in self._keys:
            found |= hmac.compare_digest(key, given)
        return found and scheme.lower() == "bearer"

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "http" or self.allows(_header(scope, b"authorization")):
            await self.app(scope, receive, send)
            return
        await _refuse(
            send,
            401,
            "Unauthorized: a valid 'Authorization: Bearer' key is needed",
            [(b"www-authenticate", b'Bearer realm="bot-toolsearch mcp"')],
        )


async def _refuse(
    send: Any, status: int, message: str, headers: Iterable[tuple[bytes, bytes]] = ()
) -> None:
    """Answer a request with a JSON-RPC error (no id) and ``status``, without reading it."""
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}
    body = json.dumps(error).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


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


def build_server(door: McpDoor, *, private: bool = False) -> Server[Any]:
    """The low-level server of ``door`` (``tools/list``, ``tools/call`` and, for 2026-07-28
    clients, ``subscriptions/listen``); ``private``: the list is served only to holders of a
    key (its ``cacheScope``)."""
    bus = InMemorySubscriptionBus()

    async def publish() -> None:
        await bus.publish(ToolsListChanged())

    door.broadcasts.append(publish)
    connection = object()  # this server's one stdio (or in-process) connection
    scope: Literal["public", "private"] = "private" if private else "public"

    def stateless(ctx: ServerRequestContext[Any, Any]) -> bool:
        """A client the door keeps nothing of: a 2026-07-28 one (no session), or an HTTP
        session while the settings load under ``bridge`` (its state would change nothing)."""
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return True
        return _key(ctx, connection) is not connection and door.bridged

    def state_of(ctx: ServerRequestContext[Any, Any], *, create: bool) -> Any:
        key = _key(ctx, connection)
        name = _client_name(ctx)
        state = door.existing(key)
        if state is None and (create or key is connection or door.wants_state(name)):
            state = door.client(key, name, expires=key is not connection)
        if state is not None:
            state.notify = ctx.session.send_tool_list_changed  # the connection's own stream
        return state

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        del params  # one page: the door's list is short by design
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            tools = door.fresh_tools(bridge=True)
            return types.ListToolsResult(
                tools=[mcp_tool(s) for s in tools], ttl_ms=LIST_TTL_MS, cache_scope=scope
            )
        if stateless(ctx):
            return types.ListToolsResult(tools=[mcp_tool(s) for s in door.fresh_tools(bridge=True)])
        try:
            state = state_of(ctx, create=False)
        except SessionsFull:
            state = None
        if state is None:  # nothing loaded: the list every new session gets
            return types.ListToolsResult(
                tools=[mcp_tool(s) for s in door.fresh_tools(bridge=False)]
            )
        return types.ListToolsResult(tools=[mcp_tool(s) for s in await door.list_tools(state)])

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if stateless(ctx):
            outcome = await door.call_stateless(params.name, params.arguments)
        else:
            try:
                state = state_of(ctx, create=True)
            except SessionsFull as exc:
                return types.CallToolResult(
                    content=[types.TextContent(type="text", text=str(exc))], is_error=True
                )
            outcome = await door.call(state, params.name, params.arguments)
        if outcome.list_changed:
            try:  # on the call's own stream, before its result
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


async def run_http(
    door: McpDoor,
    host: str,
    port: int,
    *,
    keys: Iterable[str] = (),
    max_sessions: int = MAX_SESSIONS,
    ready: Any = None,
    sock: Any = None,
) -> None:
    """Serve ``door`` over streamable HTTP at ``http://host:port/mcp`` until cancelled;
    with ``keys``, only to requests carrying one (``Authorization: Bearer``); at most
    ``max_sessions`` handshake-era sessions open (`Sessions`); ``sock``: a bound socket to
    serve on instead (no window between choosing a port and binding it)."""
    import uvicorn

    keys = list(keys)
    server = build_server(door, private=bool(keys))
    app: Any = Sessions(
        server.streamable_http_app(host=host, max_sessions=max_sessions + _MARGIN),
        door,
        max_sessions,
    )
    if keys:
        app = BearerKeys(app, keys)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    http = uvicorn.Server(config)
    if ready is not None:
        ready(http)
    await http.serve(sockets=None if sock is None else [sock])
