"""Setup problems of a valid config: settings that validate one by one but do not fit together.

``config validate`` reports these as warnings, because the bot still runs: tool search left off
by an unset ``[skills] tool_search_enabled``, switched on while its plugin is not enabled, an
always-loaded or prefetch name that matches no tool, a ``[tools] allow``/``deny`` pattern that
matches no tool, a ``[tools] dirs`` folder that does not exist. Only what the config itself
names can be checked: the built-ins, the tools in its folders (``config.json`` only, no handler
is imported) and the names you pass (your code's tools). Tools of MCP servers are known only
once a server answers, so names under a configured server's prefix (``time.``) are not reported.
"""

from __future__ import annotations

import difflib
import fnmatch
import logging
import shutil
from collections.abc import Iterable
from dataclasses import dataclass

from bot_toolsearch._config.settings import BotSettings
from bot_toolsearch._core.catalog import TOOL_SEARCH_NAME
from bot_toolsearch._errors import ToolSearchError
from bot_toolsearch._tools.folders import ScanWarnings, scan_tool_dirs
from bot_toolsearch._tools.registry import ToolRegistry

from .toolset import END, SEND_MESSAGE

__all__ = ["SetupWarning", "check_setup", "check_tool_sources", "connect_mcp_servers"]


@dataclass(frozen=True, slots=True)
class SetupWarning:
    """One setup problem that leaves the bot able to run."""

    key: str
    """The dotted key the problem is about, e.g. ``skills.prefetch_tools``."""
    message: str
    """What is wrong and what happens because of it."""

    def __str__(self) -> str:
        return f"{self.key}: {self.message}"


def check_setup(settings: BotSettings, *, tool_names: Iterable[str] = ()) -> list[SetupWarning]:
    """The setup problems of ``settings`` (already validated), in key order.

    Args:
        settings: the settings, with ``[tools] dirs`` absolute (as `load_settings` gives them).
        tool_names: names of the tools your code passes to the bot, if you want them counted.

    Returns:
        One `SetupWarning` per problem; empty when the setup fits together.
    """
    warnings: list[SetupWarning] = []
    skills = settings.skills
    if "tool_search_enabled" not in skills.model_fields_set:
        warnings.append(
            SetupWarning(
                "skills.tool_search_enabled",
                "not set, so tool search is off (the default is false) and every tool is "
                "sent on every request; set it to true to turn tool search on, or to false "
                "to say so",
            )
        )
    if skills.tool_search_enabled and "tool_search" not in settings.plugins.enabled:
        warnings.append(
            SetupWarning(
                "plugins.enabled",
                "skills.tool_search_enabled is true, but 'tool_search' is not enabled here, so "
                "tool search never runs and every tool is sent on every request",
            )
        )
    for folder in settings.tools.dirs:
        if not folder.exists():
            warnings.append(SetupWarning("tools.dirs", f"folder {folder} does not exist"))
        elif not folder.is_dir():
            warnings.append(SetupWarning("tools.dirs", f"{folder} is not a folder"))
    known = {SEND_MESSAGE, END, TOOL_SEARCH_NAME, *tool_names}
    dirs = tuple(d for d in settings.tools.dirs if d.is_dir())
    # Only config.json files are read; problems of single folders are the registry's to log.
    known.update(f.tool.name for f in scan_tool_dirs(dirs, tuple(map(str, dirs)), None, _Quiet()))
    prefixes = tuple(f"{server.name}." for server in settings.tools.mcp_servers)
    folded = {name.casefold(): name for name in known}
    for key, names in (
        ("skills.tool_search_always_loaded", skills.tool_search_always_loaded),
        ("skills.prefetch_tools", skills.prefetch_tools),
    ):
        for raw in names:
            name = raw.strip()
            if name.casefold() in folded or name.startswith(prefixes):
                continue
            close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            warnings.append(
                SetupWarning(
                    key,
                    f"{name!r} matches no tool{hint}; it is ignored "
                    "(checked: the built-ins and the tools in [tools] dirs)",
                )
            )
    tools = settings.tools
    for key, patterns in (("tools.allow", tools.allow), ("tools.deny", tools.deny)):
        for pattern in patterns:
            if pattern.startswith(prefixes) or any(
                fnmatch.fnmatchcase(name, pattern) for name in known
            ):
                continue
            warnings.append(
                SetupWarning(
                    key,
                    f"pattern {pattern!r} matches no tool, so it changes nothing (checked: the "
                    "built-ins and the tools in [tools] dirs; patterns are case-sensitive)",
                )
            )
    return warnings


class _Quiet(ScanWarnings):
    """A scan report that logs nothing (a broken folder is the registry's to report)."""

    def warn(self, message: str, *args: object) -> None:
        self.logged.add(message % args)


def check_tool_sources(settings: BotSettings) -> list[SetupWarning]:
    """What the config's tool sources would fail on, without starting any server.

    Every tool folder's ``handler.py`` is imported (its module code runs, as on the tool's
    first call) and must define a callable ``execute``; folders the registry would skip (a bad
    ``config.json``, no ``handler.py``) are reported; each stdio MCP server's ``command`` must
    be found (on ``PATH``, or as a path).
    """
    problems: list[SetupWarning] = []
    dirs = tuple(d for d in settings.tools.dirs if d.is_dir())
    report = _Quiet()
    registry_log = logging.getLogger("bot_toolsearch.registry")
    level = registry_log.level
    registry_log.setLevel(logging.CRITICAL)  # each problem is returned, not logged too
    try:
        for folder in scan_tool_dirs(dirs, tuple(map(str, dirs)), None, report):
            try:
                folder.handler.load()
            except ToolSearchError as exc:  # ToolImportError: file, line and the cause
                problems.append(SetupWarning("tools.dirs", _one_line(exc)))
    finally:
        registry_log.setLevel(level)
    problems += [SetupWarning("tools.dirs", _one_line(text)) for text in sorted(report.logged)]
    for server in settings.tools.mcp_servers:
        if server.command is not None and shutil.which(server.command) is None:
            problems.append(
                SetupWarning(
                    "tools.mcp_servers",
                    f"server {server.name!r}: command {server.command!r} not found "
                    "(not on PATH, nor an executable file)",
                )
            )
    return problems


async def connect_mcp_servers(settings: BotSettings) -> list[SetupWarning]:
    """Start each MCP server once, list its tools, stop it: the servers that failed.

    Servers whose ``command`` cannot be found are left out (`check_tool_sources` names them).
    """
    servers = [
        s
        for s in settings.tools.mcp_servers
        if s.command is None or shutil.which(s.command) is not None
    ]
    if not servers:
        return []
    registry = ToolRegistry(mcp_servers=servers)
    # Each failure is reported once below, not as the registry's retry warnings.
    mcp_log = logging.getLogger("bot_toolsearch.mcp")
    level = mcp_log.level
    mcp_log.setLevel(logging.CRITICAL)
    try:
        await registry.start()
        status = dict(registry.mcp_status)
    finally:
        await registry.aclose()
        mcp_log.setLevel(level)
    return [
        SetupWarning("tools.mcp_servers", f"server {name!r}: {_one_line(error or state)}")
        for name, (state, error) in status.items()
        if state != "ready"
    ]


def _one_line(text: object) -> str:
    return " ".join(str(text).split())
