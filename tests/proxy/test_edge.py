"""Framing and upgrades the proxy refuses before routing, over raw sockets (issue 27).

Before: a request with both ``Transfer-Encoding: chunked`` and ``Content-Length`` was
forwarded (uvicorn's h11 takes the chunked body); a WebSocket upgrade got a plain-text 500
(with a WebSocket library) or was forwarded to the upstream as a plain GET (without one).
"""

from __future__ import annotations

import socket

import pytest

from bot_toolsearch._proxy.app import ProxyApp
from tests.proxy._raw import Reply, Upstream, answer, parse, request, served

UPGRADE = (
    b"GET /v1/realtime?model=m HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
    b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
    b"Sec-WebSocket-Version: 13\r\n\r\n"
)


def _raw(port: int, data: bytes) -> Reply:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(data)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
            head, _, body = received.partition(b"\r\n\r\n")
            length = [
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            ]
            if length and len(body) >= length[0]:
                break
    return parse(received)


def _json_error(reply: Reply, code: str, status: int = 400) -> None:
    assert reply.status == status, reply
    error = reply.json()["error"]
    assert error["code"] == code
    assert error["type"] == "invalid_request_error"


@pytest.mark.parametrize("ws", ["none", "websockets-sansio"])
def test_a_websocket_upgrade_is_a_json_426_and_reaches_no_upstream(ws: str) -> None:
    # 426 Upgrade Required, not 400: Codex (supports_websockets) falls back to HTTP on a 426
    # and gives up on any other refusal (tests/conformance/test_node_codex.py).
    upstream = Upstream(answer({"ok": True}))
    with served(ProxyApp(upstream.url), ws=ws) as port:
        reply = _raw(port, UPGRADE)
    _json_error(reply, "websocket_not_supported", 426)
    assert upstream.received == []
    upstream.close()


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/embeddings"])
def test_both_transfer_encoding_and_content_length_is_a_400(path: str) -> None:
    upstream = Upstream(answer({"ok": True}))
    body = b'{"model":"m"}'
    head = (
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nTransfer-Encoding: chunked"
    ).encode()
    with served(ProxyApp(upstream.url)) as port:
        reply = request(port, head, b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
        plain = request(
            port,
            f"POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}".encode(),
            body,
        )
    _json_error(reply, "invalid_framing")
    assert plain.status == 200  # one framing header is fine
    assert len(upstream.received) == 1
    upstream.close()


def test_after_a_transfer_encoding_and_content_length_400_the_connection_is_closed() -> None:
    """Issue 41, item 8: the 400 left the connection open, and the bytes after the chunked
    body were served as the next request (here a smuggled ``GET /v1/models``)."""
    upstream = Upstream(answer({"ok": True}))
    body = b'{"model":"m"}'
    smuggled = b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"
    data = (
        b"POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n%s"
        % (len(body), len(body), body, smuggled)
    )
    with (
        served(ProxyApp(upstream.url)) as port,
        socket.create_connection(("127.0.0.1", port), timeout=10) as sock,
    ):
        sock.sendall(data)
        received = b""
        while chunk := sock.recv(65536):  # until the proxy closes (else a timeout fails)
            received += chunk
    assert received.count(b"HTTP/1.1 ") == 1  # one answer, then closed
    _json_error(parse(received), "invalid_framing")
    assert parse(received).headers["connection"] == "close"
    assert upstream.received == []
    upstream.close()
