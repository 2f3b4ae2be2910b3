"""A final Chat Completions reply handed on as the upstream's own bytes when nothing in it changed.

A server that answers with the wrapped ``create``'s result (the proxy) would dump the SDK
objects to JSON again, though the reply is often exactly what the upstream sent: one round,
no call renamed or dropped, no usage summed, nothing fixed by the checks. Such a server sets
`VERBATIM` to a fresh `Verbatim` before the call; the wrapper offers it each round's reply
with its body when the body was read strictly (no value coerced) and no check changed the
reply (`bot_toolsearch._wrap.replies`), and drops it when the plan changed the answer
(`ChatPlan.unchanged`). `Verbatim.body_of` then gives the upstream's bytes for exactly that
answer object, else ``None`` (dump it). Unset, nothing is kept.
"""

from __future__ import annotations

import contextvars

__all__ = ["VERBATIM", "Verbatim"]


class Verbatim:
    """The last round's reply and the body that says exactly what it holds, if any."""

    __slots__ = ("_body", "_reply")

    def __init__(self) -> None:
        self._reply: object = None
        self._body: bytes | None = None

    def offer(self, reply: object, body: bytes | None) -> None:
        """A round's checked reply, and its body when it holds just that (else ``None``)."""
        self._reply, self._body = reply, body

    def drop(self) -> None:
        """The answer differs from the last reply's body."""
        self._reply, self._body = None, None

    def body_of(self, answer: object) -> bytes | None:
        """The upstream's bytes of ``answer`` when they say exactly what it holds, else ``None``."""
        return self._body if answer is self._reply and self._reply is not None else None


VERBATIM: contextvars.ContextVar[Verbatim | None] = contextvars.ContextVar(
    "bot_toolsearch_verbatim", default=None
)
"""Where this call's final reply and its bytes are kept (set by a server before ``create``)."""
