"""`wrap_openai`: an ``openai`` client whose ``create`` calls do tool search, nothing else.

The wrapped client is a real ``openai.AsyncOpenAI`` (or ``openai.OpenAI``) sharing the given
client's configuration and HTTP connection pool, so ``isinstance`` checks and every other
resource (``models``, ``files``, ``embeddings`` ...) behave as the given client's. Only
``chat.completions.create`` and ``responses.create`` are wrapped, with their
``with_raw_response`` and ``with_streaming_response`` forms (`bot_toolsearch._wrap.raw`);
``with_options``/``copy`` return wrapped copies. The client-level ``with_raw_response`` and
``with_streaming_response`` are the given client's own (no tool search).
"""

from __future__ import annotations

import functools
import logging
import os
from typing import Any, overload

import anyio
import openai

from bot_toolsearch._config.settings import BotSettings
from bot_toolsearch._services.threads import off_loop

from .chat import ChatPlan
from .engine import Engine
from .plan import Pending, busy
from .raw import AsyncRaw, AsyncStreaming, SyncRaw, SyncStreaming
from .replies import guard_async, guard_sync
from .responses import ResponsesPlan, create_round, create_round_async
from .responses_streaming import AsyncResponsesStream, SyncResponsesStream
from .streaming import AsyncChatStream, SyncChatStream

__all__ = ["engine_of", "wrap_openai"]

logger = logging.getLogger("bot_toolsearch")

TOOL_SEARCH_NOT_SET = (
    "wrap_openai: the %s does not set [skills] tool_search_enabled, so tool search is off "
    "for this client (only [tools] allow/deny apply); wrap_openai with neither config nor "
    "settings turns it on. Set tool_search_enabled = true (or false) to silence this."
)
"""The warning for settings that leave tool search at its default (off)."""


class _Delegate:
    """Every attribute not defined here is the wrapped object's."""

    def __init__(self, inner: Any, engine: Engine) -> None:
        self._inner = inner
        self._engine = engine

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _AsyncResource(_Delegate):
    """An async ``create`` with tool search: `_plan` decides, `_run` drives the plan."""

    async def create(self, **kwargs: Any) -> Any:
        """``create`` with tool search (see `wrap_openai`)."""
        plan = await self._aplan(kwargs)
        if plan is None:
            return await self._inner.create(**kwargs)
        return await self._run(plan, kwargs)

    async def _aplan(self, kwargs: dict[str, Any]) -> Any:
        """The plan, made on the event loop when the tool list is indexed already, else in a
        worker thread: indexing a new list (and building its search index) takes time in
        proportion to the list (most of a second at 10,000 tools), which the loop never waits.
        A cancelled call leaves the thread to finish; the indexed list is kept."""
        plan = self._plan(kwargs, build=False)
        if plan is Pending.INDEXING:
            plan = await anyio.to_thread.run_sync(
                functools.partial(self._plan, kwargs), abandon_on_cancel=True
            )
        return plan

    def _plan(self, kwargs: dict[str, Any], *, build: bool = True) -> Any:
        raise NotImplementedError

    async def _run(self, plan: Any, kwargs: dict[str, Any]) -> Any:
        raise NotImplementedError

    @property
    def with_raw_response(self) -> AsyncRaw:
        """``with_raw_response.create`` with tool search (see `bot_toolsearch._wrap.raw`)."""
        return AsyncRaw(self)

    @property
    def with_streaming_response(self) -> AsyncStreaming:
        """``with_streaming_response.create`` with tool search."""
        return AsyncStreaming(self)


class _SyncResource(_Delegate):
    """A sync ``create`` with tool search: `_plan` decides, `_run` drives the plan."""

    def create(self, **kwargs: Any) -> Any:
        """``create`` with tool search (see `wrap_openai`)."""
        plan = self._plan(kwargs)
        if plan is None:
            return self._inner.create(**kwargs)
        return self._run(plan, kwargs)

    def _plan(self, kwargs: dict[str, Any]) -> Any:
        raise NotImplementedError

    def _run(self, plan: Any, kwargs: dict[str, Any]) -> Any:
        raise NotImplementedError

    @property
    def with_raw_response(self) -> SyncRaw:
        """``with_raw_response.create`` with tool search (see `bot_toolsearch._wrap.raw`)."""
        return SyncRaw(self)

    @property
    def with_streaming_response(self) -> SyncStreaming:
        """``with_streaming_response.create`` with tool search."""
        return SyncStreaming(self)


class _AsyncCompletions(_AsyncResource):
    def _plan(self, kwargs: dict[str, Any], *, build: bool = True) -> ChatPlan | Pending | None:
        return self._engine.chat_plan(kwargs, build=build)

    async def _run(self, plan: ChatPlan, kwargs: dict[str, Any]) -> Any:
        create = guard_async(self._inner, "chat")
        if kwargs.get("stream") is True:
            return await AsyncChatStream.start(create, plan)
        while True:
            reply = await create(**plan.request())
            done = await off_loop(plan.semantic or busy(reply), plan.feed, reply)
            if done is not None:
                return done


class _AsyncResponses(_AsyncResource):
    def _plan(
        self, kwargs: dict[str, Any], *, build: bool = True
    ) -> ResponsesPlan | Pending | None:
        return self._engine.responses_plan(kwargs, build=build)

    async def _run(self, plan: ResponsesPlan, kwargs: dict[str, Any]) -> Any:
        create = guard_async(self._inner, "responses")
        if kwargs.get("stream") is True:
            return await AsyncResponsesStream.start(create, plan)
        while True:
            reply = await create_round_async(create, plan)
            done = await off_loop(plan.semantic or busy(reply), plan.feed, reply)
            if done is not None:
                return done


class _SyncCompletions(_SyncResource):
    def _plan(self, kwargs: dict[str, Any], *, build: bool = True) -> ChatPlan | Pending | None:
        return self._engine.chat_plan(kwargs, build=build)

    def _run(self, plan: ChatPlan, kwargs: dict[str, Any]) -> Any:
        create = guard_sync(self._inner, "chat")
        if kwargs.get("stream") is True:
            return SyncChatStream.start(create, plan)
        while True:
            done = plan.feed(create(**plan.request()))
            if done is not None:
                return done


class _SyncResponses(_SyncResource):
    def _plan(
        self, kwargs: dict[str, Any], *, build: bool = True
    ) -> ResponsesPlan | Pending | None:
        return self._engine.responses_plan(kwargs, build=build)

    def _run(self, plan: ResponsesPlan, kwargs: dict[str, Any]) -> Any:
        create = guard_sync(self._inner, "responses")
        if kwargs.get("stream") is True:
            return SyncResponsesStream.start(create, plan)
        while True:
            done = plan.feed(create_round(create, plan))
            if done is not None:
                return done


class _AsyncChat(_Delegate):
    @property
    def completions(self) -> _AsyncCompletions:
        return _AsyncCompletions(self._inner.completions, self._engine)


class _SyncChat(_Delegate):
    @property
    def completions(self) -> _SyncCompletions:
        return _SyncCompletions(self._inner.completions, self._engine)


_OWN = ("_ts_inner", "_ts_engine", "_ts_owner")


def _adopt(cls: type[Any], client: Any, engine: Engine, owner: bool) -> Any:
    """An instance of ``cls`` (a subclass of the client's class) sharing ``client``'s state."""
    wrapped = object.__new__(cls)
    state = dict(client.__dict__)
    # Resources cached on the given client would hand out its own (unwrapped) ``create``.
    for name in ("chat", "responses", "with_raw_response", "with_streaming_response"):
        state.pop(name, None)
    wrapped.__dict__.update(state)
    wrapped.__dict__.update(zip(_OWN, (client, engine, owner), strict=True))
    return wrapped


class ToolSearchAsyncOpenAI(openai.AsyncOpenAI):
    """An ``openai.AsyncOpenAI`` whose ``create`` calls do tool search; made by `wrap_openai`."""

    _ts_inner: openai.AsyncOpenAI
    _ts_engine: Engine
    _ts_owner: bool

    @property
    def chat(self) -> Any:
        """``chat``, with ``completions.create`` doing tool search."""
        return _AsyncChat(self._ts_inner.chat, self._ts_engine)

    @property
    def responses(self) -> Any:
        """``responses``, with ``create`` doing tool search."""
        return _AsyncResponses(self._ts_inner.responses, self._ts_engine)

    @property
    def with_raw_response(self) -> Any:
        """The given client's ``with_raw_response`` (no tool search)."""
        return self._ts_inner.with_raw_response

    @property
    def with_streaming_response(self) -> Any:
        """The given client's ``with_streaming_response`` (no tool search)."""
        return self._ts_inner.with_streaming_response

    def copy(self, *args: Any, **kwargs: Any) -> Any:
        """A wrapped copy of the given client's ``copy(...)``, sharing the settings."""
        return _adopt(type(self), self._ts_inner.copy(*args, **kwargs), self._ts_engine, False)

    with_options = copy

    async def close(self) -> None:
        """Close the HTTP client and stop watching ``config.toml``."""
        if self._ts_owner:
            self._ts_engine.close()
        await self._ts_inner.close()


class ToolSearchOpenAI(openai.OpenAI):
    """An ``openai.OpenAI`` whose ``create`` calls do tool search; made by `wrap_openai`."""

    _ts_inner: openai.OpenAI
    _ts_engine: Engine
    _ts_owner: bool

    @property
    def chat(self) -> Any:
        """``chat``, with ``completions.create`` doing tool search."""
        return _SyncChat(self._ts_inner.chat, self._ts_engine)

    @property
    def responses(self) -> Any:
        """``responses``, with ``create`` doing tool search."""
        return _SyncResponses(self._ts_inner.responses, self._ts_engine)

    @property
    def with_raw_response(self) -> Any:
        """The given client's ``with_raw_response`` (no tool search)."""
        return self._ts_inner.with_raw_response

    @property
    def with_streaming_response(self) -> Any:
        """The given client's ``with_streaming_response`` (no tool search)."""
        return self._ts_inner.with_streaming_response

    def copy(self, *args: Any, **kwargs: Any) -> Any:
        """A wrapped copy of the given client's ``copy(...)``, sharing the settings."""
        return _adopt(type(self), self._ts_inner.copy(*args, **kwargs), self._ts_engine, False)

    with_options = copy

    def close(self) -> None:
        """Close the HTTP client and stop watching ``config.toml``."""
        if self._ts_owner:
            self._ts_engine.close()
        self._ts_inner.close()


def engine_of(client: object) -> Engine | None:
    """The `Engine` behind a client made by `wrap_openai`, else ``None``."""
    engine = getattr(client, "_ts_engine", None)
    return engine if isinstance(engine, Engine) else None


@overload
def wrap_openai(
    client: openai.AsyncOpenAI,
    *,
    config: str | os.PathLike[str] | None = None,
    settings: BotSettings | None = None,
) -> openai.AsyncOpenAI: ...


@overload
def wrap_openai(
    client: openai.OpenAI,
    *,
    config: str | os.PathLike[str] | None = None,
    settings: BotSettings | None = None,
) -> openai.OpenAI: ...


def wrap_openai(
    client: openai.AsyncOpenAI | openai.OpenAI,
    *,
    config: str | os.PathLike[str] | None = None,
    settings: BotSettings | None = None,
) -> openai.AsyncOpenAI | openai.OpenAI:
    """Tool search underneath any framework: a client to hand it instead of ``client``.

    ``chat.completions.create(...)`` and ``responses.create(...)`` send the model only the
    always-loaded tools, the tools loaded so far and ``tool_search``, with the
    ``<available_deferred_tools>`` directory and the rules (the texts and placement of the
    `Bot`). The caller keeps passing its full ``tools`` list. When the model calls
    ``tool_search``, the wrapper answers it and asks the model again within the same
    ``create`` call (at most ``[model] max_rounds`` requests), so the caller only ever sees
    calls of its own tools. The loaded set is re-derived from the history the caller resends
    (the tools it already called, in first-call order); the wrapper keeps no conversation
    state. Under ``[skills] tool_search_loading = "bridge"`` or ``"additional_tools"`` the
    upstream gets the same ``tools`` in every request, and a ``call_tool`` call comes back as
    an ordinary call of the tool. ``usage`` is summed over every upstream request of the
    call. A request without
    ``tools``, or with a caller tool named ``tool_search``, is passed through untouched; with
    tool search off in the settings, only the tools ``[tools] allow``/``deny`` leave are sent
    (a call to another is refused as no such tool); upstream errors raise the ``openai``
    exceptions the client itself raises.

    Args:
        client: an ``openai.AsyncOpenAI`` or ``openai.OpenAI``; it stays usable on its own.
        config: a ``config.toml`` path, hot-reloaded (the next call sees a valid edit).
        settings: fixed settings instead of a file. With neither, the ``[skills]`` defaults
            with tool search on. Settings (or a file) that do not set ``[skills]
            tool_search_enabled`` leave it off, as for the `Bot`, and log a warning saying so;
            ``[tools] allow``/``deny`` hold either way.

    Returns:
        A client of the same kind, sharing the given one's configuration and connections.

    Raises:
        TypeError: ``client`` is not an openai client, or both ``config`` and ``settings``.
        ConfigError: ``config`` cannot be read or is invalid.
    """
    engine = Engine(config=config, settings=settings)
    given = settings if settings is not None else engine.snapshot() if config is not None else None
    if given is not None and "tool_search_enabled" not in given.skills.model_fields_set:
        logger.warning(TOOL_SEARCH_NOT_SET, "config" if config is not None else "settings")
    if isinstance(client, openai.AsyncOpenAI):
        wrapped: openai.AsyncOpenAI = _adopt(ToolSearchAsyncOpenAI, client, engine, True)
        return wrapped
    if isinstance(client, openai.OpenAI):
        sync: openai.OpenAI = _adopt(ToolSearchOpenAI, client, engine, True)
        return sync
    engine.close()
    raise TypeError(
        f"wrap_openai needs an openai.AsyncOpenAI or openai.OpenAI, got {type(client).__name__}"
    )
