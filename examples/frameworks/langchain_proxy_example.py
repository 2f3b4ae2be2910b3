"""LangChain with tool search through the proxy: only the base URL changes (offline by default).

Starts ``bot-toolsearch serve`` in front of the model, then runs a LangChain agent against it.

    python examples/frameworks/langchain_proxy_example.py
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

from _offline import get_weather, many_tools, offline_model, report
from langchain.agents import create_agent
from langchain_core.tools import StructuredTool
from langchain_openai import ChatOpenAI


def start_proxy(upstream: str) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [sys.executable, "-m", "bot_toolsearch", "serve", "--upstream", upstream]
    proxy = subprocess.Popen([*command, "--port", str(port)], stderr=subprocess.DEVNULL)
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    return proxy, f"http://127.0.0.1:{port}/v1"


def main() -> None:
    server = offline_model()
    proxy, base_url = start_proxy(os.environ["OPENAI_BASE_URL"])
    try:
        model = ChatOpenAI(model="gpt-4o-mini", base_url=base_url, max_retries=0)  # the change
        tools = [StructuredTool.from_function(get_weather)]
        tools += [
            StructuredTool.from_function(f, name=n, description=d) for n, d, f in many_tools()
        ]
        agent = create_agent(model, tools=tools)
        state = agent.invoke({"messages": [{"role": "user", "content": "Weather in Oslo?"}]})
        print(f"reply: {state['messages'][-1].content}")
    finally:
        proxy.terminate()
        proxy.wait(10)
    report(server)


if __name__ == "__main__":
    main()
