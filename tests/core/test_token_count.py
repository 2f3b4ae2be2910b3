"""Token counting (used by the CLI, the demo and bench): offline BPE, tools lists, messages."""

from __future__ import annotations

import json

from bot_toolsearch._core import token_count as tokens
from bot_toolsearch._demo.catalog import demo_schemas


def test_offline_bpe_is_used_and_labelled() -> None:
    assert not tokens.is_estimate()
    assert "o200k_base" in tokens.counter_label()
    # "hello world" is two tokens in o200k_base (as in cl100k_base); the estimate would say 3.
    assert tokens.count_text("hello world") == 2


def test_tools_tokens_count_the_compact_wire_json() -> None:
    schemas = demo_schemas()[:3]
    wire = tokens.tools_json(schemas)
    assert wire == json.dumps(schemas, ensure_ascii=False, separators=(",", ":"))
    assert tokens.tools_tokens(schemas) == tokens.count_text(wire)
    assert tokens.count_tools(schemas) == (3, tokens.count_text(wire))
    assert tokens.tools_tokens([]) == 0


def test_more_tools_cost_more_tokens() -> None:
    schemas = demo_schemas()
    assert tokens.tools_tokens(schemas) > 20 * tokens.tools_tokens(schemas[:3])


def test_messages_add_per_message_overhead() -> None:
    one = [{"role": "user", "content": "群成员头像"}]
    two = [*one, {"role": "assistant", "content": "好的"}]
    assert tokens.messages_tokens(one) == tokens.count_text("user\n群成员头像") + 3 + 3
    assert tokens.messages_tokens(two) > tokens.messages_tokens(one)
    assert tokens.messages_tokens([]) == 0


def test_estimate_counts_cjk_per_character() -> None:
    assert tokens._estimate("abcdefgh") == 2
    assert tokens._estimate("群成员") == 3
