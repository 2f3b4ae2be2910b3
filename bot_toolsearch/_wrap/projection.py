"""The one place the wrapper uses the core: a caller's request projected onto tool search.

Per ``create`` call it builds a `ToolSearchSession` over the cached catalog of the caller's
tools, with ``[tools] allow``/``deny`` hiding what is not permitted. The plans re-derive the
loaded set from the history the caller resent (`load_called`, in first-call order), so the
tool list is the same from call to call and a provider's prompt cache survives. Per round it
gives the tools to send and the directory text, byte for byte the `Bot`'s; per response it
answers ``tool_search`` calls and refuses calls this round does not expose, with the `Bot`'s
own functions and texts, in the call's loading mode (``[skills] tool_search_loading``, see
`bot_toolsearch._runtime.loading`):

- ``append``: loaded tools go at the end of ``tools`` (the caller's own entries);
- ``bridge``: ``tools`` is fixed (the caller's other tools, always-loaded tools,
  ``tool_search``, ``call_tool``); a search's result carries the loaded schemas, and a
  ``call_tool`` call is unwrapped, its arguments checked against the tool's schema, and given
  to the caller as an ordinary call of that tool;
- ``additional_tools`` (Responses): ``tools`` is fixed; a load declares the caller's entries
  of the loaded tools in an ``additional_tools`` input item after the search's output.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot_toolsearch._config.settings import BotSettings, ToolSearchLoading
from bot_toolsearch._core.catalog import TOOL_SEARCH_NAME
from bot_toolsearch._core.prompt import CALL_TOOL_NAME, call_tool_schema
from bot_toolsearch._core.result import ToolSearchResult
from bot_toolsearch._core.session import ToolSearchSession
from bot_toolsearch._runtime.calls import CallRequest, parse_arguments
from bot_toolsearch._runtime.executor import invalid_arguments, rejected_arguments
from bot_toolsearch._runtime.loading import (
    FALLBACK_TO_APPEND,
    bridge_collides,
    bridge_search_result,
    effective_loading,
    fell_back,
    schema_note,
    unwrap_calls,
)
from bot_toolsearch._runtime.semantic import semantic_ranker
from bot_toolsearch._runtime.tool_search import canonical_query, directory_message, refusal
from bot_toolsearch._tools.validation import validate_arguments
from bot_toolsearch._transports.responses import flat_tool

from .caller_tools import Api, CallerTools

__all__ = ["Answer", "Projection", "requested_tool"]

logger = logging.getLogger("bot_toolsearch")


@dataclass(slots=True)
class Answer:
    """What the wrapper makes of one response's calls."""

    calls: list[CallRequest]
    """Every call in order; under ``bridge`` a ``call_tool`` call is its target's call."""
    answered: dict[int, str] = field(default_factory=dict)
    """Results of the calls the wrapper answered itself, by position."""
    declared: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Under ``additional_tools``: call id -> the tools its result loaded (declare them)."""


class Projection:
    """Tool search for one ``create`` call of the caller.

    Args:
        tools: the caller's indexed tool list (with a catalog).
        settings: the settings snapshot of this call.
        forced: a tool the caller's ``tool_choice`` forces, if any (loaded, and it must be in
            ``tools``, so a fixed-tools mode falls back to ``append`` for this call when the
            tool is deferred).
    """

    __slots__ = (
        "_blind_call",
        "_deferred",
        "_forced",
        "_tools",
        "directory",
        "exposed",
        "mode",
        "permitted",
        "session",
    )

    def __init__(
        self, tools: CallerTools, settings: BotSettings, *, forced: str | None = None
    ) -> None:
        assert tools.catalog is not None
        skills = settings.skills
        self._tools = tools
        self._blind_call = skills.tool_search_blind_call
        self.permitted, hidden = tools.permissions(settings.tools.allow, settings.tools.deny)
        self.session = ToolSearchSession(
            tools.catalog,
            always_loaded=skills.tool_search_always_loaded,
            max_results=skills.tool_search_max_results,
            hidden=hidden,
            directory_budget=skills.tool_search_directory_budget,
            namespaces=settings.tools.namespaces,
            semantic=semantic_ranker(settings, tools.catalog),
        )
        self._deferred = frozenset(self.session.deferred_tool_names)
        self.mode = self._mode(skills.tool_search_loading, forced)
        self._forced = forced
        session = self.session
        self.directory: str | None = (
            str(directory_message(session.directory, bridge=self.mode == "bridge")["content"])
            if session.deferred_tool_names
            else None
        )
        """The directory and the rules, or ``None`` when nothing is deferred (search is off)."""
        self.exposed: frozenset[str] = frozenset()

    def _mode(self, wanted: ToolSearchLoading, forced: str | None) -> ToolSearchLoading:
        api = "responses" if self._tools.api == "responses" else "chat_completions"
        mode = effective_loading(wanted, api)
        if fell_back(wanted, mode):
            self._tools.note_once(FALLBACK_TO_APPEND % api)
        if mode == "bridge" and bridge_collides(self._tools.names):
            self._tools.note_once(
                f"a caller tool is named {CALL_TOOL_NAME!r}: tool_search_loading = "
                '"bridge" cannot be used; loads are appended to the tools list ("append")'
            )
            mode = "append"
        if mode != "append" and forced is not None and self.canonical(forced) in self._deferred:
            logger.info(
                "tool_choice forces the deferred tool %r: its schema is appended to the tools "
                "of this call (%s loading cannot force a tool outside the fixed list)",
                forced,
                mode,
            )
            mode = "append"
        return mode

    @property
    def active(self) -> bool:
        """Whether tool search applies (some permitted tool is deferred)."""
        return self.directory is not None

    @property
    def fixed(self) -> bool:
        """Whether the provider-visible tool list is fixed (``bridge``, ``additional_tools``)."""
        return self.mode != "append"

    def canonical(self, name: str) -> str | None:
        """The permitted canonical name ``name`` (canonical or wire spelling) stands for."""
        if name in self.permitted:
            return name
        canonical = self._tools.names.to_canonical(name)
        return canonical if canonical is not None and canonical in self.permitted else None

    def is_deferred(self, name: str) -> bool:
        """Whether ``name`` is a permitted tool that is not always loaded."""
        canonical = self.canonical(name)
        return canonical is not None and canonical in self._deferred

    def load_called(self, names: Iterable[str]) -> list[tuple[str, ToolSearchResult]]:
        """Load the deferred tools among ``names`` not loaded yet, in order (history replay).

        Each is loaded as the model would by its full name (an exact lookup); returns each
        newly loaded canonical name with the result that loaded it.
        """
        out: list[tuple[str, ToolSearchResult]] = []
        for name in names:
            canonical = self.canonical(name)
            if (
                canonical is not None
                and canonical in self._deferred
                and canonical not in self.session.loaded_tool_names
            ):
                result = self.session.search(canonical)
                if canonical in result.loaded:
                    out.append((canonical, result))
        return out

    def load_forced(self) -> None:
        """Load the tool ``tool_choice`` forces (after the history, so the order is stable)."""
        if self._forced is not None:
            self.load_called([self._forced])

    def bridge_call(self, call_id: str, name: str, arguments: str) -> dict[str, Any]:
        """A caller's history call of a deferred tool as the ``call_tool`` call (``bridge``).

        Deterministic (compact JSON, the arguments as an object when they parse), so every
        later ``create`` call renders the same bytes for it.
        """
        canonical = self.canonical(name) or name
        parsed, _ = parse_arguments(arguments)
        inner: object = parsed if parsed is not None else arguments
        wrapped = json.dumps(
            {"name": canonical, "arguments": inner}, ensure_ascii=False, separators=(",", ":")
        )
        return {
            "id": call_id,
            "type": "function",
            "function": {"name": CALL_TOOL_NAME, "arguments": wrapped},
        }

    def replayed_searches(
        self, anchor: str, loaded: Sequence[tuple[str, ToolSearchResult]]
    ) -> list[tuple[str, str, str]]:
        """``(id, arguments, result)`` of the ``tool_search`` calls that re-declare ``loaded``
        in the history (``bridge``): one exact-name search per tool, with ids derived from
        ``anchor`` (the id of the first call that used them), so they are the same bytes in
        every later call."""
        out: list[tuple[str, str, str]] = []
        for k, (name, result) in enumerate(loaded):
            digest = hashlib.sha256(f"{anchor}\x00{k}".encode()).hexdigest()[:20]
            arguments = json.dumps({"query": name}, ensure_ascii=False, separators=(",", ":"))
            out.append((f"call_ts{digest}", arguments, self.result_text(result)))
        return out

    def result_text(self, result: ToolSearchResult) -> str:
        """A search result as the model reads it (under ``bridge``, with the loaded schemas)."""
        if result.loaded and self.mode == "bridge":
            assert self._tools.catalog is not None
            schemas = self._tools.catalog.schemas(result.loaded)
            return bridge_search_result(result.to_dict(), schemas)
        return result.to_json()

    def declaration(self, names: Sequence[str]) -> dict[str, Any]:
        """The ``additional_tools`` input item declaring ``names`` (the caller's entries)."""
        return {
            "type": "additional_tools",
            "role": "developer",
            "tools": [self._tools.entries[n] for n in names if n in self._tools.entries],
        }

    def round_tools(self) -> list[Any]:
        """The tools of the next round (wire names), and freeze that round's exposure.

        The caller's non-function tools first, then the session's list: always-loaded,
        ``tool_search``, then (``append``) what is loaded in load order, so each round's list
        extends the previous one, or (``bridge``) ``call_tool``, so it never changes.
        """
        tools = self._tools
        out: list[Any] = list(tools.others)
        for schema in self.session.request_tools():
            name = schema["function"]["name"]
            if name == TOOL_SEARCH_NAME:
                out.append(schema if tools.api == "chat" else flat_tool(schema))
                if self.fixed:
                    break
            else:
                out.append(tools.entries[name])
        if self.mode == "bridge":
            bridge = call_tool_schema()
            out.append(bridge if tools.api == "chat" else flat_tool(bridge))
        self.exposed = self.session.exposed_tool_names()
        return out

    def answer(self, calls: Sequence[CallRequest]) -> Answer:
        """What the wrapper answers itself among one response's calls, by position.

        As the `Bot`'s middleware: under ``bridge`` each ``call_tool`` call is unwrapped
        first (a malformed one is answered); then every ``tool_search``, in call order (so
        several build on each other); then a refusal for each call this round does not
        expose (so each one reflects every load of this response); then, for an unwrapped
        call, its arguments are checked against the tool's schema. The other calls are the
        caller's to run.
        """
        answer = Answer(list(calls))
        bridged: frozenset[int] = frozenset()
        if self.mode == "bridge":
            unwrapped = unwrap_calls(calls, self._tools.names, self.permitted)
            answer.calls = unwrapped.calls
            answer.answered = {i: r.content for i, r in unwrapped.answered.items()}
            bridged = unwrapped.bridged
        for i, call in enumerate(answer.calls):
            if i not in answer.answered and call.name == TOOL_SEARCH_NAME:
                answer.answered[i] = self._search(call, answer)
        for i, call in enumerate(answer.calls):
            if i in answer.answered:
                continue
            if call.name not in self.exposed:
                answer.answered[i] = self._refuse(call, answer)
            elif i in bridged:
                problem = self._check(call)
                if problem is not None:
                    answer.answered[i] = problem
        return answer

    def _search(self, call: CallRequest, answer: Answer) -> str:
        arguments: Mapping[str, Any] | str = call.arguments_raw
        if call.arguments is not None:
            arguments = dict(call.arguments)
            query = arguments.get("query")
            if isinstance(query, str):
                arguments["query"] = canonical_query(
                    query, self._tools.names, self.permitted, self.session
                )
        result = self.session.run(arguments)
        if result.loaded and self.mode == "additional_tools":
            answer.declared[call.id] = result.loaded
        return self.result_text(result)

    def _refuse(self, call: CallRequest, answer: Answer) -> str:
        text, reason = refusal(
            self.session,
            call.name,
            call.id,
            self.permitted,
            blind_call=self._blind_call,
            bridge=self.mode == "bridge",
        )
        if reason == "blind_call_loaded":
            if self.mode == "bridge":
                text += self._schema_note(call.name)
            elif self.mode == "additional_tools":
                answer.declared[call.id] = (call.name,)
        return text

    def _check(self, call: CallRequest) -> str | None:
        """The result of an unwrapped call whose arguments do not fit, else ``None``."""
        if call.arguments is None:
            return invalid_arguments(call).content + self._schema_note(call.name)
        checker = self._tools.checker(call.name)
        if checker is None:
            return None
        _, problem = validate_arguments(checker, call.arguments)
        if problem is None:
            return None
        return rejected_arguments(call, problem).content + self._schema_note(call.name)

    def _schema_note(self, name: str) -> str:
        assert self._tools.catalog is not None
        schema = self._tools.catalog.schema(name)
        return schema_note(name, schema) if schema is not None else ""


def requested_tool(tool_choice: object, api: Api) -> str | None:
    """The function a ``tool_choice`` forces, if any (it must be loaded to be callable)."""
    if not isinstance(tool_choice, Mapping) or tool_choice.get("type") != "function":
        return None
    if api == "chat":
        function = tool_choice.get("function")
        name = function.get("name") if isinstance(function, Mapping) else None
    else:
        name = tool_choice.get("name")
    return name if isinstance(name, str) else None
