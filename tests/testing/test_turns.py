"""Turn types and the ModelRequest views of bot_toolsearch.testing (no HTTP)."""

from __future__ import annotations

import pytest

from bot_toolsearch._scripted.turns import as_turn
from bot_toolsearch.testing import (
    ErrorTurn,
    ModelRequest,
    TextTurn,
    ToolCall,
    ToolCallsTurn,
    Turn,
    Usage,
    call,
    error,
    text,
)


def test_call_builds_json_arguments() -> None:
    tc = call("tool_search", query="select:weather.forecast", limit=3)
    assert tc == ToolCall("tool_search", {"query": "select:weather.forecast", "limit": 3})
    assert tc.arguments_json() == '{"query":"select:weather.forecast","limit":3}'
    assert call("x", id="c1").id == "c1"
    assert call("天气", city="北京").arguments_json() == '{"city":"北京"}'


def test_string_arguments_are_verbatim() -> None:
    assert ToolCall("a", '{"broken": ').arguments_json() == '{"broken": '


def test_script_entries_normalise_to_turns() -> None:
    assert as_turn(call("a")) == ToolCallsTurn((call("a"),))
    assert as_turn([call("a"), call("b")]) == ToolCallsTurn((call("a"), call("b")))
    assert as_turn((call("a"),)) == ToolCallsTurn((call("a"),))
    assert as_turn(text("hi")) == TextTurn("hi")
    assert isinstance(as_turn(error(400, "x")), Turn)
    with pytest.raises(TypeError):
        as_turn("hi")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        as_turn([call("a"), "b"])  # type: ignore[list-item]


def test_tool_calls_turn_needs_calls() -> None:
    with pytest.raises(ValueError, match="at least one"):
        ToolCallsTurn(())
    turn = ToolCallsTurn([call("a")], text="t", usage=Usage(3))  # type: ignore[arg-type]
    assert turn.calls == (call("a"),), "a list is stored as a tuple"
    assert turn.usage == Usage(3, 1, 0)


def test_error_turn_body_and_status_check() -> None:
    turn = error(400, "bad", param="input", code="c")
    assert turn == ErrorTurn(400, "bad", "input", "c")
    assert turn.body() == {
        "error": {"message": "bad", "type": "invalid_request_error", "param": "input", "code": "c"}
    }
    with pytest.raises(ValueError, match="4xx or 5xx"):
        error(200, "fine")


def test_chat_request_views() -> None:
    body = {
        "model": "m",
        "tools": [
            {"type": "function", "function": {"name": "a"}},
            {"type": "function", "function": {"name": "b"}},
            "junk",
        ],
        "messages": [
            {"role": "system", "content": "sys"},
            {"role": "developer", "content": [{"type": "text", "text": "dev"}]},
            {"role": "user", "content": "hi"},
            {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "r"}]},
        ],
    }
    req = ModelRequest("chat_completions", body, "/v1/chat/completions")
    assert req.model == "m"
    assert req.tool_names == ["a", "b"]
    assert req.system_texts == ["sys", "dev"]
    assert req.tool_outputs == [("c1", "r")]
    assert req.previous_response_id is None
    assert len(req.messages) == 4


def test_responses_request_views() -> None:
    body = {
        "tools": [{"type": "function", "name": "a"}, {"type": "web_search"}],
        "instructions": "rules",
        "previous_response_id": "resp_1",
        "input": [
            {"role": "developer", "content": [{"type": "input_text", "text": "dir"}]},
            {"type": "function_call_output", "call_id": "call_1", "output": "ok"},
        ],
    }
    req = ModelRequest("responses", body)
    assert req.tool_names == ["a"]
    assert req.system_texts == ["rules", "dir"]
    assert req.tool_outputs == [("call_1", "ok")]
    assert req.previous_response_id == "resp_1"
    assert ModelRequest("responses", {"input": "hey"}).messages == [
        {"role": "user", "content": "hey"}
    ]


def test_hostile_bodies_do_not_break_the_views() -> None:
    req = ModelRequest("responses", {"tools": "x", "input": 5, "instructions": [1, {"a": 1}]})
    assert (req.tool_names, req.messages, req.tool_outputs) == ([], [], [])
    assert req.system_texts == []
    assert "responses request" in req.describe()
