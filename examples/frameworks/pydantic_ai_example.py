"""pydantic-ai with tool search: an OpenAIProvider over a wrapped client (offline by default).

python examples/frameworks/pydantic_ai_example.py
"""

from __future__ import annotations

import asyncio

import openai
from _offline import get_weather, many_tools, offline_model, report
from pydantic_ai import Agent, Tool
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from bot_toolsearch import wrap_openai


async def main() -> None:
    server = offline_model()
    client = wrap_openai(openai.AsyncOpenAI(max_retries=0))  # the one-line change
    model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=client))
    tools = [Tool(get_weather)] + [Tool(f, name=n, description=d) for n, d, f in many_tools()]
    agent = Agent(model, tools=tools, instructions="Be brief.")
    result = await agent.run("Weather in Oslo?")
    print(f"reply: {result.output}")
    await client.close()
    report(server)


if __name__ == "__main__":
    asyncio.run(main())
