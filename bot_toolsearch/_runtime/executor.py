"""The innermost call handler: runs the tools a round exposes, concurrently; refuses the rest."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from bot_toolsearch._core.unicode import well_formed
from bot_toolsearch._protocol.calls import CallRequest, CallResult, log_failure, log_refusals
from bot_toolsearch._protocol.messages import (
    TOOL_TIMED_OUT,
    no_such_tool,
    tool_failed,
    truncated_result,
)
from bot_toolsearch._services.arguments import invalid_arguments, rejected_arguments
from bot_toolsearch._tools.tool import Agent, ArgumentsMismatch, Tool, ToolTimeoutError
from bot_toolsearch._tools.validation import validate_arguments

from .agent_runner import run_agent
from .announce import CallKind, announce_calls
from .context import AskContext
from .toolset import END, SEND_MESSAGE, Builtin, Entry

__all__ = ["execute_calls", "run_tool"]

logger = logging.getLogger("bot_toolsearch")


async def execute_calls(ctx: AskContext, calls: Sequence[CallRequest]) -> list[CallResult]:
    """Run every call that is exposed this round and permitted; one result per call, in order.

    This is the last line of defence: whatever the middlewares let through, a call to a name
    outside this round's exposed set (or the ask's permitted set) never runs, and its result
    says only that no such tool exists.
    """
    results: list[CallResult | None] = [None] * len(calls)
    runnable: list[tuple[int, CallRequest, Entry]] = []
    for i, call in enumerate(calls):
        entry = ctx.toolset.entries.get(call.name)
        if entry is None or call.name not in ctx.exposed or call.name not in ctx.permitted:
            content = no_such_tool(call.name)
            results[i] = CallResult(call.id, call.name, content, "refused", "unknown")
        elif call.arguments is None:
            results[i] = invalid_arguments(call)
        elif call.name == SEND_MESSAGE and not isinstance(call.arguments.get("text"), str):
            # Checked before announcing, so a send that cannot happen is not announced.
            results[i] = invalid_arguments(_with_problem(call, '"text" must be a string'))
        elif isinstance(entry, Tool | Agent):
            # Checked before announcing, and the handler never sees arguments its schema rejects.
            arguments, problem = validate_arguments(entry, call.arguments)
            if problem is not None:
                results[i] = rejected_arguments(call, problem)
            else:
                runnable.append((i, dataclasses.replace(call, arguments=arguments), entry))
        else:
            runnable.append((i, call, entry))
    log_refusals([r for r in results if r is not None])
    await announce_calls(ctx, [(call.name, _kind(entry)) for _, call, entry in runnable])
    ran = await asyncio.gather(*(_run(ctx, call, entry) for _, call, entry in runnable))
    for (i, _, _), result in zip(runnable, ran, strict=True):
        results[i] = result
    return [r for r in results if r is not None]


def _with_problem(call: CallRequest, problem: str) -> CallRequest:
    return CallRequest(call.index, call.id, call.name, call.arguments_raw, None, problem)


def _kind(entry: Entry) -> CallKind:
    return "agent" if isinstance(entry, Agent) else "tool"


async def _run(ctx: AskContext, call: CallRequest, entry: Entry) -> CallResult:
    arguments: Mapping[str, Any] = call.arguments or {}
    try:
        if isinstance(entry, Builtin):
            content = await _builtin(ctx, call, arguments)
        elif isinstance(entry, Agent):
            content = await run_agent(ctx, entry, arguments)
        else:
            content = await run_tool(ctx, entry, arguments)
    except _BadArguments as exc:
        return invalid_arguments(_with_problem(call, str(exc)))
    except ToolTimeoutError as exc:
        logger.warning("tool %s timed out after %g s; abandoned", call.name, exc.seconds)
        content = TOOL_TIMED_OUT.format(name=call.name, seconds=exc.seconds)
        return CallResult(call.id, call.name, content, "failed")
    except ArgumentsMismatch as exc:
        # The handler takes other arguments than the model sent: the model's mistake.
        return rejected_arguments(call, f"the tool does not take them ({exc})")
    except Exception as exc:
        log_failure(call.name, exc)
        content = well_formed(tool_failed(call.name, exc))
        return CallResult(call.id, call.name, content, "failed")
    return CallResult(call.id, call.name, content, "ran")


async def run_tool(ctx: AskContext, tool: Tool, arguments: Mapping[str, Any]) -> str:
    """Run a tool as the ask's settings say: on the bot's threads, within the tool's timeout
    (``[tools] call_timeout`` unless it sets one), the result cut at ``max_result_chars``.

    Raises:
        ToolTimeoutError: the call ran past its timeout.
        Exception: whatever the handler raises.
    """
    tools = ctx.settings.tools
    text = await tool.invoke(arguments, default_timeout=tools.call_timeout, threads=ctx.threads)
    return truncated_result(text, tools.max_result_chars)


class _BadArguments(ValueError):
    pass


async def _builtin(ctx: AskContext, call: CallRequest, arguments: Mapping[str, Any]) -> str:
    if call.name == SEND_MESSAGE:
        text = arguments.get("text")
        if not isinstance(text, str):
            raise _BadArguments('"text" must be a string')
        await ctx.send("message", text)
        return "sent"
    if call.name == END:
        ctx.ended = True
        return "ended"
    raise _BadArguments(f"unknown built-in {call.name}")
