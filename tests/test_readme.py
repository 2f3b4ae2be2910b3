"""Every python block of the README runs as written, and so do the testing docstrings' examples.

Each block is run by the runner named after the heading it sits under; a block under a heading
without a runner fails `test_every_python_block_has_a_runner`, so no snippet can drift untested.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import json
import logging
import re
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import bot_toolsearch.testing
from bot_toolsearch._tools.validation import validate_arguments
from bot_toolsearch.tools import ToolRegistry

README = Path(__file__).resolve().parent.parent / "README.md"


def python_blocks(language: str = "python") -> list[tuple[str, str]]:
    """``(heading, code)`` of every block in ``language``, in README order."""
    blocks: list[tuple[str, str]] = []
    heading = ""
    lines = README.read_text(encoding="utf-8").splitlines(keepends=True)
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            heading = line.strip()
        elif line.strip() == f"```{language}":
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
            blocks.append((heading, "".join(lines[i + 1 : end])))
            i = end
        i += 1
    return blocks


def block(heading: str) -> str:
    found = blocks(heading)
    assert len(found) == 1, heading
    return found[0]


def blocks(heading: str) -> list[str]:
    return [code for h, code in python_blocks() if h == heading]


def run(code: str, **names: Any) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "readme_snippet", **names}
    exec(compile(code, str(README), "exec"), namespace)  # our own README, not input
    return namespace


def ten_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The block runs on the embedded offline model as written (no key, no network); what it
    # must print is checked where the offline path is tested.
    from tests.test_offline import test_the_ten_lines_run_offline_as_written

    test_the_ten_lines_run_offline_as_written(tmp_path, monkeypatch)


def core(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    schemas = [
        {"type": "function", "function": {"name": name, "description": text}}
        for name, text in [
            ("send_message", "Send a message."),
            ("end", "End the turn."),
            ("weather.forecast", "Forecast the weather for a city."),
            ("music.play", "Play a song."),
        ]
    ]
    namespace = run(block("## The core on its own"), schemas=schemas)
    names = [t["function"]["name"] for t in namespace["tools"]]
    assert '"loaded":["weather.forecast"]' in namespace["result"]
    # Every name is one a provider accepts ([A-Za-z0-9_-]{1,64}).
    assert names == ["send_message", "end", "tool_search", "weather-_-forecast"]
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{1,64}", n) for n in names)
    assert namespace["called"] == "weather.forecast"
    assert "music.play" in namespace["system"]


def testing_your_bot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The block runs its own test with asyncio.run and asserts inside it; with tool search
    # off its first assertion would fail, so the settings it builds are checked by running.
    namespace = run(block("## Testing your bot"))
    assert inspect.iscoroutinefunction(namespace["test_the_bot_finds_and_calls_the_forecast"])


def tool_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    function, envelope = [json.loads(c) for h, c in python_blocks("json") if h == TOOL_FOLDERS]
    assert envelope["type"] == "function"
    folder = tmp_path / "tools" / "weather" / "forecast"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(function), encoding="utf-8")
    (folder / "handler.py").write_text(block(TOOL_FOLDERS), encoding="utf-8")
    forecast = ToolRegistry(dirs=[tmp_path / "tools"]).snapshot().tools["weather.forecast"]
    assert forecast.description == "Forecast the weather for a city."
    arguments, problem = validate_arguments(forecast, {"city": "Oslo"})
    assert problem is None
    assert asyncio.run(forecast.invoke(arguments)) == "Oslo: sunny for 3 days"
    assert validate_arguments(forecast, {"days": 2})[1] == '"city" is required'


def test_the_folder_name_warning_reads_as_the_readme_quotes_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "tools" / "weather" / "forecast"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text('{"name": "x"}', encoding="utf-8")
    (folder / "handler.py").write_text("def execute():\n    return 'x'\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        ToolRegistry(dirs=[tmp_path / "tools"])
    quoted = "config.json names the tool 'x'; using the folder name 'weather.forecast'"
    assert quoted in README.read_text(encoding="utf-8").replace("\n", " ")
    assert any(quoted in r.getMessage() for r in caplog.records)


TOOL_FOLDERS = "## Tool folders"


def conversations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bot_toolsearch import Bot, BotSettings
    from bot_toolsearch.offline import demo_tools, offline_client

    seen: list[int] = []

    async def go() -> int:
        async with offline_client() as client:
            settings = BotSettings(skills={"tool_search_enabled": True})
            bot = Bot(settings, demo_tools(), client=client)
            real_ask = bot.ask

            async def ask(text: str, **kwargs: Any) -> Any:
                history = await bot.conversations.load(kwargs["conversation"])
                seen.append(len(history.turns))
                return await real_ask(text, **kwargs)

            namespace: dict[str, Any] = {"bot": bot}
            bot.ask = ask  # type: ignore[method-assign]
            flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
            await eval(
                compile(block("## Conversations"), str(README), "exec", flags=flags), namespace
            )
            left = len((await bot.conversations.load("group-42/alice")).turns)
            await bot.aclose()
            return left

    assert asyncio.run(go()) == 0  # reset_conversation forgot it
    assert seen == [0, 1]  # the follow-up saw the first turn


def frameworks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import openai
    from agents import OpenAIChatCompletionsModel
    from langchain_openai import ChatOpenAI
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    wrapper, proxy = blocks("## Use it with your framework")
    tool = {"type": "function", "function": {"name": "get_weather", "parameters": {}}}
    with bot_toolsearch.testing.ScriptedOpenAIServer() as server:
        server.script(bot_toolsearch.testing.text("Hello."))
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        namespace: dict[str, Any] = {
            "openai": openai,
            "OpenAIChatCompletionsModel": OpenAIChatCompletionsModel,
            "OpenAIChatModel": OpenAIChatModel,
            "OpenAIProvider": OpenAIProvider,
            "messages": [{"role": "user", "content": "hi"}],
            "all_tools": [tool],
        }
        flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
        code = compile(wrapper, str(README), "exec", flags=flags)

        async def go() -> None:
            await eval(code, namespace)  # our own README, not input
            await namespace["client"].close()  # in its own loop, not later by the collector

        asyncio.run(go())
        server.assert_consumed()
    assert namespace["reply"].choices[0].message.content == "Hello."
    assert server.requests[0].tool_names == ["tool_search"]  # the projection, not all_tools
    langchain = run(proxy, ChatOpenAI=ChatOpenAI)
    assert str(langchain["model"].openai_api_base) == "http://127.0.0.1:8787/v1"


RUNNERS: dict[str, Callable[[Path, pytest.MonkeyPatch], None]] = {
    "## Ten lines in your bot": ten_lines,
    "## Conversations": conversations,
    "## Use it with your framework": frameworks,
    TOOL_FOLDERS: tool_folders,
    "## The core on its own": core,
    "## Testing your bot": testing_your_bot,
}


def test_every_python_block_has_a_runner() -> None:
    assert list(dict.fromkeys(heading for heading, _ in python_blocks())) == list(RUNNERS)


@pytest.mark.parametrize("heading", list(RUNNERS))
def test_the_readme_block_runs(
    heading: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    RUNNERS[heading](tmp_path, monkeypatch)


def test_the_testing_block_fails_when_tool_search_is_off() -> None:
    code = block("## Testing your bot").replace(
        '{"tool_search_enabled": True}', '{"tool_search_enabled": False}'
    )
    with pytest.raises(AssertionError):
        run(code)


def docstring_example(doc: str | None) -> str:
    assert doc is not None
    match = re.search(r"::\n\n((?:(?: {4,}.*)?\n)+)", inspect.cleandoc(doc) + "\n")
    assert match is not None
    return textwrap.dedent(match.group(1))


@pytest.mark.parametrize(
    "doc",
    [bot_toolsearch.testing.__doc__, bot_toolsearch.testing.ScriptedOpenAIServer.__doc__],
    ids=["module", "ScriptedOpenAIServer"],
)
def test_the_testing_docstring_examples_run_and_assert_what_is_sent(doc: str | None) -> None:
    code = docstring_example(doc)
    assert '["send_message", "end", "tool_search"]' in code
    run(code)
