"""Easter-egg announcements: which calls are announced under which mode, merged per batch.

``[easter_egg] agent_call_message_enabled``:

========  ==========================================================================
``none``  nothing is announced
``agent`` only sub-agent calls
``tools`` every call: tools, agents and the virtual ``tool_search``
``all``   the same as ``tools`` for the main AI
``clean`` like ``tools``, but never ``send_message`` or ``end``, and nothing at all
          when the ask's context sets ``easter_egg_silent``
========  ==========================================================================

Only calls that actually run are announced (a refused call is not "called"), and N parallel
calls of one tool in one response become one announcement with `` xN``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from bot_toolsearch._config.settings import EasterEggMode
from bot_toolsearch._protocol.messages import (
    ANNOUNCEMENT,
    ANNOUNCEMENT_AGENT_TOOL,
    ANNOUNCEMENT_REPEAT_SUFFIX,
)

from .toolset import END, SEND_MESSAGE

if TYPE_CHECKING:
    from .context import AskContext

__all__ = ["CallKind", "announce_calls", "announcement_text", "should_announce"]

CallKind = Literal["tool", "agent"]
"""``agent``: a call to a sub-agent; ``tool``: anything else, ``tool_search`` included."""

_QUIET_IN_CLEAN = frozenset({SEND_MESSAGE, END})


def should_announce(
    mode: EasterEggMode, name: str, kind: CallKind, context: Mapping[str, Any]
) -> bool:
    """Whether a call that runs is announced.

    Args:
        mode: the ``[easter_egg] agent_call_message_enabled`` value of the ask's snapshot.
        name: the canonical tool name.
        kind: ``agent`` for sub-agent calls, else ``tool``.
        context: the ask's context (``easter_egg_silent`` matters in ``clean`` mode).
    """
    if mode == "none":
        return False
    if mode == "agent":
        return kind == "agent"
    if mode == "clean":
        return not context.get("easter_egg_silent") and name not in _QUIET_IN_CLEAN
    return True  # tools, all


def announcement_text(name: str, count: int = 1, *, agent: str | None = None) -> str:
    """The announcement for ``count`` merged calls of ``name`` (inside ``agent``, if given).

    >>> announcement_text("tool_search", 2) == "tool_search\uff0c我调用你了 x2"
    True
    """
    if agent is None:
        text = ANNOUNCEMENT.format(name=name)
    else:
        text = ANNOUNCEMENT_AGENT_TOOL.format(agent=agent, name=name)
    return text + ANNOUNCEMENT_REPEAT_SUFFIX.format(count=count) if count > 1 else text


async def announce_calls(
    ctx: AskContext,
    calls: Iterable[tuple[str, CallKind]],
    *,
    agent: str | None = None,
) -> None:
    """Announce one batch of calls that are about to run, merging duplicates into `` xN``.

    Args:
        ctx: the ask; its snapshot gives the mode and its context the silent flag.
        calls: ``(name, kind)`` of every call that will run, in call order.
        agent: the sub-agent the calls run inside, if any.
    """
    mode = ctx.settings.easter_egg.agent_call_message_enabled
    if mode == "none":
        return
    counts: dict[str, int] = {}
    for name, kind in calls:
        if should_announce(mode, name, kind, ctx.context):
            counts[name] = counts.get(name, 0) + 1
    for name, count in counts.items():
        await ctx.send("announcement", announcement_text(name, count, agent=agent))
