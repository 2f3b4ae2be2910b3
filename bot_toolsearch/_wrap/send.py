"""Upstream requests sent as the plain JSON they are, through the SDK's own ``post``.

A wrapped call's rounds are built from plain JSON values (the caller's messages or input,
the projected tools, the hidden rounds' own items), so the SDK's typed-dict transform of
``create`` (which re-walks every message of every round against the parameter types:
about 20 of 22 s of a round of 16,000 calls, and most of the proxy's CPU per request beyond
a pass-through) is skipped: the keyword arguments are split into the body and the request
options ``create`` itself would make (``extra_headers``, ``extra_query``, ``extra_body``,
``timeout``) and posted with the client's ``post``, which keeps the client's auth, retries,
default headers and timeout. The body is serialised by the SDK's own JSON encoder, which
dumps an SDK model (a ``ChatCompletionMessage`` appended to ``messages``, a ``Response``'s
output items) as ``create`` would send it. The reply comes back as ``with_raw_response``
returns it (the same header), so the caller sees the very same objects and errors.

A ``response_format`` given as a class (``create`` refuses it with a ``TypeError`` pointing
to ``parse``) takes the SDK's ``create``, unchanged. An async round that is not streamed
skips ``post``'s request building too (`bot_toolsearch._wrap.direct`) when the client and
the call allow it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import openai
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response, ResponseStreamEvent

from .caller_tools import Api
from .direct import post_direct

__all__ = ["post_async", "post_sync", "split"]

_RAW_RESPONSE = {"X-Stainless-Raw-Response": "true"}
"""The header ``with_raw_response`` sets: the SDK answers with its raw response object."""
_PATHS: Mapping[Api, str] = {"chat": "/chat/completions", "responses": "/responses"}
_CAST: Mapping[Api, type[Any]] = {"chat": ChatCompletion, "responses": Response}
_ABSENT = (openai.NotGiven, openai.Omit)
"""What ``create`` leaves out (a tuple: ``isinstance`` with a union walks it slower)."""
_PLAIN_OPTIONS = frozenset(("headers", "extra_json"))
_OPTIONS = {
    "extra_headers": "headers",
    "extra_query": "params",
    "extra_body": "extra_json",
    "timeout": "timeout",
}


def split(kwargs: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """``create``'s keyword arguments as the JSON body and the request options, or ``None``
    when only the SDK's ``create`` can take them (a ``response_format`` class)."""
    if isinstance(kwargs.get("response_format"), type):
        return None
    body: dict[str, Any] = {}
    options: dict[str, Any] = {}
    for key, value in kwargs.items():
        if isinstance(value, _ABSENT):
            continue
        option = _OPTIONS.get(key)
        if option is None:
            body[key] = value
        elif value is not None:
            options[option] = value
    options["headers"] = {**(options.get("headers") or {}), **_RAW_RESPONSE}
    return body, options


async def post_async(resource: Any, api: Api, kwargs: Mapping[str, Any]) -> Any:
    """``resource.with_raw_response.create(**kwargs)``, without the typed-dict transform."""
    parts = split(kwargs)
    if parts is None:
        return await resource.with_raw_response.create(**kwargs)
    body, options = parts
    stream = body.get("stream") is True
    # Only the call's extra_body: no header, query or timeout of its own.
    plain = options.keys() <= _PLAIN_OPTIONS and options["headers"] == _RAW_RESPONSE
    if plain and not stream:
        client = getattr(resource, "_client", None)
        sent = await post_direct(client, _PATHS[api], body, options.get("extra_json"), _CAST[api])
        if sent is not None:
            return sent
    chunk = ChatCompletionChunk if api == "chat" else ResponseStreamEvent
    return await resource._post(
        _PATHS[api],
        body=body,
        options=options,
        cast_to=_CAST[api],
        stream=stream,
        stream_cls=openai.AsyncStream[chunk],  # type: ignore[valid-type]
    )


def post_sync(resource: Any, api: Api, kwargs: Mapping[str, Any]) -> Any:
    """``resource.with_raw_response.create(**kwargs)``, without the typed-dict transform."""
    parts = split(kwargs)
    if parts is None:
        return resource.with_raw_response.create(**kwargs)
    body, options = parts
    stream = body.get("stream") is True
    chunk = ChatCompletionChunk if api == "chat" else ResponseStreamEvent
    return resource._post(
        _PATHS[api],
        body=body,
        options=options,
        cast_to=_CAST[api],
        stream=stream,
        stream_cls=openai.Stream[chunk],  # type: ignore[valid-type]
    )
