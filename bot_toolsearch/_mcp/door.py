"""`McpDoor`: the catalog a config describes, tool search per MCP client session, sans SDK.

The door owns the tool sources (a `ToolRegistry` of tool folders, code tools and upstream MCP
servers, kept in step with a hot-reloaded config by the `RegistryFollower`) and one
`ClientState` per MCP client session. Each state runs the `ToolSearchProtocol` the `Bot` runs,
rebuilt when the catalog or the settings change (the tools it loaded are loaded again, by
name). ``tools/list`` is the protocol's round: the always-loaded tools, ``tool_search`` (its
description carrying the ``<available_deferred_tools>`` directory and the rules) and, under
``bridge`` loading, ``call_tool``; under ``append`` the loaded tools follow. A call is answered
by the protocol (a search, a refusal, a malformed ``call_tool``) or run by its tool with the
`Bot`'s per-tool timeout and result cap; every failure is a result with ``is_error`` set, never
an exception that ends the session.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot_toolsearch._config.settings import BotSettings
from bot_toolsearch._core.catalog import ToolCatalog
from bot_toolsearch._core.prompt import CALL_TOOL_NAME, TOOL_SEARCH_NAME
from bot_toolsearch._core.reserved import ReservedTool
from bot_toolsearch._core.unicode import well_formed
from bot_toolsearch._protocol.calls import CallRequest, CallResult, parse_arguments
from bot_toolsearch._protocol.engine import ToolSearchProtocol
from bot_toolsearch._protocol.messages import (
    TOOL_TIMED_OUT,
    no_such_tool,
    tool_failed,
    truncated_result,
)
from bot_toolsearch._services.arguments import invalid_arguments, rejected_arguments
from bot_toolsearch._services.client_policy import ClientPolicy, narrowed
from bot_toolsearch._services.indexing import build_index, index_built
from bot_toolsearch._services.permissions import pattern_filter
from bot_toolsearch._services.registry_follower import RegistryFollower, registry_for
from bot_toolsearch._services.semantic import semantic_ranker
from bot_toolsearch._services.threads import off_loop
from bot_toolsearch._tools.registry import ToolRegistry
from bot_toolsearch._tools.source import ToolSetSnapshot
from bot_toolsearch._tools.tool import ArgumentsMismatch, Tool, ToolTimeoutError
from bot_toolsearch._tools.validation import validate_arguments
from bot_toolsearch._transports.names import WireNames

if TYPE_CHECKING:
    from bot_toolsearch._config.reload import ConfigReloader

__all__ = [
    "ClientState",
    "DoorTools",
    "McpDoor",
    "Outcome",
    "SessionsFull",
    "mcp_mode_report",
]

logger = logging.getLogger("bot_toolsearch.mcp_door")

API = "chat_completions"
"""The API the protocol is told: an MCP client has no ``additional_tools`` item, so
``additional_tools`` falls back to ``append`` and ``auto`` means ``bridge``, as on Chat
Completions."""

MCP_FALLBACK = (
    '[skills] tool_search_loading = "additional_tools" needs the Responses API; an MCP client '
    'has none, so the door loads tools into tools/list ("append")'
)
"""The one log line of the ``additional_tools`` fallback at the MCP door."""

MAX_CLIENTS = 1024
"""Client sessions whose state (their loads) the door keeps at most. A state is made on a
session's first load or call (a session that only lists has none) and goes only when its own
session ends (`forget`, or `IDLE_SECONDS` without a request of its own): never to make room
for another session. With every slot taken, a new session's search or call is refused
(`SESSIONS_FULL`) until one ends; the HTTP server keeps at most as many sessions open."""
SESSIONS_FULL = (
    "Error: the tool-search door keeps the loads of {limit} client sessions and every one is "
    "in use; nothing was run. Try again later, or end an unused session."
)
"""The result of a search or call of a new session while `MAX_CLIENTS` states are kept."""
IDLE_SECONDS = 30 * 60.0
"""A session that ends on its own (``client(expires=True)``: streamable HTTP) and has sent
nothing for this long is forgotten: the ``mcp`` SDK ends such a session after the same 30
minutes by default, and its id is never used again."""

_CALL_ID = "mcp"


def mcp_mode_report(level: int, text: str) -> None:
    """How the door reports a loading-mode fallback (in MCP terms, not the model API's)."""
    if text.startswith('[skills] tool_search_loading = "additional_tools"'):
        text = MCP_FALLBACK
    logger.log(level, "%s", text)


@dataclass(frozen=True, slots=True, eq=False)
class DoorTools:
    """One (tool snapshot, settings) pair as the door serves it: permitted and hidden names,
    wire names and namespace descriptions, computed once per change.

    While it offers the virtual ``tool_search``, a real tool of that name is left out (not
    listed, not callable, not in the directory) with one warning per snapshot; without tool
    search it is listed and runs as any tool (`bot_toolsearch._core.reserved`).
    """

    snapshot: ToolSetSnapshot
    settings: BotSettings
    permitted: frozenset[str]
    hidden: tuple[str, ...]
    names: WireNames
    namespaces: Mapping[str, str]
    searching: bool = False
    """Whether tool search applies: on in the settings, and some permitted tool deferred."""
    reserved: ReservedTool = field(default_factory=lambda: ReservedTool(()))
    """The snapshot's real ``tool_search``, if any (one per snapshot: its warning is logged
    once)."""

    @classmethod
    def build(
        cls,
        snapshot: ToolSetSnapshot,
        settings: BotSettings,
        reserved: ReservedTool | None = None,
    ) -> DoorTools:
        """The view of ``snapshot`` under ``settings`` (``[tools] allow``/``deny`` applied);
        ``reserved``: the snapshot's, from an earlier view of it."""
        catalog = snapshot.catalog
        tools = settings.tools
        if reserved is None:
            reserved = ReservedTool(snapshot.tools)
        everything = pattern_filter(frozenset(snapshot.tools), tools.allow, tools.deny)
        hidden = tuple(n for n in catalog.names if n not in everything)
        namespaces = {**snapshot.namespaces, **tools.namespaces}

        def view(permitted: frozenset[str], searching: bool) -> DoorTools:
            names = WireNames.build(
                [*(n for n in catalog.names if n in permitted), TOOL_SEARCH_NAME],
                dot_delimiter=tools.dot_delimiter,
            )
            return cls(
                snapshot, settings, permitted, hidden, names, namespaces, searching, reserved
            )

        if settings.skills.tool_search_enabled:
            searched = view(reserved.skip(everything), True)
            if searched.protocol(report=_quiet, semantic=False).active:
                if searched.permitted is not everything:
                    reserved.warn()
                return searched
        return view(everything, False)

    @property
    def catalog(self) -> ToolCatalog:
        """The catalog of every tool (hidden ones included; sessions hide them)."""
        return self.snapshot.catalog

    def protocol(
        self,
        always_loaded: Sequence[str] = (),
        *,
        report: Callable[[int, str], None] = mcp_mode_report,
        semantic: bool = True,
    ) -> ToolSearchProtocol:
        """A fresh `ToolSearchProtocol` over this view (one client session's)."""
        return ToolSearchProtocol(
            self.catalog,
            self.settings,
            api=API,
            names=self.names,
            permitted=self.permitted,
            hidden=self.hidden,
            namespaces=self.namespaces,
            always_loaded=always_loaded,
            report=report,
            semantic=semantic_ranker(self.settings, self.catalog) if semantic else None,
            wire_directory=True,
        )

    def all_tools(self) -> list[dict[str, Any]]:
        """Every permitted tool's schema (tool search off), in catalog order (a real
        ``tool_search``, outside the catalog, last)."""
        tools = self.catalog.schemas(n for n in self.catalog.names if n in self.permitted)
        real = self.snapshot.tools.get(TOOL_SEARCH_NAME)
        if real is not None and TOOL_SEARCH_NAME in self.permitted:
            tools.append(real.schema())
        return tools


class SessionsFull(RuntimeError):
    """`McpDoor.client` for a new session while `MAX_CLIENTS` states are kept."""


@dataclass(slots=True)
class Outcome:
    """The answer to one ``tools/call``."""

    text: str
    """The result text the model reads."""
    is_error: bool
    """Set for every refusal and failure (an MCP error result)."""
    list_changed: bool = False
    """The call changed this session's ``tools/list`` (a load under ``append``)."""
    loaded: list[str] = field(default_factory=list)
    """The tools the call loaded into the session (a search's new loads)."""


@dataclass(slots=True, eq=False)
class ClientState:
    """One MCP client session: its protocol (per view) and what it loaded and called."""

    client: str = ""
    """The client's name (``clientInfo``), for ``tool_search_keep_loaded = "conversation"``."""
    view: DoorTools | None = None
    protocol: ToolSearchProtocol | None = None
    loaded: list[str] = field(default_factory=list)
    """Tools this session loaded, in order (loaded again when the protocol is rebuilt)."""
    called: list[str] = field(default_factory=list)
    """Tools this session ran, in first-call order."""
    notify: Callable[[], Any] | None = None
    """Sends ``notifications/tools/list_changed`` to this client (set by the server)."""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    """One protocol step at a time (a search may run in a worker thread)."""
    expires: bool = False
    """Forgotten after `IDLE_SECONDS` without a request (a streamable-HTTP session)."""
    used: float = field(default_factory=time.monotonic)
    """When the session last sent a request (`time.monotonic`)."""
    policy: ClientPolicy | None = None
    """The ``[[proxy.clients]]`` client of the session's latest request (its tool set)."""


class McpDoor:
    """The MCP door's tools and client sessions (the SDK wiring is in ``server.py``).

    Args:
        settings: the live settings (a `ConfigReloader`) or a fixed snapshot.
        code_tools: tools from code (``--tools MODULE:ATTR``).
        base_dir: the config file's folder (short source labels).
        registry: a registry to serve instead of one built from ``[tools]`` (tests).
    """

    def __init__(
        self,
        settings: ConfigReloader | BotSettings,
        code_tools: Sequence[Tool] = (),
        *,
        base_dir: Path | None = None,
        registry: ToolRegistry | None = None,
    ) -> None:
        self._settings = settings
        start = self.settings()
        if registry is None:
            registry = registry_for(
                start.tools, code_tools, watch=start.bot.hot_reload, base_dir=base_dir
            )
            self._follower: RegistryFollower | None = RegistryFollower(
                settings, registry, code_tools, self._adopt, base_dir=base_dir
            )
        else:
            self._follower = None
        self.registry = registry
        self._views: OrderedDict[ClientPolicy | None, DoorTools] = OrderedDict()
        self._bridged: OrderedDict[ClientPolicy | None, tuple[DoorTools, DoorTools]] = OrderedDict()
        self._fresh: OrderedDict[
            tuple[bool, ClientPolicy | None], tuple[DoorTools, list[dict[str, Any]]]
        ] = OrderedDict()
        self._clients: OrderedDict[object, ClientState] = OrderedDict()
        self.cached = False
        """The states are a cache of shared ones (``[proxy] state``, which keeps the loads and
        bounds the sessions): the least recently used goes to make room for a new one."""
        self._kept: OrderedDict[str, list[str]] = OrderedDict()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._undo: list[Callable[[], None]] = []
        self._warm: set[asyncio.Task[None]] = set()
        self.broadcasts: list[Callable[[], Awaitable[None]]] = []
        """Called after each catalog or settings change, besides each session's `notify`
        (the server publishes to its ``subscriptions/listen`` streams here)."""

    async def _adopt(self, registry: ToolRegistry) -> bool:
        del registry  # the door always has a registry: a later one is never adopted
        return False

    def settings(self) -> BotSettings:
        """The current settings snapshot."""
        source = self._settings
        return source if isinstance(source, BotSettings) else source.snapshot()

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Connect the upstream servers, start watching, build the index ahead."""
        self._loop = asyncio.get_running_loop()
        if self._follower is not None:
            await self._follower.start()
        else:
            await self.registry.start()
        self._undo.append(self.registry.subscribe(lambda _: self._changed()))
        subscribe = getattr(self._settings, "subscribe", None)
        if subscribe is not None:
            self._undo.append(subscribe(lambda _: self._changed()))
        await asyncio.to_thread(_prepare, self.view())

    async def aclose(self) -> None:
        """Stop following and close every upstream session."""
        for undo in self._undo:
            undo()
        self._undo.clear()
        for task in list(self._warm):
            task.cancel()
        if self._follower is not None:
            await self._follower.aclose()
        else:
            await self.registry.aclose()

    async def __aenter__(self) -> McpDoor:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _changed(self) -> None:
        """A new tool snapshot or settings (any thread): tell every client its list changed."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._notify_all)

    def _notify_all(self) -> None:
        prepare = asyncio.ensure_future(asyncio.to_thread(_prepare, self.view()))
        self._warm.add(prepare)
        prepare.add_done_callback(self._warm.discard)
        notify = [s.notify for s in self._clients.values() if s.notify is not None]
        for send in (*notify, *self.broadcasts):
            task = asyncio.ensure_future(_quietly(send))
            self._warm.add(task)
            task.add_done_callback(self._warm.discard)

    # -- views and sessions ------------------------------------------------------------------

    def view(self, policy: ClientPolicy | None = None) -> DoorTools:
        """The current `DoorTools` (rebuilt when the snapshot or the settings changed);
        ``policy``: of a ``[[proxy.clients]]`` client (its ``allow``/``deny`` applied)."""
        snapshot = self.registry.snapshot()
        settings = narrowed(self.settings(), policy)
        view = self._views.get(policy)
        if view is None or view.snapshot is not snapshot or view.settings is not settings:
            known = view or self._views.get(None)
            same = known is not None and known.snapshot is snapshot
            reserved = known.reserved if known is not None and same else None
            view = self._views[policy] = DoorTools.build(snapshot, settings, reserved)
            _bound(self._views)
        else:
            self._views.move_to_end(policy)
        return view

    def client(self, key: object, name: str = "", *, expires: bool = False) -> ClientState:
        """The state of the client session ``key`` (created on first use); ``expires``: it
        is forgotten after `IDLE_SECONDS` without a request (see `forget` for its end).

        Raises:
            SessionsFull: ``key`` is new and `MAX_CLIENTS` states are kept (none is evicted
                for it: a live session's loads are never another session's to end).
        """
        now = time.monotonic()
        self._forget_idle(now)
        state = self._clients.get(key)
        if state is None:
            if len(self._clients) >= MAX_CLIENTS:
                if not self.cached:
                    raise SessionsFull(SESSIONS_FULL.format(limit=MAX_CLIENTS))
                self._clients.popitem(last=False)
            state = ClientState(client=name, expires=expires)
            self._clients[key] = state
        else:
            self._clients.move_to_end(key)
        state.used = now
        return state

    def existing(self, key: object) -> ClientState | None:
        """The state of the client session ``key`` if it has one (a request of it: its idle
        clock restarts), else ``None``."""
        now = time.monotonic()
        self._forget_idle(now)
        state = self._clients.get(key)
        if state is not None:
            self._clients.move_to_end(key)
            state.used = now
        return state

    def has_state(self, key: object) -> bool:
        """Whether the client session ``key`` has a state (loads or calls) kept."""
        return key in self._clients

    def wants_state(self, name: str) -> bool:
        """Whether a new session of the client ``name`` starts with tools loaded
        (``tool_search_keep_loaded = "conversation"`` and that client ran some)."""
        keep = self.settings().skills.tool_search_keep_loaded == "conversation"
        return keep and bool(name) and bool(self._kept.get(name))

    def _forget_idle(self, now: float) -> None:
        """Drop the expiring sessions idle for `IDLE_SECONDS` (the least recently used come
        first, so this stops at the first recent one)."""
        stale = []
        for key, state in self._clients.items():
            if now - state.used < IDLE_SECONDS:
                break
            if state.expires:
                stale.append(key)
        for key in stale:
            del self._clients[key]

    def forget(self, key: object) -> None:
        """Drop a client session's state (it ended: a streamable-HTTP client's DELETE)."""
        self._clients.pop(key, None)

    @property
    def client_sessions(self) -> int:
        """How many client sessions' states the door keeps (at most `MAX_CLIENTS`)."""
        return len(self._clients)

    def _protocol(self, state: ClientState) -> ToolSearchProtocol | None:
        """The session's protocol over the current view (``None``: tool search is off)."""
        view = self.view(state.policy)
        if state.view is view:
            return state.protocol
        state.view = view
        state.protocol = None
        if not view.searching:
            return None
        protocol = view.protocol()
        if not protocol.active:
            return None
        again = list(dict.fromkeys(state.loaded))
        if not again and view.settings.skills.tool_search_keep_loaded == "conversation":
            again = list(self._kept.get(state.client, ()))
        protocol.replay(again)
        state.loaded = [n for n in again if n in protocol.session.loaded_tool_names]
        state.protocol = protocol
        return protocol

    # -- tools/list ---------------------------------------------------------------------------

    async def list_tools(
        self,
        state: ClientState,
        known: Sequence[str] = (),
        policy: ClientPolicy | None = None,
    ) -> list[dict[str, Any]]:
        """The session's tools (Chat Completions schemas): the protocol's round, with the
        directory and the rules in ``tool_search``'s description; ``known``: tools the
        session loaded in another process (shared state), loaded here too; ``policy``: the
        requesting client's (`view`)."""
        async with state.lock:
            state.policy = policy
            self._merge(state, known)
            return self._list_tools(state)

    def _merge(self, state: ClientState, known: Sequence[str]) -> None:
        """Load ``known`` (the session's loads as shared state holds them) into ``state``."""
        extra = [n for n in dict.fromkeys(known) if n not in state.loaded]
        if not extra:
            return
        if state.protocol is not None and state.view is self.view(state.policy):
            state.protocol.replay(extra)
            loaded = state.protocol.session.loaded_tool_names
            state.loaded.extend(n for n in extra if n in loaded)
        else:  # loaded again when the protocol is (re)built
            state.loaded.extend(extra)

    def _list_tools(self, state: ClientState) -> list[dict[str, Any]]:
        return _listing(self.view(state.policy), self._protocol(state))

    def fresh_tools(
        self, *, bridge: bool, policy: ClientPolicy | None = None
    ) -> list[dict[str, Any]]:
        """The ``tools/list`` of a session that has loaded nothing (``bridge``: of a client
        the door keeps nothing of, whatever ``tool_search_loading`` says): the same for every
        such client (of one ``policy``), in the same order, until the catalog or the settings
        change."""
        view = self.bridge_view(policy) if bridge else self.view(policy)
        cached = self._fresh.get((bridge, policy))
        if cached is None or cached[0] is not view:
            protocol = _active(view.protocol(report=_quiet)) if view.searching else None
            cached = self._fresh[bridge, policy] = (view, _listing(view, protocol))
            _bound(self._fresh)
        return copy.deepcopy(cached[1])

    def bridge_view(self, policy: ClientPolicy | None = None) -> DoorTools:
        """The current view (of ``policy``) with ``tool_search_loading = "bridge"`` (the view
        itself when the settings say so)."""
        view = self.view(policy)
        cached = self._bridged.get(policy)
        if cached is None or cached[0] is not view:
            skills = view.settings.skills
            bridged = view
            if skills.tool_search_loading != "bridge":
                skills = skills.model_copy(update={"tool_search_loading": "bridge"})
                settings = view.settings.model_copy(update={"skills": skills})
                bridged = DoorTools.build(view.snapshot, settings, view.reserved)
            cached = self._bridged[policy] = (view, bridged)
            _bound(self._bridged)
        return cached[1]

    @property
    def bridged(self) -> bool:
        """Whether the settings load under ``bridge`` (``auto`` included: MCP has no
        ``additional_tools``)."""
        return self.settings().skills.tool_search_loading in ("bridge", "auto")

    # -- tools/call ---------------------------------------------------------------------------

    async def call(
        self,
        state: ClientState,
        name: str,
        arguments: object,
        known: Sequence[str] = (),
        policy: ClientPolicy | None = None,
    ) -> Outcome:
        """Answer one ``tools/call``: a search, a refusal, or the tool's own result;
        ``known`` and ``policy``: as for `list_tools`."""
        async with state.lock:
            state.policy = policy
            self._merge(state, known)
            protocol = self._protocol(state)
            view = state.view or self.view(policy)
            return await self._answer(state, view, protocol, name, arguments)

    async def call_stateless(
        self, name: str, arguments: object, policy: ClientPolicy | None = None
    ) -> Outcome:
        """Answer one ``tools/call`` of a client the door keeps nothing of (a 2026-07-28
        client, or any HTTP session under ``bridge``): a fresh protocol under ``bridge``, so a
        search's result carries the schemas and any permitted tool can be called at once;
        ``policy``: the requesting client's (`view`)."""
        view = self.bridge_view(policy)
        protocol = _active(view.protocol(report=_quiet)) if view.searching else None
        state = ClientState(view=view, protocol=protocol)  # this call's only
        return await self._answer(state, view, protocol, name, arguments)

    async def _answer(
        self,
        state: ClientState,
        view: DoorTools,
        protocol: ToolSearchProtocol | None,
        name: str,
        arguments: object,
    ) -> Outcome:
        name = view.names.to_canonical(name) or name
        request = _request(name, arguments)
        if protocol is None:
            answer = None
        else:
            if protocol.mode == "bridge":  # any permitted tool is callable in any session
                protocol.replay([_target(request)])
            protocol.round_tools()  # what the session has loaded so far is callable now
            answer = await off_loop(
                protocol.session.semantic is not None
                or not index_built(view.catalog, view.namespaces),
                protocol.answer,
                [request],
            )
        if protocol is None or answer is None:
            if name not in view.permitted or name not in view.snapshot.tools:
                return Outcome(no_such_tool(name), True)
            return await self._run(state, view, request, bridged=False, protocol=None)
        fresh = [n for n in answer.loaded if n not in state.loaded]
        state.loaded.extend(fresh)
        changed = bool(fresh) and protocol.mode == "append"
        result = answer.results.get(0)
        if result is not None:
            made = Outcome(result.content, result.outcome != "answered", changed, fresh)
            return _wired(view, made, answer.calls[0].name)
        outcome = await self._run(
            state, view, answer.calls[0], bridged=0 in answer.bridged, protocol=protocol
        )
        outcome.list_changed = changed
        outcome.loaded = fresh
        return outcome

    async def _run(
        self,
        state: ClientState,
        view: DoorTools,
        call: CallRequest,
        *,
        bridged: bool,
        protocol: ToolSearchProtocol | None,
    ) -> Outcome:
        outcome = await self._invoke(state, view, call, bridged=bridged, protocol=protocol)
        return _wired(view, outcome, call.name) if outcome.is_error else outcome

    async def _invoke(
        self,
        state: ClientState,
        view: DoorTools,
        call: CallRequest,
        *,
        bridged: bool,
        protocol: ToolSearchProtocol | None,
    ) -> Outcome:
        tool = view.snapshot.tools.get(call.name)
        if tool is None or call.name not in view.permitted:  # the protocol refused it already
            return Outcome(no_such_tool(call.name), True)
        if call.arguments is None:
            return _refused(invalid_arguments(call), bridged, protocol)
        arguments, problem = validate_arguments(tool, call.arguments)
        if problem is not None:
            return _refused(rejected_arguments(call, problem), bridged, protocol)
        limits = view.settings.tools
        try:
            text = await tool.invoke(arguments, default_timeout=limits.call_timeout)
        except ToolTimeoutError as exc:
            logger.warning("tool %s timed out after %g s; abandoned", call.name, exc.seconds)
            return Outcome(TOOL_TIMED_OUT.format(name=call.name, seconds=exc.seconds), True)
        except ArgumentsMismatch as exc:
            problem = f"the tool does not take them ({exc})"
            return _refused(rejected_arguments(call, problem), bridged, protocol)
        except Exception as exc:  # the tool's (or its upstream server's) failure
            return Outcome(well_formed(tool_failed(call.name, exc)), True)
        finally:
            self._called(state, call.name)
        return Outcome(truncated_result(text, limits.max_result_chars), False)

    def _called(self, state: ClientState, name: str) -> None:
        if name not in state.called:
            state.called.append(name)
        if state.client:
            self.remember(state.client, [name])

    def remember(self, client: str, names: Sequence[str]) -> None:
        """Keep ``names`` as tools the client ``client`` ran (for its next sessions, under
        ``tool_search_keep_loaded = "conversation"``; shared state brings other processes')."""
        if not client or not names:
            return
        kept = self._kept.setdefault(client, [])
        kept.extend(n for n in dict.fromkeys(names) if n not in kept)
        self._kept.move_to_end(client)
        if len(self._kept) > MAX_CLIENTS:
            self._kept.popitem(last=False)

    @property
    def keeps_loaded(self) -> bool:
        """Whether a new session starts with the tools its client ran
        (``tool_search_keep_loaded = "conversation"``)."""
        return self.settings().skills.tool_search_keep_loaded == "conversation"


_VIEWS = 64
"""Views (and their lists) kept per client policy at most; the least recently used go."""


def _bound(cache: OrderedDict[Any, Any]) -> None:
    while len(cache) > _VIEWS:
        cache.popitem(last=False)


def _quiet(level: int, text: str) -> None:
    """A mode fallback is reported by the sessions' protocols, not by the view's probe."""
    del level, text


def _active(protocol: ToolSearchProtocol) -> ToolSearchProtocol | None:
    return protocol if protocol.active else None


def _listing(view: DoorTools, protocol: ToolSearchProtocol | None) -> list[dict[str, Any]]:
    """A ``tools/list`` (Chat Completions schemas): the protocol's round, with the directory
    and the rules in ``tool_search``'s description; every permitted tool without one."""
    wire = view.names.canonical_to_wire
    if protocol is None:
        tools = view.all_tools()
    else:
        tools = protocol.round_tools()
        directory = protocol.directory["content"]  # its names already in the wire spelling
        for tool in tools:
            function = tool["function"]
            if function["name"] == TOOL_SEARCH_NAME:
                function["description"] = f"{function.get('description') or ''}\n\n{directory}"
    for tool in tools:
        function = tool["function"]
        function["name"] = wire.get(function["name"], function["name"])
    return tools


def _wired(view: DoorTools, outcome: Outcome, name: str) -> Outcome:
    """``outcome`` of the door's own making (a search, a refusal, a failure) with tool names
    in their wire spelling: a search result's ``loaded``, ``already_loaded``, ``names`` and
    ``tools``; elsewhere the called tool's canonical ``name``."""
    wire = view.names.canonical_to_wire
    text = outcome.text
    found = _search_result(text)
    if found is not None:
        for key in ("loaded", "already_loaded", "names"):
            value = found.get(key)
            if isinstance(value, list):
                found[key] = [wire.get(n, n) if isinstance(n, str) else n for n in value]
        for tool in found.get("tools") or ():
            if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                tool["name"] = wire.get(tool["name"], tool["name"])
        text = json.dumps(found, ensure_ascii=False, separators=(",", ":"))
    elif wire.get(name, name) != name:
        text = text.replace(name, wire[name])
    outcome.text = text
    return outcome


def _search_result(text: str) -> dict[str, Any] | None:
    if not text.startswith('{"loaded":'):
        return None
    try:
        found = json.loads(text)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def _target(request: CallRequest) -> str:
    """The tool a ``call_tool`` call runs (``""`` for any other call: a direct call of a
    deferred tool is refused until a search loads it, as at the `Bot`)."""
    arguments = request.arguments
    if request.name == CALL_TOOL_NAME and arguments is not None:
        name = arguments.get("name")
        return name.strip() if isinstance(name, str) else ""
    return ""


def _prepare(view: DoorTools) -> None:
    """Build the keyword index and the directory of ``view`` ahead of the first session
    (off the event loop), as the `Bot` does at start-up and on each change."""
    build_index(view.catalog, view.namespaces)
    if view.searching:
        _ = view.protocol().session.directory  # cached by the catalog for every session


def _request(name: str, arguments: object) -> CallRequest:
    """A ``tools/call`` as the protocol's call value (arguments must be an object)."""
    if arguments is None:
        arguments = {}
    if isinstance(arguments, Mapping):
        raw = json.dumps(dict(arguments), ensure_ascii=False, default=str)
        return CallRequest(0, _CALL_ID, name, raw, dict(arguments))
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments, default=str)
    parsed, error = parse_arguments(raw)
    return CallRequest(0, _CALL_ID, name, raw, parsed, error or None)


def _refused(result: CallResult, bridged: bool, protocol: ToolSearchProtocol | None) -> Outcome:
    text = result.content
    if bridged and protocol is not None:
        text += protocol.schema_note(result.name)
    return Outcome(text, True)


async def _quietly(notify: Callable[[], Any]) -> None:
    try:
        await notify()
    except Exception as exc:  # a client that went away cannot be told; it re-lists on return
        logger.debug("tools/list_changed not delivered: %s", exc)
