"""The demo catalog: size, valid names, real computations, clearly marked sample data."""

from __future__ import annotations

import asyncio
import json
import math
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from bot_toolsearch._demo._safe_math import UnsafeExpressionError, evaluate
from bot_toolsearch._demo.catalog import SAMPLE_NOTE, demo_schemas, demo_tools, is_sample_tool
from bot_toolsearch._transports.names import WIRE_NAME_PATTERN, WireNames

TOOLS = {t.name: t for t in demo_tools()}


def run(name: str, **arguments: object) -> object:
    text = asyncio.run(TOOLS[name].invoke(arguments))
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def test_catalog_is_large_and_spans_namespaces() -> None:
    assert len(TOOLS) >= 150
    namespaces = {name.split(".")[0] for name in TOOLS}
    expected = {"weather", "calendar", "music", "group", "math", "files", "time", "units"}
    assert expected | {"text", "email", "maps", "finance", "news"} <= namespaces


def test_names_are_unique_and_encode_for_the_wire() -> None:
    names = [t.name for t in demo_tools()]
    assert len(names) == len(set(names)) == len({n.casefold() for n in names})
    assert not {"send_message", "end", "tool_search"} & set(names)
    wire = WireNames.build(names, dot_delimiter="-_-")
    for name in names:
        assert not any(c.isspace() or c in "<>" for c in name)
        encoded = wire.to_wire(name)
        assert WIRE_NAME_PATTERN.fullmatch(encoded)
        assert wire.to_canonical(encoded) == name


def test_every_schema_is_a_described_object_schema() -> None:
    for schema in demo_schemas():
        function = schema["function"]
        assert schema["type"] == "function"
        # Chinese descriptions are short in characters but not in meaning.
        assert len(function["description"]) >= 6, function["name"]
        params = function["parameters"]
        assert params["type"] == "object"
        for required in params.get("required", []):
            assert required in params["properties"], function["name"]
        for prop in params["properties"].values():
            assert prop.get("description") or prop.get("enum"), function["name"]


def test_group_tools_are_described_in_chinese() -> None:
    group = [t for t in TOOLS.values() if t.name.startswith("group.")]
    assert len(group) >= 10
    assert all(any("\u4e00" <= c <= "\u9fff" for c in t.description) for t in group)
    assert TOOLS["group.get_member_avatar"].description == "获取群成员的头像和昵称"


def test_sample_tools_mark_their_results() -> None:
    samples = [name for name in TOOLS if is_sample_tool(name)]
    assert len(samples) >= 50
    result = run("weather.current", city="Paris")
    assert isinstance(result, dict)
    assert result["sample_data"] is True
    assert result["note"] == SAMPLE_NOTE
    assert result["arguments"] == {"city": "Paris"}


def test_computed_tools_never_claim_sample_data() -> None:
    computed = [name for name in TOOLS if not is_sample_tool(name)]
    assert len(computed) >= 60
    assert "sample_data" not in str(run("text.reverse", text="abc"))


def test_time_tools_compute_with_zoneinfo() -> None:
    result = run(
        "time.convert_timezone",
        time="2025-01-15T09:00",
        from_timezone="Europe/Berlin",
        to_timezone="Asia/Tokyo",
    )
    assert isinstance(result, dict)
    assert result["to"] == "2025-01-15T17:00+09:00"
    now = run("time.now", timezone="America/New_York")
    assert isinstance(now, dict)
    local = datetime.fromisoformat(now["local_time"])
    assert local.utcoffset() == datetime.now(ZoneInfo("America/New_York")).utcoffset()
    assert run("time.days_between", start="2024-02-01", end="2024-03-01") == 29
    assert run("time.day_of_week", day="2025-12-25") == "Thursday"
    assert run("time.is_leap_year", year=1900) is False
    assert run("time.datetime_to_unix", datetime_text="1970-01-02T00:00:00") == 86400


def test_unit_tools_convert() -> None:
    result = run("units.convert", value=10, from_unit="km", to_unit="miles")
    assert isinstance(result, dict)
    assert result["result"] == pytest.approx(6.213712)
    celsius = run("units.convert_temperature", value=212, from_unit="f", to_unit="c")
    assert isinstance(celsius, dict)
    assert celsius["result"] == pytest.approx(100)
    gib = run("units.convert_data", value=1, from_unit="gib", to_unit="mb")
    assert isinstance(gib, dict)
    assert gib["result"] == pytest.approx(1073.741824)


def test_unit_tools_reject_mixed_categories() -> None:
    with pytest.raises(ValueError, match="cannot convert"):
        run("units.convert", value=1, from_unit="kg", to_unit="km")


def test_math_tools_compute() -> None:
    assert run("math.evaluate", expression="2 * (3 + 4) ^ 2") == 98
    assert run("math.evaluate", expression="sqrt(81) + 10 / 4") == pytest.approx(11.5)
    stats = run("math.statistics", numbers=[2, 4, 4, 4, 5, 5, 7, 9])
    assert isinstance(stats, dict)
    assert stats["mean"] == 5
    assert stats["median"] == 4.5
    assert run("math.prime_factors", n=360) == [2, 2, 2, 3, 3, 5]
    binary = asyncio.run(TOOLS["math.convert_base"].invoke({"number": "ff", "from_base": 16}))
    assert binary == "11111111"
    assert run("math.solve_quadratic", a=1, b=-3, c=2) == ["2", "1"]
    assert run("math.percent_change", old_value=80, new_value=100) == 25


@pytest.mark.parametrize(
    "expression",
    ["__import__('os').system('true')", "(1).__class__", "open('x')", "9 ** 9 ** 9", "a + 1"],
)
def test_safe_evaluator_refuses_anything_but_arithmetic(expression: str) -> None:
    with pytest.raises(UnsafeExpressionError):
        evaluate(expression)


def test_safe_evaluator_knows_constants() -> None:
    assert evaluate("pi * 2") == pytest.approx(math.tau)


def test_text_tools_compute() -> None:
    assert run("text.hash", text="abc", algorithm="md5") == "900150983cd24fb0d6963f7d28e17f72"
    assert run("text.base64_encode", text="群成员") == "576k5oiQ5ZGY"
    assert run("text.base64_decode", data="576k5oiQ5ZGY") == "群成员"
    assert run("text.edit_distance", first="kitten", second="sitting") == 3
    assert run("text.slugify", text="Hello, World!") == "hello-world"
    assert run("text.is_palindrome", text="A man, a plan, a canal: Panama") is True
    assert run("text.extract_emails", text="mail a@b.co or c.d@e.org") == ["a@b.co", "c.d@e.org"]


def test_formula_tools_compute() -> None:
    dist = run("maps.distance", origin="Paris", destination="London")
    assert isinstance(dist, dict)
    assert 330 < dist["km"] < 350
    loan = run("finance.loan_payment", principal=100000, annual_rate_percent=6, years=30)
    assert isinstance(loan, dict)
    assert loan["monthly_payment"] == pytest.approx(599.55)
    assert run("files.human_size", size_bytes=1536) == "1.5 KiB"
