"""Extending a `Bot`, public: middleware, the per-ask context, call values and plugins.

from bot_toolsearch.middleware import AskContext, CallHandler, CallRequest, Middleware
"""

from __future__ import annotations

from bot_toolsearch import _set_public_module
from bot_toolsearch._protocol.calls import CallOutcome, CallRequest, CallResult, RefusalReason
from bot_toolsearch._runtime.context import AskContext
from bot_toolsearch._runtime.middleware import (
    CallHandler,
    LoggingMiddleware,
    Middleware,
    RoundRequest,
    forward_unanswered,
)
from bot_toolsearch._runtime.plugins import Plugin
from bot_toolsearch._runtime.tool_search import ToolSearchMiddleware
from bot_toolsearch._transports.base import ToolDeclaration

__all__ = [
    "AskContext",
    "CallHandler",
    "CallOutcome",
    "CallRequest",
    "CallResult",
    "LoggingMiddleware",
    "Middleware",
    "Plugin",
    "RefusalReason",
    "RoundRequest",
    "ToolDeclaration",
    "ToolSearchMiddleware",
    "forward_unanswered",
]


_set_public_module(__name__, __all__)
