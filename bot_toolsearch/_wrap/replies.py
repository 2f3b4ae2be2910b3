"""Upstream replies checked before the wrapper reads them: one documented error, never a crash.

The ``openai`` SDK builds its reply objects without validation, so an upstream that answers
``message: null``, ``choices: [1]`` or a tool call whose ``function`` is ``null`` hands the
wrapper objects whose fields have any type; a body that is not JSON comes back as a string, or
raises ``json.JSONDecodeError`` from inside the SDK. Every
field the wrapper reads is checked here first, and anything unusable raises `ModelReplyError`
(an ``openai.APIError``, as from the `Bot`), with what was wrong and the start of the reply.
A streamed reply that ends without a ``finish_reason`` (cut off, HTML, garbage) raises
``openai.APIConnectionError``: the caller must not take a cut answer for a finished one.

A call without a usable id gets a fresh one (as the `Bot`'s transports give it), so the
caller can answer it. A token count that is no number (``usage.prompt_tokens: "lots"``) counts
as 0 with a warning, as in the `Bot`: the reply is not lost for its accounting.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import openai
import pydantic
from openai.types.chat import ChatCompletion, ChatCompletionChunk, ChatCompletionMessage
from openai.types.chat.chat_completion import Choice
from openai.types.chat.chat_completion_chunk import Choice as ChunkChoice
from openai.types.chat.chat_completion_chunk import ChoiceDelta, ChoiceDeltaToolCall
from openai.types.chat.chat_completion_message_function_tool_call import (
    ChatCompletionMessageFunctionToolCall,
)
from openai.types.responses import Response, ResponseFunctionToolCall

from bot_toolsearch._transports.base import ModelReplyError, token_count

from .caller_tools import Api
from .send import post_async, post_sync
from .verbatim import VERBATIM

__all__ = [
    "check_chat_chunk",
    "check_response",
    "guard_async",
    "guard_sync",
    "iterate_async",
    "iterate_sync",
    "stream_cut",
    "stream_request",
]

logger = logging.getLogger("bot_toolsearch")

INLINE_REPLY_BYTES = 256 * 1024
"""Largest reply body turned into SDK objects on an async door's event loop (larger: a thread)."""

_CHAT_USAGE = ("prompt_tokens", "completion_tokens", "total_tokens")
_RESPONSES_USAGE = ("input_tokens", "output_tokens", "total_tokens")
_CHAT_DETAILS = (
    ("prompt_tokens_details", "cached_tokens"),
    ("completion_tokens_details", "reasoning_tokens"),
)
_RESPONSES_DETAILS = (
    ("input_tokens_details", "cached_tokens"),
    ("output_tokens_details", "reasoning_tokens"),
)


def _excerpt(value: object) -> str:
    """The reply as JSON text for the error (or its repr when it is none)."""
    try:
        if isinstance(value, pydantic.BaseModel):
            return value.model_dump_json(warnings=False)
        if isinstance(value, str):
            return value
        return json.dumps(value, default=repr)
    except Exception:  # an excerpt must never hide the error it explains
        return f"<{type(value).__name__}>"


class _Unusable(Exception):
    """A field the wrapper reads has the wrong type; raised as `ModelReplyError` with the
    request at the boundary (`_check`, `check_chat_chunk`)."""


def _error(reply: object, reason: str) -> _Unusable:
    del reply  # the boundary excerpts the whole reply
    return _Unusable(reason)


def _kind(value: object) -> str:
    if value is None:
        return "null"
    name = type(value).__name__
    return f"an {name}" if name[0] in "aeiou" else f"a {name}"


def _text(reply: object, value: object, where: str) -> None:
    if value is not None and not isinstance(value, str):
        raise _error(reply, f"{where} is {_kind(value)}, not text")


def _usage(reply: Any, fields: tuple[str, ...], details: tuple[tuple[str, str], ...]) -> bool:
    """The token counts the wrapper sums, made usable in place as the `Bot` reads them: a count
    that is no non-negative number counts as 0 and a ``usage`` (or details) block that is no
    object as absent, each logged; the reply itself is kept (its text and calls are fine).
    Whether anything was changed."""
    usage = reply.usage
    if usage is None:
        return False
    if not isinstance(usage, pydantic.BaseModel):
        logger.warning("the model endpoint sent a usage that is no object: %s", _kind(usage))
        reply.usage = None
        return True
    changed = _counts(usage, fields)
    for name, count in details:
        detail = getattr(usage, name, None)
        if detail is None:
            continue
        if not isinstance(detail, pydantic.BaseModel):
            logger.warning("the model endpoint sent a usage.%s that is no object", name)
            setattr(usage, name, None)
            changed = True
            continue
        changed = _counts(detail, (count,)) or changed
    return changed


def _counts(holder: pydantic.BaseModel, fields: tuple[str, ...]) -> bool:
    changed = False
    for name in fields:
        value = getattr(holder, name, None)
        if value is None or (type(value) is int and value >= 0):  # as `token_count` keeps it
            continue
        if token_count(value) != value:  # logged by `token_count`
            setattr(holder, name, 0)
            changed = True
    return changed


def _arguments(reply: object, holder: Any, where: str) -> bool:
    """Arguments sent as a JSON object (some providers do) become its JSON text, as in the
    `Bot` (then ``True``: changed); anything else but text (or none) is unusable."""
    arguments = getattr(holder, "arguments", None)
    if isinstance(arguments, dict):
        holder.arguments = json.dumps(arguments, ensure_ascii=False)
        return True
    _text(reply, arguments, where)
    return False


def _call_id(call: Any) -> bool:
    """A call without a usable id gets a fresh one (the caller must be able to answer it);
    whether it did."""
    call_id = getattr(call, "id", None)
    if not isinstance(call_id, str) or not call_id:
        call.id = f"call_{secrets.token_hex(12)}"
        return True
    return False


def _chat_completion(reply: object) -> tuple[ChatCompletion, bool]:
    """``reply`` when every field the wrapper reads has its type (a chat completion), and
    whether a check changed it in place (a count made 0, arguments made text, an id given)."""
    if not isinstance(reply, ChatCompletion):
        raise _error(reply, f"the body is {_kind(reply)}, not a chat completion object")
    changed = _usage(
        reply,
        _CHAT_USAGE,
        _CHAT_DETAILS,
    )
    choices: object = reply.choices
    if choices is None:
        return reply, changed
    if not isinstance(choices, list):
        raise _error(reply, f"choices is {_kind(choices)}, not a list")
    if not choices:
        return reply, changed
    choice: object = choices[0]
    if not isinstance(choice, Choice):
        raise _error(reply, f"choices[0] is {_kind(choice)}, not an object")
    message: object = choice.message
    if not isinstance(message, ChatCompletionMessage):
        raise _error(reply, f"choices[0].message is {_kind(message)}, not an object")
    _text(reply, message.content, "choices[0].message.content")
    calls: object = message.tool_calls
    if calls is None:
        return reply, changed
    if not isinstance(calls, list):
        raise _error(reply, f"choices[0].message.tool_calls is {_kind(calls)}, not a list")
    for i, call in enumerate(calls):
        where = f"choices[0].message.tool_calls[{i}]"
        if not isinstance(call, pydantic.BaseModel):
            raise _error(reply, f"{where} is {_kind(call)}, not an object")
        if isinstance(call, ChatCompletionMessageFunctionToolCall):
            function: object = call.function
            if not isinstance(function, pydantic.BaseModel):
                raise _error(reply, f"{where}.function is {_kind(function)}, not an object")
            name: object = getattr(function, "name", None)
            if not isinstance(name, str):
                raise _error(reply, f"{where}.function.name is {_kind(name)}, not a string")
            changed = _arguments(reply, function, f"{where}.function.arguments") or changed
        changed = _call_id(call) or changed
    return reply, changed


def check_chat_chunk(chunk: object, request: Any = None) -> ChatCompletionChunk:
    """One streamed chunk, when every field the wrapper reads has its type.

    Raises:
        ModelReplyError: a field has the wrong type.
    """
    try:
        if not isinstance(chunk, ChatCompletionChunk):
            raise _error(chunk, f"a stream event is {_kind(chunk)}, not a chunk object")
        _chunk_fields(chunk)
    except _Unusable as exc:
        raise ModelReplyError(str(exc), request, _excerpt(chunk)) from None
    return chunk


def _chunk_fields(chunk: ChatCompletionChunk) -> None:
    _usage(
        chunk,
        _CHAT_USAGE,
        _CHAT_DETAILS,
    )
    choices: object = chunk.choices
    if choices is None or choices == []:
        return
    if not isinstance(choices, list):
        raise _error(chunk, f"choices is {_kind(choices)}, not a list")
    choice: object = choices[0]
    if not isinstance(choice, ChunkChoice):
        raise _error(chunk, f"choices[0] is {_kind(choice)}, not an object")
    _text(chunk, choice.finish_reason, "choices[0].finish_reason")
    delta: object = choice.delta
    if not isinstance(delta, ChoiceDelta):
        raise _error(chunk, f"choices[0].delta is {_kind(delta)}, not an object")
    _text(chunk, delta.content, "choices[0].delta.content")
    calls: object = delta.tool_calls
    if calls is None:
        return
    if not isinstance(calls, list):
        raise _error(chunk, f"choices[0].delta.tool_calls is {_kind(calls)}, not a list")
    for i, call in enumerate(calls):
        where = f"choices[0].delta.tool_calls[{i}]"
        if not isinstance(call, ChoiceDeltaToolCall):
            raise _error(chunk, f"{where} is {_kind(call)}, not an object")
        index: object = call.index
        if isinstance(index, bool) or not isinstance(index, int):
            raise _error(chunk, f"{where}.index is {_kind(index)}, not an integer")
        _text(chunk, call.id, f"{where}.id")
        function: object = call.function
        if function is None:
            continue
        if not isinstance(function, pydantic.BaseModel):
            raise _error(chunk, f"{where}.function is {_kind(function)}, not an object")
        _text(chunk, getattr(function, "name", None), f"{where}.function.name")
        _text(chunk, getattr(function, "arguments", None), f"{where}.function.arguments")


def check_response(reply: object, request: Any) -> Response:
    """``reply`` when every field the wrapper reads has its type.

    Raises:
        ModelReplyError: the reply is not a response object, or a field has the wrong type.
    """
    try:
        return _response(reply)
    except _Unusable as exc:
        raise ModelReplyError(str(exc), request, _excerpt(reply)) from None


def _response(reply: object) -> Response:
    if not isinstance(reply, Response):
        raise _error(reply, f"the body is {_kind(reply)}, not a response object")
    _usage(
        reply,
        _RESPONSES_USAGE,
        _RESPONSES_DETAILS,
    )
    output: object = reply.output
    if output is None:
        return reply
    if not isinstance(output, list):
        raise _error(reply, f"output is {_kind(output)}, not a list")
    for i, item in enumerate(output):
        where = f"output[{i}]"
        if not isinstance(item, pydantic.BaseModel):
            raise _error(reply, f"{where} is {_kind(item)}, not an object")
        if isinstance(item, ResponseFunctionToolCall):
            name: object = item.name
            if not isinstance(name, str):
                raise _error(reply, f"{where}.name is {_kind(name)}, not a string")
            _arguments(reply, item, f"{where}.arguments")
            call_id: object = item.call_id
            if not isinstance(call_id, str) or not call_id:
                item.call_id = f"call_{secrets.token_hex(12)}"
        elif getattr(item, "type", None) == "message":
            parts: object = getattr(item, "content", None)
            if parts is not None and not isinstance(parts, list):
                raise _error(reply, f"{where}.content is {_kind(parts)}, not a list")
            for j, part in enumerate(parts or ()):
                if not isinstance(part, pydantic.BaseModel):
                    raise _error(reply, f"{where}.content[{j}] is {_kind(part)}, not an object")
                _text(reply, getattr(part, "text", None), f"{where}.content[{j}].text")
    return reply


def stream_cut(request: Any) -> openai.APIConnectionError:
    """The error for a streamed round that ended without a ``finish_reason``."""
    return openai.APIConnectionError(
        message=(
            "the upstream stream ended before its finish_reason: the reply was cut off "
            "(or was no event stream at all)"
        ),
        request=request,
    )


def _not_json(exc: ValueError, request: Any = None) -> ModelReplyError:
    if isinstance(exc, UnicodeDecodeError):
        text = bytes(exc.object).decode("utf-8", "replace")
        return ModelReplyError("the body (or a stream event) is not UTF-8 text", request, text)
    doc = exc.doc if isinstance(exc, json.JSONDecodeError) else str(exc)
    return ModelReplyError("the body (or a stream event) is not valid JSON", request, doc)


def _check(parsed: object, api: Api, request: Any) -> tuple[Any, bool]:
    """The reply checked, and whether a check changed it in place (a response: always
    taken as changed, its answer is never the upstream's as it came)."""
    try:
        return _chat_completion(parsed) if api == "chat" else (_response(parsed), True)
    except _Unusable as exc:
        raise ModelReplyError(str(exc), request, _excerpt(parsed)) from None


def guard_async(
    resource: Any, api: Api, accepted: Callable[[], object] | None = None
) -> Callable[..., Awaitable[Any]]:
    """The SDK resource's ``create``, its reply checked (a stream is checked as it is read);
    ``accepted`` is called once the upstream answered 2xx (the SDK raises on any other).

    Sent as ``with_raw_response`` sends it, so an unusable reply's error carries its request,
    but as the plain JSON it is (`bot_toolsearch._wrap.send`). With `VERBATIM` set, each
    chat reply is offered to it, with its body when that says exactly what the checked
    reply holds (read strictly, nothing changed by a check).
    """

    async def guarded(**kwargs: Any) -> Any:
        raw = await post_async(resource, api, kwargs)
        if accepted is not None:
            accepted()
        if kwargs.get("stream") is True:
            try:
                return raw.parse()
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise _not_json(exc, raw.http_response.request) from None
        http = raw.http_response
        sink = VERBATIM.get() if api == "chat" else None
        strict = sink is not None
        try:
            # A large reply (thousands of calls) is turned into SDK objects in a worker thread.
            if _large(http):
                parse = functools.partial(_parse, raw, api, False, strict=strict)
                parsed, exact = await asyncio.to_thread(parse)
            else:
                parsed, exact = _parse(raw, api, False, strict=strict)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise _not_json(exc, http.request) from None
        checked, changed = _check(parsed, api, http.request)
        if sink is not None:
            sink.offer(checked, http.content if exact and not changed else None)
        return checked

    return guarded


def _parse(raw: Any, api: Api, stream: bool, *, strict: bool = False) -> tuple[Any, bool]:
    """The reply as SDK objects: a whole JSON body validated by pydantic in one call (about
    twenty times faster than the SDK's own ``parse``, which walks the type annotations in
    Python); anything that does not validate, and every stream, as ``parse`` makes it (which
    the checks then read). With ``strict``, validated strictly first (no value coerced, a
    ``"5"`` for a count refused); the second value says whether that held."""
    if stream:
        return raw.parse(), False
    model = ChatCompletion if api == "chat" else Response
    content = raw.http_response.content
    exact = strict
    try:
        try:
            parsed = model.model_validate_json(content, strict=strict)
        except Exception:
            if not strict:
                raise
            exact = False
            parsed = model.model_validate_json(content)
    except Exception:  # not JSON, or fields of the wrong type: the SDK's lenient way
        return raw.parse(), False
    # As the SDK's ``add_request_id`` sets it (not a field: pydantic's ``__setattr__`` only
    # stores it in the instance's ``__dict__``, at five times the cost).
    object.__setattr__(parsed, "_request_id", raw.http_response.headers.get("x-request-id"))
    return parsed, exact


def _large(http: Any) -> bool:
    """Whether a non-streamed reply's body (``http``, its ``httpx.Response``) is over
    `INLINE_REPLY_BYTES`."""
    try:
        return len(http.content) > INLINE_REPLY_BYTES
    except Exception:  # a body not read: small enough
        return False


def guard_sync(
    resource: Any, api: Api, accepted: Callable[[], object] | None = None
) -> Callable[..., Any]:
    """The SDK resource's ``create``, its reply checked (a stream is checked as it is read);
    ``accepted`` is called once the upstream answered 2xx (the SDK raises on any other)."""

    def guarded(**kwargs: Any) -> Any:
        raw = post_sync(resource, api, kwargs)
        if accepted is not None:
            accepted()
        request = raw.http_response.request
        try:
            parsed, _ = _parse(raw, api, kwargs.get("stream") is True)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise _not_json(exc, request) from None
        return parsed if kwargs.get("stream") is True else _check(parsed, api, request)[0]

    return guarded


def stream_request(stream: Any) -> Any:
    """The HTTP request of an SDK stream (for the errors about it)."""
    return _request(stream)


def _request(stream: Any) -> Any:
    response = getattr(stream, "response", None)
    return getattr(response, "request", None)


async def iterate_async(stream: Any, *, chat: bool = True) -> AsyncIterator[Any]:
    """The events of one upstream stream; chat chunks checked (``chat``).

    Raises:
        ModelReplyError: an event is not JSON, or a chat chunk has fields of the wrong type.
    """
    request = _request(stream)
    iterator = stream.__aiter__()
    while True:
        try:
            event = await iterator.__anext__()
        except StopAsyncIteration:
            return
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise _not_json(exc, request) from None
        yield check_chat_chunk(event, request) if chat else event


def iterate_sync(stream: Any, *, chat: bool = True) -> Iterator[Any]:
    """The events of one upstream stream; chat chunks checked (``chat``).

    Raises:
        ModelReplyError: an event is not JSON, or a chat chunk has fields of the wrong type.
    """
    request = _request(stream)
    iterator = iter(stream)
    while True:
        try:
            event = next(iterator)
        except StopIteration:
            return
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise _not_json(exc, request) from None
        yield check_chat_chunk(event, request) if chat else event
