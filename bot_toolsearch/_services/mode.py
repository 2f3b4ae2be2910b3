"""Whether tool search is on, and why: the one rule every door states once at start-up.

The rule: with no settings at all (no config file and no `BotSettings`), tool search is on;
given settings decide with ``[skills] tool_search_enabled``, whose default is ``false``. So
settings that leave the key unset run with tool search off, and every door (the `Bot`,
`wrap_openai`, ``serve``, ``chat``/``ask``, ``config validate``) says so as a warning naming
the key, never silently. For the `Bot` the ``tool_search`` plugin must be enabled too.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from bot_toolsearch._config.settings import BotSettings

__all__ = ["SearchMode", "announce", "search_mode"]

logger = logging.getLogger("bot_toolsearch.mode")
"""The start-up line's logger (a door that prints the mode itself, as the CLI does, quiets it)."""


@dataclass(frozen=True, slots=True)
class SearchMode:
    """Tool search on or off for one door's settings, with the reason."""

    on: bool
    """Whether tool search runs."""
    reason: str
    """Why, in words a user acts on (names the key or the source)."""
    unset: bool = False
    """Off only because the settings leave ``[skills] tool_search_enabled`` unset."""

    def __str__(self) -> str:
        return f"tool search {'on' if self.on else 'off'} ({self.reason})"


def search_mode(
    settings: BotSettings | None, *, source: str = "settings", plugins: bool = False
) -> SearchMode:
    """The mode ``settings`` give (``None``: no settings, tool search on).

    Args:
        settings: the door's settings, or ``None`` when it has none (its defaults: on).
        source: what the settings came from, for the reason (``config.toml``, ``settings``).
        plugins: whether the ``tool_search`` plugin must be in ``[plugins] enabled`` (the
            `Bot` and the CLI; the wrapper and the proxy apply tool search themselves).
    """
    if settings is None:
        return SearchMode(True, "no config: the defaults, with tool search on")
    skills = settings.skills
    if "tool_search_enabled" not in skills.model_fields_set:
        return SearchMode(
            False,
            f"[skills] tool_search_enabled is not set in the {source} and defaults to "
            "false; set it to true to turn tool search on (or to false to say so)",
            unset=True,
        )
    if not skills.tool_search_enabled:
        return SearchMode(False, f"[skills] tool_search_enabled = false in the {source}")
    if plugins and "tool_search" not in settings.plugins.enabled:
        return SearchMode(
            False,
            f"[skills] tool_search_enabled = true, but [plugins] enabled in the {source} "
            "leaves out 'tool_search'",
            unset=True,
        )
    return SearchMode(True, f"[skills] tool_search_enabled = true in the {source}")


def announce(door: str, mode: SearchMode) -> None:
    """Log ``door``'s mode once: a warning when it is off for a reason the user may not
    know (the key unset, the plugin left out), else at INFO."""
    level = logging.WARNING if mode.unset else logging.INFO
    logger.log(level, "%s: %s", door, mode)
