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
    import typing

    exported = {
        id(getattr(bot_toolsearch, n)) for n in bot_toolsearch.__all__ if n != "__version__"
    }
    # The host's own machinery, reachable from the context a middleware gets but not a type a
    # middleware names: its documented surface is the attributes it uses (``ctx.stats`` is an
    # ``AskStats``; ``ctx.toolset`` and ``ctx.transport`` are for the host).
    internal = {"StatsRecorder", "ToolSet", "Transport"}
    aliases = _private_aliases()
    missing = set()
    for name in bot_toolsearch.__all__:
        obj = getattr(bot_toolsearch, name)
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
    assert not missing, "\n".join(sorted(missing))
