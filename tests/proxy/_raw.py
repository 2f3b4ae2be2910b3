"""Raw sockets on 127.0.0.1 for the proxy's edge cases: a client that writes bytes, upstreams
that record, answer, stream, cut, reset, stall or hang (one script of answers per request),
and the proxy served by uvicorn in a thread."""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import uvicorn

from bot_toolsearch._proxy.app import ProxyApp
from bot_toolsearch._scripted.server import _bind, _serve, _ThreadServer


@contextmanager
def served(
    app: ProxyApp,
    *,
    access_log: bool = False,
    ws: str = "none",
    http: str | type[asyncio.Protocol] = "h11",
) -> Iterator[int]:
    """Serve ``app`` on 127.0.0.1 (``ws``: uvicorn's WebSocket implementation, ``http``: its
    HTTP protocol, a name or a class); yields the port."""
    sock = _bind(None)
    port: int = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        loop="asyncio",
        http=http,
        ws=ws,  # type: ignore[arg-type]
        lifespan="on",
        log_config=None,
        access_log=access_log,
    )
    running = _ThreadServer(config)
    thread = threading.Thread(target=_serve, args=(running, sock), daemon=True)
    thread.start()
    assert running.ready.wait(30)
    try:
        yield port
    finally:
        running.request_exit()
        thread.join(30)


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> dict[str, object]:
        assert self.headers.get("content-type", "").startswith("application/json"), self
        loaded = json.loads(self.body)
        assert isinstance(loaded, dict)
        return loaded


def request(port: int, head: bytes, body: bytes = b"", *, timeout: float = 30) -> Reply:
    """Send ``head`` (request line and headers, no blank line) and ``body``; read the reply."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(head + b"\r\nConnection: close\r\n\r\n" + body)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    return parse(data)


def parse(data: bytes) -> Reply:
    raw_head, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = raw_head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding") == "chunked":
        body = _unchunk(body)
    return Reply(int(status_line.split()[1]), headers, body)


def _unchunk(data: bytes) -> bytes:
    out = b""
    while data:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line, 16)
        if not size:
            break
        out, data = out + data[:size], data[size + 2 :]
    return out


def post(port: int, path: str, payload: object, *, extra: str = "") -> Reply:
    """A JSON POST to the proxy."""
    body = json.dumps(payload).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}{extra}"
    )
    return request(port, head.encode(), body)


Handler = Callable[[socket.socket, bytes], None]


@dataclass
class Upstream:
    """A scripted upstream: records each request (head and body) and runs ``handler`` on it."""

    handler: Handler
    host: str = "127.0.0.1"
    received: list[bytes] = field(default_factory=list)
    connected: threading.Event = field(default_factory=threading.Event)
    closed: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self._sock = socket.socket()
        self._sock.bind((self.host, 0))
        self._sock.listen(16)
        self.port: int = self._sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def paths(self) -> list[str]:
        return [r.split(b" ")[1].decode() for r in self.received]

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        self.connected.set()
        with conn:
            data = b""
            try:
                while b"\r\n\r\n" not in data and (chunk := conn.recv(65536)):
                    data += chunk
                head, _, body = data.partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                while len(body) < length and (chunk := conn.recv(65536)):
                    body += chunk
                if data:
                    self.received.append(head + b"\r\n\r\n" + body)
                    self.handler(conn, body)
            except OSError:
                pass
        self.closed.set()

    def close(self) -> None:
        self._sock.close()


def answer(payload: object, *, content_type: str = "application/json") -> Handler:
    """A handler that answers 200 with ``payload`` (bytes as they are, else JSON)."""
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()

    def handle(conn: socket.socket, _: bytes) -> None:
        head = (
            f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        conn.sendall(head.encode() + body)

    return handle


def hang(conn: socket.socket, _: bytes) -> None:
    """A handler that never answers and returns when the proxy closes the connection."""
    while conn.recv(65536):
        pass


def sse(events: list[bytes], *, then: Callable[[socket.socket], None] | None = None) -> Handler:
    """A handler that streams ``events`` as chunked SSE, then runs ``then`` (default: ends the
    stream properly); a ``then`` that returns without the last chunk cuts the stream."""

    def handle(conn: socket.socket, _: bytes) -> None:
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        )
        for event in events:
            conn.sendall(b"%x\r\n%s\r\n" % (len(event), event))
        if then is None:
            conn.sendall(b"0\r\n\r\n")
        else:
            then(conn)

    return handle


def drip(stop: threading.Event, *, every: float = 1.0) -> Handler:
    """A handler that sends 200 headers announcing a large JSON body, then one byte every
    ``every`` seconds until ``stop`` is set or the client leaves (a per-read timeout never
    fires)."""

    def handle(conn: socket.socket, _: bytes) -> None:
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{"
        )
        while not stop.wait(every):
            conn.sendall(b" ")

    return handle


def status(code: int, payload: object, headers: str = "") -> Handler:
    """A handler that answers ``code`` with ``payload`` as JSON and the extra ``headers``
    lines (each ending in CRLF)."""
    body = json.dumps(payload).encode()

    def handle(conn: socket.socket, _: bytes) -> None:
        conn.sendall(
            f"HTTP/1.1 {code} X\r\nContent-Type: application/json\r\n{headers}"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
            + body
        )

    return handle


def reset(conn: socket.socket, _: bytes) -> None:
    """A handler that resets the connection (RST, no answer)."""
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def stall(release: threading.Event) -> Handler:
    """A handler that answers nothing until the client leaves or ``release`` is set."""

    def handle(conn: socket.socket, _: bytes) -> None:
        conn.settimeout(0.1)
        while not release.is_set():
            try:
                if not conn.recv(65536):
                    return
            except TimeoutError:
                continue

    return handle


class Script:
    """An upstream whose answers come in order, one handler per request, with when each
    request came (``times``)."""

    def __init__(self, *handlers: Handler) -> None:
        self._handlers = list(handlers)
        self.times: list[float] = []
        self.upstream = Upstream(self._next)

    def _next(self, conn: socket.socket, body: bytes) -> None:
        self.times.append(time.monotonic())
        self._handlers.pop(0)(conn, body)

    @property
    def retry_counts(self) -> list[str]:
        """The ``x-stainless-retry-count`` header of each request."""
        counts = []
        for raw in self.upstream.received:
            head = raw.partition(b"\r\n\r\n")[0].decode("latin-1").lower()
            line = next(h for h in head.split("\r\n") if h.startswith("x-stainless-retry-count"))
            counts.append(line.partition(":")[2].strip())
        return counts
