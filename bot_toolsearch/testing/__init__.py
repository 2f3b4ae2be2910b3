"""Test support: `ScriptedOpenAIServer`, a scripted OpenAI-compatible server on 127.0.0.1.

Test a bot with the real ``openai`` SDK and real HTTP, no patching (a turn is one model
response; ``[call(...), call(...)]`` is one response with two calls): `ScriptedOpenAIServer`'s
docstring has the example, a bot that searches, loads and calls a tool in three rounds (run by
``tests/test_readme.py``; ``docs/testing.md`` walks through it).

Usage figures in the answers are estimates (about four characters of compact JSON per token),
with cached tokens simulating a provider's prefix cache against the previous request. For
cache measurements, ``ScriptedOpenAIServer(prompt_cache=True)`` models a provider's prefix
cache instead (OpenAI's rule: tools first, 1,024-token minimum, 128-token blocks, counted in
``o200k_base`` when ``bpe-openai`` is installed); `PromptCacheModel` documents and tunes it.
"""

from __future__ import annotations

from bot_toolsearch._scripted import (
    Api,
    ModelRequest,
    PromptCacheModel,
    Responder,
    ScriptedOpenAIServer,
    UnconsumedTurns,
    UnexpectedModelCall,
)
from bot_toolsearch._scripted.turns import (
    ErrorTurn,
    ScriptEntry,
    TextTurn,
    ToolCall,
    ToolCallsTurn,
    Turn,
    Usage,
    call,
    error,
    text,
)

__all__ = [
    "Api",
    "ErrorTurn",
    "ModelRequest",
    "PromptCacheModel",
    "Responder",
    "ScriptEntry",
    "ScriptedOpenAIServer",
    "TextTurn",
    "ToolCall",
    "ToolCallsTurn",
    "Turn",
    "UnconsumedTurns",
    "UnexpectedModelCall",
    "Usage",
    "call",
    "error",
    "text",
]


def _set_public_module() -> None:
    """Point tracebacks and reprs at ``bot_toolsearch.testing``, not the private modules."""
    import inspect

    for name in __all__:
        obj = globals()[name]
        if inspect.isclass(obj) or inspect.isfunction(obj):
            obj.__module__ = __name__


_set_public_module()
