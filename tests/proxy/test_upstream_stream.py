"""The proxy's upstream connections on asyncio's transports (`_proxy/upstream_stream.py`):
what the HTTP client sees is what its own anyio backend gives, over hostile servers on
127.0.0.1, plain and over real TLS, for httpx2 (openai 3) and httpx (openai 2)."""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from bot_toolsearch._proxy.upstream_http import upstream_http
from bot_toolsearch._proxy.upstream_stream import HIGH_WATER, AsyncioBackend, use_asyncio_streams

LIBRARIES = [
    pytest.param(name, id=name)
    for name in ("httpx2", "httpx")
    if importlib.util.find_spec(name) is not None
]
CORE = {"httpx2": "httpcore2", "httpx": "httpcore"}
OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok"

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@asynccontextmanager
async def serving(handler: Handler, tls: ssl.SSLContext | None = None) -> AsyncIterator[int]:
    """A raw server on 127.0.0.1 running ``handler`` per connection; its port. Every
    connection is closed, and every handler still running cancelled, on the way out."""
    running: set[asyncio.Task[None]] = set()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        running.add(task)
        try:
            await handler(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            pass
        finally:
            writer.transport.abort()
            running.discard(task)

    server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=tls)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        for task in list(running):
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        server.close()
        await server.wait_closed()


async def read_head(reader: asyncio.StreamReader) -> bytes:
    return await reader.readuntil(b"\r\n\r\n")


def client_of(library: str, **kwargs: Any) -> Any:
    client = importlib.import_module(library).AsyncClient(**kwargs)
    assert use_asyncio_streams(client)
    return client


def test_the_proxys_upstream_client_has_the_asyncio_backend() -> None:
    client = upstream_http((), ())
    assert isinstance(client._transport._pool._network_backend, AsyncioBackend)


@pytest.mark.parametrize("library", LIBRARIES)
async def test_a_client_with_another_transport_or_connections_already_keeps_its_own(
    library: str,
) -> None:
    httpx = importlib.import_module(library)
    mounted = httpx.AsyncClient(transport=httpx.MockTransport(lambda r: httpx.Response(200)))
    assert not use_asyncio_streams(mounted)
    await mounted.aclose()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_head(reader)
        writer.write(OK)
        await writer.drain()
        await asyncio.sleep(0.5)

    async with serving(handler) as port:
        used = httpx.AsyncClient()
        await used.get(f"http://127.0.0.1:{port}/")
        assert not use_asyncio_streams(used)
        await used.aclose()


@pytest.mark.parametrize("library", LIBRARIES)
async def test_answers_come_over_one_kept_connection(library: str) -> None:
    connections = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        while True:
            try:
                head = await read_head(reader)
            except asyncio.IncompleteReadError:
                break
            length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            body = await reader.readexactly(length)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            await writer.drain()
        writer.close()

    async with serving(handler) as port:
        client = client_of(library)
        big = b"x" * 3_000_000  # larger than the socket's buffer: the write waits on its drain
        for body in (b"one", big, b"three"):
            answer = await client.post(f"http://127.0.0.1:{port}/", content=body)
            assert answer.status_code == 200
            assert answer.content == body
        await client.aclose()
    assert connections == 1


@pytest.mark.parametrize("library", LIBRARIES)
async def test_an_upstream_that_never_answers_is_a_read_timeout(library: str) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_head(reader)
        await asyncio.sleep(5)

    httpx = importlib.import_module(library)
    async with serving(handler) as port:
        client = client_of(library, timeout=httpx.Timeout(5, read=0.2))
        with pytest.raises(httpx.ReadTimeout):
            await client.get(f"http://127.0.0.1:{port}/")
        await client.aclose()


@pytest.mark.parametrize("library", LIBRARIES)
async def test_nothing_listening_is_a_connect_error(library: str) -> None:
    httpx = importlib.import_module(library)
    async with serving(lambda r, w: asyncio.sleep(0)) as port:
        pass  # the port is free again
    client = client_of(library)
    with pytest.raises(httpx.ConnectError):
        await client.get(f"http://127.0.0.1:{port}/")
    await client.aclose()


@pytest.mark.parametrize("library", LIBRARIES)
async def test_an_answer_cut_off_or_reset_is_the_librarys_own_error(library: str) -> None:
    async def cut(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_head(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort")
        await writer.drain()
        writer.close()

    async def reset(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_head(reader)
        writer.transport.abort()  # an RST, not a FIN

    httpx = importlib.import_module(library)
    for handler in (cut, reset):
        async with serving(handler) as port:
            client = client_of(library)
            with pytest.raises(httpx.TransportError):
                await client.get(f"http://127.0.0.1:{port}/")
            await client.aclose()


@pytest.mark.parametrize("library", LIBRARIES)
async def test_an_idle_connection_with_stray_bytes_is_not_used_again(library: str) -> None:
    connections = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        await read_head(reader)
        writer.write(OK)
        await writer.drain()
        await asyncio.sleep(0.02)
        writer.write(b"garbage after the answer")
        await writer.drain()
        await asyncio.sleep(1)
        writer.close()

    async with serving(handler) as port:
        client = client_of(library)
        for _ in range(2):
            answer = await client.get(f"http://127.0.0.1:{port}/")
            assert answer.content == b"ok"
            await asyncio.sleep(0.1)  # the stray bytes arrive
        await client.aclose()
    assert connections == 2


@pytest.mark.parametrize("library", LIBRARIES)
async def test_an_upstream_sending_faster_than_it_is_read_is_held_back(library: str) -> None:
    """At most `HIGH_WATER` bytes (plus one socket read) wait in the proxy's memory."""
    size = 16 * 1024 * 1024

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_head(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % size)
        for _ in range(size // 65536):
            writer.write(b"y" * 65536)
            await writer.drain()
        writer.close()

    core = importlib.import_module(CORE[library])
    async with serving(handler) as port:
        stream = await AsyncioBackend(core).connect_tcp("127.0.0.1", port, timeout=5)
        await stream.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", timeout=5)
        await asyncio.sleep(0.5)  # the server sends all it can meanwhile
        held = len(stream._connection.received)
        assert held <= HIGH_WATER + 256 * 1024
        assert stream._connection.paused_reading
        total = 0
        while True:
            chunk = await stream.read(65536, timeout=5)
            if not chunk:
                break
            total += len(chunk)
        await stream.aclose()
    head = len(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % size)
    assert total == head + size


@pytest.mark.parametrize("library", LIBRARIES)
async def test_an_upstream_that_reads_nothing_is_a_write_timeout(library: str) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.transport.pause_reading()
        await asyncio.sleep(5)

    core = importlib.import_module(CORE[library])
    async with serving(handler) as port:
        stream = await AsyncioBackend(core).connect_tcp("127.0.0.1", port, timeout=5)
        with pytest.raises(core.WriteTimeout):  # more than the kernel's buffers take
            await stream.write(b"z" * 64 * 1024 * 1024, timeout=0.2)
        await stream.aclose()
        with pytest.raises(core.WriteError):
            await stream.write(b"more", timeout=0.2)


@pytest.mark.parametrize("library", LIBRARIES)
async def test_a_closed_connection_has_closed_its_socket(library: str) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(1)

    core = importlib.import_module(CORE[library])
    async with serving(handler) as port:
        stream = await AsyncioBackend(core).connect_tcp("127.0.0.1", port, timeout=5)
        sock = stream.get_extra_info("socket")
        assert sock.fileno() >= 0
        await stream.aclose()
        assert sock.fileno() == -1  # not left for a loop that may stop next


@pytest.mark.parametrize("library", LIBRARIES)
async def test_a_cancelled_read_leaves_no_waiter(library: str) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1)
        writer.write(b"late")
        await writer.drain()
        await asyncio.sleep(1)

    core = importlib.import_module(CORE[library])
    async with serving(handler) as port:
        stream = await AsyncioBackend(core).connect_tcp("127.0.0.1", port, timeout=5)
        waiting = asyncio.ensure_future(stream.read(10, timeout=5))
        await asyncio.sleep(0.05)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert stream._connection.reading is None
        await stream.write(b"!", timeout=5)
        assert await stream.read(10, timeout=5) == b"late"
        await stream.aclose()


@pytest.fixture(scope="module")
def authority() -> Any:
    """A throwaway certificate authority (the dev extra's ``trustme``; the floor check has
    none, and skips the TLS test)."""
    trustme = pytest.importorskip("trustme")
    return trustme.CA()


@pytest.mark.parametrize("library", LIBRARIES)
async def test_tls_upstreams_are_verified(library: str, authority: Any) -> None:
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("localhost").configure_cert(server)
    trusted = ssl.create_default_context()
    authority.configure_trust(trusted)

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await read_head(reader)
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        writer.write(OK)
        await writer.drain()
        await asyncio.sleep(1)  # kept open: the client's connection still has its TLS object

    httpx = importlib.import_module(library)
    async with serving(handler, tls=server) as port:
        client = client_of(library, verify=trusted)
        answer = await client.get(f"https://localhost:{port}/")
        assert answer.content == b"ok"
        assert answer.extensions["network_stream"].get_extra_info("ssl_object") is not None
        await client.aclose()
        stranger = client_of(library)  # the system's authorities: not this one
        with pytest.raises(httpx.ConnectError):
            await stranger.get(f"https://localhost:{port}/")
        await stranger.aclose()
