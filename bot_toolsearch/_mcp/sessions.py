"""The door's streamable-HTTP sessions: bounded, and, with shared state, served by any process.

`Sessions` is ASGI middleware over the ``mcp`` SDK's streamable-HTTP app. It learns a session's
id from the answer that opens it and counts each request of it. A request that would open a
session while `MAX_SESSIONS` are open ends the least recently used one that holds no loads, as
its client's ``DELETE`` would (its client gets 404 next and opens a new one, as the spec says);
a session holding loads is never ended for another. A session's ``DELETE`` (or `IDLE_SECONDS`
without a request, when the SDK ends it) makes the door forget its state. A session is its
opening ``[[proxy.clients]]`` client's: another client's request of it gets 404, as if it did
not exist (as the SDK answers for its own credentials).

The SDK keeps its sessions in its process: an id it did not make answers 404. With
``[proxy] state`` (`bot_toolsearch._mcp.shared`), the opening request's ``initialize`` is kept
in Redis with the session, and a process that gets a request of a session it does not know
looks it up there: a session Redis holds is opened in this process's SDK under an id of its
own (the kept ``initialize`` and ``notifications/initialized``, sent to the SDK as requests of
this process), and the request goes to it, with the ids swapped both ways, so the client only
ever sees the one id. Every request of a session restarts its expiry in Redis; one Redis does
not know answers 404, and a Redis that is down answers 503 (the door stays up). Here a process's
SDK session is only a cache of the shared one, so making room may end any of them; the bound
that keeps loads is the one over every process, in Redis.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any

from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

from bot_toolsearch._services.shared_state import SharedStateDown

from .door import IDLE_SECONDS, MAX_CLIENTS, McpDoor
from .shared import MAX_INIT_BYTES, SharedSession, SharedSessions, valid_id

__all__ = [
    "MAX_SESSIONS",
    "SCOPE_CLIENT",
    "SCOPE_SESSION",
    "SCOPE_SHARED",
    "Sessions",
    "header",
    "refuse",
]

logger = logging.getLogger("bot_toolsearch.mcp_door")

MAX_SESSIONS = MAX_CLIENTS
"""Streamable-HTTP sessions open at most (the SDK's default is 10,000 for 30 minutes). To
open another, `Sessions` ends the least recently used session that holds no loads; when every
one holds loads, the SDK answers 503 until one ends."""
MARGIN = 64
"""Sessions the SDK may open beyond `MAX_SESSIONS` while their opening requests are still
being answered (`Sessions` counts a session once its id is known)."""
SCOPE_SESSION = "bot_toolsearch.mcp_session"
"""The ASGI scope key of the session id the client sees (the SDK's own may differ)."""
SCOPE_SHARED = "bot_toolsearch.mcp_shared"
"""The ASGI scope key of the `SharedSession` Redis held when the request came."""
SCOPE_CLIENT = "bot_toolsearch.mcp_client"
"""The ASGI scope key of the `ClientPolicy` of the request's ``[[proxy.clients]]`` client
(`bot_toolsearch._mcp.admission`)."""
SESSION_HEADER = "mcp-session-id"
_VERSION_HEADER = b"mcp-protocol-version"
_STALE = 60.0
"""Seconds before `IDLE_SECONDS` at which this process's SDK session of a shared one counts
as ended (the SDK's own idle clock may run out first): it is opened again instead."""
_INTERNAL_SECONDS = 10.0
"""Longest a request of the door's own to its SDK (opening or ending a session) may take."""
SHARED_DOWN = "The door's shared session state is unavailable; nothing was run. Try again."


def header(scope: Mapping[str, Any], name: bytes) -> str | None:
    """The value of the header ``name`` (lower case) in an ASGI scope or response start."""
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


async def refuse(
    send: Any, status: int, message: str, headers: Iterable[tuple[bytes, bytes]] = ()
) -> None:
    """Answer a request with a JSON-RPC error (no id) and ``status``, without reading it."""
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}
    body = json.dumps(error).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class Sessions:
    """ASGI middleware over the SDK's streamable-HTTP app: which sessions are open, room for a
    new one, and (with ``shared``) any process serving any session.

    Args:
        app: the SDK's streamable-HTTP app.
        door: the door whose sessions' states go with the sessions.
        limit: sessions open at most (with ``shared``: in this process's SDK).
        shared: the sessions on shared state (``[proxy] state``), else none.
    """

    def __init__(
        self,
        app: Any,
        door: McpDoor,
        limit: int = MAX_SESSIONS,
        shared: SharedSessions | None = None,
    ) -> None:
        self.app = app
        self.door = door
        self.limit = limit
        self.shared = shared
        self.open: OrderedDict[str, float] = OrderedDict()
        """Session id (as the client sees it) -> when it last sent a request here
        (`time.monotonic`)."""
        self.local: dict[str, str] = {}
        """With ``shared``: session id -> the id of this process's SDK session of it."""
        self.owners: dict[str, str] = {}
        """Session id -> the ``[[proxy.clients]]`` client that opened it (``""``: none)."""
        self._opening: dict[str, tuple[asyncio.Lock, list[int]]] = {}
        """Session id -> its lock while requests of it wait to open it here, and how many."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        method = scope.get("method")
        session = header(scope, SESSION_HEADER.encode())
        version = header(scope, _VERSION_HEADER)
        handshake = version is None or version in HANDSHAKE_PROTOCOL_VERSIONS
        opening = method == "POST" and session is None and handshake
        if self.shared is not None and handshake:
            if opening:
                await self._open_shared(self.shared, scope, receive, send)
            elif session is not None:
                await self._serve_shared(self.shared, session, scope, receive, send)
            else:
                await self.app(scope, receive, send)
            return
        if opening and not await self._make_room(scope):
            logger.warning("refusing a new session: %d sessions hold loads", len(self.open))
            await refuse(send, 503, "Too many open sessions: every one holds loads")
            return
        if session is not None and self.owners.get(session, _owner(scope)) != _owner(scope):
            await refuse(send, 404, "Session not found")  # another client's: as the SDK would
            return
        if session is not None and session in self.open:
            self.open[session] = time.monotonic()
            self.open.move_to_end(session)
        status = 0
        opened: str | None = None

        async def watch(message: Any) -> None:
            nonlocal status, opened
            if message.get("type") == "http.response.start":
                status = int(message.get("status", 0))
                opened = header(message, SESSION_HEADER.encode())
            await send(message)

        await self.app(scope, receive, watch)
        if opening and opened and status < 400:
            self.open[opened] = time.monotonic()
            self.owners[opened] = _owner(scope)
        if method == "DELETE" and session and (200 <= status < 300 or status == 404):
            self._ended(session)

    def _ended(self, session: str) -> None:
        self.open.pop(session, None)
        self.local.pop(session, None)
        self.owners.pop(session, None)
        self.door.forget(f"http:{session}")

    async def _make_room(self, scope: Any) -> bool:
        now = time.monotonic()
        for session, used in list(self.open.items()):  # the SDK ended these already
            if now - used < IDLE_SECONDS:
                break
            self._ended(session)
        while len(self.open) >= self.limit:
            victim = next(
                (
                    s
                    for s in self.open
                    if self.shared is not None or not self.door.has_state(f"http:{s}")
                ),
                None,
            )
            if victim is None:
                return False  # every open session holds loads
            local = self.local.get(victim, victim)
            self._ended(victim)
            await self._end(scope, local)
        return True

    async def _end(self, scope: Any, local: str) -> None:
        """End this process's SDK session ``local`` as its client's ``DELETE`` would."""
        headers = _kept_headers(scope)
        headers.append((SESSION_HEADER.encode(), local.encode("latin-1")))
        try:
            await self._internal(scope, "DELETE", headers)
        except Exception as exc:  # the session is gone from the count either way
            logger.debug("ending session %s failed: %s", local[:16], exc)

    async def _internal(
        self, scope: Any, method: str, headers: list[tuple[bytes, bytes]], body: bytes = b""
    ) -> tuple[int, str | None]:
        """A request of the door's own to the SDK: its status and its ``mcp-session-id``."""
        request = {
            **{k: v for k, v in scope.items() if k not in (SCOPE_SESSION, SCOPE_SHARED)},
            "method": method,
            "headers": headers,
            "query_string": b"",
        }
        sent = False
        done = asyncio.Event()
        status = 0
        opened: str | None = None

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            await done.wait()  # as a client that reads the whole answer, then leaves
            return {"type": "http.disconnect"}

        async def keep(message: Any) -> None:
            nonlocal status, opened
            if message.get("type") == "http.response.start":
                status = int(message.get("status", 0))
                opened = header(message, SESSION_HEADER.encode())
            elif message.get("type") == "http.response.body" and not message.get("more_body"):
                done.set()

        try:
            async with asyncio.timeout(_INTERNAL_SECONDS):
                await self.app(request, receive, keep)
        finally:
            done.set()
        return status, opened

    # -- with shared state ---------------------------------------------------------------------

    async def _open_shared(
        self, shared: SharedSessions, scope: Any, receive: Any, send: Any
    ) -> None:
        """A request that opens a session: served by the SDK, then kept in Redis (with its
        ``initialize``) before the client learns the id."""
        await self._make_room(scope)  # this process's SDK sessions: a cache, any may go
        body = bytearray()
        whole = True

        async def tee() -> Any:
            nonlocal whole
            message = await receive()
            if message.get("type") == "http.request":
                chunk = message.get("body", b"")
                if len(body) + len(chunk) <= MAX_INIT_BYTES:
                    body.extend(chunk)
                else:
                    whole = False
            return message

        opened: str | None = None
        refused = False

        async def watch(message: Any) -> None:
            nonlocal opened, refused
            if refused:
                return
            if message.get("type") == "http.response.start":
                status = int(message.get("status", 0))
                opened = header(message, SESSION_HEADER.encode())
                if opened and status < 400:
                    init = _init(bytes(body)) if whole else {}
                    why = await self._keep(shared, opened, init, _owner(scope))
                    if why is not None:
                        refused = True
                        await refuse(send, 503, why)
                        return
                    # Known here before the client has the id: its next request finds it.
                    self.open[opened] = time.monotonic()
                    self.local[opened] = opened
            await send(message)

        await self.app(scope, tee, watch)
        if opened is not None and refused:
            await self._end(scope, opened)

    async def _keep(
        self, shared: SharedSessions, session: str, init: Mapping[str, Any], owner: str
    ) -> str | None:
        """Keep a new session in Redis; else why not (the answer's message)."""
        try:
            if await shared.open(session, init, owner):
                return None
        except SharedStateDown as exc:
            logger.warning("mcp: refusing a new session: %s", exc)
            return SHARED_DOWN
        logger.warning("mcp: refusing a new session: %d sessions hold loads", shared.limit)
        return "Too many open sessions: every one holds loads"

    async def _serve_shared(
        self, shared: SharedSessions, session: str, scope: Any, receive: Any, send: Any
    ) -> None:
        """A request of an open session, on whichever process opened it."""
        if not valid_id(session):
            await refuse(send, 404, "Session not found")
            return
        try:
            found = await shared.touch(session)
        except SharedStateDown as exc:
            logger.warning("mcp: a request of a session refused: %s", exc)
            await refuse(send, 503, SHARED_DOWN, [(b"retry-after", b"1")])
            return
        if found is not None and found.owner != _owner(scope):
            await refuse(send, 404, "Session not found")  # another client's: as the SDK would
            return
        if found is None:  # ended elsewhere, idle too long, or never opened
            local = self.local.get(session)
            if session in self.open or local is not None:
                self._ended(session)
                if local is not None:
                    await self._end(scope, local)
            await refuse(send, 404, "Session not found")
            return
        if scope.get("method") == "DELETE" and session not in self.local:
            await self._end_shared(shared, session)  # no SDK session here to end
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        local = await self._local(session, found, scope)
        if local is None:
            await refuse(send, 503, "Too many open sessions: this door process is busy")
            return
        headers = [
            (k, v) for k, v in scope.get("headers", ()) if k.lower() != SESSION_HEADER.encode()
        ]
        headers.append((SESSION_HEADER.encode(), local.encode("latin-1")))
        request = {**scope, "headers": headers, SCOPE_SESSION: session, SCOPE_SHARED: found}
        status = 0

        async def swap(message: Any) -> None:
            nonlocal status
            if message.get("type") == "http.response.start":
                status = int(message.get("status", 0))
                if local != session:
                    message = {**message, "headers": _swapped(message, local, session)}
            await send(message)

        await self.app(request, receive, swap)
        if status == 404:  # this process's SDK session ended meanwhile: open it again next time
            self.local.pop(session, None)
            self.open.pop(session, None)
        if scope.get("method") == "DELETE" and (200 <= status < 300 or status == 404):
            await self._end_shared(shared, session)

    async def _end_shared(self, shared: SharedSessions, session: str) -> None:
        """The client ended ``session``: forget it here and in Redis."""
        self._ended(session)
        try:
            await shared.end(session)
        except SharedStateDown as exc:
            logger.warning("mcp: an ended session stays until it expires: %s", exc)

    async def _local(self, session: str, found: SharedSession, scope: Any) -> str | None:
        """This process's SDK session of ``session``, opened from Redis's record if needed;
        ``None``: it could not be opened."""
        entry = self._opening.setdefault(session, (asyncio.Lock(), [0]))
        entry[1][0] += 1
        try:
            async with entry[0]:  # one opening per session at a time in this process
                now = time.monotonic()
                local = self.local.get(session)
                used = self.open.get(session)
                if local is not None and used is not None and now - used < IDLE_SECONDS - _STALE:
                    self.open[session] = now
                    self.open.move_to_end(session)
                    return local
                if local is not None:  # the SDK may end it any moment: end it now
                    self._ended(session)
                    await self._end(scope, local)
                await self._make_room(scope)
                local = await self._adopt(scope, found)
                if local is not None:
                    self.open[session] = time.monotonic()
                    self.local[session] = local
                return local
        finally:
            entry[1][0] -= 1
            if not entry[1][0]:
                del self._opening[session]

    async def _adopt(self, scope: Any, found: SharedSession) -> str | None:
        """Open an SDK session in this process as the client opened the shared one."""
        params = dict(found.init)
        version = params.get("protocolVersion")
        if version not in HANDSHAKE_PROTOCOL_VERSIONS:
            version = params["protocolVersion"] = LATEST_HANDSHAKE_VERSION
        params.setdefault("capabilities", {})
        params.setdefault("clientInfo", {"name": "", "version": "0"})
        initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
        headers = _kept_headers(scope)
        headers += [
            (b"content-type", b"application/json"),
            (b"accept", b"application/json, text/event-stream"),
        ]
        try:
            status, local = await self._internal(
                scope, "POST", headers, json.dumps(initialize).encode()
            )
            if status != 200 or local is None:
                logger.warning("mcp: a shared session could not be opened here (%d)", status)
                return None
            headers += [
                (SESSION_HEADER.encode(), local.encode("latin-1")),
                (_VERSION_HEADER, str(version).encode("latin-1")),
            ]
            note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            await self._internal(scope, "POST", headers, json.dumps(note).encode())
        except Exception as exc:
            logger.warning("mcp: a shared session could not be opened here: %s", exc)
            return None
        return local


def _owner(scope: Mapping[str, Any]) -> str:
    """The name of the ``[[proxy.clients]]`` client of a request (``""``: none)."""
    name = getattr(scope.get(SCOPE_CLIENT), "name", "")
    return name if isinstance(name, str) else ""


def _kept_headers(scope: Any) -> list[tuple[bytes, bytes]]:
    """The headers of a request that a request of the door's own keeps: ``host`` and
    ``origin`` (which the SDK checks against DNS rebinding)."""
    return [(k, v) for k, v in scope.get("headers", ()) if k.lower() in (b"host", b"origin")]


def _swapped(message: Any, local: str, session: str) -> list[tuple[bytes, bytes]]:
    name = SESSION_HEADER.encode()
    return [
        (k, session.encode("latin-1") if k.lower() == name and v == local.encode() else v)
        for k, v in message.get("headers", ())
    ]


def _init(body: bytes) -> dict[str, Any]:
    """The ``initialize`` parameters of an opening request's body (``{}``: none found)."""
    try:
        message = json.loads(body)
    except ValueError:
        return {}
    if not isinstance(message, dict) or message.get("method") != "initialize":
        return {}
    params = message.get("params")
    if not isinstance(params, dict):
        return {}
    kept = ("protocolVersion", "capabilities", "clientInfo")
    return {k: params[k] for k in kept if k in params}
