"""Command-line entry point ``bot-toolsearch`` (``python -m bot_toolsearch``).

Each command group adds itself with one ``add_*_subparser(subparsers)`` function that sets
``func`` (``args -> exit status``) as its parser default; `main` only dispatches, and prints a
`CliError` the one way every command does (``error: ...`` on stderr; see ``options``).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from .chat import add_chat_subparsers
from .config import add_config_subparser
from .eval import add_eval_subparser
from .mcp import add_mcp_subparser
from .options import INTERRUPTED, USAGE, CliError, CliParser, report_error
from .search import add_catalog_subparser, add_search_subparser
from .serve import add_serve_subparser

__all__ = ["add_demo_subparser", "build_parser", "main"]


def add_demo_subparser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``demo`` command: the bot on the embedded offline model (or ``--model-url``)."""
    from bot_toolsearch._demo.options import add_demo_arguments

    demo = subparsers.add_parser("demo", help="run the demo on the embedded offline model")
    add_demo_arguments(demo)
    demo.set_defaults(func=_demo)


def _demo(args: argparse.Namespace) -> int:
    from bot_toolsearch._demo.run import run_demo

    return run_demo(args)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("bot-toolsearch")
    except PackageNotFoundError:  # pragma: no cover - run from a source tree never installed
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    """The ``bot-toolsearch`` argument parser with every command group."""
    parser: argparse.ArgumentParser = CliParser(
        prog="bot-toolsearch", description="On-demand tool loading (tool search) for chat bots."
    )
    parser.add_argument("--version", action="version", version=f"bot-toolsearch {_version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    add_demo_subparser(subparsers)
    add_chat_subparsers(subparsers)
    add_config_subparser(subparsers)
    add_search_subparser(subparsers)
    add_eval_subparser(subparsers)
    add_catalog_subparser(subparsers)
    add_serve_subparser(subparsers)
    add_mcp_subparser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit status (0, 1 failure, 2 usage, 130 Ctrl-C)."""
    parser = build_parser()
    try:
        args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
    except SystemExit as exc:  # --help, --version and usage errors
        return exc.code if isinstance(exc.code, int) else USAGE
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return USAGE
    # Library warnings (e.g. an env fallback in use) go to stderr as one plain line each.
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(message)s")
    try:
        status: int = args.func(args)
        sys.stdout.flush()  # here, so a closed pipe is seen here and not at exit
    except BrokenPipeError:  # `bot-toolsearch catalog list | head`: the reader had enough
        _silence_stdout()
        return BROKEN_PIPE
    except CliError as exc:
        report_error(exc)
        return exc.status
    except KeyboardInterrupt:
        sys.stderr.write("\n")
        return INTERRUPTED
    return status


BROKEN_PIPE = 141
"""Exit status when the reader of stdout went away (128 + SIGPIPE), as shells report it."""


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the flush at exit does not raise again."""
    try:
        fileno = sys.stdout.fileno()
    except (AttributeError, ValueError, OSError):  # not a real file (in-process tests)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fileno)
    os.close(devnull)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
