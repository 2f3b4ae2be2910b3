"""The JS Agents SDK (``@openai/agents``, pinned in ``node/package.json``) running its tool
search through ``serve`` in front of the strict upstream: `toolSearchTool()` (server
execution) and ``toolSearchTool({execution: "client"})`` with a top-level deferred tool and a
deferred namespace member (``node/agents.mjs``)."""

from __future__ import annotations

import json
from typing import Any

from bot_toolsearch.testing import ScriptedOpenAIServer, call, text
from tests.conformance._node import run_node


def run_agents(proxy_url: str, execution: str) -> dict[str, Any]:
    done = run_node("agents.mjs", proxy_url, execution)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_server_execution_loads_and_runs_a_deferred_tool(
    proxy_url: str, strict: ScriptedOpenAIServer
) -> None:
    strict.script(
        call("tool_search", query="select:get_weather_forecast"),
        call("get_weather_forecast", city="Oslo"),
        text("Sunny."),
    )
    result = run_agents(proxy_url, "server")
    assert result["finalOutput"] == "Sunny."
    assert result["ran"] == [["get_weather_forecast", {"city": "Oslo"}]]
    assert result["items"][:3] == ["tool_search_call", "tool_search_output", "function_call"]
    first, second, third = strict.requests
    assert first.tool_names == ["tool_search"]
    assert "crm.lookup_customer" in first.body["instructions"]
    assert "get_weather_forecast" in second.tool_names
    # The SDK's second turn resends the search items: made ordinary, the tool stays loaded.
    assert "get_weather_forecast" in third.tool_names


def test_client_execution_sees_the_directory_and_loads_by_paths(
    proxy_url: str, strict: ScriptedOpenAIServer
) -> None:
    strict.script(
        call("tool_search", paths=["get_weather_forecast"]),
        call("get_weather_forecast", city="Oslo"),
        text("Sunny."),
    )
    result = run_agents(proxy_url, "client")
    assert result["finalOutput"] == "Sunny."
    assert result["ran"] == [["get_weather_forecast", {"city": "Oslo"}]]
    assert result["items"][:3] == ["tool_search_call", "tool_search_output", "function_call"]
    first, second, third = strict.requests
    # The client's own search function, never [], and the directory of what it can load.
    assert first.tool_names == ["tool_search"]
    (search,) = first.body["tools"]
    assert search["parameters"]["required"] == ["paths"]
    directory = first.body["instructions"]
    assert "get_weather_forecast" in directory
    assert "crm.lookup_customer" in directory
    # The SDK ran its own search and resent it: the loaded tool is sent with its parameters.
    assert second.tool_names == ["get_weather_forecast", "tool_search"]
    assert third.tool_names == ["get_weather_forecast", "tool_search"]
