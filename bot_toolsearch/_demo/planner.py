"""The embedded offline model: a small deterministic planner, NOT a language model.

It stands in for a tool-using model so ``bot-toolsearch demo`` runs with no API key and no
network, over the real ``Bot``, middleware, openai SDK and HTTP. Used as the responder of a
`ScriptedOpenAIServer`, it behaves the way a tool-using model does under tool search:

1. read the latest user message and the ``<available_deferred_tools>`` directory;
2. if no tool in the request fits, call ``tool_search`` (``select:<name>`` when the message
   names a directory entry exactly, otherwise the message's content words), with arguments
   shaped as its ``parameters`` say (`search_arguments`: a client's own search tool may take
   ``paths``, a list of names, instead of a ``query``);
3. once a fitting schema is in the request, call it with arguments read from the message;
4. call ``send_message`` with a short answer built from the result, then ``end`` alone.

With tool search off (no directory), it calls the best matching tool directly. It is bounded:
after a few rounds without progress it says so and ends. Chat Completions requests carry the
whole history; for the Responses API it remembers each ask by the call ids it issued.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from bot_toolsearch._scripted import ModelRequest, ScriptEntry, ToolCall, text
from bot_toolsearch._scripted.request import content_text
from bot_toolsearch._transports.names import DEFAULT_DOT_DELIMITER

from ._answer import compose_answer
from ._arguments import SPECIFIC_GUESS, extract_arguments, read_arguments
from ._glossary import english_glosses
from ._history import CALL_TOOL, Episode, Step, read_episode
from ._reading import content_words, score_tool, terms

__all__ = ["OFFLINE_MODEL_NAME", "OfflinePlanner", "search_arguments"]

OFFLINE_MODEL_NAME = "offline-demo-planner"
"""The model name the embedded offline model answers to."""

TOOL_SEARCH = "tool_search"
_HOST = frozenset({"send_message", "end", TOOL_SEARCH, CALL_TOOL})
_DIRECTORY = re.compile(r"<available_deferred_tools>\s*(.*?)\s*</available_deferred_tools>", re.S)
_MAX_ROUNDS = 6
_MAX_SEARCHES = 2
_MEMORY = 2048


@dataclass
class OfflinePlanner:
    """The demo's deterministic stand-in model; call it with a `ModelRequest`.

    Args:
        dot_delimiter: how the bot encodes dots in tool names on the wire.
    """

    dot_delimiter: str = DEFAULT_DOT_DELIMITER
    _memory: OrderedDict[str, Episode] = field(default_factory=OrderedDict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _counter: int = 0

    def __call__(self, request: ModelRequest) -> ScriptEntry:
        """Answer one request with tool calls (or text when the host offers no send_message)."""
        with self._lock:
            episode = read_episode(request, self._memory, self.dot_delimiter)
            tools = _tools_by_canonical(request, self.dot_delimiter, episode)
            decision = self._decide(request, episode, tools)
            if isinstance(decision, list):
                for call in decision:
                    self._memory[call.id or ""] = episode.extended(call, self.dot_delimiter)
                while len(self._memory) > _MEMORY:
                    self._memory.popitem(last=False)
            return decision

    def _call(self, wire: str, arguments: dict[str, Any]) -> list[ToolCall]:
        self._counter += 1
        return [ToolCall(wire, arguments, f"call_offline_{self._counter}")]

    def _decide(
        self, request: ModelRequest, episode: Episode, tools: dict[str, tuple[str, dict[str, Any]]]
    ) -> ScriptEntry:
        steps = episode.steps
        if (steps and steps[-1].name == "send_message") or len(steps) >= _MAX_ROUNDS + 2:
            return self._call(tools["end"][0], {}) if "end" in tools else text("")
        done = [s for s in steps if s.name not in _HOST and s.output is not None]
        if done and not _looks_refused(done[-1]):
            return self._reply(tools, compose_answer(done[-1], episode.user_text))
        if len(steps) >= _MAX_ROUNDS:
            return self._reply(tools, _give_up(episode.user_text))
        target = self._pick_target(episode, tools)
        if target is not None:
            wire, schema = tools[target]
            params = schema.get("function", {}).get("parameters") or {}
            arguments = extract_arguments(params, episode.user_text)
            if wire == CALL_TOOL:  # loaded in a search result (bridge): called through it
                return self._call(CALL_TOOL, {"name": target, "arguments": arguments})
            return self._call(wire, arguments)
        searches = [s for s in steps if s.name == TOOL_SEARCH]
        if TOOL_SEARCH in tools and len(searches) < _MAX_SEARCHES:
            directory = _directory(request)
            query = _query(episode, directory, retry=bool(searches))
            wire, schema = tools[TOOL_SEARCH]
            asked = search_arguments(schema, query, directory) if query else None
            if asked and asked not in [s.arguments for s in searches]:
                return self._call(wire, asked)
        return self._reply(tools, _unreadable(episode, tools) or _give_up(episode.user_text))

    def _pick_target(
        self, episode: Episode, tools: dict[str, tuple[str, dict[str, Any]]]
    ) -> str | None:
        # content_words adds what the message implies (a formula wants a calculator).
        implied = content_words(episode.user_text) + english_glosses(episode.user_text)
        wanted = terms(episode.user_text) | terms(" ".join(implied))
        ranked = _search_ranks(episode)
        refused = {s.name for s in episode.steps if s.output is not None and _looks_refused(s)}
        best: tuple[float, str] | None = None
        for name, (_, schema) in tools.items():
            if name in _HOST or name in refused:
                continue
            # A model prefers a tool it can call with what the user actually said, and never
            # calls one with a city, date or id it would have to make up.
            params = schema.get("function", {}).get("parameters") or {}
            guessed = read_arguments(params, episode.user_text)[1]
            if guessed >= SPECIFIC_GUESS:
                continue
            if score_tool(wanted - _TIE_BREAKERS, schema) <= 0:
                continue  # "current" (implied by "now") only breaks ties between fitting tools
            score = score_tool(wanted, schema) - 1.5 * guessed
            if name in ranked:
                # What the search engine ranked first is a hint, as for a real model.
                score += 1.0 / (1 + ranked.index(name))
            elif not episode.searched and TOOL_SEARCH in tools:
                score -= 1.0  # already-loaded tools must fit well before we skip searching
            if score > 0 and (best is None or (-score, name) < (-best[0], best[1])):
                best = (score, name)
        return None if best is None or best[0] < 1.0 else best[1]

    def _reply(self, tools: dict[str, tuple[str, dict[str, Any]]], answer: str) -> ScriptEntry:
        if "send_message" not in tools:
            return text(answer)
        wire, schema = tools["send_message"]
        return self._call(wire, {_text_param(schema): answer})


def _tools_by_canonical(
    request: ModelRequest, dot_delimiter: str, episode: Episode
) -> dict[str, tuple[str, dict[str, Any]]]:
    """Every tool the model can call now: canonical name -> (wire name, schema).

    The request's tools; those declared by ``additional_tools`` input items; and under bridge
    loading (``call_tool`` offered) those whose schemas came in this ask's search results,
    with ``call_tool`` as their wire name.
    """
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    declared = [
        tool
        for item in request.messages
        if item.get("type") == "additional_tools"
        for tool in item.get("tools") or []
    ]
    for tool in [*(request.body.get("tools") or []), *declared]:
        if not isinstance(tool, dict):
            continue
        # Normalise the Responses shape to the Chat Completions one.
        schema = tool if isinstance(tool.get("function"), dict) else {"function": tool}
        wire = schema["function"].get("name")
        if isinstance(wire, str):
            out[wire.replace(dot_delimiter, ".")] = (wire, schema)
    if CALL_TOOL in out:
        # Search results anywhere in the conversation (a tool loaded in an earlier turn stays
        # loaded), and this ask's (a Responses request may hold only its newest items).
        outputs: list[str | None] = [
            content_text(item.get("content") if item.get("role") == "tool" else item.get("output"))
            for item in request.messages
            if item.get("role") == "tool" or item.get("type") == "function_call_output"
        ]
        outputs += [step.output for step in episode.steps if step.name == TOOL_SEARCH]
        for output in outputs:
            for entry in _result_fields(output).get("tools") or []:
                name = entry.get("name") if isinstance(entry, dict) else None
                if isinstance(name, str) and name not in out:
                    out[name] = (CALL_TOOL, {"function": entry})
    return out


def _search_result(step: Step) -> dict[str, Any]:
    """The fields of a ``tool_search`` step's result (empty for any other step)."""
    return _result_fields(step.output) if step.name == TOOL_SEARCH else {}


def _result_fields(output: str | None) -> dict[str, Any]:
    """A tool result's JSON object fields (empty when it is not one)."""
    if not output or not output.lstrip().startswith("{"):
        return {}
    try:
        result = json.loads(output)
    except ValueError:
        return {}
    return result if isinstance(result, dict) else {}


def _directory(request: ModelRequest) -> list[str]:
    texts = list(request.system_texts)
    texts += [str(m.get("content")) for m in request.messages if isinstance(m.get("content"), str)]
    for chunk in texts:
        match = _DIRECTORY.search(chunk)
        if match:
            return [line.strip() for line in match.group(1).splitlines() if line.strip()]
    return []


def _query(episode: Episode, directory: list[str], *, retry: bool) -> str:
    message = episode.user_text
    named = [n for n in directory if re.search(rf"(?<![\w.]){re.escape(n)}(?![\w.])", message)]
    if named and not retry:
        return "select:" + ",".join(named)
    # A Chinese message also searches in English, as a model would for English descriptions.
    words = list(dict.fromkeys(content_words(message) + english_glosses(message)))
    # A second try drops the words that found nothing useful and keeps the longest ones.
    return " ".join(sorted(words, key=len, reverse=True)[:2] if retry else words)


def search_arguments(
    schema: dict[str, Any], query: str, directory: list[str]
) -> dict[str, Any] | None:
    """The arguments of a search call as the search tool's own ``parameters`` ask for them
    (a client's search may read anything): a string property gets the query, an array of
    strings the names to load (JavaScript Agents SDK's ``paths``: the directory entries the
    query selects or whose words it shares, a namespace line as its namespace). The required
    properties are filled, else the first one it can fill; ``{"query": ...}`` when the tool
    declares no properties; ``None`` when it asks for nothing it can fill."""
    function = schema.get("function")
    params = function.get("parameters") if isinstance(function, dict) else None
    properties = params.get("properties") if isinstance(params, dict) else None
    if not isinstance(properties, dict) or not properties:
        return {"query": query}
    assert isinstance(params, dict)
    required = [r for r in params.get("required") or () if r in properties]
    out: dict[str, Any] = {}
    for name in required or list(properties):
        spec = properties[name] if isinstance(properties[name], dict) else {}
        items = spec.get("items")
        if spec.get("type") == "string":
            out[name] = query
        elif spec.get("type") == "array" and (
            not isinstance(items, dict) or items.get("type", "string") == "string"
        ):
            out[name] = _paths(query, directory)
        else:
            continue
        if not required:
            break
    return out or None


def _paths(query: str, directory: list[str]) -> list[str]:
    """The names a query asks to load: its ``select:`` names, else the directory entries
    sharing its words (best first, at most three), else its words."""
    if query.startswith("select:"):
        return [n for n in query.removeprefix("select:").split(",") if n]
    wanted = terms(query)
    ranked: list[tuple[int, str]] = []
    for line in directory:
        head = line.split(" ", 1)[0]
        name = head.removesuffix(".*")
        shared = len(wanted & terms(line))
        if shared and name:
            ranked.append((-shared, name))
    return [name for _, name in sorted(ranked)[:3]] or query.split()


def _search_ranks(episode: Episode) -> list[str]:
    ranked: list[str] = []
    for step in episode.steps:
        result = _search_result(step)
        ranked += [str(n) for n in result.get("loaded", []) + result.get("already_loaded", [])]
    return ranked


def _looks_refused(step: Step) -> bool:
    output = (step.output or "").lower()
    return "tool_search" in output and ("not loaded" in output or "not available" in output)


def _text_param(schema: dict[str, Any]) -> str:
    params = schema.get("function", {}).get("parameters") or {}
    properties = params.get("properties") or {}
    for candidate in ("text", "content", "message"):
        if candidate in properties:
            return candidate
    required = [
        r for r in params.get("required") or [] if properties.get(r, {}).get("type") == "string"
    ]
    return required[0] if required else "text"


_TIE_BREAKERS = frozenset({"current"})
"""Implied words that choose between tools the message fits, never make one fit."""


def _unreadable(episode: Episode, tools: dict[str, tuple[str, dict[str, Any]]]) -> str | None:
    """What happened when a search found the tool but the message lacks what it needs: "found
    X, could not read its arguments" (not "no tool": search did its job)."""
    wanted = terms(episode.user_text) | terms(" ".join(content_words(episode.user_text)))
    best: tuple[float, str, list[str]] | None = None
    for name in dict.fromkeys(_search_ranks(episode)):
        if name not in tools or name in _HOST:
            continue
        schema = tools[name][1]
        params = schema.get("function", {}).get("parameters") or {}
        if read_arguments(params, episode.user_text)[1] < SPECIFIC_GUESS:
            continue
        score = score_tool(wanted - _TIE_BREAKERS, schema)
        needed = [str(p) for p in params.get("required") or []]
        if score >= 1.0 and (best is None or score > best[0]):
            best = (score, name, needed)
    if best is None:
        return None
    _, name, needed = best
    what = f" ({', '.join(needed)})" if needed else ""
    if any("\u3400" <= c <= "\u9fff" for c in episode.user_text):
        return f"我找到了 {name}，但无法从你的消息中读出它的参数{what}。"  # noqa: RUF001
    return (
        f"I found {name}, but could not read its arguments{what} from your message: "
        "please say them plainly."
    )


def _give_up(user_text: str) -> str:
    if any("\u3400" <= c <= "\u9fff" for c in user_text):
        return "抱歉，我没有找到能完成这个请求的工具。"  # noqa: RUF001 (Chinese punctuation)
    return "Sorry, I could not find a tool that can do that."
