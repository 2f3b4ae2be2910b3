"""Prefetch tools: run once before round 1, result message in every round, hide semantics."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from bot_toolsearch import Tool
from bot_toolsearch._protocol.messages import NO_SUCH_TOOL, PREFETCH_HEADER
from bot_toolsearch.testing import ScriptedOpenAIServer, call

if TYPE_CHECKING:
    from tests.conftest import BotFactory, Ran

INITIAL = ["send_message", "end", "tool_search"]


def prefetch_texts(server: ScriptedOpenAIServer, index: int) -> list[str]:
    texts = "\n\n".join(server.requests[index].system_texts)
    return [part for part in texts.split("\n\n") if part.startswith(PREFETCH_HEADER)]


async def test_hidden_prefetch_success_is_in_every_round_and_never_callable(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool], ran: Ran
) -> None:
    clock = ran.tool("time.now", "Current time.", result="12:00\nUTC")
    server.script(
        call("tool_search", query="select:time.now"),
        call("time-_-now", id="t1"),
        call("end"),
    )
    skills = {"prefetch_tools": ["time.now"], "prefetch_tools_hide": True}
    await make_bot([*weather_tools, clock], skills=skills).ask("x")

    assert ran.calls == [("time.now", {})]  # the prefetch only
    for index in range(3):
        assert prefetch_texts(server, index) == [f"{PREFETCH_HEADER}\n- time.now: 12:00\n  UTC"]
        assert "time-_-now" not in server.requests[index].tool_names
    assert '"not_found":["time.now"]' in server.requests[1].tool_outputs[0][1]
    assert server.requests[2].tool_outputs[-1] == ("t1", NO_SUCH_TOOL.format(name="time-_-now"))


async def test_hidden_prefetch_failure_is_not_retried_and_callable_from_round_one(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool]
) -> None:
    attempts: list[str] = []

    def flaky() -> str:
        attempts.append("x")
        if len(attempts) == 1:
            raise OSError("clock unavailable")
        return "12:00"

    clock = Tool("time.now", "Current time.", None, flaky)
    server.script(call("time-_-now", id="t1"), call("end"))
    skills = {"prefetch_tools": ["time.now"], "prefetch_tools_hide": True}
    await make_bot([*weather_tools, clock], skills=skills).ask("x")

    assert server.requests[0].tool_names == [*INITIAL[:2], "time-_-now", "tool_search"]
    assert prefetch_texts(server, 0) == []
    assert server.requests[1].tool_outputs[-1] == ("t1", "12:00")
    assert len(attempts) == 2  # one failed prefetch, one real call, no retry in between
    assert "time.now" not in "".join(server.requests[0].system_texts)


async def test_prefetch_not_hidden_is_always_loaded(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool], ran: Ran
) -> None:
    clock = ran.tool("time.now", "Current time.", result="12:00")
    server.script(call("time-_-now"), call("end"))
    skills = {"prefetch_tools": ["time.now", "tool_search"], "prefetch_tools_hide": False}
    await make_bot([*weather_tools, clock], skills=skills).ask("x")

    assert server.requests[0].tool_names == ["send_message", "end", "time-_-now", "tool_search"]
    assert prefetch_texts(server, 1) == [f"{PREFETCH_HEADER}\n- time.now: 12:00"]
    assert ran.names == ["time.now", "time.now"]


async def test_prefetch_works_with_tool_search_disabled(
    server: ScriptedOpenAIServer, make_bot: BotFactory, ran: Ran
) -> None:
    clock = ran.tool("time.now", "Current time.", result="12:00")
    server.script(call("end"))
    skills = {
        "tool_search_enabled": False,
        "prefetch_tools": ["time.now"],
        "prefetch_tools_hide": True,
    }
    await make_bot([clock], skills=skills).ask("x")

    assert server.requests[0].tool_names == ["send_message", "end"]
    assert prefetch_texts(server, 0) == [f"{PREFETCH_HEADER}\n- time.now: 12:00"]


async def test_a_forbidden_tool_is_never_prefetched(
    server: ScriptedOpenAIServer, make_bot: BotFactory, ran: Ran
) -> None:
    clock = ran.tool("time.now", "Current time.", result="12:00")
    server.script(call("end"))
    await make_bot(
        [clock], skills={"prefetch_tools": ["time.now"]}, tools_table={"deny": ["time.*"]}
    ).ask("x")

    assert ran.calls == []
    assert prefetch_texts(server, 0) == []


async def test_prefetch_never_runs_a_real_tool_search_and_search_stays_on(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool], ran: Ran
) -> None:
    clock = ran.tool("time.now", "Current time.", result="12:00")
    real = ran.tool("tool_search", "A real tool with the reserved name.", q="query")
    server.script(call("tool_search", id="r1", q="x"), call("time-_-now", id="t1"), call("end"))
    skills = {"prefetch_tools": ["time.now", "tool_search"], "prefetch_tools_hide": True}
    await make_bot([*weather_tools, clock, real], skills=skills).ask("x")

    for index in range(3):
        # The virtual tool_search (the real one is skipped), the prefetched tool hidden.
        assert server.requests[index].tool_names == ["send_message", "end", "tool_search"]
        assert prefetch_texts(server, index) == [f"{PREFETCH_HEADER}\n- time.now: 12:00"]
    assert "A real tool with the reserved name" not in json.dumps(server.requests[0].body)
    assert "tool_search ok" not in server.requests[1].tool_outputs[-1][1]
    assert server.requests[2].tool_outputs[-1] == ("t1", NO_SUCH_TOOL.format(name="time-_-now"))
    # The reserved name is never prefetched, even when it is a real tool.
    assert ran.calls == [("time.now", {})]
