"""The offline planner reads a follow-up ("and in Paris?") against the message before it."""

from __future__ import annotations

import pytest

from bot_toolsearch._demo._history import read_episode, resolve_follow_up
from bot_toolsearch.testing import ModelRequest

TOKYO = "What is the current local time in Tokyo?"


@pytest.mark.parametrize(
    ("text", "earlier", "expected"),
    [
        ("and in Paris?", TOKYO, "What is the current local time in Paris?"),
        ("And Paris?", TOKYO, "What is the current local time in Paris?"),
        ("what about for Berlin", "Weather forecast for Oslo.", "Weather forecast for Berlin."),
        ("And in New York?", TOKYO, "What is the current local time in New York?"),
        ("Convert 10 km to miles", TOKYO, "Convert 10 km to miles"),
        ("and in Paris?", "", "and in Paris?"),
        ("and?", TOKYO, "and?"),
        ("and in Paris?", "Say hello", "and in Paris?"),
    ],
)
def test_resolve_follow_up(text: str, earlier: str, expected: str) -> None:
    assert resolve_follow_up(text, earlier) == expected


def test_the_episode_of_a_follow_up_carries_the_completed_request() -> None:
    messages = [
        {"role": "system", "content": "prompt"},
        {"role": "user", "content": TOKYO},
        {"role": "assistant", "content": "It is 18:00 in Tokyo."},
        {"role": "user", "content": "and in Paris?"},
    ]
    request = ModelRequest("chat_completions", {"messages": messages})
    episode = read_episode(request, {}, "-_-")
    assert episode.user_text == "What is the current local time in Paris?"
    assert episode.steps == []


def test_a_long_hostile_follow_up_is_read_in_linear_time() -> None:
    text = "and " + "in " * 50_000 + "?" * 50_000
    assert resolve_follow_up(text, TOKYO).startswith("What is the current local time in ")
