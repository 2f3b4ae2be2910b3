"""Settings models, one per config table; a `BotSettings` is one frozen snapshot.

The models are strict on purpose: a value of the wrong type is an error, never a silent
coercion (the reference design turns ``"maybe"`` into ``false`` and ``0`` into ``1``).
``BotSettings()`` is the built-in defaults and never reads the environment; the env fallbacks
live in ``env.py`` (a pydantic-settings model) and the file in ``file.py``,
which also turns validation errors into ``ConfigError`` with file, line and column.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    field_serializer,
    field_validator,
    model_validator,
)

__all__ = [
    "BlindCallPolicy",
    "BotSection",
    "BotSettings",
    "EasterEggMode",
    "EasterEggSettings",
    "McpServerSettings",
    "ModelApi",
    "ModelSettings",
    "PluginSettings",
    "SkillsSettings",
    "ToolSearchLoading",
    "ToolsSettings",
]

ModelApi = Literal["chat_completions", "responses"]
BlindCallPolicy = Literal["reject", "load"]
"""What a call to a permitted but not yet loaded deferred tool does: ``reject`` refuses it
(the reference behaviour); ``load`` refuses it this round and loads its schema for the next."""
ToolSearchLoading = Literal["append", "additional_tools", "bridge"]
"""How a load reaches the model: ``append`` adds the loaded schemas to ``tools`` (the list
grows at its end); ``additional_tools`` (Responses API; Chat Completions falls back to
``append``) keeps ``tools`` fixed and declares loaded tools in an ``additional_tools`` input
item after the search's output; ``bridge`` keeps ``tools`` fixed (plus a virtual
``call_tool``), puts the loaded schemas in the search result and runs ``call_tool`` calls as
calls of the named tool."""
EasterEggMode = Literal["none", "agent", "tools", "clean", "all"]

DEFAULT_DOT_DELIMITER = "-_-"
"""What replaces each ``.`` of a canonical tool name on the wire unless ``[tools]`` says."""
MAX_DOT_DELIMITER_LENGTH = 16
DOT_DELIMITER_CHARS = "A-Za-z0-9_-"
"""The characters a delimiter may use (a regex class body): it replaces dots in wire names, so
it may not contain one."""
DELIMITER_PATTERN = rf"^[{DOT_DELIMITER_CHARS}]{{1,{MAX_DOT_DELIMITER_LENGTH}}}$"
"""``[tools] dot_delimiter``, the one rule that the settings and the wire-name encoder share."""
SERVER_NAME_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
"""An MCP server name prefixes its tools (``<server>.<tool>``), so it may not contain a dot."""

_Name = Annotated[StrictStr, Field(min_length=1)]


class _Table(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ModelSettings(_Table):
    """``[model]``: which OpenAI-compatible endpoint and model the bot talks to."""

    base_url: StrictStr | None = None
    """API base URL; ``None`` falls back to ``OPENAI_BASE_URL`` as the SDK does."""
    api_key: StrictStr | None = None
    """API key; ``None`` falls back to ``OPENAI_API_KEY`` as the SDK does."""
    name: _Name = "gpt-4o-mini"
    """Model name sent with every request."""
    api: ModelApi = "chat_completions"
    """Which OpenAI API the bot talks to."""
    responses_force_stateless_replay: StrictBool = False
    """Responses API: always resend the full history instead of ``previous_response_id``."""
    max_rounds: StrictInt = Field(default=16, ge=1)
    """Model rounds one ``ask()`` may use."""
    timeout: StrictFloat = Field(default=60.0, gt=0)
    """Seconds per model request."""


class PluginSettings(_Table):
    """``[plugins]``: which plugins (entry points) run, in pipeline order."""

    enabled: tuple[_Name, ...] = ("tool_search",)
    """Plugins (entry points in group ``bot_toolsearch.plugins``) in pipeline order."""

    @field_validator("enabled")
    @classmethod
    def _no_duplicates(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        dupes = sorted({name for name in value if value.count(name) > 1})
        if dupes:
            raise ValueError(f"lists {', '.join(map(repr, dupes))} more than once")
        return value


class SkillsSettings(_Table):
    """``[skills]``: tool search and prefetch."""

    tool_search_enabled: StrictBool = False
    """Offer only ``tool_search`` plus the always-loaded tools, loading others on demand."""
    tool_search_always_loaded: tuple[_Name, ...] = ("send_message", "end")
    """Tools exposed from round 1 without a search."""
    tool_search_max_results: StrictInt = Field(default=5, ge=1)
    """Most tools one ``tool_search`` call loads."""
    tool_search_blind_call: BlindCallPolicy = "reject"
    """What a call to a deferred tool that was never loaded does."""
    tool_search_loading: ToolSearchLoading = "append"
    """How loaded schemas reach the model (read per ask; see `ToolSearchLoading`)."""
    prefetch_tools: tuple[_Name, ...] = ()
    """Tools called once before round 1, their results given to the model."""
    prefetch_tools_hide: StrictBool = False
    """Keep prefetched tools out of the tool list the model sees."""


class McpServerSettings(_Table):
    """One ``[[tools.mcp_servers]]`` entry: an MCP server whose tools join the catalog."""

    name: Annotated[StrictStr, Field(pattern=SERVER_NAME_PATTERN)]
    """Prefix of the server's tools: ``<name>.<tool>``."""
    command: _Name | None = None
    """Executable of a stdio server."""
    args: tuple[StrictStr, ...] = ()
    """Arguments of ``command``."""
    env: Mapping[StrictStr, StrictStr] = Field(default_factory=lambda: MappingProxyType({}))
    """Extra environment variables for ``command`` (read-only)."""
    url: Annotated[StrictStr, Field(pattern=r"^https?://")] | None = None
    """Endpoint of a streamable-HTTP server."""
    timeout: StrictFloat = Field(default=10.0, gt=0)
    """Seconds to connect and list the tools."""
    call_timeout: StrictFloat = Field(default=60.0, gt=0)
    """Seconds one tool call may take."""

    @field_validator("env")
    @classmethod
    def _read_only(cls, value: Mapping[str, str]) -> Mapping[str, str]:
        return MappingProxyType(dict(value))

    @field_serializer("env")
    def _plain_env(self, value: Mapping[str, str]) -> dict[str, str]:
        return dict(value)

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerSettings:
        if (self.command is None) == (self.url is None):
            raise ValueError("needs exactly one of 'command' (stdio) or 'url' (streamable HTTP)")
        if self.url is not None and (self.args or self.env):
            raise ValueError("'args' and 'env' apply only to a 'command' server")
        return self


class ToolsSettings(_Table):
    """``[tools]``: wire-name encoding, permissions and tool sources."""

    dot_delimiter: Annotated[StrictStr, Field(pattern=DELIMITER_PATTERN)] = DEFAULT_DOT_DELIMITER
    """Replaces dots in tool names sent to providers."""
    allow: tuple[_Name, ...] = ()
    """fnmatch patterns; when non-empty, only matching tools are offered."""
    deny: tuple[_Name, ...] = ()
    """fnmatch patterns of tools never offered."""
    dirs: tuple[Path, ...] = ()
    """Tool folders; the loader resolves relative paths against the config file's folder."""
    mcp_servers: tuple[McpServerSettings, ...] = ()
    """MCP servers as tool sources."""

    @field_validator("dirs", mode="before")
    @classmethod
    def _folder_strings(cls, value: object) -> object:
        if isinstance(value, list | tuple):
            for item in value:
                if not isinstance(item, str | Path) or item == "":
                    raise ValueError(f"expected non-empty folder paths (strings), got {item!r}")
        return value

    @field_validator("mcp_servers")
    @classmethod
    def _unique_servers(cls, value: tuple[McpServerSettings, ...]) -> tuple[McpServerSettings, ...]:
        names = [server.name for server in value]
        dupes = sorted({name for name in names if names.count(name) > 1})
        if dupes:
            raise ValueError(f"server name {', '.join(map(repr, dupes))} is used more than once")
        return value


_LEGACY_EGG = {True: "agent", False: "none"}


class EasterEggSettings(_Table):
    """``[easter_egg]``: "I'm calling you" announcements."""

    agent_call_message_enabled: EasterEggMode = "none"
    """Announcement mode; the legacy booleans ``true``/``false`` mean ``agent``/``none``."""

    @field_validator("agent_call_message_enabled", mode="before")
    @classmethod
    def _legacy_bool(cls, value: object) -> object:
        return _LEGACY_EGG[value] if isinstance(value, bool) else value


class BotSection(_Table):
    """``[bot]``: the host."""

    hot_reload: StrictBool = True
    """Watch ``config.toml`` and apply edits to later asks."""


class BotSettings(_Table):
    """One immutable snapshot of every setting; an ``ask()`` reads one at its start."""

    model: ModelSettings = ModelSettings()
    plugins: PluginSettings = PluginSettings()
    skills: SkillsSettings = SkillsSettings()
    tools: ToolsSettings = ToolsSettings()
    easter_egg: EasterEggSettings = EasterEggSettings()
    bot: BotSection = BotSection()
    generation: StrictInt = Field(default=0, ge=0)
    """Increases by one with every successful reload; 0 for settings built in code."""
