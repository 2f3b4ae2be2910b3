"""Regression tests for the eight defects of issue 10, one group per defect, plus the extras.

Endpoint faults (defect 7) are in ``test_endpoint_faults.py``; fuzzing and the leak audit in
``test_hostile_fuzz.py`` and ``test_hostile_leaks.py``.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from bot_toolsearch import CatalogError, Tool
from bot_toolsearch._core.catalog import MAX_SCHEMA_DEPTH
from bot_toolsearch._core.result import unfence
from bot_toolsearch._protocol.messages import TRUNCATED_RESULT
from bot_toolsearch._tools.tool import MAX_THREADS_PER_TOOL, HandlerThreads
from bot_toolsearch.core import ToolCatalog, ToolSearchSession
from bot_toolsearch.testing import ScriptedOpenAIServer, call, text
from bot_toolsearch.tools import ToolRegistry

if TYPE_CHECKING:
    from tests.conftest import BotFactory, Ran


def fn(name: str, parameters: object = None, description: str = "") -> dict[str, Any]:
    function: dict[str, Any] = {"name": name, "description": description}
    if parameters is not None:
        function["parameters"] = parameters
    return {"type": "function", "function": function}


def nested(levels: int) -> dict[str, Any]:
    """A parameters object exactly ``levels`` levels deep (each object and array is one)."""
    node: dict[str, Any] = {"type": "string"}
    for _ in range(levels - 1):
        node = {"items": node}
    return node


# -- defect 1: one malformed tool_search call froze the bot -----------------------------------


def test_unfence_keeps_the_old_meaning() -> None:
    assert unfence('```json\n{"query": "a"}\n```') == '{"query": "a"}'
    assert unfence("```{}```") == "{}"
    assert unfence("``````") == ""
    assert unfence("````") is None
    assert unfence("``` x") is None
    assert unfence("x```") is None


def test_a_fence_full_of_spaces_is_answered_promptly_not_after_hours() -> None:
    # On the old regex this input took time cubic in its length (4,000 spaces: 18 s; this one
    # would take days). The child process has a hang guard far above any real run time: it
    # catches a hang, it does not measure speed (bench_hostile does that).
    code = (
        "from bot_toolsearch import ToolSearchSession\n"
        "s = ToolSearchSession([{'type': 'function', 'function': {'name': 'a.b'}}])\n"
        "for n in (100_000,):\n"
        "    out = s.execute('```' + ' ' * n + 'x')\n"
        "    out2 = s.execute('```json' + ' \\n' * n + '{\"query\": \"a.b\"}' + ' ' * n + '```')\n"
        "print(out2)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True
    )
    assert json.loads(done.stdout)["loaded"] == ["a.b"]


# -- defect 2: bad tool parameters raised the wrong exception ----------------------------------


def self_referencing() -> dict[str, Any]:
    parameters: dict[str, Any] = {"type": "object"}
    parameters["properties"] = {"me": parameters}
    return parameters


BAD_PARAMETERS = {
    "self-referencing": (self_referencing, "refer to themselves"),
    "a set inside": (lambda: {"type": "object", "enum": {1, 2}}, "not JSON"),
    "600 levels": (lambda: nested(600), f"deeper than {MAX_SCHEMA_DEPTH} levels"),
    "NaN": (lambda: {"type": "number", "default": float("nan")}, "not JSON"),
}


@pytest.mark.parametrize("case", sorted(BAD_PARAMETERS))
def test_tool_with_bad_parameters_raises_catalog_error_naming_the_tool(case: str) -> None:
    make, what = BAD_PARAMETERS[case]
    with pytest.raises(CatalogError) as caught:
        Tool("mail.send", "Send mail.", make(), lambda: "")
    assert caught.value.name == "mail.send"
    assert "mail.send" in str(caught.value)
    assert what in str(caught.value)


@pytest.mark.parametrize("case", sorted(BAD_PARAMETERS))
def test_catalog_skips_an_entry_with_bad_parameters_with_one_warning(
    case: str, caplog: pytest.LogCaptureFixture
) -> None:
    make, _ = BAD_PARAMETERS[case]
    with caplog.at_level(logging.WARNING, logger="bot_toolsearch"):
        catalog = ToolCatalog([fn("bad.tool", make()), fn("good.tool")])
    assert catalog.names == ("good.tool",)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "bad.tool" in warnings[0]


def test_the_schema_depth_limit_is_exact() -> None:
    assert ToolCatalog([fn("edge", nested(MAX_SCHEMA_DEPTH))]).names == ("edge",)
    assert Tool("edge", "", nested(MAX_SCHEMA_DEPTH), lambda: "").name == "edge"
    assert ToolCatalog([fn("over", nested(MAX_SCHEMA_DEPTH + 1))]).names == ()
    with pytest.raises(CatalogError, match="deeper than"):
        Tool("over", "", nested(MAX_SCHEMA_DEPTH + 1), lambda: "")


def test_nested_builds_the_depth_it_claims() -> None:
    from bot_toolsearch._core.catalog import schema_depth_problem

    for levels in (2, 3, 10, 11, 129):
        assert schema_depth_problem(nested(levels), levels) is None
        assert schema_depth_problem(nested(levels), levels - 1) is not None


@pytest.mark.parametrize("value", [None, 42, 4.2, True, object()])
def test_catalog_of_something_that_is_no_sequence_raises_catalog_error(value: object) -> None:
    with pytest.raises(CatalogError, match="sequence of tool schemas"):
        ToolCatalog(value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"parameters": [1, 2]}, "JSON Schema object"),
        ({"description": 42}, "description must be a string"),
        ({"timeout": 0}, "timeout"),
        ({"timeout": -1.0}, "timeout"),
        ({"timeout": float("inf")}, "timeout"),
        ({"timeout": True}, "timeout"),
        ({"timeout": "5"}, "timeout"),
    ],
)
def test_other_bad_tool_arguments_raise_catalog_error(kwargs: dict[str, Any], match: str) -> None:
    args: dict[str, Any] = {"parameters": None, "description": "d", **kwargs}
    timeout = args.pop("timeout", None)
    with pytest.raises(CatalogError, match=match):
        Tool("t", args["description"], args["parameters"], lambda: "", timeout=timeout)


# -- defect 3: one bad tool folder broke the registry ------------------------------------------


def write_folder(root: Path, rel: str, config: str) -> Path:
    folder = root / rel
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(config, encoding="utf-8")
    (folder / "handler.py").write_text("def execute(**kw):\n    return 'ok'\n", encoding="utf-8")
    return folder


def test_a_deeply_nested_config_json_skips_only_its_folder(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    deep = '{"properties": {"x": ' * 500 + "{}" + "}}" * 500
    bad = write_folder(tmp_path, "bad/deep", '{"description": "d", "parameters": ' + deep + "}")
    write_folder(tmp_path, "ok/first", '{"description": "first"}')
    with caplog.at_level(logging.WARNING, logger="bot_toolsearch"):
        registry = ToolRegistry([tmp_path])
        assert sorted(registry.snapshot().tools) == ["ok.first"]
        write_folder(tmp_path, "ok/second", '{"description": "second"}')
        registry.reload()
        registry.reload()
    assert sorted(registry.snapshot().tools) == ["ok.first", "ok.second"]
    about_bad = [r for r in caplog.records if str(bad) in r.getMessage()]
    assert len(about_bad) == 1
    assert "nests deeper" in about_bad[0].getMessage()


def test_parameters_too_deep_but_loadable_skip_the_folder(tmp_path: Path) -> None:
    deep = json.dumps(nested(MAX_SCHEMA_DEPTH + 1))
    write_folder(tmp_path, "bad/deep", '{"description": "d", "parameters": ' + deep + "}")
    write_folder(tmp_path, "ok/edge", json.dumps({"parameters": nested(MAX_SCHEMA_DEPTH)}))
    assert sorted(ToolRegistry([tmp_path]).snapshot().tools) == ["ok.edge"]


def test_a_folder_sets_its_own_timeout_and_a_bad_one_skips_it(tmp_path: Path) -> None:
    write_folder(tmp_path, "a/slow", '{"description": "d", "timeout": 2.5}')
    write_folder(tmp_path, "a/inner", '{"function": {"description": "d", "timeout": 3}}')
    write_folder(tmp_path, "a/bad", '{"description": "d", "timeout": "soon"}')
    tools = ToolRegistry([tmp_path]).snapshot().tools
    assert sorted(tools) == ["a.inner", "a.slow"]
    assert (tools["a.slow"].timeout, tools["a.inner"].timeout) == (2.5, 3.0)


# -- defect 4: a hidden tool changed a visible tool's wire name --------------------------------


async def test_a_hidden_tool_does_not_change_a_visible_tools_wire_name(
    server: ScriptedOpenAIServer, make_bot: BotFactory, ran: Ran
) -> None:
    tools = [ran.tool("mail.send"), ran.tool("other"), ran.tool("mail-_-send")]
    bot = make_bot(tools, tools_table={"deny": ["mail-_-send"]})
    server.script(call("tool_search", query="select:mail.send"), call("mail-_-send"), call("end"))
    await bot.ask("send mail")
    assert "mail-_-send" in server.requests[1].tool_names
    assert not any(
        name.startswith("mail-_-send_") for r in server.requests for name in r.tool_names
    )
    assert ran.names == ["mail.send"]


def test_wire_names_depend_only_on_the_permitted_set() -> None:
    from bot_toolsearch._runtime.toolset import ToolSet

    tools = [Tool(n, "", None, lambda: "") for n in ("mail.send", "mail-_-send", "other")]
    toolset = ToolSet.build(tools, ())
    permitted = frozenset({"mail.send", "other", "send_message", "end"})
    names = toolset.wire_names("-_-", permitted)
    assert names.to_wire("mail.send") == "mail-_-send"
    assert names.to_canonical("mail-_-send") == "mail.send"
    assert toolset.wire_names("-_-", frozenset(permitted)) is names  # cached by value
    # With both permitted, one of them gets a suffix, as before.
    every = toolset.wire_names("-_-")
    assert every.to_wire("mail-_-send") == "mail-_-send"
    assert every.to_wire("mail.send").startswith("mail-_-send_")


# -- defects 5 and 6: lone surrogates crashed the ask ------------------------------------------


async def test_a_lone_surrogate_in_a_handler_result_does_not_crash_the_ask(
    server: ScriptedOpenAIServer, make_bot: BotFactory
) -> None:
    def handler() -> dict[str, str]:
        return {"text": "broken \ud83d emoji"}

    bot = make_bot([Tool("echo", "Echo.", None, handler)], skills={"tool_search_enabled": False})
    server.script(call("echo"), text("done"))
    result = await bot.ask("echo")
    assert result.reply == "done"
    outputs = [content for _, content in server.requests[1].tool_outputs]
    assert outputs == ['{"text": "broken \ufffd emoji"}']


async def test_a_lone_surrogate_in_a_query_or_recovered_arguments_does_not_crash_the_ask(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool], ran: Ran
) -> None:
    bot = make_bot(weather_tools)
    recovered = '{"name": "weather-_-forecast", "arguments": {"city": "\\ud83d Oslo"}}'
    server.script(
        call("tool_search", query="\ud83d weather"),
        call("tool_search", query="select:\ud83d"),
        text(recovered),
        call("end"),
    )
    result = await bot.ask("weather")
    assert result.finish_reason == "end"
    assert ran.calls == [("weather.forecast", {"city": "\ud83d Oslo"})]
    second = dict(server.requests[2].tool_outputs)
    assert any('"not_found":["\ufffd"]' in out for out in second.values())


def test_lone_surrogates_in_a_catalog_description_are_replaced() -> None:
    catalog = ToolCatalog([fn("t", None, "half \udc00 pair")])
    schema = catalog.schema("t")
    assert schema is not None
    assert schema["function"]["description"] == "half \ufffd pair"
    session = ToolSearchSession(catalog)
    json.dumps(session.request_tools(), ensure_ascii=False).encode("utf-8")


# -- defect 8: timeouts and hung sync handlers -------------------------------------------------


async def test_a_tool_past_call_timeout_becomes_a_timed_out_result(
    server: ScriptedOpenAIServer, make_bot: BotFactory
) -> None:
    release = threading.Event()
    slow = Tool("slow", "Slow.", None, lambda: release.wait(30) and "late")
    fast = Tool("fast", "Fast.", None, lambda: "quick", timeout=30)
    bot = make_bot(
        [slow, fast], skills={"tool_search_enabled": False}, tools_table={"call_timeout": 0.2}
    )
    server.script([call("slow"), call("fast")], text("done"))
    try:
        result = await bot.ask("go")
    finally:
        release.set()
    outputs = [content for _, content in server.requests[1].tool_outputs]
    assert "did not finish within 0.2 seconds" in outputs[0]
    assert outputs[1] == "quick"
    assert result.trace[0].calls[0].outcome == "failed"


async def test_a_tools_own_timeout_wins_over_call_timeout(
    server: ScriptedOpenAIServer, make_bot: BotFactory
) -> None:
    async def sleepy() -> str:
        import asyncio

        await asyncio.sleep(30)
        return "late"

    bot = make_bot(
        [Tool("sleepy", "Sleeps.", None, sleepy, timeout=0.1)],
        skills={"tool_search_enabled": False},
    )
    server.script(call("sleepy"), text("done"))
    await bot.ask("go")
    assert "within 0.1 seconds" in server.requests[1].tool_outputs[0][1]


async def test_a_handlers_own_timeout_error_is_a_failure_not_a_timeout(
    server: ScriptedOpenAIServer, make_bot: BotFactory
) -> None:
    def handler() -> str:
        raise TimeoutError("upstream took too long")

    bot = make_bot([Tool("t", "", None, handler)], skills={"tool_search_enabled": False})
    server.script(call("t"), text("done"))
    await bot.ask("go")
    assert "upstream took too long" in server.requests[1].tool_outputs[0][1]


async def test_a_stuck_sync_tool_does_not_starve_a_fast_one_in_the_next_ask(
    server: ScriptedOpenAIServer, make_bot: BotFactory
) -> None:
    release = threading.Event()
    started: list[int] = []

    def stuck() -> str:
        started.append(1)
        release.wait(60)
        return "finally"

    tools = [Tool("stuck", "", None, stuck), Tool("fast", "", None, lambda: "fast ok")]
    bot = make_bot(tools, skills={"tool_search_enabled": False}, tools_table={"call_timeout": 0.3})
    server.script([call("stuck") for _ in range(40)], text("gave up"), call("fast"), text("ok"))
    try:
        first = await bot.ask("stall")
        assert first.reply == "gave up"
        # Only the stuck tool's own slots are taken; the rest of its calls never started.
        assert len(started) == MAX_THREADS_PER_TOOL
        second = await bot.ask("fast please")
        assert second.reply == "ok"
        assert server.requests[-1].tool_outputs[0][1] == "fast ok"
    finally:
        release.set()


async def test_handler_threads_hand_a_freed_slot_to_the_next_waiting_call() -> None:
    threads = HandlerThreads(per_tool=1)
    gate = threading.Event()
    order: list[str] = []

    def work(tag: str) -> str:
        if tag == "first":
            gate.wait(10)
        order.append(tag)
        return tag

    import asyncio

    first = asyncio.ensure_future(threads.run("t", work, {"tag": "first"}))
    await asyncio.sleep(0.05)
    second = asyncio.ensure_future(threads.run("t", work, {"tag": "second"}))
    cancelled = asyncio.ensure_future(threads.run("t", work, {"tag": "never"}))
    await asyncio.sleep(0.05)
    assert threads.running("t") == 1
    cancelled.cancel()
    gate.set()
    assert await first == "first"
    assert await second == "second"
    assert order == ["first", "second"]
    for _ in range(100):
        if threads.running("t") == 0:
            break
        await asyncio.sleep(0.01)
    assert threads.running("t") == 0


# -- extras ------------------------------------------------------------------------------------


async def test_a_long_result_is_cut_with_a_marker_stating_its_size(
    server: ScriptedOpenAIServer, make_bot: BotFactory
) -> None:
    big = Tool("big", "", None, lambda: "x" * 10_000)
    bot = make_bot(
        [big], skills={"tool_search_enabled": False}, tools_table={"max_result_chars": 100}
    )
    server.script(call("big"), text("done"))
    await bot.ask("big")
    output = server.requests[1].tool_outputs[0][1]
    assert output == "x" * 100 + TRUNCATED_RESULT.format(total=10_000, shown=100)
    assert "10000 characters" in output


async def test_the_default_result_cap_is_generous(
    server: ScriptedOpenAIServer, make_bot: BotFactory
) -> None:
    big = Tool("big", "", None, lambda: "y" * 150_000)
    bot = make_bot([big], skills={"tool_search_enabled": False})
    server.script(call("big"), text("done"))
    await bot.ask("big")
    output = server.requests[1].tool_outputs[0][1]
    assert output.startswith("y" * 100_000 + "\n[truncated: this tool result has 150000")


async def test_select_accepts_the_wire_spelling_in_the_wrong_case(
    server: ScriptedOpenAIServer, make_bot: BotFactory, ran: Ran
) -> None:
    bot = make_bot([ran.tool("bank.transfer"), ran.tool("bank.balance")])
    server.script(call("tool_search", query="select:BANK-_-TRANSFER"), call("end"))
    await bot.ask("transfer")
    assert json.loads(server.requests[1].tool_outputs[0][1])["loaded"] == ["bank.transfer"]


async def test_a_wrong_case_wire_spelling_of_a_hidden_tool_stays_unknown(
    server: ScriptedOpenAIServer, make_bot: BotFactory, ran: Ran
) -> None:
    bot = make_bot([ran.tool("bank.transfer"), ran.tool("x")], tools_table={"deny": ["bank.*"]})
    server.script(call("tool_search", query="select:BANK-_-TRANSFER"), call("end"))
    await bot.ask("transfer")
    result = json.loads(server.requests[1].tool_outputs[0][1])
    assert result["loaded"] == []
    assert result["not_found"] == ["BANK-_-TRANSFER"]


async def test_search_statistics_do_not_count_hidden_tools(
    server: ScriptedOpenAIServer, make_bot: BotFactory, ran: Ran
) -> None:
    tools = [ran.tool("admin.delete_user", "Delete a user."), ran.tool("user.show", "Show.")]
    bot = make_bot(tools, tools_table={"deny": ["admin.*"]})
    server.script(
        call("tool_search", query="delete user"),
        call("tool_search", query="select:admin.delete_user"),
        call("admin-_-delete_user"),
        call("end"),
    )
    result = await bot.ask("delete")
    stats = result.stats
    assert stats.searches == 2
    assert stats.zero_result_searches == 1  # only "select:admin..." found nothing
    assert "admin.delete_user" not in stats.tools_loaded
    assert stats.tools_loaded == ("user.show",)
