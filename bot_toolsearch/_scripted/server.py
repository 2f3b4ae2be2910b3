"""`ScriptedOpenAIServer`: the scripted app served by uvicorn in a background thread."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import Self

import uvicorn

from .app import Responder, ScriptState, app_for
from .cache import PromptCacheModel
from .embeddings import ScriptedEmbeddings
from .request import ModelRequest, UnconsumedTurns, UnexpectedModelCall
from .turns import ScriptEntry, Turn, as_turn

__all__ = ["ScriptedOpenAIServer"]

_HOST = "127.0.0.1"
_START_TIMEOUT = 30.0
_STOP_TIMEOUT = 5.0


class _ThreadServer(uvicorn.Server):
    """A uvicorn server that reports readiness and exits as soon as it is told to."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._exit: asyncio.Event | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        self._loop = asyncio.get_running_loop()
        self._exit = asyncio.Event()
        try:
            await super().startup(sockets=sockets)
        finally:
            self.ready.set()

    async def main_loop(self) -> None:
        # uvicorn polls should_exit every 0.1 s; waiting on an event makes stop() immediate.
        await self.on_tick(0)
        assert self._exit is not None
        if not self.should_exit:
            await self._exit.wait()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        # uvicorn's own shutdown sleeps a fixed 0.1 s and then polls every 0.1 s; a test suite
        # stops one server per test, so poll briefly instead (same steps, same order).
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()
        deadline = asyncio.get_running_loop().time() + _STOP_TIMEOUT
        # uvicorn offers no "all connections closed" event, hence the short poll.
        while self._busy(deadline):  # noqa: ASYNC110
            await asyncio.sleep(0.002)
        for task in self.server_state.tasks:
            task.cancel()
        for server in self.servers:
            await server.wait_closed()
        await self.lifespan.shutdown()

    def _busy(self, deadline: float) -> bool:
        state = self.server_state
        in_time = asyncio.get_running_loop().time() < deadline
        return bool(state.connections or state.tasks) and in_time

    def request_exit(self) -> None:
        """Ask the server to shut down (thread-safe)."""
        self.should_exit = True
        if self._loop is not None and self._exit is not None:
            with contextlib.suppress(RuntimeError):  # the loop already closed
                self._loop.call_soon_threadsafe(self._exit.set)


class ScriptedOpenAIServer:
    """An OpenAI-compatible server on 127.0.0.1 that answers from a script of turns.

    It serves ``POST /v1/chat/completions``, ``POST /v1/responses`` and ``GET /v1/models`` for
    the real ``openai`` SDK, records every request, and fails loudly: a request with no turn
    left (and no responder) is answered with HTTP 400 and makes `stop` raise
    `UnexpectedModelCall`; `assert_consumed` raises `UnconsumedTurns` for turns never used.

    Like the real API it answers, without using a turn, HTTP 400 for an unknown
    ``previous_response_id`` and, with ``validate=True``, for tool results that answer no tool
    call. Reported usage is an estimate (see the ``bot_toolsearch.testing`` docstring) unless
    ``prompt_cache`` is on.

    With ``prompt_cache=True`` (or a `PromptCacheModel`) the server models a provider's
    automatic prefix cache, OpenAI's rule by default: it renders each request as the provider
    does (``tools`` first, then the instructions and messages or input items in order, each as
    canonical JSON; a ``previous_response_id`` chain contributes its earlier input and output
    items), counts it in ``o200k_base`` (or one token per four UTF-8 bytes without the optional
    ``bpe-openai``), remembers every 128-token prefix it has seen, and reports as
    ``prompt_tokens_details.cached_tokens`` / ``input_tokens_details.cached_tokens`` the longest
    prefix an earlier request already had, in whole 128-token blocks and only from 1,024
    tokens on; ``prompt_tokens`` / ``input_tokens`` is the rendered prompt's token count. A
    turn's explicit ``usage`` still wins. See `PromptCacheModel` for what the model leaves out.

    Example (run by ``tests/test_readme.py``)::

        import asyncio

        import openai

        from bot_toolsearch import Bot, BotSettings, tool
        from bot_toolsearch.testing import ScriptedOpenAIServer, call, text

        @tool(name="weather.forecast", description="Forecast the weather for a city.")
        def forecast(city: str) -> str:
            return f"{city}: sunny"

        async def test_the_bot_finds_and_calls_the_forecast() -> None:
            settings = BotSettings(skills={"tool_search_enabled": True})
            with ScriptedOpenAIServer() as server:
                server.script(
                    call("tool_search", query="select:weather.forecast"),  # round 1
                    call("weather-_-forecast", city="Oslo"),                # round 2
                    text("Sunny in Oslo."),                                 # round 3
                )
                async with openai.AsyncOpenAI(
                    base_url=server.base_url, api_key="test", max_retries=0
                ) as client:
                    result = await Bot(settings, [forecast], client=client).ask("Oslo weather?")
                server.assert_consumed()
            # Round 1 offers the always-loaded tools and tool_search; round 2 adds the
            # loaded schema, under its wire name.
            assert server.requests[0].tool_names == ["send_message", "end", "tool_search"]
            assert "weather-_-forecast" in server.requests[1].tool_names
            assert result.reply == "Sunny in Oslo."

        asyncio.run(test_the_bot_finds_and_calls_the_forecast())

    Args:
        responder: answers a request when the script is empty (the offline demo model).
        models: the model ids ``GET /v1/models`` lists.
        validate: answer the API's 400s for unpaired tool results.
        prompt_cache: ``True`` for the OpenAI prefix-cache model, a `PromptCacheModel` for
            other sizes or the byte estimate, ``False`` for the default estimate.
        refuse_native: answer HTTP 400 as a backend with no native tool search does, for a
            ``tool_search`` or ``namespace`` tool type, a ``defer_loading`` key, a
            ``tool_search_call``/``tool_search_output`` input item, a ``function_call``'s
            ``namespace`` or an ``item_reference`` to an id it never issued as an output
            item (the request is recorded; no scripted turn is used).

    Raises:
        TypeError: ``prompt_cache`` is neither a bool nor a `PromptCacheModel`.
    """

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        models: Iterable[str] = ("scripted-model",),
        validate: bool = True,
        prompt_cache: bool | PromptCacheModel = False,
        refuse_native: bool = False,
    ) -> None:
        self._state = ScriptState(
            responder, models, validate, _cache_model(prompt_cache), refuse_native
        )
        self._server: _ThreadServer | None = None
        self._thread: threading.Thread | None = None
        self._port: int | None = None
        self._lifecycle = threading.Lock()

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> Self:
        """Start serving in a background thread; a no-op if already running.

        A restarted server tries to keep its previous port, so clients built from
        `base_url` keep working.

        Raises:
            RuntimeError: the server did not come up.
        """
        with self._lifecycle:
            if self._thread is not None:
                return self
            sock = _bind(self._port)
            port = sock.getsockname()[1]
            config = uvicorn.Config(
                app_for(self._state),
                host=_HOST,
                port=port,
                loop="asyncio",
                http="h11",
                ws="none",
                lifespan="off",
                log_config=None,
                access_log=False,
                server_header=False,
            )
            server = _ThreadServer(config)
            thread = threading.Thread(
                target=_serve,
                args=(server, sock),
                name=f"ScriptedOpenAIServer-{port}",
                daemon=True,
            )
            thread.start()
            if not server.ready.wait(_START_TIMEOUT) or not server.started:
                server.request_exit()
                thread.join(_START_TIMEOUT)
                sock.close()
                raise RuntimeError(f"ScriptedOpenAIServer could not start on {_HOST}:{port}")
            self._server, self._thread, self._port = server, thread, port
            return self

    def stop(self) -> None:
        """Stop serving and join the thread; a no-op if not running.

        Raises:
            UnexpectedModelCall: a request found no turn, or the responder raised.
        """
        with self._lifecycle:
            server, thread = self._server, self._thread
            self._server = self._thread = None
            if server is None or thread is None:
                return
            server.request_exit()
            thread.join(_START_TIMEOUT)
        self._raise_failures()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        """Whether the server is serving."""
        return self._thread is not None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``, for ``openai.OpenAI(base_url=...)``.

        Raises:
            RuntimeError: the server was never started.
        """
        if self._port is None:
            raise RuntimeError("ScriptedOpenAIServer is not started; call start() first")
        return f"http://{_HOST}:{self._port}/v1"

    # --- script and records ----------------------------------------------------------------

    def script(self, *entries: ScriptEntry) -> Self:
        """Append turns to the script, one per expected request.

        Args:
            *entries: a `Turn`, a single `ToolCall`, or a list/tuple of `ToolCall` (several
                calls in one response).

        Raises:
            TypeError: an entry has none of those shapes (nothing is appended).
            ValueError: a list of calls is empty.
        """
        turns = [as_turn(entry) for entry in entries]
        with self._state.lock:
            self._state.turns.extend(turns)
        return self

    @property
    def requests(self) -> list[ModelRequest]:
        """Every model request received, in arrival order, both endpoints (a copy)."""
        with self._state.lock:
            return list(self._state.requests)

    @property
    def prompts(self) -> list[str]:
        """With the prefix-cache model on: the rendered prompt text (see `PromptCacheModel`) of
        every request the cache model saw, in arrival order (a copy); otherwise empty.

        A request the server rejects before that, as the real API would (an unknown
        ``previous_response_id``, unpaired tool calls), has no prompt here.
        """
        with self._state.lock:
            return list(self._state.prompts)

    @property
    def remaining(self) -> list[Turn]:
        """The scripted turns not used yet (a copy)."""
        with self._state.lock:
            return list(self._state.turns)

    @property
    def failures(self) -> list[str]:
        """Descriptions of the unexpected calls so far (a copy)."""
        with self._state.lock:
            return list(self._state.failures)

    def assert_consumed(self) -> None:
        """Check that every turn was used and nothing unexpected happened.

        Raises:
            UnexpectedModelCall: a request found no turn, or the responder raised.
            UnconsumedTurns: scripted turns remain.
        """
        self._raise_failures()
        remaining = self.remaining
        if remaining:
            raise UnconsumedTurns(remaining)

    @property
    def embeddings(self) -> ScriptedEmbeddings:
        """``POST /v1/embeddings``: deterministic vectors, recorded requests, fault modes."""
        return self._state.embeddings

    def reset(self) -> None:
        """Forget the script, the requests, the failures, issued ids and the prefix cache."""
        self._state.reset()

    @property
    def prompt_cache(self) -> PromptCacheModel | None:
        """The prefix-cache model in use, or ``None`` when usage is the default estimate."""
        cache = self._state.prompt_cache
        return cache.model if cache is not None else None

    def _raise_failures(self) -> None:
        with self._state.lock:
            failures: Sequence[str] = list(self._state.failures)
            failed = list(self._state.failed_requests)
        if failures:
            raise UnexpectedModelCall(failures, failed)


def _cache_model(value: bool | PromptCacheModel) -> PromptCacheModel | None:
    if isinstance(value, PromptCacheModel):
        return value
    if isinstance(value, bool):
        return PromptCacheModel() if value else None
    raise TypeError(f"prompt_cache must be a bool or a PromptCacheModel, got {value!r}")


def _serve(server: _ThreadServer, sock: socket.socket) -> None:
    try:
        server.run(sockets=[sock])
    finally:
        server.ready.set()  # unblock start() even if uvicorn failed before listening
        sock.close()


def _bind(port: int | None) -> socket.socket:
    """A socket bound to 127.0.0.1, on ``port`` if it is still free, else on a fresh port."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    # A restart rebinds the old port while its accepted connections sit in TIME_WAIT.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((_HOST, port or 0))
    except OSError:
        if not port:
            sock.close()
            raise
        sock.bind((_HOST, 0))
    return sock
