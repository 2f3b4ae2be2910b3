"""Environment-variable fallbacks for config keys the file does not set (pydantic-settings)."""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, ValidationError
from pydantic_core import PydanticCustomError
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from bot_toolsearch._errors import ConfigError

__all__ = [
    "ENV_FALLBACKS",
    "EnvFallbacks",
    "apply_env",
    "env_error",
    "env_reference_problem",
    "expand_env_references",
]

log = logging.getLogger("bot_toolsearch.config")

EnvKind = Literal["bool", "int", "list", "str", "egg"]
ENV_FALLBACKS: Mapping[str, tuple[str, str, EnvKind]] = {
    "TOOL_SEARCH_ENABLED": ("skills", "tool_search_enabled", "bool"),
    "TOOL_SEARCH_ALWAYS_LOADED": ("skills", "tool_search_always_loaded", "list"),
    "TOOL_SEARCH_MAX_RESULTS": ("skills", "tool_search_max_results", "int"),
    "PREFETCH_TOOLS": ("skills", "prefetch_tools", "list"),
    "PREFETCH_TOOLS_HIDE": ("skills", "prefetch_tools_hide", "bool"),
    "TOOL_SEARCH_BLIND_CALL": ("skills", "tool_search_blind_call", "str"),
    "TOOL_SEARCH_KEEP_LOADED": ("skills", "tool_search_keep_loaded", "str"),
    "TOOL_SEARCH_DIRECTORY_BUDGET": ("skills", "tool_search_directory_budget", "int"),
    "TOOL_SEARCH_LOADING": ("skills", "tool_search_loading", "str"),
    "TOOLS_DOT_DELIMITER": ("tools", "dot_delimiter", "str"),
    "EASTER_EGG_AGENT_CALL_MESSAGE_ENABLED": ("easter_egg", "agent_call_message_enabled", "egg"),
}
"""Environment variable → (table, key, how its text is read); one `EnvFallbacks` field each."""

TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off"})
_INTEGER = re.compile(r"[+-]?\d+")


def _strip(raw: object) -> object:
    return raw.strip() if isinstance(raw, str) else raw


def _to_bool(raw: object) -> object:
    # Narrower than pydantic's lax bool, which also takes t/f/y/n.
    if not isinstance(raw, str):
        return raw
    word = raw.strip().lower()
    if word in TRUE_WORDS | FALSE_WORDS:
        return word in TRUE_WORDS
    raise PydanticCustomError(
        "env_bool", "expected true or false (1/0, yes/no, on/off), got {raw}", {"raw": repr(raw)}
    )


def _to_int(raw: object) -> object:
    # Narrower than pydantic's lax int, which also takes "2.0" and "1_000".
    if not isinstance(raw, str):
        return raw
    text = raw.strip()
    if _INTEGER.fullmatch(text):
        return int(text)
    raise PydanticCustomError("env_int", "expected an integer, got {raw}", {"raw": repr(raw)})


def _split_on_commas(raw: object) -> object:
    if not isinstance(raw, str):
        return raw
    return tuple(part.strip() for part in raw.split(",") if part.strip())


def _legacy_egg(raw: object) -> object:
    # Legacy boolean spellings from the reference design (behaviour.md §6).
    if not isinstance(raw, str):
        return raw
    text = raw.strip()
    word = text.lower()
    return "agent" if word in TRUE_WORDS else "none" if word in FALSE_WORDS else text


# The model only converts text; range and choice checks stay in `BotSettings`, so the file and
# the environment share one set of rules and messages.
_EnvBool = Annotated[bool | None, BeforeValidator(_to_bool)]
_EnvInt = Annotated[int | None, BeforeValidator(_to_int)]
_EnvList = Annotated[tuple[str, ...] | None, NoDecode, BeforeValidator(_split_on_commas)]
_EnvStr = Annotated[str | None, BeforeValidator(_strip)]
_EnvEgg = Annotated[str | None, BeforeValidator(_legacy_egg)]

_environ: ContextVar[Mapping[str, str]] = ContextVar("bot_toolsearch_env")


class _MappingEnvSource(EnvSettingsSource):
    """`EnvSettingsSource` over a given mapping; a blank value counts as unset."""

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        super().__init__(settings_cls)
        # `env_vars` is the source's lookup table; replacing it keeps every other env rule.
        self.env_vars = {
            var: text.strip()
            for var in settings_cls.model_fields
            if (text := environ.get(var, "")) and text.strip()
        }


class EnvFallbacks(BaseSettings):
    """The env fallbacks as typed values; a field is ``None`` when its variable is unset or blank.

    ``EnvFallbacks()`` reads ``os.environ``; `EnvFallbacks.from_environ` reads a given mapping.
    The fields are named after the variables.
    """

    model_config = SettingsConfigDict(frozen=True, case_sensitive=True, extra="ignore")

    TOOL_SEARCH_ENABLED: _EnvBool = None
    TOOL_SEARCH_ALWAYS_LOADED: _EnvList = None
    TOOL_SEARCH_MAX_RESULTS: _EnvInt = None
    PREFETCH_TOOLS: _EnvList = None
    PREFETCH_TOOLS_HIDE: _EnvBool = None
    TOOL_SEARCH_BLIND_CALL: _EnvStr = None
    TOOL_SEARCH_KEEP_LOADED: _EnvStr = None
    TOOL_SEARCH_DIRECTORY_BUDGET: _EnvInt = None
    TOOL_SEARCH_LOADING: _EnvStr = None
    TOOLS_DOT_DELIMITER: _EnvStr = None
    EASTER_EGG_AGENT_CALL_MESSAGE_ENABLED: _EnvEgg = None

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> EnvFallbacks:
        """Read the variables from ``environ`` (only; no dotenv, secrets or arguments).

        Args:
            environ: Variable name → text, e.g. ``os.environ``.

        Raises:
            ValidationError: A variable's text is not a value of its kind; ``loc`` is its name.
        """
        token = _environ.set(environ)
        try:
            return cls()
        finally:
            _environ.reset(token)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,  # noqa: ARG003
        env_settings: PydanticBaseSettingsSource,  # noqa: ARG003
        dotenv_settings: PydanticBaseSettingsSource,  # noqa: ARG003
        file_secret_settings: PydanticBaseSettingsSource,  # noqa: ARG003
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """The environment is the only source: no dotenv, secrets or keyword arguments."""
        return (_MappingEnvSource(settings_cls, _environ.get(os.environ)),)


_logged_env: set[str] = set()
_logged_lock = threading.Lock()


def env_error(key: str, var: str, message: str, value: object) -> ConfigError:
    """An error in the value an environment variable gives ``key``."""
    return ConfigError(f"{key} (from environment variable {var}): {message}", key=key, value=value)


def apply_env(
    data: dict[str, Any], environ: Mapping[str, str], errors: list[ConfigError]
) -> dict[tuple[str, str], str]:
    """Fill keys the file does not set from the environment; returns (table, key) → variable.

    A blank variable counts as unset, and one whose key the file sets is not read at all. Each
    bad variable adds its own error to ``errors``; the good ones are still applied.
    """
    wanted = {
        var: environ[var].strip()
        for var, (table, key, _kind) in ENV_FALLBACKS.items()
        if key not in data.get(table, {}) and environ.get(var, "").strip()
    }
    fallbacks = EnvFallbacks.from_environ({})
    while wanted:
        try:
            fallbacks = EnvFallbacks.from_environ(wanted)
            break
        except ValidationError as exc:
            # Drop each bad variable and read the rest again, so one typo hides nothing else.
            for item in exc.errors(include_url=False):
                var = str(item["loc"][0])
                table, key, _kind = ENV_FALLBACKS[var]
                errors.append(env_error(f"{table}.{key}", var, item["msg"], wanted.pop(var)))
    used: dict[tuple[str, str], str] = {}
    for var, (table, key, _kind) in ENV_FALLBACKS.items():
        value = getattr(fallbacks, var) if var in wanted else None
        if value is None:
            continue
        data.setdefault(table, {})[key] = list(value) if isinstance(value, tuple) else value
        used[(table, key)] = var
    _log_env_once(used)
    return used


def _log_env_once(used: Mapping[tuple[str, str], str]) -> None:
    """One INFO line naming the variables in use that no earlier load named (env fallbacks are
    a supported way to configure, so reading them again on every load is not news)."""
    with _logged_lock:
        new = {(t, k): var for (t, k), var in used.items() if var not in _logged_env}
        _logged_env.update(new.values())
    if new:
        shown = ", ".join(f"{var} ({t}.{k})" for (t, k), var in new.items())
        log.info("settings from the environment: %s", shown)


def _reset_env_log() -> None:
    """Forget which env fallbacks were logged (tests)."""
    with _logged_lock:
        _logged_env.clear()


_ENV_REFERENCE = re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}")
"""``${env:NAME}`` in a value the file gives (an MCP server's ``headers``): replaced by the
environment variable when used, so a secret stays out of the file. Linear: no nesting."""


def env_reference_problem(text: str) -> str | None:
    """Why ``text`` holds a malformed ``${...}`` reference, or ``None`` when every one is
    ``${env:NAME}``.

    >>> env_reference_problem("Bearer ${env:MCP_TOKEN}") is None
    True
    >>> env_reference_problem("Bearer ${MCP_TOKEN}")
    "'${' must start a reference written ${env:NAME} (NAME: letters, digits, '_')"
    """
    if "${" in _ENV_REFERENCE.sub("", text):
        return "'${' must start a reference written ${env:NAME} (NAME: letters, digits, '_')"
    return None


def expand_env_references(text: str, env: Mapping[str, str], *, what: str) -> str:
    """``text`` with each ``${env:NAME}`` replaced by ``env[NAME]``.

    Raises:
        ConfigError: a variable is not set or empty; the message names it and ``what``, never
            a value.
    """
    missing = [m.group(1) for m in _ENV_REFERENCE.finditer(text) if not env.get(m.group(1))]
    if missing:
        raise ConfigError(
            f"{what}: environment variable {missing[0]} is not set (the value reads "
            f"${{env:{missing[0]}}})"
        )
    return _ENV_REFERENCE.sub(lambda m: env[m.group(1)], text)
