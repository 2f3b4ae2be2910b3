"""`MCPServerConfig`: one ``[[tools.mcp_servers]]`` entry, validated."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

from bot_toolsearch._config.env import expand_env_references
from bot_toolsearch._config.settings import header_problem
from bot_toolsearch._errors import ConfigError

from .folders import valid_segment

__all__ = ["MCPServerConfig"]


@dataclass(frozen=True, slots=True, eq=True)
class MCPServerConfig:
    """How to reach one MCP server; its tools join the registry as ``<name>.<tool>``.

    Give either ``command`` (stdio: the server runs as a subprocess) or ``url`` (streamable
    HTTP), not both.

    Args:
        name: the namespace of the server's tools (letters, digits, ``_``, ``-``).
        command: the executable to start, for a stdio server.
        args: its arguments.
        env: extra environment variables for it (merged over the SDK's safe defaults).
        url: the endpoint of a streamable-HTTP server (``http://`` or ``https://``).
        headers: HTTP headers for a ``url`` server; ``${env:NAME}`` in a value is replaced by
            that environment variable at connect time (`resolved_headers`). Never logged.
        timeout: seconds to connect and list the tools; a server slower than this is treated
            as failed and retried later with back-off.
        call_timeout: seconds one tool call may take before the model gets a timeout error.

    Raises:
        ConfigError: the entry is invalid (the message names the key).
    """

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}), repr=False)
    timeout: float = 10.0
    call_timeout: float = 60.0

    __hash__ = None  # type: ignore[assignment]  # env is a mapping; compare, never hash

    def __post_init__(self) -> None:
        key = "tools.mcp_servers"
        if not isinstance(self.name, str) or not valid_segment(self.name):
            raise ConfigError(
                f"MCP server name must be letters, digits, '_' or '-', got {self.name!r}",
                key=f"{key}.name",
                value=self.name,
            )
        where = f"{key}[{self.name}]"
        if (self.command is None) == (self.url is None):
            raise ConfigError(
                f"MCP server {self.name!r}: give exactly one of 'command' (stdio) or 'url' "
                "(streamable HTTP)",
                key=where,
            )
        if self.command is not None and (not isinstance(self.command, str) or not self.command):
            raise ConfigError(
                f"MCP server {self.name!r}: 'command' must be a non-empty string",
                key=f"{where}.command",
                value=self.command,
            )
        if self.url is not None:
            parts = urlsplit(self.url) if isinstance(self.url, str) else None
            if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
                raise ConfigError(
                    f"MCP server {self.name!r}: 'url' must be an http:// or https:// URL",
                    key=f"{where}.url",
                    value=self.url,
                )
        args = tuple(self.args)
        if not all(isinstance(arg, str) for arg in args):
            raise ConfigError(
                f"MCP server {self.name!r}: 'args' must be strings", key=f"{where}.args"
            )
        env = dict(self.env)
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
            raise ConfigError(
                f"MCP server {self.name!r}: 'env' must map strings to strings", key=f"{where}.env"
            )
        headers = dict(self.headers)
        if headers and self.url is None:
            raise ConfigError(
                f"MCP server {self.name!r}: 'headers' apply only to a 'url' server",
                key=f"{where}.headers",
            )
        for header, text in headers.items():
            if not isinstance(header, str) or not isinstance(text, str):
                raise ConfigError(
                    f"MCP server {self.name!r}: 'headers' must map strings to strings",
                    key=f"{where}.headers",
                )
            problem = header_problem(header, text)
            if problem:
                raise ConfigError(f"MCP server {self.name!r}: {problem}", key=f"{where}.headers")
        for attr in ("timeout", "call_timeout"):
            value = getattr(self, attr)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not (0 < value < math.inf)
            ):
                raise ConfigError(
                    f"MCP server {self.name!r}: {attr!r} must be a positive number of seconds",
                    key=f"{where}.{attr}",
                    value=value,
                )
        object.__setattr__(self, "args", args)
        object.__setattr__(self, "env", MappingProxyType(env))
        object.__setattr__(self, "headers", MappingProxyType(headers))

    def resolved_headers(self, env: Mapping[str, str] | None = None) -> dict[str, str]:
        """The headers to send, each ``${env:NAME}`` replaced from ``env`` (``os.environ``).

        Raises:
            ConfigError: a referenced variable is not set; the message names it, not a value.
        """
        env = os.environ if env is None else env
        return {
            name: expand_env_references(
                text, env, what=f"MCP server {self.name!r}: header {name!r}"
            )
            for name, text in self.headers.items()
        }

    @property
    def transport(self) -> str:
        """``"stdio"`` or ``"streamable-http"``."""
        return "stdio" if self.command is not None else "streamable-http"

    @classmethod
    def coerce(cls, entry: object) -> MCPServerConfig:
        """An `MCPServerConfig` from itself, a mapping, or a settings model with those fields.

        Raises:
            ConfigError: the entry is invalid or has unknown keys.
        """
        if isinstance(entry, MCPServerConfig):
            return entry
        fields = ("name", "command", "args", "env", "url", "headers", "timeout", "call_timeout")
        if isinstance(entry, Mapping):
            unknown = sorted(set(entry) - set(fields))
            if unknown:
                raise ConfigError(
                    f"unknown MCP server key(s): {', '.join(map(str, unknown))}",
                    key="tools.mcp_servers",
                )
            values: dict[str, Any] = dict(entry)
        else:
            values = {f: getattr(entry, f) for f in fields if getattr(entry, f, None) is not None}
        values = {k: v for k, v in values.items() if v is not None}
        if "name" not in values:
            raise ConfigError("MCP server entry needs a 'name'", key="tools.mcp_servers")
        try:
            return cls(**values)
        except TypeError as exc:
            raise ConfigError(f"invalid MCP server entry: {exc}", key="tools.mcp_servers") from exc
