"""The wrapped upstream client a request is sent with, made once per key and forwarded
headers rather than per request.

A request goes upstream under its own key (the client's, or the operator's) and the client
headers the proxy forwards (`_forwarded_headers`); ``with_options`` copies the whole SDK
client for that, which cost about 2% of the proxy's CPU per request when done per request
(issue 44). The copies share the HTTP client, its pool and the settings; `ClientCopies`
keeps the `_SIZE` most recently used, so a key that stops coming is dropped, and a new key
costs what it did before. Used on one event loop only.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

__all__ = ["ClientCopies"]

_SIZE = 64
"""Most copies kept (one per key and set of forwarded headers)."""


class ClientCopies:
    """``client.with_options(api_key=..., default_headers=...)``, kept per key and headers."""

    def __init__(self, client: Any, size: int = _SIZE) -> None:
        self._client = client
        self._size = size
        self._copies: OrderedDict[tuple[str, tuple[tuple[str, str], ...]], Any] = OrderedDict()
        self.made = 0
        """How many copies were made so far."""

    def get(self, key: str, headers: Mapping[str, str]) -> Any:
        """The client for ``key`` and ``headers`` (made once while it stays among the newest)."""
        slot = (key, tuple(sorted(headers.items())))
        found = self._copies.get(slot)
        if found is not None:
            self._copies.move_to_end(slot)
            return found
        made = self._client.with_options(api_key=key, default_headers=dict(headers))
        self.made += 1
        self._copies[slot] = made
        while len(self._copies) > self._size:
            self._copies.popitem(last=False)
        return made
