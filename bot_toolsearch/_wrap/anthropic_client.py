"""`wrap_anthropic`: an ``anthropic`` client whose ``messages.create`` does tool search.

The twin of `wrap_openai` for Python code on the ``anthropic`` SDK: ``messages.create`` runs
the Messages adapter (`bot_toolsearch._wrap.messages`) through the shared round driver
(`bot_toolsearch._wrap.rounds`), each round posted with the client's own ``post`` (its auth,
headers, retries and timeout), and returns the SDK's typed ``Message``, so Anthropic's tool
search (a search tool, ``defer_loading``, ``tool_reference`` blocks) works on any
Anthropic-compatible backend, and ``[skills]`` tool search on any request with tools. Every
other attribute is the given client's. ``stream=True`` and ``messages.stream()`` are refused
(`UnsupportedCallError`) rather than sent without tool search; the proxy streams
(`bot_toolsearch._proxy.messages`). The ``anthropic`` package is imported only when a client
is wrapped (the ``anthropic`` extra).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from typing import Any

from bot_toolsearch._config.settings import BotSettings
from bot_toolsearch._errors import UnsupportedCallError
from bot_toolsearch._protocol.trace import RoundTrace
from bot_toolsearch._services.threads import POOLS

from .engine import Engine
from .messages import messages_plan, ordinary_body
from .plan import Pending
from .rounds import drive, drive_sync

__all__ = ["wrap_anthropic"]

_OPTIONS = {
    "extra_headers": "headers",
    "extra_query": "params",
    "extra_body": "extra_json",
    "timeout": "timeout",
}
_STREAMING = (
    "messages.create(stream=True) and messages.stream() of a wrap_anthropic client: not "
    "supported (they would send the request without tool search); call messages.create "
    "without stream, or stream through `bot-toolsearch serve --upstream-api messages`"
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

    def stream(self, **_: Any) -> Any:
        """Refused: see `wrap_anthropic`."""
        raise UnsupportedCallError(_STREAMING)

    def _split(self, kwargs: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        anthropic = _sdk()
        if kwargs.get("stream") is True:
            raise UnsupportedCallError(_STREAMING)
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


class _AsyncMessages(_Messages):
    async def create(self, **kwargs: Any) -> Any:
        """``messages.create`` with tool search (see `wrap_anthropic`)."""
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
        accepted = False

        async def send(request: Mapping[str, Any]) -> Any:
            nonlocal accepted
            reply = await self._client.post(
                "/v1/messages", body=request, options=options, cast_to=object
            )
            if plan is not None and not accepted:
                accepted = True
                plan.accept()
            return reply

        if plan is None:
            return self._message(await send(body))
        return self._message(await drive(plan, send))


class _SyncMessages(_Messages):
    def create(self, **kwargs: Any) -> Any:
        """``messages.create`` with tool search (see `wrap_anthropic`)."""
        body, options = self._split(kwargs)
        engine = self._engine
        settings = engine.snapshot()
        plan = messages_plan(body, settings, engine.cache, on_round=engine.on_round)
        assert not isinstance(plan, Pending)  # built here: never pending
        if plan is None:
            body = ordinary_body(body, settings)
        accepted = False

        def send(request: Mapping[str, Any]) -> Any:
            nonlocal accepted
            reply = self._client.post("/v1/messages", body=request, options=options, cast_to=object)
            if plan is not None and not accepted:
                accepted = True
                plan.accept()
            return reply

        if plan is None:
            return self._message(send(body))
        return self._message(drive_sync(plan, send))


def _sdk() -> Any:
    """The ``anthropic`` package (the ``anthropic`` extra)."""
    try:
        import anthropic
    except ImportError as exc:  # pragma: no cover - the dev extra installs it
        raise ImportError(
            "wrap_anthropic needs the anthropic package: pip install '.[anthropic]' in the clone"
        ) from exc
    return anthropic


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
