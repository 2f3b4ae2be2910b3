"""What the proxy refuses before routing: ambiguous message framing and protocol upgrades.

- A request with both ``Transfer-Encoding`` and ``Content-Length`` is refused with 400 (RFC 9112
  §6.1: such a message "ought to be handled as an error"; a proxy that forwards it invites
  request smuggling). uvicorn's h11 parser lets it through, taking the chunked body.
- A WebSocket upgrade is refused with a JSON 426 Upgrade Required (``code:
  "websocket_not_supported"``): the proxy serves HTTP only, and 426 is the refusal on which a
  client that tries the Responses WebSocket first (Codex, ``supports_websockets``) falls back
  to HTTP for the session; it gives up on a 400. Under uvicorn with a WebSocket library the
  refusal is sent as the handshake's HTTP response (the ASGI ``websocket.http.response``
  extension; without it, the handshake is closed, which uvicorn answers 403); with none, the
  upgrade request arrives as plain HTTP and is refused before it could be forwarded.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

__all__ = ["WEBSOCKET_REFUSED", "framing_problem", "is_websocket_upgrade", "refuse_websocket"]

WEBSOCKET_REFUSED = "this proxy serves HTTP only: WebSocket upgrades are not supported"


def framing_problem(headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    """Why a request's framing headers are refused, or ``None``."""
    names = {name.lower() for name, _ in headers}
    if b"transfer-encoding" in names and b"content-length" in names:
        return "the request has both Transfer-Encoding and Content-Length (RFC 9112 section 6.1)"
    return None


def is_websocket_upgrade(headers: Iterable[tuple[bytes, bytes]]) -> bool:
    """Whether an HTTP request asks to upgrade to a WebSocket."""
    return any(
        name.lower() == b"upgrade" and b"websocket" in value.lower() for name, value in headers
    )


async def refuse_websocket(
    scope: MutableMapping[str, Any],
    receive: Callable[[], Awaitable[MutableMapping[str, Any]]],
    send: Callable[[MutableMapping[str, Any]], Awaitable[None]],
) -> None:
    """Answer a ``websocket`` scope's handshake with a JSON 426 (or close it, when the server
    cannot send an HTTP response to a handshake)."""
    message = await receive()
    if message.get("type") != "websocket.connect":
        return
    if "websocket.http.response" not in (scope.get("extensions") or {}):
        await send({"type": "websocket.close", "code": 1008})
        return
    error = {
        "message": WEBSOCKET_REFUSED,
        "type": "invalid_request_error",
        "param": None,
        "code": "websocket_not_supported",
    }
    body = json.dumps({"error": error}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "websocket.http.response.start", "status": 426, "headers": headers})
    await send({"type": "websocket.http.response.body", "body": body})
