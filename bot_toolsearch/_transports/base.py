"""The seam between the transport and its API modes: the values both sides share.

A leaf, as ``httpx/_transports/base.py`` is: the modes (``chat``, ``responses``) import it, the
dispatcher (``transport``) imports the modes, and nothing here imports either.
"""

from __future__ import annotations

import json
import logging
import math
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import openai

from bot_toolsearch._core.unicode import well_formed
from bot_toolsearch._errors import ToolSearchError

__all__ = [
    "ModelReply",
    "ModelReplyError",
    "ModelToolCall",
    "RawBody",
    "RawReply",
    "ToolDeclaration",
    "TransportState",
    "WireMessages",
    "read_body",
    "read_call",
    "reply_text",
    "token_count",
]


logger = logging.getLogger("bot_toolsearch")

EXCERPT_CHARS = 500
"""How much of an unusable reply body `ModelReplyError` keeps."""


class ModelReplyError(openai.APIError, ToolSearchError):
    """A model endpoint answered with something the bot cannot use.

    The body was not JSON, not an object, or a field the bot reads had the wrong type
    (``choices[0].message`` null, ``content`` a number, ...). It is an ``openai.APIError``, so
    ``except openai.APIError`` around ``Bot.ask`` catches every failed model request, and a
    `ToolSearchError`. The ask that got it is over; the next ask starts afresh.

    Attributes:
        reason: what is wrong with the reply.
        excerpt: the start of the raw body (at most 500 characters).
        request: the HTTP request (as on every ``openai.APIError``).
    """

    def __init__(self, reason: str, request: Any, raw: str) -> None:
        excerpt = well_formed(raw[:EXCERPT_CHARS])
        super().__init__(
            f"unusable model reply: {reason}; the body starts with {excerpt!r}", request, body=None
        )
        self.reason = reason
        self.excerpt = excerpt


@dataclass(frozen=True, slots=True)
class RawBody:
    """A reply body decoded as a JSON object, with what an error about it needs."""

    value: dict[str, Any]
    """The decoded object."""
    text: str
    """The raw body text."""
    request: Any
    """The HTTP request."""

    def error(self, reason: str) -> ModelReplyError:
        """The exception for an unusable field of this body."""
        return ModelReplyError(reason, self.request, self.text)


def read_body(response: Any) -> RawBody:
    """The JSON object of a ``with_raw_response`` reply.

    Raises:
        ModelReplyError: the body is not JSON, or not a JSON object.
    """
    http = response.http_response
    text = bytes(http.content).decode("utf-8", "replace")
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        raise ModelReplyError("the body is not valid JSON", http.request, text) from None
    if not isinstance(value, dict):
        kind = type(value).__name__
        raise ModelReplyError(f"the body is a JSON {kind}, not an object", http.request, text)
    return RawBody(value, text, http.request)


def reply_text(value: object, body: RawBody, where: str) -> str | None:
    """A reply's text content: a string, or a list of text parts; None when absent.

    Raises:
        ModelReplyError: the content is neither.
    """
    if value is None:
        return None
    if isinstance(value, str):
        return well_formed(value)
    if isinstance(value, list):
        texts: list[str] = []
        for part in value:
            text = part.get("text") if isinstance(part, dict) else None
            if isinstance(text, str):
                texts.append(text)
            elif not isinstance(part, dict):
                raise body.error(f"{where} holds a {type(part).__name__}, not a content part")
        return well_formed("".join(texts)) if texts else None
    raise body.error(f"{where} is a {type(value).__name__}, not text")


def read_call(
    body: RawBody, where: str, call_id: object, name: object, arguments: object
) -> tuple[str, str, str]:
    """``(id, wire name, raw arguments)`` of one tool call as an endpoint sent it.

    Arguments sent as a JSON object (some providers do) are accepted as that object's JSON
    text; a missing id gets a fresh one.

    Raises:
        ModelReplyError: the name is not a string.
    """
    if not isinstance(name, str):
        raise body.error(f"{where}: the tool name is a {type(name).__name__}, not a string")
    if arguments is None:
        raw = ""
    elif isinstance(arguments, str):
        raw = arguments
    else:
        raw = json.dumps(arguments, ensure_ascii=False)
    if not isinstance(call_id, str) or not call_id:
        call_id = f"call_{secrets.token_hex(12)}"
    return call_id, well_formed(name), well_formed(raw)


def token_count(value: object) -> int:
    """A ``usage`` count; anything but a non-negative number counts as 0 (logged)."""
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, float) and math.isfinite(value) and value >= 0:
        return int(value)
    logger.warning("the model endpoint sent a usage count that is no number: %r", value)
    return 0


@dataclass(frozen=True, slots=True)
class ModelToolCall:
    """One native tool call of a reply."""

    id: str
    """The call id."""
    name: str
    """Canonical name, or the wire name as sent when it decodes to none."""
    wire_name: str
    """The name exactly as the model sent it."""
    arguments: str
    """The raw JSON arguments string."""


@dataclass(frozen=True, slots=True)
class RawReply:
    """A reply as an API mode reads it, before names are decoded."""

    text: str | None
    calls: tuple[tuple[str, str, str], ...]
    """``(id, wire_name, arguments)`` per call."""
    prompt_tokens: int = 0
    cached_tokens: int = 0
    response_id: str | None = None


@dataclass(frozen=True, slots=True)
class ModelReply:
    """A model reply with canonical names."""

    text: str | None
    """The text content, if any."""
    tool_calls: tuple[ModelToolCall, ...]
    """Native tool calls, in order."""
    prompt_tokens: int = 0
    """``usage`` prompt (input) tokens."""
    cached_tokens: int = 0
    """``usage`` cached prompt tokens."""
    response_id: str | None = None
    """Responses: the response id."""


@dataclass(frozen=True, slots=True)
class ToolDeclaration:
    """Tools loaded mid-ask, declared to a Responses model without touching ``tools`` (the
    cached prefix): one ``additional_tools`` input item. Chat Completions never sees one.

    A typed value beside the history, never a message in it: the Responses transport renders
    it right after the ``function_call_output`` of ``after``, or, with ``after`` None (tools
    kept loaded from earlier asks), right before the ask's user message.
    """

    tools: tuple[Mapping[str, Any], ...]
    """The declared tools' function schemas (Chat Completions shape; canonical names until
    the transport encodes them)."""
    after: str | None = None
    """The call id whose result it follows; None: before the ask's message."""


@dataclass(slots=True)
class TransportState:
    """Per-ask transport state (the Responses chain); a fresh one per ask."""

    previous_response_id: str | None = None
    """The id the next Responses request continues from."""
    covered: int = 0
    """How many conversation (non-system) messages the server already holds."""
    stateless: bool = False
    """Resend the full history every round (fallback, forced, or after text-recovered calls)."""
    stateless_replays: int = field(default=0)
    """How many times a stateful request was resent statelessly after the HTTP 400."""

    def force_stateless(self) -> None:
        """Stay stateless for the rest of the ask (the server cannot know our call ids)."""
        self.stateless = True
        self.previous_response_id = None


WireMessages = list[dict[str, Any]]
