"""The raw ASGI app of the scripted server: routing, recording and answering requests."""

from __future__ import annotations

import inspect
import json
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any, TypeAlias

from .cache import PromptCache, PromptCacheModel, render_prompt
from .embeddings import ScriptedEmbeddings, serve_embeddings
from .messages import check_messages, error_body, message_object, messages_stream
from .request import Api, ModelRequest, input_items
from .stream import chat_stream, responses_stream
from .turns import ErrorTurn, ScriptEntry, TextTurn, ToolCallsTurn, Turn, as_turn
from .wire import (
    chat_completion,
    check_chat_tool_messages,
    check_native,
    check_responses_call_ids,
    common_prefix_len,
    estimate_tokens,
    output_item_count,
    prompt_text,
    response_object,
)

__all__ = ["Responder", "ScriptState", "app_for"]

Responder: TypeAlias = Callable[[ModelRequest], ScriptEntry | Awaitable[ScriptEntry]]
"""Answers a request when the script is empty (sync or async)."""

_Scope: TypeAlias = MutableMapping[str, Any]
_Receive: TypeAlias = Callable[[], Awaitable[MutableMapping[str, Any]]]
_Send: TypeAlias = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp: TypeAlias = Callable[[_Scope, _Receive, _Send], Awaitable[None]]

_ROUTES: dict[str, Api] = {
    "/v1/chat/completions": "chat_completions",
    "/v1/responses": "responses",
    "/v1/messages": "messages",
}
_MAX_BODY = 64 * 1024 * 1024


class ScriptState:
    """Everything the server remembers; shared by the test thread and the server thread."""

    def __init__(
        self,
        responder: Responder | None,
        models: Iterable[str],
        validate: bool,
        prompt_cache: PromptCacheModel | None = None,
        refuse_native: bool = False,
    ) -> None:
        self.responder = responder
        self.models = list(models)
        self.validate = validate
        self.refuse_native = refuse_native
        self.prompt_cache = PromptCache(prompt_cache) if prompt_cache is not None else None
        self.lock = threading.RLock()
        self.embeddings = ScriptedEmbeddings()
        self.reset()

    def reset(self) -> None:
        """Forget the script, the requests, the failures, every issued id and seen prefix."""
        with self.lock:
            self.turns: deque[Turn] = deque()
            self.requests: list[ModelRequest] = []
            self.prompts: list[str] = []
            self.failures: list[str] = []
            self.failed_requests: list[ModelRequest] = []
            # response id -> the conversation items it leaves behind (input + output)
            self.responses: dict[str, list[dict[str, Any]]] = {}
            self.counters: dict[str, int] = {}
            self.produced: set[str] = set()  # every output item id answered so far
            self.last_prompt = ""
            if self.prompt_cache is not None:
                self.prompt_cache.clear()

    def next_id(self, prefix: str) -> str:
        """``prefix + n`` with a per-prefix counter (``call_1``, ``resp_1``, ...)."""
        with self.lock:
            n = self.counters.get(prefix, 0) + 1
            self.counters[prefix] = n
            return f"{prefix}{n}"

    def fail(self, message: str, request: ModelRequest | None) -> None:
        """Record a failure that ``stop()`` and ``assert_consumed()`` raise."""
        with self.lock:
            self.failures.append(message)
            if request is not None:
                self.failed_requests.append(request)


def app_for(state: ScriptState) -> ASGIApp:
    """The ASGI application serving ``state``."""

    async def app(scope: _Scope, receive: _Receive, send: _Send) -> None:
        if scope["type"] != "http":  # lifespan is off; nothing else is served
            return
        if scope["method"] == "POST" and scope["path"].rstrip("/") == "/v1/embeddings":
            await serve_embeddings(state.embeddings, await _read_body(receive), send)
            return
        status, payload, headers = await _handle(state, scope, receive)
        sse = isinstance(payload, bytes)
        if isinstance(payload, bytes):
            raw = payload
        else:
            try:
                raw = json.dumps(payload, ensure_ascii=False).encode()
            except UnicodeEncodeError:
                # A scripted lone surrogate goes out as the JSON escape a real model would send.
                raw = json.dumps(payload).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"text/event-stream" if sse else b"application/json"),
                    (b"content-length", str(len(raw)).encode()),
                    *headers,
                ],
            }
        )
        await send({"type": "http.response.body", "body": raw})

    return app


_Answer: TypeAlias = tuple[int, dict[str, Any] | bytes, list[tuple[bytes, bytes]]]
"""Status, a JSON body (or the raw bytes of a server-sent event stream), extra headers."""
_NO_RETRY = [(b"x-should-retry", b"false")]


def _error(status: int, message: str, *, param: str | None = None) -> _Answer:
    return status, ErrorTurn(status, message, param=param).body(), list(_NO_RETRY)


async def _handle(state: ScriptState, scope: _Scope, receive: _Receive) -> _Answer:
    method, path = scope["method"], scope["path"].rstrip("/")
    if method == "HEAD":  # a client's connectivity probe (Claude Code's HEAD of its base URL)
        return 200, {}, []
    if method == "GET" and path == "/v1/models":
        data = [
            {"id": m, "object": "model", "created": 0, "owned_by": "bot_toolsearch"}
            for m in state.models
        ]
        return 200, {"object": "list", "data": data}, []
    api = _ROUTES.get(path)
    if api is None or method != "POST":
        state.fail(f"unexpected {method} {path}", None)
        return _error(404, f"ScriptedOpenAIServer does not serve {method} {path}")
    raw = await _read_body(receive)
    try:
        body = json.loads(raw)
        if not isinstance(body, dict):
            raise ValueError("the body is not a JSON object")
    except ValueError as exc:
        state.fail(f"{path}: request body is not a JSON object ({exc})", None)
        return _error(400, f"We could not parse the JSON body of your request ({exc}).")
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
    request = ModelRequest(api, body, path, headers)
    with state.lock:
        state.requests.append(request)
        history = _history(state, request)
    if history is None:
        return _error(
            400,
            f"Previous response with id '{request.previous_response_id}' not found.",
            param="previous_response_id",
        )
    if api == "messages":
        return await _messages(state, request)
    if state.refuse_native:
        with state.lock:
            refused = check_native(request, frozenset(state.produced))
        if refused is not None:  # a backend with no native tool search: no scripted turn used
            return refused.status, refused.body(), list(_NO_RETRY)
    if state.validate:
        problem = (
            check_chat_tool_messages(request)
            if api == "chat_completions"
            else check_responses_call_ids(request, history)
        )
        if problem is not None:  # the real API's own 400: it uses no scripted turn
            return problem.status, problem.body(), []
    with state.lock:
        prompt_tokens, cached_tokens, prefixes = _prompt_usage(state, request, history)
        turn = state.turns.popleft() if state.turns else None
    if turn is None:
        answered = await _ask_responder(state, request)
        if isinstance(answered, tuple):
            return answered
        turn = answered
    if isinstance(turn, ErrorTurn):
        return turn.status, turn.body(), [] if turn.retry else list(_NO_RETRY)
    assert isinstance(turn, ToolCallsTurn | TextTurn)
    if state.prompt_cache is not None:
        with state.lock:
            state.prompt_cache.remember(prefixes)
    body_out = _success(
        state,
        request=request,
        turn=turn,
        history=history,
        prompt_tokens=prompt_tokens,
        cached_tokens=cached_tokens,
    )
    if body.get("stream") and api != "chat_completions":
        return 200, responses_stream(body_out), []
    if body.get("stream"):
        options = body.get("stream_options")
        usage = isinstance(options, dict) and options.get("include_usage") is True
        return 200, chat_stream(body_out, include_usage=usage), []
    return 200, body_out, []


async def _messages(state: ScriptState, request: ModelRequest) -> _Answer:
    """``POST /v1/messages``: the Messages mode (`bot_toolsearch._scripted.messages`)."""
    problem = check_messages(request, strict=state.refuse_native, validate=state.validate)
    if problem is not None:  # the API's own 400: it uses no scripted turn
        return problem.status, error_body(problem), list(_NO_RETRY)
    with state.lock:
        turn = state.turns.popleft() if state.turns else None
    if turn is None:
        answered = await _ask_responder(state, request)
        if isinstance(answered, tuple):
            return answered[0], _anthropic_error(answered), answered[2]
        turn = answered
    if isinstance(turn, ErrorTurn):
        return turn.status, error_body(turn), [] if turn.retry else list(_NO_RETRY)
    assert isinstance(turn, ToolCallsTurn | TextTurn)
    calls = turn.calls if isinstance(turn, ToolCallsTurn) else ()
    call_ids = [c.id if c.id is not None else state.next_id("toolu_") for c in calls]
    message = message_object(turn, request, message_id=state.next_id("msg_"), call_ids=call_ids)
    if request.body.get("stream"):
        return 200, messages_stream(message), []
    return 200, message, []


def _anthropic_error(answer: _Answer) -> dict[str, Any]:
    body = answer[1]
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return {"type": "error", "error": {"type": "api_error", "message": str(message)}}


def _prompt_usage(
    state: ScriptState, request: ModelRequest, history: list[dict[str, Any]]
) -> tuple[int, int, list[bytes]]:
    """``(prompt_tokens, cached_tokens, prefix keys)``: the prefix-cache model's (its keys to
    remember if the request succeeds), or the default estimate (no keys)."""
    if state.prompt_cache is not None:
        text = render_prompt(request, history)
        state.prompts.append(text)
        return state.prompt_cache.lookup(request.model or "", text)
    text = prompt_text(request, history)
    prompt_tokens = estimate_tokens(len(text))
    cached_tokens = estimate_tokens(common_prefix_len(text, state.last_prompt))
    state.last_prompt = text
    return prompt_tokens, cached_tokens, []


async def _ask_responder(state: ScriptState, request: ModelRequest) -> Turn | _Answer:
    if state.responder is None:
        state.fail(f"script exhausted: {request.describe()}", request)
        return _error(
            400,
            "ScriptedOpenAIServer: the script is exhausted and there is no responder; "
            f"unexpected {request.describe()}",
        )
    try:
        answer = state.responder(request)
        if inspect.isawaitable(answer):
            answer = await answer
        return as_turn(answer)
    except Exception as exc:  # any responder bug is reported at stop(), never swallowed
        state.fail(f"responder raised {exc!r} for {request.describe()}", request)
        return _error(500, f"ScriptedOpenAIServer: the responder raised {exc!r}")


def _history(state: ScriptState, request: ModelRequest) -> list[dict[str, Any]] | None:
    """The stored conversation behind ``previous_response_id``; ``None`` if the id is unknown."""
    if request.api != "responses" or request.previous_response_id is None:
        return []
    return state.responses.get(request.previous_response_id)


def _success(
    state: ScriptState,
    *,
    request: ModelRequest,
    turn: ToolCallsTurn | TextTurn,
    history: list[dict[str, Any]],
    prompt_tokens: int,
    cached_tokens: int,
) -> dict[str, Any]:
    calls = turn.calls if isinstance(turn, ToolCallsTurn) else ()
    call_ids = [c.id if c.id is not None else state.next_id("call_") for c in calls]
    if request.api == "chat_completions":
        return chat_completion(
            turn,
            request,
            completion_id=state.next_id("chatcmpl-"),
            call_ids=call_ids,
            prompt_tokens=prompt_tokens,
            cached_tokens=cached_tokens,
        )
    response = response_object(
        turn,
        request,
        response_id=state.next_id("resp_"),
        item_ids=[state.next_id("item_") for _ in range(output_item_count(turn))],
        call_ids=call_ids,
        prompt_tokens=prompt_tokens,
        cached_tokens=cached_tokens,
    )
    with state.lock:
        state.produced.update(str(item["id"]) for item in response["output"])
        state.responses[response["id"]] = [
            *history,
            *input_items(request.body),
            *response["output"],
        ]
    return response


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
