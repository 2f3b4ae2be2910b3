"""Malformed model replies over a real socket: one documented error, and the next ask works.

A tiny raw HTTP server on 127.0.0.1 answers each request with the next canned body, byte for
byte, whatever it is: broken JSON, HTML, a list, ``null`` where an object belongs. The real
``openai`` SDK sends the requests (issue 10, defect 7).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import openai
import pytest

from bot_toolsearch import Bot, BotSettings, ModelReplyError, Tool, ToolSearchError

JSON = "application/json"


class RawServer:
    """Answers request N with canned reply N: ``(content type, body bytes)``; records bodies."""

    def __init__(self) -> None:
        self.replies: list[tuple[str, bytes]] = []
        self.requests: list[bytes] = []
        self._server: asyncio.Server | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"http://{host}:{port}/v1"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        self.requests.append(await reader.readexactly(length))
        kind, body = self.replies.pop(0) if self.replies else (JSON, b'{"error": "no reply"}')
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: " + kind.encode() + b"\r\n"
            b"content-length: " + str(len(body)).encode() + b"\r\nconnection: close\r\n\r\n" + body
        )
        await writer.drain()
        writer.close()

    def reply(self, body: object | bytes, kind: str = JSON) -> None:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.replies.append((kind, raw))


@pytest.fixture
async def raw_server() -> AsyncIterator[RawServer]:
    server = RawServer()
    await server.start()
    yield server
    await server.close()


def chat_body(message: object, usage: object = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    }
    if usage is not None:
        body["usage"] = usage
    return body


def responses_body(output: object, usage: object = None) -> dict[str, Any]:
    body: dict[str, Any] = {"id": "resp_1", "object": "response", "status": "completed"}
    body["output"] = output
    if usage is not None:
        body["usage"] = usage
    return body


def good_reply(api: str, text: str = "fine") -> dict[str, Any]:
    if api == "responses":
        return responses_body(
            [
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": text}],
                }
            ]
        )
    return chat_body({"role": "assistant", "content": text})


async def make_bot(server: RawServer, api: str, tools: list[Tool] | None = None) -> Bot:
    settings = BotSettings.model_validate({"model": {"api": api, "name": "m"}})
    client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    return Bot(settings, tools or [], client=client)


BROKEN_CHAT: dict[str, tuple[bytes | object, str]] = {
    "invalid JSON": (b'{"choices": [', JSON),
    "message null": ({"choices": [{"message": None}]}, JSON),
    "a list body": ([{"choices": []}], JSON),
    "HTML": (b"<html><body>502 Bad Gateway</body></html>", "text/html"),
    "content 42": (chat_body({"role": "assistant", "content": 42}), JSON),
    "choices a string": ({"choices": "none"}, JSON),
    "tool_calls an object": (chat_body({"role": "assistant", "tool_calls": {"a": 1}}), JSON),
    "name a number": (
        chat_body(
            {
                "role": "assistant",
                "tool_calls": [{"id": "c", "type": "function", "function": {"name": 7}}],
            }
        ),
        JSON,
    ),
}

BROKEN_RESPONSES: dict[str, tuple[bytes | object, str]] = {
    "invalid JSON": (b'{"output": [', JSON),
    "a list body": ([], JSON),
    "HTML": (b"<!doctype html><title>oops</title>", "text/html"),
    "output a string": (responses_body("text"), JSON),
    "item null": (responses_body([None]), JSON),
    "content 42": (responses_body([{"type": "message", "content": 42}]), JSON),
}


@pytest.mark.parametrize("case", sorted(BROKEN_CHAT))
async def test_an_unusable_chat_reply_raises_one_error_and_the_next_ask_works(
    raw_server: RawServer, case: str
) -> None:
    body, kind = BROKEN_CHAT[case]
    raw_server.reply(body, kind)
    raw_server.reply(good_reply("chat_completions", "recovered"))
    bot = await make_bot(raw_server, "chat_completions")
    with pytest.raises(ModelReplyError) as caught:
        await bot.ask("hello")
    error = caught.value
    assert isinstance(error, openai.APIError)
    assert isinstance(error, ToolSearchError)
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    assert error.excerpt == raw.decode()[:500]
    assert error.reason in str(error)
    result = await bot.ask("again")
    assert result.reply == "recovered"


@pytest.mark.parametrize("case", sorted(BROKEN_RESPONSES))
async def test_an_unusable_responses_reply_raises_one_error_and_the_next_ask_works(
    raw_server: RawServer, case: str
) -> None:
    body, kind = BROKEN_RESPONSES[case]
    raw_server.reply(body, kind)
    raw_server.reply(good_reply("responses", "recovered"))
    bot = await make_bot(raw_server, "responses")
    with pytest.raises(ModelReplyError):
        await bot.ask("hello")
    assert (await bot.ask("again")).reply == "recovered"


def forecast_tool(seen: list[dict[str, Any]]) -> Tool:
    def handler(**arguments: Any) -> str:
        seen.append(arguments)
        return "sunny"

    parameters = {"type": "object", "properties": {"city": {"type": "string"}}}
    return Tool("forecast", "Weather.", parameters, handler)


@pytest.mark.parametrize("api", ["chat_completions", "responses"])
async def test_arguments_sent_as_an_object_are_accepted(raw_server: RawServer, api: str) -> None:
    seen: list[dict[str, Any]] = []
    arguments = {"city": "Oslo"}
    if api == "responses":
        call = {"type": "function_call", "call_id": "c1", "name": "forecast"}
        raw_server.reply(responses_body([{**call, "arguments": arguments}]))
    else:
        function = {"name": "forecast", "arguments": arguments}
        message = {"role": "assistant", "content": None}
        message["tool_calls"] = [{"id": "c1", "type": "function", "function": function}]
        raw_server.reply(chat_body(message))
    raw_server.reply(good_reply(api, "done"))
    bot = await make_bot(raw_server, api, [forecast_tool(seen)])
    result = await bot.ask("weather in Oslo?")
    assert seen == [{"city": "Oslo"}]
    assert result.reply == "done"
    if api == "chat_completions":
        # The history sends the arguments back as the JSON text of that object.
        second = json.loads(raw_server.requests[1])
        sent = [c["function"]["arguments"] for c in second["messages"][1]["tool_calls"]]
        assert [json.loads(text) for text in sent] == [arguments]


@pytest.mark.parametrize("api", ["chat_completions", "responses"])
@pytest.mark.parametrize("count", ["many", None, -3, True, [1], {"n": 1}])
async def test_a_usage_count_that_is_no_number_counts_as_zero(
    raw_server: RawServer, api: str, count: object
) -> None:
    if api == "responses":
        body = good_reply(api, "ok")
        body["usage"] = {"input_tokens": count, "input_tokens_details": {"cached_tokens": "x"}}
    else:
        usage = {"prompt_tokens": count, "prompt_tokens_details": {"cached_tokens": "x"}}
        body = chat_body({"role": "assistant", "content": "ok"}, usage)
    raw_server.reply(body)
    bot = await make_bot(raw_server, api)
    result = await bot.ask("hi")
    assert result.reply == "ok"
    assert (result.stats.prompt_tokens, result.stats.cached_tokens) == (0, 0)


async def test_a_numeric_usage_is_still_counted(raw_server: RawServer) -> None:
    usage = {"prompt_tokens": 12, "prompt_tokens_details": {"cached_tokens": 4.0}}
    raw_server.reply(chat_body({"role": "assistant", "content": "ok"}, usage))
    bot = await make_bot(raw_server, "chat_completions")
    result = await bot.ask("hi")
    assert (result.stats.prompt_tokens, result.stats.cached_tokens) == (12, 4)


async def test_a_lone_surrogate_in_the_model_text_does_not_crash_the_next_request(
    raw_server: RawServer,
) -> None:
    # "\ud83d" is a valid JSON escape; the history sends the text back in round 2.
    first = b'{"choices": [{"message": {"role": "assistant", "content": "", "tool_calls": ['
    first += b'{"id": "c1", "type": "function", "function": {"name": "forecast", '
    first += b'"arguments": "{\\"city\\": \\"\\\\ud83d Oslo\\"}"}}]}}]}'
    raw_server.reply(first)
    raw_server.reply(good_reply("chat_completions", "done"))
    seen: list[dict[str, Any]] = []
    bot = await make_bot(raw_server, "chat_completions", [forecast_tool(seen)])
    result = await bot.ask("weather?")
    assert result.reply == "done"
    assert seen == [{"city": "\ud83d Oslo"}]
