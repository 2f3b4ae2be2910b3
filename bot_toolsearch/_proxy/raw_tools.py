"""Where a request body's top-level ``tools`` value lies, found without parsing the body.

The proxy receives the same large tool list on every request; parsing it costs most of a
request's time. `tools_span` finds the bytes of the top-level ``tools`` value so that the
proxy can compare them with the lists it parsed before and, when they are the same bytes,
parse only the rest.

The scan is a few linear regular expressions (possessive quantifiers and alternatives that
never start with the same byte: no backtracking) and bounded nesting. It validates nothing:
the rest of the body is parsed by `json` afterwards, and the ``tools`` bytes are only used
when they are byte for byte a value `json` parsed before. Anything the scan does not
recognise (an escaped key, a duplicate ``tools`` key, deeper nesting, another encoding)
gives ``None``: parse the whole body.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

__all__ = ["MAX_DEPTH", "tools_span"]

MAX_DEPTH = 64
"""Deepest nesting of a top-level value the scan follows; a deeper body is parsed in full."""

_WS = rb"[ \t\n\r]*+"
_STRING = rb'"(?:[^"\\]++|\\[\s\S])*+"'
_SCALAR = rb'[^ \t\n\r,:\[\]{}"]++'


def _container(depth: int) -> bytes:
    """A bracketed value nested at most ``depth`` deep (bracket kinds are not matched here;
    `json` checks them, or the bytes were parsed before)."""
    inner = rb"(?:[^\"\[\]{}]++|" + _STRING + rb")*+"
    for _ in range(depth - 1):
        inner = rb"(?:[^\"\[\]{}]++|" + _STRING + rb"|[\[{]" + inner + rb"[\]}])*+"
    return rb"[\[{]" + inner + rb"[\]}]"


_OPEN = re.compile(_WS + rb"\{")
_VALUE = re.compile(_STRING + rb"|" + _container(MAX_DEPTH) + rb"|" + _SCALAR)
_KEY = re.compile(_WS + rb"(" + _STRING + rb")" + _WS + rb":" + _WS)
_NEXT = re.compile(_WS + rb"([,}])")
_END = re.compile(_WS)
_TOOLS_KEY = b'"tools"'
_BACKSLASH = ord("\\")
"""``\\`` as a byte value: ``int in bytes`` costs a tenth of ``bytes in bytes``."""


def _opened(raw: bytes) -> int | None:
    """Where the JSON object ``raw`` opens (after its ``{``), or ``None`` when it is not UTF-8
    or not an object."""
    if json.detect_encoding(raw[:4]) != "utf-8":
        return None
    opened = _OPEN.match(raw)
    return None if opened is None else opened.end()


def tools_span(
    raw: bytes, lengths: Sequence[int] = (), *, known_only: bool = False
) -> tuple[int, int] | None:
    """The start and end offsets of the top-level ``"tools"`` value in the JSON object
    ``raw``, or ``None`` when there is none or the body is not one the scan can read.

    ``lengths`` are the byte lengths of tool lists seen before: when the bytes after the key
    can end after one of them, that end is taken without scanning the value (the caller
    compares the bytes with the lists it knows, and parses the whole body when they
    differ); otherwise the value is scanned, or with ``known_only`` ``None`` is returned.
    """
    # A body that starts ``{`` and a byte other than NUL is UTF-8 (`json.detect_encoding`),
    # and opened at its first byte: what `_opened` finds, without asking (issue 44).
    plain = raw[:1] == b"{" and raw[1:2] != b"\x00"
    position = 1 if plain else _opened(raw)
    if position is None:
        return None
    found = None
    while True:
        key = _KEY.match(raw, position)
        if key is None:
            return None
        name, position = key.group(1), key.end()
        if _BACKSLASH in name:  # an escaped key may spell "tools": only `json` decides
            return None
        end = None
        if name == _TOOLS_KEY:
            if found is not None:  # duplicate keys: `json` keeps the last, leave it to `json`
                return None
            for length in lengths:
                if _NEXT.match(raw, position + length):
                    end = position + length
                    break
            if end is None and known_only:
                return None
        if end is None:
            value = _VALUE.match(raw, position)
            if value is None:
                return None
            end = value.end()
        if name == _TOOLS_KEY:
            found = (position, end)
        after = _NEXT.match(raw, end)
        if after is None:
            return None
        position = after.end()
        if after.group(1) == b"}":
            break
    if _END.match(raw, position).end() != len(raw):  # type: ignore[union-attr]
        return None
    return found
