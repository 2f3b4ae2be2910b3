"""`hold_native` and `guard_reply`: a request in the dialect forwarded as written holds
``[tools] allow``/``deny``, and a passed reply never hands over a call of a denied tool (the
sync client over HTTP to the scripted upstream; its stream checked as it is read)."""

from __future__ import annotations

import json

import openai
import pytest

from bot_toolsearch import BotSettings, ModelReplyError, wrap_openai
from bot_toolsearch._config.settings import ToolsSettings
from bot_toolsearch._wrap.native_pass import hold_native
from bot_toolsearch.testing import ScriptedOpenAIServer, call, text

ALLOW = ToolsSettings(allow=["files.*"])
WIPE = {"type": "function", "name": "admin.wipe"}
LIST = {"type": "function", "name": "list"}


def test_allow_holds_every_spelling_and_leaves_the_rest_as_written() -> None:
    group = {"type": "namespace", "name": "files", "tools": [LIST, {**WIPE, "name": "wipe"}]}
    admin = {"type": "namespace", "name": "admin", "tools": [{**WIPE, "name": "wipe"}]}
    output = {"type": "tool_search_output", "call_id": "c", "tools": [WIPE, group]}
    kwargs = {
        "model": "m",
        "input": ["keep", output],
        "tools": [{"type": "tool_search"}, WIPE, group, admin, {**LIST, "name": "files.read"}],
    }
    held = hold_native(kwargs, "responses", ALLOW)
    # admin.wipe and namespace admin's only member left out; files.wipe is permitted by files.*
    assert held["tools"] == [{"type": "tool_search"}, group, {**LIST, "name": "files.read"}]
    assert held["tools"][1] is group  # every member permitted: the group as written
    narrowed = hold_native(kwargs, "responses", ToolsSettings(allow=["files.list"]))
    assert narrowed["tools"][1] == {**group, "tools": [LIST]}
    assert held["input"][0] == "keep"
    assert held["input"][1]["tools"] == [group]
    assert kwargs["tools"][1] is WIPE  # the caller's own request is not changed
    assert hold_native(kwargs, "responses", ToolsSettings()) is kwargs


def test_deny_holds_a_member_of_an_empty_namespace_as_its_bare_name() -> None:
    """A namespace named "" adds no prefix: its member ``wipe`` is the tool ``wipe``, as the
    ``tool_choice`` check names it, so ``deny = ["wipe"]`` cannot be sidestepped with it."""
    empty = {"type": "namespace", "name": "", "tools": [{**WIPE, "name": "wipe"}, LIST]}
    kwargs = {"model": "m", "input": ["hi"], "tools": [{"type": "tool_search"}, empty]}
    held = hold_native(kwargs, "responses", ToolsSettings(deny=["wipe"]))
    assert held["tools"] == [{"type": "tool_search"}, {**empty, "tools": [LIST]}]


def test_a_passed_reply_and_stream_never_hand_over_a_denied_call() -> None:
    settings = BotSettings.model_validate(
        {"proxy": {"native_tool_search": "pass"}, "tools": {"deny": ["admin.*"]}}
    )
    tools = [{"type": "tool_search"}, {**LIST, "name": "files.list"}]
    with ScriptedOpenAIServer() as upstream:
        upstream.script(call("admin.wipe"), call("admin.wipe"), text("fine"))
        inner = openai.OpenAI(base_url=upstream.base_url, api_key="k", max_retries=0)
        client = wrap_openai(inner, settings=settings)
        with pytest.raises(ModelReplyError, match=r"admin\.wipe"):
            client.responses.create(model="m", input="x", tools=tools)  # type: ignore[arg-type]
        stream = client.responses.create(model="m", input="x", tools=tools, stream=True)  # type: ignore[arg-type]
        seen = []
        with pytest.raises(ModelReplyError, match=r"admin\.wipe"), stream:
            seen.extend(event.type for event in stream)
        assert "response.output_item.added" not in seen
        ok = client.responses.create(model="m", input="x", tools=tools)  # type: ignore[arg-type]
        assert ok.output_text == "fine"
        client.close()
        assert "wipe" not in json.dumps([r.body for r in upstream.requests])
