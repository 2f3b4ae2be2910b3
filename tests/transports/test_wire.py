"""The one module that maps tool lists, calls and history between canonical and wire names."""

from __future__ import annotations

from bot_toolsearch._transports.names import WireNames
from bot_toolsearch._transports.wire import (
    canonical_calls,
    wire_item,
    wire_message,
    wire_own_message,
    wire_tool,
)

NAMES = WireNames.build(["weather.forecast", "plain", "tool_search"])


def test_a_tool_entry_gets_its_wire_name_in_both_shapes() -> None:
    chat = {"type": "function", "function": {"name": "weather.forecast", "parameters": {}}}
    flat = {"type": "function", "name": "weather.forecast", "parameters": {}}
    assert wire_tool(chat, NAMES)["function"]["name"] == "weather-_-forecast"
    assert wire_tool(flat, NAMES, "responses")["name"] == "weather-_-forecast"
    assert chat["function"]["name"] == "weather.forecast"  # the input is not changed


def test_an_entry_already_wired_is_the_same_object() -> None:
    tool = {"type": "function", "function": {"name": "plain"}}
    assert wire_tool(tool, NAMES) is tool


def test_canonical_names_an_entry_wired_by_another_map() -> None:
    # An entry carrying a hashed name from a larger map is renamed from its canonical name.
    tool = {"type": "function", "name": "weather-_-forecast_ff39dc30"}
    out = wire_tool(tool, NAMES, "responses", canonical="weather.forecast")
    assert out["name"] == "weather-_-forecast"


def test_a_foreign_call_keeps_the_models_spelling_made_legal() -> None:
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "a", "function": {"name": "weather.forecast", "arguments": "{}"}},
            {
                "id": "b",
                "function": {"name": "weather.forecast", "arguments": "{}"},
                "foreign": True,
            },
        ],
    }
    out = wire_own_message(message, NAMES)
    assert [c["function"]["name"] for c in out["tool_calls"]] == [
        "weather-_-forecast",
        "weather_forecast",
    ]
    assert all("foreign" not in c for c in out["tool_calls"])


def test_a_callers_message_maps_known_names_and_keeps_malformed_calls() -> None:
    message = {
        "role": "assistant",
        "tool_calls": [
            {"id": "a", "function": {"name": "weather.forecast", "arguments": "{}"}},
            {"id": "b", "function": {"name": "secret.tool", "arguments": "{}"}},
            {"id": "c", "function": "not a mapping"},
        ],
    }
    out = wire_message(message, NAMES, {"weather.forecast"})
    calls = out["tool_calls"]
    assert calls[0]["function"]["name"] == "weather-_-forecast"
    assert calls[1]["function"]["name"] == "secret_tool"
    assert calls[2] is message["tool_calls"][2]
    assert wire_message("text", NAMES, ()) == "text"


def test_a_responses_item_maps_only_known_names() -> None:
    item = {"type": "function_call", "call_id": "a", "name": "weather.forecast"}
    assert wire_item(item, NAMES, {"weather.forecast"})["name"] == "weather-_-forecast"
    assert wire_item(item, NAMES, ())["name"] == "weather_forecast"


def test_reply_calls_get_canonical_names() -> None:
    calls = canonical_calls([("a", "weather-_-forecast", "{}"), ("b", "nope", "")], NAMES)
    assert [(c.name, c.wire_name) for c in calls] == [
        ("weather.forecast", "weather-_-forecast"),
        ("nope", "nope"),
    ]
