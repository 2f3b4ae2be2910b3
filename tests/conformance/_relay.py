"""A recording TCP relay on 127.0.0.1: what a client really sent to a door, byte for byte.

A client that is not Python (a native binary) cannot be inspected in the process; put the relay
between it and the door (``serve`` in a subprocess) and read its HTTP requests afterwards,
parsed by ``h11`` from the bytes each connection carried towards the door. The replies pass
through untouched and unrecorded.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import h11

_CHUNK = 65536
_ACCEPT_POLL = 0.2
"""Seconds between the accept loop's looks at the stop flag."""


@dataclass(frozen=True)
class SentRequest:
    """One HTTP request a client sent through the relay."""

    method: str
    target: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Relay:
    """The relay's port, and the bytes each connection carried towards the door."""

    port: int
    _sent: list[bytearray] = field(default_factory=list)
    _sockets: list[socket.socket] = field(default_factory=list)
    _pumps: list[threading.Thread] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def requests(self) -> list[SentRequest]:
        """Every complete request, connection by connection, in the order each carried them."""
        with self._lock:
            streams = [bytes(sent) for sent in self._sent]
        return [request for stream in streams for request in _parse(stream)]


def _parse(stream: bytes) -> Iterator[SentRequest]:
    conn = h11.Connection(h11.SERVER)
    conn.receive_data(stream)
    head: h11.Request | None = None
    body = bytearray()
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA or event is h11.PAUSED or isinstance(event, h11.ConnectionClosed):
            return
        if isinstance(event, h11.Request):
            head, body = event, bytearray()
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage) and head is not None:
            yield SentRequest(
                head.method.decode(),
                head.target.decode(),
                {k.decode(): v.decode("latin-1") for k, v in head.headers},
                bytes(body),
            )
            # h11 moves on to the next request once this one has had a reply: a stand-in.
            conn.send(h11.Response(status_code=204, headers=[]))
            conn.send(h11.EndOfMessage())
            conn.start_next_cycle()


def _pump(
    source: socket.socket, sink: socket.socket, record: bytearray | None, lock: threading.Lock
) -> None:
    try:
        while chunk := source.recv(_CHUNK):
            if record is not None:
                with lock:
                    record += chunk
            sink.sendall(chunk)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


def _serve(listener: socket.socket, port: int, relay: Relay, stop: threading.Event) -> None:
    listener.settimeout(_ACCEPT_POLL)
    while not stop.is_set():
        try:
            client, _ = listener.accept()
        except TimeoutError:
            continue
        client.settimeout(None)
        door = socket.create_connection(("127.0.0.1", port))
        sent = bytearray()
        pumps = [
            threading.Thread(target=_pump, args=(*args, relay._lock), daemon=True)
            for args in ((client, door, sent), (door, client, None))
        ]
        with relay._lock:
            relay._sent.append(sent)
            relay._sockets += (client, door)
            relay._pumps += pumps
        for pump in pumps:
            pump.start()


@contextlib.contextmanager
def recording_relay(port: int) -> Iterator[Relay]:
    """A relay on a free port of 127.0.0.1 to ``127.0.0.1:<port>``, stopped on exit with every
    connection it still holds."""
    listener = socket.create_server(("127.0.0.1", 0))
    relay = Relay(listener.getsockname()[1])
    stop = threading.Event()
    thread = threading.Thread(target=_serve, args=(listener, port, relay, stop), daemon=True)
    thread.start()
    try:
        yield relay
    finally:
        stop.set()
        thread.join(10)
        listener.close()
        for sock in relay._sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        for pump in relay._pumps:
            pump.join(10)
