"""A request's head within a deadline: uvicorn's h11 protocol with a timer of its own.

uvicorn closes an idle kept-alive connection after a few seconds, but a byte now and then
restarts that timer, and a new connection that sends nothing has none: a client could hold a
connection for ever with a head it never finishes. Here a head must be whole within
``read_timeout`` seconds of the connection (or of the previous response on a kept-alive one;
``serve --read-timeout``): else a started head is answered 408 and the connection closed (a
connection that sent nothing is closed). ``serve`` runs it as uvicorn's ``http`` protocol, so
the proxy always speaks HTTP/1.1 through h11 (`bot_toolsearch._proxy.edge` refuses what h11
lets through).
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import h11
from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

from .reading import DEFAULT_READ_TIMEOUT, ENV_READ_TIMEOUT

__all__ = ["HeadDeadline", "request_timeout"]


def request_timeout(seconds: float) -> bytes:
    """The whole 408 answer to a head that did not arrive in time."""
    error = {
        "message": f"the request head did not arrive within {seconds:g} s (serve --read-timeout)",
        "type": "invalid_request_error",
        "param": None,
        "code": "request_timeout",
    }
    body = json.dumps({"error": error}).encode()
    return (
        b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body)
    )


class HeadDeadline(H11Protocol):
    """uvicorn's h11 protocol, where each request's head has ``read_timeout`` seconds to arrive
    (the worker's ``BOT_TOOLSEARCH_READ_TIMEOUT``)."""

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self._head_timer: asyncio.TimerHandle | None = None
        self._head_timeout = float(os.environ.get(ENV_READ_TIMEOUT) or DEFAULT_READ_TIMEOUT)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        cycle = self.cycle
        super().handle_events()
        if self.cycle is not cycle:  # a head arrived: its request is served
            self._disarm()

    def handle_websocket_upgrade(self, event: h11.Request) -> None:
        self._disarm()
        super().handle_websocket_upgrade(event)

    def on_response_complete(self) -> None:
        self._arm()  # before a pipelined head is handled (which disarms it again)
        super().on_response_complete()

    def _arm(self) -> None:
        self._disarm()
        self._head_timer = self.loop.call_later(self._head_timeout, self._expired)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _expired(self) -> None:
        self._head_timer = None
        if self.transport.is_closing():
            return
        if self.cycle is not None and not self.cycle.response_complete:
            return  # a request is being served: its body has the app's deadline
        if self.conn.trailing_data[0]:
            self.transport.write(request_timeout(self._head_timeout))
        self.transport.close()
