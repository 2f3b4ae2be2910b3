"""A raw-socket upstream on 127.0.0.1 for the wrapper's fault tests, usable by sync and async
clients alike (it serves from its own thread).

Each request gets the next canned reply, byte for byte: a JSON body with a content length, or
a "stream" of raw bytes the server writes and then closes the connection on, whatever they
are (a cut SSE stream, HTML, garbage), optionally holding back its end until the test opens a
gate. The real ``openai`` (or ``anthropic``) SDK sends the requests.
"""

from __future__ import annotations

import json
import socket
import threading
from types import TracebackType
from typing import Self


class RawUpstream:
    """Answers request N with canned reply N; records the request bodies."""

    def __init__(self) -> None:
        self._replies: list[tuple[bytes, threading.Event | None, bytes]] = []
        self.requests: list[bytes] = []
        self._lock = threading.Lock()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._sock.getsockname()[:2]
        return f"http://{host}:{port}/v1"

    def json(self, body: object, kind: str = "application/json", *, headers: bytes = b"") -> None:
        """Queue a whole reply: ``body`` (bytes as they are, anything else as JSON), after
        the extra header lines ``headers`` (each ending ``\\r\\n``)."""
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        head = b"HTTP/1.1 200 OK\r\ncontent-type: " + kind.encode() + b"\r\n" + headers
        head += b"content-length: " + str(len(raw)).encode() + b"\r\nconnection: close\r\n\r\n"
        self._replies.append((head + raw, None, b""))

    def stream(
        self,
        raw: bytes,
        kind: str = "text/event-stream",
        *,
        gate: threading.Event | None = None,
        then: bytes = b"",
    ) -> None:
        """Queue a streamed reply: ``raw`` as it is, then, once ``gate`` is set, ``then``; the
        connection is closed after (or, when the gate stays shut for 10 s, without) it."""
        head = b"HTTP/1.1 200 OK\r\ncontent-type: " + kind.encode() + b"\r\n"
        self._replies.append((head + b"connection: close\r\n\r\n" + raw, gate, then))

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join(5)
        self._sock.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(5)
                self._answer(conn)

    def _answer(self, conn: socket.socket) -> None:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        while len(body) < length:
            chunk = conn.recv(65536)
            if not chunk:
                return
            body += chunk
        with self._lock:
            self.requests.append(body)
            reply = self._replies.pop(0) if self._replies else None
        if reply is None:
            reply = (b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\n\r\n", None, b"")
        raw, gate, then = reply
        conn.sendall(raw)
        if gate is not None and gate.wait(10):
            conn.sendall(then)
        conn.shutdown(socket.SHUT_WR)
