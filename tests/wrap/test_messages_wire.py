"""`bot_toolsearch._wrap.messages_wire`: reading Anthropic's tool search dialect, the history
made ordinary, and the regex variant's linear-time matcher."""

from __future__ import annotations

import re

import pytest

from bot_toolsearch._wrap.messages_wire import (
    MAX_PATTERN,
    read_tools,
    regex_matches,
    search_blocks,
    upstream_history,
)

TOOLS = [
    {"name": "get_weather", "description": "Forecast for a city."},
    {"name": "send_mail", "description": "Send an email\nto someone."},
    {"name": "weather_alerts"},
    {"name": "Get.Time", "description": "The time."},
]


@pytest.mark.parametrize(
    "pattern",
    [
        "weather",
        "^get_",
        "alerts$",
        "get_.*city",
        "(?i)MAIL|alert",
        "^send_.*$",
        r"get\.time",
        "(weather)",
    ],
)
def test_the_subset_matches_as_re_search_does(pattern: str) -> None:
    compiled = re.compile(pattern, re.IGNORECASE)
    expected = [
        t["name"]
        for t in TOOLS
        if compiled.search(t["name"])
        or compiled.search(str(t.get("description", "")).replace("\n", " "))
    ]
    assert regex_matches(pattern, TOOLS, 10) == expected


@pytest.mark.parametrize("pattern", [r"\w+", "a+", "(a|b)*", "[abc]", "a{2}", "x?", r"(a)\1"])
def test_other_syntax_is_not_run(pattern: str) -> None:
    assert regex_matches(pattern, TOOLS, 10) is None


def test_limits() -> None:
    assert regex_matches("a" * (MAX_PATTERN + 1), TOOLS, 10) is None
    assert regex_matches("e", TOOLS, 2) == ["get_weather", "send_mail"]


def test_a_hostile_pattern_is_scanned_not_backtracked() -> None:
    # 60 ``.*`` pieces over 2,048 characters: a backtracking engine would not finish; the
    # scan finds each piece once, left to right.
    tools = [{"name": f"t{i}", "description": "a" * 5000} for i in range(200)]
    assert regex_matches(".*".join(["a"] * 60) + ".*b", tools, 5) == []


def test_read_tools_splits_the_dialect() -> None:
    tools = read_tools(
        [
            {"name": "a", "input_schema": {}},
            {"name": "b", "input_schema": {}, "defer_loading": True},
            {"type": "web_search_20250305", "name": "web_search", "defer_loading": False},
            {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"},
        ]
    )
    assert tools is not None
    assert [t["name"] for t in tools.custom] == ["a", "b"]
    assert tools.deferred == {"b"}
    assert tools.variant == "regex"
    assert tools.others == [{"type": "web_search_20250305", "name": "web_search"}]
    assert "defer_loading" not in str(tools.custom)
    assert read_tools("x") is None


def test_history_drops_search_blocks_and_turns_references_to_text() -> None:
    blocks = search_blocks("toolu_1", "tool_search_tool_bm25", "weather", ["get_weather"])
    history = upstream_history(
        [
            {"role": "user", "content": "Weather?"},
            {"role": "assistant", "content": blocks},
            {"role": "user", "content": [{"type": "text", "text": "go on"}]},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "find", "input": {}}],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": [{"type": "tool_reference", "tool_name": "play"}],
                    }
                ],
            },
        ],
        whole=False,
    )
    assert history.referenced == ["get_weather", "play"]
    assert history.called == ["find"]
    roles = [m["role"] for m in history.messages]
    assert roles == ["user", "assistant", "user"]  # the emptied assistant turn is gone
    assert history.messages[0]["content"][1] == {"type": "text", "text": "go on"}
    result = history.messages[2]["content"][0]["content"]
    assert result == [{"type": "text", "text": "Tools loaded (call them directly): play"}]
    assert "tool_reference" not in str(history.messages)
