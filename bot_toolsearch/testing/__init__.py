"""Test support: `ScriptedOpenAIServer`, a scripted OpenAI-compatible server on 127.0.0.1.

Test a bot with the real ``openai`` SDK and real HTTP, no patching::

    from bot_toolsearch.testing import ScriptedOpenAIServer, call, text

    with ScriptedOpenAIServer() as server:
        server.script(
            call("tool_search", query="select:weather.forecast"),   # round 1
            [call("weather-_-forecast", city="Oslo"), call("end")],  # round 2: two calls
            text("done"),                                            # round 3
        )
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        ...  # run the bot against client
        server.assert_consumed()
        assert "weather-_-forecast" in server.requests[1].tool_names

Usage figures in the answers are estimates (about four characters of compact JSON per token),
with cached tokens simulating a provider's prefix cache against the previous request. For
cache measurements, ``ScriptedOpenAIServer(prompt_cache=True)`` models a provider's prefix
cache instead (OpenAI's rule: tools first, 1,024-token minimum, 128-token blocks, counted in
``o200k_base`` when ``bpe-openai`` is installed); `PromptCacheModel` documents and tunes it.
"""

from __future__ import annotations

from ._app import Responder
from ._cache import PromptCacheModel
from ._request import Api, ModelRequest, UnconsumedTurns, UnexpectedModelCall
from ._server import ScriptedOpenAIServer
from ._turns import (
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
