"""`ToolRegistry`: code tools, tool folders and MCP servers merged into swappable snapshots.

Every change — a tool folder added, removed or edited, an MCP server becoming ready or failing,
a `reconfigure` — rebuilds the merged tool list *off the ask path* (in the watcher's thread or
an executor) and swaps one reference. A new snapshot (new ``generation``) is published only when
something an ask can observe changed: the schemas (the ``fingerprint``; the `ToolCatalog` is
rebuilt only then) or a handler (an edited ``handler.py``, a replaced MCP connection).

Merge order and collisions: code tools first, then tool folders (directory order, then path
order), then MCP servers (configuration order, then the server's order). A later tool whose
name is already taken is skipped with one warning. A tool named ``tool_search`` (a code tool
or a tool folder; MCP tools are always ``server.tool``, so they never take the name) is kept
like any other: the doors apply one rule to it (`bot_toolsearch._core.reserved`), left out
with one warning while the virtual search tool is offered, an ordinary tool while tool search
is off.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from bot_toolsearch._errors import ConfigError

from .folders import FolderTool, ScanWarnings, folder_namespaces, scan_tool_dirs
from .mcp import MCPServerConnection
from .mcp_config import MCPServerConfig
from .source import CODE_SOURCE, ToolSetSnapshot, fingerprint
from .tool import Tool

__all__ = ["ToolRegistry"]

log = logging.getLogger("bot_toolsearch.registry")

_IGNORED_PARTS = frozenset({"__pycache__", ".git"})
Subscriber = Callable[[ToolSetSnapshot], None]


def _coerce_servers(entries: Iterable[object]) -> tuple[MCPServerConfig, ...]:
    configs = tuple(MCPServerConfig.coerce(entry) for entry in entries)
    names = [c.name for c in configs]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigError(
            f"MCP server name(s) used more than once: {', '.join(duplicates)}",
            key="tools.mcp_servers",
        )
    return configs


class ToolRegistry:
    """The bot's tools from every source, as a `ToolSource` of immutable snapshots.

    Folder tools are available right after construction; MCP tools after ``await start()``.

    Args:
        dirs: tools directories (``[tools] dirs``); relative ones resolve against ``base_dir``.
        extra_tools: tools defined in code; they win every name collision. One named
            ``tool_search`` is kept (left out while tool search offers the virtual one).
        mcp_servers: ``[[tools.mcp_servers]]`` entries (`MCPServerConfig`, mappings, or settings
            models with the same fields).
        watch: watch ``dirs`` recursively after ``start()`` and reload on changes.
        debounce: seconds of quiet before a burst of file changes triggers one reload.
        base_dir: what relative ``dirs`` are relative to (default: the working directory).
        mcp_backoff: ``(first, maximum)`` seconds between MCP reconnect attempts.

    Raises:
        ConfigError: an MCP server entry is invalid.
    """

    def __init__(
        self,
        dirs: Sequence[str | Path] = (),
        *,
        extra_tools: Iterable[Tool] = (),
        mcp_servers: Iterable[object] = (),
        watch: bool = False,
        debounce: float = 0.2,
        base_dir: str | Path | None = None,
        mcp_backoff: tuple[float, float] = (1.0, 60.0),
    ) -> None:
        self._base = Path(base_dir) if base_dir is not None else None
        self._code = tuple(extra_tools)
        self._mcp_configs = _coerce_servers(mcp_servers)
        self._watch = watch
        self._debounce = debounce
        self._backoff = mcp_backoff
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._subscribers: list[Subscriber] = []
        self._warned: set[tuple[str, str]] = set()
        self._connections: dict[str, MCPServerConnection] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._watcher: Any = None
        self._set_dirs(dirs)
        self._folders: list[FolderTool] = []
        self._scan_warnings: frozenset[str] = frozenset()
        self._scan()
        pairs, key = self._merge()
        namespaces = self._namespaces()
        self._key = (*key, tuple(sorted(namespaces.items())))
        self._current = ToolSetSnapshot.build(pairs, generation=0, namespaces=namespaces)

    # --- the ToolSource seam -------------------------------------------------------------

    def snapshot(self) -> ToolSetSnapshot:
        """The current snapshot (a reference read; never waits for a reload)."""
        return self._current

    @property
    def dirs(self) -> tuple[Path, ...]:
        """The tools directories, resolved."""
        return self._dirs

    @property
    def mcp_status(self) -> Mapping[str, tuple[str, str | None]]:
        """Server name to ``(state, error)``: ``idle``, ``connecting``, ``ready``, ``failed``."""
        return {name: (c.state, c.error) for name, c in self._connections.items()}

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call ``callback(snapshot)`` after every swap (from the thread that swapped).

        Returns:
            A function that unsubscribes.
        """
        self._subscribers.append(callback)
        return lambda: self._subscribers.remove(callback) if callback in self._subscribers else None

    # --- lifecycle -----------------------------------------------------------------------

    async def start(self) -> ToolSetSnapshot:
        """Connect the MCP servers (waiting for each first attempt) and start watching.

        Returns:
            The snapshot after the first connection attempts.
        """
        self._loop = asyncio.get_running_loop()
        await self._sync_connections(self._mcp_configs)
        if self._watch:
            self._start_watcher()
        return await self._rebuild_async(rescan=False)

    async def aclose(self) -> None:
        """Stop watching and close every MCP session; MCP tools leave the snapshot."""
        self._stop_watcher()
        connections, self._connections = list(self._connections.values()), {}
        await asyncio.gather(*(c.aclose() for c in connections))
        await self._rebuild_async(rescan=False)

    async def reconfigure(
        self,
        *,
        dirs: Sequence[str | Path] | None = None,
        mcp_servers: Iterable[object] | None = None,
    ) -> ToolSetSnapshot:
        """Apply a changed ``[tools]`` table; ``None`` keeps a setting as it is.

        Unchanged MCP entries keep their sessions; removed or changed ones are closed (calls
        of asks still running on an older snapshot then fail with "unavailable").

        Raises:
            ConfigError: an MCP server entry is invalid (nothing is changed then).
        """
        configs = _coerce_servers(mcp_servers) if mcp_servers is not None else None
        if dirs is not None:
            with self._lock:
                self._set_dirs(dirs)
            if self._watcher is not None:
                self._stop_watcher()
                self._start_watcher()
        if configs is not None:
            self._mcp_configs = configs
            if self._loop is not None:
                await self._sync_connections(configs)
        return await self._rebuild_async(rescan=dirs is not None)

    def reload(self) -> ToolSetSnapshot:
        """Rescan the tool folders now and swap if anything changed (any thread).

        Returns:
            The current snapshot: a new generation if something changed, else the same one.
        """
        return self._rebuild(rescan=True)

    async def wait_for_generation(  # a plain deadline reads best in tests
        self,
        generation: int,
        timeout: float = 10.0,  # noqa: ASYNC109
    ) -> ToolSetSnapshot:
        """Wait until the snapshot's generation is at least ``generation`` (for tests).

        Raises:
            TimeoutError: it did not happen within ``timeout`` seconds.
        """

        def wait() -> ToolSetSnapshot:
            with self._changed:
                if not self._changed.wait_for(
                    lambda: self._current.generation >= generation, timeout
                ):
                    raise TimeoutError(
                        f"registry generation {generation} not reached within {timeout} s "
                        f"(at {self._current.generation})"
                    )
                return self._current

        return await asyncio.to_thread(wait)

    # --- internals -----------------------------------------------------------------------

    def _set_dirs(self, dirs: Sequence[str | Path]) -> None:
        if isinstance(dirs, str | Path):
            dirs = (dirs,)
        paths = [Path(d) for d in dirs]
        if self._base is not None:
            paths = [p if p.is_absolute() else self._base / p for p in paths]
        self._dirs = tuple(paths)
        self._labels = tuple(self._label(Path(d), p) for d, p in zip(dirs, paths, strict=True))

    def _label(self, given: Path, path: Path) -> str:
        """How a directory appears in source labels: relative to the base when inside it."""
        base = self._base if self._base is not None else Path.cwd()
        try:
            return path.relative_to(base).as_posix()
        except ValueError:
            return given.as_posix()

    def _warn_once(self, name: str, source: str, reason: str) -> None:
        if (name, source) not in self._warned:
            self._warned.add((name, source))
            log.warning("tool %r from %s skipped: %s", name, source, reason)

    def _scan(self) -> None:
        """Rescan the folders, reusing unchanged tools and logging only new problems."""
        previous = {f.handler.path.parent: f for f in self._folders}
        report = ScanWarnings(self._scan_warnings)
        self._folders = scan_tool_dirs(self._dirs, self._labels, previous, report)
        self._scan_warnings = frozenset(report.logged)

    def _namespaces(self) -> dict[str, str]:
        """Namespace descriptions from the sources: folder READMEs, then MCP servers."""
        found = folder_namespaces(self._folders)
        for config in self._mcp_configs:
            connection = self._connections.get(config.name)
            if connection is not None and connection.tools and connection.description:
                found[config.name] = connection.description
        return found

    def _merge(self) -> tuple[list[tuple[Tool, str]], tuple[object, ...]]:
        """The merged ``(tool, source)`` list and a key of everything an ask can observe."""
        pairs: list[tuple[Tool, str]] = []
        key: list[object] = []
        taken: dict[str, str] = {}

        def add(tool: Tool, source: str, identity: object) -> None:
            if tool.name in taken:
                self._warn_once(
                    tool.name, source, f"the name is already used by {taken[tool.name]}"
                )
            else:
                taken[tool.name] = source
                pairs.append((tool, source))
                key.append((tool.name, source, identity))

        for tool in self._code:
            add(tool, CODE_SOURCE, id(tool))
        folder: FolderTool
        for folder in self._folders:
            add(folder.tool, folder.source, folder.handler)  # a new handler: a changed file
        for config in self._mcp_configs:
            connection = self._connections.get(config.name)
            for tool in connection.tools if connection is not None else ():
                add(tool, connection.label, id(connection))  # type: ignore[union-attr]
        return pairs, (fingerprint(t.shared_schema() for t, _ in pairs), *key)

    def _rebuild(self, *, rescan: bool) -> ToolSetSnapshot:
        with self._lock:
            if rescan:
                self._scan()
            pairs, key = self._merge()
            namespaces = self._namespaces()
            key = (*key, tuple(sorted(namespaces.items())))
            if key == self._key:
                return self._current
            current = ToolSetSnapshot.build(
                pairs,
                generation=self._current.generation + 1,
                reuse=self._current,
                namespaces=namespaces,
            )
            self._key, self._current = key, current
            self._changed.notify_all()
        log.info(
            "tool registry generation %d: %d tools (fingerprint %s)",
            current.generation,
            len(current.tools),
            current.fingerprint[:12],
        )
        for callback in list(self._subscribers):
            try:
                callback(current)
            except Exception:
                log.exception("tool registry subscriber failed")
        return current

    async def _rebuild_async(self, *, rescan: bool) -> ToolSetSnapshot:
        return await asyncio.to_thread(self._rebuild, rescan=rescan)

    def _on_mcp_change(self) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.run_in_executor(None, lambda: self._rebuild(rescan=False))

    async def _sync_connections(self, configs: tuple[MCPServerConfig, ...]) -> None:
        wanted = {c.name: c for c in configs}
        stale = [c for name, c in self._connections.items() if wanted.get(name) != c.config]
        for connection in stale:
            del self._connections[connection.config.name]
        await asyncio.gather(*(c.aclose() for c in stale))
        fresh = []
        for name, config in wanted.items():
            if name not in self._connections:
                connection = MCPServerConnection(
                    config, on_change=self._on_mcp_change, backoff=self._backoff
                )
                self._connections[name] = connection
                connection.start()
                fresh.append(connection)
        await asyncio.gather(*(c.wait_settled() for c in fresh))

    def _start_watcher(self) -> None:
        from bot_toolsearch._config.watch import DirectoryWatcher

        existing = [d for d in self._dirs if d.is_dir()]
        if not existing:
            return
        self._watcher = DirectoryWatcher(
            existing,
            self._on_files_changed,
            debounce=self._debounce,
            recursive=True,
            # Importing a handler writes __pycache__; that must not cost a rescan.
            match=lambda path: not (_IGNORED_PARTS & set(path.parts)),
        )
        self._watcher.start()

    def _stop_watcher(self) -> None:
        watcher, self._watcher = self._watcher, None
        if watcher is not None:
            with contextlib.suppress(Exception):
                watcher.stop()

    def _on_files_changed(self, _paths: frozenset[Path]) -> None:
        # Any change rescans every folder: config.json reads are cheap, and it keeps one path.
        try:
            self._rebuild(rescan=True)
        except Exception:
            log.exception(
                "tool registry reload failed; keeping generation %d", self._current.generation
            )
