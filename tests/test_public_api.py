"""The public API is one sorted ``__all__`` that names every public object."""

from __future__ import annotations

import importlib.metadata
import inspect

import bot_toolsearch


def test_all_is_sorted_and_unique() -> None:
    assert list(bot_toolsearch.__all__) == sorted(set(bot_toolsearch.__all__))


def test_all_names_exist() -> None:
    for name in bot_toolsearch.__all__:
        assert getattr(bot_toolsearch, name) is not None, name


def test_every_public_error_is_exported() -> None:
    exported = {getattr(bot_toolsearch, n) for n in bot_toolsearch.__all__ if n != "__version__"}

    def subclasses(cls: type) -> set[type]:
        found = set()
        for sub in cls.__subclasses__():
            found |= {sub, *subclasses(sub)}
        return found

    for err in subclasses(bot_toolsearch.ToolSearchError):
        if not err.__name__.startswith("_"):
            assert err in exported, err


def test_exports_report_the_public_module() -> None:
    for name in bot_toolsearch.__all__:
        obj = getattr(bot_toolsearch, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert obj.__module__ == "bot_toolsearch", name


def test_version_matches_metadata() -> None:
    assert bot_toolsearch.__version__ == importlib.metadata.version("bot-toolsearch")
