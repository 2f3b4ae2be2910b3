"""``bot-toolsearch serve``: the OpenAI-compatible proxy that adds tool search to any client.

The proxy is stateless, so ``--workers N`` runs N processes on one port (uvicorn's own
workers); the upstream URL and the config path reach each worker through the environment.
``--upstream offline`` serves the embedded offline model on 127.0.0.1 (a thread of this
process) and puts the proxy in front of it, so the proxy can be tried with no key.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import socket
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from .options import USAGE, CliError, fail

__all__ = ["OFFLINE_UPSTREAM", "add_serve_subparser"]

OFFLINE_UPSTREAM = "offline"
"""``--upstream offline``: the embedded offline model, served by this process."""
DEFAULT_MAX_BODY = 64 * 1024 * 1024
"""``--max-body`` (the proxy's own default)."""
DEFAULT_MAX_TOOLS = 20_000
"""``--max-tools`` (the proxy's own default)."""
DEFAULT_MAX_IN_FLIGHT = 256
"""``--max-in-flight`` (the proxy's own default)."""
DEFAULT_INDEX_BUILDS = 2
"""``--index-builds`` (the proxy's own default)."""
DEFAULT_READ_TIMEOUT = 30.0
"""``--read-timeout`` (the proxy's own default)."""
_GRACEFUL_SHUTDOWN = 5
"""Seconds a stopping server (SIGTERM, Ctrl-C) waits for requests in flight before it
cancels them, which closes their upstream connections."""

_N = TypeVar("_N", int, float)


def _positive(kind: Callable[[str], _N]) -> Callable[[str], _N]:
    def parse(text: str) -> _N:
        value = kind(text)
        if not value > 0:  # also refuses NaN
            raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in its messages
    return parse


class _DefaultsFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows a default where there is one and the help text does not already state it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if action.required or action.default is None or "default" in text:
            return text
        return super()._get_help_string(action)


def add_serve_subparser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``serve`` command."""
    serve = subparsers.add_parser(
        "serve",
        help="an OpenAI-compatible proxy that adds tool search to any client",
        description="An OpenAI-compatible proxy that adds tool search to any client: point "
        "the client's base_url at http://HOST:PORT/v1.",
        formatter_class=_DefaultsFormatter,
    )
    serve.add_argument(
        "--upstream",
        required=True,
        help="the upstream base URL (…/v1), or 'offline' for the embedded offline model (no "
        "key, no network: a deterministic planner on 127.0.0.1, not an LLM)",
    )
    serve.add_argument(
        "--upstream-api",
        choices=("openai", "messages"),
        default="openai",
        help="what the upstream speaks besides: 'messages', an Anthropic-compatible "
        "/v1/messages, which POST /v1/messages then uses with tool search (docs/messages.md)",
    )
    serve.add_argument(
        "--config",
        help="config.toml ([skills], [tools], [model] max_rounds); without one, the [skills] "
        "defaults with tool search on",
    )
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
        help="largest request body in bytes; a larger one is refused with 413, never cut",
    )
    serve.add_argument(
        "--max-tools",
        type=_positive(int),
        default=DEFAULT_MAX_TOOLS,
        help="most entries in one request's 'tools'; more is refused with 400",
    )
    serve.add_argument(
        "--max-in-flight",
        type=_positive(int),
        default=DEFAULT_MAX_IN_FLIGHT,
        help="most requests one worker serves at once; more are refused with 429 (Retry-After)",
    )
    serve.add_argument(
        "--read-timeout",
        type=_positive(float),
        default=DEFAULT_READ_TIMEOUT,
        help="seconds a client may take to send a request's head, and again its body; slower "
        "is refused with 408 and the connection closed (a request counts against "
        "--max-in-flight only once its whole body has arrived)",
    )
    serve.add_argument(
        "--index-builds",
        type=_positive(int),
        default=DEFAULT_INDEX_BUILDS,
        help="most new tool lists one worker indexes at once (four times as many may wait); "
        "more are refused with 503 (Retry-After)",
    )
    serve.add_argument(
        "--api-key",
        action="append",
        metavar="KEY",
        help="a client key of the proxy itself (repeatable; or [proxy] keys, a file, in the "
        "config): requests must carry one, and the upstream key is then [model] api_key or "
        "OPENAI_API_KEY, never the client's",
    )
    serve.add_argument(
        "--log-level",
        choices=("critical", "error", "warning", "info", "debug"),
        default="info",
        help="log level of the server and of bot_toolsearch (info: one line per tool-search "
        "round, logger bot_toolsearch.rounds)",
    )
    serve.add_argument(
        "--access-log",
        choices=("text", "json", "off"),
        default="text",
        help="one line per request on stderr: uvicorn's text line, a JSON object with what "
        "tool search did (rounds, searches, loaded, refusals, tokens; never a key), or none",
    )
    serve.set_defaults(func=_serve)


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from bot_toolsearch._config.file import load_settings
    from bot_toolsearch._config.redact import redact_url
    from bot_toolsearch._errors import ConfigError
    from bot_toolsearch._proxy.access_log import json_line, uvicorn_log_config
    from bot_toolsearch._proxy.app import ENV_CONFIG, ENV_UPSTREAM
    from bot_toolsearch._proxy.head_deadline import HeadDeadline
    from bot_toolsearch._services.mode import search_mode

    offline = args.upstream == OFFLINE_UPSTREAM
    parts = urlsplit(args.upstream)
    if not offline and (parts.scheme not in ("http", "https") or not parts.hostname):
        fail(
            f"--upstream must be an http(s) URL or 'offline', got {redact_url(args.upstream)!r}",
            USAGE,
        )
    _export(args)
    mode = search_mode(None)
    config = "no config file"
    dot_delimiter: str | None = None
    if args.config:
        path = Path(args.config).absolute()
        try:
            settings = load_settings(path)  # fail here, once, rather than in every worker
        except ConfigError as exc:
            raise CliError(str(exc)) from None
        os.environ[ENV_CONFIG] = str(path)
        config = args.config
        mode = search_mode(settings, source=f"config {args.config}")
        dot_delimiter = settings.tools.dot_delimiter
    _check_port(args.host, args.port)
    with _upstream(args.upstream, dot_delimiter) as upstream, _shared_metrics(args.workers):
        os.environ[ENV_UPSTREAM] = upstream
        # The banner never shows the upstream's userinfo or a key in its query.
        shown = redact_url(upstream)
        if offline:
            shown += " (the EMBEDDED OFFLINE MODEL, not an LLM)"
        banner = (
            f"serve: http://{_url_host(args.host)}:{args.port}/v1 -> upstream {shown}; "
            f"config: {config}; {mode}; "
            f"{args.workers} worker{'s' * (args.workers > 1)}. Ctrl-C stops."
        )
        sys.stderr.write((json_line(banner) if args.access_log == "json" else banner) + "\n")
        sys.stderr.flush()
        logs: dict[str, Any] = {}
        if args.access_log == "json":  # every line JSON: uvicorn's own too
            logs["log_config"] = uvicorn_log_config(args.log_level)
        uvicorn.run(
            "bot_toolsearch._proxy.app:app_from_env",
            factory=True,
            # The class, not an import string: uvicorn before 0.32 takes only its own names.
            http=HeadDeadline,
            host=args.host,
            port=args.port,
            workers=max(1, args.workers),
            log_level=args.log_level,
            # uvicorn formats its text line's arguments before its logger's level is asked:
            # below ``info`` nobody reads the line, so none is made.
            access_log=args.access_log == "text" and args.log_level in ("info", "debug"),
            timeout_graceful_shutdown=_GRACEFUL_SHUTDOWN,
            **logs,
        )
    return 0


def _export(args: argparse.Namespace) -> None:
    """The options every worker reads from the environment (`app_from_env`)."""
    from bot_toolsearch._proxy.app import (
        ENV_ACCESS_LOG,
        ENV_API_KEYS,
        ENV_INDEX_BUILDS,
        ENV_LOG_LEVEL,
        ENV_MAX_BODY,
        ENV_MAX_IN_FLIGHT,
        ENV_MAX_TOOLS,
        ENV_READ_TIMEOUT,
        ENV_TIMEOUT,
        ENV_UPSTREAM_API,
    )

    os.environ[ENV_MAX_BODY] = str(args.max_body)
    os.environ[ENV_MAX_TOOLS] = str(args.max_tools)
    os.environ[ENV_MAX_IN_FLIGHT] = str(args.max_in_flight)
    os.environ[ENV_INDEX_BUILDS] = str(args.index_builds)
    os.environ[ENV_READ_TIMEOUT] = repr(args.read_timeout)
    if args.api_key:
        if any(not key.strip() or any(c.isspace() for c in key) for key in args.api_key):
            fail("--api-key: a key must be non-empty, without spaces", USAGE)
        os.environ[ENV_API_KEYS] = "\n".join(args.api_key)
    os.environ[ENV_LOG_LEVEL] = args.log_level
    os.environ[ENV_ACCESS_LOG] = args.access_log
    os.environ[ENV_UPSTREAM_API] = args.upstream_api
    if args.timeout is not None:
        os.environ[ENV_TIMEOUT] = repr(args.timeout)


@contextlib.contextmanager
def _shared_metrics(workers: int) -> Iterator[None]:
    """With several workers, one fresh folder they keep their metrics in, so any worker's
    ``/metrics`` reports the whole server (`bot_toolsearch._proxy.metrics`); removed after.
    A folder the operator set already is used as it is."""
    from bot_toolsearch._proxy.metrics import MULTIPROCESS_ENV

    if workers <= 1 or os.environ.get(MULTIPROCESS_ENV):
        yield
        return
    with tempfile.TemporaryDirectory(prefix="bot_toolsearch-metrics-") as folder:
        os.environ[MULTIPROCESS_ENV] = folder
        try:
            yield
        finally:
            os.environ.pop(MULTIPROCESS_ENV, None)


@contextlib.contextmanager
def _upstream(upstream: str, dot_delimiter: str | None) -> Iterator[str]:
    """The upstream URL; for ``offline``, the offline model's, served while the block runs."""
    if upstream != OFFLINE_UPSTREAM:
        yield upstream
        return
    from bot_toolsearch._demo.planner import OFFLINE_MODEL_NAME, OfflinePlanner
    from bot_toolsearch._scripted.server import ScriptedOpenAIServer
    from bot_toolsearch._transports.names import DEFAULT_DOT_DELIMITER

    planner = OfflinePlanner(dot_delimiter=dot_delimiter or DEFAULT_DOT_DELIMITER)
    with ScriptedOpenAIServer(responder=planner, models=(OFFLINE_MODEL_NAME,)) as server:
        yield server.base_url


def _check_port(host: str, port: int) -> None:
    """Fail in one line when ``host:port`` cannot be listened on (in use, or not ours)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        fail(f"--host {host!r}: cannot resolve it: {exc.strerror}")
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        # As uvicorn binds: SO_REUSEADDR, so a port in TIME_WAIT is not reported as in use.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                fail(f"port {port} on {host} is in use (stop what listens there, or --port N)")
            fail(f"cannot listen on {host}:{port}: {exc.strerror}")


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
