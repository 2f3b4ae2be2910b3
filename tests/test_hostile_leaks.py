"""Leak audit: a bot that hides tools sends exactly what a bot that never had them sends.

The model probes everything a hidden tool could show through: keyword searches that match
only hidden tools, ``select:`` of their canonical and wire spellings (in any case), direct
and blind calls, names whose wire spelling collides with a hidden tool's. Every request body
of the hiding bot must equal the other bot's (parsed JSON, key order kept), in both API modes,
and so must the ask's statistics (issue 10, defects 4 and the "never hints" promise).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import openai
import pytest

from bot_toolsearch import AskResult, Bot, BotSettings, Tool
from bot_toolsearch._scripted.turns import ToolCall
from bot_toolsearch.testing import ScriptedOpenAIServer, call

VISIBLE = ["mail.send", "weather.forecast", "user.show", "calendar.add"]
HIDDEN = ["mail-_-send", "admin.delete_user", "Weather.Forecast", "secret.vault", "user.show2"]

PROBES: list[list[ToolCall] | ToolCall] = [
    call("tool_search", query="delete user"),
    call("tool_search", query="vault secret +admin"),
    call("tool_search", query="select:admin.delete_user,admin-_-delete_user,ADMIN-_-DELETE_USER"),
    call("tool_search", query="select:mail.send"),
    call("tool_search", query="select:Weather.Forecast,WEATHER-_-FORECAST,weather-_-forecast"),
    call("tool_search", query="secret.vault"),
    call("tool_search", query="mail"),
    [call("admin-_-delete_user", id="x1"), call("admin.delete_user", id="x2")],
    [call("mail-_-send", to="a"), call("secret-_-vault"), call("Weather-_-Forecast")],
    call("tool_search", query="user show", max_results=1),
    call("tool_search", query="user show"),
    call("end"),
]


def make_tool(name: str) -> Tool:
    parameters = {"type": "object", "properties": {"to": {"type": "string"}}}
    description = f"The {name} tool: delete user vault secret admin mail."
    return Tool(name, description, parameters, lambda **kwargs: f"{name} ran")


async def run(
    names: Sequence[str], api: str, blind: str, **bot_kwargs: Any
) -> tuple[list[str], AskResult]:
    tables: dict[str, Any] = {
        "model": {"api": api},
        "skills": {"tool_search_enabled": True, "tool_search_blind_call": blind},
    }
    tables["tools"] = bot_kwargs.pop("tools_table", {})
    settings = BotSettings.model_validate(tables)
    with ScriptedOpenAIServer() as server:
        server.script(*PROBES)
        async with openai.AsyncOpenAI(
            base_url=server.base_url, api_key="test", max_retries=0
        ) as client:
            bot = Bot(settings, [make_tool(n) for n in names], client=client, **bot_kwargs)
            result = await bot.ask("probe everything")
        server.assert_consumed()
        bodies = [json.dumps(request.body, ensure_ascii=False) for request in server.requests]
    return bodies, result


def deny_hidden() -> dict[str, Any]:
    return {"tools_table": {"deny": ["mail-_-send", "admin.*", "Weather.*", "secret.*", "*2"]}}


def filter_hidden() -> dict[str, Any]:
    return {"tool_filter": lambda context, names: names - frozenset(HIDDEN)}


@pytest.mark.parametrize("api", ["chat_completions", "responses"])
@pytest.mark.parametrize("blind", ["reject", "load"])
@pytest.mark.parametrize("hide", [deny_hidden, filter_hidden])
async def test_every_request_of_a_hiding_bot_equals_one_that_never_had_the_tools(
    api: str, blind: str, hide: Any
) -> None:
    hiding, hiding_result = await run([*VISIBLE, *HIDDEN], api, blind, **hide())
    plain, plain_result = await run(VISIBLE, api, blind)
    assert len(hiding) == len(plain) == len(PROBES)
    for i, (mine, theirs) in enumerate(zip(hiding, plain, strict=True)):
        assert mine == theirs, f"request {i + 1} differs"
    assert hiding_result.stats == plain_result.stats
    assert hiding_result.trace == plain_result.trace
    # The audit is not vacuous: the probes did load visible tools and refuse hidden ones.
    assert "mail.send" in plain_result.stats.tools_loaded
    assert plain_result.stats.refused_calls.get("unknown", 0) >= 4
    # Nor is it blind to the hidden tools: the model's own probes name them, so they are in
    # the bodies of both bots alike, but no hidden tool's schema ever is.
    assert any("admin.delete_user" in body for body in plain)
    assert not any("The admin.delete_user tool" in body for body in hiding)
