"""Shared fixtures: one scripted OpenAI-compatible server per test, and the SDK client for it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any, Protocol

import openai
import pytest

from bot_toolsearch import Bot, BotSettings, Tool
from bot_toolsearch.testing import ScriptedOpenAIServer


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    """A running scripted server; unexpected or unused turns fail the test at teardown."""
    with ScriptedOpenAIServer() as srv:
        yield srv
        srv.assert_consumed()


@pytest.fixture
async def client(server: ScriptedOpenAIServer) -> AsyncIterator[openai.AsyncOpenAI]:
    """The real ``openai.AsyncOpenAI`` pointed at ``server`` (no retries, so errors surface)."""
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0) as c:
        yield c


@pytest.fixture(params=["chat_completions", "responses"])
def api(request: pytest.FixtureRequest) -> str:
    """Both API modes, for every test that concerns the wire."""
    value: str = request.param
    return value


class BotFactory(Protocol):
    def __call__(
        self, tools: Sequence[Any] = (), agents: Sequence[Any] = (), **kwargs: Any
    ) -> Bot: ...


@pytest.fixture
def make_bot(client: openai.AsyncOpenAI, api: str) -> BotFactory:
    """``make_bot(tools, agents, skills={...}, tools_table={...}, ..., **bot_kwargs)``: a
    `Bot` on the scripted server in the current API mode, tool search on unless overridden."""

    def build(tools: Sequence[Any] = (), agents: Sequence[Any] = (), **kwargs: Any) -> Bot:
        tables: dict[str, Any] = {"model": {"api": api}, "skills": {"tool_search_enabled": True}}
        for table in ("model", "skills", "tools_table", "easter_egg", "plugins"):
            key = "tools" if table == "tools_table" else table
            tables.setdefault(key, {}).update(kwargs.pop(table, {}))
        settings = BotSettings.model_validate(tables)
        kwargs.setdefault("instructions", "You are a test bot.")
        return Bot(settings, tools, agents, client=client, **kwargs)

    return build


class Ran:
    """Records every tool run: ``(name, arguments)`` in start order."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.calls]

    def tool(
        self, name: str, description: str = "", result: str | None = None, **props: str
    ) -> Tool:
        """A recording tool with string parameters ``props`` (name -> description)."""
        parameters = {
            "type": "object",
            "properties": {k: {"type": "string", "description": v} for k, v in props.items()},
        }

        def handler(**arguments: Any) -> str:
            self.calls.append((name, arguments))
            return result if result is not None else f"{name} ok {sorted(arguments.items())}"

        return Tool(name, description or f"The {name} tool.", parameters, handler)


@pytest.fixture
def ran() -> Ran:
    """A fresh run recorder."""
    return Ran()


@pytest.fixture
def weather_tools(ran: Ran) -> list[Tool]:
    """Three deferred tools: ``weather.forecast``, ``music.play``, ``calendar.add``."""
    return [
        ran.tool("weather.forecast", "Weather forecast for a city.", city="City name."),
        ran.tool("music.play", "Play a song.", song="Song title."),
        ran.tool("calendar.add", "Add a calendar event.", title="Event title."),
    ]
