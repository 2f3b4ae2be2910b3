"""The MCP door's handshake-era sessions on shared state, so any door process serves any request.

With ``[proxy] state = "redis://..."``, ``mcp --http`` keeps each streamable-HTTP session in
Redis: its record (the client's ``initialize`` parameters, so another process can open the
session in its own SDK, `bot_toolsearch._mcp.server.Sessions`), the tools it loaded, in order,
and its place among the open sessions (a sorted set by last use). Every key expires after
`IDLE_SECONDS` without a request of the session, on whichever process; a session's ``DELETE``
removes it at once. The open sessions are bounded over all processes as in one: opening one
past the bound ends the least recently used session that holds no loads, never one that does.
Opening is one Lua script run by Redis (`_OPEN`, by EVALSHA): expiry, making room and the new
session's place in one atomic step, so processes opening sessions at the same instant never
take more places than the bound between them.
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
"""Open sessions examined per page when making room (`_OPEN`)."""

_OPEN = """
local open, record = KEYS[1], KEYS[2]
local now, cutoff, limit = ARGV[1], ARGV[2], tonumber(ARGV[3])
local digest, prefix, scan = ARGV[5], ARGV[6], tonumber(ARGV[7])
redis.call('ZREMRANGEBYSCORE', open, '-inf', cutoff)
if not redis.call('ZSCORE', open, digest) then
  local start = 0
  while redis.call('ZCARD', open) >= limit do
    local victim = nil
    while victim == nil do
      local page = redis.call('ZRANGE', open, start, start + scan - 1)
      if #page == 0 then
        return 0
      end
      for i, held in ipairs(page) do
        if redis.call('EXISTS', prefix .. held .. ':loaded') == 0 then
          victim = held
          start = start + i - 1
          break
        end
      end
      if victim == nil then
        start = start + #page
      end
    end
    redis.call('DEL', prefix .. victim, prefix .. victim .. ':loaded')
    redis.call('ZREM', open, victim)
  end
end
redis.call('SET', record, ARGV[4], 'EX', ARGV[8])
redis.call('ZADD', open, now, digest)
return 1
"""
"""Opening a session, atomically. KEYS: the open sessions, the new session's record. ARGV: now,
the oldest last use still open, the bound, the record, the session's digest, the keys' prefix
(`_Keys`: a session's record is prefix + digest, its loads prefix + digest + ``:loaded``),
sessions examined per page, the record's expiry in seconds. Making room ends the least
recently used session holding no loads (the sessions before it, which hold loads, are not
examined again); 0 when every one holds loads. It writes keys it derives (a victim's), so it
needs one Redis server, not a cluster (``[proxy] state`` names one server)."""


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
        self._open_script: Any = None

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
            if self._open_script is None:  # redis-py's Script: EVALSHA, loaded when missing
                self._open_script = redis.register_script(_OPEN)
            now = time.time()
            opened = await self._open_script(
                keys=[keys.open, keys.record(digest)],
                args=[
                    repr(now),
                    repr(now - _TTL),
                    self.limit,
                    record,
                    digest,
                    keys.prefix,
                    _SCAN,
                    _TTL,
                ],
            )
            return bool(opened)

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


async def _remove(redis: Any, keys: _Keys, digest: str) -> None:
    async with redis.pipeline(transaction=True) as pipe:
        pipe.delete(keys.record(digest), keys.loaded(digest))
        pipe.zrem(keys.open, digest)
        await pipe.execute()
