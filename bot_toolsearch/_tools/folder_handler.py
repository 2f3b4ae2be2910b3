"""`FolderHandler`: imports a tool folder's ``handler.py`` on first use and caches ``execute``."""

from __future__ import annotations

import importlib.util
import itertools
import logging
import re
import sys
import threading
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .tool import ToolImportError, check_binding

__all__ = ["FolderHandler"]

log = logging.getLogger("bot_toolsearch.registry")

_module_counter = itertools.count(1)


class FolderHandler:
    """Callable that imports ``handler.py`` on first use and calls its ``execute``.

    A failed import is remembered and logged once; every later call raises the same
    `ToolImportError` without retrying, until a reload replaces the tool.
    """

    __slots__ = ("__weakref__", "_error", "_execute", "_lock", "module_name", "path", "tool_name")

    def __init__(self, tool_name: str, path: Path) -> None:
        self.tool_name = tool_name
        self.path = path
        safe = re.sub(r"\W", "_", tool_name, flags=re.ASCII)
        self.module_name = f"_bot_toolsearch_folder_{next(_module_counter)}_{safe}"
        self._execute: Callable[..., Any] | None = None
        self._error: ToolImportError | None = None
        self._lock = threading.Lock()
        # Without this, every edit of a handler would leave its old module in sys.modules.
        weakref.finalize(self, sys.modules.pop, self.module_name, None)

    @property
    def loaded(self) -> bool:
        """Whether ``handler.py`` has been imported successfully."""
        return self._execute is not None

    def load(self) -> Callable[..., Any]:
        """Import ``handler.py`` now (if not yet) and return its ``execute``.

        Raises:
            ToolImportError: the handler cannot be imported (a syntax error, an exception
                while importing) or defines no callable ``execute``.
        """
        return self._load()

    def _load(self) -> Callable[..., Any]:
        with self._lock:
            if self._execute is not None:
                return self._execute
            if self._error is not None:
                raise self._error
            try:
                self._execute = self._import()
            except Exception as exc:
                self._error = ToolImportError(self.tool_name, str(self.path), exc)
                log.error("tool folder handler failed to import: %s", self._error)
                self._error.logged = True  # once: later calls raise it without a log line
                raise self._error from exc
            return self._execute

    def _import(self) -> Callable[..., Any]:
        spec = importlib.util.spec_from_file_location(self.module_name, self.path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {self.path}")
        module = importlib.util.module_from_spec(spec)
        # Registered before exec so dataclasses, pickling and typing inside the handler work.
        sys.modules[self.module_name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(self.module_name, None)
            raise
        execute = getattr(module, "execute", None)
        if not callable(execute):
            sys.modules.pop(self.module_name, None)
            raise AttributeError(f"{self.path.name} defines no callable 'execute'")
        return execute  # type: ignore[no-any-return]

    def __call__(self, **kwargs: Any) -> Any:
        # Runs in a worker thread (Tool.invoke), so the import never blocks the event loop;
        # an async execute returns a coroutine that Tool.invoke awaits on the loop.
        execute = self._load()
        check_binding(execute, kwargs)
        return execute(**kwargs)
