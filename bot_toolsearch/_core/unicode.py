"""Text that can leave the process: every lone surrogate replaced by U+FFFD.

A Python string may hold lone surrogates (``"\\ud83d"``): a model can send one as a valid JSON
escape, a handler can return one, a catalog can carry one. UTF-8 cannot encode them, so one
such character in a request body makes the SDK's encoding raise. Every string that leaves the
process (tool results, echoed queries, recovered arguments, schemas, the directory, outgoing
messages) goes through `well_formed` first.
"""

from __future__ import annotations

__all__ = ["REPLACEMENT_CHARACTER", "well_formed"]

REPLACEMENT_CHARACTER = "\ufffd"


def well_formed(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD (a surrogate *pair* is joined).

    Linear, and free for ordinary text (one C-level encode that succeeds).

    >>> well_formed("ok \\ud83d!") == "ok \\ufffd!"
    True
    >>> well_formed("\\ud83d\\ude00") == "\\U0001f600"
    True
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text
