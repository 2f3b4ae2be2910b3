"""`Bot`: the host runtime's ``ask()`` loop around the middleware pipeline."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import openai

from bot_toolsearch._config.settings import BotSettings
from bot_toolsearch._errors import CatalogError, ConversationStoreError
from bot_toolsearch._services.mode import announce, search_mode
from bot_toolsearch._services.registry_follower import RegistryFollower, registry_for
from bot_toolsearch._tools.registry import ToolRegistry
from bot_toolsearch._tools.source import ToolSource
from bot_toolsearch._tools.tool import Agent, HandlerThreads, Tool
from bot_toolsearch._transports.transport import Transport

from .ask_loop import run_rounds
from .ask_result import AskResult
from .bot_tools import BotTools, StaticTools, ToolSetCache
from .context import AskContext
from .conversations import ConversationHistory, ConversationStore, MemoryConversationStore
from .executor import execute_calls
from .middleware import Middleware, Pipeline
from .plugins import build_middlewares
from .prefetch import run_prefetch
from .toolset import ToolFilter, ToolSet, permitted_names
from .turns import record_turn, replay_turns
from .warm import prepare_toolset

if TYPE_CHECKING:
    from bot_toolsearch._config.reload import ConfigReloader

__all__ = ["Bot", "SettingsSource"]

logger = logging.getLogger("bot_toolsearch")
_FROM_CONFIG: contextvars.ContextVar[Path | None] = contextvars.ContextVar(
    "bot_toolsearch_from_config", default=None
)
"""The file `Bot.from_config` is building a bot from (named in the start-up mode line)."""
permissions_logger = logging.getLogger("bot_toolsearch.permissions")
"""INFO once per ask: how many tools the permissions hid (``--trace`` shows it)."""


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
        conversations: where ``ask(..., conversation=...)`` keeps conversations. By default a
            `Bot` built in code keeps them in memory (lost on exit; pass a
            ``SQLiteConversationStore`` to keep them), and ``from_config`` opens
            ``[conversations] store`` (SQLite by default). A store you pass is yours to close.

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
        conversations: ConversationStore | None = None,
    ) -> None:
        self._source = settings
        self._agents = tuple(agents)
        self._explicit = tuple(middlewares) if middlewares is not None else None
        # The search index is built with each tool set (and again on a reload that changes
        # what it indexes), never on the first search of an ask.
        if isinstance(tools, ToolSource):
            self._tools: BotTools = ToolSetCache(tools, self._agents, self._prepare)
        else:
            self._tools = StaticTools(ToolSet.build(tools, agents))
            self._prepare(self._tools.current())
        self._follower: RegistryFollower | None = None
        self._started = False
        self._replaced = False
        self._start_lock = asyncio.Lock()
        self._client = client
        self._owned: dict[tuple[object, ...], openai.AsyncOpenAI] = {}
        self._tool_filter = tool_filter
        self._pipeline: tuple[object, Pipeline] | None = None
        self._reloader: ConfigReloader | None = None
        # Sync handlers run here, never on the event loop's shared default pool.
        self._threads = HandlerThreads()
        self.instructions = instructions
        self._store: ConversationStore = conversations or MemoryConversationStore()
        self._owns_store = conversations is None
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        self._pipeline_for(self._snapshot())  # fail fast on an unknown plugin
        path = getattr(settings, "path", None) or _FROM_CONFIG.get()  # the config file
        self._mode_source = f"config {path}" if path is not None else "settings"
        self._mode = search_mode(
            self._snapshot(), source=self._mode_source, plugins=self._explicit is None
        )
        announce("Bot", self._mode)
        subscribe = getattr(settings, "subscribe", None)  # a ConfigReloader
        self._unsubscribe: Callable[[], None] | None = (
            subscribe(self._on_reload) if callable(subscribe) else None
        )

    @classmethod
    def from_config(
        cls,
        path: str | Path,
        tools: Sequence[Tool] = (),
        agents: Sequence[Agent] = (),
        **kwargs: Any,
    ) -> Bot:
        """A bot whose settings come from ``config.toml`` at ``path``.

        With ``[bot] hot_reload = true`` (the default) the file is watched and each ask uses
        the latest valid settings. With ``[tools] dirs`` or ``[[tools.mcp_servers]]``, the bot's
        tools come from a `ToolRegistry` over those sources plus ``tools`` (code tools win
        name collisions); it watches the tool folders when ``hot_reload`` is on, and follows
        edits of ``[tools]``. Tool folders are read right away; MCP servers connect in
        `start`, which the first ``ask()`` calls if you have not. Call
        ``await bot.aclose()`` (or use ``async with``) to stop watching and disconnect.
        Conversations are kept in ``[conversations] store`` (SQLite next to the config file by
        default, opened on first use) unless you pass ``conversations=``.

        Raises:
            ConfigError: the file is missing or invalid.
            CatalogError: two code tools share a name, or a registry tool uses a built-in's or
                an agent's name.
        """
        from bot_toolsearch._config.file import load_settings

        settings = load_settings(path)
        base_dir = Path(path).resolve().parent
        source: BotSettings | ConfigReloader = settings
        if settings.bot.hot_reload:
            from bot_toolsearch._config.reload import ConfigReloader

            source = ConfigReloader(path)
            settings = source.snapshot()
        if "conversations" not in kwargs:
            from .conversation_store import open_store

            kwargs["conversations"] = open_store(settings.conversations.store, base_dir)
            owns_store = True
        else:
            owns_store = False
        registry = None
        if settings.tools.dirs or settings.tools.mcp_servers:
            ToolSet.build(tools, agents)  # the same developer errors as without a registry
            registry = registry_for(
                settings.tools, tools, watch=settings.bot.hot_reload, base_dir=base_dir
            )
        token = _FROM_CONFIG.set(Path(path))
        try:
            bot = cls(source, registry if registry is not None else tools, agents, **kwargs)
        finally:
            _FROM_CONFIG.reset(token)
        bot._owns_store = owns_store
        if registry is not None or not isinstance(source, BotSettings):
            bot._follower = RegistryFollower(source, registry, tools, bot._adopt, base_dir=base_dir)
        if not isinstance(source, BotSettings):
            source.start()
            bot._reloader = source
        return bot

    @property
    def toolset(self) -> ToolSet:
        """The current tool set (built once per tool-set change, never per ask)."""
        return self._tools.current()

    @property
    def reloader(self) -> ConfigReloader | None:
        """The `ConfigReloader` `from_config` started (``[bot] hot_reload``), until `aclose`."""
        return self._reloader

    @property
    def settings(self) -> BotSettings:
        """The current settings snapshot (what the next ask will read)."""
        return self._snapshot()

    @property
    def conversations(self) -> ConversationStore:
        """Where ``ask(..., conversation=...)`` keeps conversations."""
        return self._store

    @property
    def registry(self) -> ToolRegistry | None:
        """The registry `from_config` built from ``[tools]``, if any (the bot owns it)."""
        return self._follower.registry if self._follower is not None else None

    def set_tools(self, tools: Sequence[Tool] = (), agents: Sequence[Agent] = ()) -> None:
        """Replace the tools and agents; asks already running keep the old set.

        The bot stops reading its registry (if it has one; `aclose` still closes it).
        """
        self._agents = tuple(agents)
        toolset = ToolSet.build(tools, agents)
        self._prepare(toolset)
        previous, self._tools = self._tools, StaticTools(toolset)
        previous.close()
        self._replaced = True

    async def start(self) -> None:
        """Connect the configured MCP servers, watch tool folders and follow ``[tools]`` edits.

        Optional: the first ``ask()`` calls it. Call it yourself to connect before the first
        message. A server that fails to connect costs only its own tools (see
        ``bot.registry.mcp_status``). Calling it again does nothing.
        """
        if self._started:
            return
        async with self._start_lock:
            if self._started:
                return
            if self._follower is not None:
                await self._follower.start()
            self._started = True

    async def __aenter__(self) -> Bot:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def _adopt(self, registry: ToolRegistry) -> bool:
        # A registry created after a [tools] edit; set_tools() in the meantime wins.
        if self._replaced:
            return False
        try:
            tools = await asyncio.to_thread(ToolSetCache, registry, self._agents, self._prepare)
        except CatalogError:
            logger.exception("the new tool registry cannot be used; keeping the current tools")
            return False
        previous, self._tools = self._tools, tools
        previous.close()
        return True

    def _prepare(self, toolset: ToolSet, settings: BotSettings | None = None) -> None:
        """Build what the first tool search of an ask under ``settings`` (the current ones by
        default) would otherwise build: the keyword index, with the namespace descriptions."""
        settings = settings if settings is not None else self._snapshot()
        if self._explicit is None and "tool_search" not in settings.plugins.enabled:
            return  # no tool-search middleware, nothing searches
        prepare_toolset(toolset, settings)

    def _on_reload(self, settings: BotSettings) -> None:
        # The reloader's watcher thread: an edit of [tools.namespaces] or one that turns tool
        # search on needs another index; asks already running keep their snapshot.
        self._prepare(self._tools.current(), settings)
        mode = search_mode(settings, source=self._mode_source, plugins=self._explicit is None)
        if mode.on != self._mode.on:  # said again only when the edit switches it
            self._mode = mode
            announce("Bot", mode)

    async def ask(
        self,
        text: str,
        *,
        conversation: str | None = None,
        context: Mapping[str, Any] | None = None,
    ) -> AskResult:
        """Answer one user message, on its own or as the next turn of a conversation.

        Args:
            text: the user's message.
            conversation: any string naming a conversation. The ask then sees its earlier
                turns (within ``[conversations] max_turns`` and ``max_tokens``), and appends
                its own turn when it succeeds; a failed ask leaves the conversation as it was.
                Asks in one conversation run one at a time; other conversations in parallel.
                ``None``: a single-shot ask that reads and writes no history.
            context: per-ask data for the permission hook and the runtime: ``sender`` (a
                callable that receives every outgoing text, sync or async),
                ``on_round`` (a callable that receives each `RoundTrace` as soon as its round
                is over, sync or async) and ``easter_egg_silent``.

        Returns:
            The reply, announcements, per-round trace and stats.

        Raises:
            openai.APIError: a model request failed.
            ConversationStoreError: the conversation could not be read (nothing was asked) or
                its new turn could not be written (``.result`` holds the reply).
        """
        if not self._started:
            await self.start()
        if conversation is None:
            return await self._ask(text, context, self._snapshot(), None)
        if not isinstance(conversation, str):
            raise TypeError(f"conversation must be a string, got {type(conversation).__name__}")
        async with self._lock_for(conversation):
            settings = self._snapshot()
            limits = settings.conversations
            history = await self._store.load(conversation, max_turns=limits.max_turns)
            result = await self._ask(text, context, settings, history)
            try:
                await self._store.append(
                    conversation, record_turn(text, result.reply, result.trace)
                )
            except ConversationStoreError as exc:
                exc.result = result
                raise
            return result

    async def reset_conversation(self, conversation: str) -> None:
        """Forget a conversation (waits for an ask running in it to finish first).

        Raises:
            ConversationStoreError: the store could not be written.
        """
        async with self._lock_for(conversation):
            await self._store.reset(conversation)

    def _lock_for(self, conversation: str) -> asyncio.Lock:
        # Weak values: a lock lives while an ask holds or waits for it, then goes.
        lock = self._locks.get(conversation)
        if lock is None:
            lock = asyncio.Lock()
            self._locks[conversation] = lock
        return lock

    async def _ask(
        self,
        text: str,
        context: Mapping[str, Any] | None,
        settings: BotSettings,
        past: ConversationHistory | None,
    ) -> AskResult:
        pipeline = self._pipeline_for(settings)
        toolset = await self._tools.acurrent()  # one tool-set read per ask, like the settings
        skills = settings.skills
        toolset.warn_unknown("tool_search_always_loaded", skills.tool_search_always_loaded)
        toolset.warn_unknown("prefetch_tools", skills.prefetch_tools)
        ctx_map: Mapping[str, Any] = dict(context or {})
        permitted = await permitted_names(toolset, settings, ctx_map, self._tool_filter)
        transport = Transport(self._client_for(settings), settings.model)
        ctx = AskContext(
            settings, ctx_map, toolset, permitted, transport=transport, threads=self._threads
        )
        prefetch = await run_prefetch(ctx)
        view = toolset.view(ctx.permitted)  # cached per permitted set
        if view.hidden:  # the count only: hidden names reach neither the model nor the log
            permissions_logger.info(
                "permissions ([tools] allow/deny, tool_filter) hid %d of %d tools for this ask",
                len(view.hidden),
                len(toolset.catalog),
            )
        history: list[dict[str, Any]] = []
        if self.instructions:
            history.append({"role": "system", "content": self.instructions})
        ctx.system_prompt_count = len(history)
        if past is not None:
            # Right after the prompt (and the directory), before this ask's prefetch results:
            # earlier turns stay a stable, cacheable prefix. Repaired to this ask's permissions.
            limits = settings.conversations
            history += replay_turns(past, permitted=ctx.permitted, max_tokens=limits.max_tokens)
            if skills.tool_search_keep_loaded == "conversation":
                ctx.conversation_tools = tuple(n for n in past.tools_called if n in ctx.permitted)
        if prefetch.message is not None:
            history.append({"role": "system", "content": prefetch.message})
        history.append({"role": "user", "content": text})
        await pipeline.start_ask(ctx)
        try:
            out = await run_rounds(ctx, pipeline, transport, history, view.schemas)
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
        """Stop watching the config, close the registry `from_config` built, and the clients
        the bot built. Asks after it still work, on the last settings and tools."""
        unsubscribe, self._unsubscribe = self._unsubscribe, None
        if unsubscribe is not None:
            unsubscribe()
        reloader, self._reloader = self._reloader, None
        if reloader is not None:
            # stop() joins the watcher thread; keep the event loop free meanwhile.
            await asyncio.to_thread(reloader.stop)
        follower, self._follower = self._follower, None
        if follower is not None:
            await follower.aclose()
        self._started = True  # nothing left to start
        owned, self._owned = list(self._owned.values()), {}
        for client in owned:
            await client.close()
        if self._owns_store:
            await self._store.aclose()

    def _snapshot(self) -> BotSettings:
        source = self._source
        return source if isinstance(source, BotSettings) else source.snapshot()

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
