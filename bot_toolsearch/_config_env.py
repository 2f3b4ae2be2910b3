"""Environment-variable fallbacks for config keys the file does not set."""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Mapping
from typing import Any, Literal

from ._errors import ConfigError

__all__ = ["ENV_FALLBACKS", "apply_env", "env_error"]

log = logging.getLogger("bot_toolsearch.config")

EnvKind = Literal["bool", "int", "list", "str", "egg"]
ENV_FALLBACKS: Mapping[str, tuple[str, str, EnvKind]] = {
    "TOOL_SEARCH_ENABLED": ("skills", "tool_search_enabled", "bool"),
    "TOOL_SEARCH_ALWAYS_LOADED": ("skills", "tool_search_always_loaded", "list"),
    "TOOL_SEARCH_MAX_RESULTS": ("skills", "tool_search_max_results", "int"),
    "PREFETCH_TOOLS": ("skills", "prefetch_tools", "list"),
    "PREFETCH_TOOLS_HIDE": ("skills", "prefetch_tools_hide", "bool"),
    "TOOL_SEARCH_BLIND_CALL": ("skills", "tool_search_blind_call", "str"),
    "TOOLS_DOT_DELIMITER": ("tools", "dot_delimiter", "str"),
    "EASTER_EGG_AGENT_CALL_MESSAGE_ENABLED": ("easter_egg", "agent_call_message_enabled", "egg"),
}
"""Environment variable → (table, key, how its text is read)."""

TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off"})

_logged_env: set[str] = set()
_logged_lock = threading.Lock()


def env_error(key: str, var: str, message: str, value: object) -> ConfigError:
    """An error in the value an environment variable gives ``key``."""
    return ConfigError(f"{key} (from environment variable {var}): {message}", key=key, value=value)


def apply_env(
    data: dict[str, Any], environ: Mapping[str, str], errors: list[ConfigError]
) -> dict[tuple[str, str], str]:
    """Fill keys the file does not set from the environment; returns (table, key) → variable."""
    used: dict[tuple[str, str], str] = {}
    for var, (table, key, kind) in ENV_FALLBACKS.items():
        raw = environ.get(var, "").strip()
        if key in data.get(table, {}) or not raw:
            continue
        try:
            value = _from_env(raw, kind)
        except ValueError as exc:
            errors.append(env_error(f"{table}.{key}", var, str(exc), raw))
            continue
        data.setdefault(table, {})[key] = value
        used[(table, key)] = var
        _log_env_once(var, f"{table}.{key}")
    return used


def _from_env(raw: str, kind: EnvKind) -> object:
    """An env var's text as the value its key expects; ``ValueError`` says what is wrong."""
    lowered = raw.lower()
    if kind == "bool":
        if lowered in TRUE_WORDS | FALSE_WORDS:
            return lowered in TRUE_WORDS
        raise ValueError(f"expected true or false (1/0, yes/no, on/off), got {raw!r}")
    if kind == "int":
        if re.fullmatch(r"[+-]?\d+", raw):
            return int(raw)
        raise ValueError(f"expected an integer, got {raw!r}")
    if kind == "list":
        return [part.strip() for part in raw.split(",") if part.strip()]
    if kind == "egg":
        # Legacy boolean spellings from the reference design (behaviour.md §6).
        return "agent" if lowered in TRUE_WORDS else "none" if lowered in FALSE_WORDS else raw
    return raw


def _log_env_once(var: str, key: str) -> None:
    with _logged_lock:
        if var in _logged_env:
            return
        _logged_env.add(var)
    log.warning("using environment variable %s for %s; consider moving it to config.toml", var, key)


def _reset_env_log() -> None:
    """Forget which env fallbacks were logged (tests)."""
    with _logged_lock:
        _logged_env.clear()
