"""Who a request is: anyone, a holder of one of the proxy's keys, or a named client.

Checked first, before anything of the request is read: with ``serve --api-key``, a ``[proxy]
keys`` file or ``[[proxy.clients]]`` entries, a request must carry one of their keys, else 401.
A named client's policy (`bot_toolsearch._services.client_policy`) then holds for the whole
request, its own upstream key (``upstream_key_env``) goes upstream, and its requests in flight
are bounded by its ``max_in_flight`` (`ClientGate`), counted as ``--max-in-flight`` counts
them: once a request's whole body has arrived, so a client still sending (or dripping) a body
holds no place its own whole requests need (`bot_toolsearch._proxy.reading`). Clients are read
from each request's settings snapshot, so an edit of ``config.toml`` changes the next request.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from bot_toolsearch._config.settings import BotSettings, ProxyClient
from bot_toolsearch._services.client_policy import CURRENT as CURRENT_POLICY
from bot_toolsearch._services.client_policy import ClientPolicy, match

from .exchange import note_client
from .keys import ClientKeys, bearer, read_keys
from .limits import RETRY_AFTER
from .request import ADMITTED, OPEN, Admitted, Refused, Request

__all__ = ["ADMITTED", "Admission", "Admitted", "ClientGate", "admission_from"]


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
        return None if clients else OPEN

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

    def stage(self, request: Request, clients: Sequence[ProxyClient]) -> Admitted:
        """The admission stage: who ``request`` is (its ``admitted``, and the request's
        context: `ADMITTED`, the client's policy, its name on the exchange); a client with a
        ``max_in_flight`` has the request counted against it once its body is whole.

        Raises:
            Refused: 401 when it carries none of the proxy's keys.
        """
        headers = request.headers
        client_key = bearer(headers) or headers.get("x-api-key")  # x-api-key: Messages clients
        admitted = self.admit(client_key, clients)
        if admitted is None:
            raise Refused(401, "this proxy needs one of its client keys", code="invalid_api_key")
        request.admitted = admitted
        ADMITTED.set(admitted)
        if admitted.policy is not None:
            CURRENT_POLICY.set(admitted.policy)
            note_client(admitted.policy.name)
        if admitted.policy is not None and admitted.policy.max_in_flight is not None:
            request.receive.count_also(ClientGate(self, admitted))
        return admitted


class ClientGate:
    """A named client's ``max_in_flight``, as a bound of the request's reader (`Gate`)."""

    __slots__ = ("_admission", "_admitted")

    def __init__(self, admission: Admission, admitted: Admitted) -> None:
        self._admission, self._admitted = admission, admitted

    def enter(self) -> bool:
        """Count one more request of the client; ``False`` past its ``max_in_flight``."""
        return self._admission.enter(self._admitted)

    def leave(self) -> None:
        """A counted request of the client is done."""
        self._admission.leave(self._admitted)

    def refused(self) -> Refused:
        """The answer past the bound: 429, naming the client (never its key)."""
        policy = self._admitted.policy
        assert policy is not None
        return Refused(
            429,
            f"more than {policy.max_in_flight} requests of client {policy.name!r} in flight"
            f" ([[proxy.clients]] max_in_flight); retry after {RETRY_AFTER} s",
            "rate_limit_error",
            code="too_many_requests",
            retry_after=RETRY_AFTER,
        )


def admission_from(
    start: BotSettings, api_keys: Sequence[str] | None
) -> tuple[ClientKeys | None, Admission]:
    """The proxy's own keys (``api_keys``, else the ``[proxy] keys`` file) and its admission
    rule; named clients with no upstream key at all are refused here, at start-up.

    Raises:
        OSError: the keys file cannot be read.
        ValueError: keys or clients without an upstream key, or a bad keys file.
    """
    operator = start.model.api_key or os.environ.get("OPENAI_API_KEY", "").strip()
    if api_keys is None and start.proxy.keys is not None:
        api_keys = read_keys(start.proxy.keys)
    keys = ClientKeys(api_keys, operator) if api_keys is not None else None
    admission = Admission(operator, keys)
    if start.proxy.clients:
        admission.check(start.proxy.clients)
    return keys, admission
