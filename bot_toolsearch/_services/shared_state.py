"""Shared state of ``serve`` and ``mcp --http`` processes: ``[proxy] state = "redis://..."``.

One client of one Redis server for both shells (the MCP door's sessions are in
`bot_toolsearch._mcp.shared`, on `RedisState.run`). The proxy keeps no conversation state but
one map: a Responses stream whose round streamed text
and then searched shows the client that round's id, which stands for the final round's
(`bot_toolsearch._wrap.responses.ResponseAliases`). Without shared state that map is per
process, so a follow-up naming such an id must reach the same worker. With Redis, every alias
is written (with an expiry) before the client sees the id, and a follow-up's
``previous_response_id`` is looked up there first, so any worker or host serves any request.

Every Redis call has a total deadline. For the aliases, a Redis that is down or slow costs a
warning and the per-process behaviour, never a failed request; `run` raises `SharedStateDown`
instead, for a caller whose answer depends on what Redis holds. Ids are stored under their
SHA-256, so a client's ``previous_response_id`` of any length or content is one bounded key.
It needs the ``redis`` extra.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from bot_toolsearch._config.redact import redact_url

__all__ = ["ALIAS_TTL", "RedisState", "SharedStateDown", "open_state"]

logger = logging.getLogger("bot_toolsearch")

ALIAS_TTL = 30 * 24 * 3600
"""Seconds an alias is kept: as long as OpenAI keeps a stored response by default (30 days)."""
_MAX_ID = 512
"""Longest response id looked up; a longer ``previous_response_id`` is no id of ours."""
_PREFIX = "bot_toolsearch:alias:"


_T = TypeVar("_T")


class SharedStateDown(RuntimeError):
    """A Redis call of `RedisState.run` failed or took longer than its deadline (the message
    names the server without its password, and why, never the server's own text)."""


def _key(response_id: str) -> str:
    return _PREFIX + hashlib.sha256(response_id.encode("utf-8", "replace")).hexdigest()


class RedisState:
    """The shared aliases on one Redis server.

    Args:
        url: ``redis://[user:password@]host:port/db`` (or ``rediss://``).
        timeout: seconds each Redis call may take in all, connecting included.
    """

    def __init__(self, url: str, *, timeout: float = 1.0) -> None:
        try:
            import redis.asyncio
        except ImportError:
            raise ValueError(
                "[proxy] state needs the redis package: pip install '.[redis]' in the clone"
            ) from None
        self.location = redact_url(url)
        self._timeout = timeout
        self._redis: Any = redis.asyncio.Redis.from_url(
            url,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            decode_responses=True,
            max_connections=64,
        )

    async def resolve(self, response_id: str) -> str | None:
        """The upstream response ``response_id`` stands for, if another worker stored it."""
        if not response_id or len(response_id) > _MAX_ID:
            return None
        try:
            async with asyncio.timeout(self._timeout):
                found = await self._redis.get(_key(response_id))
        except Exception as exc:  # down, slow, refused: the per-process map answers
            logger.warning("proxy: shared state %s: lookup failed: %s", self.location, _why(exc))
            return None
        return found if isinstance(found, str) and found else None

    async def store(self, aliases: Sequence[tuple[str, str]]) -> None:
        """Keep ``aliases`` (stream id, final id) for `ALIAS_TTL` seconds."""
        if not aliases:
            return
        try:
            async with asyncio.timeout(self._timeout):
                async with self._redis.pipeline(transaction=False) as pipe:
                    for shown, final in aliases:
                        pipe.set(_key(shown), final, ex=ALIAS_TTL)
                    await pipe.execute()
        except Exception as exc:
            logger.warning("proxy: shared state %s: store failed: %s", self.location, _why(exc))

    async def run(self, work: Callable[[Any], Awaitable[_T]]) -> _T:
        """``work(client)`` on the ``redis.asyncio`` client, within the deadline.

        Raises:
            SharedStateDown: Redis is down, refused the call, or did not answer in time.
        """
        try:
            async with asyncio.timeout(self._timeout):
                return await work(self._redis)
        except Exception as exc:
            raise SharedStateDown(f"shared state {self.location}: {_why(exc)}") from None

    async def aclose(self) -> None:
        """Close the connections."""
        await self._redis.aclose()


def _why(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "no answer in time"
    return type(exc).__name__  # never the message: it may hold the URL


def open_state(url: str | None, *, timeout: float = 1.0) -> RedisState | None:
    """The shared state ``[proxy] state`` names; ``None`` for none.

    Raises:
        ValueError: not a ``redis://`` or ``rediss://`` URL, or the redis package is missing.
    """
    if not url:
        return None
    if not url.startswith(("redis://", "rediss://", "unix://")):
        raise ValueError(f"[proxy] state: expected a redis:// URL, got {redact_url(url)!r}")
    return RedisState(url, timeout=timeout)
