"""``context["on_round"]``: each round's trace handed to the caller as soon as it is over."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from bot_toolsearch import RoundTrace, Tool
from bot_toolsearch.testing import ScriptedOpenAIServer, call

if TYPE_CHECKING:
    from tests.conftest import BotFactory


async def test_each_round_is_reported_before_the_next_one_runs(
    server: ScriptedOpenAIServer, make_bot: BotFactory
) -> None:
    reported: list[RoundTrace] = []
    seen_by_tool: list[list[int]] = []

    def forecast(city: str) -> str:
        seen_by_tool.append([r.index for r in reported])
        return f"{city}: sun"

    tool = Tool(
        "weather.forecast",
        "Weather forecast.",
        {"type": "object", "properties": {"city": {"type": "string"}}},
        forecast,
    )
    server.script(
        call("tool_search", query="select:weather.forecast"),
        call("weather-_-forecast", city="Oslo"),
        call("end"),
    )

    async def on_round(round_: RoundTrace) -> None:  # async hooks are awaited
        reported.append(round_)

    result = await make_bot([tool]).ask("Oslo?", context={"on_round": on_round})
    assert seen_by_tool == [[1]]  # round 1 was reported while round 2's tool ran
    assert reported == list(result.trace)


async def test_a_failing_hook_is_logged_and_the_ask_goes_on(
    server: ScriptedOpenAIServer, make_bot: BotFactory, caplog: pytest.LogCaptureFixture
) -> None:
    server.script(call("end"))

    def broken(_: Any) -> None:
        raise RuntimeError("hook bug")

    result = await make_bot().ask("hi", context={"on_round": broken})
    assert result.finish_reason == "end"
    assert "the on_round hook failed for round 1" in caplog.text


async def test_the_bot_reports_what_each_round_loaded(
    server: ScriptedOpenAIServer, make_bot: BotFactory
) -> None:
    tool = Tool(
        "weather.forecast",
        "Weather forecast.",
        {"type": "object", "properties": {"city": {"type": "string"}}},
        lambda city: f"{city}: sun",
    )
    server.script(
        call("tool_search", query="select:weather.forecast"),
        call("weather-_-forecast", city="Oslo"),
        call("end"),
    )
    result = await make_bot([tool]).ask("Oslo?")
    search, run, end = result.trace
    assert (search.searches, search.loaded, search.hidden) == (
        ("select:weather.forecast",),
        ("weather.forecast",),
        False,
    )
    assert (run.loaded, run.refusals, end.loaded) == ((), (), ())
