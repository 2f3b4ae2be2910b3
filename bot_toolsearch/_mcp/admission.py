"""Who may use the door over HTTP: holders of its keys, and ``[[proxy.clients]]`` with their
own tool sets.

`BearerKeys` is ASGI middleware in front of everything else: a request must carry
``Authorization: Bearer <key>`` with one of ``--api-key``'s keys (or the ``[proxy] keys``
file's), or the key of one of the config's ``[[proxy.clients]]`` (matched by its SHA-256, each
entry in constant time), else it gets 401 before anything reads it. A client's policy goes
with the request (`SCOPE_CLIENT`), so the door lists, finds and runs only what that client's
``allow``/``deny`` permit, and its ``POST`` requests in flight are bounded by its
``max_in_flight`` (429 past it). Clients are read from each request's settings snapshot: an edit
of a hot-reloaded ``config.toml`` holds from the next request. Keys are never logged; a client
is named by its ``name``.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from bot_toolsearch._config.settings import ProxyClient
from bot_toolsearch._services.client_policy import ClientPolicy, match

from .sessions import SCOPE_CLIENT, header, refuse

__all__ = ["SCOPE_CLIENT", "BearerKeys", "policy_of"]

logger = logging.getLogger("bot_toolsearch.mcp_door")


def policy_of(scope: Mapping[str, Any] | None) -> ClientPolicy | None:
    """The client policy a request was admitted with (``None``: the settings' own)."""
    found = scope.get(SCOPE_CLIENT) if scope is not None else None
    return found if isinstance(found, ClientPolicy) else None


class BearerKeys:
    """ASGI middleware: a request without one of the keys, or a client's, gets 401.

    Args:
        app: the door's app.
        keys: the door's own keys (one tool set: the settings').
        clients: the current ``[[proxy.clients]]`` (read per request).

    With neither keys nor clients, every request is admitted (a loopback door without keys).
    """

    def __init__(
        self,
        app: Any,
        keys: Iterable[str],
        clients: Callable[[], Sequence[ProxyClient]] = lambda: (),
    ) -> None:
        self.app = app
        self._keys = [key.encode("utf-8") for key in keys]
        self._clients = clients
        self.in_flight: dict[str, int] = {}
        """Client name -> its ``POST`` requests being answered (clients with a bound)."""

    def allows(self, header: str | None) -> bool:
        """Whether an ``Authorization`` header value carries one of the door's own keys."""
        token = _bearer(header)
        given = (token or "").encode("latin-1", "replace")
        found = False
        for key in self._keys:
            found |= hmac.compare_digest(key, given)
        return found and token is not None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        clients = self._clients()
        authorization = header(scope, b"authorization")
        client = match(clients, _bearer(authorization)) if clients else None
        if client is not None:
            await self._client(ClientPolicy.of(client), scope, receive, send)
            return
        if self.allows(authorization) or not (self._keys or clients):
            await self.app({k: v for k, v in scope.items() if k != SCOPE_CLIENT}, receive, send)
            return
        await refuse(
            send,
            401,
            "Unauthorized: a valid 'Authorization: Bearer' key is needed",
            [(b"www-authenticate", b'Bearer realm="bot-toolsearch mcp"')],
        )

    async def _client(self, policy: ClientPolicy, scope: Any, receive: Any, send: Any) -> None:
        """A named client's request, within its ``max_in_flight``."""
        scope = {**scope, SCOPE_CLIENT: policy}
        bound = policy.max_in_flight
        if bound is None or scope.get("method") != "POST":  # a GET stream stays open
            await self.app(scope, receive, send)
            return
        count = self.in_flight.get(policy.name, 0)
        if count >= bound:
            logger.warning("mcp: client %s: %d requests in flight; refused", policy.name, count)
            message = f"Too many requests in flight for this client (at most {bound})"
            await refuse(send, 429, message, [(b"retry-after", b"1")])
            return
        self.in_flight[policy.name] = count + 1
        try:
            await self.app(scope, receive, send)
        finally:
            left = self.in_flight.get(policy.name, 1) - 1
            if left > 0:
                self.in_flight[policy.name] = left
            else:
                self.in_flight.pop(policy.name, None)


def _bearer(header: str | None) -> str | None:
    """The token of a ``Bearer`` ``Authorization`` header value (``None``: another scheme)."""
    scheme, _, token = (header or "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None
