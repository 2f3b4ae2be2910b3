"""The SDK surface of a wrapped resource: which methods do tool search, pass through or refuse.

Every public attribute of the SDK's ``chat.completions`` and ``responses`` resources is named
here: `TOOL_SEARCHED` (the calls that send a model request with the caller's tools: ``create``
and the SDK's own helpers ``parse`` and ``stream`` run over the wrapped ``create``), `PASSED`
(stored objects, sub-resources and requests that carry no tool list) and `REFUSED` (model
requests the wrapper cannot drive). A public name in none of them (a method a later SDK adds)
is refused when called, with an `UnsupportedCallError` naming the supported calls, so no
model request ever bypasses tool search silently; ``tests/wrap/test_surface.py`` checks the
installed SDK against these sets.

The SDK's ``parse`` helpers post through ``resource._post`` with a body already built;
`post_kwargs` turns that body back into ``create`` keyword arguments, so the helper's request
goes through the wrapped ``create``, and the helper's own parser reads the final answer. The
``stream`` helpers hold a stream's ``response`` and close it when left: `SyncStreamResponse`
and `AsyncStreamResponse` make that close the round being read.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal, Protocol

import openai

from bot_toolsearch._errors import UnsupportedCallError

__all__ = [
    "PASSED",
    "REFUSED",
    "TOOL_SEARCHED",
    "AsyncStreamResponse",
    "Resource",
    "SyncStreamResponse",
    "create_parameters",
    "is_public",
    "post_kwargs",
    "refusal",
]

Resource = Literal["chat.completions", "responses", "beta.responses"]

TOOL_SEARCHED = frozenset({"create", "parse", "stream"})
"""Methods that send a model request with the caller's tools: tool search, as ``create``."""

PASSED: Mapping[Resource, frozenset[str]] = {
    "chat.completions": frozenset(
        {"retrieve", "update", "list", "delete", "messages"}
        | {"with_raw_response", "with_streaming_response"}
    ),
    "responses": frozenset(
        {"retrieve", "delete", "cancel", "compact", "input_items", "input_tokens"}
        | {"with_raw_response", "with_streaming_response"}
    ),
    "beta.responses": frozenset(
        {"retrieve", "delete", "cancel", "compact", "input_items", "input_tokens"}
    ),
}
"""The given client's own, untouched: stored completions and responses (read, update, list,
delete, cancel), ``compact`` (no tool list), ``input_tokens.count`` (counts what you pass).
``with_raw_response``/``with_streaming_response`` are the SDK's own classes over the wrapped
resource, so each of their methods is the wrapped resource's method of the same name."""

REFUSED: Mapping[Resource, Mapping[str, str]] = {
    "chat.completions": {},
    "beta.responses": {},
    "responses": {
        "connect": (
            "responses.connect (the Responses WebSocket mode) is not tool-searched by "
            "wrap_openai; use responses.create(stream=True) or responses.stream(), or the "
            "unwrapped client for a session without tool search"
        ),
    },
}
"""Model requests the wrapper cannot drive, with the error each raises."""

_PATHS: Mapping[Resource, str] = {
    "chat.completions": "/chat/completions",
    "responses": "/responses",
    "beta.responses": "/responses",
}


def is_public(name: str) -> bool:
    """Whether ``name`` is part of a resource's public surface."""
    return not name.startswith("_")


def refusal(resource: Resource, name: str) -> Callable[..., Any]:
    """A stand-in for ``resource.name`` that raises `UnsupportedCallError` when called."""
    supported = "responses" if resource == "beta.responses" else resource
    message = REFUSED[resource].get(name) or (
        f"{resource}.{name} is not tool-searched by wrap_openai, so it is refused rather than "
        f"sent without tool search; use {supported}.create, {supported}.parse or "
        f"{supported}.stream, or the unwrapped client"
    )

    def refused(*args: object, **kwargs: object) -> Any:
        del args, kwargs
        raise UnsupportedCallError(message)

    refused.__name__ = name
    refused.__qualname__ = f"{resource}.{name}"
    refused.__doc__ = message
    return refused


def create_parameters(method: Callable[..., Any]) -> frozenset[str]:
    """The keyword-only parameters of an SDK ``create`` method."""
    return frozenset(
        name
        for name, p in inspect.signature(method).parameters.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    )


def post_kwargs(
    resource: Resource, path: str, params: Mapping[str, Any], known: frozenset[str]
) -> dict[str, Any]:
    """The ``create`` keyword arguments of an SDK helper's ``resource._post(path, **params)``.

    The body's fields that ``create`` names are its arguments, the rest go as ``extra_body``
    (with the helper's own); the helper's headers, query and timeout are kept.

    Raises:
        UnsupportedCallError: the helper posts elsewhere than the resource's ``create`` path,
            or asks for a stream (``parse(stream=True)``: ``stream()`` is the streamed call).
    """
    if path != _PATHS[resource]:
        raise UnsupportedCallError(
            f"an openai SDK helper of {resource} posts to {path}, which wrap_openai does not "
            f"tool-search; use {resource}.create"
        )
    body = params.get("body")
    options = params.get("options") or {}
    fields: Mapping[str, Any] = body if isinstance(body, Mapping) else {}
    kwargs = {k: v for k, v in fields.items() if k in known and not k.startswith("extra_")}
    extra = {k: v for k, v in fields.items() if k not in kwargs}
    extra_json = options.get("extra_json")
    if isinstance(extra_json, Mapping):
        extra.update(extra_json)
    if kwargs.get("stream") is True or params.get("stream") is True:
        raise UnsupportedCallError(
            f"{resource}.parse(stream=True) is not supported by wrap_openai; "
            f"use {resource}.stream(...) for a streamed, parsed answer"
        )
    if extra:
        kwargs["extra_body"] = extra
    for option, argument in (("headers", "extra_headers"), ("params", "extra_query")):
        value = options.get(option)
        if value:
            kwargs[argument] = dict(value)
    timeout = options.get("timeout", openai.NOT_GIVEN)
    if not isinstance(timeout, openai.NotGiven):
        kwargs["timeout"] = timeout
    return kwargs


class _Closing(Protocol):
    @property
    def upstream_response(self) -> Any: ...


class SyncStreamResponse:
    """The ``response`` of a wrapped sync stream, as the SDK's stream helpers hold it: the
    current round's HTTP response, whose ``close()`` closes the whole stream (the round being
    read, not only the first)."""

    def __init__(self, stream: _Closing, close: Callable[[], None]) -> None:
        self._stream = stream
        self._close = close

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream.upstream_response, name)

    def close(self) -> None:
        """Close the stream."""
        self._close()


class AsyncStreamResponse:
    """`SyncStreamResponse` for an async stream (``aclose``, as the SDK's helpers call it)."""

    def __init__(self, stream: _Closing, close: Callable[[], Awaitable[None]]) -> None:
        self._stream = stream
        self._close = close

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream.upstream_response, name)

    async def aclose(self) -> None:
        """Close the stream."""
        await self._close()
