"""Command-line entry point ``bot-toolsearch`` (``python -m bot_toolsearch``).

Each command group adds itself with one ``add_*_subparser(subparsers)`` function that sets
``func`` (``args -> exit status``) as its parser default; `main` only dispatches.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from .chat import add_chat_subparsers
from .config import add_config_subparser
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


def build_parser() -> argparse.ArgumentParser:
    """The ``bot-toolsearch`` argument parser with every command group."""
    parser = argparse.ArgumentParser(
        prog="bot-toolsearch", description="On-demand tool loading (tool search) for chat bots."
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    add_demo_subparser(subparsers)
    add_chat_subparsers(subparsers)
    add_config_subparser(subparsers)
    add_search_subparser(subparsers)
    add_catalog_subparser(subparsers)
    add_serve_subparser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit status."""
    parser = build_parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return 2
    # Library warnings (e.g. an env fallback in use) go to stderr as one plain line each.
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(message)s")
    status: int = args.func(args)
    return status


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
