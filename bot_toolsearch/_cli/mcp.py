"""``bot-toolsearch mcp``: the config's tool catalog as an MCP server with tool search in front.

Over stdio (the default: a desktop or IDE client launches it) or streamable HTTP
(``--http --port N``, on 127.0.0.1 unless ``--host`` says otherwise). Without ``--config`` (and
no ``./config.toml``) tool search is on with the ``[skills]`` defaults, as for ``serve``; with
one, ``[skills]``, ``[tools]`` and hot reload apply as for the `Bot`. Over HTTP, ``--api-key``
(or the config's ``[proxy] keys`` file) makes every request carry one of the keys; a
``--host`` that is not a loopback address is refused without one (or ``[[proxy.clients]]``,
each with its own tool set); ``[proxy] state`` keeps the sessions in Redis, so several door
processes serve any session.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import sys
from pathlib import Path
from typing import Any

from .options import CliError, add_config_option, load_cli_config, searching_by_default

__all__ = ["add_mcp_subparser"]


def add_mcp_subparser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``mcp`` command."""
    parser = subparsers.add_parser(
        "mcp",
        help="an MCP server: tool search in front of the config's tools, for any MCP client",
        description="Serve the config's tool catalog (tool folders, --tools, [tools] "
        "mcp_servers) to an MCP client with tool search in front: stdio by default, streamable "
        "HTTP with --http.",
    )
    add_config_option(parser)
    parser.add_argument(
        "--tools",
        metavar="MODULE:ATTR",
        help="code tools to serve: a sequence of Tool (or a callable returning one), named as "
        "package.module:attribute or path/to/file.py:attribute",
    )
    parser.add_argument(
        "--http", action="store_true", help="serve streamable HTTP at /mcp instead of stdio"
    )
    parser.add_argument("--host", default="127.0.0.1", help="address for --http")
    parser.add_argument("--port", type=int, default=8788, help="port for --http")
    parser.add_argument(
        "--api-key",
        action="append",
        metavar="KEY",
        help="with --http, a key every request must carry as 'Authorization: Bearer KEY' "
        "(repeatable; or [proxy] keys, a file, in the config); needed for a --host that is "
        "not a loopback address",
    )
    parser.set_defaults(func=_mcp)


def _mcp(args: argparse.Namespace) -> int:
    from bot_toolsearch._errors import ToolSearchError
    from bot_toolsearch._services.mode import search_mode

    from .chat import load_tools

    try:
        tools, agents = load_tools(args.tools) if args.tools else ((), ())
    except ValueError as exc:
        raise CliError(str(exc)) from None
    if agents:
        raise CliError("--tools: agents cannot be served over MCP; pass tools only")
    config = load_cli_config(args)
    settings: Any = config.loaded.settings
    base_dir: Path | None = None
    if config.path is not None:  # (no file: tool search on, as `load_cli_config` gives it)
        base_dir = config.path.resolve().parent
        if settings.bot.hot_reload:
            from bot_toolsearch._config.reload import ConfigReloader

            settings = ConfigReloader(config.path)
    keys = _keys(args, config.loaded.settings)
    if args.http:
        from .serve import _check_port

        _check_port(args.host, args.port)  # one error line, before any server starts
    where = f"http://{args.host}:{args.port}/mcp" if args.http else "stdio"
    mode = search_mode(
        None if searching_by_default(config) else config.loaded.settings,
        source="config file" if config.path is not None else "environment",
    )
    # stderr: over stdio, stdout is the protocol.
    sys.stderr.write(f"mcp: serving {config.describe()} on {where}; {mode}\n")
    sys.stderr.flush()
    state = config.loaded.settings.proxy.state if args.http else None
    if state is not None:
        import importlib.util

        if importlib.util.find_spec("redis") is None:
            raise CliError("[proxy] state needs the redis package: pip install '.[redis]'")
    try:
        asyncio.run(_serve(args, settings, tools, base_dir, keys, state=state))
    except ToolSearchError as exc:
        raise CliError(str(exc)) from None
    return 0


def _keys(args: argparse.Namespace, settings: Any) -> list[str]:
    """The client keys of ``--http`` (``--api-key``, else ``[proxy] keys``), after the
    checks: none without ``--http``; some (or ``[[proxy.clients]]``) for a host that is not
    loopback."""
    keys: list[str] = list(args.api_key or ())
    if any(not key.strip() or any(c.isspace() for c in key) for key in keys):
        raise CliError("--api-key: a key must be non-empty, without spaces")
    if not keys and settings.proxy.keys is not None and args.http:
        from bot_toolsearch._proxy.keys import read_keys

        try:
            keys = read_keys(settings.proxy.keys)
        except (OSError, ValueError) as exc:
            raise CliError(f"[proxy] keys: {exc}") from None
    if keys and not args.http:
        raise CliError("--api-key: keys are for --http (over stdio the client starts the door)")
    if args.http and not keys and not settings.proxy.clients and not _loopback(args.host):
        raise CliError(
            f"--host {args.host} is not a loopback address: anyone who reaches the port could "
            "run every tool. Give --api-key KEY (clients send 'Authorization: Bearer KEY') or "
            "[[proxy.clients]] in the config, or serve on 127.0.0.1"
        )
    return keys


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


async def _serve(
    args: argparse.Namespace,
    settings: Any,
    tools: Any,
    base_dir: Any,
    keys: list[str],
    *,
    state: str | None,
) -> None:
    from bot_toolsearch._mcp.door import McpDoor
    from bot_toolsearch._mcp.server import run_http, run_stdio

    start = getattr(settings, "start", None)
    if start is not None:
        start()
    try:
        async with McpDoor(settings, tools, base_dir=base_dir) as door:
            if args.http:
                await run_http(door, args.host, args.port, keys=keys, state=state)
            else:
                await run_stdio(door)
    finally:
        stop = getattr(settings, "stop", None)
        if stop is not None:
            stop()
