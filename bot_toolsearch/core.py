"""The pure core of tool search, public: a catalog, a per-ask session, results and the texts.

Use it to give your own loop tool search with no `Bot` (``examples/own_loop.py``)::

    from bot_toolsearch.core import ToolCatalog, ToolSearchSession
"""

from __future__ import annotations

from bot_toolsearch import _set_public_module
from bot_toolsearch._core.catalog import MAX_SCHEMA_DEPTH, TOOL_SEARCH_NAME, ToolCatalog
from bot_toolsearch._core.directory import DEFAULT_DIRECTORY_BUDGET, DeferredDirectory
from bot_toolsearch._core.prompt import (
    GROUPED_DIRECTORY_RULES,
    TOOL_SEARCH_RULES,
    render_deferred_tools,
)
from bot_toolsearch._core.query import NameDecoder
from bot_toolsearch._core.result import ToolSearchResult
from bot_toolsearch._core.session import ToolSearchSession
from bot_toolsearch._transports.names import WireNames

__all__ = [  # noqa: RUF022 - plain sorted(), as tests/test_public_api.py checks
    "DEFAULT_DIRECTORY_BUDGET",
    "DeferredDirectory",
    "GROUPED_DIRECTORY_RULES",
    "MAX_SCHEMA_DEPTH",
    "NameDecoder",
    "TOOL_SEARCH_NAME",
    "TOOL_SEARCH_RULES",
    "ToolCatalog",
    "ToolSearchResult",
    "ToolSearchSession",
    "WireNames",
    "render_deferred_tools",
]


_set_public_module(__name__, __all__)
