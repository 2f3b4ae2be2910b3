"""Exceptions raised to the bot developer.

Mistakes made by the *model* (bad tool arguments, unknown tools) never raise: they become tool
results the model reads. Mistakes made by the *developer* or in the *config* raise one of these::

    ToolSearchError
    ├── ToolSearchNameCollisionError (also ValueError)  kept for old code: no longer raised
    ├── CatalogError (also ValueError)                   a tool catalog cannot be used as given
    ├── ConfigError (also ValueError)                    a config file or value is invalid
    ├── ToolNotPermittedError (also ValueError)          a request names a denied tool
    ├── ConversationStoreError                           a conversation store cannot be used
    └── UnsupportedCallError (also NotImplementedError)  an SDK call a wrapped client refuses
"""

from __future__ import annotations

__all__ = [
    "CatalogError",
    "ConfigError",
    "ConversationStoreError",
    "ToolNotPermittedError",
    "ToolSearchError",
    "ToolSearchNameCollisionError",
    "UnsupportedCallError",
]


class ToolSearchError(Exception):
    """Base class of every exception this package raises on purpose."""


class ToolSearchNameCollisionError(ToolSearchError, ValueError):
    """A real tool uses the reserved name ``tool_search``.

    Never raised: every door skips such a tool while it offers the virtual ``tool_search``
    (with the catalog's one summary warning) and keeps every other tool searchable; without
    tool search it is an ordinary tool. Kept so that code catching it still imports.

    Attributes:
        name: the colliding tool name as given.
    """

    def __init__(self, name: str) -> None:
        super().__init__(
            f"tool name {name!r} is reserved for the virtual tool_search tool; "
            "rename the tool or disable tool search"
        )
        self.name = name


class CatalogError(ToolSearchError, ValueError):
    """A tool catalog or tool definition cannot be used as given.

    Attributes:
        name: the offending tool name, when there is one.
    """

    def __init__(self, message: str, *, name: str | None = None) -> None:
        super().__init__(message)
        self.name = name


class ToolNotPermittedError(ToolSearchError, ValueError):
    """A request to a wrapped client names a tool ``[tools] allow``/``deny`` leave out where
    it cannot be left out: ``tool_choice``, the legacy ``function_call``.

    Attributes:
        name: the tool name as the request spells it.
        param: the request field that names it (``tool_choice``, ``function_call``).
    """

    def __init__(self, name: str, param: str) -> None:
        super().__init__(f"{param} names the tool {name!r}, which [tools] allow/deny do not permit")
        self.name = name
        self.param = param


class ConfigError(ToolSearchError, ValueError):
    """A config file or value is invalid.

    Attributes:
        path: the config file, when the error comes from one.
        key: the dotted key (``skills.tool_search_max_results``), when known.
        line: 1-based line in the file, when known.
        column: 1-based column in the file, when known.
        value: the offending value, when there is one.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        key: str | None = None,
        line: int | None = None,
        column: int | None = None,
        value: object = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.key = key
        self.line = line
        self.column = column
        self.value = value

    def __str__(self) -> str:
        where = self.path or ""
        if where and self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        return f"{where}: {self.message}" if where else self.message


class ConversationStoreError(ToolSearchError):
    """A conversation store cannot be read or written (a corrupt or locked database file).

    Asks without a ``conversation`` never touch the store, so the bot still answers them.

    Attributes:
        path: the store's file (or other location), as given.
        result: for a failed write after a successful ask, that ask's `AskResult` (the
            reply is not lost; the conversation was left as it was before the ask).
    """

    def __init__(self, message: str, *, path: str, result: object = None) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.result = result


class UnsupportedCallError(ToolSearchError, NotImplementedError):
    """A wrapped client's SDK method that would send a model request without tool search.

    Raised instead of sending it (``responses.connect``, or a method of a later ``openai``
    release the wrapper does not know); the message names the calls that are supported.
    """
