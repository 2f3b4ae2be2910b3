"""What an ask keeps of itself as a turn, and how stored turns are repaired and trimmed."""

from __future__ import annotations

from typing import Any

from bot_toolsearch import CallTrace, RoundTrace
from bot_toolsearch._runtime.turns import estimate_tokens, record_turn, repair, replay_turns
from bot_toolsearch.conversations import ConversationHistory, ConversationTurn

PERMITTED = frozenset({"send_message", "end", "weather.forecast"})


def trace(*rounds: tuple[tuple[str, str, str], ...] | str) -> list[RoundTrace]:
    out = []
    for index, item in enumerate(rounds, 1):
        if isinstance(item, str):
            out.append(RoundTrace(index, (), (), item))
            continue
        calls = tuple(
            CallTrace(call_id, name, "{}", outcome, None, f"result {call_id}")  # type: ignore[arg-type]
            for call_id, name, outcome in item
        )
        out.append(RoundTrace(index, (), calls, None))
    return out


def test_a_turn_keeps_what_ran_and_drops_the_ask_internal_calls() -> None:
    turn = record_turn(
        "weather?",
        "Sunny.",
        trace(
            (("s1", "tool_search", "answered"), ("x1", "music.play", "refused")),
            (("w1", "weather.forecast", "ran"), ("f1", "broken.tool", "failed")),
            (("m1", "send_message", "ran"), ("e1", "end", "refused")),
            (("e2", "end", "ran"),),
            "",
            "final words",
        ),
    )
    assert turn.tools_called == ("weather.forecast", "broken.tool", "send_message")
    roles = [(m["role"], m.get("tool_call_id")) for m in turn.messages]
    assert roles == [
        ("user", None),
        ("assistant", None),
        ("tool", "w1"),
        ("tool", "f1"),
        ("assistant", None),
        ("tool", "m1"),
        ("assistant", None),
    ]
    assert turn.messages[-1] == {"role": "assistant", "content": "final words"}
    assert turn.messages[1]["tool_calls"][0] == {
        "id": "w1",
        "type": "function",
        "function": {"name": "weather.forecast", "arguments": "{}"},
    }


def pair(call_id: str, name: str, result: str = "ok") -> list[dict[str, Any]]:
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": result},
    ]


def test_repair_drops_unpermitted_and_unpaired_calls_but_keeps_text() -> None:
    messages = [
        {"role": "user", "content": "hi"},
        *pair("a", "admin.reset"),
        {
            "role": "assistant",
            "content": "thinking",
            "tool_calls": pair("b", "end")[0]["tool_calls"],
        },
        {"role": "user", "content": "interrupts before the result"},
        {"role": "tool", "tool_call_id": "b", "content": "late"},
        *pair("c", "weather.forecast", "sunny"),
        {"role": "assistant", "tool_calls": [{"id": "d", "function": {"name": "end"}}]},
    ]
    assert repair(messages, PERMITTED) == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "thinking"},
        {"role": "user", "content": "interrupts before the result"},
        *pair("c", "weather.forecast", "sunny"),
    ]


def test_repair_keeps_a_call_only_once_per_id() -> None:
    twice = pair("a", "end")
    twice[0]["tool_calls"] = twice[0]["tool_calls"] * 2
    assert repair([{"role": "user", "content": "x"}, *twice], PERMITTED) == [
        {"role": "user", "content": "x"},
        *pair("a", "end"),
    ]


def stored(*turns: list[dict[str, Any]]) -> ConversationHistory:
    return ConversationHistory(
        conversation="c",
        turns=tuple(
            ConversationTurn(user_text="", reply="", messages=tuple(m), seq=i)
            for i, m in enumerate(turns, 1)
        ),
        total_turns=len(turns),
    )


def test_the_budget_trims_whole_turns_oldest_first() -> None:
    old = [{"role": "user", "content": "old " * 100}, *pair("w", "weather.forecast", "x" * 400)]
    mid = [{"role": "user", "content": "mid"}, *pair("v", "weather.forecast", "y" * 40)]
    new = [{"role": "user", "content": "new"}, {"role": "assistant", "content": "ok"}]
    history = stored(old, mid, new)
    assert replay_turns(history, permitted=PERMITTED, max_tokens=0) == [*old, *mid, *new]
    budget = estimate_tokens(mid) + estimate_tokens(new)
    assert replay_turns(history, permitted=PERMITTED, max_tokens=budget) == [*mid, *new]
    # One token short of the middle turn: it goes whole, never its call without its result.
    assert replay_turns(history, permitted=PERMITTED, max_tokens=budget - 1) == new
    assert replay_turns(history, permitted=PERMITTED, max_tokens=1) == []


def test_token_estimate_counts_wide_characters_one_each() -> None:
    ascii_only = estimate_tokens([{"role": "user", "content": "a" * 400}])
    chinese = estimate_tokens([{"role": "user", "content": "天" * 400}])
    assert ascii_only == 4 + 100
    assert chinese == 4 + 400
