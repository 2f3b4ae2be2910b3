"""Command-line options that several ``bot-toolsearch`` commands share."""

from __future__ import annotations

import argparse

__all__ = ["DEFAULT_CONFIG", "add_config_option"]

DEFAULT_CONFIG = "config.toml"
"""The config file a command reads when ``--config`` is not given."""


def add_config_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--config PATH`` (default ``./config.toml``) to ``parser``."""
    parser.add_argument(
        "--config",
        default=DEFAULT_CONFIG,
        metavar="PATH",
        help=f"config file (default: ./{DEFAULT_CONFIG})",
    )
