"""Tool search's keyword index built ahead of the first search, by any door.

The index of a catalog is built on first use by `search_index` (it tokenises every name,
description and parameter: time in proportion to the catalog). Every door builds it ahead
instead, off the ask path, with the very namespace descriptions its sessions pass, so the first
keyword search finds it in the catalog's cache (`index_key` is the key a `ToolSearchSession`
derives from its ``namespaces``).
"""

from __future__ import annotations

from collections.abc import Mapping

from bot_toolsearch._core.catalog import Namespaces, ToolCatalog, search_index
from bot_toolsearch._core.catalog import index_built as catalog_index_built

__all__ = ["build_index", "index_built", "index_key"]


def index_key(namespaces: Mapping[str, str] | None) -> Namespaces:
    """The ``(namespace, description)`` pairs a session over ``namespaces`` searches with
    (what `ToolSearchSession` passes to `search_index`)."""
    return tuple(namespaces.items()) if namespaces else ()


def build_index(catalog: ToolCatalog, namespaces: Mapping[str, str] | None) -> None:
    """Build the keyword index sessions over ``catalog`` and ``namespaces`` search (nothing
    when it is built already)."""
    search_index(catalog, index_key(namespaces))


def index_built(catalog: ToolCatalog, namespaces: Mapping[str, str] | None) -> bool:
    """Whether the index `build_index` builds is there already (nothing is built)."""
    return catalog_index_built(catalog, index_key(namespaces))
