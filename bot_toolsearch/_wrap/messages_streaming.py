"""Anthropic's Messages event stream under tool search: the Messages dialect of the stream driver.

Each upstream round is a Messages event stream (``"stream": true``), read as JSON objects
(`bot_toolsearch._transports.messages_events`). The caller's stream is one message: the first
round's ``message_start`` (its id is the stream's), then each round's blocks renumbered from 0
across the whole stream, then one ``message_delta`` (the last round's ``stop_reason``, usage
summed over every round) and ``message_stop``. A text or thinking block streams through as its
deltas arrive, so the final round's text reaches the caller as the upstream sends it; a
``tool_use`` block is held (only at the end of a round is it known whether the engine answers
it), and so is every block after a held one, so the caller's blocks stay in the upstream's
order. When the round ends, `MessagesPlan.feed` reads it whole, as a plain call's reply, and
says what the caller is shown of it (`MessagesPlan.shown`): the held blocks it keeps follow
as whole blocks, a search as its ``server_tool_use`` and ``tool_search_tool_result`` blocks.
So the streamed message is the plain call's answer. ``ping`` events pass through; an
upstream ``error`` event is passed on and ends the stream, and a round that ends before its
``message_stop`` ends it with an ``error`` event of our own.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from bot_toolsearch._transports.messages_events import block_events, error_data

from .messages import MessagesPlan

__all__ = ["MessagesRounds"]

_LIVE = frozenset({"text", "thinking", "redacted_thinking"})
"""Blocks that stream through as they come: the plan never answers them."""
_FIELDS = {"text_delta": "text", "thinking_delta": "thinking", "input_json_delta": "input"}
"""A delta's type -> the block field its pieces make up."""


class _Caller:
    """What the caller's stream carries across rounds."""

    def __init__(self) -> None:
        self.started = False
        self.blocks = 0  # the caller's next block index

    def place(self) -> int:
        self.blocks += 1
        return self.blocks - 1


class MessagesRounds:
    """The Messages dialect of the stream driver (`bot_toolsearch._wrap.stream_driver`): one
    `_Round` per upstream event stream, events in and out as JSON objects."""

    def __init__(self, plan: MessagesPlan) -> None:
        self.plan = plan
        self._caller = _Caller()

    def round(self, upstream: Any) -> _Round:  # noqa: ARG002 - the events carry all
        return _Round(self.plan, self._caller)

    def busy(self, reply: Any) -> bool:  # noqa: ARG002 - JSON objects: `plan.offload` says
        return False


class _Round:
    """One upstream round of a streamed Messages call (sans-IO)."""

    def __init__(self, plan: MessagesPlan, caller: _Caller) -> None:
        self._plan = plan
        self._caller = caller
        self._message: dict[str, Any] | None = None
        self._blocks: dict[int, dict[str, Any]] = {}  # upstream index -> the block so far
        self._parts: dict[tuple[int, str], list[str]] = {}
        """(upstream index, field) -> the deltas of a block's text, thinking or tool input
        (``partial_json``), joined once at the end: a reply of many small deltas stays linear."""
        self._cited: dict[int, list[Any]] = {}  # upstream index -> a text block's citations
        self._live: dict[int, int] = {}  # upstream index -> caller index, streamed through
        self._holding = False
        self._delta: dict[str, Any] = {}
        self._usage: dict[str, Any] = {}
        self._stopped = False
        self._ended = False

    @property
    def stopped(self) -> bool:
        """Whether an upstream ``error`` event was passed on: it ends the stream."""
        return self._stopped

    def feed(self, event: Mapping[str, Any]) -> list[Any]:
        """The caller's events now, for one upstream event."""
        kind = event.get("type")
        if kind == "message_start":
            return self._start(event)
        if kind == "ping":
            return [dict(event)]
        if kind == "error":
            self._stopped = True
            return [dict(event)]
        if kind == "message_delta":
            delta, usage = event.get("delta"), event.get("usage")
            self._delta.update(delta if isinstance(delta, Mapping) else {})
            given = usage.items() if isinstance(usage, Mapping) else ()
            self._usage.update((k, v) for k, v in given if v is not None)
            return []
        if kind == "message_stop":
            self._ended = True
            return []
        index = event.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            return []
        if kind == "content_block_start":
            return self._open(index, event)
        if kind == "content_block_delta":
            self._add(index, event.get("delta"))
        elif kind != "content_block_stop":
            return []
        at = self._live.get(index)
        return [] if at is None else [{**event, "index": at}]

    def _start(self, event: Mapping[str, Any]) -> list[Any]:
        message = event.get("message")
        self._message = dict(message) if isinstance(message, Mapping) else {}
        usage = self._message.get("usage")
        self._usage = dict(usage) if isinstance(usage, Mapping) else {}
        if self._caller.started:
            return []
        self._caller.started = True
        return [dict(event)]

    def _open(self, index: int, event: Mapping[str, Any]) -> list[Any]:
        block = event.get("content_block")
        block = dict(block) if isinstance(block, Mapping) else {}
        self._blocks[index] = block
        if self._holding or block.get("type") not in _LIVE:
            self._holding = True
            return []
        self._live[index] = at = self._caller.place()
        return [{**event, "index": at}]

    def _add(self, index: int, delta: object) -> None:
        block = self._blocks.get(index)
        if block is None or not isinstance(delta, Mapping):
            return
        kind = delta.get("type")
        field = _FIELDS.get(str(kind))
        if field is not None:
            value = delta.get("partial_json" if field == "input" else field)
            parts = self._parts.get((index, field))
            if parts is None:
                start = block.get(field) if field != "input" else None
                parts = self._parts[index, field] = [start] if isinstance(start, str) else []
            parts.append(str(value or ""))
        elif kind == "signature_delta":
            block["signature"] = delta.get("signature")
        elif kind == "citations_delta":
            cited = self._cited.get(index)
            if cited is None:
                given = block.get("citations")
                cited = self._cited[index] = list(given) if isinstance(given, list) else []
            cited.append(delta.get("citation"))

    def whole(self) -> dict[str, Any] | None:
        """The round as one message, for `MessagesPlan.feed`; ``None`` when the upstream
        stream ended before its ``message_stop``."""
        if self._message is None or not self._ended:
            return None
        for (index, field), parts in self._parts.items():
            joined = "".join(parts)
            self._blocks[index][field] = _input(joined) if field == "input" else joined
        for index, cited in self._cited.items():
            self._blocks[index]["citations"] = cited
        content = [self._blocks[index] for index in sorted(self._blocks)]
        return {**self._message, **self._delta, "content": content, "usage": self._usage}

    def ended(self) -> list[Any]:
        """The ``error`` event of a stream that ended before its ``message_stop``."""
        message = "the upstream stream ended before its message_stop event"
        return [error_data("api_error", message)]

    def finish(self, final: Mapping[str, Any] | None) -> list[Any]:
        """The round's held blocks the plan kept, whole; after the last round the closing
        ``message_delta`` and ``message_stop``."""
        out: list[Any] = []
        for block in self._plan.shown[len(self._live) :]:
            out.extend(block_events(self._caller.place(), block))
        if final is None:
            return out
        delta = {key: final.get(key) for key in ("stop_reason", "stop_sequence")}
        out.append({"type": "message_delta", "delta": delta, "usage": final.get("usage") or {}})
        out.append({"type": "message_stop"})
        return out


def _input(raw: str) -> Any:
    """A tool's streamed input JSON; ``{}`` for none, the text as it came when it is not
    JSON (the plan reads the call's arguments as it would read a plain reply's)."""
    if not raw.strip():
        return {}
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return raw
