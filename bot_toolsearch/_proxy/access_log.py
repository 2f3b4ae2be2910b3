"""The proxy's logging: ``serve --log-level`` and the JSON access log (``--access-log json``).

The JSON access log writes one object per HTTP request on stderr, through the logger
``bot_toolsearch.access``: time, method, path (secret-looking query values redacted), status,
duration, route, and for a tool-searched call the model, whether it streamed, and what tool
search did (rounds, hidden rounds, searches, tools loaded, refusals, tokens). It never holds a
key, a header, a body or a model's text (search queries are the model's words: they are in the
``bot_toolsearch.rounds`` records at INFO, not in the access log). With it every line on stderr
is JSON: the package's records (a round's ``toolsearch_*`` fields included), uvicorn's own
(`uvicorn_log_config`) and the start-up banner (`json_line`).
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Mapping
from typing import Any

from bot_toolsearch._config.redact import redact_query as _redact_values

__all__ = [
    "ACCESS_FORMATS",
    "ACCESS_LOGGER",
    "JsonFormatter",
    "configure_logging",
    "json_line",
    "logged_target",
    "redact_access_log",
    "redact_query",
    "uvicorn_log_config",
]

ACCESS_LOGGER = "bot_toolsearch.access"
"""The logger of the JSON access log."""
ACCESS_FORMATS = ("text", "json", "off")
"""``serve --access-log``: uvicorn's text lines, one JSON object per request, or none."""
LOG_LEVELS = ("critical", "error", "warning", "info", "debug")
"""``serve --log-level``, as uvicorn spells them."""


class JsonFormatter(logging.Formatter):
    """A record as one JSON object: ``time``, ``level``, ``logger``, ``message`` and the
    record's ``extra`` fields named in ``access``."""

    def format(self, record: logging.LogRecord) -> str:
        fields = getattr(record, "access", None)
        payload: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        if isinstance(fields, dict):
            payload.update(fields)
        else:
            payload["message"] = record.getMessage()
            payload.update(
                (key, value)
                for key, value in vars(record).items()
                if key.startswith("toolsearch_") and _plain(value)
            )
        return json.dumps(payload, ensure_ascii=False, separators=(",", ":"), default=str)


def _plain(value: object) -> bool:
    """Whether a record's extra field is a JSON value as it is (or a tuple, written as a list)."""
    return value is None or isinstance(value, str | int | float | bool | list | tuple | dict)


def json_line(message: str, logger: str = "bot_toolsearch.serve") -> str:
    """``message`` as one JSON log line (no newline), for what is written outside logging."""
    record = logging.makeLogRecord({"name": logger, "levelname": "INFO", "msg": message})
    return JsonFormatter().format(record)


def uvicorn_log_config(level: str) -> dict[str, Any]:
    """uvicorn's ``log_config`` for ``--access-log json``: its own loggers as JSON lines too."""
    handler = {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": f"{__name__}.JsonFormatter"}},
        "handlers": {"json": handler},
        "loggers": {
            "uvicorn": {"handlers": ["json"], "level": level.upper(), "propagate": False},
            "uvicorn.error": {"level": level.upper()},
            "uvicorn.access": {"handlers": [], "level": "WARNING", "propagate": False},
        },
    }


def configure_logging(level: str | None, access: str | None) -> None:
    """Give the package's loggers a stderr handler at ``level`` (``serve --log-level``) and,
    for ``access == "json"``, the JSON access log. Idempotent; nothing for ``None``."""
    if level is not None:
        package = logging.getLogger("bot_toolsearch")
        package.setLevel(level.upper())
        if not any(getattr(h, "_bot_toolsearch", False) for h in package.handlers):
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(
                JsonFormatter()
                if access == "json"  # every line JSON, the rounds' lines too
                else logging.Formatter("%(levelname)s:     %(name)s: %(message)s")
            )
            handler._bot_toolsearch = True  # type: ignore[attr-defined]
            package.addHandler(handler)
            package.propagate = False  # one line per record, not one more from the root
    log = logging.getLogger(ACCESS_LOGGER)
    if access == "json":
        log.setLevel(logging.INFO)
        log.propagate = False
        if not any(isinstance(h.formatter, JsonFormatter) for h in log.handlers):
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(JsonFormatter())
            log.addHandler(handler)


def redact_query(target: str) -> str:
    """``target`` with the values of secret-looking query parameters (``key``, ``api-key``,
    ``token``, ``secret`` ...) replaced by ``REDACTED``."""
    path, mark, query = target.partition("?")
    return f"{path}?{_redact_values(query)}" if mark else target


def logged_target(scope: Mapping[str, Any]) -> str:
    """The request target of an ASGI ``scope`` as sent (path and query), secret query values
    redacted (`redact_query`): what the access log writes."""
    raw: bytes = scope.get("raw_path") or scope["path"].encode("utf-8")
    query: bytes = scope.get("query_string") or b""
    target = raw.decode("latin-1")
    return redact_query(f"{target}?{query.decode('latin-1')}" if query else target)


class _RedactQuery(logging.Filter):
    """Redacts secret query parameters in uvicorn's access log lines."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str):
            record.args = (*args[:2], redact_query(args[2]), *args[3:])
        return True


def redact_access_log() -> None:
    """Redact secret query parameters in uvicorn's access log (idempotent)."""
    access = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, _RedactQuery) for f in access.filters):
        access.addFilter(_RedactQuery())
