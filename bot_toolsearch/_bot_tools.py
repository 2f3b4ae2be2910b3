"""The `Bot`'s tools over time: one `ToolSet` per tool snapshot, and a registry that follows
``[tools]`` edits of a hot-reloaded config (both kept off the ask path)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ._errors import CatalogError
from ._registry import ToolRegistry
from ._settings import BotSettings, McpServerSettings, ToolsSettings
from ._tool_source import ToolSetSnapshot, ToolSource
from ._tools import Agent, Tool
from ._toolset import ToolSet

if TYPE_CHECKING:
    from ._reload import ConfigReloader

__all__ = [
    "RegistryFollower",
    "StaticTools",
    "ToolSetCache",
    "ToolsKey",
    "registry_for",
    "tools_key",
]

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


class BotTools(Protocol):
    """Where an ask gets its tool set from."""

    def current(self) -> ToolSet:
        """The current tool set (may build it; prefer `acurrent` on the event loop)."""
        ...

    async def acurrent(self) -> ToolSet:
        """The current tool set, built in a worker thread if the source has just swapped."""
        ...

    def close(self) -> None:
        """Stop listening to the source."""
        ...


class StaticTools:
    """Tools given in code: one tool set for the bot's life."""

    def __init__(self, toolset: ToolSet) -> None:
        self._toolset = toolset

    def current(self) -> ToolSet:
        """The tool set."""
        return self._toolset

    async def acurrent(self) -> ToolSet:
        """The tool set."""
        return self._toolset

    def close(self) -> None:
        """Nothing to stop."""


class ToolSetCache:
    """One `ToolSet` per snapshot of a `ToolSource`; a snapshot that cannot form one is refused.

    A `ToolRegistry` announces each swap, and the tool set is built right then in the
    swapping thread, so the next ask only reads a reference. A snapshot whose tools clash with
    the host's built-ins or the agents is logged once and refused: asks keep the last good
    tool set (its `Tool` objects included) until a good snapshot arrives.

    Raises:
        CatalogError: the source's first snapshot cannot form a tool set.
    """

    def __init__(self, source: ToolSource, agents: Sequence[Agent]) -> None:
        self._source = source
        self._agents = tuple(agents)
        self._lock = threading.Lock()  # one build at a time; swaps in order
        snapshot = source.snapshot()
        self._current = (snapshot, ToolSet.from_snapshot(snapshot, self._agents))
        self._rejected: ToolSetSnapshot | None = None
        self._undo: Callable[[], None] | None = None
        if isinstance(source, ToolRegistry):
            self._undo = source.subscribe(self._on_swap)

    def current(self) -> ToolSet:
        """The tool set of the source's current snapshot (or the last good one)."""
        snapshot = self._source.snapshot()
        if self._current[0] is snapshot or snapshot is self._rejected:
            return self._current[1]
        return self._install(snapshot)

    async def acurrent(self) -> ToolSet:
        """As `current`, building in a worker thread if the swap has not been handled yet."""
        snapshot = self._source.snapshot()
        if self._current[0] is snapshot or snapshot is self._rejected:
            return self._current[1]
        return await asyncio.to_thread(self._install, snapshot)

    def close(self) -> None:
        """Stop listening to the registry."""
        undo, self._undo = self._undo, None
        if undo is not None:
            undo()

    def _on_swap(self, snapshot: ToolSetSnapshot) -> None:
        self._install(snapshot, only_if_current=True)

    def _install(self, snapshot: ToolSetSnapshot, *, only_if_current: bool = False) -> ToolSet:
        with self._lock:
            kept = self._current
            if kept[0] is snapshot or snapshot is self._rejected:
                return kept[1]
            if only_if_current and snapshot is not self._source.snapshot():
                return kept[1]  # a newer swap has happened; its own call installs it
            try:
                toolset = ToolSet.from_snapshot(snapshot, self._agents)
            except CatalogError as exc:
                self._rejected = snapshot
                logger.error(
                    "tool snapshot generation %d refused: %s; asks keep generation %d",
                    snapshot.generation,
                    exc,
                    kept[0].generation,
                )
                return kept[1]
            self._current = (snapshot, toolset)
            return toolset


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
