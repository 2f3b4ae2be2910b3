"""Watching the wrapper: ``wrap_openai(on_round=...)`` and the ``bot_toolsearch.rounds`` log,
through the real SDK against the scripted server."""

from __future__ import annotations

import logging
from typing import Any

import openai
import pytest

from bot_toolsearch import BotSettings, RoundTrace, wrap_openai
from bot_toolsearch._protocol.calls import CallRequest, CallResult
from bot_toolsearch._protocol.engine import Answer
from bot_toolsearch._protocol.trace import CallTrace
from bot_toolsearch._wrap.observe import Rounds
from bot_toolsearch.testing import ScriptedOpenAIServer, ToolCallsTurn, Usage, call, text
from tests.wrap._tools import chat_tools, responses_tools

USER = {"role": "user", "content": "Weather in Oslo?"}


def _script_search_then_call(server: ScriptedOpenAIServer) -> None:
    server.script(
        ToolCallsTurn((call("tool_search", query="weather city"),), usage=Usage(100, 5, 40)),
        ToolCallsTurn((call("get_weather", city="Oslo"),), usage=Usage(120, 7, 90)),
    )


def _check_search_then_call(rounds: list[RoundTrace]) -> None:
    hidden, returned = rounds
    assert (hidden.index, hidden.hidden) == (1, True)
    assert hidden.tool_names == ("tool_search",)
    assert hidden.searches == ("weather city",)
    assert "get_weather" in hidden.loaded
    assert [c.outcome for c in hidden.calls] == ["answered"]
    assert (hidden.prompt_tokens, hidden.output_tokens, hidden.cached_tokens) == (100, 5, 40)
    assert (returned.index, returned.hidden) == (2, False)
    assert "get_weather" in returned.tool_names
    assert [(c.name, c.outcome, c.arguments) for c in returned.calls] == [
        ("get_weather", "returned", '{"city":"Oslo"}')
    ]
    assert returned.loaded == ()
    assert (returned.prompt_tokens, returned.output_tokens) == (120, 7)


@pytest.mark.parametrize("stream", [False, True])
async def test_on_round_reports_each_hidden_round_of_a_chat_call(
    server: ScriptedOpenAIServer, stream: bool
) -> None:
    _script_search_then_call(server)
    rounds: list[RoundTrace] = []
    inner = openai.AsyncOpenAI(base_url=server.base_url, api_key="t", max_retries=0)
    client = wrap_openai(inner, on_round=rounds.append)
    extra: dict[str, Any] = {"stream_options": {"include_usage": True}} if stream else {}
    result = await client.chat.completions.create(
        model="m", messages=[USER], tools=chat_tools(), stream=stream, **extra
    )
    if stream:
        async for _ in result:
            pass
    _check_search_then_call(rounds)
    await client.close()


@pytest.mark.parametrize("stream", [False, True])
def test_on_round_reports_each_round_of_a_sync_responses_call(
    server: ScriptedOpenAIServer, stream: bool
) -> None:
    _script_search_then_call(server)
    rounds: list[RoundTrace] = []
    client = wrap_openai(
        openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0),
        on_round=rounds.append,
    )
    result = client.responses.create(
        model="m", input="Weather in Oslo?", tools=responses_tools(), stream=stream
    )
    if stream:
        for _ in result:
            pass
    _check_search_then_call(rounds)
    client.close()


async def test_refusals_are_reported_with_their_reason(server: ScriptedOpenAIServer) -> None:
    server.script(call("get_weather", city="Oslo"), text("Sorry."))
    rounds: list[RoundTrace] = []
    inner = openai.AsyncOpenAI(base_url=server.base_url, api_key="t", max_retries=0)
    settings = BotSettings.model_validate(
        {"skills": {"tool_search_enabled": True, "tool_search_blind_call": "reject"}}
    )
    client = wrap_openai(inner, settings=settings, on_round=rounds.append)
    await client.chat.completions.create(model="m", messages=[USER], tools=chat_tools())
    refused, answer = rounds
    assert refused.hidden
    assert [(c.name, c.reason) for c in refused.refusals] == [("get_weather", "not_loaded")]
    assert (answer.hidden, answer.calls, answer.text) == (False, (), "Sorry.")
    await client.close()


async def test_a_failing_hook_is_logged_and_the_call_goes_on(
    server: ScriptedOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    _script_search_then_call(server)

    def broken(round_: RoundTrace) -> None:
        raise RuntimeError("hook bug")

    inner = openai.AsyncOpenAI(base_url=server.base_url, api_key="t", max_retries=0)
    client = wrap_openai(inner, on_round=broken)
    with caplog.at_level(logging.WARNING, logger="bot_toolsearch"):
        result = await client.chat.completions.create(
            model="m", messages=[USER], tools=chat_tools()
        )
    assert result.choices[0].message.tool_calls[0].function.name == "get_weather"
    assert [r.getMessage() for r in caplog.records if "on_round" in r.getMessage()] == [
        "the on_round hook failed for round 1",
        "the on_round hook failed for round 2",
    ]
    await client.close()


async def test_each_round_is_a_structured_log_record(
    server: ScriptedOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    _script_search_then_call(server)
    inner = openai.AsyncOpenAI(base_url=server.base_url, api_key="sk-secret-key", max_retries=0)
    client = wrap_openai(inner)
    with caplog.at_level(logging.INFO, logger="bot_toolsearch.rounds"):
        await client.chat.completions.create(model="m", messages=[USER], tools=chat_tools())
    records = [r for r in caplog.records if r.name == "bot_toolsearch.rounds"]
    assert len(records) == 2
    first = records[0].__dict__
    assert first["toolsearch_round"] == 1
    assert first["toolsearch_hidden"] is True
    assert first["toolsearch_searches"] == ["weather city"]
    assert "get_weather" in first["toolsearch_loaded"]
    assert (first["toolsearch_input_tokens"], first["toolsearch_output_tokens"]) == (100, 5)
    assert first["toolsearch_model"] == "m"
    assert records[1].__dict__["toolsearch_returned"] == ["get_weather"]
    assert "round 1 (hidden)" in records[0].getMessage()
    assert all("sk-secret-key" not in repr(r.__dict__) for r in records)
    await client.close()


async def test_an_async_hook_is_refused_with_a_warning(
    server: ScriptedOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.script(text("Hi."))
    ran: list[RoundTrace] = []

    async def hook(round_: RoundTrace) -> None:
        ran.append(round_)

    inner = openai.AsyncOpenAI(base_url=server.base_url, api_key="t", max_retries=0)
    client = wrap_openai(inner, on_round=hook)
    with caplog.at_level(logging.WARNING, logger="bot_toolsearch"):
        await client.chat.completions.create(model="m", messages=[USER], tools=chat_tools())
    assert ran == []
    assert any("got a coroutine" in r.getMessage() for r in caplog.records)
    await client.close()


async def test_the_sdk_stream_helper_reports_its_rounds_too(server: ScriptedOpenAIServer) -> None:
    _script_search_then_call(server)
    rounds: list[RoundTrace] = []
    inner = openai.AsyncOpenAI(base_url=server.base_url, api_key="t", max_retries=0)
    client = wrap_openai(inner, on_round=rounds.append)
    async with client.responses.stream(
        model="m", input="Weather in Oslo?", tools=responses_tools()
    ) as stream:
        async for _ in stream:
            pass
    _check_search_then_call(rounds)
    await client.close()


def test_a_rounds_trace_holds_each_fact_in_its_own_field() -> None:
    # `Rounds.report` builds the trace positionally: each fact must land in its field.
    seen: list[RoundTrace] = []
    rounds = Rounds(seen.append, "chat", "m")
    call = CallRequest(0, "c1", "tool_search", '{"query": "x"}', {"query": "x"})
    result = CallResult("c1", "tool_search", "{}", "answered")
    answer = Answer([call], {0: result}, loaded=["a", "b", "a"])
    trace = rounds.report(3, ["tool_search", "a"], answer, (11, 7, 5), hidden=True, text="t")
    assert seen == [trace]
    assert trace == RoundTrace(
        index=3,
        tool_names=("tool_search", "a"),
        calls=(CallTrace("c1", "tool_search", '{"query": "x"}', "answered", None, "{}"),),
        text=None,
        prompt_tokens=11,
        cached_tokens=7,
        loaded=("a", "b"),
        output_tokens=5,
        hidden=True,
    )
    plain = rounds.report(4, ("tool_search",), None, (1, 0, 2), hidden=False, text="ok")
    assert plain == RoundTrace(4, ("tool_search",), (), "ok", 1, 0, output_tokens=2)
