"""The tool set of the client a request came from: ``[[proxy.clients]]`` applied to settings.

The proxy matches a request's key to one ``[[proxy.clients]]`` entry (`match`, in constant
time, by SHA-256) and makes that client's policy current for the request's tasks and threads
(`CURRENT`); every door below reads its settings through `scoped`, so each place ``[tools]
allow``/``deny`` already holds (tools, functions, custom tools, ``tool_choice``, pass-through
endpoints, deferred tools) holds the client's: its ``allow`` replaces ``[tools] allow`` when
given, its ``deny`` adds to ``[tools] deny``. The MCP door over HTTP matches the same way and
builds each client's view from `narrowed` settings.
"""

from __future__ import annotations

import contextvars
import hashlib
import hmac
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from bot_toolsearch._config.settings import BotSettings, ProxyClient

__all__ = ["CURRENT", "ClientPolicy", "match", "narrowed", "scoped"]


@dataclass(frozen=True, slots=True)
class ClientPolicy:
    """What one named client may use."""

    name: str
    allow: tuple[str, ...] | None
    deny: tuple[str, ...]
    upstream_key_env: str | None = None
    max_in_flight: int | None = None

    @classmethod
    def of(cls, client: ProxyClient) -> ClientPolicy:
        """The policy of one ``[[proxy.clients]]`` entry."""
        return cls(
            client.name, client.allow, client.deny, client.upstream_key_env, client.max_in_flight
        )


CURRENT: contextvars.ContextVar[ClientPolicy | None] = contextvars.ContextVar(
    "bot_toolsearch_client_policy", default=None
)
"""The policy of the client whose request is being served; ``None``: the settings' own."""


def match(clients: Sequence[ProxyClient], key: str | None) -> ProxyClient | None:
    """The client whose ``key_sha256`` is the digest of ``key``, or ``None``.

    Every entry is compared, each in constant time, so how long it takes says nothing of
    which entry (or how much of one) matched.
    """
    given = hashlib.sha256((key or "").encode("utf-8", "replace")).hexdigest().encode()
    found: ProxyClient | None = None
    for client in clients:
        if hmac.compare_digest(client.key_sha256.lower().encode(), given):
            found = client
    return found if key else None


_SCOPED: OrderedDict[tuple[int, ClientPolicy], tuple[BotSettings, BotSettings]] = OrderedDict()
_SCOPED_SIZE = 256
_LOCK = threading.Lock()  # held for the dict's bookkeeping only


def scoped(settings: BotSettings) -> BotSettings:
    """``settings`` with the current client's ``allow``/``deny`` in ``[tools]`` (itself when no
    client policy is current). Made once per snapshot and client."""
    return narrowed(settings, CURRENT.get())


def narrowed(settings: BotSettings, policy: ClientPolicy | None) -> BotSettings:
    """``settings`` with ``policy``'s ``allow``/``deny`` in ``[tools]`` (itself for ``None``).
    Made once per snapshot and client, so the same pair gives the same object."""
    if policy is None:
        return settings
    key = (id(settings), policy)
    with _LOCK:
        found = _SCOPED.get(key)
        if found is not None and found[0] is settings:
            _SCOPED.move_to_end(key)
            return found[1]
    tools = settings.tools
    narrowed = settings.model_copy(
        update={
            "tools": tools.model_copy(
                update={
                    "allow": tools.allow if policy.allow is None else policy.allow,
                    "deny": (*tools.deny, *(d for d in policy.deny if d not in tools.deny)),
                }
            )
        }
    )
    with _LOCK:
        _SCOPED[key] = (settings, narrowed)  # the snapshot is held, so its id is not reused
        while len(_SCOPED) > _SCOPED_SIZE:
            _SCOPED.popitem(last=False)
    return narrowed
