"""``bot-toolsearch catalog list``: the merged tool catalog a model will be offered."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from ._cli_options import add_config_option
from ._errors import ConfigError
from ._names import WireNames
from ._registry import ToolRegistry
from ._tool_source import ToolSetSnapshot

__all__ = ["add_catalog_list_command", "catalog_list"]


def catalog_list(
    snapshot: ToolSetSnapshot, *, dot_delimiter: str = "-_-"
) -> list[tuple[str, str, str]]:
    """``(source, canonical name, wire name)`` for every catalog tool, in catalog order.

    >>> from bot_toolsearch._tool_source import StaticToolSource
    >>> from bot_toolsearch import Tool
    >>> snap = StaticToolSource([Tool("music.play", "Play.", None, print)]).snapshot()
    >>> catalog_list(snap)
    [('code', 'music.play', 'music-_-play')]
    """
    names = snapshot.catalog.names
    wire = WireNames.build(names, dot_delimiter=dot_delimiter)
    return [(snapshot.sources[name], name, wire.to_wire(name)) for name in names]


def add_catalog_list_command(
    catalog_subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
) -> None:
    """Add ``list`` to the ``catalog`` command group's subparsers."""
    parser = catalog_subparsers.add_parser(
        "list", help="print every tool the bot offers: source, canonical name, wire name"
    )
    add_config_option(parser)
    parser.add_argument("--json", action="store_true", help="print a JSON array instead")
    parser.set_defaults(func=_list)


def _list(args: argparse.Namespace) -> int:
    from ._config_file import load_settings

    path = Path(args.config)
    try:
        settings = load_settings(path)
    except ConfigError as err:
        sys.stderr.write(f"error: {err}\n")
        return 1
    tools = settings.tools
    registry = ToolRegistry(
        tools.dirs, mcp_servers=tools.mcp_servers, base_dir=path.resolve().parent
    )

    async def collect() -> tuple[ToolSetSnapshot, dict[str, tuple[str, str | None]]]:
        await registry.start()
        try:
            return registry.snapshot(), dict(registry.mcp_status)
        finally:
            await registry.aclose()

    snapshot, status = asyncio.run(collect())
    rows = catalog_list(snapshot, dot_delimiter=tools.dot_delimiter)
    for server, (state, error) in status.items():
        if state != "ready":
            sys.stderr.write(f"warning: MCP server {server!r} is unavailable: {error}\n")
    if args.json:
        payload = [{"source": s, "canonical": c, "wire": w} for s, c, w in rows]
        sys.stdout.write(json.dumps(payload, ensure_ascii=False, indent=2) + "\n")
        return 0
    header = ("SOURCE", "CANONICAL", "WIRE")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(2)]
    for source, canonical, wire in [header, *rows]:
        sys.stdout.write(f"{source:<{widths[0]}}  {canonical:<{widths[1]}}  {wire}\n")
    sys.stdout.write(f"{len(rows)} tools\n")
    return 0
