"""What a wrapped client and its copies share: the settings source and the tool-list cache.

``config`` is a ``config.toml`` path, hot-reloaded as for the `Bot` (a valid edit changes the
next ``create`` call, never one that is running); ``settings`` a fixed `BotSettings`; with
neither, the built-in defaults with tool search on.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from bot_toolsearch._config.reload import ConfigReloader
from bot_toolsearch._config.settings import BotSettings, SkillsSettings

from .caller_tools import ToolsCache
from .chat import ChatPlan
from .plan import Pending, Setup, setup
from .responses import ResponseAliases, ResponsesPlan

__all__ = ["Engine"]

logger = logging.getLogger("bot_toolsearch")


class Engine:
    """The settings and caches behind one `wrap_openai` call.

    Raises:
        TypeError: both ``config`` and ``settings`` are given.
        ConfigError: ``config`` cannot be read or is invalid.
    """

    def __init__(
        self,
        *,
        config: str | os.PathLike[str] | None = None,
        settings: BotSettings | None = None,
    ) -> None:
        if config is not None and settings is not None:
            raise TypeError("pass config (a config.toml path) or settings, not both")
        self._reloader: ConfigReloader | None = None
        self._fixed: BotSettings | None = settings
        self.cache = ToolsCache()
        self.aliases = ResponseAliases()
        """Stream ids standing for a later response (`ResponseAliases`), across calls."""
        if config is not None:
            self._reloader = ConfigReloader(config)
            # A reload that changes the namespace descriptions (or turns tool search on)
            # builds the cached lists' new search indexes in the reload thread.
            self._reloader.subscribe(self.cache.prepare)
            if self._reloader.snapshot().bot.hot_reload:
                self._reloader.start()
        elif settings is None:
            self._fixed = BotSettings(skills=SkillsSettings(tool_search_enabled=True))

    def snapshot(self) -> BotSettings:
        """The settings of the next ``create`` call (read once per call)."""
        if self._reloader is not None:
            return self._reloader.snapshot()
        assert self._fixed is not None
        return self._fixed

    def chat_plan(
        self, kwargs: Mapping[str, Any], *, build: bool = True
    ) -> ChatPlan | Pending | None:
        """The plan of a ``chat.completions.create`` call, or ``None`` to pass it through;
        `Pending.INDEXING` instead of indexing when not to ``build`` (see `setup`)."""
        messages = kwargs.get("messages")
        if not isinstance(messages, list | tuple):
            return None
        found = setup(
            self.snapshot(),
            self.cache,
            tools=kwargs.get("tools"),
            tool_choice=kwargs.get("tool_choice"),
            api="chat",
            build=build,
        )
        return ChatPlan(found, kwargs) if isinstance(found, Setup) else found

    def responses_plan(
        self, kwargs: Mapping[str, Any], *, build: bool = True
    ) -> ResponsesPlan | Pending | None:
        """The plan of a ``responses.create`` call, or ``None`` to pass it through;
        `Pending.INDEXING` instead of indexing when not to ``build`` (see `setup`)."""
        found = setup(
            self.snapshot(),
            self.cache,
            tools=kwargs.get("tools"),
            tool_choice=kwargs.get("tool_choice"),
            api="responses",
            build=build,
        )
        return ResponsesPlan(found, kwargs, self.aliases) if isinstance(found, Setup) else found

    def close(self) -> None:
        """Stop watching ``config.toml``; the last settings stay in force."""
        if self._reloader is not None:
            self._reloader.stop()
