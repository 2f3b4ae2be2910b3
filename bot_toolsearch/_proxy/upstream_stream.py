"""The proxy's upstream connections on asyncio's own transports, not through anyio.

The HTTP client the SDK builds on (httpx over httpcore, or httpx2 over httpcore2) reaches the
network through anyio: each read and write of an exchange opens a cancel scope with its
deadline, maps its errors through two context managers and yields to the event loop once more
(a checkpoint), about a fifth of the CPU of one proxied exchange (issue 44). `AsyncioBackend`
is a network backend for the same connection pool, its streams on asyncio's transports: a read
waits for data under ``asyncio.timeout``, a write waits only when the transport says its buffer
is full, TLS is asyncio's ``start_tls``. Errors are the HTTP library's own, as its anyio
backend raises them (``ConnectError``, ``ConnectTimeout``, ``ReadError``, ``ReadTimeout``,
``WriteError``, ``WriteTimeout``), so the client, its retries and the SDK see no difference.

Reading is flow-controlled: past `HIGH_WATER` bytes received and not yet read, the connection
stops reading from its socket until the client has read them, so an upstream that sends faster
than the proxy reads holds at most that much in the proxy's memory (the answer's own bound is
`bot_toolsearch._proxy.upstream_http.MAX_ANSWER_BYTES`).

`use_asyncio_streams` puts the backend into an HTTP client's own connection pool before it
opens its first connection; a client whose pool is not the library's plain one (a proxy from
the environment, another transport) keeps its own backend.
"""

from __future__ import annotations

import asyncio
import select
import ssl
import sys
from collections.abc import Iterable
from typing import Any

__all__ = ["HIGH_WATER", "AsyncioBackend", "use_asyncio_streams"]

HIGH_WATER = 256 * 1024
"""Bytes received and not yet read past which a connection stops reading from its socket."""
_LOW_WATER = 64 * 1024
"""Bytes left unread below which a stopped connection reads again."""
_HAPPY_EYEBALLS = 0.25
"""Seconds before the next address of a host is tried meanwhile (RFC 8305's delay, as anyio)."""


class _Connection(asyncio.Protocol):
    """One connection's received bytes, its end, and whether it may write."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.received = bytearray()
        self.ended = False
        self.error: BaseException | None = None
        self.reading: asyncio.Future[None] | None = None
        self.draining: asyncio.Future[None] | None = None
        self.paused_writing = False
        self.paused_reading = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.received += data
        if len(self.received) > HIGH_WATER and not self.paused_reading:
            self.paused_reading = True
            assert self.transport is not None
            self.transport.pause_reading()
        _wake(self.reading)

    def eof_received(self) -> bool:
        self.ended = True
        _wake(self.reading)
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended = True
        self.error = exc
        _wake(self.reading)
        _wake(self.draining)

    def pause_writing(self) -> None:
        self.paused_writing = True

    def resume_writing(self) -> None:
        self.paused_writing = False
        _wake(self.draining)


async def _in_time(waiter: asyncio.Future[None], seconds: float | None) -> bool:
    """Whether ``waiter`` is done within ``seconds`` (``None``: no limit); a wait cancelled
    from outside stays cancelled."""
    try:
        async with asyncio.timeout(seconds):
            await waiter
    except TimeoutError:
        return False
    return True


def _wake(waiter: asyncio.Future[None] | None) -> None:
    if waiter is not None and not waiter.done():
        waiter.set_result(None)


class AsyncioStream:
    """A connection as the HTTP library's pool uses it (its ``AsyncNetworkStream``)."""

    def __init__(self, connection: _Connection, errors: Any) -> None:
        self._connection = connection
        self._errors = errors

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109
        """At most ``max_bytes`` received bytes, once some have come; ``b""`` at the end.

        Raises:
            ReadTimeout: nothing came within ``timeout`` seconds.
            ReadError: the connection broke, or another read is waiting.
        """
        connection = self._connection
        if not connection.received and not connection.ended:
            if connection.reading is not None:
                raise self._errors.ReadError("another read is waiting on this connection")
            connection.reading = waiter = asyncio.get_running_loop().create_future()
            try:
                came = await _in_time(waiter, timeout)
            finally:
                connection.reading = None
            if not came:
                raise self._errors.ReadTimeout("the upstream sent nothing in time")
        received = connection.received
        if received:
            data = bytes(received[:max_bytes])
            del received[:max_bytes]
            if connection.paused_reading and len(received) < _LOW_WATER:
                connection.paused_reading = False
                if connection.transport is not None and not connection.transport.is_closing():
                    connection.transport.resume_reading()
            return data
        if connection.error is not None:
            raise self._errors.ReadError(f"the connection broke: {type(connection.error).__name__}")
        return b""

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:  # noqa: ASYNC109
        """Send ``buffer``; wait only while the transport's buffer is full.

        Raises:
            WriteTimeout: the buffer stayed full for ``timeout`` seconds.
            WriteError: the connection is closed or broke.
        """
        if not buffer:
            return
        connection = self._connection
        transport = connection.transport
        if transport is None or transport.is_closing() or connection.error is not None:
            raise self._errors.WriteError("the connection is closed")
        try:
            transport.write(buffer)
        except (OSError, RuntimeError) as exc:
            raise self._errors.WriteError(f"the write failed: {type(exc).__name__}") from None
        if not connection.paused_writing:
            return
        connection.draining = waiter = asyncio.get_running_loop().create_future()
        try:
            drained = await _in_time(waiter, timeout)
        finally:
            connection.draining = None
        if not drained:
            raise self._errors.WriteTimeout("the upstream took nothing in time")
        if connection.error is not None or transport.is_closing():
            raise self._errors.WriteError("the connection broke while writing")

    async def aclose(self) -> None:
        """Close the connection: at once, bytes still unsent dropped (as the anyio backend
        does), so an upstream that stopped reading cannot keep it open."""
        transport = self._connection.transport
        if transport is not None:
            transport.close()
            try:
                pending = transport.get_write_buffer_size()
            except AttributeError:  # a TLS transport closed already has nothing to send
                pending = 0
            if pending:
                transport.abort()
            # The socket itself closes on the loop's next turn: take it here, so a loop that
            # stops right after closing its client leaves no socket open (as anyio does).
            await asyncio.sleep(0)

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 (the library's interface)
    ) -> AsyncioStream:
        """The connection over TLS (asyncio's ``start_tls``), verified as ``ssl_context`` says.

        Raises:
            ConnectTimeout: the handshake took longer than ``timeout`` seconds.
            ConnectError: the handshake failed (a certificate refused, the connection broke).
        """
        connection = self._connection
        transport = connection.transport
        if transport is None or transport.is_closing():
            raise self._errors.ConnectError("the connection is closed")
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                secured = await loop.start_tls(
                    transport, connection, ssl_context, server_hostname=server_hostname
                )
        except TimeoutError:
            transport.close()
            raise self._errors.ConnectTimeout("the TLS handshake took too long") from None
        except (OSError, ssl.SSLError, ConnectionError) as exc:
            transport.close()
            raise self._errors.ConnectError(f"the TLS handshake failed: {exc}") from None
        if secured is None:  # the connection closed during the handshake
            raise self._errors.ConnectError("the connection closed during the TLS handshake")
        connection.transport = secured
        return AsyncioStream(connection, self._errors)

    def get_extra_info(self, info: str) -> Any:
        """What the pool asks of a connection: its TLS object, addresses, socket, and
        whether it has something to read (an idle connection that has is not reused)."""
        connection = self._connection
        transport = connection.transport
        if info == "is_readable":
            if connection.received or connection.ended or transport is None:
                return True
            return _readable(_info(transport, "socket"))
        name = _EXTRA.get(info)
        return None if transport is None or name is None else _info(transport, name)


_EXTRA = {
    "ssl_object": "ssl_object",
    "client_addr": "sockname",
    "server_addr": "peername",
    "socket": "socket",
}
"""What the pool asks of a connection, by the name asyncio's transports give it."""


def _info(transport: asyncio.BaseTransport, name: str) -> Any:
    """``transport.get_extra_info(name)``; ``None`` once a TLS transport is closed (asyncio's
    then has no protocol left to ask)."""
    try:
        return transport.get_extra_info(name)
    except AttributeError:
        return None


def _readable(sock: Any) -> bool:
    """Whether ``sock`` has bytes (or its end) to read now; a socket gone counts as readable."""
    fileno = -1 if sock is None else sock.fileno()
    if fileno < 0:
        return True
    poller = select.poll()
    poller.register(fileno, select.POLLIN)
    return bool(poller.poll(0))


class AsyncioBackend:
    """The HTTP library's network backend (``AsyncNetworkBackend``) on asyncio's transports.

    Args:
        core: the HTTP library's core module (``httpcore`` or ``httpcore2``), whose errors the
            streams raise.
    """

    def __init__(self, core: Any) -> None:
        self._errors = core

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (the library's interface)
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> AsyncioStream:
        """A TCP connection to ``host``:``port`` (``TCP_NODELAY``, as asyncio sets it).

        Raises:
            ConnectTimeout: not connected within ``timeout`` seconds.
            ConnectError: the host is not found or refuses.
        """
        loop = asyncio.get_running_loop()
        local = None if local_address is None else (local_address, 0)
        try:
            async with asyncio.timeout(timeout):
                transport, connection = await loop.create_connection(
                    _Connection,
                    host,
                    port,
                    local_addr=local,
                    happy_eyeballs_delay=_HAPPY_EYEBALLS,
                )
        except TimeoutError:
            raise self._errors.ConnectTimeout(f"no connection to {host}:{port} in time") from None
        except OSError as exc:
            raise self._errors.ConnectError(f"no connection to {host}:{port}: {exc}") from None
        _set_options(transport, socket_options)
        return AsyncioStream(connection, self._errors)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 (the library's interface)
        socket_options: Iterable[Any] | None = None,
    ) -> AsyncioStream:
        """A connection to the Unix socket ``path``.

        Raises:
            ConnectTimeout: not connected within ``timeout`` seconds.
            ConnectError: nothing listens there.
        """
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                transport, connection = await loop.create_unix_connection(_Connection, path)
        except TimeoutError:
            raise self._errors.ConnectTimeout("no connection to the socket in time") from None
        except OSError as exc:
            raise self._errors.ConnectError(f"no connection to the socket: {exc}") from None
        _set_options(transport, socket_options)
        return AsyncioStream(connection, self._errors)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


def _set_options(transport: asyncio.Transport, options: Iterable[Any] | None) -> None:
    """Set the pool's socket options on a new connection; closed if one fails.

    Raises:
        OSError: an option the socket refuses.
    """
    sock = transport.get_extra_info("socket")
    try:
        for option in options or ():
            sock.setsockopt(*option)
    except OSError:
        transport.abort()
        raise


def use_asyncio_streams(client: Any) -> bool:
    """Give ``client`` (an httpx or httpx2 ``AsyncClient`` that has opened no connection) an
    `AsyncioBackend` in its own connection pool; whether it now has one. A client whose
    default transport is not the library's plain pool keeps its own."""
    pool = getattr(getattr(client, "_transport", None), "_pool", None)
    core = sys.modules.get(type(pool).__module__.partition(".")[0])
    auto = getattr(core, "AsyncConnectionPool", None)
    if pool is None or core is None or type(pool) is not auto:
        return False
    if not hasattr(pool, "_network_backend"):
        return False
    if pool.connections:  # connections made by another backend stay theirs: leave it
        return False
    pool._network_backend = AsyncioBackend(core)
    return True
