"""The OpenAI Agents SDK with tool search: hand it a wrapped client (offline by default).

python examples/frameworks/openai_agents_example.py
"""

from __future__ import annotations

import asyncio

import openai
from _offline import get_weather, many_tools, offline_model, report
from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled

from bot_toolsearch import wrap_openai


async def main() -> None:
    server = offline_model()
    set_tracing_disabled(True)
    client = wrap_openai(openai.AsyncOpenAI(max_retries=0))  # the one-line change
    tools = [function_tool(get_weather)]
    tools += [function_tool(f, name_override=n, description_override=d) for n, d, f in many_tools()]
    model = OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client)
    agent = Agent(name="assistant", instructions="Be brief.", model=model, tools=tools)
    result = await Runner.run(agent, "Weather in Oslo?")
    print(f"reply: {result.final_output}")
    await client.close()
    report(server)


if __name__ == "__main__":
    asyncio.run(main())
