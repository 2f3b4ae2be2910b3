"""Recovering tool calls that a model wrote as plain text instead of native tool calls.

The whole text (optionally inside one Markdown code fence) must be one envelope: JSON objects,
``{"tool_calls": [...]}``, ``<tool_call>``, ``<tool .../>``, ``<tool_execution>``,
``<function_calls>`` or ``<function=NAME>``. Anything else is a reply: loose text around an
envelope means the model was talking *about* a call, so it is not one. Only text that is clearly
an envelope but broken raises :class:`TextToolCallError`. Every scan is linear (plain ``str``
searches and regexes without nested quantifiers) and JSON nesting is bounded, so hostile text
can neither hang the parser nor blow the stack.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from .text_calls_json import TextToolCall, TextToolCallError, parse_json_objects
from .text_calls_markup import parse_markup

__all__ = [
    "MAX_TEXT_TOOL_CALLS",
    "TextToolCall",
    "TextToolCallError",
    "parse_text_tool_calls",
    "recover_text_calls",
]

logger = logging.getLogger("bot_toolsearch")

MAX_TEXT_TOOL_CALLS = 128
"""More recovered calls than this in one text is treated as malformed, not executed."""


def _unfence(text: str) -> str | None:
    """The body of a text that is exactly one Markdown code fence; None when it is not one."""
    fence = text[:3]
    newline = text.find("\n")
    if newline < 0 or "`" in text[3:newline] or not text.endswith(fence) or len(text) < 7:
        return None
    body = text[newline + 1 : -3]
    if fence in body:
        return None  # several fences, or a fence inside: prose with code, not an envelope
    return body.strip()


def _finish(calls: list[TextToolCall]) -> list[TextToolCall]:
    if len(calls) > MAX_TEXT_TOOL_CALLS:
        raise TextToolCallError(f"more than {MAX_TEXT_TOOL_CALLS} tool calls in one text")
    ids = [call.id for call in calls if call.id is not None]
    if len(ids) != len(set(ids)):
        raise TextToolCallError("duplicate tool call ids")
    return calls


def parse_text_tool_calls(text: str) -> list[TextToolCall]:
    """Recover the tool calls a model wrote as text.

    >>> parse_text_tool_calls('{"name": "end", "arguments": {}}')
    [TextToolCall(name='end', arguments={}, id=None)]
    >>> parse_text_tool_calls("Call the end tool when done.")
    []

    Args:
        text: the model's whole text content.

    Returns:
        The calls in order, or ``[]`` for plain prose (a reply, not an error), for JSON that
        is not shaped like a call, and for an envelope with loose text around it.

    Raises:
        TextToolCallError: the text is clearly an envelope but malformed (bad JSON, wrong
            keys, an unclosed tag, a repeated parameter, duplicate ids, too many calls).
    """
    if not isinstance(text, str):
        raise TextToolCallError(f"expected text, got {type(text).__name__}")
    body = text.strip()
    if body.startswith(("```", "~~~")):
        unfenced = _unfence(body)
        if unfenced is None:
            return []
        body = unfenced
    parser: Callable[[str], list[TextToolCall]]
    if body.startswith("{"):
        parser = parse_json_objects
    elif body.startswith("<"):
        parser = parse_markup
    else:
        return []
    return _finish(parser(body))


def recover_text_calls(text: str) -> list[TextToolCall]:
    """The tool calls a model wrote as text; ``[]`` for prose and for a malformed envelope
    (logged: a reply, never an error)."""
    try:
        return parse_text_tool_calls(text)
    except TextToolCallError as exc:
        logger.info("text looks like a malformed tool call; treating it as a reply: %s", exc)
        return []
