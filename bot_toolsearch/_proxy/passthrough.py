"""Which pass-through requests the proxy refuses while ``[tools] allow``/``deny`` is set.

Only ``/v1/chat/completions`` and ``/v1/responses`` go through tool search, where allow/deny
filter every spelling of a tool (`bot_toolsearch._wrap.permitted`). Every other path is
forwarded verbatim, so a body there that offers a model tools would reach the upstream
unfiltered (``/v1/assistants``, ``/v1/threads/.../runs``, ``/v1/realtime/sessions`` ...).
While a list is configured, the proxy refuses (403, ``code: "tool_not_permitted"``):

- a write (any method but ``GET``, ``HEAD``, ``OPTIONS``, ``DELETE``) to ``/realtime/...``
  (a session's tools can also arrive as a form part or over the socket) or ``/batches`` (the
  requests, tools included, are in an uploaded file the proxy never sees);
- any other write whose JSON body has a ``tools``, ``functions``, ``tool_choice`` or
  ``function_call`` key at any depth;
- a write whose body reads as JSON (it starts with ``{`` or ``[``) but that Python cannot parse
  (invalid UTF-8, nesting past the interpreter's limit ...): a more lenient upstream parser
  could read tools in it that the proxy never saw.

Reads, and writes that name no tool (embeddings, moderations, files ...), pass as before.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

__all__ = ["TOOL_KEYS", "refusal"]

TOOL_KEYS = frozenset({"tools", "functions", "tool_choice", "function_call"})
"""Object keys by which a request body offers (or forces) tools."""
_READS = frozenset({"GET", "HEAD", "OPTIONS", "DELETE"})
_REFUSED_PREFIXES = ("/realtime", "/batches")
_MAX_DEPTH = 64
_UNREAD = (
    "this endpoint is forwarded as is and its JSON body cannot be read (not UTF-8, or nested "
    "too deeply), so it cannot be checked for tools: [tools] allow/deny are set"
)
"""Deeper JSON is refused too: no tool-carrying API nests its keys that deep."""


def refusal(method: str, rest: str, body: bytes) -> str | None:
    """Why the pass-through request ``method rest`` with ``body`` is refused while a tool
    list is configured, or ``None`` to forward it."""
    if method.upper() in _READS:
        return None
    for prefix in _REFUSED_PREFIXES:
        if rest == prefix or rest.startswith(prefix + "/"):
            return (
                f"{prefix} requests carry tools the proxy cannot filter, and [tools] "
                "allow/deny are set"
            )
    try:
        parsed = json.loads(body)
    except RecursionError:
        return _UNREAD
    except ValueError:  # also UnicodeDecodeError
        start = body.lstrip(b" \t\r\n")
        if start.startswith((b"{", b"[", b"\xef\xbb\xbf")) or b"\x00" in start[:4]:
            return _UNREAD  # JSON that cannot be read here (UTF-8 BOM, or UTF-16/32)
        return None  # not JSON (a file, a form): the upstream answers it
    for depth, key in _keys(parsed, 0):
        if depth > _MAX_DEPTH or key in TOOL_KEYS:
            return (
                f"this endpoint is forwarded as is and the body has a {key!r} field: "
                "[tools] allow/deny are set, and only /v1/chat/completions and /v1/responses "
                "apply them"
            )
    return None


def _keys(value: object, depth: int) -> Iterator[tuple[int, str]]:
    """``(depth, key)`` of every object key in ``value``; stops descending past `_MAX_DEPTH`."""
    stack: list[tuple[object, int]] = [(value, depth)]
    while stack:
        item, level = stack.pop()
        if level > _MAX_DEPTH:
            yield level, "(nested too deeply)"
            return
        if isinstance(item, dict):
            for key, inner in item.items():
                yield level, key
                if isinstance(inner, dict | list):
                    stack.append((inner, level + 1))
        elif isinstance(item, list):
            stack.extend((inner, level + 1) for inner in item if isinstance(inner, dict | list))
