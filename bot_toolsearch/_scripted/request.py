"""What the scripted server recorded about one request, and the failures it raises."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["Api", "ModelRequest", "UnconsumedTurns", "UnexpectedModelCall"]

Api = Literal["chat_completions", "responses", "messages"]
"""The two OpenAI APIs the server speaks, and Anthropic's Messages API (its Messages mode)."""


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One model request as the server received it.

    The convenience properties read both wire formats, so a test can assert on what the bot sent
    without caring which API mode it runs in.

    >>> req = ModelRequest("chat_completions", {"messages": [], "tools": [
    ...     {"type": "function", "function": {"name": "end"}}]})
    >>> req.tool_names
    ['end']
    """

    api: Api
    """Which endpoint was called."""
    body: dict[str, Any]
    """The parsed JSON body, exactly as received."""
    path: str = ""
    """The HTTP path, e.g. ``/v1/chat/completions``."""
    headers: dict[str, str] = field(default_factory=dict)
    """The request headers, names lower-cased."""

    @property
    def model(self) -> str | None:
        """The ``model`` field of the body."""
        model = self.body.get("model")
        return model if isinstance(model, str) else None

    @property
    def tool_names(self) -> list[str]:
        """The function tool names in ``body["tools"]``, in order (both wire formats)."""
        names: list[str] = []
        for tool in _dicts(self.body.get("tools")):
            function = tool.get("function")
            name = function.get("name") if isinstance(function, dict) else tool.get("name")
            if isinstance(name, str):
                names.append(name)
        return names

    @property
    def additional_tool_names(self) -> list[str]:
        """Responses: the function names declared by ``additional_tools`` input items of this
        request (``{"type": "additional_tools", "role": "developer", "tools": [...]}``), in
        order; items stored behind ``previous_response_id`` are not included."""
        names: list[str] = []
        for item in self.messages if self.api == "responses" else []:
            if item.get("type") == "additional_tools":
                for tool in _dicts(item.get("tools")):
                    name = tool.get("name")
                    if isinstance(name, str):
                        names.append(name)
        return names

    @property
    def messages(self) -> list[dict[str, Any]]:
        """Chat and Messages: ``body["messages"]``; Responses: the ``input`` items (a string
        is a user item)."""
        if self.api != "responses":
            return _dicts(self.body.get("messages"))
        return input_items(self.body)

    @property
    def system_texts(self) -> list[str]:
        """The text of system and developer messages (Responses: ``instructions`` first)."""
        texts: list[str] = []
        if self.api == "messages":
            system = self.body.get("system")
            return [system] if isinstance(system, str) else [content_text(system)]
        if self.api == "responses":
            instructions = self.body.get("instructions")
            if isinstance(instructions, str):
                texts.append(instructions)
            else:
                texts.extend(_system_texts(_dicts(instructions)))
        texts.extend(_system_texts(self.messages))
        return texts

    @property
    def tool_outputs(self) -> list[tuple[str, str]]:
        """``(call_id, output)`` of every tool result sent, in order.

        Chat: the ``role == "tool"`` messages; Responses: the ``function_call_output`` items;
        Messages: the ``tool_result`` blocks.
        """
        outputs: list[tuple[str, str]] = []
        for item in self.messages:
            if self.api == "messages" and isinstance(item.get("content"), list):
                outputs.extend(
                    (str(b.get("tool_use_id")), content_text(b.get("content")))
                    for b in item["content"]
                    if isinstance(b, dict) and b.get("type") == "tool_result"
                )
            if self.api == "chat_completions" and item.get("role") == "tool":
                outputs.append((str(item.get("tool_call_id")), content_text(item.get("content"))))
            elif self.api == "responses" and item.get("type") == "function_call_output":
                outputs.append((str(item.get("call_id")), content_text(item.get("output"))))
        return outputs

    @property
    def previous_response_id(self) -> str | None:
        """The Responses ``previous_response_id``, if any."""
        value = self.body.get("previous_response_id")
        return value if isinstance(value, str) else None

    def describe(self) -> str:
        """A short one-line description for failure messages."""
        last = self.messages[-1:] if self.messages else []
        return (
            f"{self.api} request (tools={self.tool_names}, "
            f"last item={_shorten(str(last[0]) if last else '-')})"
        )


class UnexpectedModelCall(AssertionError):
    """The server received requests it had no turn for, or answering one failed.

    Attributes:
        failures: one description per problem, in arrival order.
        requests: the requests involved (those that could be parsed).
    """

    def __init__(self, failures: Sequence[str], requests: Sequence[ModelRequest]) -> None:
        lines = "\n".join(f"  - {f}" for f in failures)
        count = len(failures)
        super().__init__(f"ScriptedOpenAIServer: {count} unexpected model call(s):\n{lines}")
        self.failures = list(failures)
        self.requests = list(requests)


class UnconsumedTurns(AssertionError):
    """Scripted turns were never requested by the code under test.

    Attributes:
        turns: the remaining turns, in script order.
    """

    def __init__(self, turns: Sequence[object]) -> None:
        lines = "\n".join(f"  - {t!r}" for t in turns)
        super().__init__(f"ScriptedOpenAIServer: {len(turns)} scripted turn(s) unused:\n{lines}")
        self.turns = list(turns)


def input_items(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The Responses ``input`` as a list of items (a plain string becomes one user message)."""
    raw = body.get("input")
    if isinstance(raw, str):
        return [{"role": "user", "content": raw}]
    return _dicts(raw)


def content_text(content: object) -> str:
    """The text of a message content or tool output: a string, or the text of its parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return "" if content is None else str(content)


def _system_texts(items: list[dict[str, Any]]) -> list[str]:
    # Typed developer items that are no message (``additional_tools``) carry no text.
    return [
        content_text(item.get("content"))
        for item in items
        if item.get("role") in ("system", "developer") and item.get("type") in (None, "message")
    ]


def _dicts(value: object) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, dict)]


def _shorten(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
