"""``[skills] tool_search_loading``: bridge and additional_tools over HTTP, and the fallbacks.

Every test runs the real `Bot` against `ScriptedOpenAIServer` through the ``openai`` SDK; the
prefix tests render each request with the server's prompt-cache model.
"""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import openai
import pytest

from bot_toolsearch import Bot, BotSettings, Tool
from bot_toolsearch._core.prompt import (
    CALL_TOOL_NAME,
    TOOL_SEARCH_RULES,
    TOOL_SEARCH_RULES_BRIDGE,
    call_tool_schema,
)
from bot_toolsearch._protocol.calls import CallRequest
from bot_toolsearch._protocol.loading import effective_loading, request_tools, unwrap_calls
from bot_toolsearch._protocol.messages import (
    BLIND_CALL_LOADED,
    CALL_TOOL_ARGUMENTS_NOT_OBJECT,
    CALL_TOOL_INVALID,
    CALL_TOOL_NAME_MISSING,
    LOADED_THIS_ROUND,
    NOT_LOADED_YET_BRIDGE,
    SCHEMA_NOTE,
    no_such_tool,
)
from bot_toolsearch._transports.base import ToolDeclaration
from bot_toolsearch._transports.names import WireNames
from bot_toolsearch.middleware import (
    AskContext,
    CallHandler,
    CallResult,
    RoundRequest,
    ToolSearchMiddleware,
)
from bot_toolsearch.testing import PromptCacheModel, ScriptedOpenAIServer, ToolCall, call, text
from tests._helpers import write_config

if TYPE_CHECKING:
    from tests.conftest import BotFactory, Ran

BRIDGE = {"tool_search_loading": "bridge"}
EXTRA = {"tool_search_loading": "additional_tools"}
FIXED_TOOLS = ["send_message", "end", "tool_search"]
FORECAST_SCHEMA = {
    "name": "weather.forecast",
    "description": "Weather forecast for a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "City name."}},
    },
}


def tools_bytes(server: ScriptedOpenAIServer) -> list[str]:
    return [json.dumps(r.body.get("tools")) for r in server.requests]


def outputs(server: ScriptedOpenAIServer) -> dict[str, str]:
    return {cid: out for r in server.requests for cid, out in r.tool_outputs}


# -- bridge ------------------------------------------------------------------------------------


async def test_bridge_keeps_tools_fixed_and_runs_call_tool_as_the_real_tool(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool], ran: Ran
) -> None:
    server.script(
        call("tool_search", query="select:weather.forecast", id="s1"),
        call(CALL_TOOL_NAME, name="weather.forecast", arguments={"city": "Oslo"}, id="c1"),
        call("end"),
    )
    result = await make_bot(weather_tools, skills=BRIDGE).ask("x")

    assert ran.calls == [("weather.forecast", {"city": "Oslo"})]
    assert server.requests[0].tool_names == [*FIXED_TOOLS, CALL_TOOL_NAME]
    assert len(set(tools_bytes(server))) == 1
    searched = json.loads(outputs(server)["s1"])
    assert searched["loaded"] == ["weather.forecast"]
    assert searched["tools"] == [FORECAST_SCHEMA]
    assert outputs(server)["c1"].startswith("weather.forecast ok")
    # The directory explains call_tool in this mode only.
    system = "\n".join(server.requests[0].system_texts)
    assert TOOL_SEARCH_RULES_BRIDGE in system
    assert TOOL_SEARCH_RULES not in system
    # Traces and stats name the real tool; the call's record keeps what the model sent.
    traced = result.trace[1].calls[0]
    assert (traced.name, traced.outcome, json.loads(traced.arguments)) == (
        "weather.forecast",
        "ran",
        {"city": "Oslo"},
    )
    assert result.stats.tools_loaded == ("weather.forecast",)
    assert result.stats.loaded_never_called == ()


async def test_bridge_shows_a_schema_once_per_ask(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool]
) -> None:
    server.script(
        call("tool_search", query="select:weather.forecast", id="s1"),
        call("tool_search", query="select:weather.forecast", id="s2"),
        call("end"),
    )
    await make_bot(weather_tools, skills=BRIDGE).ask("x")

    first, again = json.loads(outputs(server)["s1"]), json.loads(outputs(server)["s2"])
    assert [t["name"] for t in first["tools"]] == ["weather.forecast"]
    assert again["already_loaded"] == ["weather.forecast"]
    assert "tools" not in again  # already shown in this ask


async def test_bridge_call_tool_schema_is_the_virtual_tool(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool]
) -> None:
    server.script(call("end"))
    await make_bot(weather_tools, skills=BRIDGE).ask("x")

    sent = server.requests[0].body["tools"][-1]
    parameters = sent["function"]["parameters"] if "function" in sent else sent["parameters"]
    assert parameters == call_tool_schema()["function"]["parameters"]
    assert parameters["required"] == ["name", "arguments"]


async def test_bridge_accepts_the_wire_spelling_and_native_calls_to_loaded_tools(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool], ran: Ran
) -> None:
    server.script(
        call("tool_search", query="select:weather.forecast,music.play"),
        [
            call(CALL_TOOL_NAME, name="weather-_-forecast", arguments='{"city":"Rome"}'),
            call("music-_-play", song="s"),  # a native call to a loaded tool runs too
        ],
        call("end"),
    )
    await make_bot(weather_tools, skills=BRIDGE).ask("x")

    assert ran.calls == [("weather.forecast", {"city": "Rome"}), ("music.play", {"song": "s"})]
    assert len(set(tools_bytes(server))) == 1


async def test_bridge_refuses_like_native_calls(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool], ran: Ran
) -> None:
    server.script(
        call(CALL_TOOL_NAME, name="music.play", arguments={"song": "s"}, id="n1"),
        [
            call("tool_search", query="select:music.play", id="s1"),
            call(CALL_TOOL_NAME, name="music.play", arguments={"song": "s"}, id="r1"),
        ],
        call("end"),
    )
    result = await make_bot(weather_tools, skills=BRIDGE).ask("x")

    assert ran.calls == []
    assert outputs(server)["n1"] == NOT_LOADED_YET_BRIDGE.format(name="music.play")
    assert outputs(server)["r1"] == LOADED_THIS_ROUND.format(name="music.play")
    assert result.stats.refused_calls == {"not_loaded": 1, "loaded_this_round": 1}
    assert [c.name for c in result.trace[0].calls] == ["music.play"]


async def test_bridge_never_reveals_a_hidden_tool(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool], ran: Ran
) -> None:
    server.script(
        [
            call("tool_search", query="select:calendar.add,weather.forecast", id="s1"),
            call(CALL_TOOL_NAME, name="calendar.add", arguments={"title": "t"}, id="h1"),
        ],
        call(CALL_TOOL_NAME, name="calendar-_-add", arguments={"title": "t"}, id="h2"),
        call("end"),
    )
    result = await make_bot(
        weather_tools,
        skills={**BRIDGE, "tool_search_blind_call": "load"},
        tools_table={"deny": ["calendar.*"]},
    ).ask("x")

    assert ran.calls == []
    assert outputs(server)["h1"] == no_such_tool("calendar.add")
    assert outputs(server)["h2"] == no_such_tool("calendar-_-add")
    assert json.loads(outputs(server)["s1"])["not_found"] == ["calendar.add"]
    everything = json.dumps([r.body for r in server.requests])
    assert "Event title" not in everything  # the hidden tool's schema appears nowhere
    assert result.stats.refused_calls == {"unknown": 2}


async def test_bridge_blind_call_load_gives_the_schema_in_the_refusal(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool], ran: Ran
) -> None:
    server.script(
        call(CALL_TOOL_NAME, name="weather.forecast", arguments={}, id="b1"),
        call(CALL_TOOL_NAME, name="weather.forecast", arguments={"city": "Oslo"}),
        call("end"),
    )
    result = await make_bot(weather_tools, skills={**BRIDGE, "tool_search_blind_call": "load"}).ask(
        "x"
    )

    schema = json.dumps(FORECAST_SCHEMA, separators=(",", ":"))
    assert outputs(server)["b1"] == BLIND_CALL_LOADED.format(
        name="weather.forecast"
    ) + SCHEMA_NOTE.format(name="weather.forecast", schema=schema)
    assert ran.calls == [("weather.forecast", {"city": "Oslo"})]
    assert result.stats.blind_call_loads == 1
    assert len(set(tools_bytes(server))) == 1


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"arguments": {"city": "Oslo"}}, CALL_TOOL_NAME_MISSING),
        ({"name": 7, "arguments": {}}, CALL_TOOL_NAME_MISSING),
        ({"name": "weather.forecast", "arguments": [1]}, CALL_TOOL_ARGUMENTS_NOT_OBJECT),
        ({"name": "weather.forecast", "arguments": "not json"}, CALL_TOOL_ARGUMENTS_NOT_OBJECT),
    ],
)
async def test_bridge_answers_malformed_call_tool_calls(  # noqa: PLR0917
    server: ScriptedOpenAIServer,
    make_bot: BotFactory,
    weather_tools: list[Tool],
    ran: Ran,
    arguments: dict[str, Any],
    problem: str,
) -> None:
    server.script(
        call("tool_search", query="select:weather.forecast"),
        ToolCall(CALL_TOOL_NAME, arguments, "m1"),
        call("end"),
    )
    result = await make_bot(weather_tools, skills=BRIDGE).ask("x")

    assert outputs(server)["m1"] == CALL_TOOL_INVALID.format(problem=problem)
    assert ran.calls == []
    assert result.trace[1].calls[0].outcome == "invalid"


async def test_bridge_call_tool_arguments_that_are_not_json_are_answered(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool]
) -> None:
    server.script(ToolCall(CALL_TOOL_NAME, "{nope", "m1"), call("end"))
    await make_bot(weather_tools, skills=BRIDGE).ask("x")

    answer = outputs(server)["m1"]
    assert answer.startswith("Error: call_tool was not executed: its arguments must be a JSON")
    assert "not valid JSON" in answer


async def test_bridge_invalid_arguments_come_back_with_the_schema(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool]
) -> None:
    server.script(
        call(CALL_TOOL_NAME, name="send_message", arguments={"text": 5}, id="i1"),
        call("end"),
    )
    result = await make_bot(weather_tools, skills=BRIDGE).ask("x")

    answer = outputs(server)["i1"]
    assert answer.startswith("Error: tool send_message was not executed")
    note = answer[answer.index("\nThe schema of send_message: ") :]
    schema = json.loads(note.split(": ", 1)[1])
    assert schema["parameters"]["required"] == ["text"]
    assert result.outbox == ()  # nothing was sent
    assert result.trace[0].calls[0].outcome == "invalid"


async def test_bridge_announces_the_real_tool(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool]
) -> None:
    server.script(
        call("tool_search", query="select:weather.forecast"),
        call(CALL_TOOL_NAME, name="weather.forecast", arguments={"city": "Oslo"}),
        call("end"),
    )
    result = await make_bot(
        weather_tools, skills=BRIDGE, easter_egg={"agent_call_message_enabled": "all"}
    ).ask("x")

    assert any(a.startswith("weather.forecast") for a in result.announcements)
    assert not any(a.startswith(CALL_TOOL_NAME) for a in result.announcements)


async def test_bridge_end_through_call_tool_follows_the_end_rules(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool]
) -> None:
    server.script(
        [
            call("send_message", text="hi"),
            call(CALL_TOOL_NAME, name="end", arguments={}, id="e1"),
        ],
        call("end"),
    )
    result = await make_bot(weather_tools, skills=BRIDGE).ask("x")

    assert outputs(server)["e1"].startswith("Error: end must be called alone")
    assert result.finish_reason == "end"
    assert result.rounds == 2


async def test_a_real_call_tool_turns_bridge_off_for_the_ask(
    server: ScriptedOpenAIServer,
    make_bot: BotFactory,
    weather_tools: list[Tool],
    caplog: pytest.LogCaptureFixture,
) -> None:
    real = Tool(CALL_TOOL_NAME, "A real tool of that name.", None, lambda: "real")
    server.script(call("tool_search", query="select:weather.forecast"), call("end"))
    with caplog.at_level(logging.ERROR, "bot_toolsearch"):
        await make_bot([*weather_tools, real], skills=BRIDGE).ask("x")

    assert server.requests[0].tool_names == FIXED_TOOLS
    assert server.requests[1].tool_names == [*FIXED_TOOLS, "weather-_-forecast"]
    assert "cannot be used" in caplog.text


async def test_append_stays_the_default_and_grows_the_tools(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool]
) -> None:
    server.script(call("tool_search", query="select:weather.forecast"), call("end"))
    await make_bot(weather_tools).ask("x")

    assert BotSettings().skills.tool_search_loading == "append"
    assert server.requests[1].tool_names == [*FIXED_TOOLS, "weather-_-forecast"]
    assert TOOL_SEARCH_RULES in "\n".join(server.requests[0].system_texts)


# -- additional_tools --------------------------------------------------------------------------


def declared(server: ScriptedOpenAIServer, index: int) -> list[dict[str, Any]]:
    return [i for i in server.requests[index].messages if i.get("type") == "additional_tools"]


@pytest.mark.parametrize("stateless", [False, True])
async def test_additional_tools_declares_loads_after_the_search_output(
    server: ScriptedOpenAIServer,
    client: openai.AsyncOpenAI,
    weather_tools: list[Tool],
    ran: Ran,
    stateless: bool,
) -> None:
    settings = BotSettings.model_validate(
        {
            "model": {"api": "responses", "responses_force_stateless_replay": stateless},
            "skills": {"tool_search_enabled": True, **EXTRA},
        }
    )
    server.script(
        call("tool_search", query="select:weather.forecast", id="s1"),
        call("weather-_-forecast", city="Oslo", id="c1"),
        call("end"),
    )
    await Bot(settings, weather_tools, client=client).ask("x")

    assert ran.calls == [("weather.forecast", {"city": "Oslo"})]
    assert server.requests[0].tool_names == FIXED_TOOLS
    assert len(set(tools_bytes(server))) == 1
    items = server.requests[1].messages
    output = {"type": "function_call_output", "call_id": "s1"}
    after = next(n for n, i in enumerate(items) if output.items() <= i.items()) + 1
    assert items[after] == {
        "type": "additional_tools",
        "role": "developer",
        "tools": [
            {"type": "function", **FORECAST_SCHEMA, "name": "weather-_-forecast", "strict": False}
        ],
    }
    assert server.requests[1].additional_tool_names == ["weather-_-forecast"]
    # The chain holds the item; a stateless replay sends it again, in place.
    assert len(declared(server, 2)) == (1 if stateless else 0)
    if stateless:
        assert server.requests[2].messages[: len(items)] == items
    assert server.requests[1].system_texts == server.requests[0].system_texts


async def test_additional_tools_declarations_are_typed_values_beside_the_history(
    server: ScriptedOpenAIServer, client: openai.AsyncOpenAI, weather_tools: list[Tool]
) -> None:
    """A middleware sees each declaration as a `ToolDeclaration` (after its call), never as
    a message; the transport renders it as the ``additional_tools`` item."""
    seen: list[RoundRequest] = []

    class Spy:
        name = "spy"

        async def start_ask(self, ctx: AskContext) -> None:
            pass

        async def prepare_request(self, ctx: AskContext, request: RoundRequest) -> RoundRequest:
            seen.append(request)
            return request

        async def handle_calls(
            self, ctx: AskContext, calls: Sequence[CallRequest], call_next: CallHandler
        ) -> list[CallResult]:
            return await call_next(ctx, calls)

        async def finish_ask(self, ctx: AskContext) -> None:
            pass

    settings = BotSettings.model_validate(
        {"model": {"api": "responses"}, "skills": {"tool_search_enabled": True, **EXTRA}}
    )
    server.script(
        call("tool_search", query="select:weather.forecast", id="s1"),
        call("weather-_-forecast", city="Oslo", id="c1"),
        call("end"),
    )
    bot = Bot(settings, weather_tools, client=client, middlewares=[ToolSearchMiddleware(), Spy()])
    await bot.ask("x")

    assert [len(r.declarations) for r in seen] == [0, 1, 1]
    declaration = seen[1].declarations[0]
    assert isinstance(declaration, ToolDeclaration)
    assert declaration.after == "s1"
    assert [t["function"]["name"] for t in declaration.tools] == ["weather.forecast"]
    for request in seen:
        assert all(m.get("type") != "additional_tools" for m in request.messages)
    assert server.requests[1].additional_tool_names == ["weather-_-forecast"]


async def test_additional_tools_blind_call_load_declares_the_tool(
    server: ScriptedOpenAIServer, client: openai.AsyncOpenAI, weather_tools: list[Tool], ran: Ran
) -> None:
    settings = BotSettings.model_validate(
        {
            "model": {"api": "responses"},
            "skills": {"tool_search_enabled": True, "tool_search_blind_call": "load", **EXTRA},
        }
    )
    server.script(
        call("music-_-play", song="s", id="b1"),
        call("music-_-play", song="s"),
        call("end"),
    )
    await Bot(settings, weather_tools, client=client).ask("x")

    assert server.requests[1].additional_tool_names == ["music-_-play"]
    assert ran.calls == [("music.play", {"song": "s"})]
    assert len(set(tools_bytes(server))) == 1


async def test_additional_tools_falls_back_to_append_on_chat_with_one_log_line(
    server: ScriptedOpenAIServer,
    client: openai.AsyncOpenAI,
    weather_tools: list[Tool],
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = BotSettings.model_validate(
        {"model": {"api": "chat_completions"}, "skills": {"tool_search_enabled": True, **EXTRA}}
    )
    bot = Bot(settings, weather_tools, client=client)
    with caplog.at_level(logging.INFO, "bot_toolsearch"):
        for _ in range(2):
            server.script(call("tool_search", query="select:weather.forecast"), call("end"))
            await bot.ask("x")

    assert server.requests[1].tool_names == [*FIXED_TOOLS, "weather-_-forecast"]
    assert all(r.additional_tool_names == [] for r in server.requests)
    lines = [r for r in caplog.records if "needs the Responses API" in r.getMessage()]
    assert len(lines) == 1


async def test_the_loading_mode_is_hot_reloaded_for_the_next_ask(
    server: ScriptedOpenAIServer, tmp_path: Path, api: str, weather_tools: list[Tool]
) -> None:
    skills = "[skills]\ntool_search_enabled = true\n"
    path = write_config(tmp_path / "config.toml", server.base_url, api, skills)
    bot = Bot.from_config(path, weather_tools)
    try:
        server.script(call("tool_search", query="select:weather.forecast"), call("end"))
        await bot.ask("x")
        write_config(path, server.base_url, api, skills + 'tool_search_loading = "bridge"\n')
        assert bot._reloader is not None
        await bot._reloader.wait_for_generation(2, timeout=10.0)
        server.script(call("tool_search", query="select:weather.forecast"), call("end"))
        await bot.ask("y")
    finally:
        await bot.aclose()

    assert server.requests[1].tool_names == [*FIXED_TOOLS, "weather-_-forecast"]
    assert server.requests[2].tool_names == [*FIXED_TOOLS, CALL_TOOL_NAME]
    assert server.requests[3].tool_names == [*FIXED_TOOLS, CALL_TOOL_NAME]


async def test_auto_is_bridge_on_chat_and_additional_tools_on_responses(
    server: ScriptedOpenAIServer,
    make_bot: BotFactory,
    weather_tools: list[Tool],
    api: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    server.script(call("tool_search", query="select:weather.forecast"), call("end"))
    with caplog.at_level(logging.WARNING, logger="bot_toolsearch"):
        await make_bot(weather_tools, skills={"tool_search_loading": "auto"}).ask("x")

    fixed = [*FIXED_TOOLS, *([CALL_TOOL_NAME] if api == "chat_completions" else [])]
    assert [r.tool_names for r in server.requests] == [fixed, fixed]
    if api == "responses":
        assert [m.get("type") for m in server.requests[1].messages][-1] == "additional_tools"
    assert not [r for r in caplog.records if "falls back" in r.getMessage().lower()]
    assert not [r for r in caplog.records if "tool_search_loading" in r.getMessage()]


# -- the prefix property -----------------------------------------------------------------------


@pytest.fixture
def cache_server() -> Iterator[ScriptedOpenAIServer]:
    model = PromptCacheModel(min_tokens=1, block_tokens=1, tokenizer="estimate")
    with ScriptedOpenAIServer(prompt_cache=model) as srv:
        yield srv
        srv.assert_consumed()


@pytest.fixture
async def cache_client(cache_server: ScriptedOpenAIServer) -> AsyncIterator[openai.AsyncOpenAI]:
    async with openai.AsyncOpenAI(
        base_url=cache_server.base_url, api_key="test", max_retries=0
    ) as c:
        yield c


MODES = [
    ("chat_completions", "bridge", False),
    ("responses", "bridge", False),
    ("responses", "bridge", True),
    ("responses", "additional_tools", False),
    ("responses", "additional_tools", True),
]


@pytest.mark.parametrize(("api_name", "mode", "stateless"), MODES)
async def test_every_request_keeps_the_tools_and_extends_the_previous_prompt(  # noqa: PLR0917
    cache_server: ScriptedOpenAIServer,
    cache_client: openai.AsyncOpenAI,
    weather_tools: list[Tool],
    api_name: str,
    mode: str,
    stateless: bool,
) -> None:
    settings = BotSettings.model_validate(
        {
            "model": {"api": api_name, "responses_force_stateless_replay": stateless},
            "skills": {"tool_search_enabled": True, "tool_search_loading": mode},
        }
    )
    via_bridge = mode == "bridge"

    def use(name: str, wire: str, **arguments: Any) -> ToolCall:
        if via_bridge:
            return call(CALL_TOOL_NAME, name=name, arguments=arguments)
        return call(wire, **arguments)

    cache_server.script(
        call("tool_search", query="select:weather.forecast"),
        use("weather.forecast", "weather-_-forecast", city="Oslo"),
        call("tool_search", query="select:music.play"),
        [
            use("music.play", "music-_-play", song="s"),
            use("weather.forecast", "weather-_-forecast"),
        ],
        text("done"),
    )
    result = await Bot(settings, weather_tools, client=cache_client, instructions="Be brief.").ask(
        "x"
    )

    assert result.finish_reason == "reply"
    tools = tools_bytes(cache_server)
    assert len(tools) == 5
    assert tools == [tools[0]] * 5
    prompts = cache_server.prompts
    for before, after in itertools.pairwise(prompts):
        assert after.startswith(before + "\n")
    # The cache model agrees: each request reuses all of the previous one.
    for before, after in itertools.pairwise(result.trace):
        assert after.cached_tokens >= before.prompt_tokens


async def test_append_breaks_the_prefix_after_a_load(
    cache_server: ScriptedOpenAIServer, cache_client: openai.AsyncOpenAI, weather_tools: list[Tool]
) -> None:
    """The measurement the other modes answer: under append the tools block changes."""
    settings = BotSettings.model_validate(
        {"model": {"api": "chat_completions"}, "skills": {"tool_search_enabled": True}}
    )
    cache_server.script(call("tool_search", query="select:weather.forecast"), text("done"))
    await Bot(settings, weather_tools, client=cache_client).ask("x")

    first, second = cache_server.prompts
    assert not second.startswith(first)


# -- the plain functions -----------------------------------------------------------------------


def test_effective_loading_falls_back_only_for_additional_tools_off_responses() -> None:
    assert effective_loading("auto", "chat_completions") == "bridge"
    assert effective_loading("auto", "responses") == "additional_tools"
    assert effective_loading("additional_tools", "chat_completions") == "append"
    assert effective_loading("additional_tools", "responses") == "additional_tools"
    assert effective_loading("bridge", "chat_completions") == "bridge"
    assert effective_loading("append", "responses") == "append"


def test_request_tools_cut_after_tool_search_and_bridge_adds_call_tool() -> None:
    def schema(name: str) -> dict[str, Any]:
        return {"type": "function", "function": {"name": name}}

    session = [schema("end"), schema("tool_search"), schema("weather.forecast")]
    assert request_tools(session, "append") == session
    assert request_tools(session, "additional_tools") == session[:2]
    assert request_tools(session, "bridge") == [*session[:2], call_tool_schema()]


def test_unwrap_keeps_id_index_and_source_and_leaves_other_calls_alone() -> None:
    names = WireNames.build(["weather.forecast", "end"])
    permitted = frozenset({"weather.forecast", "end"})
    raw = '{"name":"weather-_-forecast","arguments":{"city":"Oslo"}}'
    bridged_call = CallRequest(1, "t1", CALL_TOOL_NAME, raw, json.loads(raw), None, "text")
    plain = CallRequest(0, "e1", "end", "{}", {})
    out = unwrap_calls([plain, bridged_call], names, permitted)

    assert out.calls[0] is plain
    assert out.calls[1] == CallRequest(
        1, "t1", "weather.forecast", '{"city":"Oslo"}', {"city": "Oslo"}, None, "text"
    )
    assert out.bridged == frozenset({1})
    assert out.answered == {}
