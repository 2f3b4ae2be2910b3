"""The Messages dialect of the stream driver, sans IO: scripted upstream rounds as events in,
the caller's events out, read back by the ``anthropic`` SDK's own ``MessageStream``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import pydantic
from anthropic.lib.streaming import MessageStream
from anthropic.types import RawMessageStreamEvent

from bot_toolsearch import BotSettings
from bot_toolsearch._config.settings import SkillsSettings
from bot_toolsearch._transports.messages_events import message_events
from bot_toolsearch._wrap.engine import Engine
from bot_toolsearch._wrap.messages import MessagesPlan, messages_plan
from bot_toolsearch._wrap.messages_streaming import MessagesRounds
from bot_toolsearch._wrap.rounds import drive_sync
from bot_toolsearch._wrap.stream_driver import SyncRoundStream

SETTINGS = BotSettings(skills=SkillsSettings(tool_search_enabled=True))
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}}
BODY: dict[str, Any] = {
    "model": "m",
    "max_tokens": 50,
    "messages": [{"role": "user", "content": "Weather in Oslo?"}],
    "tools": [
        {"name": "reply", "description": "Reply.", "input_schema": {"type": "object"}},
        {"name": "get_weather", "description": "Weather.", "input_schema": SCHEMA}
        | {"defer_loading": True},
        {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"},
    ],
}


def message(message_id: str, content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 3},
    }


ROUNDS = [
    message(
        "msg_a",
        [
            {"type": "thinking", "thinking": "Search first.", "signature": "sig"},
            {"type": "text", "text": "Looking."},
            {"type": "tool_use", "id": "t1", "name": "tool_search", "input": {"query": "weather"}},
            {"type": "text", "text": "(searching)"},
        ],
        "tool_use",
    ),
    message("msg_b", [{"type": "text", "text": "Sunny."}], "end_turn"),
]


def plan() -> MessagesPlan:
    engine = Engine(settings=SETTINGS)
    made = messages_plan(BODY, engine.snapshot(), engine.cache)
    assert isinstance(made, MessagesPlan)
    return made


def test_the_streamed_message_is_the_plain_one_and_the_last_text_comes_live() -> None:
    replies = iter(ROUNDS)
    plain = drive_sync(plan(), lambda _: next(replies))

    upstream = iter(ROUNDS)
    read: list[str] = []  # the upstream events read so far, by type
    streamed = plan()

    def open_() -> dict[str, Any]:
        streamed.request()  # what would be sent: the plan counts the round
        return next(upstream)

    def events(round_: dict[str, Any]) -> Iterator[dict[str, Any]]:
        for event in message_events(round_):
            read.append(f"{round_['id']}:{event['type']}")
            yield event

    adapter = pydantic.TypeAdapter(RawMessageStreamEvent)

    def typed(event: dict[str, Any]) -> Any:  # as the SDK's own stream: no pings
        return None if event["type"] == "ping" else adapter.validate_python(event)

    stream = SyncRoundStream.start(
        MessagesRounds(streamed), open_, events, close=lambda _: None, render=typed
    )
    helper = MessageStream(stream, output_format=anthropic.NOT_GIVEN)  # type: ignore[arg-type]
    seen: list[Any] = []
    for event in helper:
        if event.type == "text" and event.text == "Sunny.":
            seen = list(read)
    final = helper.get_final_message()
    assert final.model_dump() == anthropic.types.Message.model_validate(plain).model_dump()
    assert "msg_b:message_stop" not in seen  # the last round's text came before its end
    assert [b.type for b in final.content] == [
        "thinking",
        "text",
        "server_tool_use",
        "tool_search_tool_result",
        "text",
        "text",
    ]
    assert final.id == "msg_a"
    assert final.usage.input_tokens == 20


def test_an_upstream_error_event_is_passed_on_and_ends_the_stream() -> None:
    failing = [*message_events(ROUNDS[0])[:3], {"type": "error", "error": {"type": "x"}}]
    stream = SyncRoundStream.start(
        MessagesRounds(plan()), lambda: failing, iter, close=lambda _: None
    )
    out = [event["type"] for event in stream]
    assert out == ["message_start", "ping", "content_block_start", "error"]
