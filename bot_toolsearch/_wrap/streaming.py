"""``stream=True`` for Chat Completions: hidden rounds consumed, one well-formed stream out.

The Chat dialect of the shared stream driver (`bot_toolsearch._wrap.stream_driver`, which runs
the rounds, sync and async). Each upstream round is streamed; text deltas reach the caller as
they arrive, unless the text starts like a tool-call envelope (``{``, ``<``, a code fence),
which is held back until the round ends. Tool-call deltas are always held: only at the end of a
round is it known whether the wrapper answers them. The round is then assembled into one
completion and read by the same `ChatPlan` as a non-streamed call, so both modes decide alike. A
hidden round emits nothing more; the final round emits the caller's tool calls, one
``finish_reason``, and, when the caller asked for ``stream_options.include_usage``, one usage
chunk summed over every round. Every chunk carries the first upstream chunk's id. A stream cut
before its ``finish_reason`` raises the SDK's ``APIConnectionError``.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from typing import Any

from openai.types.chat import ChatCompletion, ChatCompletionChunk, ChatCompletionMessage
from openai.types.chat.chat_completion import Choice
from openai.types.chat.chat_completion_chunk import Choice as ChunkChoice
from openai.types.chat.chat_completion_chunk import (
    ChoiceDelta,
    ChoiceDeltaToolCall,
    ChoiceDeltaToolCallFunction,
)
from openai.types.chat.chat_completion_message_function_tool_call import (
    ChatCompletionMessageFunctionToolCall,
    Function,
)

from .chat import ChatPlan
from .plan import busy, mapping_get
from .replies import iterate_async, iterate_sync, stream_cut, stream_request
from .stream_driver import AsyncRoundStream, SyncRoundStream

__all__ = ["chat_stream_async", "chat_stream_sync"]

_ENVELOPE_STARTS = ("{", "<", "`", "~")


class _StreamState:
    """What the caller's stream carries across rounds."""

    def __init__(self, include_usage: bool) -> None:
        self.include_usage = include_usage
        self.id: str | None = None
        self.role_sent = False


class _Round:
    """One upstream round of a streamed call (sans-IO)."""

    def __init__(self, state: _StreamState, upstream: Any = None) -> None:
        self._state = state
        self._upstream = upstream
        self._text: list[str] = []
        self._length = 0  # characters of text received
        self._shown = 0  # characters of text already emitted
        self._pending: list[str] = []  # received, not yet emitted (while undecided or holding)
        self._decided = False
        self._holding = False
        self._calls: dict[int, list[str]] = {}  # index -> [id, name, arguments]
        self._finish: str | None = None
        self._usage: Any = None
        self._template: ChatCompletionChunk | None = None

    def feed(self, chunk: ChatCompletionChunk) -> list[ChatCompletionChunk]:
        """The chunks to emit now for one upstream chunk."""
        state = self._state
        if state.id is None and isinstance(chunk.id, str):
            state.id = chunk.id
        if self._template is None:
            self._template = chunk
        if chunk.usage is not None:
            self._usage = chunk.usage
        if not chunk.choices:
            return []
        choice = chunk.choices[0]
        delta = choice.delta
        if choice.finish_reason is not None:
            self._finish = choice.finish_reason
        for call in delta.tool_calls or ():
            entry = self._calls.setdefault(call.index, ["", "", ""])
            if call.id:
                entry[0] = call.id
            if call.function is not None:
                entry[1] += call.function.name or ""
                entry[2] += call.function.arguments or ""
        out: list[ChatCompletionChunk] = []
        if not state.role_sent:
            state.role_sent = True
            out.append(self._chunk(ChoiceDelta(role="assistant", content="")))
        if delta.content:
            # Each delta is handled in time proportional to its own length (never the whole
            # text so far): a reply of many small deltas stays linear.
            self._text.append(delta.content)
            self._length += len(delta.content)
            self._pending.append(delta.content)
            if not self._decided and delta.content.strip():
                self._decided = True
                start = "".join(self._pending).lstrip()
                self._holding = start.startswith(_ENVELOPE_STARTS)
            if self._decided and not self._holding and not self._calls:
                out.append(self._chunk(ChoiceDelta(content="".join(self._pending))))
                self._pending = []
                self._shown = self._length
        return out

    stopped = False
    """A Chat stream has no error event to pass on: an upstream failure raises."""

    def whole(self) -> ChatCompletion:
        """The round as one completion, for `ChatPlan.feed`.

        Raises:
            openai.APIConnectionError: the upstream stream ended without a ``finish_reason``.
        """
        if self._finish is None:
            raise stream_cut(stream_request(self._upstream))
        text = "".join(self._text)
        calls: list[Any] = [
            ChatCompletionMessageFunctionToolCall(
                id=call_id or f"call_{secrets.token_hex(12)}",
                type="function",
                function=Function(name=name, arguments=arguments),
            )
            for call_id, name, arguments in (self._calls[i] for i in sorted(self._calls))
        ]
        finish = self._finish if self._finish is not None else "stop"
        message = ChatCompletionMessage(
            role="assistant", content=text or None, tool_calls=calls or None
        )
        template = self._template
        return ChatCompletion(
            id=self._state.id or "chatcmpl-wrapped",
            object="chat.completion",
            created=_created(template),
            model=_model(template),
            choices=[Choice(index=0, message=message, finish_reason=finish)],  # type: ignore[arg-type]
            usage=self._usage,
        )

    def ended(self) -> list[ChatCompletionChunk]:  # pragma: no cover - `whole` raises first
        return []

    def finish(self, final: ChatCompletion | None) -> list[ChatCompletionChunk]:
        """The caller's last chunks: held text, tool calls, finish reason, usage (none after
        a hidden round)."""
        out: list[ChatCompletionChunk] = []
        if final is None:
            return out
        choice = final.choices[0] if final.choices else None
        message = choice.message if choice is not None else None
        content = message.content if message is not None else None
        if content and len(content) > self._shown:
            out.append(self._chunk(ChoiceDelta(content=content[self._shown :])))
        for index, call in enumerate(message.tool_calls or () if message is not None else ()):
            function = mapping_get(call, "function")
            delta = ChoiceDeltaToolCall(
                index=index,
                id=call.id,
                type="function",
                function=ChoiceDeltaToolCallFunction(
                    name=mapping_get(function, "name"),
                    arguments=mapping_get(function, "arguments"),
                ),
            )
            out.append(self._chunk(ChoiceDelta(tool_calls=[delta])))
        reason = choice.finish_reason if choice is not None else "stop"
        out.append(self._chunk(ChoiceDelta(), finish_reason=reason))
        if self._state.include_usage:
            usage_chunk = self._chunk(None)
            usage_chunk.usage = final.usage
            out.append(usage_chunk)
        return out

    def _chunk(
        self, delta: ChoiceDelta | None, finish_reason: str | None = None
    ) -> ChatCompletionChunk:
        template = self._template
        choices = (
            [ChunkChoice(index=0, delta=delta, finish_reason=finish_reason)]  # type: ignore[arg-type]
            if delta is not None
            else []
        )
        return ChatCompletionChunk(
            id=self._state.id or "chatcmpl-wrapped",
            object="chat.completion.chunk",
            created=_created(template),
            model=_model(template),
            choices=choices,
            system_fingerprint=_fingerprint(template),
        )


def _created(template: ChatCompletionChunk | None) -> int:
    created: object = template.created if template is not None else None
    return created if isinstance(created, int) and not isinstance(created, bool) else 0


def _model(template: ChatCompletionChunk | None) -> str:
    model: object = template.model if template is not None else None
    return model if isinstance(model, str) else ""


def _fingerprint(template: ChatCompletionChunk | None) -> str | None:
    value: object = template.system_fingerprint if template is not None else None
    return value if isinstance(value, str) else None


def _include_usage(plan: ChatPlan) -> bool:
    options = plan.stream_options
    return bool(mapping_get(options, "include_usage")) if options is not None else False


class _ChatRounds:
    """The Chat Completions dialect of the stream driver: one `_Round` per upstream stream."""

    def __init__(self, plan: ChatPlan) -> None:
        self.plan = plan
        self._state = _StreamState(_include_usage(plan))

    def round(self, upstream: Any) -> _Round:
        return _Round(self._state, upstream)

    def busy(self, reply: Any) -> bool:
        return busy(reply)


async def chat_stream_async(create: Callable[..., Awaitable[Any]], plan: ChatPlan) -> Any:
    """The caller's stream of an async ``create(stream=True)`` call; the first round is sent
    here (an upstream error raises here, as from the SDK)."""
    rounds = _ChatRounds(plan)
    return await AsyncRoundStream.start(rounds, lambda: create(**plan.request()), iterate_async)


def chat_stream_sync(create: Callable[..., Any], plan: ChatPlan) -> Any:
    """The caller's stream of a sync ``create(stream=True)`` call; the first round is sent
    here (an upstream error raises here, as from the SDK)."""
    return SyncRoundStream.start(_ChatRounds(plan), lambda: create(**plan.request()), iterate_sync)
