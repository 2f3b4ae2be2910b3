"""Sub-agents: their own full tool list on every request, no tool search, no directory."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot_toolsearch import Agent, Tool
from bot_toolsearch._protocol.messages import NO_SUCH_TOOL
from bot_toolsearch.testing import ScriptedOpenAIServer, ToolCallsTurn, Usage, call, text

if TYPE_CHECKING:
    from tests.conftest import BotFactory, Ran


def helper(ran: Ran) -> Agent:
    return Agent(
        "helper",
        "Answers weather questions.",
        "You are the weather helper.",
        tools=[ran.tool("weather.lookup", "Look up weather.", city="City.")],
        max_rounds=3,
    )


async def test_an_agent_runs_its_own_loop_with_its_full_list_and_no_directory(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool], ran: Ran
) -> None:
    server.script(
        call("helper", id="h1", request="weather in Oslo"),
        [call("weather-_-lookup", id="a1", city="Oslo"), call("tool_search", id="a2", query="x")],
        text("Oslo: sunny"),
        call("end"),
    )
    skills = {"tool_search_always_loaded": ["send_message", "end", "helper"]}
    result = await make_bot(
        weather_tools,
        [helper(ran)],
        skills=skills,
        easter_egg={"agent_call_message_enabled": "all"},
    ).ask("x")

    main, agent_one, agent_two, main_two = server.requests
    assert main.tool_names == ["send_message", "end", "helper", "tool_search"]
    assert agent_one.tool_names == agent_two.tool_names == ["weather-_-lookup"]
    assert agent_one.system_texts == agent_two.system_texts == ["You are the weather helper."]
    assert agent_two.tool_outputs[-2:] == [
        ("a1", "weather.lookup ok [('city', 'Oslo')]"),
        ("a2", NO_SUCH_TOOL.format(name="tool_search")),
    ]
    assert main_two.tool_outputs[-1] == ("h1", "Oslo: sunny")
    assert ran.names == ["weather.lookup"]
    assert result.announcements == (
        "helper，我调用你了",  # noqa: RUF001
        "helper：weather.lookup，我调用你了",  # noqa: RUF001
        "end，我调用你了",  # noqa: RUF001  (only clean mode mutes the built-ins)
    )


async def test_agent_requests_are_counted_apart_from_the_main_ai(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool], ran: Ran
) -> None:
    server.script(
        ToolCallsTurn((call("helper", id="h1", request="weather in Oslo"),), usage=Usage(100)),
        ToolCallsTurn((call("weather-_-lookup", id="a1", city="Oslo"),), usage=Usage(40, 1, 10)),
        text("Oslo: sunny", usage=Usage(50, 1, 30)),
        ToolCallsTurn((call("end"),), usage=Usage(120, 1, 90)),
    )
    skills = {"tool_search_always_loaded": ["send_message", "end", "helper"]}
    result = await make_bot(weather_tools, [helper(ran)], skills=skills).ask("x")

    assert result.rounds == 2
    assert (result.stats.prompt_tokens, result.stats.cached_tokens) == (220, 90)
    assert result.stats.agent_rounds == 2
    assert (result.stats.agent_prompt_tokens, result.stats.agent_cached_tokens) == (90, 40)


async def test_agent_mode_announces_only_the_agent(
    server: ScriptedOpenAIServer, make_bot: BotFactory, ran: Ran
) -> None:
    server.script(
        call("helper", request="w"),
        call("weather-_-lookup", city="Oslo"),
        text("ok"),
        call("end"),
    )
    result = await make_bot(
        [],
        [helper(ran)],
        skills={"tool_search_enabled": False},
        easter_egg={"agent_call_message_enabled": "agent"},
    ).ask("x")

    assert result.announcements == ("helper，我调用你了",)  # noqa: RUF001


async def test_an_agent_without_a_request_gets_a_clear_error(
    server: ScriptedOpenAIServer, make_bot: BotFactory, ran: Ran
) -> None:
    server.script(call("helper", id="h1"), call("end"))
    await make_bot([], [helper(ran)], skills={"tool_search_enabled": False}).ask("x")

    output = server.requests[1].tool_outputs[-1]
    assert output[0] == "h1"
    assert '"request" is required' in output[1]
    assert "was not executed" in output[1]


async def test_agent_calls_that_do_not_run_are_not_announced(
    server: ScriptedOpenAIServer, make_bot: BotFactory, ran: Ran
) -> None:
    from bot_toolsearch.testing import ToolCall

    server.script(
        call("helper", id="h1", request="w"),
        [
            ToolCall("weather-_-lookup", '{"city": ', id="a1"),  # unreadable arguments
            ToolCall("ghost", {}, id="a2"),  # no such tool
            call("weather-_-lookup", id="a3", city="Oslo"),
            call("weather-_-lookup", id="a4", city="Rome"),
        ],
        text("ok"),
        call("end"),
    )
    result = await make_bot(
        [],
        [helper(ran)],
        skills={"tool_search_enabled": False},
        easter_egg={"agent_call_message_enabled": "clean"},
    ).ask("x")

    outputs = dict(server.requests[2].tool_outputs[-4:])
    assert "arguments must be a JSON object" in outputs["a1"]
    assert outputs["a2"] == NO_SUCH_TOOL.format(name="ghost")
    assert ran.names == ["weather.lookup", "weather.lookup"]
    assert result.announcements == (
        "helper，我调用你了",  # noqa: RUF001
        "helper：weather.lookup，我调用你了 x2",  # noqa: RUF001
    )
