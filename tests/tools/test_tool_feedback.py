"""``@tool`` feedback for a newcomer (issue 22): a plain function, a thin definition, a type
no JSON Schema describes and a bad name are each said plainly, when the tool is made."""

from __future__ import annotations

import socket
import warnings

import pytest

from bot_toolsearch import Bot, BotSettings, CatalogError, ToolDefinitionWarning, tool


def test_a_plain_function_passed_as_a_tool_says_decorate_it() -> None:
    def forecast(city: str) -> str:
        """The forecast."""
        return city

    with pytest.raises(CatalogError) as caught:
        Bot(BotSettings(), tools=[forecast])  # type: ignore[list-item]
    assert str(caught.value) == (
        "not a Tool or Agent: the function 'forecast'; decorate it with @tool "
        "(from bot_toolsearch import tool)"
    )


def test_no_docstring_and_no_type_hints_warn_once_with_what_the_model_sees() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")

        @tool
        def lookup(city, days: int = 1):  # type: ignore[no-untyped-def]
            return city

    assert [w.category for w in caught] == [ToolDefinitionWarning]
    assert issubclass(ToolDefinitionWarning, UserWarning)
    assert str(caught[0].message) == (
        "tool 'lookup': no docstring, so the model sees an empty description; "
        "no type hints on city, so the model sees them untyped"
    )
    assert caught[0].filename == __file__  # points at the tool, not at our decorator
    assert lookup.description == ""


def test_a_documented_typed_tool_does_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")

        @tool
        def add(a: int, b: int = 2, *rest: int, **extra: int) -> int:
            """Add."""
            return a + b

    assert add.description == "Add."


def test_a_description_given_to_the_decorator_is_enough() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")

        @tool(description="Ping the host.")
        def ping(host: str) -> str:
            return host

    assert ping.description == "Ping the host."


def test_an_unsupported_annotation_gets_our_own_message() -> None:
    with pytest.raises(CatalogError) as caught:

        @tool
        def send(sock: socket.socket, text: str) -> str:
            """Send text."""
            return text

    message = str(caught.value)
    assert message.startswith(
        "tool 'send': parameter 'sock' has type 'socket', which has no JSON Schema"
    )
    assert "arbitrary_types_allowed" not in message
    assert "Tool(name, description, parameters, handler)" in message


@pytest.mark.parametrize(
    ("name", "reason"),
    [("get weather", "name contains whitespace"), ("", "name is empty"), ("a<b>", "'<' or '>'")],
)
def test_an_invalid_name_fails_at_decoration_time(name: str, reason: str) -> None:
    with pytest.raises(CatalogError, match=r"^@tool\(name=") as caught:
        tool(name=name)  # before any function is decorated
    assert reason in str(caught.value)


def test_tool_decorates_only_functions() -> None:
    @tool
    def done() -> str:
        """Done."""
        return "ok"

    with pytest.raises(CatalogError, match="@tool decorates a function, not Tool"):
        tool(done)  # type: ignore[arg-type]
