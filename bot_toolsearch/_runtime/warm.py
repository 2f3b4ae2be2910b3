"""Tool search's keyword index built ahead of the first search: at start-up and on each change.

The index of a catalog is built on first use by `search_index` (it tokenises every name,
description and parameter: time in proportion to the catalog). Every door builds it ahead instead,
off the ask path: the `Bot` when it makes a tool set and when a config reload changes the
settings (in the reload thread), the wrapper and the proxy when a caller's tool list is first
indexed. It is built with the very namespace descriptions the sessions pass, so the first
keyword search finds it in the catalog's cache (`index_key` is the key a `ToolSearchSession`
derives from its ``namespaces``). With ``[skills] tool_search_embeddings`` set, the tool texts
are embedded in the background at the same moments (`warm_semantic`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from bot_toolsearch._config.settings import BotSettings
from bot_toolsearch._core.catalog import Namespaces, ToolCatalog, search_index

from .semantic import warm_semantic
from .toolset import ToolSet

__all__ = ["build_index", "index_built", "index_key", "prepare_toolset"]

logger = logging.getLogger("bot_toolsearch")


def index_key(namespaces: Mapping[str, str] | None) -> Namespaces:
    """The ``(namespace, description)`` pairs a session over ``namespaces`` searches with
    (what `ToolSearchSession` passes to `search_index`)."""
    return tuple(namespaces.items()) if namespaces else ()


def build_index(catalog: ToolCatalog, namespaces: Mapping[str, str] | None) -> None:
    """Build the keyword index sessions over ``catalog`` and ``namespaces`` search (nothing
    when it is built already)."""
    search_index(catalog, index_key(namespaces))


def index_built(catalog: ToolCatalog, namespaces: Mapping[str, str] | None) -> bool:
    """Whether the index for ``namespaces`` is in the catalog's cache (read-only: an async door
    asks before it would build on the event loop)."""
    key = index_key(namespaces)
    return catalog._index is not None if not key else key in catalog._indexes


def prepare_toolset(toolset: ToolSet, settings: BotSettings) -> None:
    """Build the index the `Bot`'s asks under ``settings`` search, when tool search is on,
    and start embedding the tool texts in the background when the semantic stage is on
    (`warm_semantic`).

    Never raises: a failure is logged, and the first keyword search builds the index.
    """
    if not settings.skills.tool_search_enabled:
        return
    namespaces = toolset.namespace_descriptions(settings.tools.namespaces)
    try:
        build_index(toolset.catalog, namespaces)
    except Exception:
        logger.exception("cannot build the search index ahead; the first search builds it")
    warm_semantic(settings, toolset.catalog)
