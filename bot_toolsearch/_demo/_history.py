"""The offline planner's view of one ask: the user's text and the tool calls made since.

A follow-up that leans on the previous user message ("and in Paris?") is read as that message
with the new place put in, the way a model reads a conversation.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from bot_toolsearch._scripted import ModelRequest, ToolCall
from bot_toolsearch._scripted.request import content_text

__all__ = ["CALL_TOOL", "Episode", "Step", "read_episode", "resolve_follow_up"]

_FOLLOW_UP_OPENINGS = ("and what about ", "and how about ", "what about ", "how about ", "and ")
_PREPOSITIONS = ("in", "for", "at", "to", "from", "on")
_END_PUNCTUATION = "?？.!。！ \t\n"  # noqa: RUF001 (full-width punctuation is the point)


def resolve_follow_up(text: str, earlier: str) -> str:
    """``text`` as a full request when it only makes sense after ``earlier``.

    >>> resolve_follow_up("and in Paris?", "What is the current local time in Tokyo?")
    'What is the current local time in Paris?'
    >>> resolve_follow_up("Convert 10 km to miles", "What time is it in Tokyo?")
    'Convert 10 km to miles'
    """
    body = text.strip().rstrip(_END_PUNCTUATION)
    lower = body.lower()
    opening = next((o for o in _FOLLOW_UP_OPENINGS if lower.startswith(o)), None)
    base = earlier.strip()
    if opening is None or not base:
        return text
    rest = body[len(opening) :].strip()
    first, _, tail = rest.partition(" ")
    words = base.rstrip(_END_PUNCTUATION).split(" ")
    folded = [w.lower() for w in words]
    preposition = first.lower() if first.lower() in _PREPOSITIONS and tail else None
    candidates = [preposition] if preposition else list(_PREPOSITIONS)
    obj = tail.strip() if preposition else rest
    # The last place the earlier message used this preposition is what the follow-up changes.
    at = max((i for i, w in enumerate(folded) if w in candidates), default=-1)
    if at < 0 or not obj:
        return text
    ending = base[len(base.rstrip(_END_PUNCTUATION)) :]
    return " ".join([*words[: at + 1], obj]) + ending


@dataclass(slots=True)
class Step:
    """One tool call the planner made, and its result once the host sent it."""

    call_id: str
    """The call id."""
    name: str
    """Canonical tool name (wire dots decoded)."""
    arguments: dict[str, Any]
    """Parsed arguments."""
    output: str | None = None
    """The tool result text; ``None`` until it arrives."""


@dataclass(slots=True)
class Episode:
    """One ask as the planner sees it."""

    user_text: str = ""
    """The latest user message (a follow-up completed from the one before it)."""
    steps: list[Step] = field(default_factory=list)
    """Calls since that message, in order."""

    @property
    def searched(self) -> bool:
        """Whether ``tool_search`` was called in this ask."""
        return any(s.name == "tool_search" for s in self.steps)

    def copy(self) -> Episode:
        """An independent copy (steps are mutable)."""
        return Episode(self.user_text, [replace(s) for s in self.steps])

    def extended(self, call: ToolCall, dot_delimiter: str) -> Episode:
        """A copy with ``call`` appended as a pending step."""
        grown = self.copy()
        arguments = call.arguments if isinstance(call.arguments, dict) else {}
        grown.steps.append(_step(call.id or "", call.name, dict(arguments), dot_delimiter))
        return grown


CALL_TOOL = "call_tool"
"""The virtual tool of bridge loading: ``call_tool(name, arguments)`` calls ``name``."""


def _step(call_id: str, wire: str, arguments: dict[str, Any], dot_delimiter: str) -> Step:
    """One call as a step; a ``call_tool`` call is the step of the tool it names."""
    if wire == CALL_TOOL and isinstance(arguments.get("name"), str):
        return Step(
            call_id,
            arguments["name"].replace(dot_delimiter, "."),
            _arguments(arguments.get("arguments", {})),
        )
    return Step(call_id, wire.replace(dot_delimiter, "."), arguments)


def _arguments(raw: object) -> dict[str, Any]:
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def read_episode(
    request: ModelRequest, memory: Mapping[str, Episode], dot_delimiter: str
) -> Episode:
    """Rebuild the current ask from the request, continuing from ``memory`` when it is partial.

    Chat Completions requests carry the full history. Responses requests that continue a
    response carry only the new items (tool outputs), so the ask is found again by call id.
    """
    episode = Episode()
    for item in request.messages:
        role, kind = item.get("role"), item.get("type")
        if role == "user" and kind in (None, "message"):
            # Earlier turns of a conversation come first; each new message may lean on them.
            episode = Episode(
                resolve_follow_up(content_text(item.get("content")), episode.user_text)
            )
        elif role == "assistant" and isinstance(item.get("tool_calls"), list):
            for call in item["tool_calls"]:
                function = call.get("function") or {}
                episode.steps.append(
                    _step(
                        str(call.get("id")),
                        str(function.get("name", "")),
                        _arguments(function.get("arguments")),
                        dot_delimiter,
                    )
                )
        elif kind == "function_call":
            episode.steps.append(
                _step(
                    str(item.get("call_id")),
                    str(item.get("name", "")),
                    _arguments(item.get("arguments")),
                    dot_delimiter,
                )
            )
        elif role == "tool" or kind == "function_call_output":
            call_id = str(item.get("tool_call_id") if role == "tool" else item.get("call_id"))
            output = content_text(item.get("content") if role == "tool" else item.get("output"))
            step = next((s for s in episode.steps if s.call_id == call_id), None)
            if step is None and call_id in memory:
                episode = memory[call_id].copy()
                step = next((s for s in episode.steps if s.call_id == call_id), None)
            if step is not None:
                step.output = output
    return episode
