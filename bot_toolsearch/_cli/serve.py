"""``bot-toolsearch serve``: the OpenAI-compatible proxy that adds tool search to any client.

The proxy is stateless, so ``--workers N`` runs N processes on one port (uvicorn's own
workers); the upstream URL and the config path reach each worker through the environment.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

__all__ = ["add_serve_subparser"]


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
    serve.set_defaults(func=_serve)


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from bot_toolsearch._config.file import load_settings
    from bot_toolsearch._errors import ConfigError
    from bot_toolsearch._proxy.app import ENV_CONFIG, ENV_UPSTREAM

    if not args.upstream.startswith(("http://", "https://")):
        print(f"error: --upstream must be an http(s) URL, got {args.upstream!r}", file=sys.stderr)
        return 2
    os.environ[ENV_UPSTREAM] = args.upstream
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
    )
    return 0
