"""`wrap_anthropic`: an ``anthropic`` client whose ``messages.create`` does tool search.

The twin of `wrap_openai` for Python code on the ``anthropic`` SDK: ``messages.create`` runs the
Messages adapter (`bot_toolsearch._wrap.messages`) through the shared round driver
(`bot_toolsearch._wrap.rounds`), each round posted with the client's own ``post`` (its auth,
headers, retries and timeout), and returns the SDK's typed ``Message``, so Anthropic's tool
search (a search tool, ``defer_loading``, ``tool_reference`` blocks) works on any
Anthropic-compatible backend, and ``[skills]`` tool search on any request with tools. Every
other attribute is the given client's. ``stream=True`` streams each round upstream through the
shared stream driver (`bot_toolsearch._wrap.stream_driver`, its Messages dialect
`bot_toolsearch._wrap.messages_streaming`) and returns the SDK's typed events as they come, the
final round's text deltas live; ``messages.stream()`` is the SDK's own helper over it. The
``anthropic`` package is imported only when a client is wrapped (the ``anthropic`` extra).
"""

from __future__ import annotations

import functools
import importlib
import os
from collections.abc import Callable, Mapping
from typing import Any

from bot_toolsearch._config.settings import BotSettings
from bot_toolsearch._errors import UnsupportedCallError
from bot_toolsearch._protocol.trace import RoundTrace
from bot_toolsearch._services.threads import POOLS

from .engine import Engine
from .messages import messages_plan, ordinary_body
from .messages_streaming import MessagesRounds
from .plan import Pending
from .rounds import drive, drive_sync
from .stream_driver import AsyncRoundStream, SyncRoundStream

__all__ = ["wrap_anthropic"]

_OPTIONS = {
    "extra_headers": "headers",
    "extra_query": "params",
    "extra_body": "extra_json",
    "timeout": "timeout",
}
_OUTPUT_FORMAT = (
    "messages.stream(output_format=...) of a wrap_anthropic client: not supported; pass the "
    "schema as output_config={'format': ...}"
)


def wrap_anthropic(
    client: Any,
    *,
    config: str | os.PathLike[str] | None = None,
    settings: BotSettings | None = None,
    on_round: Callable[[RoundTrace], object] | None = None,
) -> Any:
    """Tool search for an ``anthropic.Anthropic`` or ``anthropic.AsyncAnthropic`` client.

    ``messages.create(...)`` with Anthropic's tool search tool and ``defer_loading`` tools is
    answered in hidden rounds on any Anthropic-compatible backend: the upstream gets the
    non-deferred tools, a virtual ``tool_search`` and the loaded tools at the end of the list,
    never a search tool type, ``defer_loading`` or a ``tool_reference``; the reply carries
    ``server_tool_use`` and ``tool_search_tool_result`` blocks as Anthropic's does, usage
    summed over rounds. Without a search tool, ``[skills]`` decides as for `wrap_openai`.
    ``messages.create(stream=True)`` and ``messages.stream()`` stream the same message, the
    last round's text as the backend sends it.

    Args:
        client: an ``anthropic.Anthropic`` or ``anthropic.AsyncAnthropic``.
        config: a ``config.toml`` path (hot-reloaded), or ``settings``; with neither, tool
            search on with the ``[skills]`` defaults.
        settings: a settings snapshot instead of ``config``.
        on_round: called with each upstream round's `RoundTrace`.

    Raises:
        TypeError: ``client`` is no ``anthropic`` client, or both ``config`` and ``settings``.
    """
    anthropic = _sdk()
    engine = Engine(config=config, settings=settings, on_round=on_round)
    if isinstance(client, anthropic.AsyncAnthropic):
        return _Client(client, _AsyncMessages(client, engine))
    if isinstance(client, anthropic.Anthropic):
        return _Client(client, _SyncMessages(client, engine))
    raise TypeError(f"wrap_anthropic takes an anthropic client, got {type(client).__name__}")


class _Client:
    """The given client, but for ``messages``."""

    def __init__(self, inner: Any, messages: Any) -> None:
        self._inner = inner
        self.messages = messages

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Messages:
    def __init__(self, client: Any, engine: Engine) -> None:
        self._client = client
        self._engine = engine

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client.messages, name)

    def _split(self, kwargs: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        anthropic = _sdk()
        body: dict[str, Any] = {}
        options: dict[str, Any] = {}
        for key, value in kwargs.items():
            if isinstance(value, anthropic.NotGiven | anthropic.Omit):
                continue
            option = _OPTIONS.get(key)
            if option is None:
                body[key] = _plain(value)
            elif value is not None:
                options[option] = value
        return body, options

    def _message(self, answer: Mapping[str, Any]) -> Any:
        return _sdk().types.Message.model_validate(answer)

    def _post(self, body: Mapping[str, Any], options: Mapping[str, Any], stream: bool) -> Any:
        """One upstream round: a message as JSON, or (``stream``) its events as JSON objects."""
        if not stream:
            return self._client.post("/v1/messages", body=body, options=options, cast_to=object)
        stream_cls = _sdk().AsyncStream if self._async else _sdk().Stream
        return self._client.post(
            "/v1/messages",
            body={**body, "stream": True},
            options=options,
            cast_to=object,
            stream=True,
            stream_cls=stream_cls[object],
        )

    def _ordinary_stream(self, body: Mapping[str, Any], options: Mapping[str, Any]) -> Any:
        """A request with nothing to search, streamed as the SDK streams it."""
        anthropic = _sdk()
        stream_cls = anthropic.AsyncStream if self._async else anthropic.Stream
        return self._client.post(
            "/v1/messages",
            body={**body, "stream": True},
            options=options,
            cast_to=anthropic.types.Message,
            stream=True,
            stream_cls=stream_cls[anthropic.types.RawMessageStreamEvent],
        )

    _async = False


def _stream_kwargs(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """``messages.stream()``'s arguments as ``create(stream=True)``'s."""
    anthropic = _sdk()
    given = kwargs.get("output_format")
    if given is not None and not isinstance(given, anthropic.NotGiven | anthropic.Omit):
        raise UnsupportedCallError(_OUTPUT_FORMAT)
    return {**{k: v for k, v in kwargs.items() if k != "output_format"}, "stream": True}


class _AsyncMessages(_Messages):
    _async = True

    async def create(self, **kwargs: Any) -> Any:
        """``messages.create`` with tool search (see `wrap_anthropic`)."""
        streaming = kwargs.get("stream") is True
        body, options = self._split(kwargs)
        engine = self._engine
        settings = engine.snapshot()
        make = functools.partial(
            messages_plan, body, settings, engine.cache, on_round=engine.on_round
        )
        found = make(build=False)
        if isinstance(found, Pending):  # a new tool list: indexed off the event loop
            found = await POOLS.index.run(make, deadline=0)
        assert not isinstance(found, Pending)
        plan = found
        if plan is None:
            body = ordinary_body(body, settings)
            if streaming:
                return await self._ordinary_stream(body, options)
            return self._message(await self._post(body, options, False))
        accepted = False

        async def send(request: Mapping[str, Any]) -> Any:
            nonlocal accepted
            reply = await self._post(request, options, streaming)
            if not accepted:
                accepted = True
                plan.accept()
            return reply

        if not streaming:
            return self._message(await drive(plan, send))

        render = _Render()
        render.stream = await AsyncRoundStream.start(
            MessagesRounds(plan), lambda: send(plan.request()), aiter, render=render
        )
        return render.stream

    def stream(self, **kwargs: Any) -> Any:
        """``messages.stream()`` with tool search: the SDK's own stream helper over the
        wrapped ``create(stream=True)`` (its events, text stream and final message)."""
        manager = _helpers().AsyncMessageStreamManager
        return manager(self.create(**_stream_kwargs(kwargs)), output_format=_sdk().NOT_GIVEN)


class _SyncMessages(_Messages):
    def create(self, **kwargs: Any) -> Any:
        """``messages.create`` with tool search (see `wrap_anthropic`)."""
        streaming = kwargs.get("stream") is True
        body, options = self._split(kwargs)
        engine = self._engine
        settings = engine.snapshot()
        plan = messages_plan(body, settings, engine.cache, on_round=engine.on_round)
        assert not isinstance(plan, Pending)  # built here: never pending
        if plan is None:
            body = ordinary_body(body, settings)
            if streaming:
                return self._ordinary_stream(body, options)
            return self._message(self._post(body, options, False))
        accepted = False

        def send(request: Mapping[str, Any]) -> Any:
            nonlocal accepted
            reply = self._post(request, options, streaming)
            if not accepted:
                accepted = True
                plan.accept()
            return reply

        if not streaming:
            return self._message(drive_sync(plan, send))

        render = _Render()
        render.stream = SyncRoundStream.start(
            MessagesRounds(plan), lambda: send(plan.request()), iter, render=render
        )
        return render.stream

    def stream(self, **kwargs: Any) -> Any:
        """``messages.stream()`` with tool search: the SDK's own stream helper over the
        wrapped ``create(stream=True)`` (its events, text stream and final message)."""
        manager = _helpers().MessageStreamManager
        make = functools.partial(self.create, **_stream_kwargs(kwargs))
        return manager(make, output_format=_sdk().NOT_GIVEN)


class _Render:
    """A stream's events as the SDK's types, ``ping`` left out as the SDK's own stream leaves
    it out; our own ``error`` event (a round that ended before its ``message_stop``) raised as
    the SDK's ``APIConnectionError``."""

    stream: Any = None

    def __call__(self, event: Mapping[str, Any]) -> Any:
        anthropic = _sdk()
        if event.get("type") == "ping":
            return None
        if event.get("type") == "error":
            error = event.get("error")
            message = error.get("message") if isinstance(error, Mapping) else None
            request = self.stream.upstream_response.request
            raise anthropic.APIConnectionError(message=str(message), request=request)
        return _event_type().validate_python(event)


@functools.cache
def _event_type() -> Any:
    """The SDK's stream event union, read once."""
    import pydantic

    return pydantic.TypeAdapter(_sdk().types.RawMessageStreamEvent)


def _sdk() -> Any:
    """The ``anthropic`` package (the ``anthropic`` extra)."""
    try:
        import anthropic
    except ImportError as exc:  # pragma: no cover - the dev extra installs it
        raise ImportError(
            "wrap_anthropic needs the anthropic package: pip install '.[anthropic]' in the clone"
        ) from exc
    return anthropic


def _helpers() -> Any:
    """The SDK's stream helpers (``anthropic.lib.streaming``)."""
    return importlib.import_module("anthropic.lib.streaming")


def _plain(value: Any) -> Any:
    """An SDK model (``reply.content`` blocks resent in ``messages``) as its JSON value,
    recursively; anything else unchanged."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json", exclude_none=True)
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
