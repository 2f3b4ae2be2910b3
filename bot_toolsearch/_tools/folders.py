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

import hashlib
import json
import logging
import os
import re
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot_toolsearch._core.catalog import MAX_SCHEMA_DEPTH, schema_depth_problem
from bot_toolsearch._errors import CatalogError

from .folder_handler import FolderHandler
from .tool import Tool, check_timeout

__all__ = [
    "FolderHandler",
    "FolderTool",
    "ScanWarnings",
    "folder_namespaces",
    "scan_tool_dirs",
]

log = logging.getLogger("bot_toolsearch.registry")

CONFIG_FILE = "config.json"
HANDLER_FILE = "handler.py"
MAX_NAME_LENGTH = 64
"""Longest canonical folder-tool name (the OpenAI function-name limit)."""
MAX_CONFIG_BYTES = 1 << 20
MAX_DEPTH = 8
"""Deepest namespace nesting scanned below a tools directory."""

_RACY_NS = 3_000_000_000
"""A ``handler.py`` modified less than this long before a scan (3 s: FAT keeps 2 s mtimes) has
its content hashed, so a same-size rewrite that leaves the stamp unchanged is still seen."""
# One segment of a dotted name: letters (any script), digits, ``_`` and ``-``. This rules out
# whitespace, control characters, ``<``/``>``, dots, quotes and path separators.
_SEGMENT = re.compile(r"[\w-]+")
_SKIPPED_QUIETLY = frozenset({"__pycache__", "node_modules"})


class ScanWarnings:
    """The warnings of one scan; each is logged only if the previous scan did not log it.

    A registry rescans on every file change, and a broken folder should be reported once, not
    once per unrelated edit. A problem that goes away and comes back is reported again.

    Args:
        before: the ``logged`` set of the previous scan.
    """

    def __init__(self, before: frozenset[str] = frozenset()) -> None:
        self._before = before
        self.logged: set[str] = set()
        """Every warning of this scan, logged now or before."""

    def warn(self, message: str, *args: object) -> None:
        """Log ``message % args`` unless the previous scan already did."""
        text = message % args
        self.logged.add(text)
        if text not in self._before:
            log.warning(message, *args)


def valid_segment(segment: str) -> bool:
    """True for a safe name segment (see module docstring)."""
    return bool(_SEGMENT.fullmatch(segment)) and segment.isprintable()


@dataclass(frozen=True, slots=True)
class FolderTool:
    """One valid tool folder."""

    tool: Tool
    """The tool, with a lazy `FolderHandler`."""
    source: str
    """``folder:<dir>/<relative path>`` as configured."""
    stamp: tuple[int, int, int]
    """``(inode, mtime_ns, size)`` of ``handler.py`` when it was scanned.

    The inode catches editors that save by renaming a new file over the old one."""
    handler: FolderHandler
    """The tool's lazy handler, kept by a rescan while ``handler.py`` is unchanged; a new
    handler object means a changed handler, and so a new snapshot."""
    digest: bytes | None = None
    """A hash of ``handler.py``, taken only when its stamp was *racy*: modified so recently
    that an in-place rewrite to the same size could leave the stamp as it was (file times
    tick in milliseconds, or seconds on some file systems). The next scan then compares the
    content, as git does for racily clean files."""


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


def _load_config(
    folder: Path, name: str, report: ScanWarnings
) -> tuple[str, dict[str, Any], float | None] | str | None:
    """``(description, parameters, timeout)``, a reason to skip, or None for a disabled tool."""
    config = folder / CONFIG_FILE
    try:
        if config.stat().st_size > MAX_CONFIG_BYTES:
            return f"config.json is larger than {MAX_CONFIG_BYTES} bytes"
        data = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return f"config.json is not valid JSON ({exc})"
    except RecursionError:
        return f"config.json nests deeper than the tool schema limit ({MAX_SCHEMA_DEPTH} levels)"
    function = _function_object(data)
    if isinstance(function, str):
        return function
    if data.get("enabled", function.get("enabled", True)) is False:
        return None
    declared = function.get("name")
    if declared is not None and declared not in (name, name.rpartition(".")[2]):
        report.warn(
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
    depth = schema_depth_problem(parameters)
    if depth is not None:
        return f"'parameters' {depth} (MAX_SCHEMA_DEPTH)"
    timeout = data.get("timeout", function.get("timeout"))
    try:
        seconds = check_timeout(timeout, name)
    except CatalogError:
        return f"'timeout' must be a positive number of seconds, got {timeout!r}"
    return description, parameters, seconds


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root)
    except (OSError, ValueError):
        return False
    return True


def _walk(
    root: Path, folder: Path, prefix: tuple[str, ...], report: ScanWarnings
) -> Iterator[tuple[Path, tuple[str, ...]]]:
    """Tool folders below ``folder`` with their name segments; warns about bad entries."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:
        report.warn("tool folder %s skipped: cannot list it (%s)", folder, exc)
        return
    for entry in entries:
        path = Path(entry.path)
        if entry.name.startswith(".") or entry.name in _SKIPPED_QUIETLY or not entry.is_dir():
            continue
        # Only a symlink can lead outside the root (its parent is inside by induction), and
        # resolving every path would dominate the scan of a large registry.
        if entry.is_symlink() and not _inside(path, root):
            report.warn("tool folder %s skipped: it resolves outside %s", path, root)
            continue
        if not valid_segment(entry.name):
            report.warn(
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
            report.warn("tool folder %s skipped: nested deeper than %d levels", path, MAX_DEPTH)
        else:
            yield from _walk(root, path, segments, report)


def _folder_tool(
    folder: Path,
    root: Path,
    name: str,
    label: str,
    *,
    previous: FolderTool | None,
    report: ScanWarnings,
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
    loaded = _load_config(folder, name, report)
    if not isinstance(loaded, tuple):
        return loaded
    description, parameters, timeout = loaded
    source = f"folder:{label}"
    try:
        info = handler.stat()
        stamp = (info.st_ino, info.st_mtime_ns, info.st_size)
        digest = _digest(handler) if time.time_ns() - info.st_mtime_ns < _RACY_NS else None
        if (
            previous is not None
            and previous.stamp == stamp
            and previous.tool.name == name
            and (previous.digest is None or previous.digest == (digest or _digest(handler)))
        ):
            # Unchanged handler: keep its import (or its logged import error).
            old = previous.tool
            if (old.description, old.parameters, old.timeout, previous.source, previous.digest) == (
                description,
                parameters,
                timeout,
                source,
                digest,
            ):
                return previous
            tool = Tool(name, description, parameters, previous.handler, timeout=timeout)
            return FolderTool(tool, source, stamp, previous.handler, digest)
        lazy = FolderHandler(name, handler.absolute())
        tool = Tool(name, description, parameters, lazy, timeout=timeout)
    except (OSError, ValueError) as exc:
        return str(exc)
    return FolderTool(tool, source, stamp, lazy, digest)


README_FILES = ("README.md", "README.txt", "README")
"""A namespace folder's description file, first found wins: its first paragraph that is not
a heading describes the namespace (``tools/music/README.md`` describes ``music``)."""
_MAX_README_BYTES = 64 * 1024


def _readme_description(folder: Path) -> str:
    for file_name in README_FILES:
        path = folder / file_name
        try:
            if not path.is_file():
                continue
            with path.open("rb") as file:
                text = file.read(_MAX_README_BYTES).decode("utf-8", errors="replace")
        except OSError:
            continue
        paragraph: list[str] = []
        for raw in text.splitlines():
            line = raw.strip()
            if line.startswith("#") and not paragraph:
                continue  # a heading before the first paragraph
            if not line:
                if paragraph:
                    break
                continue
            paragraph.append(line)
        return " ".join(paragraph)
    return ""


def folder_namespaces(folders: list[FolderTool]) -> dict[str, str]:
    """Namespace -> description from the README of each namespace folder above the tools.

    ``tools/music/search_songs/`` is tool ``music.search_songs``; ``tools/music/README.md``
    describes the namespace ``music``. Namespaces without a README are left out.
    """
    found: dict[str, str] = {}
    seen: set[str] = set()
    for folder in folders:
        segments = folder.tool.name.split(".")
        path = folder.handler.path.parent
        for depth in range(len(segments) - 1, 0, -1):
            path = path.parent
            namespace = ".".join(segments[:depth])
            if namespace in seen:
                continue
            seen.add(namespace)
            description = _readme_description(path)
            if description:
                found[namespace] = description
    return found


def _digest(file: Path) -> bytes:
    return hashlib.blake2b(file.read_bytes(), digest_size=16).digest()


def scan_tool_dirs(
    dirs: tuple[Path, ...],
    labels: tuple[str, ...],
    previous: Mapping[Path, FolderTool] | None = None,
    report: ScanWarnings | None = None,
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
        report: collects the warnings; pass one built from the previous scan's to log only
            new problems (a fresh one logs every problem).
    """
    report = report if report is not None else ScanWarnings()
    found: list[FolderTool] = []
    seen: dict[str, Path] = {}
    for directory, label in zip(dirs, labels, strict=True):
        if not directory.is_dir():
            report.warn("tools directory %s skipped: not a directory", directory)
            continue
        root = directory.resolve()
        for folder, segments in _walk(root, directory, (), report):
            name = ".".join(segments)
            if name in seen:
                report.warn(
                    "tool folder %s skipped: name %r is already used by %s",
                    folder,
                    name,
                    seen[name],
                )
                continue
            label_path = "/".join((label, *segments))
            old = previous.get(folder.absolute()) if previous is not None else None
            result = _folder_tool(folder, root, name, label_path, previous=old, report=report)
            if isinstance(result, str):
                report.warn("tool folder %s skipped: %s", folder, result)
            elif result is not None:
                seen[name] = folder
                found.append(result)
    return found
