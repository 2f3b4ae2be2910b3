"""Plugins: entry points in group ``bot_toolsearch.plugins``, each a factory of a middleware.

``[plugins] enabled`` lists plugin names in pipeline order (first = outermost). Discovery reads
the installed entry points once per process and caches them.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from importlib.metadata import entry_points
from types import MappingProxyType
from typing import Protocol, runtime_checkable

from bot_toolsearch._config.file import PLUGIN_GROUP
from bot_toolsearch._config.settings import BotSettings
from bot_toolsearch._errors import ConfigError

from .middleware import Middleware

__all__ = ["Plugin", "build_middlewares", "discover_plugins"]

logger = logging.getLogger("bot_toolsearch")


@runtime_checkable
class Plugin(Protocol):
    """What an entry point in ``bot_toolsearch.plugins`` must load to."""

    name: str
    """The name ``[plugins] enabled`` refers to."""

    def create(self, settings: BotSettings) -> Middleware:
        """A middleware for one settings generation."""
        ...


@functools.cache
def discover_plugins() -> Mapping[str, Plugin]:
    """Every installed plugin by name (cached; a broken entry point is logged and skipped)."""
    found: dict[str, Plugin] = {}
    for point in entry_points(group=PLUGIN_GROUP):
        try:
            plugin = point.load()
        except Exception:
            logger.exception("cannot load plugin entry point %s = %s", point.name, point.value)
            continue
        if not isinstance(plugin, Plugin):
            logger.error("plugin entry point %s is not a Plugin: %r", point.name, plugin)
            continue
        found.setdefault(point.name, plugin)
    return MappingProxyType(found)


def build_middlewares(settings: BotSettings) -> list[Middleware]:
    """The middlewares of ``[plugins] enabled``, in order (first = outermost).

    Raises:
        ConfigError: a listed plugin is not installed.
    """
    plugins = discover_plugins()
    middlewares: list[Middleware] = []
    for name in settings.plugins.enabled:
        plugin = plugins.get(name)
        if plugin is None:
            known = ", ".join(sorted(plugins)) or "none"
            raise ConfigError(
                f"unknown plugin {name!r} (installed: {known})", key="plugins.enabled", value=name
            )
        middlewares.append(plugin.create(settings))
    return middlewares
