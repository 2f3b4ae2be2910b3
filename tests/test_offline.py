"""The public offline path: ``bot_toolsearch.offline`` runs the README and examples offline."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from typing import Any

import openai
import pytest

from bot_toolsearch import Bot, BotSettings
from bot_toolsearch.offline import (
    OFFLINE_MODEL_NAME,
    demo_tools,
    offline_client,
    offline_server,
)

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
_PRIVATE = re.compile(r"\bbot_toolsearch\._\w+")


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, re.DOTALL)


def test_the_readme_and_examples_use_no_private_module() -> None:
    sources = {
        "README.md": "\n".join(_python_blocks(README.read_text(encoding="utf-8"))),
        **{
            p.relative_to(REPO).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted((REPO / "examples").rglob("*.py"))
        },
    }
    found = {name: _PRIVATE.findall(text) for name, text in sources.items()}
    assert {name: hits for name, hits in found.items() if hits} == {}


def test_the_ten_lines_run_offline_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## A bot in 13 lines") :]
    snippet = _python_blocks(section)[0]
    (tmp_path / "config.toml").write_text(
        "[skills]\ntool_search_enabled = true\n\n[bot]\nhot_reload = false\n", encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(snippet, {"__name__": "__main__"})  # our own README, not input
    printed = out.getvalue()
    assert "Oslo" in printed  # the forecast tool ran with the city from the message
    assert "searches=1" in printed  # it was found by tool_search, not sent up front
    assert "'weather.forecast'" in printed  # ... and loaded


async def test_offline_client_answers_through_the_real_sdk() -> None:
    settings = BotSettings.model_validate({"skills": {"tool_search_enabled": True}})
    async with offline_client() as client:
        assert isinstance(client, openai.AsyncOpenAI)
        bot = Bot(settings, demo_tools(), client=client)
        result = await bot.ask("Convert 10 km to miles")
    assert "6.21" in result.reply
    assert result.stats.searches == 1
    assert "units.convert_length" in result.stats.tools_loaded
    assert client.is_closed()


def test_offline_server_lists_the_model_and_honours_the_delimiter() -> None:
    with offline_server(dot_delimiter="__", model="gpt-4o-mini") as server:
        sync = openai.OpenAI(base_url=server.base_url, api_key="any", max_retries=0)
        with sync:
            listed = [m.id for m in sync.models.list()]
            tools: list[Any] = [
                {
                    "type": "function",
                    "function": {
                        "name": "units__convert_length",
                        "description": "Convert a length between units.",
                        "parameters": {
                            "type": "object",
                            "properties": {
                                "value": {"type": "number"},
                                "from_unit": {"type": "string"},
                                "to_unit": {"type": "string"},
                            },
                            "required": ["value", "from_unit", "to_unit"],
                        },
                    },
                }
            ]
            reply = sync.chat.completions.create(
                model="anything",
                messages=[{"role": "user", "content": "Convert 10 km to miles"}],
                tools=tools,
            )
    assert listed == [OFFLINE_MODEL_NAME, "gpt-4o-mini"]
    calls = reply.choices[0].message.tool_calls or []
    assert [c.function.name for c in calls if c.type == "function"] == ["units__convert_length"]
