"""The `Bot`'s keyword index and directory built ahead of the first ask: at start-up and on
each change.

The index of a catalog is built on first use by `search_index` (it tokenises every name,
description and parameter: time in proportion to the catalog). Every door builds it ahead instead,
off the ask path: the `Bot` when it makes a tool set and when a config reload changes the
settings (in the reload thread), the wrapper and the proxy when a caller's tool list is first
indexed. It is built with the very namespace descriptions the sessions pass, so the first
keyword search finds it in the catalog's cache (`index_key` is the key a `ToolSearchSession`
derives from its ``namespaces``). The `Bot` builds the directory of its asks too (the wrapper
builds a new list's in the same worker thread as its index). With ``[skills]
tool_search_embeddings`` set, the tool texts are embedded in the background at the same
moments (`warm_semantic`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from bot_toolsearch._config.settings import BotSettings
from bot_toolsearch._protocol.engine import ToolSearchProtocol
from bot_toolsearch._services.indexing import build_index
from bot_toolsearch._services.semantic import warm_semantic

from .prefetch import prefetch_targets
from .toolset import ToolSet

__all__ = ["prepare_toolset"]

logger = logging.getLogger("bot_toolsearch")


def prepare_toolset(toolset: ToolSet, settings: BotSettings) -> None:
    """Build the index the `Bot`'s asks under ``settings`` search, when tool search is on,
    and the directory they show (when no permission hook narrows them), and start embedding
    the tool texts in the background when the semantic stage is on (`warm_semantic`).

    Never raises: a failure is logged, and the first keyword search builds the index.
    """
    if not settings.skills.tool_search_enabled:
        return
    namespaces = toolset.namespace_descriptions(settings.tools.namespaces)
    try:
        build_index(toolset.catalog, namespaces)
        _build_directory(toolset, settings, namespaces)
    except Exception:
        logger.exception("cannot build tool search's index ahead; the first ask builds it")
    warm_semantic(settings, toolset.catalog)


def _build_directory(
    toolset: ToolSet, settings: BotSettings, namespaces: Mapping[str, str]
) -> None:
    """Build the directory (and wire names) of an ask that no permission hook narrows, as the
    tool-search middleware's `ToolSearchProtocol` does: both are cached per catalog and
    permitted set, so that ask only reads them. Nothing when prefetched tools are hidden
    (what an ask hides then depends on which prefetch succeeds)."""
    skills = settings.skills
    # Without a real ``tool_search``, as the asks that offer the virtual one (the same set).
    permitted = toolset.searchable(
        toolset.pattern_permitted(settings.tools.allow, settings.tools.deny)
    )
    targets = prefetch_targets(toolset, skills.prefetch_tools, permitted)
    if targets and skills.prefetch_tools_hide:
        return
    protocol = ToolSearchProtocol(
        toolset.catalog,
        settings,
        api=settings.model.api,
        names=toolset.wire_names(settings.tools.dot_delimiter, permitted),
        permitted=permitted,
        hidden=toolset.view(permitted).hidden,
        namespaces=namespaces,
        always_loaded=sorted(t.name for t in targets),
        report=_quiet,
    )
    if protocol.active:
        _ = protocol.session.directory


def _quiet(level: int, text: str) -> None:
    """A mode fallback is reported by the asks themselves, not by the build ahead."""
    del level, text
