"""A `Bot` with ~200 tools, its settings in ``config.toml``, its catalog in ``catalog.py``.

Run it from anywhere: ``python examples/many_tools_bot/bot.py``. With no ``[model] base_url``
and no OPENAI_API_KEY/OPENAI_BASE_URL it talks to the embedded offline model (a deterministic
planner, not an LLM), so it needs no key and no network.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

import openai
from catalog import tools  # this folder's tool catalog (the script's folder is on sys.path)

from bot_toolsearch import AskResult, Bot
from bot_toolsearch.config import load_settings
from bot_toolsearch.offline import offline_client  # the embedded offline model

CONFIG = Path(__file__).resolve().parent / "config.toml"
QUESTIONS = (
    "Add a note: buy milk",
    "Check the stock of the blue mug",
    "Convert 10 km to miles",
)


@contextlib.asynccontextmanager
async def model_client() -> AsyncIterator[openai.AsyncOpenAI | None]:
    """The offline model's client when no endpoint is configured; else None (Bot builds one)."""
    settings = load_settings(CONFIG)
    env = os.environ
    if settings.model.base_url or env.get("OPENAI_API_KEY") or env.get("OPENAI_BASE_URL"):
        yield None
        return
    async with offline_client(dot_delimiter=settings.tools.dot_delimiter) as client:
        print(f"model: EMBEDDED OFFLINE MODEL at {client.base_url} (not an LLM)")
        yield client


def show(result: AskResult) -> None:
    for round_ in result.trace:
        calls = ", ".join(
            f"{c.name}({c.arguments if c.name != 'send_message' else '…'}) -> {c.outcome}"
            for c in round_.calls
        )
        print(f"  round {round_.index}: sent {len(round_.tool_names)} tools; {calls}")
    print(f"  reply: {result.reply}")


async def main() -> None:
    async with model_client() as client:
        bot = Bot.from_config(
            CONFIG, tools(), client=client, instructions="Answer with send_message, then call end."
        )
        try:
            print(f"catalog: {len(bot.toolset.catalog)} tools")
            for question in QUESTIONS:
                print(f"ask: {question}")
                show(await bot.ask(question))
        finally:
            await bot.aclose()  # stops watching config.toml


if __name__ == "__main__":
    asyncio.run(main())
