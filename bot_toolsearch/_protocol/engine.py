"""`ToolSearchProtocol`: one ask's tool search, sans-IO, the same for the `Bot` and the wrapper.

Built from a settings snapshot and a catalog (with the ask's permitted set, hidden names and
wire names), it owns everything both hosts must agree on: the loading mode in force (with its
fallbacks), the tools of each round, the directory message, the answer to one response's calls
(``call_tool`` unwrapped, ``tool_search`` answered in call order, then a refusal for each call
the round does not expose, each reflecting every load of the response) and the loaded set
replayed from a history. The hosts only adapt it: the `Bot`'s middleware records stats and
announcements and runs the rest; the wrapper maps canonical schemas onto the caller's entries.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from bot_toolsearch._config.settings import BlindCallPolicy, BotSettings, ToolSearchLoading
from bot_toolsearch._core.catalog import ToolCatalog
from bot_toolsearch._core.directory import DeferredDirectory
from bot_toolsearch._core.fusion import SemanticRanker
from bot_toolsearch._core.prompt import (
    CALL_TOOL_NAME,
    GROUPED_DIRECTORY_RULES,
    TOOL_SEARCH_NAME,
    TOOL_SEARCH_RULES,
    TOOL_SEARCH_RULES_BRIDGE,
    render_deferred_tools,
)
from bot_toolsearch._core.query import select_items
from bot_toolsearch._core.result import ToolSearchResult
from bot_toolsearch._core.session import ToolSearchSession
from bot_toolsearch._transports.names import WireNames

from .calls import CallRequest, CallResult, RefusalReason, log_refusals
from .dialect import CONFIG, Dialect
from .loading import (
    FALLBACK_TO_APPEND,
    BridgedCalls,
    bridge_collides,
    bridge_search_result,
    effective_loading,
    fell_back,
    request_names,
    request_tools,
    schema_note,
    unwrap_calls,
)
from .messages import (
    BLIND_CALL_LOADED,
    LOADED_THIS_ROUND,
    NOT_LOADED_YET,
    NOT_LOADED_YET_BRIDGE,
    TOO_MANY_SEARCHES,
    no_such_tool,
)

__all__ = [
    "BRIDGE_COLLIDES",
    "Answer",
    "Report",
    "ToolSearchProtocol",
    "canonical_query",
    "directory_message",
    "refusal",
]

logger = logging.getLogger("bot_toolsearch")

BRIDGE_COLLIDES = (
    f'a real tool is named {CALL_TOOL_NAME!r}: tool_search_loading = "bridge" cannot be used; '
    'loads are appended to the tools list ("append")'
)
"""The one log line when a real tool owns the spelling ``call_tool``."""

Report = Callable[[int, str], None]
"""How a host reports a mode fallback: ``report(level, text)`` (it decides how often)."""


def _log(level: int, text: str) -> None:
    logger.log(level, "%s", text)


@dataclass(slots=True)
class Answer:
    """What the protocol makes of one response's calls."""

    calls: list[CallRequest]
    """Every call in order; under ``bridge`` a well-formed ``call_tool`` call is its target's."""
    results: dict[int, CallResult] = field(default_factory=dict)
    """The calls the protocol answered itself (searches, refusals, bad ``call_tool``), by
    position; the host runs (or hands over) the others."""
    bridged: frozenset[int] = frozenset()
    """Positions of the unwrapped ``call_tool`` calls."""
    declared: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Under ``additional_tools``: call id -> the tools to declare right after its result."""
    searches: int = 0
    """``tool_search`` calls answered."""
    zero_result_searches: int = 0
    """Of those, the ones that loaded nothing and found nothing already loaded."""
    loaded: list[str] = field(default_factory=list)
    """Tools newly loaded by this response (searches and blind calls), in order."""
    blind_call_loads: int = 0
    """Calls of unloaded tools that loaded them (``tool_search_blind_call = "load"``)."""
    searched: dict[int, tuple[str, ...]] = field(default_factory=dict)
    """Under a dialect that reports searches: position of each answered ``tool_search`` call
    -> the tools it newly loaded, in order."""


class ToolSearchProtocol:
    """The tool search of one ask (a `Bot` ask, or one wrapped ``create`` call).

    Args:
        catalog: the catalog of the host's tools.
        settings: the snapshot of this ask.
        api: ``"responses"`` or a Chat Completions name: the API the rounds go to.
        names: canonical <-> wire names of the permitted tools (plus ``tool_search``).
        permitted: canonical names the ask may use.
        hidden: catalog names it may not use (hidden from the session).
        namespaces: namespace descriptions (sources' and config's, merged by the host).
        always_loaded: names loaded from round 1 on top of ``tool_search_always_loaded``.
        forced: a tool the caller forces (``tool_choice``): a fixed-tools mode falls back to
            ``append`` when it is deferred, since it must be in ``tools``.
        report: how to report a mode fallback (default: log every time).
        dialect: how the caller speaks tool search (`Dialect`): whether it fixed the deferred
            set itself, and whether its reply reports each search.
        wire_directory: write the directory's names in their wire spelling (``names``), for a
            host whose model never sees a canonical name (the MCP door); its budget counts
            them so. Otherwise the directory lists canonical names.
    """

    __slots__ = (
        "_blind_call",
        "_declared",
        "_deferred",
        "_max_searches",
        "_wanted",
        "api",
        "catalog",
        "dialect",
        "mode",
        "names",
        "permitted",
        "session",
    )

    def __init__(
        self,
        catalog: ToolCatalog,
        settings: BotSettings,
        *,
        api: str,
        names: WireNames,
        permitted: frozenset[str],
        hidden: Iterable[str] = (),
        namespaces: Mapping[str, str] | None = None,
        always_loaded: Iterable[str] = (),
        forced: str | None = None,
        report: Report = _log,
        semantic: SemanticRanker | None = None,
        dialect: Dialect = CONFIG,
        wire_directory: bool = False,
    ) -> None:
        skills = settings.skills
        self.catalog = catalog
        self.api = api
        self.names = names
        self.permitted = permitted
        self.dialect = dialect
        self._blind_call: BlindCallPolicy = skills.tool_search_blind_call
        self._max_searches = skills.tool_search_max_searches
        self.session = ToolSearchSession(
            catalog,
            always_loaded=(
                *skills.tool_search_always_loaded,
                *always_loaded,
                *dialect.always_loaded(n for n in catalog.names if n in permitted),
            ),
            max_results=skills.tool_search_max_results,
            hidden=hidden,
            directory_budget=skills.tool_search_directory_budget,
            directory_spelling=names.to_wire if wire_directory else None,
            namespaces=namespaces,
            semantic=semantic,
            no_match_floor=(
                skills.tool_search_embeddings.no_match_floor
                if semantic is not None and skills.tool_search_embeddings is not None
                else None
            ),
        )
        self._deferred = frozenset(self.session.deferred_tool_names)
        self._declared: set[str] = set()
        self._wanted: ToolSearchLoading = skills.tool_search_loading
        self.mode = self._mode(self._wanted, forced, report)

    def fork(self, *, forced: str | None = None, report: Report = _log) -> ToolSearchProtocol:
        """A fresh ask under this protocol's catalog, settings and permissions: its session
        forked (`ToolSearchSession.fork`: as it started), nothing declared, the mode chosen
        again for ``forced`` (as the constructor does). Costs nothing proportional to the
        catalog: a host that makes many asks of one catalog and settings builds the protocol
        once, never uses it for an ask, and forks it per ask.

        Fork a protocol no ask has used (its session is forked as it started, but what it
        declared is not carried over either way)."""
        fork = object.__new__(ToolSearchProtocol)
        fork.catalog = self.catalog
        fork.api = self.api
        fork.names = self.names
        fork.permitted = self.permitted
        fork.dialect = self.dialect
        fork._blind_call = self._blind_call
        fork._max_searches = self._max_searches
        fork.session = self.session.fork()
        fork._deferred = self._deferred
        fork._declared = set()
        fork._wanted = self._wanted
        fork.mode = fork._mode(self._wanted, forced, report)
        return fork

    def _mode(
        self, wanted: ToolSearchLoading, forced: str | None, report: Report
    ) -> ToolSearchLoading:
        mode = effective_loading(wanted, self.api)
        if fell_back(wanted, mode):
            report(logging.WARNING, FALLBACK_TO_APPEND % self.api)
        if mode == "bridge" and bridge_collides(self.names):
            report(logging.ERROR, BRIDGE_COLLIDES)
            return "append"
        if mode != "append" and forced is not None and self.is_deferred(forced):
            logger.info(
                "tool_choice forces the deferred tool %r: its schema is appended to the tools "
                "of this call (%s loading cannot force a tool outside the fixed list)",
                forced,
                mode,
            )
            return "append"
        return mode

    # -- what each round sends -------------------------------------------------------------

    @property
    def active(self) -> bool:
        """Whether tool search applies: some permitted tool is deferred."""
        return bool(self._deferred)

    @property
    def fixed(self) -> bool:
        """Whether ``tools`` is the same all ask (``bridge``, ``additional_tools``)."""
        return self.mode != "append"

    @property
    def directory(self) -> Mapping[str, str]:
        """The directory system message (block and rules), byte-identical all ask."""
        return directory_message(self.session.directory, bridge=self.mode == "bridge")

    @property
    def exposed(self) -> frozenset[str]:
        """What the latest `round_tools` exposed (callable this round)."""
        return self.session.exposed_tool_names()

    def round_tools(self) -> list[dict[str, Any]]:
        """The canonical tool schemas of the next round, and freeze that round's exposure."""
        return request_tools(self.session.request_tools(), self.mode)

    def round_names(self) -> tuple[str, ...]:
        """The names of the tools `round_tools` lists, in its order, and freeze that round's
        exposure as it does; for a host that sends its own entries for them (no schema is
        copied: the virtual tools' are `tool_search_schema` and `call_tool_schema`)."""
        return request_names(self.session.request_tool_names(), self.mode)

    # -- names, schemas, replay ------------------------------------------------------------

    def canonical(self, name: str) -> str | None:
        """The permitted canonical name ``name`` (canonical or wire spelling) stands for."""
        if name in self.permitted:
            return name
        canonical = self.names.to_canonical(name)
        return canonical if canonical is not None and canonical in self.permitted else None

    def is_deferred(self, name: str) -> bool:
        """Whether ``name`` is a permitted tool that is not always loaded."""
        canonical = self.canonical(name)
        return canonical is not None and canonical in self._deferred

    def schemas(self, names: Iterable[str]) -> list[dict[str, Any]]:
        """The catalog schemas of permitted ``names`` (the session loads nothing else)."""
        return self.catalog.schemas(n for n in names if n in self.permitted)

    def schema_note(self, name: str) -> str:
        """`SCHEMA_NOTE` for a permitted tool (``""`` for any other name)."""
        schema = self.catalog.schema(name) if name in self.permitted else None
        return schema_note(name, schema) if schema is not None else ""

    def replay(self, called: Iterable[str]) -> list[tuple[str, ToolSearchResult]]:
        """Load the deferred tools among ``called`` (a history's calls, in first-call order).

        One rule for both hosts: each permitted deferred tool not loaded yet is loaded as the
        model would load it, by its full name (an exact lookup). Returns each newly loaded
        canonical name with the result that loaded it; the host shows their schemas where
        its mode needs it, so they count as shown this ask.
        """
        out: list[tuple[str, ToolSearchResult]] = []
        for name in called:
            canonical = self.canonical(name)
            if (
                canonical is not None
                and canonical in self._deferred
                and canonical not in self.session.loaded_tool_names
            ):
                result = self.session.search(canonical)
                if canonical in result.loaded:
                    out.append((canonical, result))
                    self._declared.add(canonical)
        return out

    def result_text(self, result: ToolSearchResult, shown: Sequence[str] = ()) -> str:
        """A search result as the model reads it; under ``bridge`` with the schemas of
        ``shown`` (default: the tools it loaded)."""
        names = shown or result.loaded
        if names and self.mode == "bridge":
            return bridge_search_result(result.to_dict(), self.schemas(names))
        return result.to_json()

    # -- one response's calls --------------------------------------------------------------

    def answer(
        self,
        calls: Sequence[CallRequest],
        *,
        unwrap: bool = True,
        exposed: frozenset[str] | None = None,
    ) -> Answer:
        """What the protocol answers itself among one response's calls, by position.

        Under ``bridge`` each ``call_tool`` call is unwrapped first (unless the host did, with
        ``unwrap=False``); a malformed one is answered. Then every ``tool_search``, in call
        order (so several build on each other), up to ``[skills] tool_search_max_searches``
        (each further one gets `TOO_MANY_SEARCHES`); then a refusal for each call this round does
        not expose (so each one reflects every load of this response, wherever the search
        stood in it). ``exposed`` is what the round exposed, when the host's pipeline may have
        changed it (default: what `round_tools` exposed).
        """
        answer = Answer(list(calls))
        if unwrap and self.mode == "bridge":
            unwrapped = self.unwrap(calls)
            answer.calls = unwrapped.calls
            answer.results = dict(unwrapped.answered)
            answer.bridged = unwrapped.bridged
        over = 0
        for i, call in enumerate(answer.calls):
            if i not in answer.results and call.name == TOOL_SEARCH_NAME:
                if answer.searches < self._max_searches:
                    before = len(answer.loaded)
                    answer.results[i] = self._search(call, answer)
                    if self.dialect.report_searches:
                        answer.searched[i] = tuple(answer.loaded[before:])
                    continue
                over += 1
                text = TOO_MANY_SEARCHES.format(limit=self._max_searches)
                answer.results[i] = CallResult(
                    call.id, call.name, text, "refused", "too_many_searches"
                )
        if over:
            logger.warning(
                "a response made %d tool_search calls; answered the first %d "
                "([skills] tool_search_max_searches)",
                answer.searches + over,
                answer.searches,
            )
        exposed = self.exposed if exposed is None else exposed
        refused = [
            answer.results.setdefault(i, self._refuse(call, answer))
            for i, call in enumerate(answer.calls)
            if i not in answer.results and call.name not in exposed
        ]
        log_refusals(refused)
        return answer

    def unwrap(self, calls: Sequence[CallRequest]) -> BridgedCalls:
        """``calls`` with each ``call_tool`` call turned into its target's (`unwrap_calls`)."""
        return unwrap_calls(calls, self.names, self.permitted)

    def _search(self, call: CallRequest, answer: Answer) -> CallResult:
        arguments: Mapping[str, Any] | str = call.arguments_raw
        if call.arguments is not None:
            arguments = dict(call.arguments)
            query = arguments.get("query")
            if isinstance(query, str):
                arguments["query"] = canonical_query(
                    query, self.names, self.permitted, self.session
                )
        result = self.session.run(arguments)
        answer.searches += 1
        if not result.loaded and not result.already_loaded:
            answer.zero_result_searches += 1
        answer.loaded.extend(result.loaded)
        # Under the fixed-tool modes a schema must reach the conversation once per ask: the
        # newly loaded tools', and an already loaded one's this ask has not shown (a tool kept
        # loaded from an earlier ask of the conversation), or the model could not call it.
        fresh = [n for n in (*result.loaded, *result.already_loaded) if n not in self._declared]
        content = result.to_json()
        if fresh and self.mode == "bridge":
            content = bridge_search_result(result.to_dict(), self.schemas(fresh))
        elif fresh and self.mode == "additional_tools":
            answer.declared[call.id] = tuple(fresh)
        self._declared.update(fresh)
        return CallResult(call.id, call.name, content, "answered")

    def _refuse(self, call: CallRequest, answer: Answer) -> CallResult:
        # A blind call that loads is a search: the same cap holds for both together.
        room = answer.searches + answer.blind_call_loads < self._max_searches
        text, reason = refusal(
            self.session,
            call.name,
            self.permitted,
            blind_call=self._blind_call if room else "reject",
            bridge=self.mode == "bridge",
        )
        if reason == "blind_call_loaded":
            answer.blind_call_loads += 1
            answer.loaded.append(call.name)
            if self.mode == "bridge":
                text += self.schema_note(call.name)
            elif self.mode == "additional_tools":
                answer.declared[call.id] = (call.name,)
            self._declared.add(call.name)
        return CallResult(call.id, call.name, text, "refused", reason)

    def shown(self, names: Iterable[str]) -> None:
        """Count ``names`` as shown this ask (the host declared their schemas itself)."""
        self._declared.update(names)


def refusal(
    session: ToolSearchSession,
    name: str,
    permitted: Collection[str],
    *,
    blind_call: BlindCallPolicy,
    bridge: bool = False,
) -> tuple[str, RefusalReason]:
    """The refusal of a call to ``name``, which this round does not expose: text and reason.

    No such (permitted) tool, loaded this round, or not loaded yet; under
    ``blind_call == "load"`` a never-loaded tool is loaded into ``session`` for the next round.
    """
    if name not in permitted or not session.has_tool(name):
        return no_such_tool(name), "unknown"
    if name in session.loaded_tool_names:
        return LOADED_THIS_ROUND.format(name=name), "loaded_this_round"
    if blind_call == "load":
        # A bare full name is an exact lookup in the core (no select: comma splitting).
        session.search(name)
        if name in session.loaded_tool_names:
            return BLIND_CALL_LOADED.format(name=name), "blind_call_loaded"
    template = NOT_LOADED_YET_BRIDGE if bridge else NOT_LOADED_YET
    return template.format(name=name), "not_loaded"


def canonical_query(
    query: str,
    names: WireNames,
    permitted: Collection[str],
    session: ToolSearchSession | None = None,
) -> str:
    """``query`` with wire spellings of permitted tools turned canonical (``select:`` items or
    a bare full name); keyword queries pass unchanged. A wire spelling in the wrong case
    (``BANK-_-TRANSFER``) resolves like a canonical one does: exact spelling first, then a
    canonical name ignoring case, then a wire spelling ignoring case. ``names`` covers the
    permitted tools only, so forbidden names keep the model's spelling and the result cannot
    reveal that they decode to a real tool."""

    def canonical(item: str) -> str:
        name = names.to_canonical(item)
        if name is None and not (session is not None and _case_match(session, item)):
            name = names.to_canonical_folded(item)
        return name if name is not None and name in permitted else item

    items = select_items(query)
    if items is None:
        stripped = query.strip()
        mapped = canonical(stripped)
        return mapped if mapped != stripped else query
    return "select:" + ",".join(canonical(item) for item in items)


def _case_match(session: ToolSearchSession, item: str) -> bool:
    """Whether ``item`` names a permitted tool ignoring case (the session resolves it)."""
    return any(session.has_tool(name) for name in session.catalog.case_variants(item))


def directory_message(
    deferred: tuple[str, ...] | DeferredDirectory, *, bridge: bool = False
) -> Mapping[str, str]:
    """The directory system message: block, blank line, rules (plus the grouped-directory
    rules when the block is grouped; the ``call_tool`` rules under ``bridge`` loading).

    Given a session's `DeferredDirectory` (the budgeted block), it is cached by the block's
    text, which the catalog hands out as the same string object to every ask with the same
    permitted set and settings, so the lookup costs nothing proportional to the catalog.
    Given a tuple of names, the block lists them all.

    Cached, so asks with the same catalog and settings send the very same bytes. The catalog
    hands the same tuple to every ask with the same excluded tools, so the usual lookup is by
    identity and costs nothing proportional to the catalog. ``bridge`` uses the rules that
    explain ``call_tool``.
    """
    if isinstance(deferred, DeferredDirectory):
        return _budgeted_message(deferred.text, deferred.grouped, bridge)
    key = (id(deferred), bridge)
    hit = _BY_IDENTITY.get(key)
    if hit is not None and hit[0] is deferred:
        return hit[1]
    message = _directory_message(deferred, bridge)
    if len(_BY_IDENTITY) >= _CACHE_SIZE:
        _BY_IDENTITY.pop(next(iter(_BY_IDENTITY)), None)
    # The tuple is kept alive with its message, so its id cannot be reused meanwhile.
    _BY_IDENTITY[key] = (deferred, message)
    return message


_CACHE_SIZE = 32
_BY_IDENTITY: dict[tuple[int, bool], tuple[tuple[str, ...], Mapping[str, str]]] = {}


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _directory_message(deferred: tuple[str, ...], bridge: bool) -> Mapping[str, str]:
    rules = TOOL_SEARCH_RULES_BRIDGE if bridge else TOOL_SEARCH_RULES
    content = render_deferred_tools(deferred, budget=0) + "\n\n" + rules
    return MappingProxyType({"role": "system", "content": content})


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _budgeted_message(block: str, grouped: bool, bridge: bool) -> Mapping[str, str]:
    rules = TOOL_SEARCH_RULES_BRIDGE if bridge else TOOL_SEARCH_RULES
    if grouped:
        rules = f"{rules} {GROUPED_DIRECTORY_RULES}"
    return MappingProxyType({"role": "system", "content": f"{block}\n\n{rules}"})
