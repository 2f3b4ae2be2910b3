"""Tool search as a middleware: the core's session adapted to the ``ask()`` pipeline.

Per ask it builds a `ToolSearchSession` from the prebuilt catalog with the ask's forbidden
tools hidden. Per round it sends the session's tools (each round's list extends the previous
one) and inserts the deferred-tool directory with the rules as one system message right after
the bot's own system prompt, byte-identical in every round. Per batch of calls it answers
``tool_search`` itself, in call order, and refuses every call to a tool this round does not
expose, saying why: not loaded yet, loaded this round, or no such tool (never hinting that a
forbidden tool exists). Off (the full list, no directory, no virtual tool) when
``tool_search_enabled`` is false, when the ask may use a real tool named ``tool_search``
(logged as an error), or when no deferred tools are left.
"""

from __future__ import annotations

import functools
import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from bot_toolsearch._config.settings import BotSettings
from bot_toolsearch._core.directory import DeferredDirectory
from bot_toolsearch._core.prompt import (
    GROUPED_DIRECTORY_RULES,
    TOOL_SEARCH_NAME,
    TOOL_SEARCH_RULES,
    render_deferred_tools,
)
from bot_toolsearch._core.session import ToolSearchSession
from bot_toolsearch._transports.names import WireNames

from .announce import announce_calls
from .calls import CallRequest, CallResult
from .context import AskContext
from .messages import (
    BLIND_CALL_LOADED,
    LOADED_THIS_ROUND,
    NOT_LOADED_YET,
    no_such_tool,
    shown_name,
)
from .middleware import CallHandler, Middleware, RoundRequest, forward_unanswered

__all__ = ["ToolSearchMiddleware", "ToolSearchPlugin", "directory_message", "plugin"]

logger = logging.getLogger("bot_toolsearch")

_SELECT = re.compile(r"^\s*select\s*:(.*)$", re.IGNORECASE | re.DOTALL)
_SELECT_SEPARATORS = re.compile(r"[\s,]+")


@dataclass(slots=True)
class _AskState:
    session: ToolSearchSession
    directory: Mapping[str, str]
    names: WireNames


def directory_message(deferred: tuple[str, ...] | DeferredDirectory) -> Mapping[str, str]:
    """The directory system message: block, blank line, rules (plus the grouped-directory
    rules when the block is grouped).

    Given a session's `DeferredDirectory` (the budgeted block), it is cached by the block's
    text, which the catalog hands out as the same string object to every ask with the same
    permitted set and settings, so the lookup costs nothing proportional to the catalog.
    Given a tuple of names, the block lists them all.

    Cached, so asks with the same catalog and settings send the very same bytes. The catalog
    hands the same tuple to every ask with the same excluded tools, so the usual lookup is by
    identity and costs nothing proportional to the catalog.
    """
    if isinstance(deferred, DeferredDirectory):
        return _budgeted_message(deferred.text, deferred.grouped)
    hit = _BY_IDENTITY.get(id(deferred))
    if hit is not None and hit[0] is deferred:
        return hit[1]
    message = _directory_message(deferred)
    if len(_BY_IDENTITY) >= _CACHE_SIZE:
        _BY_IDENTITY.pop(next(iter(_BY_IDENTITY)), None)
    # The tuple is kept alive with its message, so its id cannot be reused meanwhile.
    _BY_IDENTITY[id(deferred)] = (deferred, message)
    return message


_CACHE_SIZE = 32
_BY_IDENTITY: dict[int, tuple[tuple[str, ...], Mapping[str, str]]] = {}


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _directory_message(deferred: tuple[str, ...]) -> Mapping[str, str]:
    content = render_deferred_tools(deferred, budget=0) + "\n\n" + TOOL_SEARCH_RULES
    return MappingProxyType({"role": "system", "content": content})


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _budgeted_message(block: str, grouped: bool) -> Mapping[str, str]:
    rules = f"{TOOL_SEARCH_RULES} {GROUPED_DIRECTORY_RULES}" if grouped else TOOL_SEARCH_RULES
    return MappingProxyType({"role": "system", "content": f"{block}\n\n{rules}"})


class ToolSearchMiddleware:
    """The tool-search middleware; stateless itself, its per-ask state lives in the context."""

    name = "tool_search"

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
        )
        if not session.deferred_tool_names:
            return
        names = ctx.toolset.wire_names(ctx.settings.tools.dot_delimiter)
        ctx.state[_AskState] = _AskState(session, directory_message(session.directory), names)

    async def prepare_request(self, ctx: AskContext, request: RoundRequest) -> RoundRequest:
        """Send the session's tools and the directory; expose what the session exposes."""
        state: _AskState | None = ctx.state.get(_AskState)
        if state is None:
            return request
        tools = state.session.request_tools()
        messages = list(request.messages)
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
                answered[i] = self._search(ctx, state, call)
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
                arguments["query"] = _canonical_query(query, state.names, ctx.permitted)
        content = state.session.execute(arguments)
        stats = ctx.stats
        stats.searches += 1
        try:
            outcome = json.loads(content)
        except ValueError:  # the core always returns JSON; stay safe if it ever does not
            outcome = {}
        loaded = outcome.get("loaded") or []
        if not loaded and not outcome.get("already_loaded"):
            stats.zero_result_searches += 1
        stats.loaded.extend(str(name) for name in loaded)
        return CallResult(call.id, call.name, content, "answered")

    def _refuse(self, ctx: AskContext, state: _AskState, call: CallRequest) -> CallResult:
        session, name = state.session, call.name
        if name not in ctx.permitted or not session.has_tool(name):
            logger.warning("refused call to unknown tool name=%s id=%s", shown_name(name), call.id)
            text = no_such_tool(name)
            return CallResult(call.id, name, text, "refused", "unknown")
        if name in session.loaded_tool_names:
            text = LOADED_THIS_ROUND.format(name=name)
            return CallResult(call.id, name, text, "refused", "loaded_this_round")
        if ctx.settings.skills.tool_search_blind_call == "load":
            # A bare full name is an exact lookup in the core (no select: comma splitting).
            session.search(name)
            if name in session.loaded_tool_names:
                ctx.stats.blind_call_loads += 1
                ctx.stats.loaded.append(name)
                text = BLIND_CALL_LOADED.format(name=name)
                return CallResult(call.id, name, text, "refused", "blind_call_loaded")
        logger.warning("refused call to unloaded tool name=%r id=%s", name, call.id)
        text = NOT_LOADED_YET.format(name=name)
        return CallResult(call.id, name, text, "refused", "not_loaded")


def _canonical_query(query: str, names: WireNames, permitted: frozenset[str]) -> str:
    """``query`` with wire spellings of permitted tools turned canonical (``select:`` items or
    a bare full name); keyword queries pass unchanged. Forbidden names keep the model's
    spelling, so the result cannot reveal that they decode to a real tool."""

    def canonical(item: str) -> str:
        name = names.to_canonical(item)
        return name if name is not None and name in permitted else item

    match = _SELECT.match(query)
    if match is None:
        stripped = query.strip()
        mapped = canonical(stripped)
        return mapped if mapped != stripped else query
    items = [item for item in _SELECT_SEPARATORS.split(match.group(1)) if item]
    return "select:" + ",".join(canonical(item) for item in items)


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
