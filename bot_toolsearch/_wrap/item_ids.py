"""The ids of the search items we make up, carrying what each item said, so that a reference
to one means what the item resent whole means, with no state kept anywhere.

A client that stores its conversation upstream (the Vercel AI SDK, ``store`` at its default)
resends an output item as ``{"type": "item_reference", "id": ...}``. The upstream never saw
our ``tool_search_call``/``tool_search_output`` items, so it cannot resolve theirs; and the
proxy keeps no state (several workers, several hosts). So the id is the item: `make_id` packs
what the item carries (the call's ``call_id``, ``arguments`` and ``execution``; the output's
``call_id`` and the canonical names it loaded, whose definitions the request's own tools
still hold) as compact JSON, deflated, base64url, behind a prefix (``ts_bt1``/``tso_bt1``) and
a 96-bit SHA-256 digest of prefix and payload. `expand` turns a reference back into the item.

The digest is a checksum, not a secret: a client could forge an id as well as it could send
the item whole, which means nothing more. An id with our prefix that does not read back (too
long, not base64url, a wrong digest, a payload that inflates past `MAX_PAYLOAD` or is not the
expected shape) raises `ItemReferenceError`, which the proxy answers 400: it never reaches the
upstream. An item too large to pack (a query of kilobytes) keeps a plain id; a reference to
that one is refused the same way, naming the fix: resend the item whole (``store: false``).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import zlib
from collections.abc import Container, Mapping, Sequence
from typing import Any

__all__ = ["CALL_PREFIX", "OUTPUT_PREFIX", "ItemReferenceError", "expand", "is_ours", "make_id"]

CALL_PREFIX = "ts_bt1"
"""The id prefix of a ``tool_search_call`` we made."""
OUTPUT_PREFIX = "tso_bt1"
"""The id prefix of a ``tool_search_output`` we made."""
_PLAIN = ("ts_", "tso_")
"""The prefixes of an item of ours too large to pack (or made before ids carried it)."""
MAX_ID = 4096
"""The longest id made or read: an item that packs larger keeps a plain id."""
MAX_PAYLOAD = 16384
"""The most bytes a payload may inflate to (a hostile id cannot make us inflate more)."""
_DIGEST = 16
"""Characters of the base64url digest (12 bytes)."""


class ItemReferenceError(ValueError):
    """An ``item_reference`` to an id of ours that does not read back (the proxy's 400)."""


def _digest(prefix: str, payload: str) -> str:
    raw = hashlib.sha256(f"{prefix}\0{payload}".encode()).digest()[:12]
    return base64.urlsafe_b64encode(raw).decode()


def make_id(prefix: str, fields: Mapping[str, Any], fallback: str) -> str:
    """The id of an item carrying ``fields`` (JSON values); ``fallback`` when it packs longer
    than `MAX_ID`."""
    text = json.dumps(fields, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    packed = base64.urlsafe_b64encode(zlib.compress(text.encode(), 9)).decode().rstrip("=")
    made = f"{prefix}{_digest(prefix, packed)}{packed}"
    return made if len(made) <= MAX_ID else fallback


def is_ours(ref: str) -> bool:
    """Whether an id names an item this wrapper made (packed or plain)."""
    return ref.startswith(_PLAIN)


def _read(ref: str, prefix: str) -> dict[str, Any]:
    """The fields packed into ``ref`` (made with ``prefix``)."""
    if len(ref) > MAX_ID:
        raise ItemReferenceError(f"is longer than {MAX_ID} characters")
    digest, packed = ref[len(prefix) : len(prefix) + _DIGEST], ref[len(prefix) + _DIGEST :]
    if len(digest) != _DIGEST or digest != _digest(prefix, packed):
        raise ItemReferenceError("does not match its checksum")
    try:
        deflated = base64.urlsafe_b64decode(packed + "=" * (-len(packed) % 4))
        inflater = zlib.decompressobj()
        text = inflater.decompress(deflated, MAX_PAYLOAD)
        if inflater.unconsumed_tail or not inflater.eof:
            raise ItemReferenceError(f"inflates past {MAX_PAYLOAD} bytes or is cut short")
        fields = json.loads(text)
    except (binascii.Error, zlib.error, UnicodeDecodeError, ValueError) as bad:
        if isinstance(bad, ItemReferenceError):
            raise
        raise ItemReferenceError("does not read back") from None
    if not isinstance(fields, dict) or not isinstance(fields.get("call_id"), str):
        raise ItemReferenceError("does not read back")
    return fields


def expand(
    ref: str, at: int, members: Mapping[str, tuple[str, str]], known: Container[str]
) -> dict[str, Any]:
    """The item an ``item_reference`` to our id ``ref`` (at ``input[at]``) stands for: the
    ``tool_search_call`` as it was made, or the ``tool_search_output`` naming what it loaded
    of the request's tools (``known``, canonical names; ``members``: canonical name ->
    (namespace, own name), to group namespace members).

    Raises:
        ItemReferenceError: ``ref`` has our prefix but does not read back.
    """
    try:
        if ref.startswith(OUTPUT_PREFIX):
            fields = _read(ref, OUTPUT_PREFIX)
            names = fields.get("loaded")
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise ItemReferenceError("does not read back")
            return {
                "type": "tool_search_output",
                "id": ref,
                "call_id": fields["call_id"],
                "execution": fields.get("execution", "server"),
                "tools": _tools([n for n in names if n in known], members),
            }
        if ref.startswith(CALL_PREFIX):
            fields = _read(ref, CALL_PREFIX)
            arguments = fields.get("arguments")
            return {
                "type": "tool_search_call",
                "id": ref,
                "call_id": fields["call_id"],
                "execution": fields.get("execution", "server"),
                "arguments": arguments if isinstance(arguments, dict) else {},
            }
        raise ItemReferenceError(
            "names a search item too large to carry in its id; resend the item whole (store: false)"
        )
    except ItemReferenceError as bad:
        shown = ref if len(ref) <= 40 else f"{ref[:40]}..."
        raise ItemReferenceError(
            f"input[{at}]: item_reference {shown!r} names a tool search item bot-toolsearch made, "
            f"but the id {bad}"
        ) from None


def _tools(names: Sequence[str], members: Mapping[str, tuple[str, str]]) -> list[dict[str, Any]]:
    """Definitions naming ``names``, namespace members inside their group (the request's own
    tools give each its parameters)."""
    tools: list[dict[str, Any]] = []
    for name in names:
        member = members.get(name)
        if member is None:
            tools.append({"type": "function", "name": name})
        else:
            space, own = member
            function = {"type": "function", "name": own}
            tools.append({"type": "namespace", "name": space, "tools": [function]})
    return tools
