"""Recovering tool calls written as text (bot_toolsearch._text_calls)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot_toolsearch._transports.text_calls import (
    MAX_TEXT_TOOL_CALLS,
    TextToolCall,
    TextToolCallError,
    parse_text_tool_calls,
)


def calls(text: str) -> list[tuple[str, dict[str, Any], str | None]]:
    return [(c.name, c.arguments, c.id) for c in parse_text_tool_calls(text)]


ACCEPTED = [
    # --- JSON objects
    pytest.param(
        '{"name": "music.search", "arguments": {"q": "x"}}',
        [("music.search", {"q": "x"}, None)],
        id="json-name-arguments",
    ),
    pytest.param(
        '{"name": "a", "arguments": "{\\"k\\": 1}"}',
        [("a", {"k": 1}, None)],
        id="json-arguments-as-json-string",
    ),
    pytest.param('{"name": "end", "arguments": ""}', [("end", {}, None)], id="json-empty-string"),
    pytest.param(
        '{"tool": "t", "arguments": {"q": 1}}', [("t", {"q": 1}, None)], id="json-tool-arguments"
    ),
    pytest.param(
        '{"tool": "t", "q": 1, "n": [2]}', [("t", {"q": 1, "n": [2]}, None)], id="json-tool-flat"
    ),
    pytest.param('{"tool": "end"}', [("end", {}, None)], id="json-tool-flat-no-args"),
    pytest.param(
        '{"function": "f", "parameters": {"a": true}}',
        [("f", {"a": True}, None)],
        id="json-function-parameters",
    ),
    pytest.param(
        '{"name": "f", "parameters": {"a": 1}}', [("f", {"a": 1}, None)], id="json-llama-style"
    ),
    pytest.param(
        '{"name": "a", "arguments": {}}\n\n{"tool": "b", "x": 1}',
        [("a", {}, None), ("b", {"x": 1}, None)],
        id="json-several-objects",
    ),
    pytest.param(
        '{"tool_calls": [{"name": "a", "arguments": {}, "id": "c1"}, {"name": "b"}]}',
        [("a", {}, "c1"), ("b", {}, None)],
        id="json-tool_calls",
    ),
    pytest.param(
        '{"tool_calls": [{"id": "call_1", "type": "function",'
        ' "function": {"name": "a", "arguments": "{\\"k\\": 2}"}}]}',
        [("a", {"k": 2}, "call_1")],
        id="json-tool_calls-openai-shape",
    ),
    pytest.param(
        '{"type": "function", "function": {"name": "a", "arguments": {"k": 1}}}',
        [("a", {"k": 1}, None)],
        id="json-openai-single-item",
    ),
    pytest.param(
        '```json\n{"name": "a", "arguments": {}}\n```', [("a", {}, None)], id="fenced-json"
    ),
    pytest.param(
        '  ```\n<tool name="a"/>\n```  ', [("a", {}, None)], id="fenced-markup-with-padding"
    ),
    pytest.param('~~~\n{"tool": "a"}\n~~~', [("a", {}, None)], id="tilde-fence"),
    pytest.param(
        '{"name": "a", "arguments": {"s": "line\nbreak"}}',
        [("a", {"s": "line\nbreak"}, None)],
        id="json-raw-newline-in-string",
    ),
    # --- <tool_call> (Hermes / Qwen)
    pytest.param(
        '<tool_call>\n{"name": "a", "arguments": {"x": 1}}\n</tool_call>',
        [("a", {"x": 1}, None)],
        id="tool_call-json",
    ),
    pytest.param(
        '<tool_call>{"name":"a","arguments":{}}</tool_call>\n'
        '<TOOL_CALL>{"name":"b","arguments":{"y":"<b>"}}</Tool_Call>',
        [("a", {}, None), ("b", {"y": "<b>"}, None)],
        id="tool_call-several-mixed-case",
    ),
    pytest.param(
        "<tool_call>\n<function=a>\n<parameter=x>\n[1, 2]\n</parameter>\n</function>\n</tool_call>",
        [("a", {"x": [1, 2]}, None)],
        id="tool_call-wrapping-function-eq",
    ),
    # --- <tool .../>
    pytest.param(
        '<tool name="a" arguments=\'{"x": 1}\'/>', [("a", {"x": 1}, None)], id="tool-self-closing"
    ),
    pytest.param(
        '<tool name="a" params="{&quot;x&quot;: &quot;&lt;y&gt;&quot;}"></tool>',
        [("a", {"x": "<y>"}, None)],
        id="tool-params-html-entities-empty-close",
    ),
    pytest.param(
        '<tool name="a" parameters="{\\"x\\": \\"y\\"}" />',
        [("a", {"x": "y"}, None)],
        id="tool-parameters-backslash-escapes",
    ),
    pytest.param(
        '<tool name="a" id="c9"/> <TOOL NAME="b" ARGUMENTS="{}"/>',
        [("a", {}, "c9"), ("b", {}, None)],
        id="tool-several-with-id",
    ),
    pytest.param("<tool name=end />", [("end", {}, None)], id="tool-unquoted-name"),
    # --- <tool_execution>
    pytest.param(
        '<tool_execution>\n  <tool_call name="a" arguments=\'{"x": 1}\'/>\n'
        '  <tool_call name="b"></tool_call>\n</tool_execution>',
        [("a", {"x": 1}, None), ("b", {}, None)],
        id="tool_execution",
    ),
    # --- <function_calls><invoke>
    pytest.param(
        '<function_calls><invoke name="a"><arguments>{"x": 1}</arguments></invoke>'
        "</function_calls>",
        [("a", {"x": 1}, None)],
        id="function_calls-arguments",
    ),
    pytest.param(
        '<function_calls>\n<invoke name="b">\n<parameter name="k">hello world</parameter>\n'
        '<parameter name="n">3</parameter>\n</invoke>\n<invoke name="c"></invoke>\n'
        "</function_calls>",
        [("b", {"k": "hello world", "n": 3}, None), ("c", {}, None)],
        id="function_calls-parameters",
    ),
    # --- <function=NAME>
    pytest.param(
        "<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
        '<parameter=days>3</parameter>\n<parameter=opts>{"u": "C"}</parameter>\n</function>',
        [("get_weather", {"city": "Paris", "days": 3, "opts": {"u": "C"}}, None)],
        id="function-eq-json-and-text-values",
    ),
    pytest.param(
        "<FUNCTION=a><PARAMETER=s>  two  words </PARAMETER></Function>",
        [("a", {"s": "  two  words "}, None)],
        id="function-eq-case-insensitive-text-kept",
    ),
    pytest.param(
        "<function=a></function>\n<function=b><parameter=x>null</parameter></function>",
        [("a", {}, None), ("b", {"x": None}, None)],
        id="function-eq-several",
    ),
]


@pytest.mark.parametrize(("text", "expected"), ACCEPTED)
def test_accepted_envelopes(text: str, expected: list[tuple[str, dict[str, Any], None]]) -> None:
    assert calls(text) == expected


def test_result_type() -> None:
    [call] = parse_text_tool_calls('{"tool_calls": [{"name": " a ", "arguments": {}, "id": "x"}]}')
    assert call == TextToolCall(name="a", arguments={}, id="x")


NOT_CALLS = [
    pytest.param("", id="empty"),
    pytest.param("Hello! How can I help?", id="prose"),
    pytest.param('Use {"name": "a", "arguments": {}} to call it.', id="prose-mentions-json"),
    pytest.param('Sure:\n{"name": "a", "arguments": {}}', id="text-before-json"),
    pytest.param('{"name": "a", "arguments": {}}\nDone.', id="text-after-json"),
    pytest.param('{"name": "a", "arguments": {}} and {"tool": "b"}', id="text-between-json"),
    pytest.param('{"name": "a", "arguments": {}} [1]', id="non-object-after-json"),
    pytest.param('{"name": "Alice", "age": 3}', id="json-data-not-a-call"),
    pytest.param('{"answer": 42}\n{"answer": 43}', id="several-json-data-objects"),
    pytest.param('{"name": {"first": "A"}, "arguments": {}}', id="json-name-not-a-string"),
    pytest.param("{curly} braces in prose", id="prose-starting-with-brace"),
    pytest.param("[1, 2, 3]", id="json-array"),
    pytest.param("<b>bold</b> text", id="html-tag"),
    pytest.param('I will call <tool name="a"/> now', id="text-before-tag"),
    pytest.param('<tool name="a"/> is what I would call', id="text-after-tag"),
    pytest.param('<tool_call>{"name": "a"}</tool_call> hmm', id="text-after-broken-tool_call"),
    pytest.param('<tool name="a"/> x <tool name="b"/>', id="text-between-tags"),
    pytest.param('<tools name="a"/>', id="unknown-tag-name"),
    pytest.param('```\n{"tool": "a"}\n```\nand more', id="text-after-fence"),
    pytest.param('```python\nprint("hi")\n```', id="fenced-code"),
    pytest.param('```\n{"tool": "a"}\n```\n```\n{"tool": "b"}\n```', id="two-fences"),
]


@pytest.mark.parametrize("text", NOT_CALLS)
def test_not_calls_give_empty_list(text: str) -> None:
    assert parse_text_tool_calls(text) == []


MALFORMED = [
    pytest.param('{"name": "a", "arguments": [1]}', "must be a JSON object", id="args-array"),
    pytest.param('{"name": "a", "arguments": "{bad"}', "not valid JSON", id="args-bad-string"),
    pytest.param('{"name": "", "arguments": {}}', "non-empty", id="empty-name"),
    pytest.param('{"name": "a", "arguments": {', "malformed JSON", id="truncated-json"),
    pytest.param('{"tool": "a", "arguments": {}, "q": 1}', "do not mix", id="tool-args-and-flat"),
    pytest.param('{"tool": "  "}', "non-empty", id="tool-blank-name"),
    pytest.param('{"tool_calls": []}', "non-empty array", id="tool_calls-empty"),
    pytest.param('{"tool_calls": [1]}', "must be an object", id="tool_calls-item-not-object"),
    pytest.param('{"tool_calls": [{"name": "a"}], "x": 1}', "only key", id="tool_calls-extra-key"),
    pytest.param(
        '{"tool_calls": [{"name": "a", "arguments": {}, "extra": 1}]}',
        "expected the keys",
        id="tool_calls-item-extra-key",
    ),
    pytest.param(
        '{"tool_calls": [{"name": "a", "id": " x"}]}', "id must be", id="tool_calls-padded-id"
    ),
    pytest.param(
        '{"tool_calls": [{"name": "a", "id": ""}]}', "id must be", id="tool_calls-empty-id"
    ),
    pytest.param(
        '{"tool_calls": [{"name": "a", "id": "x"}, {"name": "b", "id": "x"}]}',
        "duplicate",
        id="tool_calls-duplicate-id",
    ),
    pytest.param(
        '{"tool_calls": [{"name": "a"}]} {"tool": "b"}', "cannot be mixed", id="tool_calls-mixed"
    ),
    pytest.param(
        '{"tool_calls": [{"type": "x", "function": {"name": "a"}}]}',
        "type must be",
        id="openai-wrong-type",
    ),
    pytest.param(
        '{"name": "a", "arguments": {}} {"answer": 1}', "not a tool call", id="call-mixed-with-data"
    ),
    pytest.param('{"name": "a", "arguments": {}} {"name":', "malformed", id="second-truncated"),
    pytest.param('{"name": "a", "arguments": {"x": NaN}}', "malformed", id="nan-constant"),
    pytest.param("<tool_call>{bad}</tool_call>", "not valid JSON", id="tool_call-bad-json"),
    pytest.param(
        '<tool_call>{"name": "a", "arguments": {}}', "not closed", id="tool_call-unclosed"
    ),
    pytest.param('<tool_call>{"answer": 1}</tool_call>', "expected one", id="tool_call-not-a-call"),
    pytest.param("<tool_call>plain</tool_call>", "not valid JSON", id="tool_call-plain-text"),
    pytest.param('<tool name="a" foo="1"/>', "unexpected attributes", id="tool-unknown-attr"),
    pytest.param('<tool name="a" name="b"/>', "repeated", id="tool-repeated-attr"),
    pytest.param(
        '<tool name="a" params="{}" arguments="{}"/>', "only one of", id="tool-two-args-attrs"
    ),
    pytest.param('<tool arguments="{}"/>', "non-empty", id="tool-no-name"),
    pytest.param('<tool name="a" arguments="[1]"/>', "JSON object", id="tool-args-array"),
    pytest.param('<tool name="a">', "not closed", id="tool-unclosed"),
    pytest.param('<tool name="a', "malformed tag", id="tool-unterminated-attr"),
    pytest.param("<tool_execution></tool_execution>", "holds no calls", id="tool_execution-empty"),
    pytest.param(
        '<tool_execution><tool name="a"/></tool_execution>',
        "expected <tool_call>",
        id="tool_execution-wrong-child",
    ),
    pytest.param(
        '<function_calls><invoke name="a"><arguments>{"x": 1}</arguments>'
        '<parameter name="y">2</parameter></invoke></function_calls>',
        "expected one",
        id="invoke-arguments-then-parameter",
    ),
    pytest.param(
        '<function_calls><invoke name="a"><parameter name="k">1</parameter>'
        '<parameter name="k">2</parameter></invoke></function_calls>',
        "repeated",
        id="invoke-repeated-parameter",
    ),
    pytest.param(
        '<function_calls><invoke name="a"><arguments>{bad</arguments></invoke></function_calls>',
        "not valid JSON",
        id="invoke-bad-arguments",
    ),
    pytest.param(
        "<function=a><parameter=x>1</parameter><parameter=x>2</parameter></function>",
        "repeated",
        id="function-eq-repeated-parameter",
    ),
    pytest.param(
        "<function=a><parameter=x>{broken</parameter></function>",
        "looks like JSON",
        id="function-eq-broken-json-value",
    ),
    pytest.param(
        '<function=a><parameter=x>"unterminated</parameter></function>',
        "looks like JSON",
        id="function-eq-broken-json-string",
    ),
    pytest.param("<function=a><parameter=x>1</function>", "not closed", id="function-eq-unclosed"),
    pytest.param("<function=a>text</function>", "expected <parameter", id="function-eq-loose"),
    pytest.param("<function=  ></function>", "non-empty", id="function-eq-empty-name"),
]


@pytest.mark.parametrize(("text", "message"), MALFORMED)
def test_malformed_envelopes_raise(text: str, message: str) -> None:
    with pytest.raises(TextToolCallError, match=message):
        parse_text_tool_calls(text)


def test_error_is_a_value_error() -> None:
    assert issubclass(TextToolCallError, ValueError)


def test_too_many_calls_is_malformed() -> None:
    ok = '<tool name="a"/>' * MAX_TEXT_TOOL_CALLS
    assert len(parse_text_tool_calls(ok)) == MAX_TEXT_TOOL_CALLS
    with pytest.raises(TextToolCallError, match="more than"):
        parse_text_tool_calls(ok + '<tool name="a"/>')


def test_deep_nesting_is_bounded() -> None:
    deep = "[" * 65 + "]" * 65
    with pytest.raises(TextToolCallError, match="deeper"):
        parse_text_tool_calls('{"name": "a", "arguments": {"x": ' + deep + "}}")
    with pytest.raises(TextToolCallError, match="deeper"):
        parse_text_tool_calls(f'{{"name": "a", "arguments": "{{\\"x\\": {deep}}}"}}')
    shallow = "[" * 60 + "]" * 60
    [call] = parse_text_tool_calls('{"name": "a", "arguments": {"x": ' + shallow + "}}")
    assert call.name == "a"


N = 100_000  # about 100 KB of hostile text each

ADVERSARIAL = [
    pytest.param("[" * N, [], id="open-brackets"),
    pytest.param("{" * N, [], id="open-braces"),
    pytest.param('{"a":[' * (N // 6), [], id="deep-json-data"),
    pytest.param('"' * N, [], id="quotes"),
    pytest.param("<" * N, [], id="angle-brackets"),
    pytest.param("`" * N, [], id="backticks"),
    pytest.param(" " * N + "x", [], id="whitespace-then-prose"),
    pytest.param("<tool_call>" * (N // 11), TextToolCallError, id="unclosed-tool_calls"),
    pytest.param("<function=a>" * (N // 12), TextToolCallError, id="unclosed-functions"),
    pytest.param('<tool name="' + '\\"' * (N // 2), TextToolCallError, id="escaped-quotes-attr"),
    pytest.param("<tool" + " a=b" * (N // 4), TextToolCallError, id="many-attributes"),
    pytest.param('<tool name="a"/>' * (N // 16), TextToolCallError, id="too-many-tags"),
    pytest.param('{"tool": "a", "x": "' + "\\\\" * (N // 2), TextToolCallError, id="long-string"),
    pytest.param("<function=a><parameter=x>" + "<" * N, TextToolCallError, id="unclosed-param"),
    pytest.param(
        '{"name": "a", "arguments": {"x": "' + "y" * N + '"}}',
        [("a", {"x": "y" * N}, None)],
        id="large-valid-call",
    ),
    pytest.param('{"tool": "a", "n": ' + "9" * 5000 + "}", TextToolCallError, id="huge-int"),
]


@pytest.mark.parametrize(("text", "expected"), ADVERSARIAL)
def test_adversarial_input(text: str, expected: object) -> None:
    if expected is TextToolCallError:
        with pytest.raises(TextToolCallError):
            parse_text_tool_calls(text)
    else:
        assert calls(text) == expected


@given(st.text(max_size=300))
def test_property_arbitrary_text_never_raises_other_errors(text: str) -> None:
    try:
        result = parse_text_tool_calls(text)
    except TextToolCallError:
        return
    assert all(isinstance(c, TextToolCall) and isinstance(c.arguments, dict) for c in result)


envelope_pieces = st.sampled_from(
    [
        "{", "}", "[", "]", '"', "'", ":", ",", " ", "\n", "\\", "`", "```", "<", ">", "/", "=",
        '"name"', '"arguments"', '"tool"', '"tool_calls"', '"id"', '"function"', "<tool_call>",
        "</tool_call>", "<tool", "name=", "arguments=", "/>", "<function=", "</function>",
        "<parameter=", "</parameter>", "<invoke", "</invoke>", "<function_calls>",
        "</function_calls>", "<tool_execution>", "</tool_execution>", "<arguments>",
        "</arguments>", "&quot;", "a", "1", "null", "{}",
    ]
)  # fmt: skip


@given(st.lists(envelope_pieces, max_size=40).map("".join))
def test_property_envelope_fragments_never_raise_other_errors(text: str) -> None:
    try:
        result = parse_text_tool_calls(text)
    except TextToolCallError:
        return
    assert all(isinstance(c, TextToolCall) and isinstance(c.arguments, dict) for c in result)


@given(
    name=st.text(min_size=1, max_size=40).filter(lambda s: s.strip() == s and s),
    arguments=st.dictionaries(
        st.text(max_size=10), st.none() | st.integers() | st.text(max_size=20), max_size=5
    ),
)
def test_property_json_round_trip(name: str, arguments: dict[str, Any]) -> None:
    text = json.dumps({"name": name, "arguments": arguments})
    assert calls(text) == [(name, arguments, None)]
