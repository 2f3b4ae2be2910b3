"""``stream=True`` for Chat Completions: hidden rounds consumed, one well-formed stream out.

Each upstream round is streamed; text deltas reach the caller as they arrive, unless the text
starts like a tool-call envelope (``{``, ``<``, a code fence), which is held back until the
round ends. Tool-call deltas are always held: only at the end of a round is it known whether
the wrapper answers them. The round is then assembled into one completion and read by the same
`ChatPlan` as a non-streamed call, so both modes decide alike. A hidden round emits nothing
more; the final round emits the caller's tool calls, one ``finish_reason``, and, when the
caller asked for ``stream_options.include_usage``, one usage chunk summed over every round.
Every chunk carries the first upstream chunk's id.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from types import TracebackType
from typing import Any, Self

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

from bot_toolsearch._services.threads import off_loop

from .chat import ChatPlan
from .plan import mapping_get
from .replies import iterate_async, iterate_sync, stream_cut, stream_request
from .surface import AsyncStreamResponse, SyncStreamResponse

__all__ = ["AsyncChatStream", "SyncChatStream"]

_ENVELOPE_STARTS = ("{", "<", "`", "~")


class _StreamState:
    """What the caller's stream carries across rounds."""

    def __init__(self, include_usage: bool) -> None:
        self.include_usage = include_usage
        self.id: str | None = None
        self.role_sent = False


class _Round:
    """One upstream round of a streamed call (sans-IO)."""

    def __init__(self, state: _StreamState) -> None:
        self._state = state
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

    @property
    def finished(self) -> bool:
        """Whether the upstream sent a ``finish_reason`` (else the stream was cut)."""
        return self._finish is not None

    def completion(self) -> ChatCompletion:
        """The round as one completion, for `ChatPlan.feed`."""
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

    def finish(self, final: ChatCompletion) -> list[ChatCompletionChunk]:
        """The caller's last chunks: held text, tool calls, finish reason, usage."""
        out: list[ChatCompletionChunk] = []
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


class AsyncChatStream:
    """The caller's stream of a ``create(stream=True)`` call (async iterator, context manager)."""

    def __init__(self, create: Callable[..., Awaitable[Any]], plan: ChatPlan, first: Any) -> None:
        self._create = create
        self._plan = plan
        self._upstream = first
        self._iterator = self._run()

    @classmethod
    async def start(cls, create: Callable[..., Awaitable[Any]], plan: ChatPlan) -> Self:
        """Send the first round (an upstream error raises here, as from the SDK)."""
        return cls(create, plan, await create(**plan.request()))

    @property
    def response(self) -> Any:
        """The HTTP response of the current upstream round; closing it closes the stream."""
        return AsyncStreamResponse(self, self.close)

    @property
    def upstream_response(self) -> Any:
        """The HTTP response of the current upstream round."""
        return self._upstream.response

    async def _run(self) -> AsyncIterator[ChatCompletionChunk]:
        state = _StreamState(_include_usage(self._plan))
        while True:
            round_ = _Round(state)
            async for chunk in iterate_async(self._upstream):
                for out in round_.feed(chunk):
                    yield out
            if not round_.finished:
                raise stream_cut(stream_request(self._upstream))
            final = await off_loop(self._plan.offload, self._plan.feed, round_.completion())
            if final is not None:
                for out in round_.finish(final):
                    yield out
                return
            self._upstream = await self._create(**self._plan.request())

    def __aiter__(self) -> AsyncIterator[ChatCompletionChunk]:
        return self._iterator

    async def __anext__(self) -> ChatCompletionChunk:
        return await self._iterator.__anext__()

    async def close(self) -> None:
        """Close the upstream stream."""
        await self._upstream.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


class SyncChatStream:
    """The caller's stream of a sync ``create(stream=True)`` call (iterator, context manager)."""

    def __init__(self, create: Callable[..., Any], plan: ChatPlan, first: Any) -> None:
        self._create = create
        self._plan = plan
        self._upstream = first
        self._iterator = self._run()

    @classmethod
    def start(cls, create: Callable[..., Any], plan: ChatPlan) -> Self:
        """Send the first round (an upstream error raises here, as from the SDK)."""
        return cls(create, plan, create(**plan.request()))

    @property
    def response(self) -> Any:
        """The HTTP response of the current upstream round; closing it closes the stream."""
        return SyncStreamResponse(self, self.close)

    @property
    def upstream_response(self) -> Any:
        """The HTTP response of the current upstream round."""
        return self._upstream.response

    def _run(self) -> Iterator[ChatCompletionChunk]:
        state = _StreamState(_include_usage(self._plan))
        while True:
            round_ = _Round(state)
            for chunk in iterate_sync(self._upstream):
                yield from round_.feed(chunk)
            if not round_.finished:
                raise stream_cut(stream_request(self._upstream))
            final = self._plan.feed(round_.completion())
            if final is not None:
                yield from round_.finish(final)
                return
            self._upstream = self._create(**self._plan.request())

    def __iter__(self) -> Iterator[ChatCompletionChunk]:
        return self._iterator

    def __next__(self) -> ChatCompletionChunk:
        return next(self._iterator)

    def close(self) -> None:
        """Close the upstream stream."""
        self._upstream.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
