"""A door's tool registry, kept in step with ``[tools]`` edits of a hot-reloaded config."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from bot_toolsearch._config.settings import BotSettings, McpServerSettings, ToolsSettings
from bot_toolsearch._tools.registry import ToolRegistry
from bot_toolsearch._tools.tool import Tool

if TYPE_CHECKING:
    from bot_toolsearch._config.reload import ConfigReloader

__all__ = ["Adopt", "RegistryFollower", "ToolsKey", "registry_for", "tools_key"]

logger = logging.getLogger("bot_toolsearch")

ToolsKey = tuple[tuple[Path, ...], tuple[McpServerSettings, ...]]
"""The part of ``[tools]`` a registry is built from: ``(dirs, mcp_servers)``."""


def tools_key(tools: ToolsSettings) -> ToolsKey:
    """``(dirs, mcp_servers)`` of a ``[tools]`` table."""
    return tools.dirs, tools.mcp_servers


def registry_for(
    tools: ToolsSettings, code_tools: Sequence[Tool], *, watch: bool, base_dir: Path | None
) -> ToolRegistry:
    """The registry of a ``[tools]`` table plus code tools.

    ``dirs`` are absolute after loading; ``base_dir`` (the config file's folder) only makes
    source labels short (``folder:tools/notes``).

    Raises:
        ConfigError: an MCP server entry is invalid.
    """
    return ToolRegistry(
        tools.dirs,
        extra_tools=code_tools,
        mcp_servers=tools.mcp_servers,
        watch=watch,
        base_dir=base_dir,
    )


Adopt = Callable[[ToolRegistry], Awaitable[bool]]


class RegistryFollower:
    """Owns the bot's registry and keeps it in step with ``[tools]`` of the live settings.

    The config reloader calls subscribers from its watcher thread; the follower only hands the
    news to the bot's event loop (``call_soon_threadsafe``), where one task at a time reads the
    *latest* snapshot and applies it with ``registry.reconfigure``. So edits are applied in
    order, a burst collapses to its last state, and no ask waits for it. A config that first
    names tool dirs or MCP servers while the bot runs creates the registry (``adopt`` hands it
    to the bot).

    Args:
        settings: the reloader (or fixed settings) the bot reads.
        registry: the registry built from the starting settings, or ``None``.
        code_tools: the bot's code tools, merged into a registry created later.
        adopt: makes the bot use a newly created registry; returns whether it did.
        base_dir: the config file's folder (for a registry created later).
    """

    def __init__(
        self,
        settings: ConfigReloader | BotSettings,
        registry: ToolRegistry | None,
        code_tools: Sequence[Tool],
        adopt: Adopt,
        *,
        base_dir: Path | None = None,
    ) -> None:
        self._base_dir = base_dir
        self._settings = settings
        self._registry = registry
        self._code = tuple(code_tools)
        self._adopt = adopt
        start = self._snapshot()
        self._watch = start.bot.hot_reload
        self._applied: ToolsKey = tools_key(start.tools)
        self._applied_generation = start.generation
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = asyncio.Lock()
        self._synced = asyncio.Condition(self._lock)
        self._tasks: set[asyncio.Task[None]] = set()
        self._undo: Callable[[], None] | None = None
        self._closed = False

    @property
    def registry(self) -> ToolRegistry | None:
        """The registry, once there is one."""
        return self._registry

    async def start(self) -> None:
        """Connect the registry's MCP servers, start its watcher, and begin following."""
        self._loop = asyncio.get_running_loop()
        if self._registry is not None:
            await self._registry.start()
        subscribe = getattr(self._settings, "subscribe", None)
        if subscribe is not None:
            self._undo = subscribe(self._on_reload)
        await self.sync()  # a reload before we subscribed would be missed otherwise

    async def sync(self) -> None:
        """Apply the latest ``[tools]`` dirs and MCP servers to the registry, if they changed."""
        async with self._lock:
            if self._closed:
                return
            settings = self._snapshot()
            key = tools_key(settings.tools)
            if key != self._applied:
                try:
                    await self._apply(settings.tools, key)
                except Exception:
                    logger.exception(
                        "cannot apply [tools] of generation %d; the tools stay as they are",
                        settings.generation,
                    )
                else:
                    self._applied = key
            self._applied_generation = max(self._applied_generation, settings.generation)
            self._synced.notify_all()

    async def wait_synced(self, generation: int, timeout: float = 10.0) -> None:  # noqa: ASYNC109
        """Wait until settings of ``generation`` (or later) have been applied (for tests).

        Raises:
            TimeoutError: not within ``timeout`` seconds.
        """
        async with asyncio.timeout(timeout), self._synced:
            await self._synced.wait_for(lambda: self._applied_generation >= generation)

    async def aclose(self) -> None:
        """Stop following and close the registry (MCP sessions, folder watcher)."""
        self._closed = True
        undo, self._undo = self._undo, None
        if undo is not None:
            undo()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        registry, self._registry = self._registry, None
        if registry is not None:
            await registry.aclose()

    def _snapshot(self) -> BotSettings:
        settings = self._settings
        return settings if isinstance(settings, BotSettings) else settings.snapshot()

    async def _apply(self, tools: ToolsSettings, key: ToolsKey) -> None:
        registry = self._registry
        if registry is None:
            if not (tools.dirs or tools.mcp_servers):
                return
            registry = await asyncio.to_thread(
                registry_for, tools, self._code, watch=self._watch, base_dir=self._base_dir
            )
            await registry.start()
            if not await self._adopt(registry):
                await registry.aclose()
                return
            self._registry = registry
            return
        dirs, servers = self._applied
        await registry.reconfigure(
            dirs=key[0] if key[0] != dirs else None,
            mcp_servers=key[1] if key[1] != servers else None,
        )

    def _on_reload(self, settings: BotSettings) -> None:
        # The reloader's watcher thread: only hand over to the bot's loop.
        del settings  # sync() reads the latest snapshot, whichever reload this was
        loop = self._loop
        if loop is None or self._closed:
            return
        with contextlib.suppress(RuntimeError):  # the loop is closed: the bot is gone
            loop.call_soon_threadsafe(self._spawn)

    def _spawn(self) -> None:
        if self._closed:
            return
        task = asyncio.ensure_future(self.sync())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
