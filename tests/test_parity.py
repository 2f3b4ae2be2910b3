"""Parity: one scripted conversation through the `Bot` and through `wrap_openai` sends the same.

Both hosts run the same tool-search protocol, so for the same tools, settings and model turns
the upstream requests carry the same ``tools`` (byte for byte), the same directory and rules,
the same ``additional_tools`` declarations and the same ``tool_search`` answers. The MCP door
(``bot-toolsearch mcp``) gives the same search answers, loads and refusals for the same calls.
The `Bot` runs the tools itself; the wrapper's caller is a loop that runs them with the same
handlers and resends its history, as a framework does. Both APIs, every loading mode, ``[tools]
allow``/``deny``, prefetch, keep-loaded and configured namespace descriptions are covered, and
a catalog holding a real tool named ``tool_search`` (skipped alike, with the same one warning).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import openai
import pytest

from bot_toolsearch import Bot, BotSettings, Tool, wrap_openai
from bot_toolsearch._core.catalog import ToolCatalog
from bot_toolsearch._protocol.messages import PREFETCH_HEADER
from bot_toolsearch._transports.responses import flat_tool
from bot_toolsearch.testing import (
    ModelRequest,
    ScriptedOpenAIServer,
    ScriptEntry,
    ToolCall,
    call,
    text,
)

SYSTEM = "You are a test bot."
MODES = ["append", "additional_tools", "bridge", "auto"]
APIS = ["chat_completions", "responses"]


def _handler(name: str) -> Callable[..., str]:
    def run(**arguments: Any) -> str:
        return f"{name} ran with {json.dumps(arguments, sort_keys=True)}"

    return run


def _tool(name: str, description: str, *params: str) -> Tool:
    parameters = {
        "type": "object",
        "properties": {p: {"type": "string", "description": f"The {p}."} for p in params},
        "required": list(params),
    }
    return Tool(name, description, parameters, _handler(name))


def catalog() -> list[Tool]:
    """Twenty tools in five namespaces (dotted names, so wire names differ)."""
    tools = [
        _tool("weather.forecast", "Forecast the weather for a city.", "city"),
        _tool("weather.alerts", "Severe weather alerts for a region.", "region"),
        _tool("mail.send", "Send an email to a recipient.", "to", "body"),
        _tool("mail.search", "Search the mailbox.", "q"),
        _tool("music.play", "Play a song by title.", "title"),
        _tool("clock.now", "The current time."),
    ]
    tools += [
        _tool(f"stock.item_{i:02d}", f"Stock level of warehouse item {i}.") for i in range(14)
    ]
    return tools


def _settings(api: str, mode: str, **tables: dict[str, Any]) -> BotSettings:
    skills = {"tool_search_enabled": True, "tool_search_loading": mode, **tables.pop("skills", {})}
    model = {"api": api, **tables.pop("model", {})}
    return BotSettings.model_validate({"model": model, "skills": skills, **tables})


def _bridged(mode: str, api: str) -> bool:
    return mode == "bridge" or (mode == "auto" and api == "chat_completions")


def _target_call(mode: str, api: str, call_id: str, name: str, **arguments: Any) -> Any:
    """A call of a loaded tool as the model makes it under ``mode`` (``call_tool`` in bridge)."""
    if _bridged(mode, api):
        return call("call_tool", id=call_id, name=name, arguments=arguments)
    return call(name.replace(".", "-_-"), id=call_id, **arguments)


@dataclass
class Ask:
    """One user message and the model turns it takes."""

    text: str
    turns: Sequence[ScriptEntry]


@dataclass
class Run:
    """What one host sent upstream."""

    requests: list[ModelRequest] = field(default_factory=list)


async def run_bot(
    settings: BotSettings, tools: Sequence[Tool], asks: Sequence[Ask]
) -> list[ModelRequest]:
    with ScriptedOpenAIServer() as server:
        for ask in asks:
            server.script(*ask.turns)
        async with openai.AsyncOpenAI(
            base_url=server.base_url, api_key="test", max_retries=0
        ) as client:
            bot = Bot(settings, tools, client=client, instructions=SYSTEM)
            for ask in asks:
                await bot.ask(ask.text, conversation="c")
            await bot.aclose()
        server.assert_consumed()
        return list(server.requests)


def caller_tools(settings: BotSettings, tools: Sequence[Tool]) -> list[dict[str, Any]]:
    """What a framework would pass: every schema the `Bot` has (its built-ins included)."""
    schemas = [dict(s) for s in Bot(settings, tools).toolset.schemas]
    if settings.model.api == "responses":
        return [flat_tool(s) for s in schemas]
    return schemas


async def run_wrapper(
    settings: BotSettings, tools: Sequence[Tool], asks: Sequence[Ask]
) -> list[ModelRequest]:
    handlers = {t.name: t for t in tools}
    schemas = caller_tools(settings, tools)
    with ScriptedOpenAIServer() as server:
        for ask in asks:
            server.script(*ask.turns)
        inner = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        client = wrap_openai(inner, settings=settings)
        if settings.model.api == "responses":
            await _responses_caller(client, schemas, handlers, asks)
        else:
            await _chat_caller(client, schemas, handlers, asks)
        await client.close()
        server.assert_consumed()
        return list(server.requests)


async def _run(handlers: dict[str, Tool], name: str, arguments: str) -> str:
    return await handlers[name].invoke(json.loads(arguments or "{}"))


async def _chat_caller(
    client: openai.AsyncOpenAI,
    schemas: list[dict[str, Any]],
    handlers: dict[str, Tool],
    asks: Sequence[Ask],
) -> None:
    messages: list[Any] = [{"role": "system", "content": SYSTEM}]
    for ask in asks:
        messages.append({"role": "user", "content": ask.text})
        while True:
            completion = await client.chat.completions.create(
                model="m",
                messages=messages,
                tools=schemas,  # type: ignore[arg-type]
                tool_choice="auto",
            )
            message = completion.choices[0].message
            if not message.tool_calls:
                messages.append({"role": "assistant", "content": message.content})
                break
            messages.append(message.model_dump(exclude_none=True))
            for c in message.tool_calls:
                assert c.type == "function"
                result = await _run(handlers, c.function.name, c.function.arguments)
                messages.append({"role": "tool", "tool_call_id": c.id, "content": result})


async def _responses_caller(
    client: openai.AsyncOpenAI,
    schemas: list[dict[str, Any]],
    handlers: dict[str, Tool],
    asks: Sequence[Ask],
) -> None:
    items: list[Any] = []
    for ask in asks:
        items.append({"role": "user", "content": ask.text})
        while True:
            response = await client.responses.create(
                model="m",
                input=items,
                instructions=SYSTEM,
                tools=schemas,  # type: ignore[arg-type]
                tool_choice="auto",
            )
            calls = [item for item in response.output if item.type == "function_call"]
            if not calls:
                items.append({"role": "assistant", "content": response.output_text})
                break
            for item in calls:
                items.append(
                    {
                        "type": "function_call",
                        "call_id": item.call_id,
                        "name": item.name,
                        "arguments": item.arguments,
                    }
                )
                result = await _run(handlers, item.name, item.arguments)
                items.append(
                    {"type": "function_call_output", "call_id": item.call_id, "output": result}
                )


def directory(request: ModelRequest) -> list[str]:
    """The directory and rules of a request (the host's own prompt and prefetch left out)."""
    texts = []
    for system in request.system_texts:
        at = system.find("<available_deferred_tools")
        if at >= 0:
            texts.append(system[at:].split("\n\n" + PREFETCH_HEADER)[0])
    return texts


def searches(requests: Sequence[ModelRequest], ids: Sequence[str]) -> dict[str, str]:
    """The ``tool_search`` answers of a run, by the scripted call ids (a hidden round's
    answer is in the wrapper's next request only, the `Bot` resends it all ask)."""
    found: dict[str, str] = {}
    for request in requests:
        for call_id, out in request.tool_outputs:
            if call_id in ids:
                found.setdefault(call_id, out)
    return found


def assert_parity(bot: list[ModelRequest], wrapped: list[ModelRequest], ids: Sequence[str]) -> None:
    assert len(bot) == len(wrapped)
    for i, (b, w) in enumerate(zip(bot, wrapped, strict=True)):
        assert json.dumps(b.body.get("tools")) == json.dumps(w.body.get("tools")), i
        assert directory(b) == directory(w), i
        if b.previous_response_id is None and w.previous_response_id is None:
            # Declarations stored behind a previous response are not in the request.
            assert b.additional_tool_names == w.additional_tool_names, i
    answers = searches(bot, ids)
    assert answers == searches(wrapped, ids)
    assert sorted(answers) == sorted(ids)


def conversation(mode: str, api: str, query: str = "select:weather.forecast") -> list[Ask]:
    """Two asks: a search and a call, then (next message) the search again and a call."""
    return [
        Ask(
            "Weather in Oslo?",
            [
                call("tool_search", id="call_s1", query=query),
                _target_call(mode, api, "call_t1", "weather.forecast", city="Oslo"),
                text("Sunny in Oslo."),
            ],
        ),
        Ask(
            "And in Paris?",
            [
                call("tool_search", id="call_s2", query="select:weather.forecast"),
                _target_call(mode, api, "call_t2", "weather.forecast", city="Paris"),
                text("Rain in Paris."),
            ],
        ),
    ]


CASES: dict[str, dict[str, Any]] = {
    "plain": {},
    "deny": {"tools": {"deny": ["mail.*"]}},
    "allow": {"tools": {"allow": ["weather.*", "stock.*", "send_message", "end"]}},
    "prefetch": {"skills": {"prefetch_tools": ["clock.now"]}},
    "keep_conversation": {"skills": {"tool_search_keep_loaded": "conversation"}},
    "stateless": {"model": {"responses_force_stateless_replay": True}},
    "always_loaded": {
        "skills": {"tool_search_always_loaded": ["send_message", "end", "mail.send"]}
    },
    "namespaces": {
        "tools": {"namespaces": {"weather": "Forecasts and alerts.", "stock": "Warehouse."}},
        "skills": {"tool_search_directory_budget": 40},
    },
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("api", APIS)
async def test_bot_and_wrapper_send_the_same(api: str, mode: str, case: str) -> None:
    tables = json.loads(json.dumps(CASES[case]))
    settings = _settings(api, mode, **tables)
    query = "select:weather.forecast,mail.send" if case == "deny" else "select:weather.forecast"
    asks = conversation(mode, api, query)
    bot = await run_bot(settings, catalog(), asks)
    wrapped = await run_wrapper(settings, catalog(), asks)
    assert_parity(bot, wrapped, ["call_s1", "call_s2"])
    if case == "deny":
        assert "mail.send" not in json.dumps(bot[0].body)
        assert json.loads(searches(bot, ["call_s1"])["call_s1"])["not_found"] == ["mail.send"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("api", APIS)
async def test_a_denied_tool_never_changes_a_permitted_tools_wire_name(api: str, mode: str) -> None:
    # ``a.b`` encodes to ``a-_-b``, which a real tool also spells: the map is built over the
    # permitted tools only, so with ``a-_-b`` denied ``a.b`` keeps the plain spelling.
    tools = [_tool("a.b", "Tool a dot b."), _tool("a-_-b", "Tool a dash b."), *catalog()]
    settings = _settings(api, mode, tools={"deny": ["a-_-b"]})
    asks = [
        Ask(
            "Use a.b",
            [
                call("tool_search", id="call_s1", query="select:a.b"),
                _target_call(mode, api, "call_t1", "a.b"),
                text("done"),
            ],
        )
    ]
    bot = await run_bot(settings, tools, asks)
    wrapped = await run_wrapper(settings, tools, asks)
    assert_parity(bot, wrapped, ["call_s1"])
    assert "a-_-b_" not in json.dumps([r.body for r in (*bot, *wrapped)])


def native_tools(
    settings: BotSettings, tools: Sequence[Tool], loaded: Sequence[str]
) -> list[dict[str, Any]]:
    """What a client that speaks tool search itself passes: every schema the `Bot` has, all
    but ``loaded`` marked ``defer_loading`` (and, on Responses, a ``tool_search`` tool)."""
    out: list[dict[str, Any]] = []
    for schema in caller_tools(settings, tools):
        name = schema["function"]["name"] if "function" in schema else schema["name"]
        out.append(schema if name in loaded else {**schema, "defer_loading": True})
    if settings.model.api == "responses":
        out.insert(0, {"type": "tool_search"})
    return out


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("api", APIS)
async def test_a_native_request_sends_what_the_bot_sends_with_those_tools_loaded(
    api: str, mode: str
) -> None:
    # The `Bot`-equivalent of a client's own deferred set: ``tool_search_always_loaded`` set
    # to the tools the client did not defer. The wrapper, given the client's native request
    # (and no always-loaded setting), must send the very same requests.
    loaded = ["send_message", "end", "mail.send"]
    bot_settings = _settings(api, mode, skills={"tool_search_always_loaded": loaded})
    settings = _settings(api, mode)
    asks = conversation(mode, api)
    bot = await run_bot(bot_settings, catalog(), asks)
    handlers = {t.name: t for t in catalog()}
    with ScriptedOpenAIServer(refuse_native=True) as server:
        for ask in asks:
            server.script(*ask.turns)
        inner = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        client = wrap_openai(inner, settings=settings)
        schemas = native_tools(settings, catalog(), loaded)
        if api == "responses":
            await _responses_caller(client, schemas, handlers, asks)
        else:
            await _chat_caller(client, schemas, handlers, asks)
        await client.close()
        server.assert_consumed()
        wrapped = list(server.requests)
    assert_parity(bot, wrapped, ["call_s1", "call_s2"])
    assert '"defer_loading"' not in json.dumps([r.body for r in wrapped])


# -- the MCP door: the same catalog and the same calls give the same loads and refusals ------


async def run_mcp_door(
    settings: BotSettings, tools: Sequence[Tool], turns: Sequence[Any]
) -> dict[str, str]:
    """The MCP door's answer to each scripted call (by call id), made by an official ``mcp``
    client in one session, in order."""
    from mcp import Client, types

    from bot_toolsearch._mcp.door import McpDoor
    from bot_toolsearch._mcp.server import build_server

    answers: dict[str, str] = {}
    door = McpDoor(settings, tools)
    async with door, Client(build_server(door), mode="legacy") as client:
        for entry in turns:
            # The door lists the wire spelling: a client calls tools by it, as the model does.
            name = entry.name
            result = await client.call_tool(name, dict(entry.arguments))
            block = result.content[0]
            assert isinstance(block, types.TextContent)
            answers[entry.id] = block.text
    return answers


MCP_CASES = ["plain", "deny", "allow", "always_loaded", "namespaces"]


@pytest.mark.parametrize("case", MCP_CASES)
@pytest.mark.parametrize("mode", ["append", "bridge"])
async def test_the_mcp_door_loads_and_refuses_as_the_bot_does(mode: str, case: str) -> None:
    tables = json.loads(json.dumps(CASES[case]))
    settings = _settings("chat_completions", mode, **tables)
    query = "select:weather.forecast,mail.send" if case == "deny" else "weather forecast"
    ids = ["call_s1", "call_x1", "call_x2", "call_s2", "call_t1"]
    turns = [
        # A search, then calls of a deferred tool never loaded and of a maybe-denied one,
        # then a select: search and a call of the loaded tool (one call per response, as
        # an MCP client makes them).
        call("tool_search", id="call_s1", query=query),
        call("stock-_-item_03", id="call_x1"),
        call("mail-_-send", id="call_x2", to="a@b.c", body="hi"),
        call("tool_search", id="call_s2", query="select:weather.alerts,clock.now"),
        _target_call(mode, "chat_completions", "call_t1", "weather.forecast", city="Oslo"),
    ]
    bot = await run_bot(settings, catalog(), [Ask("Weather in Oslo?", [*turns, text("ok")])])
    from_bot = searches(bot, ids)
    assert sorted(from_bot) == sorted(ids)
    from_door = await run_mcp_door(settings, catalog(), turns)
    # The same answers, but for the spelling: the door writes every tool name in its wire
    # spelling (the `Bot` writes canonical names in its results, as its model's directory).
    assert {k: v.replace("-_-", ".") for k, v in from_door.items()} == {
        k: v.replace("-_-", ".") for k, v in from_bot.items()
    }
    if case == "deny":
        assert json.loads(from_door["call_s1"])["not_found"] == ["mail.send"]
        assert "no tool named mail-_-send" in from_door["call_x2"]  # as the client wrote it
    else:
        assert "tool_search" in from_door["call_x1"]  # not loaded yet: search first


# -- a real tool named tool_search: every door skips it alike while it offers the virtual one --

REAL = "A real tool that happens to use the reserved name."


def with_real_tool_search() -> list[Tool]:
    """The catalog plus a real tool named ``tool_search`` (as a 528-tool catalog has one)."""
    tools = catalog()
    tools.insert(3, _tool("tool_search", REAL, "q"))
    return tools


def reserved_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    found = [r.getMessage() for r in caplog.records if "(1 reserved)" in r.getMessage()]
    caplog.clear()
    return found


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("api", APIS)
async def test_a_real_tool_search_is_skipped_alike_by_the_bot_and_the_wrapper(
    api: str, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    settings = _settings(api, mode)
    asks = conversation(mode, api)
    with caplog.at_level(logging.WARNING, logger="bot_toolsearch"):
        bot = await run_bot(settings, with_real_tool_search(), asks)
        from_bot = reserved_warnings(caplog)
        wrapped = await run_wrapper(settings, with_real_tool_search(), asks)
        from_wrapper = reserved_warnings(caplog)
    assert_parity(bot, wrapped, ["call_s1", "call_s2"])
    assert REAL not in json.dumps([r.body for r in (*bot, *wrapped)])
    assert "tool_search" not in directory(bot[0])[0].split("</available_deferred_tools>")[0]
    # The same one warning, worded once (the catalog's), once per tool set.
    assert len(from_bot) == 1
    assert from_bot == from_wrapper


@pytest.mark.parametrize("mode", ["append", "bridge"])
async def test_the_mcp_door_skips_a_real_tool_search_as_the_bot_does(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    settings = _settings("chat_completions", mode)
    ids = ["call_s1", "call_r1", "call_s2", "call_t1"]
    turns = [
        call("tool_search", id="call_s1", query="weather forecast"),
        call("tool_search", id="call_r1", q="the real tool's own arguments"),
        call("tool_search", id="call_s2", query="select:tool_search,clock.now"),
        _target_call(mode, "chat_completions", "call_t1", "weather.forecast", city="Oslo"),
    ]
    with caplog.at_level(logging.WARNING, logger="bot_toolsearch"):
        bot = await run_bot(settings, with_real_tool_search(), [Ask("x", [*turns, text("ok")])])
        from_bot = reserved_warnings(caplog)
        from_door = await run_mcp_door(settings, with_real_tool_search(), turns)
        door_warnings = reserved_warnings(caplog)
    answers = searches(bot, ids)
    assert sorted(answers) == sorted(ids)
    # The same answers but for the spelling: the door's are the wire names.
    assert {k: v.replace("-_-", ".") for k, v in from_door.items()} == answers
    assert json.loads(from_door["call_s2"])["loaded"] == ["clock-_-now"]
    assert "tool_search ran with" not in json.dumps(from_door)  # the real tool never ran
    assert len(from_bot) == 1
    # The same one line as a catalog of the door's own tool list logs (no built-ins there; a
    # snapshot keeps the real tool last).
    listed = sorted(with_real_tool_search(), key=lambda t: t.name == "tool_search")
    with caplog.at_level(logging.WARNING, logger="bot_toolsearch"):
        ToolCatalog([t.schema() for t in listed])
    assert door_warnings == reserved_warnings(caplog)


# -- the Messages door (Anthropic's Messages API: `wrap_anthropic`, the proxy's adapter) ---------


def _messages_tools(settings: BotSettings, tools: Sequence[Tool]) -> list[dict[str, Any]]:
    """The same schemas as Anthropic custom tools (``input_schema``)."""
    out = []
    for schema in caller_tools(settings, tools):
        function = schema["function"]
        entry = {"name": function["name"], "input_schema": function["parameters"]}
        if function.get("description"):
            entry["description"] = function["description"]
        out.append(entry)
    return out


async def run_messages(
    settings: BotSettings, tools: Sequence[Tool], asks: Sequence[Ask]
) -> list[ModelRequest]:
    """A Messages caller through `wrap_anthropic` (the adapter ``serve`` runs too), running
    its tools and resending its history as Claude-style agents do."""
    import anthropic

    from bot_toolsearch import wrap_anthropic

    handlers = {t.name: t for t in tools}
    schemas = _messages_tools(settings, tools)
    with ScriptedOpenAIServer(refuse_native=True) as server:
        for ask in asks:
            server.script(*ask.turns)
        inner = anthropic.AsyncAnthropic(
            base_url=server.base_url.removesuffix("/v1"), api_key="test", max_retries=0
        )
        client = wrap_anthropic(inner, settings=settings)
        messages: list[Any] = []
        for ask in asks:
            messages.append({"role": "user", "content": ask.text})
            while True:
                reply = await client.messages.create(
                    model="m", max_tokens=100, system=SYSTEM, messages=messages, tools=schemas
                )
                uses = [b for b in reply.content if b.type == "tool_use"]
                messages.append({"role": "assistant", "content": reply.content})
                if not uses:
                    break
                results = [
                    {
                        "type": "tool_result",
                        "tool_use_id": b.id,
                        "content": await _run(handlers, b.name, json.dumps(b.input)),
                    }
                    for b in uses
                ]
                messages.append({"role": "user", "content": results})
        await inner.close()
        server.assert_consumed()
        return list(server.requests)


def _canonical_tools(request: ModelRequest) -> list[tuple[str, str]]:
    """``(canonical name, parameters JSON)`` of each tool, in either tool shape."""
    out = []
    for tool in request.body.get("tools") or ():
        function = tool.get("function", tool)
        parameters = function.get("parameters", function.get("input_schema"))
        name = function["name"].replace("-_-", ".")
        out.append((name, json.dumps(parameters, sort_keys=True)))
    return out


MESSAGES_CASES = ["plain", "deny", "allow", "prefetch", "keep_conversation", "always_loaded"]


@pytest.mark.parametrize("case", MESSAGES_CASES)
async def test_the_messages_door_sends_what_the_bot_sends(case: str) -> None:
    """The same tools (canonical names, same schemas, same order), the same directory and
    rules, the same search answers, round for round, as the `Bot` on Chat Completions with
    ``append`` loading (the one loading mode of the Messages API)."""
    tables = json.loads(json.dumps(CASES[case]))
    settings = _settings("chat_completions", "append", **tables)
    query = "select:weather.forecast,mail.send" if case == "deny" else "select:weather.forecast"
    bot = await run_bot(settings, catalog(), conversation("append", "chat_completions", query))
    asks = [
        Ask(ask.text, [_dotted(turn) for turn in ask.turns])
        for ask in conversation("append", "chat_completions", query)
    ]
    door = await run_messages(settings, catalog(), asks)
    assert len(bot) == len(door)
    for i, (b, m) in enumerate(zip(bot, door, strict=True)):
        assert _canonical_tools(b) == _canonical_tools(m), i
        assert directory(b) == directory(m), i
    ids = ["call_s1", "call_s2"]
    answers = searches(bot, ids)
    assert answers == searches(door, ids)
    assert sorted(answers) == ids


def _dotted(turn: ScriptEntry) -> ScriptEntry:
    """A scripted call with the canonical name (Messages sends names unencoded)."""
    if isinstance(turn, ToolCall):
        return ToolCall(turn.name.replace("-_-", "."), turn.arguments, turn.id)
    return turn
