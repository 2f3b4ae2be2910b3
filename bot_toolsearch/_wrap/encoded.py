"""The directory's JSON encoded once per distinct text and spliced into each upstream body.

Every round on one tool list and settings sends the same directory text (17.9 kB at 769
tools), and JSON-encoding it was most of the encoder's time per proxied request (issue 44).
A plan puts it in the body as an `EncodedText` (`encoded_text`, `joined`): a ``str``, equal
to the text and sent as it by any encoder, that carries the bytes the SDK's encoder
(``openai._utils._json.openapi_dumps``) makes of it. `dumps` encodes a body with that one
string swapped for a per-process random placeholder (with the encoder ``openapi_dumps``
makes per call, made once) and splices the carried bytes in its place: byte for byte what
``openapi_dumps`` makes of the body. Anything unusual (no carrier
where a plan puts one, the placeholder found other than once, an error) is encoded by
``openapi_dumps`` whole, so its errors are its own.
"""

from __future__ import annotations

import contextlib
import datetime
import secrets
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["EncodedText", "dumps", "encoded_text", "joined", "sdk_dumps"]

sdk_dumps: Callable[[Any], bytes] | None
try:  # the SDK's own JSON encoder (openai 3); without it nothing is pre-encoded
    from openai._utils import _json as _sdk_json

    sdk_dumps = _sdk_json.openapi_dumps
except (ImportError, AttributeError):  # pragma: no cover - openai 2
    sdk_dumps = None


def _sdk_encoder() -> Callable[[Any], str] | None:
    """The ``encode`` of the encoder ``openapi_dumps`` makes per call, made once (its class
    and settings: an encoder keeps no state between two calls), so that `dumps` saves
    ``json.dumps``'s making it (about a tenth of a round's body); ``None`` when the SDK's
    encoder class is not the one known or a probe body encodes otherwise."""
    if sdk_dumps is None:  # pragma: no cover - openai 2
        return None
    probe = {
        "s": 'naïve 🌦 \x01 \u2028 \\ "',
        "n": [1, 2.5, 1e16, 2**70, None, True, False, (1,)],
        "k": {1: 2, 2.5: 1, None: 0, False: 1},
        "at": datetime.datetime(2026, 1, 2, 3, 4, 5),
    }
    try:
        made = _sdk_json._CustomEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        same = made.encode(probe).encode() == sdk_dumps(probe)
    except Exception:  # pragma: no cover - an SDK whose encoder differs
        return None
    return made.encode if same else None


_encode = _sdk_encoder()

_SYSTEM_ROLES = ("system", "developer")
_PLACEHOLDER = f"bot-toolsearch-{secrets.token_hex(16)}"
"""Stands for the carried text while the rest of a body is encoded: random per process, so
no body holds it by chance (one that does is encoded whole)."""
_QUOTED = f'"{_PLACEHOLDER}"'.encode()
_CACHE_SIZE = 32
"""Distinct texts kept encoded (the protocol keeps as many directory messages)."""
_KNOWN: dict[str, EncodedText] = {}


class EncodedText(str):
    """A ``str`` carrying ``json``: what the SDK's encoder makes of it, quotes included."""

    __slots__ = ("json",)
    json: bytes

    def __reduce__(self) -> tuple[type[str], tuple[str]]:
        """Pickled and copied as the plain ``str`` it equals (its ``json`` is only a cache)."""
        return (str, (str(self),))


def encoded_text(text: str) -> str:
    """``text`` as an `EncodedText`, encoded once for the last `_CACHE_SIZE` distinct texts;
    ``text`` itself when the SDK's encoder is missing or refuses it (a lone surrogate)."""
    hit = _KNOWN.get(text)
    if hit is not None:
        return hit
    if sdk_dumps is None or type(text) is not str:
        return text
    try:
        raw = sdk_dumps(text)
    except (ValueError, UnicodeError):
        return text
    made = EncodedText(text)
    made.json = raw
    if len(_KNOWN) >= _CACHE_SIZE:
        # Another thread may change it meanwhile: then nothing is dropped this time.
        with contextlib.suppress(StopIteration, RuntimeError):
            _KNOWN.pop(next(iter(_KNOWN)), None)
    _KNOWN[text] = made
    return made


def joined(head: str, text: str) -> str:
    """``head + text``, an `EncodedText` when ``text`` is one (only ``head`` encoded now)."""
    whole = head + text
    if sdk_dumps is None or not isinstance(text, EncodedText):
        return whole
    try:
        first = sdk_dumps(head)
    except (ValueError, UnicodeError):
        return whole
    made = EncodedText(whole)
    made.json = b"".join((first[:-1], text.json[1:]))
    return made


def dumps(body: Mapping[str, Any]) -> bytes:
    """``openapi_dumps(body)``, byte for byte, with a carried text spliced in rather than
    encoded again: the ``instructions``, or the content of one of the leading system
    messages (where a plan puts the directory)."""
    assert sdk_dumps is not None  # `bot_toolsearch._wrap.direct` calls only with it
    swapped = _swapped(body)
    if swapped is None:
        return sdk_dumps(body)
    rest, text = swapped
    try:
        out = sdk_dumps(rest) if _encode is None else _encode(rest).encode()
    except Exception:  # the body's own error, raised by encoding it whole
        return sdk_dumps(body)
    if out.count(_QUOTED) != 1:
        return sdk_dumps(body)
    return out.replace(_QUOTED, text.json, 1)


def _swapped(body: Mapping[str, Any]) -> tuple[dict[str, Any], EncodedText] | None:
    """``body`` with its carried text swapped for the placeholder, and that text."""
    if type(body) is not dict:
        return None
    instructions = body.get("instructions")
    if type(instructions) is EncodedText:
        return {**body, "instructions": _PLACEHOLDER}, instructions
    messages = body.get("messages")
    if type(messages) is not list:
        return None
    for at, message in enumerate(messages):
        if type(message) is not dict:
            return None
        content = message.get("content")
        if type(content) is EncodedText:
            copy = list(messages)
            copy[at] = {**message, "content": _PLACEHOLDER}
            return {**body, "messages": copy}, content
        if message.get("role") not in _SYSTEM_ROLES:
            return None
    return None
