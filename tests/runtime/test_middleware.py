"""The middleware protocol: onion order, composition without mutual knowledge, the contract."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import pytest

from bot_toolsearch import BotSettings, ConfigError, Tool
from bot_toolsearch._runtime.middleware import CallHandler
from bot_toolsearch._runtime.plugins import build_middlewares, discover_plugins
from bot_toolsearch.middleware import (
    AskContext,
    CallRequest,
    CallResult,
    LoggingMiddleware,
    Middleware,
    RoundRequest,
    ToolSearchMiddleware,
    forward_unanswered,
)
from bot_toolsearch.testing import ScriptedOpenAIServer, call

if TYPE_CHECKING:
    from tests.conftest import BotFactory, Ran


@dataclass
class Recording:
    """Records hook order into a shared journal; answers ``cached.*`` calls itself."""

    name: str
    journal: list[str]
    answers: dict[str, str] = field(default_factory=dict)

    async def start_ask(self, ctx: AskContext) -> None:
        self.journal.append(f"{self.name}.start")

    async def prepare_request(self, ctx: AskContext, request: RoundRequest) -> RoundRequest:
        self.journal.append(f"{self.name}.prepare tools={len(request.tools)}")
        note = {"role": "system", "content": f"note from {self.name}"}
        return replace(request, messages=[*request.messages, note])

    async def handle_calls(
        self, ctx: AskContext, calls: Sequence[CallRequest], call_next: CallHandler
    ) -> list[CallResult]:
        self.journal.append(f"{self.name}.calls in")
        answered = {
            i: CallResult(c.id, c.name, self.answers[c.name], "answered")
            for i, c in enumerate(calls)
            if c.name in self.answers
        }
        results = await forward_unanswered(ctx, calls, answered, call_next)
        self.journal.append(f"{self.name}.calls out")
        return results

    async def finish_ask(self, ctx: AskContext) -> None:
        self.journal.append(f"{self.name}.finish")


def test_shipped_middlewares_satisfy_the_protocol() -> None:
    assert isinstance(LoggingMiddleware(), Middleware)
    assert isinstance(ToolSearchMiddleware(), Middleware)
    assert isinstance(Recording("r", []), Middleware)


async def test_middlewares_compose_in_onion_order(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool], ran: Ran
) -> None:
    journal: list[str] = []
    outer = Recording("outer", journal, {"weather.forecast": "cached: sunny"})
    inner = Recording("inner", journal)
    logging_mw = LoggingMiddleware()
    bot = make_bot(
        weather_tools,
        skills={"tool_search_enabled": False},
        middlewares=[outer, logging_mw, inner],
    )
    server.script([call("weather-_-forecast", id="w1"), call("music-_-play", id="m1")], call("end"))
    await bot.ask("x")

    assert journal[:3] == ["outer.start", "inner.start", "outer.prepare tools=5"]
    assert journal[3] == "inner.prepare tools=5"
    assert journal[4:8] == [
        "outer.calls in",
        "inner.calls in",
        "inner.calls out",
        "outer.calls out",
    ]
    assert journal[-2:] == ["inner.finish", "outer.finish"]
    # The outer middleware answered the weather call; only music ran; the results stay ordered.
    assert ran.names == ["music.play"]
    assert server.requests[1].tool_outputs[0] == ("w1", "cached: sunny")
    assert server.requests[1].tool_outputs[1][0] == "m1"
    systems = "\n\n".join(server.requests[0].system_texts)
    assert systems.endswith("note from outer\n\nnote from inner")
    assert "round 1 calls=music.play" in logging_mw.records  # inner sees only what is left
    assert "call music.play ran" in logging_mw.records


async def test_logging_composes_with_tool_search_without_knowing_it(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool]
) -> None:
    logging_mw = LoggingMiddleware()
    bot = make_bot(weather_tools, middlewares=[ToolSearchMiddleware(), logging_mw])
    server.script(call("tool_search", query="select:music.play"), call("end"))
    await bot.ask("x")

    assert "round 1 tools=send_message,end,tool_search" in logging_mw.records
    assert "round 2 tools=send_message,end,tool_search,music.play" in logging_mw.records
    # tool_search is answered outside, so the inner logger sees only end.
    assert "round 2 calls=end" in logging_mw.records
    assert "round 1 calls=tool_search" not in logging_mw.records


async def test_a_middleware_that_breaks_the_contract_fails_loudly(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool]
) -> None:
    class Dropper(Recording):
        async def handle_calls(
            self, ctx: AskContext, calls: Sequence[CallRequest], call_next: CallHandler
        ) -> list[CallResult]:
            return []

    bot = make_bot(weather_tools, middlewares=[Dropper("d", [])])
    server.script(call("end"))
    with pytest.raises(RuntimeError, match="one-result-per-call"):
        await bot.ask("x")


def test_plugins_are_discovered_and_built_in_order() -> None:
    assert "tool_search" in discover_plugins()
    built = build_middlewares(BotSettings.model_validate({"plugins": {"enabled": ["tool_search"]}}))
    assert [type(m) for m in built] == [ToolSearchMiddleware]
    assert build_middlewares(BotSettings.model_validate({"plugins": {"enabled": []}})) == []


def test_an_unknown_plugin_is_a_config_error(make_bot: BotFactory) -> None:
    settings = BotSettings.model_construct(
        plugins=BotSettings().plugins.model_construct(enabled=("nope",))
    )
    with pytest.raises(ConfigError, match="unknown plugin 'nope'"):
        build_middlewares(settings)


async def test_without_the_plugin_tool_search_is_off(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool]
) -> None:
    server.script(call("end"))
    await make_bot(weather_tools, plugins={"enabled": []}).ask("x")

    assert "tool_search" not in server.requests[0].tool_names
    assert len(server.requests[0].tool_names) == 5


async def test_logging_shows_hostile_call_names_escaped_and_cut(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool]
) -> None:
    logging_mw = LoggingMiddleware()
    bot = make_bot(weather_tools, middlewares=[logging_mw])
    hostile = "x\nforged log line" + "y" * 10_000
    server.script(call(hostile), call("end"))
    await bot.ask("x")

    lines = [line for line in logging_mw.records if line.startswith(("round 1 calls", "call x"))]
    assert len(lines) == 2
    for line in lines:
        assert "\n" not in line
        assert len(line) < 200
        assert "x\\u000aforged log line" in line
