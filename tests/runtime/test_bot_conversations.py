"""`Bot.ask(..., conversation=...)`: earlier turns in both API modes, locks, faults, keep-loaded."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import openai
import pytest

from bot_toolsearch import Bot, BotSettings, ConversationStoreError, Tool
from bot_toolsearch._scripted.request import content_text
from bot_toolsearch.conversations import (
    ConversationTurn,
    MemoryConversationStore,
    SQLiteConversationStore,
)
from bot_toolsearch.testing import ModelRequest, ScriptedOpenAIServer, call, error, text

if TYPE_CHECKING:
    from tests.conftest import BotFactory, Ran

INITIAL = ["send_message", "end", "tool_search"]
TIMEOUT = 10.0


def user_texts(request: ModelRequest) -> list[str]:
    return [
        content_text(m.get("content"))
        for m in request.messages
        if m.get("role") == "user" and m.get("type") in (None, "message")
    ]


def called_names(request: ModelRequest) -> list[str]:
    """Names of the tool calls in the request's history (both API modes)."""
    names: list[str] = []
    for item in request.messages:
        if item.get("type") == "function_call":
            names.append(str(item.get("name")))
        for call_ in item.get("tool_calls") or ():
            names.append(str(call_["function"]["name"]))
    return names


def weather_turn(city: str, suffix: str) -> list[Any]:
    return [
        call("tool_search", id=f"s{suffix}", query="select:weather.forecast"),
        call("weather-_-forecast", id=f"w{suffix}", city=city),
        call("send_message", id=f"m{suffix}", text=f"Sunny in {city}."),
        call("end", id=f"e{suffix}"),
    ]


async def test_the_next_ask_sees_the_earlier_turn(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool], api: str
) -> None:
    bot = make_bot(weather_tools)
    server.script(*weather_turn("Oslo", "1"), text("And rainy in Paris."))
    first = await bot.ask("weather in Oslo?", conversation="chat-1")
    second = await bot.ask("and in Paris?", conversation="chat-1")

    assert first.reply == "Sunny in Oslo."
    assert second.reply == "And rainy in Paris."
    request = server.requests[4]
    assert user_texts(request) == ["weather in Oslo?", "and in Paris?"]
    # What ran is replayed with its result; the search, and end, only mattered in their ask.
    assert called_names(request) == ["weather-_-forecast", "send_message"]
    assert [call_id for call_id, _ in request.tool_outputs] == ["w1", "m1"]
    assert request.tool_outputs[0][1] == "weather.forecast ok [('city', 'Oslo')]"
    # The directory still sits right after the prompt, identical to the first ask's.
    assert request.system_texts == server.requests[0].system_texts
    if api == "responses":
        assert request.previous_response_id is None  # a new ask replays, never chains
    history = await bot.conversations.load("chat-1")
    assert [t.user_text for t in history.turns] == ["weather in Oslo?", "and in Paris?"]
    assert [t.reply for t in history.turns] == ["Sunny in Oslo.", "And rainy in Paris."]


async def test_without_a_conversation_nothing_is_read_or_written(
    server: ScriptedOpenAIServer, make_bot: BotFactory
) -> None:
    bot = make_bot()
    server.script(text("one"), text("two"))
    await bot.ask("first")
    await bot.ask("second")
    assert user_texts(server.requests[1]) == ["second"]
    assert isinstance(bot.conversations, MemoryConversationStore)
    assert bot.conversations._turns == {}


async def test_a_failed_ask_leaves_the_conversation_as_it_was(
    server: ScriptedOpenAIServer, make_bot: BotFactory
) -> None:
    bot = make_bot()
    server.script(text("one"), call("send_message", text="half"), error(500, "boom"), text("3"))
    await bot.ask("first", conversation="c")
    with pytest.raises(openai.InternalServerError):
        await bot.ask("this one fails", conversation="c")
    await bot.ask("third", conversation="c")
    assert user_texts(server.requests[3]) == ["first", "third"]
    history = await bot.conversations.load("c")
    assert [t.user_text for t in history.turns] == ["first", "third"]


async def test_turns_are_kept_within_max_turns_and_the_token_budget(
    server: ScriptedOpenAIServer, client: openai.AsyncOpenAI, api: str
) -> None:
    class Source:
        settings = BotSettings.model_validate({"model": {"api": api}})

        def snapshot(self) -> BotSettings:
            return self.settings

    source = Source()
    bot = Bot(source, client=client)
    for word in ("one", "two", "three"):
        server.script(text(f"re {word}"))
        await bot.ask(word * 40, conversation="c")
    # Read per ask, like every setting: a hot reload applies to the next ask.
    source.settings = BotSettings.model_validate(
        {"model": {"api": api}, "conversations": {"max_turns": 2}}
    )
    server.script(text("x"))
    await bot.ask("four", conversation="c")
    assert user_texts(server.requests[-1]) == ["two" * 40, "three" * 40, "four"]
    source.settings = BotSettings.model_validate(
        {"model": {"api": api}, "conversations": {"max_turns": 10, "max_tokens": 60}}
    )
    server.script(text("y"))
    await bot.ask("five", conversation="c")
    # Each earlier "<word> * 40" turn costs about 40 tokens: only the newest whole turns fit.
    assert user_texts(server.requests[-1]) == ["four", "five"]


async def test_asks_in_one_conversation_run_one_at_a_time() -> None:
    running = 0
    most = 0

    async def slow(who: str) -> str:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.05)
        running -= 1
        return f"done {who}"

    def respond(request: ModelRequest) -> Any:
        if request.tool_outputs and user_texts(request)[-1] in request.tool_outputs[-1][1]:
            return text("ok")
        return call("slow", id=f"c{len(user_texts(request))}", who=user_texts(request)[-1])

    tools = [Tool("slow", "Slow.", {"type": "object", "properties": {"who": {}}}, slow)]
    with ScriptedOpenAIServer(responder=respond) as server:
        async with openai.AsyncOpenAI(base_url=server.base_url, api_key="t", max_retries=0) as c:
            bot = Bot(BotSettings(), tools, client=c)
            await asyncio.gather(*(bot.ask(w, conversation="same") for w in ("a", "b", "c")))
            requests = server.requests
    assert most == 1
    # Each later ask saw every earlier one: 1, 2 and 3 user messages in the first requests.
    firsts = [r for r in requests if r.messages[-1].get("role") == "user"]
    assert sorted(len(user_texts(r)) for r in firsts) == [1, 2, 3]


async def test_asks_in_different_conversations_run_in_parallel() -> None:
    arrived = {"a": asyncio.Event(), "b": asyncio.Event()}

    async def meet(who: str) -> str:
        # Each waits for the other: asks serialised across conversations would time out here.
        arrived[who].set()
        other = "b" if who == "a" else "a"
        await asyncio.wait_for(arrived[other].wait(), TIMEOUT)
        return f"met {who}"

    def respond(request: ModelRequest) -> Any:
        if request.tool_outputs:
            return text("ok")
        return call("meet", id="m", who=user_texts(request)[-1])

    tools = [Tool("meet", "Meet.", {"type": "object", "properties": {"who": {}}}, meet)]
    with ScriptedOpenAIServer(responder=respond) as server:
        async with openai.AsyncOpenAI(base_url=server.base_url, api_key="t", max_retries=0) as c:
            bot = Bot(BotSettings(), tools, client=c)
            results = await asyncio.gather(
                bot.ask("a", conversation="A"), bot.ask("b", conversation="B")
            )
    assert [r.reply for r in results] == ["ok", "ok"]


async def test_a_call_to_a_tool_no_longer_permitted_is_dropped_with_its_result(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool]
) -> None:
    def hook(context: Mapping[str, Any], names: Collection[str]) -> set[str]:
        return {n for n in names if n not in context.get("deny", ())}

    bot = make_bot(weather_tools, tool_filter=hook)
    server.script(*weather_turn("Oslo", "1"), text("second"))
    await bot.ask("weather in Oslo?", conversation="c")
    await bot.ask("again?", conversation="c", context={"deny": ["weather.forecast"]})
    request = server.requests[4]
    # The scripted server answers 400 for unpaired calls; here the pair is gone entirely.
    assert called_names(request) == ["send_message"]
    assert [call_id for call_id, _ in request.tool_outputs] == ["m1"]
    assert "forecast" not in json.dumps(request.messages)
    assert user_texts(request) == ["weather in Oslo?", "again?"]


async def test_a_broken_stored_history_is_repaired_before_it_is_sent(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool]
) -> None:
    store = MemoryConversationStore()
    call_ = {"id": "k1", "type": "function", "function": {"name": "music.play", "arguments": "{}"}}
    orphan = {"id": "k2", "type": "function", "function": {"name": "end", "arguments": "{}"}}
    broken = (
        {"role": "user", "content": "play something"},
        "not a message",
        {"role": "tool", "tool_call_id": "nobody", "content": "a result without its call"},
        {"role": "assistant", "content": None, "tool_calls": [call_, orphan]},
        {"role": "tool", "tool_call_id": "k1", "content": "playing"},
        {"role": "user"},
        {"role": "assistant", "content": "done", "extra": "dropped"},
    )
    await store.append("c", ConversationTurn(user_text="x", reply="", messages=broken))  # type: ignore[arg-type]
    bot = make_bot(weather_tools, conversations=store)
    server.script(text("fine"))
    result = await bot.ask("next", conversation="c")
    assert result.reply == "fine"
    request = server.requests[0]
    assert called_names(request) == ["music-_-play"]
    assert request.tool_outputs == [("k1", "playing")]
    assert user_texts(request) == ["play something", "next"]
    assert "extra" not in json.dumps(request.body)


async def test_keep_loaded_conversation_loads_called_tools_in_first_call_order(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool], ran: Ran
) -> None:
    def hook(context: Mapping[str, Any], names: Collection[str]) -> set[str]:
        return {n for n in names if n not in context.get("deny", ())}

    bot = make_bot(
        weather_tools, tool_filter=hook, skills={"tool_search_keep_loaded": "conversation"}
    )
    server.script(
        *weather_turn("Oslo", "1"),
        call("tool_search", id="s2", query="select:calendar.add,music.play"),
        call("calendar-_-add", id="c2", title="trip"),
        call("end", id="e2"),
        call("weather-_-forecast", id="w3", city="Rome"),  # callable in round 1 now
        call("end", id="e3"),
        call("end", id="e4"),
    )
    await bot.ask("weather in Oslo?", conversation="c")
    await bot.ask("add a trip", conversation="c")
    third = await bot.ask("and Rome?", conversation="c")
    await bot.ask("once more", conversation="c", context={"deny": ["weather.forecast"]})

    assert server.requests[4].tool_names == [*INITIAL, "weather-_-forecast"]
    # Loaded by the search but never called: music.play is not kept.
    assert server.requests[7].tool_names == [*INITIAL, "weather-_-forecast", "calendar-_-add"]
    assert third.trace[0].calls[0].outcome == "ran"
    assert ("weather.forecast", {"city": "Rome"}) in ran.calls
    # The directory (the cacheable prefix) is the same in every ask.
    assert {tuple(r.system_texts) for r in server.requests[:9]} == {
        tuple(server.requests[0].system_texts)
    }
    denied = server.requests[9]
    assert denied.tool_names == [*INITIAL, "calendar-_-add"]
    assert "forecast" not in json.dumps(denied.body)


async def test_by_default_the_loaded_set_resets_with_each_message(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool]
) -> None:
    bot = make_bot(weather_tools)
    server.script(*weather_turn("Oslo", "1"), call("end"))
    await bot.ask("weather in Oslo?", conversation="c")
    await bot.ask("again", conversation="c")
    assert server.requests[4].tool_names == INITIAL


async def test_a_corrupt_store_fails_conversation_asks_but_not_single_shot_ones(
    server: ScriptedOpenAIServer, make_bot: BotFactory, tmp_path: Path
) -> None:
    path = tmp_path / "bot.db"
    path.write_bytes(b"garbage" * 1000)
    store = SQLiteConversationStore(path)
    bot = make_bot(conversations=store)
    server.script(text("still here"))
    with pytest.raises(ConversationStoreError, match="not a usable") as info:
        await bot.ask("remember this", conversation="c")
    assert str(path) in str(info.value)
    assert server.requests == []  # nothing was asked
    assert (await bot.ask("single shot")).reply == "still here"
    await store.aclose()


async def test_a_failed_write_keeps_the_reply_on_the_error(
    server: ScriptedOpenAIServer, make_bot: BotFactory, tmp_path: Path
) -> None:
    import sqlite3

    path = tmp_path / "bot.db"
    store = SQLiteConversationStore(path, timeout=0.1)
    bot = make_bot(conversations=store)
    server.script(text("one"), text("two"))
    await bot.ask("first", conversation="c")
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(ConversationStoreError, match="locked") as info:
            await bot.ask("second", conversation="c")
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert info.value.result is not None
    assert info.value.result.reply == "two"  # type: ignore[attr-defined]
    assert (await store.load("c")).total_turns == 1
    await store.aclose()


async def test_reset_conversation_forgets_it(
    server: ScriptedOpenAIServer, make_bot: BotFactory
) -> None:
    bot = make_bot()
    server.script(text("one"), text("two"))
    await bot.ask("first", conversation="c")
    await bot.reset_conversation("c")
    await bot.ask("second", conversation="c")
    assert user_texts(server.requests[1]) == ["second"]


async def test_from_config_keeps_conversations_in_sqlite_and_follows_max_turns_edits(
    server: ScriptedOpenAIServer, tmp_path: Path, api: str
) -> None:
    from tests._helpers import write_config

    path = write_config(tmp_path / "config.toml", server.base_url, api)
    bot = Bot.from_config(path)
    try:
        server.script(text("one"), text("two"))
        await bot.ask("first", conversation="c")
        await bot.ask("second", conversation="c")
        write_config(path, server.base_url, api, "[conversations]\nmax_turns = 1\n")
        reloader = bot._reloader
        assert reloader is not None
        await reloader.wait_for_generation(2, timeout=TIMEOUT)
        server.script(text("three"))
        await bot.ask("third", conversation="c")
    finally:
        await bot.aclose()
    assert user_texts(server.requests[1]) == ["first", "second"]
    assert user_texts(server.requests[2]) == ["second", "third"]
    # A new bot (as after a restart) finds the whole conversation in the file.
    bot = Bot.from_config(path)
    try:
        history = await bot.conversations.load("c")
    finally:
        await bot.aclose()
    assert (tmp_path / "bot.db").is_file()
    assert [t.user_text for t in history.turns] == ["first", "second", "third"]


@pytest.mark.parametrize(
    ("api", "mode"),
    [
        ("chat_completions", "bridge"),
        ("responses", "bridge"),
        ("responses", "additional_tools"),  # a Responses item (Chat Completions appends)
    ],
    indirect=["api"],
)
async def test_fixed_tool_modes_show_the_kept_tools_schemas_before_the_new_message(  # noqa: PLR0917
    server: ScriptedOpenAIServer,
    make_bot: BotFactory,
    weather_tools: list[Tool],
    ran: Ran,
    api: str,
    mode: str,
) -> None:
    """A kept tool is not in ``tools`` under these modes: its schema must be in the prompt."""
    skills = {"tool_search_keep_loaded": "conversation", "tool_search_loading": mode}
    bot = make_bot(weather_tools, skills=skills)

    def use(city: str, call_id: str) -> Any:
        if mode == "bridge":
            return call("call_tool", id=call_id, name="weather.forecast", arguments={"city": city})
        return call("weather-_-forecast", id=call_id, city=city)

    server.script(
        call("tool_search", id="s1", query="select:weather.forecast"),
        use("Oslo", "w1"),
        call("end", id="e1"),
        use("Rome", "w2"),  # callable in round 1: its schema is in the prompt
        call("end", id="e2"),
    )
    await bot.ask("weather in Oslo?", conversation="c")
    second = await bot.ask("and Rome?", conversation="c")

    assert ("weather.forecast", {"city": "Rome"}) in ran.calls
    assert second.trace[0].calls[0].outcome == "ran"
    first_round, last_round = server.requests[3], server.requests[4]
    messages = first_round.messages
    at = max(i for i, m in enumerate(messages) if m.get("role") == "user")
    if mode == "bridge":
        declared = json.loads(
            messages[at - 1]["content"] if api != "responses" else messages[at - 1]["output"]
        )
        assert [t["name"] for t in declared["tools"]] == ["weather.forecast"]
    else:
        assert messages[at - 1]["type"] == "additional_tools"
        assert [t["name"] for t in messages[at - 1]["tools"]] == ["weather-_-forecast"]
    # The tools never change, and the later round keeps the declaration in place.
    assert first_round.tool_names == last_round.tool_names
    assert "weather-_-forecast" not in first_round.tool_names


async def test_a_turn_with_a_huge_tool_result_is_cut_and_the_first_turn_is_kept(
    server: ScriptedOpenAIServer, make_bot: BotFactory, tmp_path: Path
) -> None:
    huge = "z" * 100_000
    page = Tool(
        "web.fetch",
        "Fetch a page.",
        {"type": "object", "properties": {"url": {"type": "string"}}},
        lambda **_: huge,
    )
    store = SQLiteConversationStore(tmp_path / "bot.db")
    bot = make_bot([page], conversations=store)  # the default budget: 8,000 tokens
    server.script(
        text("Hello ZED."),
        call("tool_search", id="s1", query="select:web.fetch"),
        call("web-_-fetch", id="f1", url="https://example.test"),
        text("Fetched."),
        text("Your name is ZED."),
    )
    await bot.ask("My name is ZED", conversation="c")
    await bot.ask("fetch the page", conversation="c")
    answer = await bot.ask("what is my name?", conversation="c")

    assert answer.reply == "Your name is ZED."
    request = server.requests[-1]
    assert user_texts(request) == ["My name is ZED", "fetch the page", "what is my name?"]
    (result,) = [out for call_id, out in request.tool_outputs if call_id == "f1"]
    assert result.startswith("zzz")
    assert "more characters of this tool result were not kept in the conversation]" in result
    assert len(result) < len(huge)
    assert (await store.load("c")).turns[1].messages[2]["content"] == huge  # stored whole
    await store.aclose()


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_a_conversation_id_with_a_lone_surrogate_is_a_store_error(
    server: ScriptedOpenAIServer, make_bot: BotFactory, tmp_path: Path, kind: str
) -> None:
    store = (
        MemoryConversationStore()
        if kind == "memory"
        else SQLiteConversationStore(tmp_path / "b.db")
    )
    bot = make_bot(conversations=store)
    with pytest.raises(ConversationStoreError, match="not valid Unicode"):
        await bot.ask("hello", conversation="abc\ud800")
    assert server.requests == []  # refused before asking the model
    server.script(text("fine"))
    assert (await bot.ask("hello", conversation="abc")).reply == "fine"
    await store.aclose()
