"""``bot-toolsearch serve``: the OpenAI-compatible proxy that adds tool search to any client.

The proxy is stateless, so ``--workers N`` runs N processes on one port (uvicorn's own
workers); the upstream URL and the config path reach each worker through the environment.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

_N = TypeVar("_N", int, float)

__all__ = ["add_serve_subparser"]

DEFAULT_MAX_BODY = 64 * 1024 * 1024
"""``--max-body`` (the proxy's own default)."""
DEFAULT_MAX_TOOLS = 20_000
"""``--max-tools`` (the proxy's own default)."""
_GRACEFUL_SHUTDOWN = 5
"""Seconds a stopping server (SIGTERM, Ctrl-C) waits for requests in flight before it
cancels them, which closes their upstream connections."""


def _positive(kind: Callable[[str], _N]) -> Callable[[str], _N]:
    def parse(text: str) -> _N:
        value = kind(text)
        if not value > 0:  # also refuses NaN
            raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in its messages
    return parse


def add_serve_subparser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``serve`` command."""
    serve = subparsers.add_parser(
        "serve", help="an OpenAI-compatible proxy that adds tool search to any client"
    )
    serve.add_argument("--upstream", required=True, help="the upstream base URL (…/v1)")
    serve.add_argument("--config", help="config.toml ([skills], [tools], [model] max_rounds)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--port", type=int, default=8787, help="port to listen on")
    serve.add_argument("--workers", type=int, default=1, help="worker processes (stateless)")
    serve.add_argument(
        "--timeout",
        type=_positive(float),
        help="seconds per upstream request (default: [model] timeout of --config, else 60);"
        " a request body's 'timeout' field never overrides it",
    )
    serve.add_argument(
        "--max-body",
        type=_positive(int),
        default=DEFAULT_MAX_BODY,
        help="largest request body in bytes; a larger one is refused with 413, never cut"
        " (default: %(default)s)",
    )
    serve.add_argument(
        "--max-tools",
        type=_positive(int),
        default=DEFAULT_MAX_TOOLS,
        help="most entries in one request's 'tools'; more is refused with 400"
        " (default: %(default)s)",
    )
    serve.set_defaults(func=_serve)


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from bot_toolsearch._config.file import load_settings
    from bot_toolsearch._errors import ConfigError
    from bot_toolsearch._proxy.app import (
        ENV_CONFIG,
        ENV_MAX_BODY,
        ENV_MAX_TOOLS,
        ENV_TIMEOUT,
        ENV_UPSTREAM,
    )

    parts = urlsplit(args.upstream)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        print(f"error: --upstream must be an http(s) URL, got {args.upstream!r}", file=sys.stderr)
        return 2
    os.environ[ENV_UPSTREAM] = args.upstream
    os.environ[ENV_MAX_BODY] = str(args.max_body)
    os.environ[ENV_MAX_TOOLS] = str(args.max_tools)
    if args.timeout is not None:
        os.environ[ENV_TIMEOUT] = repr(args.timeout)
    if args.config:
        path = Path(args.config).absolute()
        try:
            load_settings(path)  # fail here, once, rather than in every worker
        except ConfigError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        os.environ[ENV_CONFIG] = str(path)
    uvicorn.run(
        "bot_toolsearch._proxy.app:app_from_env",
        factory=True,
        host=args.host,
        port=args.port,
        workers=max(1, args.workers),
        log_level="info",
        timeout_graceful_shutdown=_GRACEFUL_SHUTDOWN,
    )
    return 0
