"""Prefetch: ``[skills] prefetch_tools`` run once before the first round, results kept all ask.

Each target runs once with ``{}`` arguments, one after another; a failure is logged and never
retried. The successes go into one system message that every round carries. With
``prefetch_tools_hide = true`` a successful prefetch tool is unusable for the rest of the ask
(its result is already there), while a failed one stays callable from round 1 without a search;
with ``false`` every prefetch tool is always loaded.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from bot_toolsearch._core.prompt import TOOL_SEARCH_NAME
from bot_toolsearch._protocol.messages import PREFETCH_HEADER
from bot_toolsearch._tools.tool import Tool

from .context import AskContext
from .executor import run_tool
from .toolset import ToolSet

__all__ = ["PrefetchOutcome", "prefetch_targets", "run_prefetch"]

logger = logging.getLogger("bot_toolsearch")


@dataclass(frozen=True, slots=True)
class PrefetchOutcome:
    """What prefetch did in one ask."""

    message: str | None
    """The system message with the results, or ``None`` when nothing succeeded."""
    succeeded: tuple[str, ...]
    failed: tuple[str, ...]


async def run_prefetch(ctx: AskContext) -> PrefetchOutcome:
    """Run the ask's prefetch tools and apply the hide rule to ``ctx``.

    Only registered tools the ask may use are prefetched (never ``tool_search``, the
    built-ins or agents, which need arguments).
    """
    skills = ctx.settings.skills
    targets = prefetch_targets(ctx.toolset, skills.prefetch_tools, ctx.permitted)
    if not targets:
        return PrefetchOutcome(None, (), ())
    lines = [PREFETCH_HEADER]
    succeeded: list[str] = []
    failed: list[str] = []
    for tool in targets:
        try:
            result = await run_tool(ctx, tool, {})
        except Exception:
            logger.warning("prefetch tool %s failed; it is not retried", tool.name, exc_info=True)
            failed.append(tool.name)
            continue
        succeeded.append(tool.name)
        lines.append(f"- {tool.name}: " + result.replace("\n", "\n  "))
    if skills.prefetch_tools_hide:
        ctx.permitted = ctx.permitted - frozenset(succeeded)
        ctx.always_loaded_extra = tuple(failed)
    else:
        ctx.always_loaded_extra = tuple(sorted(t.name for t in targets))
    message = "\n".join(lines) if succeeded else None
    return PrefetchOutcome(message, tuple(succeeded), tuple(failed))


def prefetch_targets(
    toolset: ToolSet, prefetch_tools: Sequence[str], permitted: frozenset[str]
) -> list[Tool]:
    """The tools an ask prefetches, in ``prefetch_tools`` order: registered tools it may use
    (never ``tool_search``, the built-ins or agents, which need arguments)."""
    targets: list[Tool] = []
    for raw in prefetch_tools:
        name = raw.strip()
        entry = toolset.entries.get(name)
        if name == TOOL_SEARCH_NAME or name not in permitted or not isinstance(entry, Tool):
            continue
        if entry not in targets:
            targets.append(entry)
    return targets
