"""Anthropic's Messages API under tool search: one adapter, the engine's rounds, the shared driver.

`messages_plan` reads a ``POST /v1/messages`` body into the engine's terms (`messages_wire`):
the custom tools become the catalog, a tool search tool with ``defer_loading`` tools fixes
the deferred set (the engine's `Dialect`, searches reported), and without one ``[skills]``
decides as on the OpenAI routes. `MessagesPlan` is sans-IO like the Chat and Responses plans:
``request()`` is the upstream JSON body (the caller's system text plus the directory, its
history without search blocks, the round's tools as custom tools with the virtual
``tool_search`` among them), ``feed(reply)`` reads the upstream's message and answers the
engine's calls in hidden rounds. The answer is one message: every round's blocks in order,
the engine's calls left out and each search shown in its place as Anthropic's
``server_tool_use`` and ``tool_search_tool_result`` blocks (when the caller sent a search
tool), so the last round's calls are only the caller's; ``usage`` summed over rounds,
``stop_reason`` the last round's. Any transport drives it: the shared round driver
(`bot_toolsearch._wrap.rounds`) for a plain call, the stream driver
(`bot_toolsearch._wrap.stream_driver`, its Messages dialect `messages_streaming`) for a
streamed one, which is shown each round's blocks as they come and ends on the same message.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from bot_toolsearch._config.settings import BotSettings
from bot_toolsearch._core.catalog import TOOL_SEARCH_NAME
from bot_toolsearch._errors import ToolNotPermittedError
from bot_toolsearch._protocol.calls import CallRequest, CallResult
from bot_toolsearch._protocol.dialect import Dialect
from bot_toolsearch._services.permissions import permits

from .caller_tools import ToolsCache
from .chat import DROPPED_CALLS, HIDDEN_CALLS_KEPT
from .messages_wire import (
    MessagesTools,
    anthropic_tool,
    forced_tool,
    read_tools,
    regex_matches,
    search_blocks,
    upstream_history,
)
from .observe import RoundHook, Rounds
from .plan import Pending, Setup, read_calls, setup

__all__ = ["MessagesPlan", "messages_plan", "ordinary_body"]

logger = logging.getLogger("bot_toolsearch")

_USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)


def messages_plan(
    body: Mapping[str, Any],
    settings: BotSettings,
    cache: ToolsCache,
    *,
    build: bool = True,
    on_round: RoundHook | None = None,
) -> MessagesPlan | Pending | None:
    """The plan of one Messages request, or ``None`` to send it on as `ordinary_body` makes
    it (no custom tool to search, or tool search off with nothing denied); a `Pending`
    instead of indexing when not to ``build`` (`setup`).

    A request with Anthropic's search tool or ``defer_loading`` keys is honoured whatever
    ``tool_search_enabled`` says, unless ``[proxy] native_tool_search = "pass"``.

    Raises:
        ToolNotPermittedError: ``tool_choice`` names a tool ``[tools] allow``/``deny`` forbid.
    """
    allow, deny = settings.tools.allow, settings.tools.deny
    forced = forced_tool(body.get("tool_choice"))
    if forced is not None and not permits(forced, allow, deny):
        raise ToolNotPermittedError(forced, "tool_choice")
    tools = read_tools(body.get("tools"))
    if tools is None or not tools.custom:
        return None
    native = tools.search is not None
    if (native or tools.marked) and settings.proxy.native_tool_search == "pass":
        return None
    dialect = Dialect(deferred=tools.deferred, report_searches=True) if native else None
    # Loaded tools are appended to the list, as Anthropic loads them (a fixed-tools mode has
    # no Messages form); a request in the dialect searches whatever the config says.
    skills = settings.skills.model_copy(
        update={"tool_search_loading": "append"} | ({"tool_search_enabled": True} if native else {})
    )
    settings = settings.model_copy(update={"skills": skills})
    choice = None if forced is None else {"type": "function", "function": {"name": forced}}
    found = setup(
        settings,
        cache,
        tools=tools.functions,
        tool_choice=choice,
        api="chat",
        build=build,
        dialect=dialect,
    )
    if not isinstance(found, Setup):
        return found
    return MessagesPlan(found, body, tools, on_round)


def ordinary_body(body: Mapping[str, Any], settings: BotSettings) -> dict[str, Any]:
    """A request sent on without tool search, as any Anthropic-compatible backend takes it:
    no search tool, no ``defer_loading``, no search blocks or ``tool_reference`` in the
    history, no tool ``[tools] allow``/``deny`` forbid (unless the config passes Anthropic's
    dialect on: ``[proxy] native_tool_search = "pass"``)."""
    out = dict(body)
    tools = read_tools(body.get("tools"))
    allow, deny = settings.tools.allow, settings.tools.deny
    passing = settings.proxy.native_tool_search == "pass"
    if tools is not None and not passing:
        kept = [t for t in tools.custom if permits(t["name"], allow, deny)]
        out["tools"] = [*tools.others, *kept]
    elif tools is not None and (allow or deny):
        out["tools"] = [
            t
            for t in body["tools"]
            if not (isinstance(t.get("name"), str) and "input_schema" in t)
            or permits(t["name"], allow, deny)
        ]
    messages = body.get("messages")
    if isinstance(messages, list) and not passing:
        out["messages"] = upstream_history(messages, whole=True).messages
    return out


class MessagesPlan:
    """The hidden rounds of one Messages request (sans-IO; `bot_toolsearch._wrap.rounds`
    drives it).

    Args:
        setup: the call's settings, tools and projection.
        body: the caller's JSON body.
        tools: its ``tools`` read (`read_tools`).
        on_round: the ``on_round`` hook, if any (`bot_toolsearch._wrap.observe`).
    """

    def __init__(
        self,
        setup: Setup,
        body: Mapping[str, Any],
        tools: MessagesTools,
        on_round: RoundHook | None = None,
    ) -> None:
        self._setup = setup
        self._tools = tools
        self.offload = setup.offload()
        """Searches may take long (`Setup.offload`): an async door feeds off its loop."""
        self.accept = setup.accept
        """Call when the upstream answered 2xx (`Setup.accept`)."""
        self._report = Rounds(on_round, "messages", body.get("model"))
        self._body = {
            k: v for k, v in body.items() if k not in ("messages", "tools", "system", "stream")
        }
        projection = setup.projection
        history = upstream_history(body.get("messages") or [], whole=projection.keep_conversation)
        projection.load_called([*history.referenced, *history.called])
        projection.load_forced()
        self.messages: list[Any] = history.messages
        self.system = _system(body.get("system"), projection.directory)
        self.rounds = 0
        self._usage: dict[str, int] = {}
        self._blocks: list[Any] = []
        """What the answer shows of the hidden rounds (`shown` of each)."""
        self.shown: list[Any] = []
        """What the answer shows of the round last fed: its blocks in order, each of the
        engine's calls left out, a search as its ``server_tool_use`` and
        ``tool_search_tool_result`` blocks in its place."""
        self._first: Mapping[str, Any] | None = None

    def request(self) -> dict[str, Any]:
        """The JSON body of the next upstream request, without ``stream`` (a streamed call's
        transport adds ``"stream": true``)."""
        self.rounds += 1
        out: list[Any] = list(self._tools.others)
        projection = self._setup.projection
        schemas = projection.round_tools()  # function-shaped, wire names: no other tools
        for name, schema in zip(projection.sent, schemas, strict=True):
            virtual = name == TOOL_SEARCH_NAME and projection.active  # never a real one's
            entry = None if virtual else self._tools.by_name.get(name)
            out.append(entry if entry is not None else anthropic_tool(schema))
        self._report.sending()
        body = {**self._body, "messages": self.messages, "tools": out}
        if self.system is not None:
            body["system"] = self.system
        return body

    def feed(self, reply: Mapping[str, Any]) -> dict[str, Any] | None:
        """Read one upstream message: the caller's answer, or ``None`` to send `request`."""
        if self._first is None:
            self._first = reply
        usage = reply.get("usage")
        counts = self._add_usage(usage if isinstance(usage, Mapping) else {})
        content = [b for b in reply.get("content") or () if isinstance(b, Mapping)]
        projection = self._setup.projection
        sent = projection.sent
        native = [
            (str(b.get("id", "")), str(b.get("name", "")), _arguments(b.get("input")))
            for b in content
            if b.get("type") == "tool_use"
        ]
        calls, _ = read_calls(native, None, projection.view.names, projection.permitted)
        text = "".join(str(b.get("text", "")) for b in content if b.get("type") == "text")
        if not calls:
            self._report.report(self.rounds, sent, None, counts, hidden=False, text=text)
            self.shown = _shown(content, {}, set())
            return self._finish(reply, content, set())
        queries = {i: _query(c) for i, c in enumerate(calls) if c.name == TOOL_SEARCH_NAME}
        calls = self._regex(calls)
        answer = projection.answer(calls)
        answered = answer.results
        mine = {c.id for i, c in enumerate(answer.calls) if i not in answered}
        last = bool(mine) or self.rounds >= self._setup.settings.model.max_rounds
        self._report.report(self.rounds, sent, answer, counts, hidden=not last)
        searches = {
            calls[i].id: search_blocks(calls[i].id, self._tools.search_name, queries.get(i), loaded)
            for i, loaded in answer.searched.items()
        }
        self.shown = _shown(content, searches, mine)
        if last:
            if answered and not mine:
                logger.warning(
                    "[model] max_rounds (%d) reached with only tool_search calls; "
                    "returning the reply without them",
                    self.rounds,
                )
            return self._finish(reply, content, mine)
        self._blocks.extend(self.shown)
        self._hide(content, answer.calls, answered)
        return None

    def _regex(self, calls: list[CallRequest]) -> list[CallRequest]:
        """Under the regex variant, a search's pattern matched over the tools (the matches
        loaded by name); a pattern the matcher does not take is searched by its words."""
        if self._tools.variant != "regex":
            return calls
        limit = self._setup.settings.skills.tool_search_max_results
        projection = self._setup.projection
        out: list[CallRequest] = []
        for call in calls:
            query = _query(call)
            if call.name == TOOL_SEARCH_NAME and isinstance(query, str):
                permitted = (t for t in self._tools.custom if projection.is_deferred(t["name"]))
                found = regex_matches(query, permitted, limit)
                if found:
                    arguments = {**(call.arguments or {}), "query": "select:" + ",".join(found)}
                    raw = json.dumps(arguments)
                    out.append(replace(call, arguments=arguments, arguments_raw=raw))
                    continue
            out.append(call)
        return out

    def _hide(
        self,
        content: Sequence[Mapping[str, Any]],
        calls: Sequence[CallRequest],
        answered: Mapping[int, CallResult],
    ) -> None:
        """The hidden round appended to the upstream messages: its text and calls, then one
        user message of their results (at most `HIDDEN_CALLS_KEPT` calls)."""
        dropped = max(0, len(calls) - HIDDEN_CALLS_KEPT)
        kept = calls[:HIDDEN_CALLS_KEPT]
        blocks: list[Any] = [b for b in content if b.get("type") in ("text", "thinking")]
        blocks.extend(
            {
                "type": "tool_use",
                "id": c.id,
                "name": c.name,
                "input": dict(c.arguments) if c.arguments is not None else {},
            }
            for c in kept
        )
        results = [
            {"type": "tool_result", "tool_use_id": c.id, "content": answered[i].content}
            for i, c in enumerate(kept)
        ]
        if dropped:
            results[-1]["content"] += DROPPED_CALLS.format(count=dropped, kept=HIDDEN_CALLS_KEPT)
        self.messages = [
            *self.messages,
            {"role": "assistant", "content": blocks},
            {"role": "user", "content": results},
        ]

    def _add_usage(self, usage: Mapping[str, Any]) -> tuple[int, int, int]:
        for key in _USAGE_KEYS:
            value = usage.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                self._usage[key] = self._usage.get(key, 0) + value

        def count(key: str) -> int:
            value = usage.get(key)
            return value if isinstance(value, int) else 0

        return count("input_tokens"), count("cache_read_input_tokens"), count("output_tokens")

    def _finish(
        self, reply: Mapping[str, Any], content: list[Mapping[str, Any]], mine: set[str]
    ) -> dict[str, Any]:
        """The answer: the hidden rounds' blocks, then this round's (`shown`); the first
        round's id, summed usage, this round's ``stop_reason``."""
        out = dict(reply)
        out["content"] = [*self._blocks, *self.shown]
        first = self._first if self._first is not None else reply
        if isinstance(first.get("id"), str):
            out["id"] = first["id"]
        had_calls = any(b.get("type") == "tool_use" for b in content)
        if had_calls and not mine:
            out["stop_reason"] = "end_turn"
        if self.rounds > 1:
            usage = dict(reply.get("usage") or {})
            usage.update(self._usage)
            out["usage"] = usage
        return out


def _shown(
    content: Sequence[Mapping[str, Any]],
    searches: Mapping[str, Sequence[Mapping[str, Any]]],
    mine: set[str],
) -> list[Any]:
    """A round's blocks as the caller is shown them (`MessagesPlan.shown`); a search whose
    call id names no block (a repeated id renamed) comes after them."""
    out: list[Any] = []
    placed: set[str] = set()
    for block in content:
        block_id = block.get("id")
        if block.get("type") != "tool_use" or block_id in mine:
            out.append(block)
        elif isinstance(block_id, str) and block_id in searches and block_id not in placed:
            placed.add(block_id)
            out.extend(searches[block_id])
    for call_id, blocks in searches.items():
        if call_id not in placed:
            out.extend(blocks)
    return out


def _arguments(value: object) -> str:
    return json.dumps(value if value is not None else {}, ensure_ascii=False)


def _query(call: CallRequest) -> object:
    return call.arguments.get("query") if call.arguments is not None else None


def _system(system: object, directory: str | None) -> Any:
    """The caller's ``system`` with the directory as a text block after it."""
    if directory is None:
        return system
    block = {"type": "text", "text": directory}
    if isinstance(system, str):
        return [{"type": "text", "text": system}, block] if system else [block]
    if isinstance(system, list):
        return [*system, block]
    return [block]
