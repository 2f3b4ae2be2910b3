"""Who a request is: anyone, a holder of one of the proxy's keys, or a named client.

Checked first, before anything of the request is read: with ``serve --api-key``, a ``[proxy]
keys`` file or ``[[proxy.clients]]`` entries, a request must carry one of their keys, else 401.
A named client's policy (`bot_toolsearch._services.client_policy`) then holds for the whole
request, its own upstream key (``upstream_key_env``) goes upstream, and its requests in flight
are bounded by its ``max_in_flight``. Clients are read from each request's settings snapshot, so
an edit of ``config.toml`` changes the next request.
"""

from __future__ import annotations

import contextvars
import os
from collections.abc import Sequence
from dataclasses import dataclass

from bot_toolsearch._config.settings import ProxyClient
from bot_toolsearch._services.client_policy import ClientPolicy, match

from .keys import ClientKeys

__all__ = ["ADMITTED", "Admission", "Admitted"]


@dataclass(frozen=True, slots=True)
class Admitted:
    """One admitted request: whose it is, and which key goes upstream."""

    keyed: bool
    """The request carried one of the proxy's own keys (not a key for the upstream)."""
    policy: ClientPolicy | None = None
    """The named client's policy; ``None``: the settings' own ``[tools]``."""
    operator_key: str = ""

    def upstream_key(self, client_key: str | None) -> str | None:
        """The key to send upstream: the client's own when the proxy has no keys, else the
        named client's ``upstream_key_env``, else the operator's."""
        if not self.keyed:
            return client_key
        env = self.policy.upstream_key_env if self.policy is not None else None
        if env:
            return os.environ.get(env, "").strip() or self.operator_key
        return self.operator_key


_OPEN = Admitted(keyed=False)
"""A proxy without keys: the client's own key goes upstream."""

ADMITTED: contextvars.ContextVar[Admitted] = contextvars.ContextVar(
    "bot_toolsearch_proxy_admitted", default=_OPEN
)
"""The admission of the request being served."""


class Admission:
    """The proxy's admission rule: its keys, its named clients and their in-flight counts."""

    def __init__(self, operator_key: str, keys: ClientKeys | None) -> None:
        self._operator_key = operator_key
        self._keys = keys
        self._keyed = Admitted(keyed=True, operator_key=operator_key)
        self._in_flight: dict[str, int] = {}

    def check(self, clients: Sequence[ProxyClient]) -> None:
        """Refuse, at start-up, named clients that would have no upstream key.

        Raises:
            ValueError: a client without ``upstream_key_env`` and no operator key.
        """
        if self._operator_key:
            return
        for client in clients:
            if not client.upstream_key_env:
                raise ValueError(
                    f"[[proxy.clients]] {client.name!r} has no upstream_key_env, so the"
                    " upstream key must come from the operator: set [model] api_key in the"
                    " config or OPENAI_API_KEY"
                )

    def admit(self, key: str | None, clients: Sequence[ProxyClient]) -> Admitted | None:
        """Who ``key`` is; ``None``: nobody this proxy serves (answer 401)."""
        if clients:
            client = match(clients, key)
            if client is not None:
                return Admitted(
                    keyed=True, policy=ClientPolicy.of(client), operator_key=self._operator_key
                )
        if self._keys is not None:
            return self._keyed if self._keys.allows(key) else None
        return None if clients else _OPEN

    def enter(self, admitted: Admitted) -> bool:
        """Count one more request of a named client; ``False`` past its ``max_in_flight``."""
        policy = admitted.policy
        if policy is None:
            return True
        count = self._in_flight.get(policy.name, 0)
        if policy.max_in_flight is not None and count >= policy.max_in_flight:
            return False
        self._in_flight[policy.name] = count + 1
        return True

    def leave(self, admitted: Admitted) -> None:
        """A counted request is done."""
        policy = admitted.policy
        if policy is None:
            return
        left = self._in_flight.get(policy.name, 1) - 1
        if left > 0:
            self._in_flight[policy.name] = left
        else:
            self._in_flight.pop(policy.name, None)
