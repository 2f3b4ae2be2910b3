"""The scripted server's opt-in prefix-cache model, driven by the real openai SDK over HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from bot_toolsearch.testing import PromptCacheModel, ScriptedOpenAIServer, Usage, call, error, text

ESTIMATE = PromptCacheModel(tokenizer="estimate")  # exact arithmetic: 4 UTF-8 bytes per token


def chat_tools(count: int, flavour: str = "") -> list[Any]:
    """``count`` function tools of about 60 tokens each; ``flavour`` changes their text."""
    return [
        {
            "type": "function",
            "function": {
                "name": f"tool_{i}",
                "description": f"Does task {i} of the catalogue{flavour}, carefully and well.",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string", "description": "A city name."}},
                },
            },
        }
        for i in range(count)
    ]


def responses_tools(count: int) -> list[Any]:
    return [{"type": "function", **tool["function"]} for tool in chat_tools(count)]


SYSTEM = {"role": "system", "content": "You are a careful assistant."}
LONG_SYSTEM = {"role": "system", "content": "Answer briefly and cite the tool you used. " * 40}


def canonical(value: object) -> str:
    """The model's rendering of one part: sorted keys, no spaces."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


@pytest.fixture(params=[ESTIMATE, PromptCacheModel()], ids=["estimate", "auto"])
def server(request: pytest.FixtureRequest) -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(prompt_cache=request.param) as srv:
        yield srv
        srv.assert_consumed()


@pytest.fixture
def client(server: ScriptedOpenAIServer) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as sdk:
        yield sdk


def chat(sdk: openai.OpenAI, messages: list[Any], tools: list[Any]) -> tuple[int, int]:
    """``(prompt_tokens, cached_tokens)`` of one Chat Completions request."""
    usage = sdk.chat.completions.create(model="m", messages=messages, tools=tools).usage
    assert usage is not None
    assert usage.prompt_tokens_details is not None
    return usage.prompt_tokens, usage.prompt_tokens_details.cached_tokens or 0


def whole_blocks(tokens: int) -> int:
    return tokens - tokens % 128


def test_an_identical_request_is_cached_in_whole_blocks(
    server: ScriptedOpenAIServer, client: openai.OpenAI
) -> None:
    server.script(text("a"), text("b"))
    messages = [SYSTEM, {"role": "user", "content": "hi"}]
    first = chat(client, messages, chat_tools(40))
    second = chat(client, messages, chat_tools(40))

    assert first[0] > 1024
    assert first[1] == 0
    assert second == (first[0], whole_blocks(first[0]))


def test_changed_first_tool_breaks_the_whole_cache(
    server: ScriptedOpenAIServer, client: openai.OpenAI
) -> None:
    server.script(text("a"), text("b"), text("c"))
    messages = [SYSTEM, {"role": "user", "content": "hi"}]
    chat(client, messages, chat_tools(40))
    changed = chat_tools(40)
    changed[0]["function"]["description"] = "Something else entirely."

    assert chat(client, messages, changed)[1] == 0
    assert chat(client, messages, changed)[1] > 1024  # the changed request itself is now cached


def test_tools_that_differ_late_are_cached_up_to_the_difference(
    server: ScriptedOpenAIServer, client: openai.OpenAI
) -> None:
    model = server.prompt_cache
    assert model is not None
    server.script(text("a"), text("b"))
    messages = [LONG_SYSTEM, {"role": "user", "content": "hi"}]
    tools = chat_tools(40)
    loaded = [*tools, {"type": "function", "function": {"name": "loaded", "description": "x"}}]
    first = chat(client, messages, tools)
    prompt, cached = chat(client, messages, loaded)

    # Both rendered prompts start with the old tools array up to its closing bracket.
    shared = model.count_tokens(canonical(tools)[:-1])
    assert prompt > first[0]
    assert whole_blocks(shared) - 128 <= cached <= whole_blocks(shared)
    assert cached < whole_blocks(first[0]) - 128  # the system prompt after the tools is re-paid


def test_appended_messages_reuse_the_whole_previous_prompt(
    server: ScriptedOpenAIServer, client: openai.OpenAI
) -> None:
    server.script(call("lookup", id="c1", city="Oslo"), text("done"))
    messages: list[Any] = [LONG_SYSTEM, {"role": "user", "content": "weather in Oslo?"}]
    first, _ = chat(client, messages, chat_tools(20))
    messages += [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"city":"Oslo"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "sunny, 21 degrees " * 40},
    ]
    prompt, cached = chat(client, messages, chat_tools(20))

    assert prompt > first + 128
    # The last token of the shorter prompt may merge with what follows it in a real tokenizer.
    assert whole_blocks(first - 1) <= cached <= whole_blocks(first)


def test_a_previous_response_id_chain_renders_history_then_new_input(
    server: ScriptedOpenAIServer, client: openai.OpenAI
) -> None:
    server.script(call("tool_1", id="c1", city="Oslo"), text("done"))
    tools = responses_tools(20)
    instructions = str(LONG_SYSTEM["content"])
    first = client.responses.create(
        model="m", instructions=instructions, input="weather in Oslo?", tools=tools
    )
    second = client.responses.create(
        model="m",
        instructions=instructions,
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": "c1", "output": "sunny " * 100}],
        tools=tools,
    )
    assert first.usage is not None
    assert second.usage is not None
    before, after = first.usage.input_tokens, second.usage.input_tokens

    assert first.usage.input_tokens_details.cached_tokens == 0
    assert after > before + 100  # the stored output and the new input are counted too
    assert whole_blocks(before - 1) <= second.usage.input_tokens_details.cached_tokens
    assert second.usage.input_tokens_details.cached_tokens <= whole_blocks(before)


def test_a_prompt_below_1024_tokens_is_never_cached(
    server: ScriptedOpenAIServer, client: openai.OpenAI
) -> None:
    server.script(text("a"), text("b"))
    messages = [SYSTEM, {"role": "user", "content": "hi"}]
    first = chat(client, messages, chat_tools(8))
    second = chat(client, messages, chat_tools(8))

    assert 256 < first[0] < 1024
    assert second == (first[0], 0)


def test_the_cache_is_per_model_and_reset_forgets_it(
    server: ScriptedOpenAIServer, client: openai.OpenAI
) -> None:
    server.script(text("a"), text("b"), text("c"))
    messages = [SYSTEM, {"role": "user", "content": "hi"}]
    tools = chat_tools(40)
    chat(client, messages, tools)
    other = client.chat.completions.create(model="other", messages=messages, tools=tools).usage
    assert other is not None
    assert other.prompt_tokens_details is not None
    assert other.prompt_tokens_details.cached_tokens == 0

    server.reset()
    server.script(text("d"))
    assert chat(client, messages, tools)[1] == 0


def test_a_scripted_usage_still_wins(server: ScriptedOpenAIServer, client: openai.OpenAI) -> None:
    server.script(text("a", usage=Usage(5000, 1, 4096)))
    assert chat(client, [SYSTEM], chat_tools(2)) == (5000, 4096)


def test_other_sizes_round_to_their_own_blocks() -> None:
    model = PromptCacheModel(min_tokens=256, block_tokens=64, tokenizer="estimate")
    with (
        ScriptedOpenAIServer(prompt_cache=model) as srv,
        openai.OpenAI(base_url=srv.base_url, api_key="test", max_retries=0) as sdk,
    ):
        srv.script(text("a"), text("b"))
        messages = [SYSTEM, {"role": "user", "content": "x" * 11}]
        first, _ = chat(sdk, messages, chat_tools(6))
        second = chat(sdk, messages, chat_tools(6))
        srv.assert_consumed()

    assert srv.prompt_cache is model
    assert first % 64 != 0
    assert first > 256
    assert second == (first, first - first % 64)


def test_the_estimate_counts_four_utf8_bytes_per_token() -> None:
    assert ESTIMATE.count_tokens("é" * 8) == 4  # 16 bytes
    assert ESTIMATE.count_tokens("abcdefg") == 1
    assert ESTIMATE.tokenizer_name == "estimate: UTF-8 bytes / 4"
    assert PromptCacheModel().tokenizer_name in ("o200k_base", "estimate: UTF-8 bytes / 4")


def test_without_the_model_the_server_keeps_its_default_estimate() -> None:
    with ScriptedOpenAIServer() as srv:
        assert srv.prompt_cache is None
    with ScriptedOpenAIServer(prompt_cache=True) as srv:
        assert srv.prompt_cache == PromptCacheModel()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"min_tokens": 0}, "at least 1"),
        ({"block_tokens": -128}, "at least 1"),
        ({"tokenizer": "cl100k"}, "'auto' or 'estimate'"),
    ],
)
def test_bad_model_sizes_are_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PromptCacheModel(**kwargs)


def test_a_prompt_cache_of_the_wrong_type_is_refused() -> None:
    with pytest.raises(TypeError, match="bool or a PromptCacheModel"):
        ScriptedOpenAIServer(prompt_cache="yes")  # type: ignore[arg-type]


def test_a_failed_request_caches_nothing(
    server: ScriptedOpenAIServer, client: openai.OpenAI
) -> None:
    server.script(error(500, "overloaded"), text("a"), text("b"))
    messages = [SYSTEM, {"role": "user", "content": "hi"}]
    with pytest.raises(openai.InternalServerError):
        chat(client, messages, chat_tools(40))

    first = chat(client, messages, chat_tools(40))
    assert first[1] == 0
    assert chat(client, messages, chat_tools(40))[1] == whole_blocks(first[0])


def test_additional_tools_items_are_recorded_rendered_and_chained(
    server: ScriptedOpenAIServer, client: openai.OpenAI
) -> None:
    declared = {"type": "additional_tools", "role": "developer", "tools": responses_tools(2)}
    server.script(call("tool_search", query="select:tool_0"), text("ok"))
    first = client.responses.create(
        model="m", instructions="Be brief.", input="hi", tools=responses_tools(1)
    )
    client.responses.create(
        model="m",
        instructions="Be brief.",
        previous_response_id=first.id,
        input=[
            {"type": "function_call_output", "call_id": "call_1", "output": "{}"},
            declared,  # type: ignore[list-item]  # not in this SDK's input types yet
        ],
        tools=responses_tools(1),
    )

    one, two = server.requests
    assert (one.additional_tool_names, two.additional_tool_names) == ([], ["tool_0", "tool_1"])
    assert two.system_texts == ["Be brief."]  # a declaration is no message
    assert two.messages[-1] == declared
    before, after = server.prompts
    assert after.startswith(before + "\n")
    assert after.endswith("\n" + canonical(declared))
