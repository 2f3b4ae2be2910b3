"""The one place the wrapper uses the protocol: a caller's request projected onto tool search.

It builds the `ToolSearchProtocol` the `Bot` uses (over the cached catalog of the caller's
tools, ``[tools] allow``/``deny`` hiding what is not permitted, wire names over the permitted
tools only) once per cached list and settings snapshot, kept on the list, and forks it per
``create`` call (`ToolSearchProtocol.fork`), so a call pays for its own state only; it maps
the names of each round's tools (`ToolSearchProtocol.round_names`) onto the caller's own
entries (the virtual tools' schemas made once per list, no schema copied per round). The
plans replay the loaded set from the history the caller resent (`load_called`: the tools
called since the last user message, or the whole conversation's under
``tool_search_keep_loaded = "conversation"``, in first-call order). Per response the protocol
answers ``tool_search`` calls and refuses calls the round does not expose; an unwrapped
``call_tool`` call's arguments are checked here against the tool's schema, since the caller
runs it. With tool search off, the permitted tools are all sent and a call to another tool is
refused as no such tool.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot_toolsearch._config.settings import BotSettings
from bot_toolsearch._core.catalog import TOOL_SEARCH_NAME
from bot_toolsearch._core.prompt import CALL_TOOL_NAME, call_tool_schema
from bot_toolsearch._core.result import ToolSearchResult
from bot_toolsearch._protocol.calls import CallRequest, CallResult, parse_arguments
from bot_toolsearch._protocol.dialect import CONFIG, Dialect
from bot_toolsearch._protocol.engine import Answer, Report, ToolSearchProtocol
from bot_toolsearch._protocol.messages import no_such_tool
from bot_toolsearch._services.arguments import invalid_arguments, rejected_arguments
from bot_toolsearch._services.semantic import semantic_ranker
from bot_toolsearch._tools.validation import validate_arguments
from bot_toolsearch._transports.responses import declaration_item, flat_tool

from .caller_tools import Api, CallerTools, CallerView

__all__ = ["Answer", "Projection", "requested_tool", "shared_part"]

logger = logging.getLogger("bot_toolsearch")


class Projection:
    """Tool search for one ``create`` call of the caller: the `ToolSearchProtocol` of the
    call, its canonical schemas mapped onto the caller's own entries.

    Args:
        tools: the caller's indexed tool list (with a catalog).
        settings: the settings snapshot of this call.
        forced: a tool the caller's ``tool_choice`` forces, if any (loaded, and it must be in
            ``tools``, so a fixed-tools mode falls back to ``append`` for this call when the
            tool is deferred).
        dialect: how the caller speaks tool search (`Dialect`; the config's by default).
        shared: what `shared_part` found for ``tools``, ``settings`` and ``dialect``, if the
            caller asked already (else it is looked up, or made, here).
    """

    __slots__ = (
        "_forced",
        "_tools",
        "_virtual",
        "directory",
        "exposed",
        "keep_conversation",
        "permitted",
        "protocol",
        "sent",
        "view",
    )

    def __init__(
        self,
        tools: CallerTools,
        settings: BotSettings,
        *,
        forced: str | None = None,
        dialect: Dialect = CONFIG,
        shared: _Shared | None = None,
    ) -> None:
        assert tools.catalog is not None
        if shared is None or shared.settings is not settings or shared.protocol.dialect != dialect:
            shared = _shared(tools, settings, dialect)
        self._tools = tools
        self._virtual = shared.virtual
        self.view: CallerView = shared.view
        """The permitted tools and their wire names (over the permitted tools only)."""
        self.permitted = shared.view.permitted
        self.protocol = shared.protocol.fork(forced=forced, report=_reporter(tools))
        self.keep_conversation = shared.keep_conversation
        """Tools called before this ask's user message stay loaded (else only this ask's)."""
        self._forced = forced
        directory = shared.directory
        if directory is not None and self.protocol.mode != shared.protocol.mode:
            # ``tool_choice`` forces a deferred tool: the rules of the mode it falls back to.
            directory = str(self.protocol.directory["content"])
        self.directory: str | None = directory
        if directory is not None and shared.reserved:
            tools.reserved.warn()  # the virtual tool takes the name of the caller's own
        """The directory and the rules, or ``None`` when tool search is off for this call
        (off in the settings, or nothing deferred): then the permitted tools are all sent."""
        self.exposed: frozenset[str] = frozenset()
        self.sent: tuple[str, ...] = ()
        """Canonical names of the tools the latest `round_tools` sent, in order."""

    @property
    def mode(self) -> str:
        """The loading mode in force (``append`` when tool search is off)."""
        return self.protocol.mode if self.active else "append"

    @property
    def active(self) -> bool:
        """Whether tool search applies (on, and some permitted tool is deferred)."""
        return self.directory is not None

    @property
    def filtering(self) -> bool:
        """Whether ``[tools] allow``/``deny`` leave out some of the caller's tools (its own
        ``tool_search`` included)."""
        denied = self._tools.real is not None and TOOL_SEARCH_NAME not in self.view.unsearched_names
        return bool(self.view.hidden) or denied

    def is_deferred(self, name: str) -> bool:
        """Whether ``name`` is a permitted tool that is not always loaded."""
        return self.active and self.protocol.is_deferred(name)

    def load_called(self, names: Iterable[str]) -> list[tuple[str, ToolSearchResult]]:
        """Load the deferred tools among ``names`` not loaded yet, in order (history replay,
        `ToolSearchProtocol.replay`)."""
        return self.protocol.replay(names) if self.active else []

    def load_forced(self) -> None:
        """Load the tool ``tool_choice`` forces (after the history, so the order is stable)."""
        if self._forced is not None:
            self.load_called([self._forced])

    def bridge_call(self, call_id: str, name: str, arguments: str) -> dict[str, Any]:
        """A caller's history call of a deferred tool as the ``call_tool`` call (``bridge``).

        Deterministic (compact JSON, the arguments as an object when they parse), so every
        later ``create`` call renders the same bytes for it.
        """
        canonical = self.protocol.canonical(name) or name
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
            out.append((f"call_ts{digest}", arguments, self.protocol.result_text(result)))
        return out

    def declaration(self, names: Sequence[str]) -> dict[str, Any]:
        """The ``additional_tools`` input item declaring ``names`` (the caller's entries),
        rendered as the `Bot`'s Responses transport renders its declarations."""
        return declaration_item([self.view.entries[n] for n in names if n in self.view.entries])

    def round_tools(self) -> list[Any]:
        """The tools of the next round (the caller's entries, wire names), and freeze that
        round's exposure: the caller's non-function tools first, then the protocol's list
        with each canonical schema replaced by the caller's own entry."""
        tools = self._tools
        out: list[Any] = list(tools.others)
        if not self.active:
            # Tool search off: every permitted tool, in the caller's order (as the `Bot`), the
            # caller's own ``tool_search`` among them (nothing else takes the name).
            out.extend(self.view.unsearched)
            self.sent = self.view.unsearched_names
            self.exposed = frozenset(self.sent)
            return out
        protocol = self.protocol
        names = protocol.round_names()
        entries = self.view.entries
        last = len(names) - 1
        for at, name in enumerate(names):
            if name == TOOL_SEARCH_NAME:
                out.append(self._virtual[TOOL_SEARCH_NAME])
            elif name == CALL_TOOL_NAME:
                # The protocol's ``call_tool`` ends a ``bridge`` round; anywhere else the name
                # is a catalog tool's, sent as its canonical schema.
                if protocol.mode == "bridge" and at == last:
                    out.append(self._virtual[CALL_TOOL_NAME])
                else:
                    schema = protocol.catalog.schemas((name,))[0]
                    out.append(schema if tools.api == "chat" else flat_tool(schema))
            else:
                out.append(entries[name])
        self.exposed = protocol.exposed
        self.sent = names
        return out

    def answer(self, calls: Sequence[CallRequest]) -> Answer:
        """What the wrapper answers itself among one response's calls, by position.

        The protocol's answer (`ToolSearchProtocol.answer`); then, for an unwrapped
        ``call_tool`` call, its arguments are checked against the tool's schema (the caller
        runs it, so this is the last chance to say so). The other calls are the caller's.
        With tool search off, a call to a tool that is not permitted is refused.
        """
        if not self.active:
            answer = Answer(list(calls))
            for i, call in enumerate(calls):
                if call.name not in self.exposed:
                    text = no_such_tool(call.name)
                    answer.results[i] = CallResult(call.id, call.name, text, "refused", "unknown")
            return answer
        answer = self.protocol.answer(calls)
        for i in answer.bridged:
            if i not in answer.results:
                problem = self._check(answer.calls[i])
                if problem is not None:
                    answer.results[i] = problem
        return answer

    def _check(self, call: CallRequest) -> CallResult | None:
        """The result of an unwrapped call whose arguments do not fit, else ``None``."""
        note = self.protocol.schema_note(call.name)
        if call.arguments is None:
            result = invalid_arguments(call)
            return CallResult(result.call_id, result.name, result.content + note, "invalid")
        checker = self._tools.checker(call.name)
        if checker is None:
            return None
        _, problem = validate_arguments(checker, call.arguments)
        if problem is None:
            return None
        result = rejected_arguments(call, problem)
        return CallResult(result.call_id, result.name, result.content + note, "invalid")


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


@dataclass(frozen=True, slots=True, eq=False)
class _Shared:
    """What every `Projection` of one cached list under one settings snapshot and dialect
    shares, made once (`_shared`) and kept on the list (`CallerTools.memo_put`), so it is
    freed and bounded with it: a call forks `protocol` and reads the rest."""

    settings: BotSettings
    """The snapshot it was made for (held, so the ``id`` that keys it is never reused)."""
    view: CallerView
    protocol: ToolSearchProtocol
    """Never used for an ask: each call forks it (`ToolSearchProtocol.fork`). Nothing here
    refers to the list that keeps it (no reference cycle: an evicted list is freed at once)."""
    keep_conversation: bool
    directory: str | None
    """The directory text under ``protocol.mode``, or ``None`` when tool search is off."""
    reserved: bool
    """The caller's own ``tool_search`` is permitted (the virtual tool takes its name)."""
    virtual: Mapping[str, dict[str, Any]]
    """The schemas of the virtual ``tool_search`` and ``call_tool`` in the list's API shape,
    made once and sent as they are in every round of every call (never changed: what a round
    sends is only serialized, as the caller's own cached entries it sends beside them)."""


def _shared(tools: CallerTools, settings: BotSettings, dialect: Dialect) -> _Shared:
    """The `_Shared` part of the projections of ``tools`` under ``settings`` (this very
    snapshot: a reloaded or client-scoped one is another object, so it never finds the
    values of an older one) and ``dialect``. The config's dialect only: a client's own
    deferred set comes with every request, so its projection is made whole each time."""
    if dialect is not CONFIG:
        return _make_shared(tools, settings, dialect)
    key = ("projection", id(settings))
    found = tools.memo_get(key)
    if isinstance(found, _Shared) and found.settings is settings:
        return found
    made = _make_shared(tools, settings, dialect)
    tools.memo_put(key, made)
    return made


def shared_part(
    tools: CallerTools, settings: BotSettings, dialect: Dialect | None
) -> _Shared | None:
    """What a `Projection` of ``tools`` under ``settings`` and ``dialect`` (``None``: the
    config's) shares with the calls before it, when made already (`_shared`), else ``None``:
    the projection makes it (its directory, maybe a tokenizer's work)."""
    if dialect is not None and dialect is not CONFIG:
        return None
    found = tools.memo_get(("projection", id(settings)))
    return found if isinstance(found, _Shared) and found.settings is settings else None


def _make_shared(tools: CallerTools, settings: BotSettings, dialect: Dialect) -> _Shared:
    assert tools.catalog is not None
    skills = settings.skills
    view = tools.view(settings.tools.allow, settings.tools.deny)
    # The wrapper cannot run prefetch tools (the caller runs every tool): they are loaded
    # from round 1, as the `Bot` loads a prefetched tool it does not hide.
    protocol = ToolSearchProtocol(
        tools.catalog,
        settings,
        api="responses" if tools.api == "responses" else "chat_completions",
        names=view.names,
        permitted=view.permitted,
        hidden=view.hidden,
        namespaces=settings.tools.namespaces,
        always_loaded=skills.prefetch_tools,
        report=_reporter(tools),
        semantic=semantic_ranker(settings, tools.catalog),
        dialect=dialect,
    )
    on = skills.tool_search_enabled and protocol.active
    directory = str(protocol.directory["content"]) if on else None
    return _Shared(
        settings,
        view,
        protocol,
        skills.tool_search_keep_loaded == "conversation",
        directory,
        TOOL_SEARCH_NAME in view.unsearched_names,
        _virtual_schemas(protocol, tools.api),
    )


def _virtual_schemas(protocol: ToolSearchProtocol, api: Api) -> dict[str, dict[str, Any]]:
    """The virtual tools' schemas as a round of ``api`` sends them (`Projection.round_tools`)."""
    schemas = {
        TOOL_SEARCH_NAME: protocol.session.tool_search_schema,
        CALL_TOOL_NAME: call_tool_schema(),
    }
    return schemas if api == "chat" else {n: flat_tool(s) for n, s in schemas.items()}


def _reporter(tools: CallerTools) -> Report:
    """How a projection of ``tools`` reports a mode fallback: once per list (every call with
    it would repeat it)."""

    def report(level: int, text: str) -> None:
        del level
        tools.note_once(text)

    return report
