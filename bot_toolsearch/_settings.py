"""Settings models, one per config table; a `BotSettings` is one frozen snapshot.

(First cut: defaults and types only. The config issue adds env fallbacks, strict validation
with file/line errors, and loading from ``config.toml``.)
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "BlindCallPolicy",
    "BotSection",
    "BotSettings",
    "EasterEggMode",
    "EasterEggSettings",
    "ModelApi",
    "ModelSettings",
    "PluginSettings",
    "SkillsSettings",
    "ToolsSettings",
]

ModelApi = Literal["chat_completions", "responses"]
BlindCallPolicy = Literal["reject", "load"]
"""What a call to a permitted but not yet loaded deferred tool does: ``reject`` refuses it
(the reference behaviour); ``load`` refuses it this round and loads its schema for the next."""
EasterEggMode = Literal["none", "agent", "tools", "clean", "all"]


class _Table(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ModelSettings(_Table):
    base_url: str | None = None
    """API base URL; ``None`` falls back to ``OPENAI_BASE_URL`` as the SDK does."""
    api_key: str | None = None
    """API key; ``None`` falls back to ``OPENAI_API_KEY`` as the SDK does."""
    name: str = "gpt-4o-mini"
    """Model name sent with every request."""
    api: ModelApi = "chat_completions"
    """Which OpenAI API the bot talks to."""
    responses_force_stateless_replay: bool = False
    """Responses API: always resend the full history instead of ``previous_response_id``."""
    max_rounds: int = Field(default=16, ge=1)
    """Model rounds one ``ask()`` may use."""
    timeout: float = Field(default=60.0, gt=0)
    """Seconds per model request."""


class PluginSettings(_Table):
    enabled: tuple[str, ...] = ("tool_search",)
    """Plugins (entry points in group ``bot_toolsearch.plugins``) in pipeline order."""


class SkillsSettings(_Table):
    tool_search_enabled: bool = False
    tool_search_always_loaded: tuple[str, ...] = ("send_message", "end")
    tool_search_max_results: int = Field(default=5, ge=1)
    tool_search_blind_call: BlindCallPolicy = "reject"
    prefetch_tools: tuple[str, ...] = ()
    prefetch_tools_hide: bool = False


class ToolsSettings(_Table):
    dot_delimiter: str = Field(default="-_-", pattern=r"^[A-Za-z0-9_-]{1,16}$")
    allow: tuple[str, ...] = ()
    """fnmatch patterns; when non-empty, only matching tools are offered."""
    deny: tuple[str, ...] = ()
    """fnmatch patterns of tools never offered."""


class EasterEggSettings(_Table):
    agent_call_message_enabled: EasterEggMode = "none"


class BotSection(_Table):
    hot_reload: bool = True


class BotSettings(_Table):
    """One immutable snapshot of every setting; an ``ask()`` reads one at its start."""

    model: ModelSettings = ModelSettings()
    plugins: PluginSettings = PluginSettings()
    skills: SkillsSettings = SkillsSettings()
    tools: ToolsSettings = ToolsSettings()
    easter_egg: EasterEggSettings = EasterEggSettings()
    bot: BotSection = BotSection()
    generation: int = 0
    """Increases by one with every successful reload; 0 for settings built in code."""
