"""Command-line options and conventions that every ``bot-toolsearch`` command shares.

One error format for every command: ``error: <message>`` on stderr, exit status 2 for a usage
error (a bad option or argument), 1 for a failure (a missing file, an invalid config, an
unreachable endpoint), 130 after Ctrl-C. A command raises `CliError`; `main` prints it.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import NoReturn

from bot_toolsearch._config.file import LoadedConfig, load_config, parse_config
from bot_toolsearch._errors import ConfigError

__all__ = [
    "DEFAULT_CONFIG",
    "FAILURE",
    "INTERRUPTED",
    "NO_FILE_SOURCE",
    "USAGE",
    "CliConfig",
    "CliError",
    "CliParser",
    "add_config_option",
    "config_argument",
    "fail",
    "load_cli_config",
    "plural",
    "report_error",
    "searching_by_default",
]

DEFAULT_CONFIG = "config.toml"
"""The config file a command reads when ``--config`` is not given."""

NO_FILE_SOURCE = "no config file: the defaults, with tool search on"
"""Where ``skills.tool_search_enabled`` comes from with no file and no environment variable
setting it: every command runs with tool search on then (the rule of `_services.mode`), and
``config show`` says so."""
_ENABLED = "skills.tool_search_enabled"

FAILURE = 1
"""Exit status of a command that could not do its job."""
USAGE = 2
"""Exit status of a command line that is wrong (argparse's own, too)."""
INTERRUPTED = 130
"""Exit status after Ctrl-C (128 + SIGINT), as shells report it."""


class CliError(Exception):
    """A one-line failure for stderr and the exit status; never a traceback."""

    def __init__(self, message: str, status: int = FAILURE) -> None:
        super().__init__(message)
        self.status = status


def report_error(message: object) -> None:
    """Print ``error: <message>`` on stderr (one line, whitespace collapsed)."""
    sys.stdout.flush()
    sys.stderr.write(f"error: {' '.join(str(message).split())}\n")
    sys.stderr.flush()


class CliParser(argparse.ArgumentParser):
    """An `argparse.ArgumentParser` whose usage errors read ``error: ...`` (exit status 2)."""

    def error(self, message: str) -> NoReturn:
        """Print the usage line and ``error: <message>``, then exit with status 2."""
        self.print_usage(sys.stderr)
        report_error(f"{self.prog}: {message}")
        raise SystemExit(USAGE)


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def add_config_option(parser: argparse.ArgumentParser, *, suppress: bool = False) -> None:
    """Add ``--config PATH`` (default ``./config.toml``; see `load_cli_config`).

    Args:
        suppress: leave the attribute alone when the option is not given here (for an option
            repeated on a sub-command, so the group's value stays).
    """
    parser.add_argument(
        "--config",
        default=argparse.SUPPRESS if suppress else None,
        metavar="PATH",
        help=f"config file (default: ./{DEFAULT_CONFIG}; without one, the defaults and the "
        "environment apply)",
    )


@dataclass(frozen=True, slots=True)
class CliConfig:
    """The config a command runs on."""

    loaded: LoadedConfig
    """The settings and where each value came from."""
    path: Path | None
    """The file read, or ``None`` when there is none and the defaults (+ env) apply."""

    def describe(self) -> str:
        """``config.toml`` or ``no config file (defaults + environment)``, for one line."""
        return str(self.path) if self.path is not None else "no config file (defaults + env)"


def config_argument(args: argparse.Namespace) -> tuple[Path, bool]:
    """The ``--config`` path and whether it was given explicitly."""
    given: str | None = getattr(args, "config", None)
    return Path(given or DEFAULT_CONFIG), given is not None


def load_cli_config(args: argparse.Namespace, *, announce: bool = True) -> CliConfig:
    """The config of ``--config``; the defaults plus the environment when there is no file.

    A ``--config`` given explicitly must exist (a mistyped path is not silently ignored); the
    default ``./config.toml`` may be missing, which is said in one line on stderr.

    Raises:
        CliError: the file is missing (when named explicitly) or invalid.
    """
    path, explicit = config_argument(args)
    if explicit or path.exists():
        try:
            return CliConfig(load_config(path), path)
        except ConfigError as exc:  # file:line:column and the key
            raise CliError(str(exc)) from None
    loaded, errors = parse_config("")
    if loaded is None:  # only the environment can be wrong here
        raise CliError(str(errors[0]))
    if announce:
        sys.stderr.write(
            f"note: no ./{DEFAULT_CONFIG} here: running on the defaults and the environment "
            "(`bot-toolsearch config init` writes one)\n"
        )
    if loaded.sources.get(_ENABLED) == "default":  # no settings at all: tool search on
        settings = loaded.settings
        skills = settings.skills.model_copy(update={"tool_search_enabled": True})
        loaded = replace(
            loaded,
            settings=settings.model_copy(update={"skills": skills}),
            sources={**loaded.sources, _ENABLED: NO_FILE_SOURCE},
        )
    return CliConfig(loaded, None)


def searching_by_default(config: CliConfig) -> bool:
    """Whether tool search is on only because there is no config file (and the environment
    does not set ``tool_search_enabled``), as `load_cli_config` gives it."""
    return config.path is None and config.loaded.sources.get(_ENABLED) == NO_FILE_SOURCE


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """``1 tool``, ``2 tools``, ``0 entries`` (with ``plural_form``)."""
    return f"{count} {noun if count == 1 else plural_form or noun + 's'}"


def fail(message: str, status: int = FAILURE) -> NoReturn:
    """Raise `CliError` (for brevity in the commands)."""
    raise CliError(message, status)
