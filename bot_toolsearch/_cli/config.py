"""``bot-toolsearch config init|show|get|set|validate``: write, read and edit ``config.toml``.

``init`` writes the documented example (shipped in the package); ``show`` and ``get`` work
without a file (the defaults and the environment); ``set`` creates the file when it is
missing, with ``[skills] tool_search_enabled = true`` (tool search stays on, as it is without
a file).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.resources
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import tomlkit
from pydantic import BaseModel

from bot_toolsearch._config.edit import set_value, split_key
from bot_toolsearch._config.file import TABLES, check_config, load_config, read_config_text
from bot_toolsearch._errors import ConfigError

from .options import CliError, add_config_option, config_argument, load_cli_config

__all__ = [
    "EXAMPLE_CONFIG",
    "add_config_subparser",
    "example_config",
    "parse_cli_value",
    "render_value",
]

_SECRET_KEYS = frozenset({"api_key"})
_SDK_FALLBACKS = {"model.base_url": "OPENAI_BASE_URL", "model.api_key": "OPENAI_API_KEY"}
"""Keys left unset that the openai SDK fills from the environment (`config show` says so)."""
EXAMPLE_CONFIG = "config.example.toml"
"""The documented example config, shipped inside the package (a copy of the repository's)."""


def example_config() -> str:
    """The text of the documented example config that ``config init`` writes."""
    resource = importlib.resources.files("bot_toolsearch").joinpath(EXAMPLE_CONFIG)
    return resource.read_text(encoding="utf-8")


def add_config_subparser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``config`` command group to a CLI's subparsers."""
    config = subparsers.add_parser(
        "config", help="write, show, get, set or validate config.toml values"
    )
    add_config_option(config)
    actions = config.add_subparsers(dest="config_action", metavar="ACTION", required=True)

    def action(
        name: str, help_text: str, description: str | None = None
    ) -> argparse.ArgumentParser:
        parser = actions.add_parser(name, help=help_text, description=description)
        # Accepted after the action too; SUPPRESS keeps the group's value when omitted here.
        add_config_option(parser, suppress=True)
        return parser

    init = action("init", "write the documented example config (every key, with comments)")
    init.add_argument("--force", action="store_true", help="overwrite an existing file")
    init.set_defaults(func=_init)
    show = action("show", "every effective value and where it comes from (default, file, env)")
    show.set_defaults(func=_show)
    get = action("get", "print one effective value as TOML")
    get.add_argument("key", metavar="KEY", help="TABLE.KEY, e.g. skills.tool_search_max_results")
    get.set_defaults(func=_get)
    put = action("set", "set one value, keeping the rest of the file as it is")
    put.add_argument("key", metavar="KEY", help="TABLE.KEY, e.g. skills.tool_search_max_results")
    put.add_argument(
        "value", metavar="VALUE", help='a TOML value (8, true, ["a", "b"], "text") or a bare word'
    )
    put.set_defaults(func=_set)
    validate = action(
        "validate",
        "check a config file and what it points at; exit status 1 when it has errors",
        description="Check a config file: its keys and values, then what it points at: each "
        "tool folder's handler.py is imported (its module code runs) and must define execute, "
        "each MCP server's command must be found, and each MCP server is started once and "
        "asked for its tools (--no-connect skips starting them). Exit status 1 on any error; "
        "warnings (what a running bot also only warns about: a setting that matches nothing, "
        "an MCP server it cannot reach now) are printed and exit 0, unless --strict.",
    )
    validate.add_argument(
        "path", metavar="PATH", nargs="?", help="file to check (default: --config)"
    )
    validate.add_argument(
        "--no-connect",
        action="store_true",
        help="do not start the MCP servers (default: start each one and list its tools)",
    )
    validate.add_argument(
        "--strict", action="store_true", help="exit status 1 on warnings too (for CI)"
    )
    validate.set_defaults(func=_validate)


def parse_cli_value(text: str) -> object:
    """A VALUE argument: a TOML value when it parses as exactly one, else the text itself."""
    try:
        document = tomlkit.parse(f"value = {text}")
    except tomlkit.exceptions.ParseError:
        return text
    # More than one key means VALUE smuggled in a newline and another key: take it literally.
    if list(document) != ["value"]:
        return text
    return document.item("value").unwrap()


def render_value(value: object, *, mask: bool = False) -> str:
    """A value as TOML text (``None`` as ``(not set)``); ``mask`` hides secrets."""
    if value is None:
        return "(not set)"
    if mask:
        return '"********"'
    if isinstance(value, BaseModel):
        value = {k: v for k, v in value.model_dump().items() if v not in (None, (), {})}
        if "headers" in value:  # an MCP server's: a value written out in full may be a token
            value["headers"] = {
                k: v if "${env:" in v else "********" for k, v in value["headers"].items()
            }
    if isinstance(value, Mapping):
        body = ", ".join(f"{k} = {render_value(v)}" for k, v in value.items())
        return f"{{ {body} }}" if body else "{}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(render_value(v) for v in value) + "]"
    if isinstance(value, Path):
        value = str(value)
    return str(tomlkit.item(value).as_string())


def _out(text: object) -> None:
    # sys.stdout.write, not print: the package bans print outside the _cli*.py modules.
    sys.stdout.write(f"{text}\n")


def _err(text: object) -> None:
    sys.stderr.write(f"{text}\n")


def _fail(message: object) -> int:
    raise CliError(str(message))


def _init(args: argparse.Namespace) -> int:
    path, _ = config_argument(args)
    text = example_config()
    try:
        with open(path, "w" if args.force else "x", encoding="utf-8") as handle:
            handle.write(text)
    except FileExistsError:
        return _fail(f"{path} already exists; keeping it (--force overwrites it)")
    except OSError as exc:
        return _fail(f"{path}: cannot write: {exc.strerror}")
    _out(f"wrote {path}: every key with its default and what it does; edit what you need")
    return 0


_SHOW_ALIGN = 60
"""``config show`` aligns the ``# source`` comments of lines up to this wide."""


def _show(args: argparse.Namespace) -> int:
    loaded = load_cli_config(args).loaded
    lines = []
    for table in TABLES:
        section = getattr(loaded.settings, table)
        for name in type(section).model_fields:
            value = getattr(section, name)
            source = loaded.sources[f"{table}.{name}"]
            fallback = _SDK_FALLBACKS.get(f"{table}.{name}")
            if value is None and fallback and os.environ.get(fallback):
                # What the SDK will use: the variable the key falls back to.
                value, source = os.environ[fallback], f"env {fallback} (the SDK's fallback)"
            masked = name in _SECRET_KEYS and value is not None
            lines.append((f"{table}.{name} = {render_value(value, mask=masked)}", source))
    # Aligned comments, but a long value is not padded up to: no line is wider than it needs.
    width = min(max(len(text) for text, _ in lines), _SHOW_ALIGN)
    for text, source in lines:
        _out(f"{text.ljust(width)}  # {source}")
    return 0


def _get(args: argparse.Namespace) -> int:
    try:
        table, name = split_key(args.key)
    except ConfigError as err:
        return _fail(err)
    settings = load_cli_config(args, announce=False).loaded.settings
    value = getattr(getattr(settings, table), name)
    if value is None:
        return _fail(f"{args.key} is not set")
    _out(render_value(value))
    return 0


def _set(args: argparse.Namespace) -> int:
    path, _ = config_argument(args)
    try:
        table, name = split_key(args.key)
        with _created_if_missing(path) as created:
            # A new file keeps tool search on, as it was without one (one rule, mode.py).
            keep_on = created and f"{table}.{name}" != _ENABLED
            if keep_on:
                set_value(path, _ENABLED, True)
            written = parse_cli_value(args.value)
            set_value(path, args.key, written)
        value = getattr(getattr(load_cli_config(args).loaded.settings, table), name)
    except ConfigError as err:
        return _fail(err)
    except OSError as exc:
        return _fail(f"{path}: cannot write: {exc.strerror}")
    # What was written to the file; a relative path is read relative to the file's folder.
    secret = name in _SECRET_KEYS
    shown = render_value(written, mask=secret)
    read = render_value(value, mask=secret)
    if read != shown and not secret and read != render_value(parse_cli_value(shown)):
        shown += f" (read as {read})"
    also = f"{_ENABLED} = true (tool search on, as without a file) and " if keep_on else ""
    _out(f"{path}: {'created with ' + also if created else 'set '}{table}.{name} = {shown}")
    return 0


_ENABLED = "skills.tool_search_enabled"


@contextlib.contextmanager
def _created_if_missing(path: Path) -> Iterator[bool]:
    """Create an empty ``path`` if it is missing; remove it again if the block fails."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    except FileExistsError:
        yield False
        return
    try:
        yield True
    except BaseException:
        with contextlib.suppress(OSError):
            path.unlink()
        raise


def _validate(args: argparse.Namespace) -> int:
    path = args.path or str(config_argument(args)[0])
    try:
        read_config_text(Path(path))
    except ConfigError as err:
        return _fail(err)
    errors: list[object] = list(check_config(path))
    if not errors:
        import asyncio

        from bot_toolsearch._runtime.setup_check import (
            check_setup,
            check_tool_sources,
            connect_mcp_servers,
        )

        settings = load_config(path).settings
        warnings: list[object] = list(check_setup(settings))
        # What the config points at: folder handlers, MCP commands, then the servers. A server
        # that cannot be reached now is a warning, as in a running bot (which retries it).
        errors += [f"{path}: {problem}" for problem in check_tool_sources(settings)]
        if not args.no_connect:
            warnings += asyncio.run(connect_mcp_servers(settings))
        for warning in warnings:
            _err(f"{path}: warning: {warning}")
        count = len(warnings)
        if not errors and count and args.strict:
            raise CliError(f"{path}: {count} warning{'s' * (count > 1)} (--strict)")
        if not errors:
            _out(f"{path}: OK" + (f" ({count} warning{'s' * (count > 1)})" if count else ""))
            return 0
    for problem in errors:
        _err(problem)
    count = len(errors)
    raise CliError(f"{path}: {count} error{'s' * (count > 1)}")
