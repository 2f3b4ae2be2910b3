"""`ToolSearchProtocol` directly, without a host: the rules both the `Bot` and the wrapper use."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from bot_toolsearch import BotSettings
from bot_toolsearch._core.catalog import ToolCatalog
from bot_toolsearch._core.prompt import CALL_TOOL_NAME, TOOL_SEARCH_NAME
from bot_toolsearch._protocol.calls import CallRequest
from bot_toolsearch._protocol.engine import BRIDGE_COLLIDES, ToolSearchProtocol
from bot_toolsearch._protocol.messages import LOADED_THIS_ROUND, no_such_tool
from bot_toolsearch._transports.names import WireNames


def _schema(name: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"Tool {name}.",
            "parameters": {"type": "object", "properties": {}},
        },
    }


NAMES = ["weather.forecast", "weather.alerts", "mail.send", "send_message", "end"]


def protocol(
    mode: str = "append",
    api: str = "chat_completions",
    names: list[str] = NAMES,
    deny: tuple[str, ...] = (),
    reports: list[tuple[int, str]] | None = None,
    **skills: Any,
) -> ToolSearchProtocol:
    settings = BotSettings.model_validate(
        {"skills": {"tool_search_enabled": True, "tool_search_loading": mode, **skills}}
    )
    permitted = frozenset(n for n in names if n not in deny)
    wire = WireNames.build([*permitted, TOOL_SEARCH_NAME])
    return ToolSearchProtocol(
        ToolCatalog([_schema(n) for n in names]),
        settings,
        api=api,
        names=wire,
        permitted=permitted,
        hidden=deny,
        report=lambda level, text: (reports if reports is not None else []).append((level, text)),
    )


def _call(i: int, tool: str, **arguments: Any) -> CallRequest:
    return CallRequest(i, f"c{i}", tool, json.dumps(arguments), arguments)


def _tool_names(tools: list[dict[str, Any]]) -> list[str]:
    return [t["function"]["name"] for t in tools]


def test_the_mode_falls_back_and_says_so() -> None:
    reports: list[tuple[int, str]] = []
    assert protocol("additional_tools", reports=reports).mode == "append"
    assert [level for level, _ in reports] == [logging.WARNING]
    assert protocol("auto").mode == "bridge"
    assert protocol("auto", api="responses").mode == "additional_tools"
    collided: list[tuple[int, str]] = []
    p = protocol("bridge", names=[*NAMES, CALL_TOOL_NAME], reports=collided)
    assert p.mode == "append"
    assert collided == [(logging.ERROR, BRIDGE_COLLIDES)]


def test_round_tools_are_fixed_in_bridge_mode() -> None:
    p = protocol("bridge")
    first = _tool_names(p.round_tools())
    assert first == ["send_message", "end", TOOL_SEARCH_NAME, CALL_TOOL_NAME]
    p.answer([_call(0, TOOL_SEARCH_NAME, query="select:weather.forecast")])
    assert _tool_names(p.round_tools()) == first
    assert "weather.forecast" in p.exposed


@pytest.mark.parametrize("mode", ["append", "bridge", "additional_tools"])
@pytest.mark.parametrize("forced", [None, "mail.send"])
def test_round_names_are_the_names_of_round_tools(mode: str, forced: str | None) -> None:
    api = "responses" if mode == "additional_tools" else "chat_completions"
    base = protocol(mode, api=api, tool_search_always_loaded=["end"])
    by_name, by_schema = base.fork(forced=forced), base.fork(forced=forced)
    assert by_name.mode == by_schema.mode
    for query in (None, "select:weather.forecast", "select:mail.send,send_message"):
        if query is not None:
            by_name.answer([_call(0, TOOL_SEARCH_NAME, query=query)])
            by_schema.answer([_call(0, TOOL_SEARCH_NAME, query=query)])
        names = by_name.round_names()
        assert list(names) == _tool_names(by_schema.round_tools())
        assert by_name.exposed == by_schema.exposed
        assert names[0] == "end"
    assert ("weather.forecast" in names) == (by_name.mode == "append")


def test_searches_go_first_so_a_target_before_its_search_is_loaded_this_round() -> None:
    p = protocol()
    p.round_tools()
    calls = [
        _call(0, "weather.forecast"),
        _call(1, TOOL_SEARCH_NAME, query="select:weather.forecast"),
        _call(2, "send_message", text="hi"),
    ]
    answer = p.answer(calls)
    assert sorted(answer.results) == [0, 1]  # send_message is the host's to run
    assert answer.results[0].content == LOADED_THIS_ROUND.format(name="weather.forecast")
    assert answer.results[0].reason == "loaded_this_round"
    assert answer.loaded == ["weather.forecast"]
    assert answer.searches == 1
    assert _tool_names(p.round_tools())[-1] == "weather.forecast"


def test_a_denied_tool_is_no_such_tool_and_never_found() -> None:
    p = protocol(deny=("mail.send",))
    p.round_tools()
    answer = p.answer([_call(0, TOOL_SEARCH_NAME, query="select:mail.send"), _call(1, "mail.send")])
    assert json.loads(answer.results[0].content)["not_found"] == ["mail.send"]
    assert answer.results[1].content == no_such_tool("mail.send")
    assert answer.zero_result_searches == 1


def test_replay_loads_deferred_tools_once_in_first_call_order() -> None:
    p = protocol()
    loaded = p.replay(["mail-_-send", "end", "weather.forecast", "mail.send", "nope"])
    assert [name for name, _ in loaded] == ["mail.send", "weather.forecast"]
    assert _tool_names(p.round_tools())[-2:] == ["mail.send", "weather.forecast"]


def test_a_replayed_tool_is_not_declared_again_by_a_search() -> None:
    p = protocol("additional_tools", api="responses")
    p.replay(["weather.forecast"])
    p.round_tools()
    answer = p.answer([_call(0, TOOL_SEARCH_NAME, query="select:weather.forecast,weather.alerts")])
    assert answer.declared == {"c0": ("weather.alerts",)}


def test_bridge_unwraps_call_tool_and_answers_a_malformed_one() -> None:
    p = protocol("bridge")
    p.replay(["weather.forecast"])
    p.round_tools()
    calls = [
        _call(0, CALL_TOOL_NAME, name="weather-_-forecast", arguments={"city": "Oslo"}),
        _call(1, CALL_TOOL_NAME, arguments={}),
    ]
    answer = p.answer(calls)
    assert answer.calls[0].name == "weather.forecast"
    assert answer.calls[0].arguments == {"city": "Oslo"}
    assert answer.bridged == frozenset({0})
    assert list(answer.results) == [1]
    assert answer.results[1].outcome == "invalid"


def test_searches_beyond_the_cap_get_a_short_error_and_blind_loads_count() -> None:
    """Issue 27: one response of thousands of searches made the host run every one."""
    from bot_toolsearch._protocol.messages import TOO_MANY_SEARCHES

    engine = protocol(tool_search_max_searches=2, tool_search_blind_call="load")
    calls = [_call(i, TOOL_SEARCH_NAME, query="weather") for i in range(5)]
    answer = engine.answer(calls)
    assert answer.searches == 2
    capped = [r for r in answer.results.values() if r.reason == "too_many_searches"]
    assert [r.content for r in capped] == [TOO_MANY_SEARCHES.format(limit=2)] * 3
    # A blind call that would load is a search too: past the cap it is refused, not loaded.
    blind = protocol(tool_search_max_searches=1, tool_search_blind_call="load")
    first = blind.answer([_call(0, TOOL_SEARCH_NAME, query="mail"), _call(1, "weather.alerts")])
    assert first.blind_call_loads == 0
    assert first.results[1].reason == "not_loaded"


def test_a_fork_is_a_fresh_ask_under_the_same_settings() -> None:
    template = protocol("bridge", deny=("mail.send",))
    used = template.fork()
    used.replay(["weather.forecast"])
    used.round_tools()
    used.answer([_call(0, TOOL_SEARCH_NAME, query="select:weather.alerts")])
    assert {"weather.forecast", "weather.alerts"} <= used.session.loaded_tool_names
    fresh = template.fork()
    assert fresh.mode == "bridge"
    assert fresh.session.loaded_tool_names == {"send_message", "end"}
    assert fresh.directory == template.directory
    assert fresh.is_deferred("weather.alerts")
    assert not fresh.is_deferred("mail.send")  # still denied
    assert [n for n, _ in fresh.replay(["weather.forecast"])] == ["weather.forecast"]
    assert template.session.loaded_tool_names == {"send_message", "end"}


def test_a_fork_forcing_a_deferred_tool_falls_back_to_append_alone() -> None:
    template = protocol("bridge")
    assert template.fork(forced="weather.forecast").mode == "append"
    assert template.fork(forced="end").mode == "bridge"  # always loaded: nothing to force
    assert template.fork().mode == "bridge"
    reports: list[tuple[int, str]] = []
    chat = protocol("additional_tools", reports=reports)
    chat.fork(report=lambda level, text: reports.append((level, text)))
    assert [level for level, _ in reports] == [logging.WARNING, logging.WARNING]
