"""The proxy's own client keys: who may use it, and which key then goes upstream.

Optional, as gateways do: with keys set (``serve --api-key``, or the ``[proxy] keys`` file of
the config: one key a line, ``#`` comments), a request must carry one of them
(``Authorization: Bearer`` or ``api-key``), else it is answered 401 before anything is read
or built; the upstream key is then the operator's (``[model] api_key``, else
``OPENAI_API_KEY``), never the client's. Keys are compared in constant time, and never logged.

Without client keys, the upstream decides. Before the proxy parses and indexes a large body
whose upstream key it has not seen accepted lately, it asks the upstream whether the key is
good (``GET /models``, `KnownKeys`): a 401 or 403 there is the answer, and the body is never
parsed; a refusal is remembered a few seconds, an acceptance ten minutes.

The upstream keys the operator configured (`UpstreamKeys`: ``[model] api_key``,
``OPENAI_API_KEY``, the embeddings endpoint's key) never reach a client: an upstream that
names the key in an answer (a 401 "Incorrect API key provided: sk-...") has it masked, byte
for byte, in whatever the proxy sends.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from pathlib import Path

from bot_toolsearch._config.settings import BotSettings

__all__ = [
    "ClientKeys",
    "KnownKeys",
    "UpstreamKeys",
    "bearer",
    "key_digest",
    "operator_keys",
    "read_keys",
]

_SHORTEST_MASKED = 8
"""Shorter keys are not masked: they would mask ordinary words (no real key is that short)."""


def read_keys(path: str | os.PathLike[str]) -> list[str]:
    """The keys of a keys file: one a line; blank lines and ``#`` comments skipped.

    Raises:
        OSError: the file cannot be read.
        ValueError: it holds no key, or a key that is not printable ASCII.
    """
    keys = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        key = line.strip()
        if key and not key.startswith("#"):
            keys.append(key)
    if not keys:
        raise ValueError(f"{path}: no client key in the file")
    return keys


class ClientKeys:
    """The client keys a proxy accepts, and the upstream key it uses for them.

    Raises:
        ValueError: no key, a key that is not printable ASCII without spaces, or no
            upstream key.
    """

    def __init__(self, keys: Iterable[str], upstream_key: str | None) -> None:
        self._keys = [key.encode() for key in keys]
        if not self._keys:
            raise ValueError("client keys: give at least one")
        for key in self._keys:
            if not key.isascii() or not key.decode().isprintable() or b" " in key:
                raise ValueError("client keys: a key must be printable ASCII without spaces")
        if not upstream_key:
            raise ValueError(
                "client keys are set, so the upstream key must come from the operator: set "
                "[model] api_key in the config or OPENAI_API_KEY"
            )
        self.upstream_key = upstream_key

    def allows(self, key: str | None) -> bool:
        """Whether ``key`` is one of the keys (every key compared, in constant time)."""
        given = (key or "").encode("latin-1", "replace")
        found = False
        for known in self._keys:
            found |= hmac.compare_digest(known, given)
        return found and key is not None

    def __repr__(self) -> str:
        return f"ClientKeys({len(self._keys)} keys)"  # never the keys themselves


def key_digest(key: str | None) -> bytes:
    """What `KnownKeys` knows ``key`` by: its SHA-256 (``None`` as the empty key). A request
    computes it once (`bot_toolsearch._proxy.request.Request.key_digest`)."""
    return hashlib.sha256((key or "").encode("utf-8", "replace")).digest()


class KnownKeys:
    """Upstream keys the upstream accepted lately, or refused lately (by SHA-256, never the
    keys: `key_digest`): what the proxy knows before it parses a large body (`ProxyApp`'s
    key probe).

    >>> known, a, b = KnownKeys(), key_digest("sk-a"), key_digest("sk-b")
    >>> known.accept(a); known.ok(a), known.ok(b)
    (True, False)
    >>> known.refuse(b, 401, b"{}"); known.refused(b)
    (401, b'{}')
    """

    def __init__(
        self, *, accepted_for: float = 600.0, refused_for: float = 5.0, size: int = 4096
    ) -> None:
        self._accepted: OrderedDict[bytes, float] = OrderedDict()
        self._refused: OrderedDict[bytes, tuple[float, int, bytes]] = OrderedDict()
        self._accepted_for, self._refused_for, self._size = accepted_for, refused_for, size

    def ok(self, digest: bytes) -> bool:
        """Whether the upstream accepted the key of ``digest`` (`key_digest`) lately."""
        seen = self._accepted.get(digest)
        return seen is not None and time.monotonic() - seen < self._accepted_for

    def accept(self, digest: bytes) -> None:
        """The upstream answered 2xx to the key of ``digest``."""
        self._refused.pop(digest, None)
        self._accepted[digest] = time.monotonic()
        self._accepted.move_to_end(digest)
        while len(self._accepted) > self._size:
            self._accepted.popitem(last=False)

    def refused(self, digest: bytes) -> tuple[int, bytes] | None:
        """The upstream's recent refusal of the key of ``digest`` (status, body), if any."""
        found = self._refused.get(digest)
        if found is None or time.monotonic() - found[0] >= self._refused_for:
            return None
        return found[1], found[2]

    def refuse(self, digest: bytes, status: int, body: bytes) -> None:
        """The upstream refused the key of ``digest`` (401/403) with ``body``."""
        self._refused[digest] = (time.monotonic(), status, body)
        self._refused.move_to_end(digest)
        while len(self._refused) > self._size:
            self._refused.popitem(last=False)


class UpstreamKeys:
    """The operator's upstream keys, masked (``*`` for each byte, so a ``Content-Length``
    stays right) in data bound for a client.

    >>> keys = UpstreamKeys(["sk-operator-1", None, "short"])
    >>> keys.mask(b'{"message": "Incorrect API key provided: sk-operator-1"}')
    b'{"message": "Incorrect API key provided: *************"}'
    >>> bool(UpstreamKeys(["short", ""]))
    False
    """

    def __init__(self, keys: Iterable[str | None]) -> None:
        found = {key.encode("utf-8") for key in keys if key and len(key) >= _SHORTEST_MASKED}
        self._keys = sorted(found, key=len, reverse=True)  # a key inside another: the longer

    def __bool__(self) -> bool:
        return bool(self._keys)

    def mask(self, data: bytes) -> bytes:
        """``data`` with every key replaced by as many ``*``."""
        for key in self._keys:
            if key in data:
                data = data.replace(key, b"*" * len(key))
        return data

    def __repr__(self) -> str:
        return f"UpstreamKeys({len(self._keys)} keys)"  # never the keys themselves


def operator_keys(settings: BotSettings) -> UpstreamKeys:
    """The upstream keys the operator configured: ``[model] api_key``, ``OPENAI_API_KEY``,
    and the embeddings endpoint's key."""
    semantic = settings.skills.tool_search_embeddings
    embeddings = semantic.api_key_env if semantic is not None else None
    return UpstreamKeys(
        [
            settings.model.api_key,
            os.environ.get("OPENAI_API_KEY", "").strip(),
            os.environ.get(embeddings, "").strip() if embeddings else None,
        ]
    )


def bearer(headers: Mapping[str, str]) -> str | None:
    """The key a request carries: ``Authorization: Bearer``, else ``api-key``."""
    value = headers.get("authorization", "")
    scheme, _, token = value.partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return headers.get("api-key") or None
