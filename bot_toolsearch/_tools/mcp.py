"""MCP servers as tool sources: one supervised client session per server, in its own task.

The `mcp` SDK's client is an anyio context manager, so it must be entered and exited in the
same task. Each `MCPServerConnection` therefore owns one long-lived asyncio task that connects,
lists the tools, then serves calls that arrive through a queue (each call in its own child task,
so calls run in parallel); results travel back through futures. When the session fails — the
server does not start, dies, or does not answer within ``timeout`` — its tools are withdrawn
(the registry drops them from the next snapshot), calls fail at once with a clear "unavailable"
error, and the task reconnects after an exponential back-off. A server's
``notifications/tools/list_changed`` re-lists its tools in the same session, and the registry
re-indexes them; a storm of them is coalesced: one re-list at a time, and at most one per
`_RELIST_EVERY` seconds while more keep coming (the last change is always listed).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import os
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TextIO

import anyio

from bot_toolsearch._errors import CatalogError

from .mcp_config import MCPServerConfig
from .tool import Tool

__all__ = ["MCPServerConnection", "MCPToolError", "mcp_tool_name_ok"]

log = logging.getLogger("bot_toolsearch.mcp")

ServerState = Literal["idle", "connecting", "ready", "failed", "closed"]
MAX_TOOL_NAME_LENGTH = 64


class MCPToolError(RuntimeError):
    """An MCP tool call could not be served; the message is written for the model."""


def mcp_tool_name_ok(name: object) -> bool:
    """Whether a server-provided tool name is safe to join the catalog."""
    return (
        isinstance(name, str)
        and 0 < len(name) <= MAX_TOOL_NAME_LENGTH
        and name.isprintable()
        and not any(c.isspace() or c in "<>" for c in name)
    )


@dataclass(slots=True)
class _Call:
    tool: str
    arguments: dict[str, Any]
    future: asyncio.Future[str]


_RELIST = "relist"
"""Queued when the server announces ``notifications/tools/list_changed``."""
_RELIST_EVERY = 0.5
"""Seconds between two re-lists of one server while its change notifications keep coming."""


@contextlib.contextmanager
def _server_errlog() -> Iterator[TextIO]:
    """Where a stdio server's stderr goes: ours if it is a real file, else the null device.

    (Under pytest's capture, in notebooks or under pythonw, ``sys.stderr`` has no file
    descriptor, and a subprocess cannot write to it.)
    """
    usable: TextIO | None = None
    for stream in (sys.stderr, sys.__stderr__):
        try:
            if stream is not None and usable is None:
                stream.fileno()
                usable = stream
        except (OSError, ValueError, AttributeError):
            continue
    if usable is not None:
        yield usable
        return
    with open(os.devnull, "w", encoding="utf-8") as devnull:
        yield devnull


def _describe(exc: BaseException) -> str:
    """The innermost useful message of an (exception-group wrapped) failure."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"


def result_text(result: Any) -> tuple[str, bool]:
    """``(text, is_error)`` of a `CallToolResult`: text blocks joined, others summarised."""
    parts: list[str] = []
    for block in result.content:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind in ("image", "audio"):
            parts.append(f"[{kind}: {getattr(block, 'mime_type', 'unknown type')}]")
        else:
            parts.append(f"[{kind or 'content'}]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, default=str))
    return "\n".join(parts), bool(result.is_error)


def server_description(client: Any) -> str:
    """What a connected MCP client's server says it is: ``instructions``, else the
    ``serverInfo`` description or title; ``""`` when none is a non-blank string."""
    info = getattr(client, "server_info", None)
    for text in (
        getattr(client, "instructions", None),
        getattr(info, "description", None),
        getattr(info, "title", None),
    ):
        if isinstance(text, str) and text.strip():
            return text.strip()
    return ""


class MCPServerConnection:
    """One MCP server: its current tools, and a supervised session that serves calls.

    Args:
        config: how to reach the server.
        on_change: called (on the event loop) whenever the server's tool list changes.
        backoff: ``(first, maximum)`` seconds between reconnect attempts, doubling each time.
    """

    def __init__(
        self,
        config: MCPServerConfig,
        *,
        on_change: Callable[[], None],
        backoff: tuple[float, float] = (1.0, 60.0),
    ) -> None:
        self.config = config
        self.state: ServerState = "idle"
        self.error: str | None = None
        """Why the server is unavailable, while it is."""
        self.tools: tuple[Tool, ...] = ()
        """The server's tools as ``<server>.<tool>`` while it is ready; empty otherwise."""
        self.description = ""
        """The server's own word on what it is, for its namespace: its ``instructions``, else
        its ``serverInfo`` description or title (``""`` when it gives none)."""
        self.attempts = 0
        """Connection attempts so far (tests and ``catalog list`` read it)."""
        self._on_change = on_change
        self._backoff = backoff
        self._queue: asyncio.Queue[_Call | str | None] = asyncio.Queue()
        self._settled = asyncio.Event()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._end_reason = ""
        self._closed = False
        self._relisting = False
        """A re-list is under way (or waiting out `_RELIST_EVERY`)."""
        self._changed_again = False
        """The server announced a change since that re-list started."""

    @property
    def label(self) -> str:
        """Source label of this server's tools, ``mcp:<name>``."""
        return f"mcp:{self.config.name}"

    def start(self) -> None:
        """Start the supervising task on the running loop (idempotent)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._supervise(), name=f"mcp-server-{self.config.name}"
            )

    async def wait_settled(self) -> None:
        """Wait until the current connection attempt has succeeded or failed."""
        await self._settled.wait()

    async def aclose(self) -> None:
        """Close the session (terminating a stdio server) and stop reconnecting."""
        if self._closed:
            return
        self._closed = True
        self._set_state("closed", "the server was removed from the configuration")
        if self._task is not None:
            # Cancelling is safe: the SDK shields the subprocess shutdown from cancellation.
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._fail_queued()

    async def call(self, tool: str, arguments: Mapping[str, Any]) -> str:
        """Forward one call and return the server's text.

        Raises:
            MCPToolError: the server is unavailable, timed out, or reported an error.
        """
        if self.state == "connecting":
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._settled.wait(), self.config.timeout)
        if self.state != "ready":
            raise self._unavailable(tool)
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(_Call(tool, dict(arguments), future))
        return await future

    def _unavailable(self, tool: str) -> MCPToolError:
        return MCPToolError(
            f"MCP server {self.config.name!r} is unavailable ({self.error or self.state}), so "
            f"tool {self.config.name}.{tool} cannot run now; it is being restarted, try again "
            "later or use another tool."
        )

    def _set_state(self, state: ServerState, error: str | None = None) -> None:
        self.state = state
        self.error = error
        if state == "connecting":
            self._settled.clear()
        else:
            self._settled.set()
        had_tools = bool(self.tools)
        if state != "ready":
            self.tools = ()
        if had_tools and not self.tools:
            self._on_change()

    def _fail_queued(self) -> None:
        while not self._queue.empty():
            call = self._queue.get_nowait()
            if isinstance(call, _Call) and not call.future.done():
                call.future.set_exception(self._unavailable(call.tool))

    async def _supervise(self) -> None:
        delay = self._backoff[0]
        while not self._closed:
            self.attempts += 1
            self._set_state("connecting")
            self._end_reason = "the session ended"
            try:
                reached_ready = await self._session()
                error = self._end_reason
            except Exception as exc:
                reached_ready = self.state == "ready"
                error = _describe(exc)
            if self._closed:
                break
            if reached_ready:
                delay = self._backoff[0]
            self._set_state("failed", error)
            self._fail_queued()
            log.warning(
                "MCP server %r unavailable: %s; its tools are withdrawn, retrying in %.1f s",
                self.config.name,
                error,
                delay,
            )
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), delay)
            delay = min(delay * 2, self._backoff[1])

    def _client(self, errlog: TextIO) -> Any:
        from mcp import Client, StdioServerParameters, stdio_client

        config = self.config
        if config.command is not None:
            params = StdioServerParameters(
                command=config.command, args=list(config.args), env=dict(config.env) or None
            )
            target: Any = stdio_client(params, errlog=errlog)
        elif config.url is not None and config.headers:
            target = _http_with_headers(config.url, config.resolved_headers())
        else:
            target = config.url
        return Client(target, read_timeout_seconds=config.timeout, message_handler=self._on_message)

    async def _on_message(self, message: Any) -> None:
        """A server's ``notifications/tools/list_changed``: re-list in the session's task."""
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            self._queue.put_nowait(_RELIST)

    async def _listen(self, client: Any) -> None:
        """On the 2026-07-28 protocol a server announces changes on a ``subscriptions/listen``
        stream instead: follow it while the session lasts (nothing to do for older servers,
        whose notifications reach `_on_message`)."""
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                if not subscription.honored.tools_list_changed:
                    return
                async for _ in subscription:
                    self._queue.put_nowait(_RELIST)
        except Exception as exc:  # not served, not that era, or the stream dropped
            log.debug("MCP server %r: no change stream: %s", self.config.name, _describe(exc))

    async def _session(self) -> bool:
        """Run one session until it fails or the connection is closed; True if it got ready."""
        ready = False
        stack = contextlib.ExitStack()
        # One cancel scope around the whole session, so the connect deadline can be lifted
        # once the tools are listed without exiting scopes out of order.
        with stack, anyio.CancelScope() as scope:
            scope.deadline = anyio.current_time() + self.config.timeout
            async with self._client(stack.enter_context(_server_errlog())) as client:
                tools = await self._list_tools(client)
                scope.deadline = math.inf
                self.description = server_description(client)
                self.tools = tools
                self._set_state("ready")
                ready = True
                log.info("MCP server %r ready with %d tools", self.config.name, len(tools))
                self._on_change()
                async with anyio.create_task_group() as group:
                    group.start_soon(self._listen, client)
                    while (call := await self._queue.get()) is not None:
                        if isinstance(call, _Call):
                            group.start_soon(self._serve, client, call)
                        elif self._relisting:
                            self._changed_again = True
                        else:
                            self._relisting = True
                            group.start_soon(self._relists, client)
                    group.cancel_scope.cancel()
        if scope.cancelled_caught and not ready:
            raise TimeoutError(f"no answer within {self.config.timeout:g} s")
        return ready

    async def _list_tools(self, client: Any) -> tuple[Tool, ...]:
        name = self.config.name
        tools: list[Tool] = []
        cursor: str | None = None
        for _ in range(100):  # a paginator that never ends must not hang the connection
            page = await client.list_tools(cursor=cursor)
            for spec in page.tools:
                if not mcp_tool_name_ok(spec.name):
                    log.warning("MCP server %r: tool %r skipped: unsafe name", name, spec.name)
                    continue
                try:
                    tool = Tool(
                        f"{name}.{spec.name}",
                        spec.description or "",
                        spec.input_schema,
                        _forwarder(self, spec.name),
                    )
                except CatalogError as exc:  # too deep, self-referencing, not JSON, ...
                    log.warning("MCP server %r: tool %r skipped: %s", name, spec.name, exc)
                    continue
                tools.append(tool)
            cursor = page.next_cursor
            if cursor is None:
                break
        return tuple(tools)

    async def _relists(self, client: Any) -> None:
        """Re-list now, then again after `_RELIST_EVERY` for as long as changes keep coming."""
        try:
            while True:
                self._changed_again = False
                await self._relist(client)
                await anyio.sleep(_RELIST_EVERY)
                if not self._changed_again:
                    return
        finally:
            self._relisting = False

    async def _relist(self, client: Any) -> None:
        """Re-list the tools after the server said they changed; the registry re-indexes."""
        try:
            with anyio.fail_after(self.config.timeout):
                tools = await self._list_tools(client)
        except Exception as exc:  # the session's own failure handling ends it if it is gone
            log.warning("MCP server %r: re-listing its tools failed: %s", self.config.name, exc)
            return
        if self.state != "ready":
            return
        self.tools = tools
        log.info("MCP server %r changed its tools: now %d", self.config.name, len(tools))
        self._on_change()

    async def _serve(self, client: Any, call: _Call) -> None:
        label = f"{self.config.name}.{call.tool}"
        try:
            await self._forward(client, call, label)
        finally:
            # A call cut off by the end of the session (cancelled) must not leave its caller
            # waiting forever.
            if not call.future.done():
                call.future.set_exception(self._unavailable(call.tool))

    async def _forward(self, client: Any, call: _Call, label: str) -> None:
        from mcp import MCPError

        try:
            result = await client.call_tool(
                call.tool, call.arguments, read_timeout_seconds=self.config.call_timeout
            )
        except MCPError as exc:
            if exc.error.code == -32000:  # CONNECTION_CLOSED: the server is gone
                self._end_reason = "the server closed the connection"
                self._queue.put_nowait(None)
                self.error = self._end_reason
                outcome: BaseException = self._unavailable(call.tool)
            elif exc.error.code == -32001:  # REQUEST_TIMEOUT
                outcome = MCPToolError(
                    f"MCP tool {label} timed out after {self.config.call_timeout:g} s"
                )
            else:
                outcome = MCPToolError(f"MCP tool {label} failed: {exc.error.message}")
        except Exception as exc:
            outcome = MCPToolError(f"MCP tool {label} failed: {_describe(exc)}")
        else:
            text, is_error = result_text(result)
            if not is_error:
                if not call.future.done():
                    call.future.set_result(text)
                return
            outcome = MCPToolError(f"MCP tool {label} reported an error: {text or '(no text)'}")
        if not call.future.done():
            call.future.set_exception(outcome)


@contextlib.asynccontextmanager
async def _http_with_headers(url: str, headers: dict[str, str]) -> AsyncIterator[Any]:
    """The streamable-HTTP transport to ``url`` on an HTTP client that sends ``headers``.

    The SDK's own client (its timeouts and redirect rule) with the headers set on it; the
    values reach only the requests, never a log line.
    """
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(url, http_client=http) as streams,
    ):
        yield streams


def _forwarder(connection: MCPServerConnection, tool: str) -> Callable[..., Any]:
    """The handler of an MCP tool: forwards the call to the server's *live* connection."""

    async def forward(**arguments: Any) -> str:
        return await connection.call(tool, arguments)

    return forward
