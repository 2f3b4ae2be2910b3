"""ToolRegistry over tool folders: naming, lazy handlers, invalid folders, reload and watch."""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from bot_toolsearch import Tool, ToolImportError
from bot_toolsearch._tools.registry import ToolRegistry
from bot_toolsearch._tools.source import ToolSetSnapshot

REGISTRY_LOG = "bot_toolsearch.registry"


def write_tool(
    root: Path,
    rel: str,
    *,
    config: Any = None,
    handler: str | None = "def execute(**kw):\n    return {'got': kw}\n",
    wrapped: bool = True,
) -> Path:
    """A tool folder at ``root/rel``; ``config=None`` writes a valid schema for its name."""
    folder = root / rel
    folder.mkdir(parents=True, exist_ok=True)
    if config is None:
        function = {
            "name": rel.rsplit("/", 1)[-1],
            "description": f"The {rel} tool.",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
        }
        config = {"type": "function", "function": function} if wrapped else function
    if isinstance(config, str):
        (folder / "config.json").write_text(config, encoding="utf-8")
    else:
        (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    if handler is not None:
        (folder / "handler.py").write_text(handler, encoding="utf-8")
    return folder


def side_effect_handler(marker: Path, body: str = "return 'ran'") -> str:
    """A handler that appends a line to ``marker`` each time its module is imported."""
    return (
        "from pathlib import Path\n"
        f"with Path({str(marker)!r}).open('a') as f:\n"
        "    f.write('imported\\n')\n"
        "def execute(**kw):\n"
        f"    {body}\n"
    )


def imported_files() -> set[str]:
    return {str(getattr(m, "__file__", "")) for m in list(sys.modules.values())}


def warnings_naming(caplog: pytest.LogCaptureFixture, path: Path) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.WARNING and str(path) in r.getMessage()
    ]


def test_folders_become_namespaced_tools(tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    write_tool(tools, "music/search_songs")
    write_tool(tools, "music/lyrics/fetch", wrapped=False)
    write_tool(tools, "weather")
    write_tool(
        tools,
        "off",
        config={"type": "function", "function": {"name": "off"}, "enabled": False},
    )
    registry = ToolRegistry(["tools"], base_dir=tmp_path)
    snap = registry.snapshot()
    assert list(snap.tools) == ["music.lyrics.fetch", "music.search_songs", "weather"]
    assert snap.sources["music.search_songs"] == "folder:tools/music/search_songs"
    assert snap.catalog.names == tuple(snap.tools)
    assert snap.tools["weather"].description == "The weather tool."
    assert snap.tools["weather"].parameters["properties"] == {"q": {"type": "string"}}
    assert snap.generation == 0


async def test_handlers_are_imported_on_first_call_only(tmp_path: Path) -> None:
    used_marker, unused_marker = tmp_path / "used.log", tmp_path / "unused.log"
    write_tool(tmp_path / "t", "used", handler=side_effect_handler(used_marker))
    unused = write_tool(tmp_path / "t", "unused", handler=side_effect_handler(unused_marker))
    registry = ToolRegistry([tmp_path / "t"])
    tools = registry.snapshot().tools
    assert not used_marker.exists()

    assert await tools["used"].invoke({}) == "ran"
    assert await tools["used"].invoke({}) == "ran"
    assert used_marker.read_text() == "imported\n"  # imported once, then cached
    assert not unused_marker.exists()
    assert str((unused / "handler.py").resolve()) not in imported_files()


async def test_sync_and_async_execute_get_keyword_arguments(tmp_path: Path) -> None:
    write_tool(tmp_path, "s", handler="def execute(a, b=1):\n    return a + b\n")
    write_tool(
        tmp_path,
        "a",
        handler="import asyncio\nasync def execute(text):\n    await asyncio.sleep(0)\n"
        "    return text.upper()\n",
    )
    tools = ToolRegistry([tmp_path]).snapshot().tools
    assert await tools["s"].invoke({"a": 2, "b": 3}) == "5"
    assert await tools["a"].invoke({"text": "hi"}) == "HI"


@pytest.mark.parametrize(
    ("handler", "error"),
    [
        pytest.param("def execute(:\n", "SyntaxError", id="syntax-error"),
        pytest.param("raise RuntimeError('no db')\n", "no db", id="raises-on-import"),
        pytest.param("run = 1\n", "execute", id="no-execute"),
    ],
)
async def test_failing_handler_raises_a_clear_error_logged_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, handler: str, error: str
) -> None:
    folder = write_tool(tmp_path, "broken", handler=handler)
    tool = ToolRegistry([tmp_path]).snapshot().tools["broken"]
    for _ in range(2):
        with pytest.raises(ToolImportError) as info:
            await tool.invoke({})
        assert str(folder / "handler.py") in str(info.value)
        assert error in str(info.value)
    logged = [r for r in caplog.records if r.name == REGISTRY_LOG and r.levelno == logging.ERROR]
    assert len(logged) == 1
    assert str(folder / "handler.py") in logged[0].getMessage()


def test_invalid_folders_are_skipped_with_one_warning_each(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "tools"
    write_tool(root, "good")
    bad = {
        "broken_json": write_tool(root, "broken_json", config="{not json"),
        "no_handler": write_tool(root, "no_handler", handler=None),
        "code_name": write_tool(root, "code_name"),
        "space name": write_tool(root, "space name"),
        "ctrl\x01name": write_tool(root, "ctrl\x01name"),
        "a<b": write_tool(root, "a<b"),
        "long": write_tool(root, "n" * 70),
        "not_object": write_tool(root, "not_object", config="[1, 2]"),
        "bad_params": write_tool(
            root, "bad_params", config={"name": "bad_params", "parameters": "nope"}
        ),
    }
    write_tool(root, "tool_search")  # kept like any tool (the doors skip it while searching)
    only_handler = root / "only_handler"
    only_handler.mkdir()
    (only_handler / "handler.py").write_text("def execute():\n    return 1\n")
    bad["only_handler"] = only_handler
    code = Tool("code_name", "from code", None, lambda: "code")
    with caplog.at_level(logging.WARNING, REGISTRY_LOG):
        snap = ToolRegistry([root], extra_tools=[code]).snapshot()
    assert list(snap.tools) == ["code_name", "good", "tool_search"]
    assert snap.tools["code_name"] is code
    for label, path in bad.items():
        assert len(warnings_naming(caplog, path)) == 1, label


def test_symlink_escaping_the_tools_dir_is_skipped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    outside = write_tool(tmp_path / "elsewhere", "evil")
    root = tmp_path / "tools"
    write_tool(root, "fine")
    (root / "evil").symlink_to(outside, target_is_directory=True)
    inner = write_tool(root, "sneaky")
    (inner / "handler.py").unlink()
    (inner / "handler.py").symlink_to(outside / "handler.py")
    with caplog.at_level(logging.WARNING, REGISTRY_LOG):
        snap = ToolRegistry([root]).snapshot()
    assert list(snap.tools) == ["fine"]
    assert len(warnings_naming(caplog, root / "evil")) == 1
    assert len(warnings_naming(caplog, inner)) == 1


def test_config_name_disagreeing_with_the_folder_loses_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = write_tool(tmp_path, "ns/real", config={"name": "fake", "description": "x"})
    write_tool(tmp_path, "ns/full", config={"name": "ns.full"})
    with caplog.at_level(logging.WARNING, REGISTRY_LOG):
        snap = ToolRegistry([tmp_path]).snapshot()
    assert list(snap.tools) == ["ns.full", "ns.real"]
    assert len(warnings_naming(caplog, folder)) == 1
    assert "fake" in warnings_naming(caplog, folder)[0]


def test_missing_dir_is_a_warning_not_an_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, REGISTRY_LOG):
        snap = ToolRegistry([tmp_path / "nope"]).snapshot()
    assert len(snap.tools) == 0
    assert warnings_naming(caplog, tmp_path / "nope")


def test_reload_swaps_only_when_something_changed(tmp_path: Path) -> None:
    write_tool(tmp_path, "a")
    registry = ToolRegistry([tmp_path])
    first = registry.snapshot()
    assert registry.reload() is first  # nothing changed: same snapshot, same generation

    write_tool(tmp_path, "b")
    second = registry.reload()
    assert second.generation == 1
    assert list(second.tools) == ["a", "b"]
    assert second.fingerprint != first.fingerprint
    assert registry.snapshot() is second
    assert list(first.tools) == ["a"]  # the old snapshot is untouched


async def test_edited_handler_only_makes_a_new_generation_with_the_same_catalog(
    tmp_path: Path,
) -> None:
    folder = write_tool(tmp_path, "t", handler="def execute():\n    return 'old'\n")
    registry = ToolRegistry([tmp_path])
    old = registry.snapshot()
    assert await old.tools["t"].invoke({}) == "old"
    (folder / "handler.py").write_text("def execute():\n    return 'new version'\n")
    new = registry.reload()
    assert new.generation == 1
    assert new.fingerprint == old.fingerprint
    assert new.catalog is old.catalog  # the index is not rebuilt for a handler change
    assert await new.tools["t"].invoke({}) == "new version"
    assert await old.tools["t"].invoke({}) == "old"  # a running ask keeps its module


async def test_a_same_size_rewrite_within_one_timestamp_tick_is_seen(tmp_path: Path) -> None:
    folder = write_tool(tmp_path, "t", handler="def execute():\n    return 'aaa'\n")
    handler = folder / "handler.py"
    registry = ToolRegistry([tmp_path])
    old = registry.snapshot()
    assert await old.tools["t"].invoke({}) == "aaa"
    before = handler.stat()
    # Rewritten in place to the same size, and within the same file-time tick: the stamp
    # (inode, mtime, size) is exactly what it was. Only the content tells.
    handler.write_text("def execute():\n    return 'bbb'\n")
    os.utime(handler, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = handler.stat()
    assert (after.st_ino, after.st_mtime_ns, after.st_size) == (
        before.st_ino,
        before.st_mtime_ns,
        before.st_size,
    )
    new = registry.reload()
    assert new is not old
    assert await new.tools["t"].invoke({}) == "bbb"
    assert registry.reload() is new  # and an unchanged recent file is not a change


async def test_removed_tool_still_runs_for_an_ask_on_the_old_snapshot(tmp_path: Path) -> None:
    folder = write_tool(tmp_path, "gone", handler="def execute():\n    return 'still here'\n")
    registry = ToolRegistry([tmp_path])
    old = registry.snapshot()
    (folder / "config.json").unlink()
    (folder / "handler.py").unlink()
    folder.rmdir()
    assert "gone" not in registry.reload().tools
    with pytest.raises(ToolImportError):
        # Never imported before removal: the file is gone, so the old tool fails clearly.
        await old.tools["gone"].invoke({})


async def test_imported_removed_tool_keeps_running(tmp_path: Path) -> None:
    folder = write_tool(tmp_path, "gone", handler="def execute():\n    return 'still here'\n")
    registry = ToolRegistry([tmp_path])
    old = registry.snapshot()
    assert await old.tools["gone"].invoke({}) == "still here"
    for file in folder.iterdir():
        if file.is_file():
            file.unlink()
    assert "gone" not in registry.reload().tools
    assert await old.tools["gone"].invoke({}) == "still here"


def test_subscribers_see_each_swap_and_can_unsubscribe(tmp_path: Path) -> None:
    registry = ToolRegistry([tmp_path])
    seen: list[ToolSetSnapshot] = []
    undo = registry.subscribe(seen.append)
    write_tool(tmp_path, "a")
    registry.reload()
    registry.reload()
    undo()
    write_tool(tmp_path, "b")
    registry.reload()
    assert [s.generation for s in seen] == [1]


async def test_reconfigure_dirs(tmp_path: Path) -> None:
    write_tool(tmp_path / "one", "a")
    write_tool(tmp_path / "two", "b")
    registry = ToolRegistry(["one"], base_dir=tmp_path)
    snap = await registry.reconfigure(dirs=["one", "two"])
    assert list(snap.tools) == ["a", "b"]
    assert snap.sources["b"] == "folder:two/b"
    assert snap.generation == 1


async def test_watch_reloads_added_edited_and_removed_folders(tmp_path: Path) -> None:
    root = tmp_path / "tools"
    write_tool(root, "a")
    registry = ToolRegistry([root], watch=True, debounce=0.05)
    await registry.start()
    try:
        # Built aside and moved in, as a deploy would (one event for the whole folder).
        write_tool(tmp_path / "staging", "ns/b")
        (tmp_path / "staging" / "ns").rename(root / "ns")
        snap = await registry.wait_for_generation(1)
        assert "ns.b" in snap.tools

        (root / "a" / "config.json").write_text(json.dumps({"description": "edited"}))
        snap = await registry.wait_for_generation(2)
        assert snap.tools["a"].description == "edited"

        for file in (root / "a").iterdir():
            file.unlink()
        (root / "a").rmdir()
        snap = await registry.wait_for_generation(3)
        assert list(snap.tools) == ["ns.b"]
    finally:
        await registry.aclose()


async def test_wait_for_generation_times_out(tmp_path: Path) -> None:
    registry = ToolRegistry([tmp_path])
    with pytest.raises(TimeoutError):
        await registry.wait_for_generation(1, timeout=0.01)


def test_unreadable_dir_entries_do_not_crash(tmp_path: Path) -> None:
    write_tool(tmp_path, "ok")
    (tmp_path / "README.md").write_text("not a tool")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / "__pycache__").mkdir()
    os.symlink(tmp_path / "missing-target", tmp_path / "dangling")
    assert list(ToolRegistry([tmp_path]).snapshot().tools) == ["ok"]


async def test_unchanged_folders_keep_their_imported_handler_across_a_reload(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    marker = tmp_path / "used.log"
    write_tool(tmp_path / "t", "used", handler=side_effect_handler(marker))
    write_tool(tmp_path / "t", "broken", handler="raise RuntimeError('no db')\n")
    registry = ToolRegistry([tmp_path / "t"])
    first = registry.snapshot()
    assert await first.tools["used"].invoke({}) == "ran"
    with pytest.raises(ToolImportError):
        await first.tools["broken"].invoke({})
    modules_before = len(sys.modules)

    write_tool(tmp_path / "t", "added")  # an unrelated folder: a new generation
    second = registry.reload()
    assert second.generation == first.generation + 1
    assert "added" in second.tools
    # Cached, not imported again (and not logged again for the broken one).
    assert second.tools["used"] is first.tools["used"]
    assert await second.tools["used"].invoke({}) == "ran"
    assert marker.read_text() == "imported\n"
    caplog.clear()
    with caplog.at_level(logging.ERROR, logger=REGISTRY_LOG), pytest.raises(ToolImportError):
        await second.tools["broken"].invoke({})
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert len(sys.modules) == modules_before


async def test_an_edited_handler_is_imported_afresh_and_the_old_module_released(
    tmp_path: Path,
) -> None:
    import gc

    marker = tmp_path / "used.log"
    folder = write_tool(tmp_path / "t", "used", handler=side_effect_handler(marker))
    registry = ToolRegistry([tmp_path / "t"])
    assert await registry.snapshot().tools["used"].invoke({}) == "ran"
    old_modules = {n for n in sys.modules if n.startswith("_bot_toolsearch_folder_")}

    # A new description with the same handler file: a new Tool, the same imported module.
    config = json.loads((folder / "config.json").read_text())
    config["function"]["description"] = "Reworded."
    (folder / "config.json").write_text(json.dumps(config))
    snap = registry.reload()
    assert snap.tools["used"].description == "Reworded."
    assert await snap.tools["used"].invoke({}) == "ran"
    assert marker.read_text() == "imported\n"

    (folder / "handler.py").write_text(side_effect_handler(marker, "return 'edited'"))
    snap = registry.reload()
    assert await snap.tools["used"].invoke({}) == "edited"
    assert marker.read_text() == "imported\nimported\n"
    gc.collect()  # the old snapshots are unreferenced: their module leaves sys.modules
    assert not old_modules & set(sys.modules)


def test_a_name_taken_in_an_earlier_dir_or_with_a_dot_is_skipped_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    first = write_tool(tmp_path / "one", "music/play")
    second = write_tool(tmp_path / "two", "music/play")
    dotted = write_tool(tmp_path / "two", "music.play")  # would spell the same canonical name
    with caplog.at_level(logging.WARNING, REGISTRY_LOG):
        registry = ToolRegistry([tmp_path / "one", tmp_path / "two"])
        registry.reload()  # a rescan does not warn again
    snap = registry.snapshot()
    assert list(snap.tools) == ["music.play"]
    assert snap.sources["music.play"].endswith("one/music/play")
    assert str(first) in warnings_naming(caplog, second)[0]
    assert len(warnings_naming(caplog, second)) == 1
    assert len(warnings_naming(caplog, dotted)) == 1


def test_a_code_tool_search_is_kept_and_a_folder_one_skipped_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "tools"
    folder = write_tool(root, "tool_search")
    write_tool(root, "notes")
    real = Tool("tool_search", "A real tool with the reserved name.", None, lambda: "real")
    with caplog.at_level(logging.WARNING, REGISTRY_LOG):
        registry = ToolRegistry([root], extra_tools=[real])
        registry.reload()
    snap = registry.snapshot()
    assert list(snap.tools) == ["notes", "tool_search"]
    assert snap.tools["tool_search"] is real
    assert snap.sources["tool_search"] == "code"
    assert snap.catalog.names == ("notes",)
    assert warnings_naming(caplog, folder) == [
        f"tool 'tool_search' from folder:{folder} skipped: the name is already used by code"
    ]


def test_a_folder_tool_search_without_a_code_one_is_kept_as_a_code_one_is(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Every source alike: kept in the snapshot (callable without tool search), never in the
    # catalog; the doors leave it out while they offer the virtual tool.
    folder = write_tool(tmp_path / "tools", "tool_search")
    write_tool(tmp_path / "tools", "notes")
    with caplog.at_level(logging.WARNING, REGISTRY_LOG):
        snap = ToolRegistry([tmp_path / "tools"]).snapshot()
    assert list(snap.tools) == ["notes", "tool_search"]
    assert snap.sources["tool_search"] == f"folder:{folder}"
    assert snap.catalog.names == ("notes",)
    assert not warnings_naming(caplog, folder)


MCP_TOOL_SEARCH_SERVER = """\
from mcp.server.mcpserver import MCPServer

server = MCPServer("reserved-name")


@server.tool()
def tool_search(query: str) -> str:
    \"\"\"An MCP tool that happens to use the reserved name.\"\"\"
    return "mcp tool_search ran"


@server.tool()
def lookup(query: str) -> str:
    \"\"\"Look something up.\"\"\"
    return "found"


server.run()
"""


async def test_an_mcp_tool_search_is_namespaced_so_it_never_takes_the_reserved_name(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    script = tmp_path / "reserved_server.py"
    script.write_text(MCP_TOOL_SEARCH_SERVER, encoding="utf-8")
    config = {"name": "res", "command": sys.executable, "args": [str(script)], "timeout": 30.0}
    registry = ToolRegistry(mcp_servers=[config])
    try:
        with caplog.at_level(logging.WARNING, REGISTRY_LOG):
            snap = await registry.start()
        result = await snap.tools["res.tool_search"].invoke({"query": "x"})
    finally:
        await registry.aclose()
    # An MCP tool is always ``server.tool``: an ordinary catalog tool, never a collision.
    assert snap.catalog.names == ("res.tool_search", "res.lookup")
    assert "tool_search" not in snap.tools
    assert "mcp tool_search ran" in result
    assert not [r for r in caplog.records if "skipped" in r.getMessage()]


def test_a_namespace_folders_readme_describes_the_namespace(tmp_path: Path) -> None:
    write_tool(tmp_path, "music/play")
    write_tool(tmp_path, "music/radio/tune")
    write_tool(tmp_path, "plain")
    (tmp_path / "music" / "README.md").write_text(
        "# Music\n\nPlay songs and\nradio stations.\n\nMore details here.\n", encoding="utf-8"
    )
    registry = ToolRegistry([tmp_path])
    assert registry.snapshot().namespaces == {"music": "Play songs and radio stations."}

    (tmp_path / "music" / "radio" / "README").write_text("Tune in.\n", encoding="utf-8")
    changed = registry.reload()
    assert changed.generation == 1  # a README edit alone makes a new snapshot
    assert changed.namespaces == {
        "music": "Play songs and radio stations.",
        "music.radio": "Tune in.",
    }
