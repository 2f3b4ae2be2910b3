"""The proxy's own client keys: who may use it, and which key then goes upstream.

Optional, as gateways do: with keys set (``serve --api-key``, or the ``[proxy] keys`` file of
the config: one key a line, ``#`` comments), a request must carry one of them
(``Authorization: Bearer`` or ``api-key``), else it is answered 401 before anything is read
or built; the upstream key is then the operator's (``[model] api_key``, else
``OPENAI_API_KEY``), never the client's. Keys are compared in constant time, and never logged.
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Iterable
from pathlib import Path

__all__ = ["ClientKeys", "read_keys"]


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
