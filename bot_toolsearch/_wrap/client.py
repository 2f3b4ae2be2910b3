"""`wrap_openai`: an ``openai`` client whose model requests do tool search, nothing else.

The wrapped client is a real ``openai.AsyncOpenAI`` (or ``openai.OpenAI``) sharing the given
client's configuration and HTTP connection pool, so ``isinstance`` checks and every other
resource (``models``, ``files``, ``embeddings`` ...) behave as the given client's. Only
``chat.completions`` and ``responses`` are wrapped: ``create`` does tool search, the SDK's
``parse`` and ``stream`` helpers run over it, and every other method either is the given
client's (stored objects, no tool list) or refuses (`bot_toolsearch._wrap.surface`), with
their ``with_raw_response`` and ``with_streaming_response`` forms (`bot_toolsearch._wrap.raw`),
the client-level ones included (the SDK's own, over the wrapped resources);
``with_options``/``copy`` return wrapped copies.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from collections.abc import Callable
from typing import Any, overload

import openai
import openai.resources.chat.completions as chat_resources
import openai.resources.responses as responses_resources

from bot_toolsearch._config.settings import BotSettings
from bot_toolsearch._protocol.trace import RoundTrace
from bot_toolsearch._services.mode import announce, search_mode
from bot_toolsearch._services.threads import POOLS

from .chat import ChatPlan
from .engine import Engine
from .permitted import carry
from .plan import Pending, busy
from .raw import handled, split_raw
from .replies import guard_async, guard_sync
from .responses import ResponsesPlan, round_sender, round_sender_async
from .responses_streaming import responses_stream_async, responses_stream_sync
from .rounds import drive, drive_sync
from .streaming import chat_stream_async, chat_stream_sync
from .surface import PASSED, Resource, create_parameters, is_public, post_kwargs, refusal
from .verbatim import VERBATIM

__all__ = ["engine_of", "wrap_openai"]

logger = logging.getLogger("bot_toolsearch")


class _Delegate:
    """Every attribute not defined here is the wrapped object's."""

    def __init__(self, inner: Any, engine: Engine) -> None:
        self._inner = inner
        self._engine = engine

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Resource(_Delegate):
    """What the async and sync wrapped resources share: the SDK surface (`surface`).

    ``create`` does tool search; the SDK's own ``parse`` and ``stream`` helpers run over it
    (``stream`` calls ``self.create(stream=True)``, ``parse`` posts through `_post`, which
    sends the helper's request with the wrapped ``create``); ``with_raw_response`` and
    ``with_streaming_response`` are the SDK's own classes over this resource. Any other
    public name is the given client's when `surface.PASSED` lists it, else refused.
    """

    _name: Resource
    _sdk: Any  # the SDK's resource class, whose helpers run with this resource as ``self``
    _raw: Any  # the SDK's ``...WithRawResponse`` class
    _streaming: Any  # the SDK's ``...WithStreamingResponse`` class
    _known: frozenset[str]  # the keyword arguments of the SDK's ``create``

    def __getattr__(self, name: str) -> Any:
        if not is_public(name) or name in PASSED[self._name]:
            return getattr(self._inner, name)
        return refusal(self._name, name)

    def _through(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """A passed-through call's arguments: a ``previous_response_id`` naming a stream id
        that stands for a later response names that response (`ResponseAliases`); a request
        in a client's own tool-search dialect made ordinary (`Engine.through`)."""
        kwargs = self._engine.through(
            kwargs, "chat" if self._name == "chat.completions" else "responses"
        )
        previous = kwargs.get("previous_response_id")
        if self._name != "responses" or not isinstance(previous, str):
            return kwargs
        return {**kwargs, "previous_response_id": self._engine.aliases.resolve(previous)}

    @property
    def _url(self) -> str:
        """Where this resource's ``create`` posts (for an error about its reply)."""
        client = getattr(self._inner, "_client", None)
        path = "/chat/completions" if self._name == "chat.completions" else "/responses"
        return f"{str(getattr(client, 'base_url', '')).rstrip('/')}{path}"

    def stream(self, **kwargs: Any) -> Any:
        """The SDK's ``stream()`` helper over the wrapped ``create(stream=True)``."""
        return self._sdk.stream(self, **kwargs)

    @property
    def with_raw_response(self) -> Any:
        """The SDK's ``with_raw_response`` over this resource (see `bot_toolsearch._wrap.raw`)."""
        return self._raw(self)

    @property
    def with_streaming_response(self) -> Any:
        """The SDK's ``with_streaming_response`` over this resource."""
        return self._streaming(self)


class _AsyncResource(_Resource):
    """An async ``create`` with tool search: `_plan` decides, `_run` drives the plan."""

    async def create(self, **kwargs: Any) -> Any:
        """``create`` with tool search (see `wrap_openai`)."""
        mode, plain = split_raw(kwargs)
        plan = await self._aplan(plain)
        if plan is None:
            passed = await self._inner.create(**self._through(carry(kwargs, plain)))
            return self._engine.passed(passed, self._url)
        done = await self._run(plan, plain)
        self._engine.share_platform(getattr(self._inner, "_client", None))
        return handled(mode, done, is_async=True)

    async def parse(self, **kwargs: Any) -> Any:
        """The SDK's ``parse()`` helper, its request sent by the wrapped ``create``."""
        return await self._sdk.parse(self, **kwargs)

    async def _post(self, path: str, **params: Any) -> Any:
        """A ``parse`` helper's request: through the wrapped ``create``, parsed as the SDK's."""
        kwargs = post_kwargs(self._name, path, params, self._known)
        mode, plain = split_raw(kwargs)
        plan = await self._aplan(plain)
        if plan is None:
            return await self._inner._post(path, **params)
        result = _post_parse(params, await self._run(plan, plain))
        return handled(mode, result, is_async=True)

    async def _aplan(self, kwargs: dict[str, Any]) -> Any:
        """The plan, made on the event loop when the tool list is indexed already, else in
        the ``index`` pool (`bot_toolsearch._services.threads.POOLS`): indexing a new list
        takes time in proportion to the list (most of a second at 10,000 tools), which the
        loop never waits. A cancelled call leaves the build to finish; the list is kept.

        Calls that need the same build (the same cached list under the same settings: a
        burst of clients sending one new list) wait for the one under way, then plan on the
        loop, rather than each taking a place in the pool's bounded queue.

        Raises:
            PoolBusy: the index pool's queue is full (a server answers 503).
        """
        plan = self._plan(kwargs, build=False)
        if not isinstance(plan, Pending):
            return plan
        builds = self._engine.builds
        key = None if plan.build is None else (asyncio.get_running_loop(), plan.build)
        if key is not None and await builds.wait(key):
            plan = self._plan(kwargs, build=False)
            if not isinstance(plan, Pending):
                return plan
        return await builds.run(
            key, POOLS.index.run(functools.partial(self._plan, kwargs), deadline=0)
        )

    def _plan(self, kwargs: dict[str, Any], *, build: bool = True) -> Any:
        raise NotImplementedError

    async def _run(self, plan: Any, kwargs: dict[str, Any]) -> Any:
        raise NotImplementedError


class _SyncResource(_Resource):
    """A sync ``create`` with tool search: `_plan` decides, `_run` drives the plan."""

    def create(self, **kwargs: Any) -> Any:
        """``create`` with tool search (see `wrap_openai`)."""
        mode, plain = split_raw(kwargs)
        plan = self._plan(plain)
        if plan is None:
            passed = self._inner.create(**self._through(carry(kwargs, plain)))
            return self._engine.passed(passed, self._url)
        return handled(mode, self._run(plan, plain), is_async=False)

    def parse(self, **kwargs: Any) -> Any:
        """The SDK's ``parse()`` helper, its request sent by the wrapped ``create``."""
        return self._sdk.parse(self, **kwargs)

    def _post(self, path: str, **params: Any) -> Any:
        """A ``parse`` helper's request: through the wrapped ``create``, parsed as the SDK's."""
        kwargs = post_kwargs(self._name, path, params, self._known)
        mode, plain = split_raw(kwargs)
        plan = self._plan(plain)
        if plan is None:
            return self._inner._post(path, **params)
        result = _post_parse(params, self._run(plan, plain))
        return handled(mode, result, is_async=False)

    def _plan(self, kwargs: dict[str, Any]) -> Any:
        raise NotImplementedError

    def _run(self, plan: Any, kwargs: dict[str, Any]) -> Any:
        raise NotImplementedError


def _post_parse(params: dict[str, Any], result: Any) -> Any:
    """``result`` read by the helper's own parser (``options["post_parser"]``), if any."""
    options = params.get("options") or {}
    parser = options.get("post_parser")
    return parser(result) if callable(parser) else result


def _sdk_surface(
    name: Resource, sdk: Any, raw: Any, streaming: Any
) -> Callable[[type[_Resource]], type[_Resource]]:
    """Bind a wrapped resource class to the SDK classes it stands for."""

    def bind(cls: type[_Resource]) -> type[_Resource]:
        cls._name = name
        cls._sdk = sdk
        cls._raw = raw
        cls._streaming = streaming
        cls._known = create_parameters(sdk.create)
        return cls

    return bind


@_sdk_surface(
    "chat.completions",
    chat_resources.AsyncCompletions,
    chat_resources.AsyncCompletionsWithRawResponse,
    chat_resources.AsyncCompletionsWithStreamingResponse,
)
class _AsyncCompletions(_AsyncResource):
    def _plan(self, kwargs: dict[str, Any], *, build: bool = True) -> ChatPlan | Pending | None:
        return self._engine.chat_plan(kwargs, build=build)

    async def _run(self, plan: ChatPlan, kwargs: dict[str, Any]) -> Any:
        create = guard_async(self._inner, "chat", plan.accept)
        if kwargs.get("stream") is True:
            return await chat_stream_async(create, plan)
        done = await drive(plan, lambda request: create(**request), busy)
        verbatim = VERBATIM.get()
        if verbatim is not None and not plan.unchanged:
            verbatim.drop()  # the answer is not the last reply as it came
        return done


@_sdk_surface(
    "responses",
    responses_resources.AsyncResponses,
    responses_resources.AsyncResponsesWithRawResponse,
    responses_resources.AsyncResponsesWithStreamingResponse,
)
class _AsyncResponses(_AsyncResource):
    def _plan(
        self, kwargs: dict[str, Any], *, build: bool = True
    ) -> ResponsesPlan | Pending | None:
        return self._engine.responses_plan(kwargs, build=build)

    async def _run(self, plan: ResponsesPlan, kwargs: dict[str, Any]) -> Any:
        create = guard_async(self._inner, "responses", plan.accept)
        if kwargs.get("stream") is True:
            return await responses_stream_async(create, plan)
        return await drive(plan, round_sender_async(create), busy)


@_sdk_surface(
    "chat.completions",
    chat_resources.Completions,
    chat_resources.CompletionsWithRawResponse,
    chat_resources.CompletionsWithStreamingResponse,
)
class _SyncCompletions(_SyncResource):
    def _plan(self, kwargs: dict[str, Any], *, build: bool = True) -> ChatPlan | Pending | None:
        return self._engine.chat_plan(kwargs, build=build)

    def _run(self, plan: ChatPlan, kwargs: dict[str, Any]) -> Any:
        create = guard_sync(self._inner, "chat", plan.accept)
        if kwargs.get("stream") is True:
            return chat_stream_sync(create, plan)
        return drive_sync(plan, lambda request: create(**request))


@_sdk_surface(
    "responses",
    responses_resources.Responses,
    responses_resources.ResponsesWithRawResponse,
    responses_resources.ResponsesWithStreamingResponse,
)
class _SyncResponses(_SyncResource):
    def _plan(
        self, kwargs: dict[str, Any], *, build: bool = True
    ) -> ResponsesPlan | Pending | None:
        return self._engine.responses_plan(kwargs, build=build)

    def _run(self, plan: ResponsesPlan, kwargs: dict[str, Any]) -> Any:
        create = guard_sync(self._inner, "responses", plan.accept)
        if kwargs.get("stream") is True:
            return responses_stream_sync(create, plan)
        return drive_sync(plan, round_sender(create))


class _AsyncChat(_Delegate):
    @property
    def completions(self) -> _AsyncCompletions:
        return _AsyncCompletions(self._inner.completions, self._engine)


class _SyncChat(_Delegate):
    @property
    def completions(self) -> _SyncCompletions:
        return _SyncCompletions(self._inner.completions, self._engine)


class _BetaResponses(_Delegate):
    """``beta.responses``: stored responses pass; a model request is refused."""

    def __getattr__(self, name: str) -> Any:
        if not is_public(name) or name in PASSED["responses"]:
            return getattr(self._inner, name)
        return refusal("beta.responses", name)


class _AsyncBeta(_Delegate):
    """``beta``, whose ``chat`` is the wrapped one and whose ``responses`` refuses."""

    @property
    def chat(self) -> _AsyncChat:
        return _AsyncChat(self._inner.chat, self._engine)

    @property
    def responses(self) -> _BetaResponses:
        return _BetaResponses(self._inner.responses, self._engine)


class _SyncBeta(_Delegate):
    """``beta``, whose ``chat`` is the wrapped one and whose ``responses`` refuses."""

    @property
    def chat(self) -> _SyncChat:
        return _SyncChat(self._inner.chat, self._engine)

    @property
    def responses(self) -> _BetaResponses:
        return _BetaResponses(self._inner.responses, self._engine)


_OWN = ("_ts_inner", "_ts_engine", "_ts_owner")


def _adopt(cls: type[Any], client: Any, engine: Engine, owner: bool) -> Any:
    """An instance of ``cls`` (a subclass of the client's class) sharing ``client``'s state."""
    wrapped = object.__new__(cls)
    state = dict(client.__dict__)
    # Resources cached on the given client would hand out its own (unwrapped) ``create``.
    for name in ("chat", "responses", "beta", "with_raw_response", "with_streaming_response"):
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
    def beta(self) -> Any:
        """``beta``, with ``chat.completions`` wrapped and ``responses`` model requests refused."""
        return _AsyncBeta(self._ts_inner.beta, self._ts_engine)

    def copy(self, *args: Any, **kwargs: Any) -> Any:
        """A wrapped copy of the given client's ``copy(...)``, sharing the settings."""
        copied = self._ts_inner.copy(*args, **kwargs)
        self._ts_engine.share_platform(self._ts_inner, copied)
        return _adopt(type(self), copied, self._ts_engine, False)

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
    def beta(self) -> Any:
        """``beta``, with ``chat.completions`` wrapped and ``responses`` model requests refused."""
        return _SyncBeta(self._ts_inner.beta, self._ts_engine)

    def copy(self, *args: Any, **kwargs: Any) -> Any:
        """A wrapped copy of the given client's ``copy(...)``, sharing the settings."""
        copied = self._ts_inner.copy(*args, **kwargs)
        self._ts_engine.share_platform(self._ts_inner, copied)
        return _adopt(type(self), copied, self._ts_engine, False)

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
    on_round: Callable[[RoundTrace], object] | None = None,
) -> openai.AsyncOpenAI: ...


@overload
def wrap_openai(
    client: openai.OpenAI,
    *,
    config: str | os.PathLike[str] | None = None,
    settings: BotSettings | None = None,
    on_round: Callable[[RoundTrace], object] | None = None,
) -> openai.OpenAI: ...


def wrap_openai(
    client: openai.AsyncOpenAI | openai.OpenAI,
    *,
    config: str | os.PathLike[str] | None = None,
    settings: BotSettings | None = None,
    on_round: Callable[[RoundTrace], object] | None = None,
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
    exceptions the client itself raises. The SDK's ``stream()`` and ``parse()`` helpers
    run over the wrapped ``create``; every other method of these resources is the given
    client's (no model request with tools) or raises `UnsupportedCallError` naming the
    supported call (``responses.connect``, a method of a later SDK): none skips tool search.

    Args:
        client: an ``openai.AsyncOpenAI`` or ``openai.OpenAI``; it stays usable on its own.
        config: a ``config.toml`` path, hot-reloaded (the next call sees a valid edit).
        settings: fixed settings instead of a file. With neither, the ``[skills]`` defaults
            with tool search on. Settings (or a file) that do not set ``[skills]
            tool_search_enabled`` leave it off, as for the `Bot`, and log a warning saying so;
            ``[tools] allow``/``deny`` hold either way.
        on_round: called with a `RoundTrace` for each upstream round of a tool-searched
            call, as soon as it is read: ``hidden`` for a round the wrapper answered itself,
            its ``searches`` (queries), ``loaded`` names, ``refusals`` and tokens. Called
            synchronously (in a worker thread when the semantic stage is on); one that raises
            is logged, never fatal. The same facts go to the logger ``bot_toolsearch.rounds``
            at INFO (structured, ``extra`` fields ``toolsearch_*``) and, with the ``otel``
            extra, to OpenTelemetry spans.

    Returns:
        A client of the same kind, sharing the given one's configuration and connections.

    Raises:
        TypeError: ``client`` is not an openai client, or both ``config`` and ``settings``.
        ConfigError: ``config`` cannot be read or is invalid.
    """
    engine = Engine(config=config, settings=settings, on_round=on_round)
    given = settings if settings is not None else engine.snapshot() if config is not None else None
    source = f"config {os.fspath(config)}" if config is not None else "settings"
    announce("wrap_openai", search_mode(given, source=source))
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
