"""The ids of the search items we make up (`bot_toolsearch._wrap.item_ids`): they read back
into the item, within bounds; the proxy's raw-HTTP tests are in tests/proxy."""

from __future__ import annotations

import pytest

from bot_toolsearch._wrap.item_ids import (
    CALL_PREFIX,
    MAX_ID,
    OUTPUT_PREFIX,
    ItemReferenceError,
    expand,
    is_ours,
    make_id,
)

MEMBERS = {"crm.lookup": ("crm", "lookup")}


def test_a_call_reads_back_as_it_was_made() -> None:
    fields = {"call_id": "call_7", "arguments": {"query": "select:a"}, "execution": "client"}
    ref = make_id(CALL_PREFIX, fields, "ts_call_7")
    assert is_ours(ref)
    assert len(ref) < 160  # compact: about 120 characters
    assert expand(ref, 3, MEMBERS, ()) == {
        "type": "tool_search_call",
        "id": ref,
        "call_id": "call_7",
        "execution": "client",
        "arguments": {"query": "select:a"},
    }


def test_an_output_names_what_it_loaded_of_the_request_s_tools() -> None:
    fields = {"call_id": "c", "loaded": ["a", "crm.lookup", "gone"], "execution": "server"}
    ref = make_id(OUTPUT_PREFIX, fields, "tso_c")
    item = expand(ref, 0, MEMBERS, {"a", "crm.lookup"})
    assert item["tools"] == [
        {"type": "function", "name": "a"},
        {"type": "namespace", "name": "crm", "tools": [{"type": "function", "name": "lookup"}]},
    ]


def test_an_item_too_large_to_pack_keeps_its_plain_id_and_a_reference_to_it_is_refused() -> None:
    huge = {"call_id": "c", "arguments": {"query": "x" * 50_000 + "".join(map(str, range(9999)))}}
    assert make_id(CALL_PREFIX, huge, "ts_c") == "ts_c"
    with pytest.raises(ItemReferenceError, match=r"input\[2\].*store: false"):
        expand("ts_c", 2, MEMBERS, ())
    assert len(make_id(CALL_PREFIX, {"call_id": "c"}, "ts_c")) <= MAX_ID


def test_ids_the_upstream_made_are_not_ours() -> None:
    assert not is_ours("fc_123")
    assert not is_ours("msg_1")
