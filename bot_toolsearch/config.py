"""The config-file API in one place: load, validate, edit and watch ``config.toml``.

>>> from bot_toolsearch import config
>>> config.set_value("config.toml", "skills.tool_search_max_results", 8)  # doctest: +SKIP

Every name here except `check_config` is also exported from `bot_toolsearch` itself.
"""

from __future__ import annotations

from bot_toolsearch._config.edit import get_value, set_value
from bot_toolsearch._config.file import check_config, load_settings
from bot_toolsearch._config.reload import ConfigReloader
from bot_toolsearch._config.settings import BotSettings

from ._errors import ConfigError

__all__ = [
    "BotSettings",
    "ConfigError",
    "ConfigReloader",
    "check_config",
    "get_value",
    "load_settings",
    "set_value",
]
