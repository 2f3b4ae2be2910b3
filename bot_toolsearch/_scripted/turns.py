"""The scripted turns: what the fake model answers to one request."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

__all__ = [
    "ErrorTurn",
    "ScriptEntry",
    "TextTurn",
    "ToolCall",
    "ToolCallsTurn",
    "Turn",
    "Usage",
    "as_turn",
    "call",
    "error",
    "text",
]


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts to report instead of the server's own estimate."""

    prompt_tokens: int
    """Chat ``prompt_tokens`` / Responses ``input_tokens``."""
    completion_tokens: int = 1
    """Chat ``completion_tokens`` / Responses ``output_tokens``."""
    cached_tokens: int = 0
    """``prompt_tokens_details.cached_tokens`` / ``input_tokens_details.cached_tokens``."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One function call the fake model makes.

    Args:
        name: the function name, sent as is (use the wire spelling the bot expects).
        arguments: a dict is JSON-encoded; a string is sent verbatim, so a test can send
            malformed JSON.
        id: the call id; ``None`` lets the server number it (``call_1``, ``call_2``, ...).
    """

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None

    def arguments_json(self) -> str:
        """The raw arguments string as it goes on the wire."""
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class Turn:
    """Base class of everything the server can answer with."""

    usage: Usage | None = field(default=None, kw_only=True)
    """Reported token usage; ``None`` uses the server's estimate."""


@dataclass(frozen=True, slots=True)
class ToolCallsTurn(Turn):
    """A response with one or more tool calls (and optional text before them)."""

    calls: tuple[ToolCall, ...]
    """The calls, in order; several calls form one parallel batch."""
    text: str = ""
    """Assistant text sent alongside the calls (chat ``content``; a Responses message item)."""

    def __post_init__(self) -> None:
        calls = tuple(self.calls)
        if not calls or not all(isinstance(c, ToolCall) for c in calls):
            raise ValueError("ToolCallsTurn needs at least one ToolCall; use text() for prose")
        object.__setattr__(self, "calls", calls)


@dataclass(frozen=True, slots=True)
class TextTurn(Turn):
    """A plain assistant answer without tool calls (``finish_reason == "stop"``)."""

    text: str


@dataclass(frozen=True, slots=True)
class ErrorTurn(Turn):
    """An HTTP error answer with an OpenAI-shaped ``{"error": {...}}`` body."""

    status: int
    """HTTP status code."""
    message: str
    """``error.message``."""
    param: str | None = None
    """``error.param``."""
    code: str | None = None
    """``error.code``."""
    type: str = "invalid_request_error"
    """``error.type``."""
    retry: bool = False
    """Whether the SDK may retry it; ``False`` sends ``x-should-retry: false`` so a client with
    ``max_retries > 0`` does not silently consume the next turn."""

    def __post_init__(self) -> None:
        if not 400 <= self.status <= 599:
            raise ValueError(f"error status must be 4xx or 5xx, got {self.status}")

    def body(self) -> dict[str, Any]:
        """The JSON error body."""
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }


ScriptEntry: TypeAlias = Turn | ToolCall | Sequence[ToolCall]
"""What ``script()`` and a responder accept: a turn, one call, or a list of calls."""


def as_turn(entry: ScriptEntry) -> Turn:
    """Normalise a script entry to a `Turn`.

    Raises:
        TypeError: the entry is none of the accepted shapes.
    """
    if isinstance(entry, Turn):
        return entry
    if isinstance(entry, ToolCall):
        return ToolCallsTurn((entry,))
    if isinstance(entry, list | tuple) and all(isinstance(c, ToolCall) for c in entry):
        return ToolCallsTurn(tuple(entry))
    raise TypeError(
        f"a script entry must be a Turn, a ToolCall or a list of ToolCalls, got {entry!r}"
    )


def call(name: str, /, *, id: str | None = None, **arguments: Any) -> ToolCall:
    """A tool call with keyword arguments as its JSON arguments.

    >>> call("tool_search", query="select:weather.forecast").arguments_json()
    '{"query":"select:weather.forecast"}'

    An argument literally named ``id`` needs ``ToolCall(name, {"id": ...})``.
    """
    return ToolCall(name, arguments, id)


def text(content: str, *, usage: Usage | None = None) -> TextTurn:
    """A plain text answer."""
    return TextTurn(content, usage=usage)


def error(
    status: int,
    message: str,
    *,
    param: str | None = None,
    code: str | None = None,
    type: str = "invalid_request_error",
    retry: bool = False,
) -> ErrorTurn:
    """An OpenAI-shaped HTTP error answer.

    >>> error(400, "No tool call found for function call output with call_id call_1.",
    ...       param="input").body()["error"]["param"]
    'input'
    """
    return ErrorTurn(status, message, param, code, type, retry)
