"""Tool arguments through `Bot.ask`: checked before the handler runs, and logged as the model's
mistake (one line), not the developer's (a traceback), over real HTTP."""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from bot_toolsearch import Tool, tool
from bot_toolsearch.testing import ScriptedOpenAIServer, call
from bot_toolsearch.tools import ToolRegistry

if TYPE_CHECKING:
    from tests.conftest import BotFactory

MCP_TEST_SERVER = Path(__file__).parents[1] / "tools" / "data" / "registry" / "mcp_test_server.py"
OFF = {"skills": {"tool_search_enabled": False}}


def weigh_tool(seen: list[dict[str, Any]]) -> Tool:
    @tool
    def weigh(animal: str, kilos: float) -> str:
        """Weigh an animal."""
        seen.append({"animal": animal, "kilos": kilos})
        return f"{animal}: {kilos!r} kg"

    return weigh


def last_output(server: ScriptedOpenAIServer) -> str:
    return server.requests[-1].tool_outputs[-1][1]


async def test_bad_arguments_never_reach_the_handler_and_are_the_models_mistake(
    server: ScriptedOpenAIServer, make_bot: BotFactory, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[dict[str, Any]] = []
    server.script(call("weigh", id="w1", animal="cat", kilos="lots"), call("end"))
    with caplog.at_level(logging.DEBUG, logger="bot_toolsearch"):
        result = await make_bot([weigh_tool(seen)], **OFF).ask("weigh the cat")

    assert seen == []
    assert server.requests[1].tool_outputs[-1] == (
        "w1",
        "Error: tool weigh was not executed: its arguments do not match its parameter schema: "
        '"kilos": expected a valid number, unable to parse string as a number, '
        'got a string "lots". Call it again with arguments that match the schema.',
    )
    assert [c.outcome for c in result.trace[0].calls] == ["invalid"]
    records = [r for r in caplog.records if "weigh" in r.getMessage()]
    assert [(r.levelname, r.exc_info) for r in records] == [("INFO", None)]


async def test_arguments_are_coerced_before_the_handler_runs(
    server: ScriptedOpenAIServer, make_bot: BotFactory
) -> None:
    seen: list[dict[str, Any]] = []
    server.script(call("weigh", animal="cat", kilos="4.5"), call("end"))
    await make_bot([weigh_tool(seen)], **OFF).ask("weigh the cat")
    assert seen == [{"animal": "cat", "kilos": 4.5}]
    assert server.requests[1].tool_outputs[-1][1] == "cat: 4.5 kg"


async def test_a_schema_tool_whose_handler_takes_other_arguments_is_not_a_crash(
    server: ScriptedOpenAIServer, make_bot: BotFactory, caplog: pytest.LogCaptureFixture
) -> None:
    def handler(city: str) -> str:
        return city

    loose = Tool("forecast", "Forecast.", {"type": "object"}, handler)
    server.script(call("forecast", id="f1", town="Oslo"), call("end"))
    with caplog.at_level(logging.DEBUG, logger="bot_toolsearch"):
        result = await make_bot([loose], **OFF).ask("weather?")

    assert [c.outcome for c in result.trace[0].calls] == ["invalid"]
    text = server.requests[1].tool_outputs[-1][1]
    assert "was not executed" in text
    assert "the tool does not take them (missing a required argument: 'city')" in text
    assert all(r.exc_info is None for r in caplog.records)
    assert all(r.levelno < logging.ERROR for r in caplog.records)


async def test_a_handler_bug_is_logged_with_its_traceback_at_error(
    server: ScriptedOpenAIServer, make_bot: BotFactory, caplog: pytest.LogCaptureFixture
) -> None:
    @tool
    def broken(x: int) -> int:
        """Always fails."""
        return x // 0

    server.script(call("broken", x=1), call("end"))
    with caplog.at_level(logging.DEBUG, logger="bot_toolsearch"):
        result = await make_bot([broken], **OFF).ask("go")

    assert [c.outcome for c in result.trace[0].calls] == ["failed"]
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1
    assert errors[0].exc_info is not None
    assert errors[0].exc_info[0] is ZeroDivisionError


@pytest.fixture
async def mcp_registry() -> AsyncIterator[ToolRegistry]:
    server = {"name": "local", "command": sys.executable, "args": [str(MCP_TEST_SERVER)]}
    registry = ToolRegistry(mcp_servers=[{**server, "timeout": 30.0}])
    await registry.start()
    try:
        yield registry
    finally:
        await registry.aclose()


@pytest.mark.parametrize("api", ["chat_completions"], indirect=True)
async def test_mcp_tools_are_checked_against_their_input_schema_and_errors_are_one_line(
    server: ScriptedOpenAIServer,
    make_bot: BotFactory,
    mcp_registry: ToolRegistry,
    caplog: pytest.LogCaptureFixture,
) -> None:
    server.script(
        call("local-_-echo", id="bad", text=5),
        call("local-_-fail", id="err", reason="no such zone"),
        call("end"),
    )
    with caplog.at_level(logging.DEBUG, logger="bot_toolsearch"):
        result = await make_bot(mcp_registry, **OFF).ask("go")

    outputs = dict(server.requests[-1].tool_outputs)
    assert outputs["bad"].startswith("Error: tool local.echo was not executed")
    assert '"text": expected a string, got an integer 5' in outputs["bad"]
    assert outputs["err"].startswith("Error: tool local.fail failed: MCPToolError")
    assert [c.outcome for r in result.trace[:2] for c in r.calls] == ["invalid", "failed"]
    ours = [r for r in caplog.records if r.name == "bot_toolsearch"]
    assert [r.levelname for r in ours] == ["INFO", "WARNING"]
    assert all(r.exc_info is None for r in ours)
