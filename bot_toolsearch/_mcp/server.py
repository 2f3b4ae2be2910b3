"""The MCP door on the official ``mcp`` SDK: a low-level `Server` over stdio or streamable HTTP.

``tools/list`` and ``tools/call`` go to the `McpDoor` with the client session they come from:
the ``mcp-session-id`` of a streamable-HTTP session, or the one stdio connection. A search that
loads tools under ``append`` sends ``notifications/tools/list_changed`` on the call's own
stream (before its result); a new catalog or settings snapshot sends it to every session.
A 2026-07-28 client has no session: it gets the ``bridge`` list (the same for every such
client, with ``ttlMs``/``cacheScope``) and each of its calls is answered with nothing kept, as
is every HTTP session's under ``bridge`` loading (the same for every client of one
``[[proxy.clients]]`` policy). Over HTTP, `Sessions` (``sessions.py``) keeps the open sessions
bounded without ending a session that holds loads, and with ``[proxy] state`` lets any door
process serve any session, whose loads then go to Redis after each search; `BearerKeys`
(``admission.py``) answers 401 to a request without one of ``--api-key``'s keys or a client's,
before the SDK reads it, and a client's request is answered from that client's tool set.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.subscriptions import ToolsListChanged
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from bot_toolsearch._services.client_policy import ClientPolicy
from bot_toolsearch._services.shared_state import SharedStateDown, open_state

from .admission import BearerKeys, policy_of
from .door import McpDoor, Outcome, SessionsFull
from .sessions import (
    MARGIN,
    MAX_SESSIONS,
    SCOPE_SESSION,
    SCOPE_SHARED,
    SESSION_HEADER,
    Sessions,
)
from .shared import SharedSession, SharedSessions

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
LOADS_NOT_KEPT = (
    "Error: the door's shared session state did not answer, so the tools this call loaded "
    "were not kept. Try again."
)
"""The result of a call whose loads Redis did not take (``[proxy] state``)."""
LIST_TTL_MS = 60_000
"""The ``ttlMs`` of a sessionless client's ``tools/list``: how long it may reuse the list
without asking (a catalog or settings change also reaches its ``subscriptions/listen``)."""


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
    scope = getattr(request, "scope", None)
    session = scope.get(SCOPE_SESSION) if isinstance(scope, Mapping) else None
    if not session:
        headers = getattr(request, "headers", None)
        session = headers.get(SESSION_HEADER) if headers is not None else None
    return f"http:{session}" if session else connection


def _loads(held: tuple[str, SharedSession] | None) -> tuple[str, ...]:
    """The loads shared state held of a request's session (none without it)."""
    return held[1].loaded if held is not None else ()


def _policy(ctx: ServerRequestContext[Any, Any]) -> ClientPolicy | None:
    """The ``[[proxy.clients]]`` client of a request over HTTP, if one (`BearerKeys`)."""
    scope = getattr(ctx.request, "scope", None)
    return policy_of(scope) if isinstance(scope, Mapping) else None


def _shared(ctx: ServerRequestContext[Any, Any]) -> tuple[str, SharedSession] | None:
    """With shared state: the request's session id and what Redis held of it."""
    scope = getattr(ctx.request, "scope", None)
    if not isinstance(scope, Mapping):
        return None
    found, session = scope.get(SCOPE_SHARED), scope.get(SCOPE_SESSION)
    if isinstance(found, SharedSession) and isinstance(session, str):
        return session, found
    return None


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


def build_server(
    door: McpDoor, *, private: bool = False, shared: SharedSessions | None = None
) -> Server[Any]:
    """The low-level server of ``door`` (``tools/list``, ``tools/call`` and, for 2026-07-28
    clients, ``subscriptions/listen``); ``private``: the list is served only to holders of a
    key (its ``cacheScope``); ``shared``: the sessions' loads are kept there too."""
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

    async def state_of(ctx: ServerRequestContext[Any, Any], *, create: bool) -> Any:
        key = _key(ctx, connection)
        name = _client_name(ctx)
        if shared is not None and not door.has_state(key):
            await _recall(door, shared, name)
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
        policy = _policy(ctx)
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            tools = door.fresh_tools(bridge=True, policy=policy)
            return types.ListToolsResult(
                tools=[mcp_tool(s) for s in tools], ttl_ms=LIST_TTL_MS, cache_scope=scope
            )
        if stateless(ctx):
            tools = door.fresh_tools(bridge=True, policy=policy)
            return types.ListToolsResult(tools=[mcp_tool(s) for s in tools])
        held = _shared(ctx)
        try:
            state = await state_of(ctx, create=bool(_loads(held)))
        except SessionsFull:
            state = None
        if state is None:  # nothing loaded: the list every new session gets
            return types.ListToolsResult(
                tools=[mcp_tool(s) for s in door.fresh_tools(bridge=False, policy=policy)]
            )
        listed = await door.list_tools(state, _loads(held), policy)
        return types.ListToolsResult(tools=[mcp_tool(s) for s in listed])

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        policy = _policy(ctx)
        if stateless(ctx):
            outcome = await door.call_stateless(params.name, params.arguments, policy)
        else:
            try:
                state = await state_of(ctx, create=True)
            except SessionsFull as exc:
                return types.CallToolResult(
                    content=[types.TextContent(type="text", text=str(exc))], is_error=True
                )
            held, called = _shared(ctx), len(state.called)
            outcome = await door.call(state, params.name, params.arguments, _loads(held), policy)
            if held is not None and shared is not None:
                outcome = await _keep_loads(door, shared, held[0], outcome)
                await _keep_ran(door, shared, state.client, state.called[called:])
        _log_call(policy, params.name, outcome)
        if outcome.list_changed:
            await _announce(ctx)
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


async def _announce(ctx: ServerRequestContext[Any, Any]) -> None:
    """``notifications/tools/list_changed`` on a call's own stream, before its result."""
    try:
        await ctx.session.send_notification(
            types.ToolListChangedNotification(), related_request_id=ctx.request_id
        )
    except Exception as exc:  # the result still goes out; the client re-lists later
        logger.debug("tools/list_changed not delivered: %s", exc)


def _log_call(policy: ClientPolicy | None, name: str, outcome: Outcome) -> None:
    """One log line per ``tools/call``: the client's name (never its key), the tool."""
    client = policy.name if policy is not None else "-"
    result = "error" if outcome.is_error else "ok"
    logger.info("mcp: client %s: tools/call %r: %s", client, name[:200], result)


async def _keep_loads(
    door: McpDoor, shared: SharedSessions, session: str, outcome: Outcome
) -> Outcome:
    """``outcome`` once its loads are in the shared state; an error result when Redis did
    not take them (this process forgets them too, so no process serves loads the others
    lack)."""
    if not outcome.loaded:
        return outcome
    try:
        await shared.add_loaded(session, outcome.loaded)
    except SharedStateDown as exc:
        logger.warning("mcp: a search's loads were not kept: %s", exc)
        door.forget(f"http:{session}")
        return Outcome(LOADS_NOT_KEPT, True)
    return outcome


async def _recall(door: McpDoor, shared: SharedSessions, client: str) -> None:
    """Under ``tool_search_keep_loaded = "conversation"``: the tools ``client`` ran on any
    process, before a session of it gets a state here."""
    if not client or not door.keeps_loaded:
        return
    try:
        door.remember(client, await shared.kept(client))
    except SharedStateDown as exc:  # the session starts with what this process kept
        logger.warning("mcp: the tools a client ran elsewhere are unknown here: %s", exc)


async def _keep_ran(door: McpDoor, shared: SharedSessions, client: str, ran: Sequence[str]) -> None:
    """Under ``tool_search_keep_loaded = "conversation"``: keep the tools ``client`` just ran
    for its next sessions on any process."""
    if not client or not ran or not door.keeps_loaded:
        return
    try:
        await shared.keep(client, ran)
    except SharedStateDown as exc:  # this process still keeps them
        logger.warning("mcp: the tools a client ran are kept here only: %s", exc)


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
    state: str | SharedSessions | None = None,
    ready: Any = None,
    sock: Any = None,
) -> None:
    """Serve ``door`` over streamable HTTP at ``http://host:port/mcp`` until cancelled;
    with ``keys``, only to requests carrying one (``Authorization: Bearer``); at most
    ``max_sessions`` handshake-era sessions open (`Sessions`); ``state``: a Redis URL
    (``[proxy] state``) where the sessions and their loads are kept, so door processes that
    share it serve any session (or the `SharedSessions` to use, closed by its owner);
    ``sock``: a bound socket to serve on instead (no window between choosing a port and
    binding it). Besides ``keys``, each ``[[proxy.clients]]`` key is admitted, with that
    client's tool set (`BearerKeys`).

    Raises:
        ValueError: ``state`` is not a Redis URL, or the redis package is missing.
    """
    import uvicorn

    keys = list(keys)
    private = bool(keys or door.settings().proxy.clients)
    shared: SharedSessions | None = None
    if isinstance(state, SharedSessions):
        redis, shared = None, state
    else:
        redis = open_state(state)
        shared = SharedSessions(redis, max_sessions) if redis is not None else None
    door.cached = shared is not None
    server = build_server(door, private=private, shared=shared)
    app: Any = Sessions(
        server.streamable_http_app(host=host, max_sessions=max_sessions + MARGIN),
        door,
        max_sessions,
        shared,
    )
    app = BearerKeys(app, keys, lambda: door.settings().proxy.clients)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    http = uvicorn.Server(config)
    if ready is not None:
        ready(http)
    try:
        await http.serve(sockets=None if sock is None else [sock])
    finally:
        if redis is not None:
            await redis.aclose()
