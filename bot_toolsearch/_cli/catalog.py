"""``bot-toolsearch catalog``: ``stats`` of a tool catalog file, ``list`` and ``export``.

``catalog stats`` shows what the wire encoding changes, which names are unusable, and what the
first request costs with and without tool search. ``catalog list`` shows the merged tool catalog
a model will be offered (the built-ins, ``--tools`` code tools, tool folders and MCP servers of
a config); ``catalog export`` writes its schemas as JSON, for ``search --catalog``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot_toolsearch._core import token_count as tokens
from bot_toolsearch._core.catalog import TOOL_SEARCH_NAME, ToolCatalog, invalid_name_reason
from bot_toolsearch._core.prompt import TOOL_SEARCH_RULES, render_deferred_tools
from bot_toolsearch._core.session import ToolSearchSession
from bot_toolsearch._errors import ToolSearchError
from bot_toolsearch._runtime.toolset import BUILTINS, ToolSet
from bot_toolsearch._tools.registry import ToolRegistry
from bot_toolsearch._tools.source import ToolSetSnapshot
from bot_toolsearch._tools.tool import Agent, Tool
from bot_toolsearch._transports.names import DEFAULT_DOT_DELIMITER, WireNames, encode_name

from .options import USAGE, CliConfig, CliError, add_config_option, load_cli_config, plural

__all__ = [
    "CatalogFileError",
    "CatalogStats",
    "MergedCatalog",
    "add_catalog_list_command",
    "add_catalog_subparser",
    "add_tools_option",
    "catalog_list",
    "catalog_stats",
    "load_catalog_file",
    "merged_catalog",
]


class CatalogFileError(ValueError):
    """A catalog file cannot be read as a JSON list of tool schemas.

    A CLI-input error, not part of the library's `ToolSearchError` tree.
    """


def load_catalog_file(path: str) -> list[dict[str, Any]]:
    """Read a JSON list of tool schemas (Chat Completions or Responses shape).

    Raises:
        CatalogFileError: the file is missing, unreadable, not JSON, or not a list of objects.
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CatalogFileError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CatalogFileError(f"{path}: cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise CatalogFileError(f"{path}:{exc.lineno}:{exc.colno}: not JSON: {exc.msg}") from None
    if isinstance(data, dict) and isinstance(data.get("tools"), list):
        data = data["tools"]
    if not isinstance(data, list):
        raise CatalogFileError(
            f"{path}: expected a JSON list of tool schema objects, got {_json_type(data)}"
        )
    bad = next((i for i, e in enumerate(data) if not isinstance(e, dict)), None)
    if bad is not None:
        raise CatalogFileError(
            f"{path}: expected a JSON list of tool schema objects; entry {bad + 1} is "
            f"{_json_type(data[bad])} {json.dumps(data[bad])[:60]}"
        )
    # Responses-style entries carry the function fields at the top level.
    return [
        e if "function" in e or "name" not in e else {"type": "function", "function": e}
        for e in data
    ]


def _json_type(value: object) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    return names.get(type(value), "a number")


def _entry_label(position: int, entry: Mapping[str, Any]) -> str:
    """``entry 3 ({"foo": 1}…)``: where a catalog entry without a usable name is."""
    text = json.dumps(entry, ensure_ascii=False)
    return f"entry {position} ({text if len(text) <= 60 else text[:59] + '…'})"


@dataclass(frozen=True, slots=True)
class CatalogStats:
    """The figures ``catalog stats`` prints."""

    entries: int
    usable: int
    renamed: tuple[tuple[str, str], ...]
    invalid: tuple[tuple[str, str], ...]
    duplicates: tuple[str, ...]
    case_variants: tuple[tuple[str, ...], ...]
    full_tokens: int
    projected_tokens: int


def catalog_stats(schemas: Sequence[Mapping[str, Any]], dot_delimiter: str) -> CatalogStats:
    """Compute the ``catalog stats`` figures for a list of schemas."""
    from bot_toolsearch._core import token_count as tokens

    entries = len(schemas)
    raw_names = [(e.get("function") or {}).get("name") for e in schemas]
    invalid = tuple(
        (
            repr(n) if isinstance(n, str) else _entry_label(i + 1, schemas[i]),
            "no function name" if n is None else reason,
        )
        for i, n in enumerate(raw_names)
        if (reason := invalid_name_reason(n)) is not None
    ) + tuple(
        (repr(n), "reserved for the virtual tool_search tool")
        for n in raw_names
        if n == TOOL_SEARCH_NAME
    )
    # Reported above; every door skips it while tool search is on (an ordinary tool when off).
    schemas = [e for e in schemas if (e.get("function") or {}).get("name") != TOOL_SEARCH_NAME]
    seen: set[str] = set()
    duplicates: list[str] = []
    for name in raw_names:
        if isinstance(name, str) and invalid_name_reason(name) is None:
            if name in seen and name not in duplicates:
                duplicates.append(name)
            seen.add(name)
    catalog = ToolCatalog(schemas)
    wire = WireNames.build(catalog.names, dot_delimiter=dot_delimiter)
    renamed = tuple((n, wire.to_wire(n)) for n in catalog.names if wire.to_wire(n) != n)
    groups: dict[str, list[str]] = {}
    for name in catalog.names:
        groups.setdefault(name.casefold(), []).append(name)
    variants = tuple(tuple(g) for g in groups.values() if len(g) > 1)
    session = ToolSearchSession(catalog)
    directory = render_deferred_tools(session.deferred_tool_names) + "\n\n" + TOOL_SEARCH_RULES
    return CatalogStats(
        entries=entries,
        usable=len(catalog),
        renamed=renamed,
        invalid=invalid,
        duplicates=tuple(duplicates),
        case_variants=variants,
        full_tokens=tokens.tools_tokens(catalog.schemas(catalog.names)),
        projected_tokens=tokens.tools_tokens(session.request_tools())
        + tokens.messages_tokens([{"role": "system", "content": directory}]),
    )


def _print_list(title: str, rows: Sequence[str], limit: int = 20) -> None:
    print(f"{title}: {len(rows)}")
    for row in rows[:limit]:
        print(f"  {row}")
    if len(rows) > limit:
        print(f"  … and {len(rows) - limit} more")


def _stats(args: argparse.Namespace) -> int:
    library = logging.getLogger("bot_toolsearch")
    level = library.level
    try:
        encode_name("x", args.dot_delimiter)  # validates the delimiter
    except ValueError as exc:
        raise CliError(f"--dot-delimiter: {exc}", USAGE) from None
    try:
        schemas = load_catalog_file(args.catalog)
        # The skipped-entry warnings would repeat what the report lists.
        library.setLevel(logging.ERROR)
        stats = catalog_stats(schemas, args.dot_delimiter)
    except (ToolSearchError, ValueError) as exc:
        raise CliError(str(exc)) from None
    finally:
        library.setLevel(level)
    print(f"tools: {stats.usable} usable of {plural(stats.entries, 'entry', 'entries')}")
    _print_list("names the wire encoding changes", [f"{a} -> {b}" for a, b in stats.renamed])
    _print_list("invalid names (skipped)", [f"{n}: {r}" for n, r in stats.invalid])
    _print_list("duplicate names (first kept)", list(stats.duplicates))
    _print_list("case-variant names", [", ".join(g) for g in stats.case_variants])
    print(f"tokens ({tokens.counter_label()}):")
    print(f"  full tools list:                      {stats.full_tokens:>8}")
    print(f"  first request with tool search:       {stats.projected_tokens:>8}")
    print("    (always-loaded tools + tool_search + directory and rules message)")
    print(f"  {_saving_line(stats.full_tokens, stats.projected_tokens)}")
    if stats.projected_tokens >= stats.full_tokens:
        print("  (this catalog is small enough to send whole: tool search does not pay off)")
    return 0


def _saving_line(full: int, projected: int) -> str:
    """``saved: 1,234 tokens (91.2%)`` or, when tool search costs more, ``costs N more``."""
    difference = full - projected
    share = abs(difference) / full * 100 if full else 0.0
    if difference > 0:
        return f"saved:                                {difference:>8} ({share:.1f}% fewer)"
    if difference < 0:
        return f"tool search costs more:               {-difference:>8} ({share:.1f}% more)"
    return f"saved:                                {0:>8} (the same)"


def add_catalog_subparser(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
) -> None:
    """Add the ``catalog`` group: ``catalog stats tools.json`` and ``catalog list``."""
    parser = subparsers.add_parser("catalog", help="inspect a tool catalog file")
    commands = parser.add_subparsers(dest="catalog_command", metavar="COMMAND", required=True)
    stats = commands.add_parser("stats", help="names, encoding and token cost of a catalog")
    stats.add_argument("catalog", help="JSON list of OpenAI tool schemas")
    stats.add_argument(
        "--dot-delimiter", default=DEFAULT_DOT_DELIMITER, help="what replaces dots on the wire"
    )
    stats.set_defaults(func=_stats)
    add_catalog_list_command(commands)  # ``catalog list`` (issue 6) joins the same group


def catalog_list(
    snapshot: ToolSetSnapshot, *, dot_delimiter: str = "-_-"
) -> list[tuple[str, str, str]]:
    """``(source, canonical name, wire name)`` for every catalog tool, in catalog order.

    >>> from bot_toolsearch._tools.source import StaticToolSource
    >>> from bot_toolsearch import Tool
    >>> snap = StaticToolSource([Tool("music.play", "Play.", None, print)]).snapshot()
    >>> catalog_list(snap)
    [('code', 'music.play', 'music-_-play')]
    """
    names = snapshot.catalog.names
    wire = WireNames.build(names, dot_delimiter=dot_delimiter)
    return [(snapshot.sources[name], name, wire.to_wire(name)) for name in names]


@dataclass(frozen=True, slots=True)
class MergedCatalog:
    """The tool set a bot of this config would offer, and what could not be reached."""

    toolset: ToolSet
    """The built-ins, code tools, agents, folder and MCP tools, as the bot indexes them."""
    sources: dict[str, str]
    """Canonical name -> ``built-in``, ``code``, ``agent``, ``folder:...`` or ``mcp:NAME``."""
    unavailable: dict[str, str]
    """MCP server -> why it could not be reached (its tools are missing)."""

    def rows(self, dot_delimiter: str) -> list[tuple[str, str, str]]:
        """``(source, canonical name, wire name)`` per tool, in catalog order."""
        wire = self.toolset.wire_names(dot_delimiter)
        return [(self.sources[n], n, wire.to_wire(n)) for n in self.toolset.catalog.names]


def merged_catalog(
    config: CliConfig, tools: Sequence[Tool], agents: Sequence[Agent]
) -> MergedCatalog:
    """Connect the config's tool sources once and merge them as a bot would.

    Raises:
        CliError: two tools share a name, or a source tool uses a built-in's name.
    """
    settings = config.loaded.settings.tools
    base = config.path.resolve().parent if config.path is not None else Path.cwd()
    registry = ToolRegistry(
        settings.dirs, extra_tools=tools, mcp_servers=settings.mcp_servers, base_dir=base
    )
    # An unreachable server is reported once below, not as the registry's retry warnings.
    mcp_log = logging.getLogger("bot_toolsearch.mcp")
    level = mcp_log.level
    mcp_log.setLevel(logging.ERROR)

    async def collect() -> tuple[ToolSetSnapshot, dict[str, tuple[str, str | None]]]:
        await registry.start()
        try:
            return registry.snapshot(), dict(registry.mcp_status)
        finally:
            await registry.aclose()

    try:
        snapshot, status = asyncio.run(collect())
        toolset = ToolSet.from_snapshot(snapshot, agents)
    except ToolSearchError as exc:
        raise CliError(str(exc)) from None
    finally:
        mcp_log.setLevel(level)
    sources = {b.name: "built-in" for b in BUILTINS}
    sources.update((a.name, "agent") for a in agents)
    sources.update(snapshot.sources)
    unavailable = {
        server: error or state for server, (state, error) in status.items() if state != "ready"
    }
    return MergedCatalog(toolset, sources, unavailable)


def add_tools_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--tools MODULE:ATTR`` (code tools, as for ``chat``)."""
    parser.add_argument(
        "--tools",
        metavar="MODULE:ATTR",
        help="code tools to include: a sequence of Tool (or a callable returning one), named as "
        "package.module:attribute or path/to/file.py:attribute",
    )


def add_catalog_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--catalog FILE``, or else the merged catalog of ``--config`` and ``--tools``
    (``search`` and ``eval``)."""
    parser.add_argument(
        "--catalog",
        metavar="FILE",
        help="JSON list of OpenAI tool schemas (e.g. from catalog export); default: the merged "
        "catalog of --config and --tools",
    )
    add_config_option(parser)
    add_tools_option(parser)


def load_merged(args: argparse.Namespace) -> tuple[CliConfig, MergedCatalog]:
    """The config of ``--config`` and its merged catalog with the ``--tools`` code tools."""
    from .chat import load_tools

    try:
        tools, agents = load_tools(args.tools) if args.tools else ((), ())
    except ValueError as exc:
        raise CliError(str(exc)) from None
    config = load_cli_config(args)
    return config, merged_catalog(config, tools, agents)


def add_catalog_list_command(
    catalog_subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
) -> None:
    """Add ``list`` and ``export`` to the ``catalog`` command group's subparsers."""
    parser = catalog_subparsers.add_parser(
        "list", help="print every tool the bot offers: source, canonical name, wire name"
    )
    add_config_option(parser)
    add_tools_option(parser)
    parser.add_argument("--json", action="store_true", help="print a JSON array instead")
    parser.set_defaults(func=_list)
    export = catalog_subparsers.add_parser(
        "export", help="write the merged catalog's tool schemas as JSON (for search --catalog)"
    )
    add_config_option(export)
    add_tools_option(export)
    export.add_argument(
        "-o", "--output", metavar="FILE", help="write to FILE instead of standard output"
    )
    export.set_defaults(func=_export)


def _unavailable(merged: MergedCatalog) -> int:
    """Report unreachable MCP servers in one line; the exit status (1 if any)."""
    if not merged.unavailable:
        return 0
    servers = "; ".join(f"{name!r}: {why}" for name, why in merged.unavailable.items())
    noun = "server" if len(merged.unavailable) == 1 else "servers"
    sys.stdout.flush()
    sys.stderr.write(f"error: MCP {noun} unavailable, tools missing from the list: {servers}\n")
    return 1


def _list(args: argparse.Namespace) -> int:
    config, merged = load_merged(args)
    rows = merged.rows(config.loaded.settings.tools.dot_delimiter)
    if args.json:
        payload = [{"source": s, "canonical": c, "wire": w} for s, c, w in rows]
        sys.stdout.write(json.dumps(payload, ensure_ascii=False, indent=2) + "\n")
        return _unavailable(merged)
    header = ("SOURCE", "CANONICAL", "WIRE")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(2)]
    for source, canonical, wire in [header, *rows]:
        sys.stdout.write(f"{source:<{widths[0]}}  {canonical:<{widths[1]}}  {wire}\n")
    sys.stdout.write(f"{plural(len(rows), 'tool')}\n")
    return _unavailable(merged)


def _export(args: argparse.Namespace) -> int:
    _, merged = load_merged(args)
    catalog = merged.toolset.catalog
    text = json.dumps(catalog.schemas(catalog.names), ensure_ascii=False, indent=2) + "\n"
    if args.output:
        try:
            Path(args.output).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise CliError(f"{args.output}: cannot write: {exc.strerror}") from None
        sys.stderr.write(f"wrote {plural(len(catalog), 'tool schema')} to {args.output}\n")
    else:
        sys.stdout.write(text)
    return _unavailable(merged)
