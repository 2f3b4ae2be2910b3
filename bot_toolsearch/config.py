"""The config-file API in one place: load, validate, edit and watch ``config.toml``.

>>> from bot_toolsearch import config
>>> config.set_value("config.toml", "skills.tool_search_max_results", 8)  # doctest: +SKIP

`BotSettings` and `ConfigError` are exported from `bot_toolsearch` itself; the settings
sections, the reloader and the file functions from here.
"""

from __future__ import annotations

from bot_toolsearch import _set_public_module
from bot_toolsearch._config.edit import get_value, set_value
from bot_toolsearch._config.file import check_config, load_settings
from bot_toolsearch._config.reload import ConfigReloader, ReloadCallback, ReloadErrorCallback
from bot_toolsearch._config.settings import (
    BotSection,
    ConversationSettings,
    EasterEggSettings,
    EmbeddingsSettings,
    McpServerSettings,
    ModelSettings,
    PluginSettings,
    ProxyClient,
    ProxySettings,
    SkillsSettings,
    ToolSearchLoading,
    ToolsSettings,
)
from bot_toolsearch._runtime.bot import SettingsSource

__all__ = [
    "BotSection",
    "ConfigReloader",
    "ConversationSettings",
    "EasterEggSettings",
    "EmbeddingsSettings",
    "McpServerSettings",
    "ModelSettings",
    "PluginSettings",
    "ProxyClient",
    "ProxySettings",
    "ReloadCallback",
    "ReloadErrorCallback",
    "SettingsSource",
    "SkillsSettings",
    "ToolSearchLoading",
    "ToolsSettings",
    "check_config",
    "get_value",
    "load_settings",
    "set_value",
]

_MOVED = {"BotSettings", "ConfigError"}


def __getattr__(name: str) -> object:
    """The names this module exported twice, importable for one more release (PEP 562)."""
    if name in _MOVED:
        import warnings

        import bot_toolsearch

        warnings.warn(
            f"bot_toolsearch.config.{name} is deprecated: use `from bot_toolsearch import {name}`",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(bot_toolsearch, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_set_public_module(__name__, __all__)
