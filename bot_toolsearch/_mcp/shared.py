"""The MCP door's handshake-era sessions on shared state, so any door process serves any request.

With ``[proxy] state = "redis://..."``, ``mcp --http`` keeps each streamable-HTTP session in
Redis: its record (the client's ``initialize`` parameters, so another process can open the
session in its own SDK, `bot_toolsearch._mcp.server.Sessions`), the tools it loaded, in order,
and its place among the open sessions (a sorted set by last use). Every key expires after
`IDLE_SECONDS` without a request of the session, on whichever process; a session's ``DELETE``
removes it at once. The open sessions are bounded over all processes as in one: opening one
past the bound ends the least recently used session that holds no loads, never one that does.
Keys hold the SHA-256 of a session id, so an id of any length or content is one bounded key.
Under ``tool_search_keep_loaded = "conversation"``, the tools each client (its ``clientInfo``
name) ran are kept there too, for its next session on any process: bounded per client and in
clients, as in one process, and gone a week after the client's last call.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot_toolsearch._services.shared_state import RedisState

from .door import IDLE_SECONDS

__all__ = [
    "KEPT_TTL",
    "MAX_INIT_BYTES",
    "MAX_KEPT",
    "MAX_KEPT_CLIENTS",
    "MAX_SESSION_ID",
    "PREFIX",
    "SharedSession",
    "SharedSessions",
    "valid_id",
]

MAX_SESSION_ID = 128
"""Longest session id looked up (the SDK makes 32 hex digits); a longer one is nobody's."""
MAX_INIT_BYTES = 64 * 1024
"""Largest ``initialize`` request kept for other processes (a larger one opens a session that
only its own process serves)."""
PREFIX = "bot_toolsearch:mcp:"
MAX_KEPT = 1024
"""Tools kept per client name at most (``tool_search_keep_loaded = "conversation"``)."""
MAX_KEPT_CLIENTS = 1024
"""Client names whose run tools are kept at most, as in one door process."""
KEPT_TTL = 7 * 24 * 3600
"""Seconds a client's kept tools outlive its last call (a week)."""
_TTL = int(IDLE_SECONDS)
_SCAN = 256
"""Open sessions examined per round trip when making room."""


def valid_id(session: str) -> bool:
    """Whether ``session`` may be a session id (visible ASCII, as the spec says, and short)."""
    return 0 < len(session) <= MAX_SESSION_ID and all("!" <= c <= "~" for c in session)


def _digest(session: str) -> str:
    return hashlib.sha256(session.encode("utf-8", "replace")).hexdigest()


@dataclass(frozen=True, slots=True)
class _Keys:
    prefix: str

    @property
    def open(self) -> str:
        """The sorted set of open sessions (digests, by last use)."""
        return self.prefix + "open"

    def record(self, digest: str) -> str:
        return self.prefix + digest

    def loaded(self, digest: str) -> str:
        return self.prefix + digest + ":loaded"

    @property
    def clients(self) -> str:
        """The sorted set of clients with kept tools (digests of their names, by last use)."""
        return self.prefix + "clients"

    def kept(self, digest: str) -> str:
        return self.prefix + "kept:" + digest


@dataclass(frozen=True, slots=True)
class SharedSession:
    """What Redis holds of one open session."""

    init: Mapping[str, Any]
    """The client's ``initialize`` parameters (``{}``: not kept)."""
    owner: str
    """The ``[[proxy.clients]]`` client that opened the session (``""``: none); another
    client's request of it is answered as if it did not exist."""
    loaded: tuple[str, ...]
    """The tools the session loaded, in order (on any process)."""


class SharedSessions:
    """The door's open sessions and their loads on one Redis server.

    Args:
        state: the shared state client (``[proxy] state``).
        limit: open sessions at most, over every process.
        prefix: the keys' prefix (doors that share it share their sessions).
    """

    def __init__(self, state: RedisState, limit: int, prefix: str = PREFIX) -> None:
        self.state = state
        self.limit = limit
        self._keys = _Keys(prefix)

    async def open(self, session: str, init: Mapping[str, Any], owner: str = "") -> bool:
        """Record a new session (after making room); ``False``: every open session holds
        loads, so there is none.

        Raises:
            SharedStateDown: Redis did not answer.
        """
        digest, keys = _digest(session), self._keys
        record = json.dumps(
            {"init": dict(init), "owner": owner}, ensure_ascii=False, separators=(",", ":")
        )

        async def work(redis: Any) -> bool:
            now = time.time()
            await redis.zremrangebyscore(keys.open, "-inf", now - _TTL)
            while await redis.zcard(keys.open) >= self.limit:
                victim = await _idle_victim(redis, keys)
                if victim is None:
                    return False
                await _remove(redis, keys, victim)
            async with redis.pipeline(transaction=True) as pipe:
                pipe.set(keys.record(digest), record, ex=_TTL)
                pipe.zadd(keys.open, {digest: now})
                await pipe.execute()
            return True

        return await self.state.run(work)

    async def touch(self, session: str) -> SharedSession | None:
        """A request of ``session``: what Redis holds of it, its expiry restarted; ``None``:
        no such session (never opened, ended, or idle past `IDLE_SECONDS`).

        Raises:
            SharedStateDown: Redis did not answer.
        """
        digest, keys = _digest(session), self._keys

        async def work(redis: Any) -> tuple[Any, ...]:
            async with redis.pipeline(transaction=True) as pipe:
                pipe.get(keys.record(digest))
                pipe.lrange(keys.loaded(digest), 0, -1)
                pipe.expire(keys.record(digest), _TTL)
                pipe.expire(keys.loaded(digest), _TTL)
                pipe.zadd(keys.open, {digest: time.time()}, xx=True)
                return tuple(await pipe.execute())

        record, loaded, *_ = await self.state.run(work)
        if not isinstance(record, str):
            return None
        try:
            kept = json.loads(record)
        except ValueError:
            kept = {}
        kept = kept if isinstance(kept, dict) else {}
        init, owner = kept.get("init"), kept.get("owner")
        names = tuple(dict.fromkeys(n for n in loaded or () if isinstance(n, str)))
        return SharedSession(
            init if isinstance(init, dict) else {},
            owner if isinstance(owner, str) else "",
            names,
        )

    async def add_loaded(self, session: str, names: Sequence[str]) -> None:
        """Keep tools ``session`` loaded, after the ones it loaded before.

        Raises:
            SharedStateDown: Redis did not answer.
        """
        if not names:
            return
        key = self._keys.loaded(_digest(session))

        async def work(redis: Any) -> None:
            async with redis.pipeline(transaction=True) as pipe:
                pipe.rpush(key, *names)
                pipe.expire(key, _TTL)
                await pipe.execute()

        await self.state.run(work)

    async def kept(self, client: str) -> tuple[str, ...]:
        """The tools the client named ``client`` ran in any session, in first-call order
        (``tool_search_keep_loaded = "conversation"``).

        Raises:
            SharedStateDown: Redis did not answer.
        """
        key = self._keys.kept(_digest(client))
        found = await self.state.run(lambda redis: redis.lrange(key, 0, MAX_KEPT - 1))
        return tuple(dict.fromkeys(n for n in found or () if isinstance(n, str)))

    async def keep(self, client: str, names: Sequence[str]) -> None:
        """Keep tools the client ``client`` ran; past `MAX_KEPT_CLIENTS` clients, the least
        recently seen one's go.

        Raises:
            SharedStateDown: Redis did not answer.
        """
        if not client or not names:
            return
        digest, keys = _digest(client), self._keys

        async def work(redis: Any) -> None:
            async with redis.pipeline(transaction=True) as pipe:
                pipe.rpush(keys.kept(digest), *names)
                pipe.ltrim(keys.kept(digest), 0, MAX_KEPT - 1)
                pipe.expire(keys.kept(digest), KEPT_TTL)
                pipe.zadd(keys.clients, {digest: time.time()})
                pipe.zremrangebyscore(keys.clients, "-inf", time.time() - KEPT_TTL)
                await pipe.execute()
            stale = await redis.zrange(keys.clients, 0, -MAX_KEPT_CLIENTS - 1)
            if stale:
                async with redis.pipeline(transaction=True) as pipe:
                    pipe.delete(*(keys.kept(d) for d in stale))
                    pipe.zrem(keys.clients, *stale)
                    await pipe.execute()

        await self.state.run(work)

    async def end(self, session: str) -> None:
        """Forget ``session`` (its client's ``DELETE``): its next request, anywhere, is
        unknown.

        Raises:
            SharedStateDown: Redis did not answer.
        """
        digest, keys = _digest(session), self._keys
        await self.state.run(lambda redis: _remove(redis, keys, digest))

    async def count(self) -> int:
        """How many sessions are open over every process.

        Raises:
            SharedStateDown: Redis did not answer.
        """

        keys = self._keys

        async def work(redis: Any) -> int:
            await redis.zremrangebyscore(keys.open, "-inf", time.time() - _TTL)
            return int(await redis.zcard(keys.open))

        return await self.state.run(work)


async def _idle_victim(redis: Any, keys: _Keys) -> str | None:
    """The least recently used open session that holds no loads (its digest), if any."""
    start = 0
    while True:
        digests = await redis.zrange(keys.open, start, start + _SCAN - 1)
        if not digests:
            return None
        async with redis.pipeline(transaction=False) as pipe:
            for digest in digests:
                pipe.exists(keys.loaded(digest))
            held = await pipe.execute()
        for digest, holds in zip(digests, held, strict=True):
            if not holds:
                return str(digest)
        start += _SCAN


async def _remove(redis: Any, keys: _Keys, digest: str) -> None:
    async with redis.pipeline(transaction=True) as pipe:
        pipe.delete(keys.record(digest), keys.loaded(digest))
        pipe.zrem(keys.open, digest)
        await pipe.execute()
