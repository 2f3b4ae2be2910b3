"""The OpenAI-compatible proxy: the wrapped client behind HTTP, for a client in any language.

``POST /v1/chat/completions`` and ``POST /v1/responses`` go through `wrap_openai` (tool
search, hidden rounds, SSE streaming for both); ``GET /healthz`` answers ``ok``;
every other path (``GET /v1/models`` ...) is forwarded to the upstream as is. The API key the
client sends (``Authorization: Bearer``) is the one used upstream, per request; no key is ever
logged. An upstream 4xx comes back with its own status and body (the client's request or key
was wrong); an upstream that fails (5xx, unreachable, timeout) is HTTP 502 with the upstream's
message. The proxy keeps no conversation state, so any number of workers or hosts can serve
one conversation.
"""

from __future__ import annotations

import gc
import inspect
import json
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any, TypeAlias

import openai
from openai.resources.chat.completions import AsyncCompletions
from openai.resources.responses import AsyncResponses

from bot_toolsearch._config.settings import BotSettings
from bot_toolsearch._wrap.client import engine_of, wrap_openai

__all__ = ["ENV_CONFIG", "ENV_UPSTREAM", "ProxyApp", "app_from_env"]

logger = logging.getLogger("bot_toolsearch")

ENV_UPSTREAM = "BOT_TOOLSEARCH_UPSTREAM"
"""The upstream base URL for `app_from_env` (how ``serve --workers N`` hands it over)."""
ENV_CONFIG = "BOT_TOOLSEARCH_CONFIG"
"""The ``config.toml`` path for `app_from_env`, if any."""

_Scope: TypeAlias = MutableMapping[str, Any]
_Receive: TypeAlias = Callable[[], Awaitable[MutableMapping[str, Any]]]
_Send: TypeAlias = Callable[[MutableMapping[str, Any]], Awaitable[None]]

_MAX_BODY = 64 * 1024 * 1024
_FULL_COLLECTION_EVERY = 1000
"""Middle-generation collections between two full ones under ``freeze_heap`` (CPython's
default is 10). Each request parses a large tool list that stays alive while the upstream
answers; with 50 requests in flight, every full collection walked millions of those objects
(1,000 tools, one worker: 29 requests/s before, 43 after, profiled). Cyclic garbage waits
longer to be freed; reference counting frees everything else at once."""
_HOP_HEADERS = frozenset(
    {"host", "content-length", "connection", "transfer-encoding", "keep-alive", "accept-encoding"}
)


def _parameters(method: Callable[..., Any]) -> frozenset[str]:
    return frozenset(
        name
        for name, p in inspect.signature(method).parameters.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    )


_CHAT_PARAMS = _parameters(AsyncCompletions.create)
_RESPONSES_PARAMS = _parameters(AsyncResponses.create)


def _sdk_kwargs(body: dict[str, Any], known: frozenset[str]) -> dict[str, Any]:
    """The JSON body as SDK keyword arguments; fields the SDK does not name go as extra_body."""
    kwargs = {k: v for k, v in body.items() if k in known and not k.startswith("extra_")}
    extra = {k: v for k, v in body.items() if k not in known}
    if extra:
        kwargs["extra_body"] = extra
    return kwargs


class ProxyApp:
    """The ASGI application.

    Args:
        upstream: the upstream's base URL, e.g. ``https://api.openai.com/v1``.
        config: a ``config.toml`` path (hot-reloaded), or ``settings``; with neither, the
            ``[skills]`` defaults with tool search on.
        timeout: seconds per upstream request.
        freeze_heap: tune the cycle collector for a process that only serves the proxy (what
            ``bot-toolsearch serve`` runs), never for an app embedded in another program: the
            heap is frozen after each newly indexed tool list (`gc.freeze`), and full
            collections run a hundred times less often (`_FULL_COLLECTION_EVERY`).
    """

    def __init__(
        self,
        upstream: str,
        *,
        config: str | os.PathLike[str] | None = None,
        settings: BotSettings | None = None,
        timeout: float = 600.0,
        freeze_heap: bool = False,
    ) -> None:
        self._freeze_heap = freeze_heap
        if freeze_heap:
            young, middle, _ = gc.get_threshold()
            gc.set_threshold(young, middle, _FULL_COLLECTION_EVERY)
        self.upstream = upstream.rstrip("/")
        # The SDK's own HTTP client class (httpx or httpx2, by SDK version), for forwarding too.
        self._http = openai.DefaultAsyncHttpxClient(timeout=timeout)
        # One retry: a pooled keep-alive connection the upstream closed meanwhile fails once.
        inner = openai.AsyncOpenAI(
            base_url=self.upstream, api_key="unset", max_retries=1, http_client=self._http
        )
        self._client = wrap_openai(inner, config=config, settings=settings)
        engine = engine_of(self._client)
        assert engine is not None
        self._cache = engine.cache

    async def aclose(self) -> None:
        """Close the upstream connections and stop watching ``config.toml``."""
        await self._client.close()

    async def __call__(self, scope: _Scope, receive: _Receive, send: _Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        method, path = scope["method"], scope["path"].rstrip("/") or "/"
        if path == "/healthz":
            await _json(send, 200, {"status": "ok"})
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        body = await _read_body(receive)
        if method == "POST" and path in ("/v1/chat/completions", "/v1/responses"):
            await self._create(send, path, headers, body)
        else:
            await self._forward(send, scope, headers, body)

    async def _lifespan(self, receive: _Receive, send: _Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _create(self, send: _Send, path: str, headers: dict[str, str], raw: bytes) -> None:
        try:
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise ValueError("the body is not a JSON object")
        except ValueError as exc:
            await _error(
                send, 400, f"could not parse the JSON body: {exc}", "invalid_request_error"
            )
            return
        client = self._client.with_options(
            api_key=_bearer(headers) or "unset", default_headers=_forwarded_headers(headers)
        )
        chat = path == "/v1/chat/completions"
        kwargs = _sdk_kwargs(body, _CHAT_PARAMS if chat else _RESPONSES_PARAMS)
        builds = self._cache.builds
        try:
            if chat:
                result = await client.chat.completions.create(**kwargs)
            else:
                result = await client.responses.create(**kwargs)
        except openai.APIStatusError as exc:
            if exc.status_code < 500:
                await _json(send, exc.status_code, _error_body(exc))
            else:
                await _upstream_failed(send, exc)
            return
        except openai.APIError as exc:  # connection errors and timeouts
            await _upstream_failed(send, exc)
            return
        except TypeError as exc:  # a field the SDK refuses (e.g. a wrong argument type)
            await _error(send, 400, str(exc), "invalid_request_error")
            return
        if self._freeze_heap and self._cache.builds != builds:
            self._settle()
        if body.get("stream") is True:
            await _sse(send, result, events=not chat)
        else:
            await _json(send, 200, result.model_dump(mode="json", exclude_unset=True))

    def _settle(self) -> None:
        """After a new tool list was indexed: move the long-lived heap out of the collector's way.

        Each request parses a large tool list into short-lived objects; with the cached
        catalogs on the heap, every full collection the parse triggers walks them all (about
        three quarters of a request's time at 1,000 tools). Frozen objects are still freed by
        reference counting when the cache drops them; they are only skipped by the cycle
        collector. Happens once per distinct tool list.
        """
        self._cache.build_indexes()
        gc.collect()
        gc.freeze()

    async def _forward(
        self, send: _Send, scope: _Scope, headers: dict[str, str], body: bytes
    ) -> None:
        path: str = scope["path"]
        if path.startswith("/v1/") or path == "/v1":
            path = path[3:]
        url = self.upstream + path
        query = scope.get("query_string") or b""
        if query:
            url += "?" + query.decode("latin-1")
        forward = {k: v for k, v in headers.items() if k not in _HOP_HEADERS}
        try:
            response = await self._http.request(scope["method"], url, headers=forward, content=body)
        except Exception as exc:  # any transport failure of the SDK's HTTP library
            logger.warning("proxy: upstream request failed: %s", type(exc).__name__)
            await _error(send, 502, f"upstream failed: {exc}", "upstream_error")
            return
        if response.status_code >= 500:
            await _error(send, 502, f"upstream failed: {response.text[:2000]}", "upstream_error")
            return
        out = [(b"content-length", str(len(response.content)).encode())]
        content_type = response.headers.get("content-type")
        if content_type:
            out.append((b"content-type", content_type.encode("latin-1")))
        await send({"type": "http.response.start", "status": response.status_code, "headers": out})
        await send({"type": "http.response.body", "body": response.content})


def _bearer(headers: dict[str, str]) -> str | None:
    value = headers.get("authorization", "")
    scheme, _, token = value.partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return headers.get("api-key") or None


def _forwarded_headers(headers: dict[str, str]) -> dict[str, str]:
    """Client headers worth passing upstream (organisation, project, beta flags)."""
    keep = ("openai-organization", "openai-project", "openai-beta")
    return {k: v for k, v in headers.items() if k in keep}


def _error_body(exc: openai.APIStatusError) -> dict[str, Any]:
    body = exc.body
    if isinstance(body, dict) and "error" in body:
        return body
    if isinstance(body, dict):
        return {"error": body}
    return {"error": {"message": exc.message, "type": "upstream_error"}}


async def _upstream_failed(send: _Send, exc: openai.APIError) -> None:
    logger.warning("proxy: upstream failed: %s (%r)", type(exc).__name__, exc.__cause__)
    await _error(send, 502, f"upstream failed: {exc.message}", "upstream_error")


async def _error(send: _Send, status: int, message: str, kind: str) -> None:
    await _json(send, status, {"error": {"message": message, "type": kind}})


async def _json(send: _Send, status: int, payload: object) -> None:
    raw = json.dumps(payload, ensure_ascii=False).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": raw})


async def _sse(send: _Send, stream: AsyncIterator[Any], *, events: bool = False) -> None:
    """The stream as server-sent events: Chat Completions chunks as ``data:`` lines ending with
    ``[DONE]``; Responses events (``events``) as ``event: <type>`` plus ``data:``, no ``[DONE]``,
    as the real APIs send them."""
    headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})

    async def line(data: str, kind: str | None = None) -> None:
        head = f"event: {kind}\n" if kind else ""
        body = f"{head}data: {data}\n\n".encode()
        await send({"type": "http.response.body", "body": body, "more_body": True})

    try:
        async for chunk in stream:
            data = chunk.model_dump_json(exclude_unset=True)
            await line(data, getattr(chunk, "type", None) if events else None)
    except openai.APIError as exc:  # the status line is sent: report in the stream
        logger.warning("proxy: upstream failed mid-stream: %s", type(exc).__name__)
        message = f"upstream failed: {exc.message}"
        if events:
            error = {"type": "error", "code": "upstream_error", "message": message, "param": None}
            await line(json.dumps(error), "error")
        else:
            await line(json.dumps({"error": {"message": message, "type": "upstream_error"}}))
    if events:
        await send({"type": "http.response.body", "body": b""})
    else:
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n"})


async def _read_body(receive: _Receive) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size <= _MAX_BODY:
            chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def app_from_env() -> ProxyApp:
    """The app for uvicorn's factory mode: upstream and config from the environment.

    Raises:
        RuntimeError: ``BOT_TOOLSEARCH_UPSTREAM`` is not set.
    """
    upstream = os.environ.get(ENV_UPSTREAM)
    if not upstream:
        raise RuntimeError(f"set {ENV_UPSTREAM} to the upstream base URL")
    return ProxyApp(upstream, config=os.environ.get(ENV_CONFIG) or None, freeze_heap=True)
