"""The sub-agent loop: its own full tool list every request, no tool search, no directory.

Tool search is for the main AI only. An agent gets its instructions as the system prompt, the
main AI's ``request`` as the user message, and all of its own tools on every request; the loop
ends when the agent answers without tool calls (its text is the agent tool's result). Native
tool calls only: sub-agents do not use text recovery.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from bot_toolsearch._core.unicode import well_formed
from bot_toolsearch._protocol.calls import log_failure, parse_arguments
from bot_toolsearch._protocol.messages import (
    INVALID_ARGUMENT_VALUES,
    INVALID_ARGUMENTS,
    TOOL_TIMED_OUT,
    no_such_tool,
    tool_failed,
    truncated_result,
)
from bot_toolsearch._tools.tool import Agent, ArgumentsMismatch, Tool, ToolTimeoutError
from bot_toolsearch._tools.validation import validate_arguments
from bot_toolsearch._transports.base import ModelToolCall, TransportState
from bot_toolsearch._transports.names import WireNames

from .announce import announce_calls

if TYPE_CHECKING:
    from .context import AskContext

__all__ = ["run_agent"]

logger = logging.getLogger("bot_toolsearch")

AGENT_ROUNDS_EXHAUSTED = "(agent {name} stopped after {rounds} rounds without a final answer)"


async def run_agent(ctx: AskContext, agent: Agent, arguments: Mapping[str, Any]) -> str:
    """Run ``agent`` on ``arguments["request"]`` and return its final text.

    Raises:
        ValueError: ``request`` is missing or not a string.
        openai.APIError: a model request failed.
    """
    request = arguments.get("request")
    if not isinstance(request, str):
        raise ValueError('agent arguments need a string field "request"')
    if ctx.transport is None:
        raise RuntimeError("no transport in this ask")
    tools: dict[str, Tool] = {t.name: t for t in agent.tools}
    schemas = [t.schema() for t in tools.values()]
    names = WireNames.build(tools, dot_delimiter=ctx.settings.tools.dot_delimiter)
    messages: list[dict[str, Any]] = []
    if agent.instructions:
        messages.append({"role": "system", "content": agent.instructions})
    messages.append({"role": "user", "content": request})
    state = TransportState()
    last_text = ""
    for _ in range(agent.max_rounds):
        reply = await ctx.transport.complete(messages, schemas, names=names, state=state)
        ctx.stats.agent_rounds += 1
        ctx.stats.agent_prompt_tokens += reply.prompt_tokens
        ctx.stats.agent_cached_tokens += reply.cached_tokens
        last_text = reply.text or ""
        if not reply.tool_calls:
            return last_text
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments},
                    }
                    for c in reply.tool_calls
                ],
            }
        )
        parsed = [parse_arguments(c.arguments) for c in reply.tool_calls]
        # Only calls that will run are announced (not unknown names or unreadable arguments).
        runnable = [
            c.name
            for c, (args, _) in zip(reply.tool_calls, parsed, strict=True)
            if c.name in tools and args is not None
        ]
        await announce_calls(ctx, [(n, "tool") for n in runnable], agent=agent.name)
        outputs = await asyncio.gather(
            *(_run(ctx, tools, c, p) for c, p in zip(reply.tool_calls, parsed, strict=True))
        )
        for call, output in zip(reply.tool_calls, outputs, strict=True):
            messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
    return last_text or AGENT_ROUNDS_EXHAUSTED.format(name=agent.name, rounds=agent.max_rounds)


async def _run(
    ctx: AskContext,
    tools: Mapping[str, Tool],
    call: ModelToolCall,
    parsed: tuple[dict[str, Any] | None, str],
) -> str:
    tool = tools.get(call.name)
    if tool is None:
        return no_such_tool(call.name)
    arguments, problem = parsed
    if arguments is None:
        return INVALID_ARGUMENTS.format(name=call.name, problem=problem)
    arguments, invalid = validate_arguments(tool, arguments)
    if invalid is not None:
        logger.info("agent tool %s not run: invalid arguments: %s", call.name, invalid)
        return INVALID_ARGUMENT_VALUES.format(name=call.name, problem=invalid)
    settings = ctx.settings.tools
    try:
        text = await tool.invoke(
            arguments, default_timeout=settings.call_timeout, threads=ctx.threads
        )
    except ToolTimeoutError as exc:
        logger.warning("agent tool %s timed out after %g s", call.name, exc.seconds)
        return TOOL_TIMED_OUT.format(name=call.name, seconds=exc.seconds)
    except ArgumentsMismatch as exc:
        logger.info("agent tool %s not run: invalid arguments: %s", call.name, exc)
        problem = f"the tool does not take them ({exc})"
        return INVALID_ARGUMENT_VALUES.format(name=call.name, problem=problem)
    except Exception as exc:
        log_failure(call.name, exc)
        return well_formed(tool_failed(call.name, exc))
    return truncated_result(text, settings.max_result_chars)
