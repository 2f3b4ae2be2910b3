"""The public API: each public door has one sorted ``__all__``, and no name is in two doors."""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import subprocess
import sys
import warnings
from types import ModuleType

import pytest

import bot_toolsearch

DOORS = (
    "bot_toolsearch",
    "bot_toolsearch.config",
    "bot_toolsearch.conversations",
    "bot_toolsearch.core",
    "bot_toolsearch.middleware",
    "bot_toolsearch.offline",
    "bot_toolsearch.testing",
    "bot_toolsearch.tools",
)


def doors() -> list[ModuleType]:
    return [importlib.import_module(name) for name in DOORS]


def exported_objects() -> dict[int, str]:
    """``id(object) -> "door.name"`` for every name every public door exports."""
    return {
        id(getattr(door, n)): f"{door.__name__}.{n}"
        for door in doors()
        for n in door.__all__
        if n != "__version__"
    }


@pytest.mark.parametrize("door", DOORS)
def test_all_is_sorted_and_unique(door: str) -> None:
    names = importlib.import_module(door).__all__
    assert list(names) == sorted(set(names))


@pytest.mark.parametrize("door", DOORS)
def test_all_names_exist(door: str) -> None:
    module = importlib.import_module(door)
    for name in module.__all__:
        assert getattr(module, name) is not None, name


def test_no_name_is_exported_twice() -> None:
    seen: dict[str, str] = {}
    twice = []
    for door in doors():
        for name in door.__all__:
            if name in seen:
                twice.append(f"{name}: {seen[name]} and {door.__name__}")
            seen[name] = door.__name__
    assert twice == []


def test_the_root_is_what_a_bot_developer_needs() -> None:
    assert {"Bot", "BotSettings", "Tool", "tool", "Agent", "wrap_openai", "AskResult"} <= set(
        bot_toolsearch.__all__
    )
    assert len(bot_toolsearch.__all__) <= 25


@pytest.mark.parametrize("name", sorted(bot_toolsearch._MOVED))
def test_a_moved_root_name_still_imports_with_a_deprecation_warning(name: str) -> None:
    door = bot_toolsearch._MOVED[name]
    with pytest.warns(DeprecationWarning, match=f"use `from {door} import {name}`"):
        old = getattr(bot_toolsearch, name)
    assert old is getattr(importlib.import_module(door), name)
    assert name in importlib.import_module(door).__all__
    assert name not in bot_toolsearch.__all__


def test_from_import_of_a_moved_name_warns_at_the_caller() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from bot_toolsearch import ToolCatalog  # noqa: F401
    # ``from m import n`` looks the name up twice (``hasattr`` in the import system, then the
    # import itself): every warning is the deprecation, and one points at this line.
    assert {w.category for w in caught} == {DeprecationWarning}
    assert __file__ in {w.filename for w in caught}


@pytest.mark.parametrize("name", ["BotSettings", "ConfigError"])
def test_config_names_exported_twice_still_import_with_a_warning(name: str) -> None:
    import bot_toolsearch.config

    with pytest.warns(DeprecationWarning, match=f"from bot_toolsearch import {name}"):
        assert getattr(bot_toolsearch.config, name) is getattr(bot_toolsearch, name)


def test_an_unknown_root_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = bot_toolsearch.Nope  # type: ignore[attr-defined]


def test_product_code_does_not_import_the_testing_door() -> None:
    """The offline model and the demo use the private scripted server, not the test door."""
    code = (
        "import sys, bot_toolsearch.offline, bot_toolsearch._cli.main, bot_toolsearch._demo.run;"
        "print('bot_toolsearch.testing' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


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


@pytest.mark.parametrize("door", [d for d in DOORS if d != "bot_toolsearch.offline"])
def test_exports_report_the_public_module(door: str) -> None:
    module = importlib.import_module(door)
    for name in module.__all__:
        obj = getattr(module, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert obj.__module__ == door, name


def test_version_matches_metadata() -> None:
    assert bot_toolsearch.__version__ == importlib.metadata.version("bot-toolsearch")


def _private_aliases() -> dict[int, str]:
    """``id(alias) -> "module.name"`` of every module-level type alias in a private module."""
    import sys
    import typing

    found: dict[int, str] = {}
    for module_name, module in list(sys.modules.items()):
        if not module_name.startswith("bot_toolsearch._") or module is None:
            continue
        # A copy: a module may still be importing in a thread another test left running.
        for name, value in list(vars(module).items()):
            alias = typing.get_origin(value) is not None and not inspect.isclass(value)
            if alias and not name.startswith("_") and name[:1].isupper():
                found.setdefault(id(value), f"{module_name}.{name}")
    return found


def _referenced(hint: object) -> list[object]:
    import typing

    found = [hint]
    for arg in typing.get_args(hint):
        if isinstance(arg, list):
            for item in arg:
                found.extend(_referenced(item))
        else:
            found.extend(_referenced(arg))
    return found


def test_public_signatures_use_only_exported_types() -> None:
    """A type alias or class named in a public signature can be imported from the package."""

    exported = exported_objects()
    # The host's own machinery, reachable from the context a middleware gets but not a type a
    # middleware names: its documented surface is the attributes it uses (``ctx.stats`` is an
    # ``AskStats``; ``ctx.toolset`` and ``ctx.transport`` are for the host).
    internal = {"StatsRecorder", "ToolSet", "Transport"}
    aliases = _private_aliases()
    missing = set()
    for door in doors():
        if door.__name__ in {"bot_toolsearch.offline", "bot_toolsearch.testing"}:
            continue  # their own documented surfaces, not the bot's API
        for name in door.__all__:
            _check_signatures(
                door, name, exported=exported, aliases=aliases, internal=internal, missing=missing
            )
    assert not missing, "\n".join(sorted(missing))


def _check_signatures(
    door: ModuleType,
    name: str,
    *,
    exported: dict[int, str],
    aliases: dict[int, str],
    internal: set[str],
    missing: set[str],
) -> None:
    import typing

    obj = getattr(door, name)
    targets = [obj]
    if inspect.isclass(obj):
        targets += [m for k, m in vars(obj).items() if inspect.isfunction(m) and k[:1] != "_"]
        targets.append(obj.__init__)
    for target in targets:
        try:
            hints = typing.get_type_hints(target)
        except (NameError, TypeError):
            continue  # a hint that only a type checker resolves (TYPE_CHECKING names)
        for hint in hints.values():
            for ref in _referenced(hint):
                private_alias = aliases.get(id(ref))
                if private_alias and id(ref) not in exported:
                    missing.add(f"{name}: {private_alias}")
                elif (
                    inspect.isclass(ref)
                    and ref.__module__.startswith("bot_toolsearch._")
                    and id(ref) not in exported
                    and ref.__name__ not in internal
                ):
                    missing.add(f"{name}: {ref.__module__}.{ref.__qualname__}")
