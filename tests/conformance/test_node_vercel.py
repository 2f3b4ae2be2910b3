"""The Vercel AI SDK (``ai`` + ``@ai-sdk/openai``, pinned in ``node/package.json``) with
``openai.tools.toolSearch()`` and a deferred tool, ``store`` at its default, through ``serve``
in front of the strict upstream (``node/vercel.mjs``): its second step resends our search items
as ``item_reference`` ids, which the upstream never issued."""

from __future__ import annotations

import json

import pytest

from bot_toolsearch.testing import ScriptedOpenAIServer, call, text
from tests.conformance._node import run_node


@pytest.mark.parametrize("mode", ["generate", "stream"])
def test_tool_search_with_store_at_its_default(
    proxy_url: str, strict: ScriptedOpenAIServer, mode: str
) -> None:
    strict.script(
        call("tool_search", query="select:get_weather_forecast"),
        call("get_weather_forecast", city="Oslo"),
        text("Sunny."),
    )
    done = run_node("vercel.mjs", proxy_url, mode)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["text"] == "Sunny."
    assert result["ran"] == [["get_weather_forecast", {"city": "Oslo"}]]
    assert result["steps"][0][:2] == ["tool-call:toolSearch", "tool-result:toolSearch"]
    *_, last = strict.requests
    # The SDK sent {"type": "item_reference", "id": "ts_bt1..."} twice: the upstream got the
    # search as a call of tool_search and its output, as if the items had been resent whole.
    kinds = [item.get("type", item.get("role")) for item in last.messages]
    assert kinds == [
        "user",
        "function_call",
        "function_call_output",
        "function_call",
        "function_call_output",
    ]
    assert last.messages[1]["name"] == "tool_search"
    assert last.messages[1]["call_id"] == last.messages[2]["call_id"]
    assert json.loads(last.messages[2]["output"]) == {"loaded": ["get_weather_forecast"]}
    assert "get_weather_forecast" in last.tool_names
