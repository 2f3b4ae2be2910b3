"""Test support: `ScriptedOpenAIServer`, a scripted OpenAI-compatible server on 127.0.0.1.

Test a bot with the real ``openai`` SDK and real HTTP, no patching (a turn is one model
response; ``[call(...), call(...)]`` is one response with two calls)::

    import asyncio

    import openai

    from bot_toolsearch import Bot, BotSettings, tool
    from bot_toolsearch.testing import ScriptedOpenAIServer, call, text

    @tool(name="weather.forecast", description="Forecast the weather for a city.")
    def forecast(city: str) -> str:
        return f"{city}: sunny"

    async def test_the_bot_finds_and_calls_the_forecast() -> None:
        settings = BotSettings(skills={"tool_search_enabled": True})
        with ScriptedOpenAIServer() as server:
            server.script(
                call("tool_search", query="select:weather.forecast"),  # round 1
                call("weather-_-forecast", city="Oslo"),                # round 2
                text("Sunny in Oslo."),                                 # round 3
            )
            async with openai.AsyncOpenAI(
                base_url=server.base_url, api_key="test", max_retries=0
            ) as client:
                result = await Bot(settings, [forecast], client=client).ask("Oslo weather?")
            server.assert_consumed()
        # Round 1 offers the always-loaded tools and tool_search; round 2 adds the
        # loaded schema, under its wire name.
        assert server.requests[0].tool_names == ["send_message", "end", "tool_search"]
        assert "weather-_-forecast" in server.requests[1].tool_names
        assert result.reply == "Sunny in Oslo."

    asyncio.run(test_the_bot_finds_and_calls_the_forecast())

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
