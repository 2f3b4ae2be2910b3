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


def _history(*turns: tuple[Any, ...]) -> ConversationHistory:
    made = tuple(
        ConversationTurn(user_text=str(t[0]["content"]), reply="", messages=t, tools_called=())
        for t in turns
    )
    return ConversationHistory(conversation="c", turns=made, tools_called=(), total_turns=len(made))


def _weather_turn(call_id: str, result: str) -> tuple[dict[str, Any], ...]:
    call = {"id": call_id, "type": "function"}
    call["function"] = {"name": "weather.forecast", "arguments": "{}"}  # type: ignore[assignment]
    return (
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": result},
        {"role": "assistant", "content": "Sunny."},
    )


def test_a_turn_over_the_whole_budget_is_cut_and_older_turns_stay() -> None:
    first = ({"role": "user", "content": "My name is ZED"}, {"role": "assistant", "content": "Hi"})
    huge = "x" * 100_000
    history = _history(first, _weather_turn("w1", huge), ({"role": "user", "content": "ok"},))
    out = replay_turns(history, permitted=PERMITTED, max_tokens=8_000)

    assert out[:2] == list(first)  # turn 1 fits, so it stays
    (result,) = [m for m in out if m["role"] == "tool"]
    assert result["tool_call_id"] == "w1"  # the call keeps its (cut) result
    kept = len(result["content"]) - len(result["content"].lstrip("x"))
    assert 0 < kept < len(huge)
    assert result["content"].endswith(
        f"[cut: {len(huge) - kept} more characters of this tool result were not kept"
        " in the conversation]"
    )
    assert estimate_tokens(out) <= 8_000
    assert out[-1] == {"role": "user", "content": "ok"}


def test_a_turn_too_large_even_without_its_tool_results_is_left_out_alone() -> None:
    first = ({"role": "user", "content": "My name is ZED"},)
    too_big = ({"role": "user", "content": "y" * 40_000},)
    history = _history(first, too_big, ({"role": "user", "content": "newest"},))
    out = replay_turns(history, permitted=PERMITTED, max_tokens=8_000)
    assert out == [first[0], {"role": "user", "content": "newest"}]


def test_turns_that_only_together_exceed_the_budget_still_end_the_history() -> None:
    older = ({"role": "user", "content": "a" * 20_000},)  # 5,004 tokens
    newer = ({"role": "user", "content": "b" * 20_000},)
    out = replay_turns(_history(older, newer), permitted=PERMITTED, max_tokens=8_000)
    assert out == [newer[0]]
