"""Tool search as a middleware: the `ToolSearchProtocol` of each ask adapted to ``ask()``.

Per ask it builds the protocol (`bot_toolsearch._protocol.engine`) from the snapshot and the
prebuilt catalog with the ask's forbidden tools hidden, replays the tools the conversation
keeps loaded, and hands the ask loop its ``call_tool`` unwrapping under ``bridge`` loading.
Per round it sends the protocol's tools and inserts its directory right after the bot's own
system prompt, byte-identical in every round. Per batch of calls it lets the protocol answer
``tool_search`` and refuse every call this round does not expose, and records the stats, the
announcements and the ``additional_tools`` declarations. Off (the full list, no directory, no
virtual tool) when ``tool_search_enabled`` is false or when no deferred tools are left. An
ask that offers the virtual ``tool_search`` leaves a real tool of that name out (not sent, not
callable, not in the directory; one warning per tool set, `bot_toolsearch._core.reserved`);
an ask without tool search sends and runs it as any tool.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from bot_toolsearch._config.settings import BotSettings
from bot_toolsearch._core.prompt import TOOL_SEARCH_NAME
from bot_toolsearch._protocol.calls import CallRequest, CallResult
from bot_toolsearch._protocol.engine import (
    Answer,
    ToolSearchProtocol,
    canonical_query,
    directory_message,
    refusal,
)
from bot_toolsearch._protocol.loading import (
    bridge_search_result,
    search_messages,
    tool_declaration,
)
from bot_toolsearch._services.indexing import index_built
from bot_toolsearch._services.semantic import semantic_ranker
from bot_toolsearch._services.threads import off_loop
from bot_toolsearch._transports.base import ToolDeclaration

from .announce import announce_calls
from .context import AskContext
from .middleware import CallHandler, Middleware, RoundRequest, forward_unanswered

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
    protocol: ToolSearchProtocol
    kept: list[dict[str, Any]] = field(default_factory=list)
    """Under ``bridge`` with ``tool_search_keep_loaded = "conversation"``: the search messages
    that show the kept tools' schemas (they are not in ``tools``)."""
    declarations: list[ToolDeclaration] = field(default_factory=list)
    """Under ``additional_tools``: this ask's declarations so far (the kept tools' first)."""


class ToolSearchMiddleware:
    """The tool-search middleware: the `ToolSearchProtocol` of each ask adapted to the
    pipeline (stats, announcements, declarations in the history); stateless itself, its
    per-ask state lives in the context.

    ``[skills] tool_search_loading`` is read per ask (see `bot_toolsearch._protocol.loading`).
    """

    name = "tool_search"

    def __init__(self) -> None:
        self._fallback_logged: set[int] = set()  # settings generations already logged

    async def start_ask(self, ctx: AskContext) -> None:
        """Build this ask's protocol, or leave tool search off for the ask."""
        skills = ctx.settings.skills
        if not skills.tool_search_enabled:
            return
        # The virtual tool takes the name: a real ``tool_search`` is not this ask's to use
        # (the same frozenset for the same permitted set, so the cached views are shared).
        permitted = ctx.toolset.searchable(ctx.permitted)
        generation = ctx.settings.generation

        def report(level: int, text: str) -> None:
            # A fallback of the settings is logged once per generation.
            if level == logging.WARNING:
                if generation in self._fallback_logged:
                    return
                self._fallback_logged.add(generation)
            logger.log(level, "%s", text)

        protocol = ToolSearchProtocol(
            ctx.toolset.catalog,
            ctx.settings,
            api=ctx.settings.model.api,
            names=ctx.toolset.wire_names(ctx.settings.tools.dot_delimiter, permitted),
            permitted=permitted,
            # The catalog names this ask may not use (the view is cached per permitted set).
            hidden=ctx.toolset.view(permitted).hidden,
            namespaces=ctx.toolset.namespace_descriptions(ctx.settings.tools.namespaces),
            always_loaded=ctx.always_loaded_extra,
            report=report,
            semantic=semantic_ranker(ctx.settings, ctx.toolset.catalog),
        )
        if not protocol.active:
            return  # the full list: a real ``tool_search`` is an ordinary tool then
        if permitted is not ctx.permitted:
            ctx.toolset.reserved.warn()
            ctx.permitted = permitted
        # tool_search_keep_loaded = "conversation": as if searched before round 1, so they
        # follow tool_search in first-call order (the directory is of the deferred set, which
        # loading does not change, so it stays byte-identical from ask to ask).
        kept = [name for name, _ in protocol.replay(ctx.conversation_tools)]
        if protocol.mode == "bridge":
            ctx.unwrap = protocol.unwrap
        state = _AskState(protocol)
        if kept and protocol.mode == "additional_tools":
            state.declarations.append(tool_declaration(protocol.schemas(kept)))
        elif kept and protocol.fixed:
            state.kept = _kept_searches(protocol, kept)
        ctx.state[_AskState] = state

    async def prepare_request(self, ctx: AskContext, request: RoundRequest) -> RoundRequest:
        """Send the protocol's tools and the directory; expose what the protocol exposes."""
        state: _AskState | None = ctx.state.get(_AskState)
        if state is None:
            return request
        protocol = state.protocol
        tools = protocol.round_tools()
        messages = list(request.messages)
        if state.kept:
            # Right before this ask's message: after the earlier turns (a stable prefix), the
            # same bytes in every round of the ask.
            at = max(
                (i for i, m in enumerate(messages) if m.get("role") == "user"),
                default=len(messages),
            )
            messages[at:at] = state.kept
        messages.insert(ctx.system_prompt_count, protocol.directory)
        declarations = (*request.declarations, *state.declarations)
        return replace(
            request,
            messages=messages,
            tools=tools,
            exposed=protocol.exposed,
            declarations=declarations,
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
        # The ask loop unwrapped the call_tool calls already (the history keeps them as sent).
        answer = await off_loop(
            _searches_off_loop(ctx, state),
            functools.partial(state.protocol.answer, unwrap=False, exposed=ctx.exposed),
            calls,
        )
        _record(ctx, state, answer)
        return await forward_unanswered(ctx, calls, answer.results, call_next)

    async def finish_ask(self, ctx: AskContext) -> None:
        """Drop the protocol (the loaded set never outlives its ask)."""
        ctx.state.pop(_AskState, None)


def _searches_off_loop(ctx: AskContext, state: _AskState) -> bool:
    """Whether this ask's searches run in a worker thread: when they may call the embeddings
    endpoint, or would build the keyword index (built ahead at start-up and on each change,
    so only in the moment between a reload and its thread's build, or when the settings
    source cannot announce reloads)."""
    if state.protocol.session.semantic is not None:
        return True
    namespaces = ctx.toolset.namespace_descriptions(ctx.settings.tools.namespaces)
    return not index_built(ctx.toolset.catalog, namespaces)


def _record(ctx: AskContext, state: _AskState, answer: Answer) -> None:
    """The stats of one answer, and its ``additional_tools`` declarations kept for the next
    rounds (each placed right after its call's result)."""
    stats = ctx.stats
    stats.searches += answer.searches
    stats.zero_result_searches += answer.zero_result_searches
    stats.loaded.extend(answer.loaded)
    stats.blind_call_loads += answer.blind_call_loads
    for call_id, names in answer.declared.items():
        state.declarations.append(tool_declaration(state.protocol.schemas(names), call_id))


def _kept_searches(protocol: ToolSearchProtocol, kept: Sequence[str]) -> list[dict[str, Any]]:
    """Under ``bridge``: the messages that show the schemas of the tools kept loaded from
    earlier asks: the ``tool_search`` call that would have loaded them (``select:``, an id
    derived from the names) and its result, with the schemas, as a search in this ask would
    show them.
    """
    query = "select:" + ",".join(kept)
    result = protocol.session.search(query)  # all already loaded: changes nothing
    digest = hashlib.sha256(query.encode()).hexdigest()[:20]
    call_id = f"call_kept{digest}"
    arguments = json.dumps({"query": query}, ensure_ascii=False, separators=(",", ":"))
    content = bridge_search_result(result.to_dict(), protocol.schemas(kept))
    return search_messages([(call_id, arguments, content)])


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
