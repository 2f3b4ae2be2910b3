"""Tool folders: ``<dir>/<ns>/<tool>/config.json`` + ``handler.py``, handlers imported lazily.

Naming rule: the folder path gives the canonical name (``tools/music/search_songs/`` is
``music.search_songs``). A ``name`` in ``config.json`` may repeat the last segment or the full
dotted name; any other value is ignored with a warning, because the folder is what a user sees
and what ``catalog list`` prints.

Start-up reads only ``config.json``. ``handler.py`` is imported on the tool's first execution
under a unique private module name (``_bot_toolsearch_folder_<n>_<name>``) and cached for the
life of that `Tool`. A rescan keeps the `Tool` (and so the imported module, or the remembered
import error) of every folder whose ``config.json`` and ``handler.py`` did not change; an
edited handler gets a fresh `Tool`, so it takes effect for the next ask while running asks keep
the module they started with. A module leaves ``sys.modules`` when its `Tool` is dropped.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import logging
import os
import re
import sys
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._tools import Tool, ToolImportError

__all__ = ["FolderHandler", "FolderTool", "scan_tool_dirs"]

log = logging.getLogger("bot_toolsearch.registry")

CONFIG_FILE = "config.json"
HANDLER_FILE = "handler.py"
MAX_NAME_LENGTH = 64
"""Longest canonical folder-tool name (the OpenAI function-name limit)."""
MAX_CONFIG_BYTES = 1 << 20
MAX_DEPTH = 8
"""Deepest namespace nesting scanned below a tools directory."""

# One segment of a dotted name: letters (any script), digits, ``_`` and ``-``. This rules out
# whitespace, control characters, ``<``/``>``, dots, quotes and path separators.
_SEGMENT = re.compile(r"[\w-]+")
_SKIPPED_QUIETLY = frozenset({"__pycache__", "node_modules"})
_module_counter = itertools.count(1)


def valid_segment(segment: str) -> bool:
    """True for a safe name segment (see module docstring)."""
    return bool(_SEGMENT.fullmatch(segment)) and segment.isprintable()


class FolderHandler:
    """Callable that imports ``handler.py`` on first use and calls its ``execute``.

    A failed import is remembered and logged once; every later call raises the same
    `ToolImportError` without retrying, until a reload replaces the tool.
    """

    __slots__ = ("__weakref__", "_error", "_execute", "_lock", "module_name", "path", "tool_name")

    def __init__(self, tool_name: str, path: Path) -> None:
        self.tool_name = tool_name
        self.path = path
        safe = re.sub(r"\W", "_", tool_name, flags=re.ASCII)
        self.module_name = f"_bot_toolsearch_folder_{next(_module_counter)}_{safe}"
        self._execute: Callable[..., Any] | None = None
        self._error: ToolImportError | None = None
        self._lock = threading.Lock()
        # Without this, every edit of a handler would leave its old module in sys.modules.
        weakref.finalize(self, sys.modules.pop, self.module_name, None)

    @property
    def loaded(self) -> bool:
        """Whether ``handler.py`` has been imported successfully."""
        return self._execute is not None

    def _load(self) -> Callable[..., Any]:
        with self._lock:
            if self._execute is not None:
                return self._execute
            if self._error is not None:
                raise self._error
            try:
                self._execute = self._import()
            except Exception as exc:
                self._error = ToolImportError(self.tool_name, str(self.path), exc)
                log.error("tool folder handler failed to import: %s", self._error)
                raise self._error from exc
            return self._execute

    def _import(self) -> Callable[..., Any]:
        spec = importlib.util.spec_from_file_location(self.module_name, self.path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {self.path}")
        module = importlib.util.module_from_spec(spec)
        # Registered before exec so dataclasses, pickling and typing inside the handler work.
        sys.modules[self.module_name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(self.module_name, None)
            raise
        execute = getattr(module, "execute", None)
        if not callable(execute):
            sys.modules.pop(self.module_name, None)
            raise AttributeError(f"{self.path.name} defines no callable 'execute'")
        return execute  # type: ignore[no-any-return]

    def __call__(self, **kwargs: Any) -> Any:
        # Runs in a worker thread (Tool.invoke), so the import never blocks the event loop;
        # an async execute returns a coroutine that Tool.invoke awaits on the loop.
        return self._load()(**kwargs)


@dataclass(frozen=True, slots=True)
class FolderTool:
    """One valid tool folder."""

    tool: Tool
    """The tool, with a lazy `FolderHandler`."""
    source: str
    """``folder:<dir>/<relative path>`` as configured."""
    stamp: tuple[int, int, int]
    """``(inode, mtime_ns, size)`` of ``handler.py``: a changed handler makes a new snapshot.

    The inode catches editors that save by renaming a new file over the old one; an in-place
    rewrite to the same size within one file-timestamp tick (a few ms) is not noticed."""
    handler: FolderHandler
    """The tool's lazy handler, kept by a rescan while ``handler.py`` is unchanged."""


def _function_object(data: Any) -> dict[str, Any] | str:
    """The function object of a config.json, or the reason it is unusable."""
    if not isinstance(data, dict):
        return "config.json must hold a JSON object"
    if data.get("type") == "function" or "function" in data:
        function = data.get("function")
        if not isinstance(function, dict):
            return "'function' must be an object"
        return function
    return data


def _load_config(folder: Path, name: str) -> tuple[str, dict[str, Any]] | str | None:
    """``(description, parameters)``, a reason to skip, or None for a disabled tool."""
    config = folder / CONFIG_FILE
    try:
        if config.stat().st_size > MAX_CONFIG_BYTES:
            return f"config.json is larger than {MAX_CONFIG_BYTES} bytes"
        data = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return f"config.json is not valid JSON ({exc})"
    function = _function_object(data)
    if isinstance(function, str):
        return function
    if data.get("enabled", function.get("enabled", True)) is False:
        return None
    declared = function.get("name")
    if declared is not None and declared not in (name, name.rpartition(".")[2]):
        log.warning(
            "tool folder %s: config.json names the tool %r; using the folder name %r",
            folder,
            declared,
            name,
        )
    description = function.get("description", "")
    parameters = function.get("parameters", {"type": "object", "properties": {}})
    if not isinstance(description, str):
        return "'description' must be a string"
    if not isinstance(parameters, dict):
        return "'parameters' must be a JSON Schema object"
    return description, parameters


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root)
    except (OSError, ValueError):
        return False
    return True


def _walk(
    root: Path, folder: Path, prefix: tuple[str, ...]
) -> Iterator[tuple[Path, tuple[str, ...]]]:
    """Tool folders below ``folder`` with their name segments; warns about bad entries."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:
        log.warning("tool folder %s skipped: cannot list it (%s)", folder, exc)
        return
    for entry in entries:
        path = Path(entry.path)
        if entry.name.startswith(".") or entry.name in _SKIPPED_QUIETLY or not entry.is_dir():
            continue
        # Only a symlink can lead outside the root (its parent is inside by induction), and
        # resolving every path would dominate the scan of a large registry.
        if entry.is_symlink() and not _inside(path, root):
            log.warning("tool folder %s skipped: it resolves outside %s", path, root)
            continue
        if not valid_segment(entry.name):
            log.warning(
                "tool folder %s skipped: %r is not a valid name segment "
                "(letters, digits, '_' and '-' only)",
                path,
                entry.name,
            )
            continue
        segments = (*prefix, entry.name)
        if (path / CONFIG_FILE).exists() or (path / HANDLER_FILE).exists():
            yield path, segments
        elif len(segments) >= MAX_DEPTH:
            log.warning("tool folder %s skipped: nested deeper than %d levels", path, MAX_DEPTH)
        else:
            yield from _walk(root, path, segments)


def _folder_tool(
    folder: Path, root: Path, name: str, label: str, previous: FolderTool | None
) -> FolderTool | str | None:
    if len(name) > MAX_NAME_LENGTH:
        return f"name {name!r} is longer than {MAX_NAME_LENGTH} characters"
    handler = folder / HANDLER_FILE
    if not (folder / CONFIG_FILE).is_file():
        return "config.json is missing"
    if not handler.is_file():
        return "handler.py is missing"
    for file in (folder / CONFIG_FILE, handler):
        if file.is_symlink() and not _inside(file, root):
            return f"{file.name} resolves outside {root}"
    loaded = _load_config(folder, name)
    if not isinstance(loaded, tuple):
        return loaded
    description, parameters = loaded
    source = f"folder:{label}"
    try:
        info = handler.stat()
        stamp = (info.st_ino, info.st_mtime_ns, info.st_size)
        if previous is not None and previous.stamp == stamp and previous.tool.name == name:
            # Unchanged handler: keep its import (or its logged import error).
            old = previous.tool
            if (old.description, old.parameters, previous.source) == (
                description,
                parameters,
                source,
            ):
                return previous
            tool = Tool(name, description, parameters, previous.handler)
            return FolderTool(tool, source, stamp, previous.handler)
        lazy = FolderHandler(name, handler.absolute())
        tool = Tool(name, description, parameters, lazy)
    except (OSError, ValueError) as exc:
        return str(exc)
    return FolderTool(tool, source, stamp, lazy)


def scan_tool_dirs(
    dirs: tuple[Path, ...],
    labels: tuple[str, ...],
    previous: Mapping[Path, FolderTool] | None = None,
) -> list[FolderTool]:
    """Every valid tool folder under ``dirs``, in directory then path order.

    Invalid folders are skipped with one warning each naming the path; disabled ones
    (``"enabled": false``) are skipped silently. Name collisions *within* the folders are
    resolved here (first wins); collisions with code or MCP tools are the registry's job.

    Args:
        dirs: the tools directories (missing ones are skipped with a warning).
        labels: how each directory is shown in source labels (as configured).
        previous: the last scan's tools by absolute folder path; an
            unchanged folder's tool is reused, keeping its imported handler.
    """
    found: list[FolderTool] = []
    seen: dict[str, Path] = {}
    for directory, label in zip(dirs, labels, strict=True):
        if not directory.is_dir():
            log.warning("tools directory %s skipped: not a directory", directory)
            continue
        root = directory.resolve()
        for folder, segments in _walk(root, directory, ()):
            name = ".".join(segments)
            if name in seen:
                log.warning(
                    "tool folder %s skipped: name %r is already used by %s",
                    folder,
                    name,
                    seen[name],
                )
                continue
            label_path = "/".join((label, *segments))
            old = previous.get(folder.absolute()) if previous is not None else None
            result = _folder_tool(folder, root, name, label_path, old)
            if isinstance(result, str):
                log.warning("tool folder %s skipped: %s", folder, result)
            elif result is not None:
                seen[name] = folder
                found.append(result)
    return found
