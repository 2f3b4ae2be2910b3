"""The embedded offline model, public: run a bot with no API key and no network.

The model is a small deterministic planner, NOT a language model: it reads the user's message,
searches the ``<available_deferred_tools>`` directory, calls the tool that fits with arguments
read from the message and answers with ``send_message``. It is served by a
`ScriptedOpenAIServer` on 127.0.0.1, so the bot talks to it through the real ``openai`` SDK
over real HTTP, exactly as to a hosted model::

    from bot_toolsearch import Bot
    from bot_toolsearch.offline import offline_client

    async with offline_client() as client:
        bot = Bot.from_config("config.toml", tools=[forecast], client=client)
        result = await bot.ask("Will it rain in Oslo this weekend?")

`demo_tools` is the 178-tool catalog of ``bot-toolsearch demo`` (example data: tools that can
compute their answer do; the rest return results marked ``"sample_data": true``).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator

import openai

from bot_toolsearch._demo.catalog import demo_tools
from bot_toolsearch._demo.planner import OFFLINE_MODEL_NAME, OfflinePlanner
from bot_toolsearch._scripted import ScriptedOpenAIServer
from bot_toolsearch._transports.names import DEFAULT_DOT_DELIMITER

__all__ = [
    "OFFLINE_API_KEY",
    "OFFLINE_MODEL_NAME",
    "OfflinePlanner",
    "demo_tools",
    "offline_client",
    "offline_server",
]

OFFLINE_API_KEY = "offline"
"""The API key `offline_client` sends (the offline server accepts any)."""


@contextlib.contextmanager
def offline_server(
    *, dot_delimiter: str = DEFAULT_DOT_DELIMITER, model: str | None = None
) -> Iterator[ScriptedOpenAIServer]:
    """The offline model served on 127.0.0.1 while the ``with`` block runs.

    Use its ``base_url`` with any OpenAI-compatible client (your own loop, another SDK).

    Args:
        dot_delimiter: how your bot encodes dots in tool names on the wire (``[tools]
            dot_delimiter``), so the model reads the names back.
        model: a model name ``GET /v1/models`` lists besides `OFFLINE_MODEL_NAME` (any name is
            answered; this only affects the listing).
    """
    models = (OFFLINE_MODEL_NAME, *([model] if model and model != OFFLINE_MODEL_NAME else []))
    planner = OfflinePlanner(dot_delimiter=dot_delimiter)
    with ScriptedOpenAIServer(responder=planner, models=models) as server:
        yield server


@contextlib.asynccontextmanager
async def offline_client(
    *, dot_delimiter: str = DEFAULT_DOT_DELIMITER, model: str | None = None
) -> AsyncIterator[openai.AsyncOpenAI]:
    """An ``openai.AsyncOpenAI`` talking to the offline model; closed with the block.

    Pass it to ``Bot(..., client=client)`` or ``Bot.from_config(..., client=client)``; the
    bot's ``[model] name`` may stay as it is. Arguments as for `offline_server`.
    """
    with offline_server(dot_delimiter=dot_delimiter, model=model) as server:
        client = openai.AsyncOpenAI(
            base_url=server.base_url, api_key=OFFLINE_API_KEY, max_retries=0
        )
        try:
            yield client
        finally:
            await client.close()
