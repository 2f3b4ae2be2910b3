"""The tool-search core in your own plain ``openai`` loop, without `Bot`.

Runs against the embedded offline model by default; pass ``--model-url URL --model NAME``
(and set OPENAI_API_KEY) for a real OpenAI-compatible endpoint.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

import openai

from bot_toolsearch.core import (
    TOOL_SEARCH_NAME,
    TOOL_SEARCH_RULES,
    ToolCatalog,
    ToolSearchSession,
    WireNames,
    render_deferred_tools,
)
from bot_toolsearch.offline import OFFLINE_MODEL_NAME, demo_tools, offline_server

TOOLS = {tool.name: tool for tool in demo_tools()}
CATALOG = ToolCatalog([tool.schema() for tool in TOOLS.values()])  # built once, reused
WIRE = WireNames.build([*CATALOG.names, TOOL_SEARCH_NAME])  # dots are not legal on the wire


def on_the_wire(schemas: list[dict[str, Any]]) -> list[Any]:
    for schema in schemas:
        schema["function"]["name"] = WIRE.to_wire(schema["function"]["name"])
    return schemas


async def ask(client: openai.AsyncOpenAI, model: str, question: str) -> str:
    session = ToolSearchSession(CATALOG, max_results=5)  # one per ask
    directory = render_deferred_tools(session.deferred_tool_names) + "\n\n" + TOOL_SEARCH_RULES
    messages: list[Any] = [
        {"role": "system", "content": directory},
        {"role": "user", "content": question},
    ]
    for _ in range(6):
        tools = on_the_wire(session.request_tools())
        print(f"  sending {len(tools)} tools")
        response = await client.chat.completions.create(model=model, messages=messages, tools=tools)
        message = response.choices[0].message
        if not message.tool_calls:
            return message.content or ""
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            if call.type != "function":
                continue
            name = WIRE.to_canonical(call.function.name) or call.function.name
            if name == TOOL_SEARCH_NAME:
                output = session.execute(call.function.arguments)  # never raises
            elif name in session.exposed_tool_names():
                output = await TOOLS[name].invoke(json.loads(call.function.arguments or "{}"))
            else:
                output = f"{name} is not loaded: call {TOOL_SEARCH_NAME} first."
            print(f"  {name} -> {output[:70]}")
            messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
    return "(gave up after 6 rounds)"


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model-url")
    parser.add_argument("--model", default=OFFLINE_MODEL_NAME)
    args = parser.parse_args()
    with offline_server() as server:  # the embedded offline model (not an LLM)
        url, key = (args.model_url, None) if args.model_url else (server.base_url, "offline")
        async with openai.AsyncOpenAI(base_url=url, api_key=key, max_retries=0) as client:
            for question in ["Convert 10 km to miles", "帮我看看群成员“小明”的头像"]:
                print(f"ask: {question}")
                print(f"reply: {await ask(client, args.model, question)}")


if __name__ == "__main__":
    asyncio.run(main())
