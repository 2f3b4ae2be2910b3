"""Run ``bot-toolsearch`` in this process, as a subprocess would see it, but without the
interpreter start-up (about a second per run on a loaded machine).

`run_cli` gives the command its own working directory, environment, stdin, stdout and stderr,
and a stderr handler for library log lines like the one ``main`` sets up, and restores them
all afterwards. Tests whose point is the process itself (signals, a terminal, ``python -m``)
still use a real subprocess.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

from bot_toolsearch._cli.main import main
from bot_toolsearch._config.env import ENV_FALLBACKS

__all__ = ["clean_env", "run_cli"]


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment without OpenAI endpoint variables or config fallbacks, plus ``extra``."""
    drop = {"OPENAI_API_KEY", "OPENAI_BASE_URL", *ENV_FALLBACKS}
    return {**{k: v for k, v in os.environ.items() if k not in drop}, **(extra or {})}


@contextlib.contextmanager
def _environ(env: Mapping[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def run_cli(
    *args: str,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """``bot-toolsearch ARGS`` in-process; ``env`` is added to `clean_env`."""
    out, err = io.StringIO(), io.StringIO()
    handler = logging.StreamHandler(err)
    handler.setFormatter(logging.Formatter("%(levelname)s: %(message)s"))
    handler.setLevel(logging.WARNING)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        with (
            contextlib.chdir(cwd or Path.cwd()),
            _environ(clean_env(env)),
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
        ):
            saved_stdin = sys.stdin
            sys.stdin = io.StringIO(stdin or "")
            try:
                status = main(list(args))
            finally:
                sys.stdin = saved_stdin
    finally:
        root.removeHandler(handler)
    return subprocess.CompletedProcess(list(args), status, out.getvalue(), err.getvalue())
