"""Repeated tool-call ids in one model response still pair every call with its own result."""

from __future__ import annotations

import sys
from types import FrameType
from typing import TYPE_CHECKING, Any

from bot_toolsearch._protocol.calls import CallRequest, unique_ids
from bot_toolsearch.testing import ScriptedOpenAIServer, call

if TYPE_CHECKING:
    from tests.conftest import BotFactory, Ran


async def test_a_repeated_call_id_is_renamed_in_the_history_and_its_result(
    server: ScriptedOpenAIServer, make_bot: BotFactory, ran: Ran, api: str
) -> None:
    bot = make_bot(
        [ran.tool("a", result="A"), ran.tool("b", result="B")],
        skills={"tool_search_enabled": False},
    )
    server.script([call("a", id="dup"), call("b", id="dup"), call("a", id="dup_2")], call("end"))
    result = await bot.ask("x")

    assert ran.names == ["a", "b", "a"]
    assert [c.id for c in result.trace[0].calls] == ["dup", "dup_3", "dup_2"]
    second = server.requests[1]
    assert second.tool_outputs == [("dup", "A"), ("dup_3", "B"), ("dup_2", "A")]
    if api == "responses":
        # The server stored the repeated ids: the rest of the ask is resent in full.
        assert second.previous_response_id is None
        calls = [m["call_id"] for m in second.messages if m.get("type") == "function_call"]
    else:
        assistant = next(m for m in second.messages if m.get("tool_calls"))
        calls = [c["id"] for c in assistant["tool_calls"]]
    assert calls == ["dup", "dup_3", "dup_2"]


def _calls(*ids: str) -> list[CallRequest]:
    return [CallRequest(i, call_id, "a", "{}", {}) for i, call_id in enumerate(ids)]


def _ids(*ids: str) -> list[str]:
    renamed, _ = unique_ids(_calls(*ids))
    return [c.id for c in renamed]


def test_unique_ids_keep_already_unique_ids_and_say_nothing_changed() -> None:
    calls = _calls("a", "b", "a_2", "")
    renamed, changed = unique_ids(calls)
    assert renamed == calls
    assert not changed


def test_unique_ids_rename_repeats_deterministically_around_existing_ids() -> None:
    assert _ids("x", "x", "x", "x_2", "x_4") == ["x", "x_3", "x_5", "x_2", "x_4"]
    # An id that looks like a renamed one (``call_1_2``) is never given to a repeat.
    assert _ids("call_1", "call_1", "call_1_2", "call_1", "") == [
        "call_1",
        "call_1_3",
        "call_1_2",
        "call_1_4",
        "",
    ]
    assert _ids("", "", "_2") == ["", "_3", "_2"]
    # The same input gives the same ids every time.
    assert _ids("p", "q", "p", "q", "p_2") == _ids("p", "q", "p", "q", "p_2")


def test_unique_ids_of_many_repeats_are_all_distinct_and_keep_the_order() -> None:
    ids = ["dup"] * 5_000 + ["dup_7", "other", "other"]
    renamed, changed = unique_ids(_calls(*ids))
    assert changed
    assert len({c.id for c in renamed}) == len(ids)
    assert [c.index for c in renamed] == list(range(len(ids)))
    assert renamed[0].id == "dup"
    assert renamed[5_000].id == "dup_7"
    assert renamed[-1].id == "other_2"


def _lines_run(count: int) -> int:
    """Python lines executed inside `unique_ids` for ``count`` calls sharing one id."""
    calls = _calls(*["same"] * count)
    code = unique_ids.__code__
    lines = 0

    def tracer(frame: FrameType, event: str, _arg: object) -> Any:
        nonlocal lines
        if frame.f_code is not code:
            return None
        if event == "line":
            lines += 1
        return tracer

    sys.settrace(tracer)
    try:
        unique_ids(calls)
    finally:
        sys.settrace(None)
    return lines


def test_unique_ids_do_work_linear_in_the_number_of_calls() -> None:
    # An operation count, not a clock: 4x the calls must cost about 4x the lines (the old
    # probing from ``_2`` upwards cost 16x: 16k calls sharing one id took 16 s).
    small, large = _lines_run(500), _lines_run(2_000)
    assert large < 5 * small


async def test_a_reply_of_thousands_of_calls_sharing_ids_with_many_ends(
    server: ScriptedOpenAIServer, make_bot: BotFactory, ran: Ran
) -> None:
    bot = make_bot([ran.tool("a", result="A")], skills={"tool_search_enabled": False})
    calls = [call("a", id="same") for _ in range(1_500)] + [call("end", id="") for _ in range(500)]
    server.script(calls, call("end"))
    result = await bot.ask("x")

    assert len(ran.names) == 1_500
    traced = result.trace[0].calls
    assert len({c.id for c in traced}) == 2_000
    ends = [c for c in traced if c.name == "end"]
    assert {c.outcome for c in ends} == {"refused"}
    # Each end refusal names a bounded number of calls, not all 1,999 others.
    assert max(len(c.result) for c in ends) < 1_000
    second = server.requests[1]
    assert len(second.tool_outputs) == 2_000
