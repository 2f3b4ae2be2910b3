"""Tool search as a middleware: the core's session adapted to the ``ask()`` pipeline.

Per ask it builds a `ToolSearchSession` from the prebuilt catalog with the ask's forbidden
tools hidden. Per round it sends the session's tools as ``[skills] tool_search_loading`` says
(``append``: each round's list extends the previous one; ``additional_tools`` and ``bridge``:
the same list all ask, see `bot_toolsearch._runtime.loading`) and inserts the deferred-tool
directory with the rules as one system message right after the bot's own system prompt,
byte-identical in every round. Per batch of calls it answers
``tool_search`` itself, in call order, and refuses every call to a tool this round does not
expose, saying why: not loaded yet, loaded this round, or no such tool (never hinting that a
forbidden tool exists). Off (the full list, no directory, no virtual tool) when
``tool_search_enabled`` is false, when the ask may use a real tool named ``tool_search``
(logged as an error), or when no deferred tools are left.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from bot_toolsearch._config.settings import BlindCallPolicy, BotSettings, ToolSearchLoading
from bot_toolsearch._core.directory import DeferredDirectory
from bot_toolsearch._core.prompt import (
    CALL_TOOL_NAME,
    GROUPED_DIRECTORY_RULES,
    TOOL_SEARCH_NAME,
    TOOL_SEARCH_RULES,
    TOOL_SEARCH_RULES_BRIDGE,
    render_deferred_tools,
)
from bot_toolsearch._core.query import select_items
from bot_toolsearch._core.session import ToolSearchSession
from bot_toolsearch._transports.names import WireNames

from .announce import announce_calls
from .calls import CallRequest, CallResult, RefusalReason
from .context import AskContext
from .loading import (
    FALLBACK_TO_APPEND,
    additional_tools_message,
    bridge_collides,
    bridge_search_result,
    effective_loading,
    fell_back,
    request_tools,
    schema_note,
)
from .messages import (
    BLIND_CALL_LOADED,
    LOADED_THIS_ROUND,
    NOT_LOADED_YET,
    NOT_LOADED_YET_BRIDGE,
    no_such_tool,
    shown_name,
)
from .middleware import CallHandler, Middleware, RoundRequest, forward_unanswered
from .semantic import off_loop, semantic_ranker

__all__ = [
    "ToolSearchMiddleware",
    "ToolSearchPlugin",
    "canonical_query",
    "directory_message",
    "plugin",
    "refusal",
]

logger = logging.getLogger("bot_toolsearch")


@dataclass(slots=True)
class _AskState:
    session: ToolSearchSession
    directory: Mapping[str, str]
    names: WireNames
    mode: ToolSearchLoading = "append"
    declared: set[str] = field(default_factory=set)
    """Under ``bridge``/``additional_tools``: the tools whose schemas this ask has shown."""
    kept: list[dict[str, Any]] = field(default_factory=list)
    """Under ``bridge``/``additional_tools`` with ``tool_search_keep_loaded = "conversation"``:
    the messages that show the kept tools' schemas (they are not in ``tools``)."""


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


class ToolSearchMiddleware:
    """The tool-search middleware; stateless itself, its per-ask state lives in the context.

    ``[skills] tool_search_loading`` is read per ask (see `bot_toolsearch._runtime.loading`).
    """

    name = "tool_search"

    def __init__(self) -> None:
        self._fallback_logged: set[int] = set()  # settings generations already logged

    async def start_ask(self, ctx: AskContext) -> None:
        """Build this ask's session, or leave tool search off for the ask."""
        skills = ctx.settings.skills
        if not skills.tool_search_enabled:
            return
        # Filtering comes first: a real ``tool_search`` this ask may not use collides with
        # nothing, and the virtual tool serves the ask as usual.
        if ctx.toolset.collision and TOOL_SEARCH_NAME in ctx.permitted:
            logger.error(
                "a real tool is named %r: tool search is off for this ask "
                "(the full tool list is sent, with no directory)",
                TOOL_SEARCH_NAME,
            )
            return
        always = (*skills.tool_search_always_loaded, *ctx.always_loaded_extra)
        session = ToolSearchSession(
            ctx.toolset.catalog,
            always_loaded=always,
            max_results=skills.tool_search_max_results,
            hidden=ctx.hidden,
            directory_budget=skills.tool_search_directory_budget,
            namespaces=ctx.toolset.namespace_descriptions(ctx.settings.tools.namespaces),
            semantic=semantic_ranker(ctx.settings, ctx.toolset.catalog),
        )
        if not session.deferred_tool_names:
            return
        # tool_search_keep_loaded = "conversation": as if searched before round 1, so they
        # follow tool_search in first-call order (the directory is of the deferred set, which
        # loading does not change, so it stays byte-identical from ask to ask).
        for name in ctx.conversation_tools:
            if session.has_tool(name):
                session.search(name)  # a bare full name is an exact lookup
        names = ctx.toolset.wire_names(ctx.settings.tools.dot_delimiter, ctx.permitted)
        mode = self._mode(ctx, names)
        ctx.loading = mode
        directory = directory_message(session.directory, bridge=mode == "bridge")
        state = _AskState(session, directory, names, mode)
        deferred = frozenset(session.deferred_tool_names)
        kept = [
            n for n in ctx.conversation_tools if n in deferred and n in session.loaded_tool_names
        ]
        if kept and mode != "append":
            state.kept = _kept_declaration(ctx, session, kept, mode)
            state.declared.update(kept)
        ctx.state[_AskState] = state

    def _mode(self, ctx: AskContext, names: WireNames) -> ToolSearchLoading:
        wanted = ctx.settings.skills.tool_search_loading
        api = ctx.settings.model.api
        mode = effective_loading(wanted, api)
        generation = ctx.settings.generation
        if fell_back(wanted, mode) and generation not in self._fallback_logged:
            self._fallback_logged.add(generation)
            logger.warning(FALLBACK_TO_APPEND, api)
        if mode == "bridge" and bridge_collides(names):
            logger.error(
                'a real tool is named %r: tool_search_loading = "bridge" cannot be used; '
                "loads are appended to the tools list for this ask",
                CALL_TOOL_NAME,
            )
            return "append"
        return mode

    async def prepare_request(self, ctx: AskContext, request: RoundRequest) -> RoundRequest:
        """Send the session's tools and the directory; expose what the session exposes."""
        state: _AskState | None = ctx.state.get(_AskState)
        if state is None:
            return request
        tools = request_tools(state.session.request_tools(), state.mode)
        messages = list(request.messages)
        if state.kept:
            # Right before this ask's message: after the earlier turns (a stable prefix), the
            # same bytes in every round of the ask.
            at = max(
                (i for i, m in enumerate(messages) if m.get("role") == "user"),
                default=len(messages),
            )
            messages[at:at] = state.kept
        messages.insert(ctx.system_prompt_count, state.directory)
        return replace(
            request, messages=messages, tools=tools, exposed=state.session.exposed_tool_names()
        )

    async def handle_calls(
        self, ctx: AskContext, calls: Sequence[CallRequest], call_next: CallHandler
    ) -> list[CallResult]:
        """Answer ``tool_search`` calls in order; refuse unexposed calls; pass the rest on."""
        state: _AskState | None = ctx.state.get(_AskState)
        if state is None:
            return await call_next(ctx, calls)
        searches = [c for c in calls if c.name == TOOL_SEARCH_NAME]
        await announce_calls(ctx, [(c.name, "tool") for c in searches])
        answered: dict[int, CallResult] = {}
        # Searches first, in call order, so several build on each other; then the refusals,
        # so each one reflects every load of this response, wherever the search stood in it
        # (a target called before its search is "loaded this round", not "not loaded").
        for i, call in enumerate(calls):
            if call.name == TOOL_SEARCH_NAME:
                semantic = state.session.semantic is not None
                answered[i] = await off_loop(semantic, self._search, ctx, state, call)
        for i, call in enumerate(calls):
            if i not in answered and call.name not in ctx.exposed:
                answered[i] = self._refuse(ctx, state, call)
        return await forward_unanswered(ctx, calls, answered, call_next)

    async def finish_ask(self, ctx: AskContext) -> None:
        """Drop the session (the loaded set never outlives its ask)."""
        ctx.state.pop(_AskState, None)

    def _search(self, ctx: AskContext, state: _AskState, call: CallRequest) -> CallResult:
        arguments: Mapping[str, Any] | str = call.arguments_raw
        if call.arguments is not None:
            arguments = dict(call.arguments)
            query = arguments.get("query")
            if isinstance(query, str):
                arguments["query"] = canonical_query(
                    query, state.names, ctx.permitted, state.session
                )
        result = state.session.run(arguments)
        stats = ctx.stats
        stats.searches += 1
        if not result.loaded and not result.already_loaded:
            stats.zero_result_searches += 1
        stats.loaded.extend(result.loaded)
        content = result.to_json()
        # Under the fixed-tool modes a schema must reach the conversation once per ask: the
        # newly loaded tools', and an already loaded one's this ask has not shown (a tool kept
        # loaded from an earlier ask of the conversation), or the model could not call it.
        fresh = [n for n in (*result.loaded, *result.already_loaded) if n not in state.declared]
        if fresh and state.mode == "bridge":
            content = bridge_search_result(result.to_dict(), _schemas(ctx, fresh))
        elif fresh and state.mode == "additional_tools":
            _declare(ctx, call.id, fresh)
        state.declared.update(fresh)
        return CallResult(call.id, call.name, content, "answered")

    def _refuse(self, ctx: AskContext, state: _AskState, call: CallRequest) -> CallResult:
        text, reason = refusal(
            state.session,
            call.name,
            call.id,
            ctx.permitted,
            blind_call=ctx.settings.skills.tool_search_blind_call,
            bridge=state.mode == "bridge",
        )
        if reason == "blind_call_loaded":
            ctx.stats.blind_call_loads += 1
            ctx.stats.loaded.append(call.name)
            if state.mode == "bridge":
                text += "".join(schema_note(call.name, s) for s in _schemas(ctx, (call.name,)))
            elif state.mode == "additional_tools":
                _declare(ctx, call.id, (call.name,))
            state.declared.add(call.name)
        return CallResult(call.id, call.name, text, "refused", reason)


def refusal(
    session: ToolSearchSession,
    name: str,
    call_id: str,
    permitted: Collection[str],
    *,
    blind_call: BlindCallPolicy,
    bridge: bool = False,
) -> tuple[str, RefusalReason]:
    """The refusal of a call to ``name``, which this round does not expose: text and reason.

    No such (permitted) tool, loaded this round, or not loaded yet; under
    ``blind_call == "load"`` a never-loaded tool is loaded into ``session`` for the next round.
    Shared by the middleware and the drop-in client wrapper, so both say exactly the same.
    """
    if name not in permitted or not session.has_tool(name):
        logger.warning("refused call to unknown tool name=%s id=%s", shown_name(name), call_id)
        return no_such_tool(name), "unknown"
    if name in session.loaded_tool_names:
        return LOADED_THIS_ROUND.format(name=name), "loaded_this_round"
    if blind_call == "load":
        # A bare full name is an exact lookup in the core (no select: comma splitting).
        session.search(name)
        if name in session.loaded_tool_names:
            return BLIND_CALL_LOADED.format(name=name), "blind_call_loaded"
    logger.warning("refused call to unloaded tool name=%r id=%s", name, call_id)
    template = NOT_LOADED_YET_BRIDGE if bridge else NOT_LOADED_YET
    return template.format(name=name), "not_loaded"


def _schemas(ctx: AskContext, names: Sequence[str]) -> list[dict[str, Any]]:
    """The catalog schemas of loaded tools (the session loads permitted tools only)."""
    return ctx.toolset.catalog.schemas(n for n in names if n in ctx.permitted)


def _kept_declaration(
    ctx: AskContext, session: ToolSearchSession, kept: Sequence[str], mode: ToolSearchLoading
) -> list[dict[str, Any]]:
    """The messages that show the schemas of the tools kept loaded from earlier asks.

    ``additional_tools``: one declaration. ``bridge``: the ``tool_search`` call that would
    have loaded them (``select:``, an id derived from the names) and its result, with the
    schemas, as a search in this ask would show them.
    """
    if mode == "additional_tools":
        return [additional_tools_message(_schemas(ctx, kept))]
    query = "select:" + ",".join(kept)
    result = session.search(query)  # all already loaded: changes nothing
    digest = hashlib.sha256(query.encode()).hexdigest()[:20]
    call_id = f"call_kept{digest}"
    arguments = json.dumps({"query": query}, ensure_ascii=False, separators=(",", ":"))
    content = bridge_search_result(result.to_dict(), _schemas(ctx, kept))
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": TOOL_SEARCH_NAME, "arguments": arguments},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": content},
    ]


def _declare(ctx: AskContext, call_id: str, names: Sequence[str]) -> None:
    """Queue the ``additional_tools`` message for ``names`` right after ``call_id``'s result."""
    ctx.follow_ups.setdefault(call_id, []).append(additional_tools_message(_schemas(ctx, names)))


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


@dataclass(frozen=True, slots=True)
class ToolSearchPlugin:
    """Creates the tool-search middleware; it reads every setting from the ask's snapshot."""

    name: str = "tool_search"

    def create(self, settings: BotSettings) -> Middleware:
        """A fresh middleware (settings are read per ask, so ``settings`` is unused)."""
        del settings
        return ToolSearchMiddleware()


plugin = ToolSearchPlugin()
"""Registered as ``bot_toolsearch._runtime.tool_search:plugin`` in ``bot_toolsearch.plugins``."""
