"""Repeated tool-call ids in one model response still pair every call with its own result."""

from __future__ import annotations

from typing import TYPE_CHECKING

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
