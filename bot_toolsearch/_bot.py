"""`Bot`: the host runtime's ``ask()`` loop around the middleware pipeline."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import openai

from ._ask_loop import run_rounds
from ._context import AskContext
from ._executor import execute_calls
from ._middleware import Middleware, Pipeline
from ._plugins import build_middlewares
from ._prefetch import run_prefetch
from ._results import AskResult
from ._settings import BotSettings
from ._tool_source import ToolSetSnapshot, ToolSource
from ._tools import Agent, Tool
from ._toolset import ToolFilter, ToolSet, permitted_names
from ._transport import Transport

if TYPE_CHECKING:
    from ._reload import ConfigReloader

__all__ = ["Bot", "SettingsSource"]

logger = logging.getLogger("bot_toolsearch")


class SettingsSource(Protocol):
    """Anything that hands out the current settings snapshot (e.g. a ``ConfigReloader``)."""

    def snapshot(self) -> BotSettings:
        """The current snapshot; called exactly once per ask."""
        ...


class Bot:
    """A chat bot's "main AI": ``ask()`` runs model rounds and tool calls until done.

    The host registers ``send_message`` (``text``; appends to the reply) and ``end`` (finishes
    the ask). Tool search and other middlewares come from ``[plugins] enabled``.

    Args:
        settings: a `BotSettings`, or an object with ``snapshot() -> BotSettings`` (read once
            per ask, so a reload only affects later asks).
        tools: the bot's tools, or a `ToolSource` (e.g. a ``ToolRegistry``) whose snapshot
            each ask reads once: a registry reload only affects later asks.
        agents: sub-agents, each offered to the main AI as one tool.
        client: the ``openai.AsyncOpenAI`` to use; by default one is built from ``[model]``
            (``None`` values fall back to ``OPENAI_BASE_URL``/``OPENAI_API_KEY``). A client
            you pass is yours to close.
        tool_filter: ``tool_filter(context, names) -> allowed names`` (sync or async), the
            per-ask permission hook, applied before ``[tools] allow``/``deny``.
        middlewares: use exactly these middlewares (outermost first) instead of building them
            from ``[plugins] enabled``.
        instructions: the bot's own system prompt.

    Raises:
        CatalogError: two tools share a name.
        ConfigError: ``[plugins] enabled`` names a plugin that is not installed.
    """

    def __init__(
        self,
        settings: BotSettings | SettingsSource,
        tools: Sequence[Tool] | ToolSource = (),
        agents: Sequence[Agent] = (),
        *,
        client: openai.AsyncOpenAI | None = None,
        tool_filter: ToolFilter | None = None,
        middlewares: Sequence[Middleware] | None = None,
        instructions: str = "",
    ) -> None:
        self._source = settings
        self._agents = tuple(agents)
        self._tool_source: ToolSource | None = None
        self._from_snapshot: tuple[ToolSetSnapshot, ToolSet] | None = None
        if isinstance(tools, ToolSource):
            self._tool_source = tools
            self._toolset = self._toolset_of(tools.snapshot())
        else:
            self._toolset = ToolSet.build(tools, agents)
        self._client = client
        self._owned: dict[tuple[object, ...], openai.AsyncOpenAI] = {}
        self._tool_filter = tool_filter
        self._explicit = tuple(middlewares) if middlewares is not None else None
        self._pipeline: tuple[object, Pipeline] | None = None
        self._reloader: ConfigReloader | None = None
        self.instructions = instructions
        self._pipeline_for(self._snapshot())  # fail fast on an unknown plugin

    @classmethod
    def from_config(
        cls,
        path: str | Path,
        tools: Sequence[Tool] = (),
        agents: Sequence[Agent] = (),
        **kwargs: Any,
    ) -> Bot:
        """A bot whose settings come from ``config.toml`` at ``path``.

        With ``[bot] hot_reload = true`` the file is watched and each ask uses the latest
        valid settings; call ``await bot.aclose()`` to stop watching.

        Raises:
            ConfigError: the file is missing or invalid.
        """
        from ._config_file import load_settings

        settings = load_settings(path)
        if not settings.bot.hot_reload:
            return cls(settings, tools, agents, **kwargs)
        from ._reload import ConfigReloader

        reloader = ConfigReloader(path)
        bot = cls(reloader, tools, agents, **kwargs)
        reloader.start()
        bot._reloader = reloader
        return bot

    @property
    def toolset(self) -> ToolSet:
        """The current tool set (the catalog is built once per tool-set change)."""
        if self._tool_source is not None:
            return self._toolset_of(self._tool_source.snapshot())
        return self._toolset

    def set_tools(self, tools: Sequence[Tool] = (), agents: Sequence[Agent] = ()) -> None:
        """Replace the tools and agents; asks already running keep the old set."""
        self._tool_source, self._from_snapshot = None, None
        self._agents = tuple(agents)
        self._toolset = ToolSet.build(tools, agents)

    def _toolset_of(self, snapshot: ToolSetSnapshot) -> ToolSet:
        # One ToolSet (and catalog) per registry snapshot, never per ask.
        cached = self._from_snapshot
        if cached is not None and cached[0] is snapshot:
            return cached[1]
        toolset = ToolSet.build(tuple(snapshot.tools.values()), self._agents)
        self._from_snapshot = (snapshot, toolset)
        return toolset

    async def ask(self, text: str, *, context: Mapping[str, Any] | None = None) -> AskResult:
        """Answer one user message.

        Args:
            text: the user's message.
            context: per-ask data for the permission hook and the runtime: ``sender`` (a
                callable that receives every outgoing text, sync or async) and
                ``easter_egg_silent``.

        Returns:
            The reply, announcements, per-round trace and stats.

        Raises:
            openai.APIError: a model request failed.
        """
        settings = self._snapshot()
        pipeline = self._pipeline_for(settings)
        toolset = self.toolset  # one tool-set read per ask, like the settings
        ctx_map: Mapping[str, Any] = dict(context or {})
        permitted = await permitted_names(toolset, settings, ctx_map, self._tool_filter)
        transport = Transport(self._client_for(settings), settings.model)
        ctx = AskContext(settings, ctx_map, toolset, permitted, transport=transport)
        prefetch = await run_prefetch(ctx)
        if len(ctx.permitted) != len(toolset.entries):
            ctx.hidden = tuple(n for n in toolset.catalog.names if n not in ctx.permitted)
        history: list[dict[str, Any]] = []
        if self.instructions:
            history.append({"role": "system", "content": self.instructions})
        ctx.system_prompt_count = len(history)
        if prefetch.message is not None:
            history.append({"role": "system", "content": prefetch.message})
        history.append({"role": "user", "content": text})
        base_tools = _filtered_schemas(toolset, ctx.permitted)
        await pipeline.start_ask(ctx)
        try:
            out = await run_rounds(ctx, pipeline, transport, history, base_tools)
        finally:
            await pipeline.finish_ask(ctx)
        replies = [*ctx.sent_messages, *([out.final_text] if out.final_text else [])]
        return AskResult(
            reply="\n".join(replies),
            rounds=len(out.trace),
            finish_reason=out.finish,
            announcements=tuple(ctx.announcements),
            outbox=tuple(ctx.outbox),
            trace=tuple(out.trace),
            stats=ctx.stats.freeze(),
            settings_generation=settings.generation,
        )

    async def aclose(self) -> None:
        """Close the clients the bot built and stop watching the config file, if it does."""
        owned, self._owned = list(self._owned.values()), {}
        for client in owned:
            await client.close()
        reloader, self._reloader = self._reloader, None
        if reloader is not None:
            # stop() joins the watcher thread; keep the event loop free meanwhile.
            await asyncio.to_thread(reloader.stop)

    def _snapshot(self) -> BotSettings:
        source = self._source
        if isinstance(source, BotSettings):
            return source
        return source.snapshot()

    def _pipeline_for(self, settings: BotSettings) -> Pipeline:
        key = (settings.generation, settings.plugins.enabled)
        cached = self._pipeline
        if cached is not None and (self._explicit is not None or cached[0] == key):
            return cached[1]
        if self._explicit is not None:
            middlewares: Sequence[Middleware] = self._explicit
        else:
            try:
                middlewares = build_middlewares(settings)
            except Exception:
                if cached is None:
                    raise
                logger.exception("cannot build the plugin pipeline; keeping the previous one")
                return cached[1]
        pipeline = Pipeline(middlewares, execute_calls)
        self._pipeline = (key, pipeline)
        return pipeline

    def _client_for(self, settings: BotSettings) -> openai.AsyncOpenAI:
        if self._client is not None:
            return self._client
        model = settings.model
        key = (model.base_url, model.api_key)
        client = self._owned.get(key)
        if client is None:
            client = openai.AsyncOpenAI(base_url=model.base_url, api_key=model.api_key)
            self._owned[key] = client
        return client


def _filtered_schemas(toolset: ToolSet, permitted: frozenset[str]) -> Sequence[Mapping[str, Any]]:
    if len(permitted) == len(toolset.entries):
        return toolset.schemas
    return tuple(s for n, s in zip(toolset.entries, toolset.schemas, strict=True) if n in permitted)
