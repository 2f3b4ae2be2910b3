"""The results of a call refused for its arguments, the same in every door."""

from __future__ import annotations

import logging

from bot_toolsearch._protocol.calls import CallRequest, CallResult
from bot_toolsearch._protocol.messages import (
    INVALID_ARGUMENT_VALUES,
    INVALID_ARGUMENTS,
    shown_name,
)

__all__ = ["invalid_arguments", "rejected_arguments"]

logger = logging.getLogger("bot_toolsearch")


def invalid_arguments(call: CallRequest) -> CallResult:
    """The result for a call whose arguments are not a JSON object."""
    problem = call.arguments_error or "they could not be read"
    content = INVALID_ARGUMENTS.format(name=call.name, problem=problem)
    return CallResult(call.id, call.name, content, "invalid")


def rejected_arguments(call: CallRequest, problem: str) -> CallResult:
    """The result for a call whose arguments the tool's schema rejects (the model's mistake)."""
    logger.info("tool %s not run: invalid arguments: %s", shown_name(call.name), problem)
    content = INVALID_ARGUMENT_VALUES.format(name=call.name, problem=problem)
    return CallResult(call.id, call.name, content, "invalid")
