"""ScriptedOpenAIServer driven by the real openai SDK over real HTTP on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from bot_toolsearch.testing import (
    ModelRequest,
    ScriptedOpenAIServer,
    TextTurn,
    ToolCall,
    ToolCallsTurn,
    UnconsumedTurns,
    UnexpectedModelCall,
    Usage,
    call,
    error,
    text,
)

CHAT_TOOLS: list[Any] = [
    {"type": "function", "function": {"name": "tool_search", "parameters": {"type": "object"}}},
    {"type": "function", "function": {"name": "end", "parameters": {"type": "object"}}},
]
RESP_TOOLS: list[Any] = [
    {"type": "function", "name": "tool_search", "parameters": {"type": "object"}, "strict": False},
    {"type": "function", "name": "end", "parameters": {"type": "object"}, "strict": False},
]
USER: list[Any] = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as srv:
        yield srv


@pytest.fixture
def client(server: ScriptedOpenAIServer) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as sdk:
        yield sdk


def _chat(sdk: openai.OpenAI, messages: list[Any], tools: list[Any] = CHAT_TOOLS) -> Any:
    return sdk.chat.completions.create(model="gpt-test", messages=messages, tools=tools)


def _http(url: str, body: bytes | None = None) -> tuple[int, dict[str, str], Any]:
    req = urllib.request.Request(url, data=body, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, dict(resp.headers), json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, dict(exc.headers), json.loads(exc.read())


# --- Chat Completions ------------------------------------------------------------------------


async def test_chat_tool_calls_and_text_with_the_async_sdk(server: ScriptedOpenAIServer) -> None:
    server.script(
        call("tool_search", query="select:weather.forecast"),
        [call("weather", city="Oslo"), call("end")],
        ToolCallsTurn((call("end"),), text="thinking aloud"),
        text("done"),
    )
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="t", max_retries=0) as sdk:
        first = await sdk.chat.completions.create(model="gpt-x", messages=USER, tools=CHAT_TOOLS)
        msg = first.choices[0].message
        assert first.model == "gpt-x"
        assert first.object == "chat.completion"
        assert first.choices[0].finish_reason == "tool_calls"
        assert msg.role == "assistant"
        assert msg.content is None
        assert msg.tool_calls is not None
        [only] = msg.tool_calls
        assert only.type == "function"
        assert (only.id, only.function.name) == ("call_1", "tool_search")
        assert json.loads(only.function.arguments) == {"query": "select:weather.forecast"}

        second = await sdk.chat.completions.create(model="gpt-x", messages=USER, tools=CHAT_TOOLS)
        calls = second.choices[0].message.tool_calls or []
        assert [(c.id, c.function.name, c.function.arguments) for c in calls] == [  # type: ignore[union-attr]
            ("call_2", "weather", '{"city":"Oslo"}'),
            ("call_3", "end", "{}"),
        ]
        third = await sdk.chat.completions.create(model="gpt-x", messages=USER, tools=CHAT_TOOLS)
        assert third.choices[0].message.content == "thinking aloud"
        assert third.choices[0].finish_reason == "tool_calls"

        last = await sdk.chat.completions.create(model="gpt-x", messages=USER)
        assert last.choices[0].finish_reason == "stop"
        assert last.choices[0].message.content == "done"
        assert last.choices[0].message.tool_calls is None
    server.assert_consumed()
    assert [r.api for r in server.requests] == ["chat_completions"] * 4
    assert server.requests[0].tool_names == ["tool_search", "end"]
    assert server.requests[3].tool_names == []


def test_chat_bodies_are_recorded_exactly(
    server: ScriptedOpenAIServer, client: openai.OpenAI
) -> None:
    server.script(text("a"))
    client.chat.completions.create(
        model="gpt-rec", messages=USER, tools=CHAT_TOOLS, temperature=0.25, metadata={"k": "v"}
    )
    [req] = server.requests
    assert req.body == {
        "model": "gpt-rec",
        "messages": USER,
        "tools": CHAT_TOOLS,
        "temperature": 0.25,
        "metadata": {"k": "v"},
    }
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == "Bearer test"
    assert req.system_texts == ["be brief"]
    assert req.messages == USER


def test_chat_tool_results_are_visible(server: ScriptedOpenAIServer, client: openai.OpenAI) -> None:
    server.script(call("end", id="c9"), text("ok"))
    first = _chat(client, USER)
    assistant = first.choices[0].message.model_dump(exclude_none=True)
    history = [*USER, assistant, {"role": "tool", "tool_call_id": "c9", "content": "ended"}]
    _chat(client, history)
    assert server.requests[1].tool_outputs == [("c9", "ended")]
    assert server.requests[0].tool_outputs == []


def test_malformed_arguments_pass_through_verbatim(
    server: ScriptedOpenAIServer, client: openai.OpenAI
) -> None:
    server.script(ToolCall("tool_search", '{"query": "x"'), ToolCall("end", "not json at all"))
    chat = _chat(client, USER).choices[0].message.tool_calls
    assert chat[0].function.arguments == '{"query": "x"'
    resp = client.responses.create(model="m", input="hi", tools=RESP_TOOLS)
    assert resp.output[0].type == "function_call"
    assert resp.output[0].arguments == "not json at all"


def test_chat_validation_mimics_the_api(
    server: ScriptedOpenAIServer, client: openai.OpenAI
) -> None:
    server.script(text("kept"))
    orphan = [*USER, {"role": "tool", "tool_call_id": "nope", "content": "x"}]
    with pytest.raises(openai.BadRequestError) as exc_info:
        _chat(client, orphan)
    assert exc_info.value.param == "messages.[2].role"
    assistant = {
        "role": "assistant",
        "tool_calls": [
            {"id": "a1", "type": "function", "function": {"name": "end", "arguments": "{}"}},
            {"id": "a2", "type": "function", "function": {"name": "end", "arguments": "{}"}},
        ],
    }
    half = [*USER, assistant, {"role": "tool", "tool_call_id": "a1", "content": "x"}]
    with pytest.raises(openai.BadRequestError, match="did not have response messages: a2"):
        _chat(client, half)
    assert server.remaining == [text("kept")], "an API-level 400 uses no scripted turn"
    full = [*half, {"role": "tool", "tool_call_id": "a2", "content": "y"}]
    assert _chat(client, full).choices[0].message.content == "kept"
    assert len(server.requests) == 3


def test_validation_can_be_switched_off() -> None:
    with (
        ScriptedOpenAIServer(validate=False) as srv,
        openai.OpenAI(base_url=srv.base_url, api_key="t", max_retries=0) as sdk,
    ):
        srv.script(text("a"), text("b"))
        orphan = [*USER, {"role": "tool", "tool_call_id": "nope", "content": "x"}]
        assert _chat(sdk, orphan).choices[0].message.content == "a"
        out: list[Any] = [{"type": "function_call_output", "call_id": "zz", "output": "x"}]
        assert sdk.responses.create(model="m", input=out).output_text == "b"


# --- Responses --------------------------------------------------------------------------------


def test_responses_function_calls_and_previous_response_chain(
    server: ScriptedOpenAIServer, client: openai.OpenAI
) -> None:
    server.script(
        [call("tool_search", query="weather"), call("end", id="mine")],
        ToolCallsTurn((call("end"),), text="one more"),
        text("bye"),
    )
    first = client.responses.create(
        model="gpt-r", instructions="rules", input="hello", tools=RESP_TOOLS
    )
    assert first.id.startswith("resp_")
    assert first.status == "completed"
    assert first.model == "gpt-r"
    assert [tool.name for tool in first.tools] == ["tool_search", "end"]  # type: ignore[union-attr]
    calls = [item for item in first.output if item.type == "function_call"]
    assert [(c.call_id, c.name, c.arguments, c.status) for c in calls] == [
        ("call_1", "tool_search", '{"query":"weather"}', "completed"),
        ("mine", "end", "{}", "completed"),
    ]
    assert len({c.id for c in calls}) == 2
    outputs: list[Any] = [
        {"type": "function_call_output", "call_id": "call_1", "output": "found"},
        {"type": "function_call_output", "call_id": "mine", "output": "ok"},
    ]
    second = client.responses.create(
        model="gpt-r", previous_response_id=first.id, input=outputs, tools=RESP_TOOLS
    )
    assert second.previous_response_id == first.id
    assert [item.type for item in second.output] == ["message", "function_call"]
    assert second.output_text == "one more"
    end = second.output[1]
    assert end.type == "function_call"
    assert end.call_id == "call_2"
    third = client.responses.create(
        model="gpt-r",
        previous_response_id=second.id,
        input=[{"type": "function_call_output", "call_id": "call_2", "output": "done"}],
    )
    assert third.output_text == "bye"
    assert third.output[0].type == "message"
    assert third.output[0].role == "assistant"
    server.assert_consumed()
    reqs = server.requests
    assert [r.api for r in reqs] == ["responses"] * 3
    assert [r.previous_response_id for r in reqs] == [None, first.id, second.id]
    assert reqs[0].system_texts == ["rules"]
    assert reqs[0].messages == [{"role": "user", "content": "hello"}]
    assert reqs[1].tool_outputs == [("call_1", "found"), ("mine", "ok")]
    assert reqs[1].tool_names == ["tool_search", "end"]


async def test_unknown_previous_response_id(server: ScriptedOpenAIServer) -> None:
    server.script(text("unused so far"))
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="t", max_retries=0) as sdk:
        with pytest.raises(openai.BadRequestError) as exc_info:
            await sdk.responses.create(model="m", previous_response_id="resp_404", input="x")
    err = exc_info.value
    assert err.status_code == 400
    assert err.param == "previous_response_id"
    assert err.body == {
        "message": "Previous response with id 'resp_404' not found.",
        "type": "invalid_request_error",
        "param": "previous_response_id",
        "code": None,
    }
    assert len(server.remaining) == 1
    assert server.requests[0].previous_response_id == "resp_404"
    server.reset()


def test_responses_call_id_validation(server: ScriptedOpenAIServer, client: openai.OpenAI) -> None:
    server.script([call("a"), call("b")], text("fine"))
    first = client.responses.create(model="m", input="x")
    wrong: list[Any] = [{"type": "function_call_output", "call_id": "call_9", "output": "?"}]
    with pytest.raises(openai.BadRequestError) as exc_info:
        client.responses.create(model="m", previous_response_id=first.id, input=wrong)
    assert exc_info.value.param == "input"
    assert exc_info.value.body["message"] == (  # type: ignore[index]
        "No tool call found for function call output with call_id call_9."
    )
    half: list[Any] = [{"type": "function_call_output", "call_id": "call_1", "output": "a"}]
    with pytest.raises(openai.BadRequestError, match=r"No tool output found .* call_2\."):
        client.responses.create(model="m", previous_response_id=first.id, input=half)
    # A stateless replay carries its own function_call items.
    replay: list[Any] = [
        {"role": "user", "content": "x"},
        {"type": "function_call", "call_id": "call_1", "name": "a", "arguments": "{}"},
        {"type": "function_call", "call_id": "call_2", "name": "b", "arguments": "{}"},
        *half,
        {"type": "function_call_output", "call_id": "call_2", "output": "b"},
    ]
    assert client.responses.create(model="m", input=replay).output_text == "fine"


def test_scripted_error_is_a_bad_request_and_is_not_retried(server: ScriptedOpenAIServer) -> None:
    message = "No tool call found for function call output with call_id call_1."
    server.script(error(400, message, param="input"), text("after"))
    # max_retries=2: x-should-retry: false keeps the SDK from consuming the next turn.
    with openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=2) as sdk:
        with pytest.raises(openai.BadRequestError) as exc_info:
            sdk.responses.create(model="m", input="x")
        assert exc_info.value.status_code == 400
        assert exc_info.value.param == "input"
        assert exc_info.value.code is None
        assert exc_info.value.type == "invalid_request_error"
        assert exc_info.value.body["message"] == message  # type: ignore[index]
        assert len(server.requests) == 1
        assert sdk.responses.create(model="m", input="x").output_text == "after"


def test_scripted_server_error(server: ScriptedOpenAIServer) -> None:
    server.script(error(503, "overloaded", type="server_error", code="busy"))
    with (
        openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=3) as sdk,
        pytest.raises(openai.InternalServerError) as exc_info,
    ):
        _chat(sdk, USER)
    assert exc_info.value.status_code == 503
    assert exc_info.value.code == "busy"
    assert len(server.requests) == 1


def test_retryable_error_omits_the_no_retry_header(server: ScriptedOpenAIServer) -> None:
    server.script(error(429, "slow down", type="rate_limit", retry=True), error(429, "again"))
    body = json.dumps({"model": "m", "messages": USER}).encode()
    status, headers, payload = _http(server.base_url + "/chat/completions", body)
    assert (status, payload["error"]["message"]) == (429, "slow down")
    assert "x-should-retry" not in {k.lower() for k in headers}
    status, headers, _ = _http(server.base_url + "/chat/completions", body)
    assert {k.lower(): v for k, v in headers.items()}["x-should-retry"] == "false"


# --- usage and the prefix-cache simulation ---------------------------------------------------


def test_usage_estimates_and_cached_prefix(
    server: ScriptedOpenAIServer, client: openai.OpenAI
) -> None:
    server.script(text("1"), text("2"), text("3"))
    first = _chat(client, USER).usage
    longer = [*USER, {"role": "assistant", "content": "1"}, {"role": "user", "content": "more"}]
    second = _chat(client, longer).usage
    reordered = _chat(client, longer, tools=list(reversed(CHAT_TOOLS))).usage
    assert first is not None
    assert second is not None
    assert reordered is not None
    assert first.prompt_tokens > 0
    assert first.prompt_tokens_details is not None
    assert first.prompt_tokens_details.cached_tokens == 0
    assert first.total_tokens == first.prompt_tokens + first.completion_tokens
    # Appending messages keeps the whole previous prompt as the cached prefix.
    assert second.prompt_tokens > first.prompt_tokens
    assert second.prompt_tokens_details is not None
    assert second.prompt_tokens_details.cached_tokens == first.prompt_tokens
    # Reordering the tools breaks the prefix right at the first tool name.
    assert reordered.prompt_tokens == second.prompt_tokens
    assert reordered.prompt_tokens_details is not None
    shared = '[{"type":"function","function":{"name":"'
    assert reordered.prompt_tokens_details.cached_tokens == len(shared) // 4


def test_responses_usage_counts_the_previous_response_chain(
    server: ScriptedOpenAIServer, client: openai.OpenAI
) -> None:
    server.script(call("end"), text("done"))
    first = client.responses.create(model="m", instructions="sys", input="hi", tools=RESP_TOOLS)
    out: list[Any] = [{"type": "function_call_output", "call_id": "call_1", "output": "ok"}]
    second = client.responses.create(
        model="m", instructions="sys", previous_response_id=first.id, input=out, tools=RESP_TOOLS
    )
    assert first.usage is not None
    assert second.usage is not None
    assert first.usage.input_tokens_details.cached_tokens == 0
    assert second.usage.input_tokens > first.usage.input_tokens
    assert second.usage.input_tokens_details.cached_tokens == first.usage.input_tokens
    assert second.usage.output_tokens_details.reasoning_tokens == 0
    assert second.usage.total_tokens == second.usage.input_tokens + second.usage.output_tokens


def test_usage_override(server: ScriptedOpenAIServer, client: openai.OpenAI) -> None:
    server.script(
        text("x", usage=Usage(100, 7, 40)), ToolCallsTurn((call("end"),), usage=Usage(5, 2))
    )
    chat = _chat(client, USER).usage
    assert chat is not None
    assert chat.prompt_tokens_details is not None
    assert (chat.prompt_tokens, chat.completion_tokens, chat.total_tokens) == (100, 7, 107)
    assert chat.prompt_tokens_details.cached_tokens == 40
    resp = client.responses.create(model="m", input="x").usage
    assert resp is not None
    assert (resp.input_tokens, resp.output_tokens, resp.input_tokens_details.cached_tokens) == (
        5,
        2,
        0,
    )


# --- failing loudly ---------------------------------------------------------------------------


def test_unexpected_extra_request_fails_at_stop() -> None:
    srv = ScriptedOpenAIServer().start()
    srv.script(text("only one"))
    with openai.OpenAI(base_url=srv.base_url, api_key="t", max_retries=2) as sdk:
        assert _chat(sdk, USER).choices[0].message.content == "only one"
        with pytest.raises(openai.BadRequestError, match="script is exhausted"):
            _chat(sdk, [*USER, {"role": "user", "content": "again"}])
    assert len(srv.requests) == 2, "a 400 is not retried by the SDK"
    with pytest.raises(UnexpectedModelCall) as exc_info:
        srv.stop()
    assert exc_info.value.requests == [srv.requests[1]]
    assert "script exhausted" in str(exc_info.value)
    assert "again" in str(exc_info.value)
    srv.stop()  # idempotent: already stopped, nothing raised twice
    with pytest.raises(UnexpectedModelCall):
        srv.assert_consumed()


def test_context_manager_raises_unexpected_calls() -> None:
    srv = ScriptedOpenAIServer()
    answers: list[tuple[int, Any]] = []

    def use() -> None:
        with srv:
            status, _, payload = _http(srv.base_url + "/responses", b'{"model": "m", "input": "x"}')
            answers.append((status, payload["error"]["message"]))

    with pytest.raises(UnexpectedModelCall, match="script exhausted"):
        use()
    [(status, message)] = answers
    assert status == 400
    assert "exhausted" in message
    assert not srv.running


def test_unused_turns_are_reported(server: ScriptedOpenAIServer, client: openai.OpenAI) -> None:
    server.script(text("used"), call("end"), text("never"))
    _chat(client, USER)
    with pytest.raises(UnconsumedTurns) as exc_info:
        server.assert_consumed()
    assert exc_info.value.turns == [ToolCallsTurn((call("end"),)), TextTurn("never")]
    assert "2 scripted turn(s) unused" in str(exc_info.value)


def test_responses_streaming_sends_the_events_the_sdk_reads(
    server: ScriptedOpenAIServer, client: openai.OpenAI
) -> None:
    server.script(text("Hello there, streaming world."), call("get_weather", city="Oslo"))
    events = list(client.responses.create(model="m", input="hi", stream=True))
    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert len(deltas) > 1
    assert "".join(deltas) == "Hello there, streaming world."
    completed = events[-1].response
    assert completed.output_text == "Hello there, streaming world."
    assert completed.usage is not None

    calls = list(
        client.responses.create(
            model="m", input="weather?", stream=True, previous_response_id=completed.id
        )
    )
    arguments = "".join(
        e.delta for e in calls if e.type == "response.function_call_arguments.delta"
    )
    assert json.loads(arguments) == {"city": "Oslo"}
    [done] = [e for e in calls if e.type == "response.output_item.done"]
    assert (done.item.type, done.item.name) == ("function_call", "get_weather")
    server.assert_consumed()


def test_chat_streaming_sends_chunks_and_usage(
    server: ScriptedOpenAIServer, client: openai.OpenAI
) -> None:
    server.script(text("hello there"), [call("end", id="c1"), call("send_message", text="hi")])
    stream = client.chat.completions.create(
        model="m", messages=USER, stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    pieces = [
        c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content
    ]
    assert pieces == ["hello", " there"]
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    calls: dict[int, list[str]] = {}
    for c in client.chat.completions.create(model="m", messages=USER, stream=True):
        for delta in c.choices[0].delta.tool_calls or ():
            entry = calls.setdefault(delta.index, ["", "", ""])
            entry[0] += delta.id or ""
            entry[1] += delta.function.name or ""
            entry[2] += delta.function.arguments or ""
        assert c.usage is None
    assert calls == {0: ["c1", "end", "{}"], 1: ["call_1", "send_message", '{"text":"hi"}']}


def test_unknown_endpoint_is_a_failure(server: ScriptedOpenAIServer, client: openai.OpenAI) -> None:
    with pytest.raises(openai.NotFoundError):
        client.moderations.create(model="m", input="x")
    assert server.failures == ["unexpected POST /v1/moderations"]
    assert server.requests == []
    server.reset()


def test_malformed_json_body_is_a_failure(server: ScriptedOpenAIServer) -> None:
    status, _, payload = _http(server.base_url + "/chat/completions", b"{not json")
    assert status == 400
    assert "JSON" in payload["error"]["message"]
    with pytest.raises(UnexpectedModelCall, match="not a JSON object"):
        server.assert_consumed()
    server.reset()


def test_models_endpoint(client: openai.OpenAI) -> None:
    assert [m.id for m in client.models.list()] == ["scripted-model"]


def test_script_rejects_bad_entries_atomically(server: ScriptedOpenAIServer) -> None:
    with pytest.raises(TypeError, match="script entry"):
        server.script(text("ok"), "not a turn")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least one ToolCall"):
        server.script([])
    assert server.remaining == []


def test_reset_forgets_everything(server: ScriptedOpenAIServer, client: openai.OpenAI) -> None:
    server.script(call("end"), text("left"))
    first = client.responses.create(model="m", input="x")
    server.reset()
    assert (server.requests, server.remaining, server.failures) == ([], [], [])
    server.script(call("end"))
    with pytest.raises(openai.BadRequestError, match="not found"):
        client.responses.create(model="m", previous_response_id=first.id, input="y")
    again = client.responses.create(model="m", input="x")
    assert again.output[0].type == "function_call"
    assert again.output[0].call_id == "call_1", "ids restart after reset"


# --- responder --------------------------------------------------------------------------------


def test_responder_answers_when_the_script_is_empty() -> None:
    seen: list[ModelRequest] = []

    def responder(request: ModelRequest) -> Any:
        seen.append(request)
        return call("end") if request.tool_names else text(f"echo {len(request.messages)}")

    with (
        ScriptedOpenAIServer(responder=responder) as srv,
        openai.OpenAI(base_url=srv.base_url, api_key="t", max_retries=0) as sdk,
    ):
        srv.script(text("scripted first"))
        assert _chat(sdk, USER).choices[0].message.content == "scripted first"
        assert _chat(sdk, USER, tools=[]).choices[0].message.content == "echo 2"
        calls = _chat(sdk, USER).choices[0].message.tool_calls
        assert calls is not None
        assert calls[0].function.name == "end"
        srv.assert_consumed()
    assert seen == srv.requests[1:]


async def test_async_responder() -> None:
    async def responder(request: ModelRequest) -> Any:
        await asyncio.sleep(0)
        return [call("a"), call("b")]

    with ScriptedOpenAIServer(responder=responder) as srv:
        async with openai.AsyncOpenAI(base_url=srv.base_url, api_key="t", max_retries=0) as sdk:
            resp = await sdk.responses.create(model="m", input="x")
    assert [item.name for item in resp.output if item.type == "function_call"] == ["a", "b"]


def test_responder_error_is_a_500_and_raised_at_stop() -> None:
    def responder(request: ModelRequest) -> Any:
        raise KeyError("boom")

    srv = ScriptedOpenAIServer(responder=responder).start()
    with (
        openai.OpenAI(base_url=srv.base_url, api_key="t", max_retries=2) as sdk,
        pytest.raises(openai.InternalServerError, match="boom"),
    ):
        _chat(sdk, USER)
    assert len(srv.requests) == 1, "not retried"
    with pytest.raises(UnexpectedModelCall, match="responder raised KeyError"):
        srv.stop()


# --- lifecycle --------------------------------------------------------------------------------


def test_restart_after_stop_keeps_state_and_serves_again() -> None:
    srv = ScriptedOpenAIServer()
    with pytest.raises(RuntimeError, match="not started"):
        _ = srv.base_url
    srv.script(text("one"), text("two"))
    before = set(threading.enumerate())
    for expected in ("one", "two"):
        with (
            srv,
            openai.OpenAI(base_url=srv.base_url, api_key="t", max_retries=0) as sdk,
        ):
            assert srv.running
            assert _chat(sdk, USER).choices[0].message.content == expected
        assert not srv.running
    assert set(threading.enumerate()) == before, "no thread outlives stop()"
    assert len(srv.requests) == 2
    srv.assert_consumed()


def test_start_is_idempotent(server: ScriptedOpenAIServer) -> None:
    url = server.base_url
    assert server.start() is server
    assert server.base_url == url


async def test_two_servers_at_once_are_independent() -> None:
    with ScriptedOpenAIServer() as one, ScriptedOpenAIServer() as two:
        assert one.base_url != two.base_url
        one.script(text("from one"))
        two.script(text("from two"))
        async with (
            openai.AsyncOpenAI(base_url=one.base_url, api_key="t", max_retries=0) as a,
            openai.AsyncOpenAI(base_url=two.base_url, api_key="t", max_retries=0) as b,
        ):
            ra, rb = await asyncio.gather(
                a.chat.completions.create(model="m", messages=USER),
                b.responses.create(model="m", input="x"),
            )
        assert ra.choices[0].message.content == "from one"
        assert rb.output_text == "from two"
        assert [r.api for r in one.requests] == ["chat_completions"]
        assert [r.api for r in two.requests] == ["responses"]


async def test_concurrent_requests_each_get_one_turn(server: ScriptedOpenAIServer) -> None:
    server.script(*(text(str(i)) for i in range(8)))
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="t", max_retries=0) as sdk:
        answers = await asyncio.gather(
            *(sdk.chat.completions.create(model="m", messages=USER) for _ in range(8))
        )
    assert sorted(a.choices[0].message.content or "" for a in answers) == [str(i) for i in range(8)]
    assert len(server.requests) == 8
    server.assert_consumed()
