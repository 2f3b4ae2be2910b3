"""``bot-toolsearch config show|get|set|validate``: read and edit ``config.toml`` safely."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path

import tomlkit
from pydantic import BaseModel

from bot_toolsearch._config.edit import get_value, set_value, split_key
from bot_toolsearch._config.file import TABLES, check_config, load_config, read_config_text
from bot_toolsearch._errors import ConfigError

__all__ = ["add_config_subparser", "parse_cli_value", "render_value"]

_SECRET_KEYS = frozenset({"api_key"})
_DEFAULT_PATH = "config.toml"


def add_config_subparser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``config`` command group to a CLI's subparsers."""
    config = subparsers.add_parser("config", help="show, get, set or validate config.toml values")
    config.add_argument(
        "--config",
        default=_DEFAULT_PATH,
        metavar="PATH",
        help=f"config file (default: ./{_DEFAULT_PATH})",
    )
    actions = config.add_subparsers(dest="config_action", metavar="ACTION", required=True)

    def action(name: str, help_text: str) -> argparse.ArgumentParser:
        parser = actions.add_parser(name, help=help_text)
        # Accepted after the action too; SUPPRESS keeps the group's value when omitted here.
        parser.add_argument(
            "--config", default=argparse.SUPPRESS, metavar="PATH", help="config file"
        )
        return parser

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
    validate = action("validate", "check a config file; exit status 1 when it has errors")
    validate.add_argument(
        "path", metavar="PATH", nargs="?", help="file to check (default: --config)"
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
    _err(f"bot-toolsearch config: {message}")
    return 1


def _show(args: argparse.Namespace) -> int:
    try:
        loaded = load_config(args.config)
    except ConfigError as err:
        return _fail(err)
    lines = []
    for table in TABLES:
        section = getattr(loaded.settings, table)
        for name in type(section).model_fields:
            value = getattr(section, name)
            masked = name in _SECRET_KEYS and value is not None
            lines.append((f"{table}.{name} = {render_value(value, mask=masked)}", table, name))
    width = max(len(text) for text, _, _ in lines)
    for text, table, name in lines:
        _out(f"{text:<{width}}  # {loaded.sources[f'{table}.{name}']}")
    return 0


def _get(args: argparse.Namespace) -> int:
    try:
        value = get_value(args.config, args.key)
    except ConfigError as err:
        return _fail(err)
    if value is None:
        return _fail(f"{args.key} is not set")
    _out(render_value(value))
    return 0


def _set(args: argparse.Namespace) -> int:
    try:
        split_key(args.key)
        set_value(args.config, args.key, parse_cli_value(args.value))
        value = get_value(args.config, args.key)
    except ConfigError as err:
        return _fail(err)
    except OSError as exc:
        return _fail(f"{args.config}: cannot write: {exc.strerror}")
    table, name = split_key(args.key)
    shown = render_value(value, mask=name in _SECRET_KEYS)
    _out(f"{args.config}: set {table}.{name} = {shown}")
    return 0


def _validate(args: argparse.Namespace) -> int:
    path = args.path or args.config
    try:
        read_config_text(Path(path))
    except ConfigError as err:
        return _fail(err)
    errors = check_config(path)
    if not errors:
        from bot_toolsearch._runtime.setup_check import check_setup

        warnings = check_setup(load_config(path).settings)
        for warning in warnings:
            _err(f"{path}: warning: {warning}")
        count = len(warnings)
        _out(f"{path}: OK" + (f" ({count} warning{'s' * (count > 1)})" if count else ""))
        return 0
    for problem in errors:
        _err(problem)
    count = len(errors)
    _err(f"{path}: {count} error{'s' * (count > 1)}")
    return 1
