"""A conversation's turns as history: what an ask keeps of itself, and what a later ask sends.

An ask keeps the user's message, the tool calls that really ran (each with its result right
after it) and its final text. It drops what only mattered inside the ask: ``tool_search``
calls (the loaded set resets per ask), refused or invalid calls, ``end`` and empty answers.

Before a later ask sends stored turns they are checked again, since the tools or permissions
may have changed and a file may have been edited: a call to a tool this ask may not use is
dropped together with its result, a call without its result (or a result without its call)
is dropped, and anything not shaped like a message is skipped. A call and its result are
never separated. Then whole turns are kept, newest first, within the token budget. A turn
larger than the whole budget on its own (a huge tool result) does not end the history: its tool
results are cut, each with a marker saying so, until it fits half of what is left of the budget
(the older turns keep room), or, if even that cannot make it fit, it alone is left out; older
turns still follow.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .ask_result import RoundTrace
from .conversations import ConversationHistory, ConversationTurn
from .toolset import END

__all__ = ["estimate_tokens", "record_turn", "replay_turns"]

_KEPT_OUTCOMES = frozenset({"ran", "failed"})
_PER_MESSAGE = 4
_CUT_MARKER = "\n[cut: {} more characters of this tool result were not kept in the conversation]"


def record_turn(user_text: str, reply: str, trace: Sequence[RoundTrace]) -> ConversationTurn:
    """The turn one finished ask leaves in its conversation, built from its trace."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": user_text}]
    called: dict[str, None] = {}
    for round_ in trace:
        kept = [c for c in round_.calls if c.outcome in _KEPT_OUTCOMES and c.name != END]
        if kept:
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
                        for c in kept
                    ],
                }
            )
            messages.extend(
                {"role": "tool", "tool_call_id": c.id, "content": c.result} for c in kept
            )
            called.update(dict.fromkeys(c.name for c in kept))
        elif not round_.calls and round_.text and round_.text.strip():
            messages.append({"role": "assistant", "content": round_.text})
    return ConversationTurn(
        user_text=user_text, reply=reply, messages=tuple(messages), tools_called=tuple(called)
    )


def replay_turns(
    history: ConversationHistory, *, permitted: frozenset[str], max_tokens: int
) -> list[dict[str, Any]]:
    """The stored turns as messages to send before the new user message.

    Args:
        history: the turns the store returned (already at most ``max_turns``).
        permitted: canonical names this ask may use; calls to any other tool are dropped.
        max_tokens: estimated token budget of the result (whole turns, newest kept); 0: none.
            A turn over the whole budget by itself is shortened (tool results cut) or skipped.
    """
    kept: list[list[dict[str, Any]]] = []
    used = 0
    for turn in reversed(history.turns):
        messages = repair(turn.messages, permitted)
        if not messages:
            continue
        cost = estimate_tokens(messages)
        if max_tokens and cost > max_tokens:
            # Half of what is left, so the older turns keep room too.
            shortened = _shorten(messages, (max_tokens - used) // 2)
            if shortened is None:
                continue  # this turn alone is left out; older turns may still fit
            messages, cost = shortened, estimate_tokens(shortened)
        elif max_tokens and used + cost > max_tokens:
            break
        used += cost
        kept.append(messages)
    return [message for messages in reversed(kept) for message in messages]


def _shorten(messages: list[dict[str, Any]], budget: int) -> list[dict[str, Any]] | None:
    """``messages`` with every tool result cut to the longest length that fits ``budget``
    tokens (each cut result ends with a marker), or ``None`` when nothing would fit."""
    longest = max((len(m["content"]) for m in messages if m.get("role") == "tool"), default=0)

    def cut(limit: int) -> list[dict[str, Any]]:
        return [
            {**m, "content": m["content"][:limit] + _CUT_MARKER.format(len(m["content"]) - limit)}
            if m.get("role") == "tool" and len(m["content"]) > limit
            else m
            for m in messages
        ]

    if budget <= 0 or estimate_tokens(cut(0)) > budget:
        return None
    low, high = 0, longest  # cut(low) fits; find the largest such limit
    while low < high:
        middle = (low + high + 1) // 2
        if estimate_tokens(cut(middle)) <= budget:
            low = middle
        else:
            high = middle - 1
    return cut(low)


def repair(messages: Iterable[object], permitted: frozenset[str]) -> list[dict[str, Any]]:
    """``messages`` made fit to send: clean copies, each kept call directly followed by its
    result, nothing else of the tool protocol."""
    out: list[dict[str, Any]] = []
    pending: dict[str, dict[str, Any]] = {}  # call id -> call, of the latest assistant message
    results: list[dict[str, Any]] = []
    assistant: dict[str, Any] | None = None

    def flush() -> None:
        nonlocal assistant
        if assistant is None:
            return
        answered = {r["tool_call_id"] for r in results}
        calls = [c for c in assistant["tool_calls"] if c["id"] in answered]
        if calls:
            out.append({**assistant, "tool_calls": calls})
            out.extend(results)
        elif assistant.get("content"):
            out.append({"role": "assistant", "content": assistant["content"]})
        assistant = None
        pending.clear()
        results.clear()

    for message in messages:
        if not isinstance(message, Mapping):
            continue
        role, content = message.get("role"), message.get("content")
        text = content if isinstance(content, str) else None
        if role == "tool":
            call_id = message.get("tool_call_id")
            if assistant is not None and isinstance(call_id, str) and call_id in pending:
                pending.pop(call_id)
                results.append({"role": "tool", "tool_call_id": call_id, "content": text or ""})
            continue
        flush()
        if role == "user" and text is not None:
            out.append({"role": "user", "content": text})
        elif role == "assistant":
            calls = _calls(message.get("tool_calls"), permitted)
            if calls:
                assistant = {"role": "assistant", "content": text, "tool_calls": calls}
                pending.update((c["id"], c) for c in calls)
            elif text:
                out.append({"role": "assistant", "content": text})
    flush()
    return out


def _calls(raw: object, permitted: frozenset[str]) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    seen: set[str] = set()
    for call in raw if isinstance(raw, list) else ():
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping):
            continue
        call_id, name = call.get("id"), function.get("name")
        arguments = function.get("arguments")
        if not (isinstance(call_id, str) and call_id and call_id not in seen):
            continue
        if not isinstance(name, str) or name not in permitted or not isinstance(arguments, str):
            continue
        seen.add(call_id)
        calls.append(
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        )
    return calls


def estimate_tokens(messages: Iterable[Mapping[str, Any]]) -> int:
    """A quick token estimate: about four ASCII characters per token, one per other character
    (Chinese, Japanese and Korean run close to one token each), plus a few per message."""
    total = 0
    for message in messages:
        total += _PER_MESSAGE + _text_tokens(message.get("content"))
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            total += _text_tokens(function.get("name")) + _text_tokens(function.get("arguments"))
    return total


def _text_tokens(text: object) -> int:
    if not isinstance(text, str):
        return 0
    wide = sum(1 for ch in text if ord(ch) > 0x7F)
    return (len(text) - wide + 3) // 4 + wide
