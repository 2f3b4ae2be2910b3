"""ConfigReloader with real files and the real watchdog observer; waits on its events."""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from bot_toolsearch import BotSettings, ConfigError
from bot_toolsearch._config.env import ENV_FALLBACKS, _reset_env_log
from bot_toolsearch.config import ConfigReloader, set_value

TIMEOUT = 10.0


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ENV_FALLBACKS:
        monkeypatch.delenv(var, raising=False)
    _reset_env_log()


# Blocking file helpers: the tests are async only to await the reloader's events.
def write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def remove(path: Path) -> None:
    path.unlink()


def make_folder(path: Path) -> None:
    path.mkdir()


def config_text(max_results: int, *, enabled: bool = True) -> str:
    return (
        "# tuned while the bot runs\n[skills]\n"
        f"tool_search_enabled = {str(enabled).lower()}\n"
        f"tool_search_max_results = {max_results}\n"
    )


@pytest.fixture
def path(tmp_path: Path) -> Path:
    path = tmp_path / "config.toml"
    write(path, config_text(5))
    return path


@pytest.fixture
async def reloader(path: Path) -> AsyncIterator[ConfigReloader]:
    async with ConfigReloader(path, debounce=0.05) as reloader:
        yield reloader


def max_results(reloader: ConfigReloader) -> int:
    return reloader.snapshot().skills.tool_search_max_results


async def test_first_load_is_generation_one(reloader: ConfigReloader) -> None:
    assert reloader.generation == 1
    assert reloader.snapshot().generation == 1
    assert reloader.snapshot().skills.tool_search_enabled is True
    assert reloader.last_error is None


async def test_snapshot_is_a_reference_read(reloader: ConfigReloader) -> None:
    assert reloader.snapshot() is reloader.snapshot()


async def test_edit_by_rewrite(path: Path, reloader: ConfigReloader) -> None:
    write(path, config_text(7))
    new = await reloader.wait_for_generation(2, timeout=TIMEOUT)
    assert new.skills.tool_search_max_results == 7
    assert reloader.snapshot() is new


async def test_edit_by_rename_over(path: Path, reloader: ConfigReloader) -> None:
    temp = path.with_name(".config.toml.tmp")
    write(temp, config_text(9))
    os.replace(temp, path)
    await reloader.wait_for_generation(2, timeout=TIMEOUT)
    assert max_results(reloader) == 9


async def test_edit_by_set_value(path: Path, reloader: ConfigReloader) -> None:
    set_value(path, "skills.tool_search_max_results", 8)
    await reloader.wait_for_generation(2, timeout=TIMEOUT)
    assert max_results(reloader) == 8
    assert "# tuned while the bot runs" in read(path)


async def test_broken_edit_keeps_last_good_then_good_edit_is_picked_up(
    path: Path, reloader: ConfigReloader, caplog: pytest.LogCaptureFixture
) -> None:
    good = reloader.snapshot()
    with caplog.at_level(logging.ERROR, logger="bot_toolsearch.config"):
        write(path, config_text(5) + "[broken\n")
        await reloader.wait_until(lambda r: r.last_error is not None, timeout=TIMEOUT)
    error = reloader.last_error
    assert error is not None
    assert (error.path, error.line) == (str(path), 5)
    assert error.column is not None
    assert reloader.snapshot() is good
    assert reloader.generation == 1
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1
    assert f"{path}:5:" in errors[0].getMessage()
    assert "keeping the settings of generation 1" in errors[0].getMessage()

    write(path, config_text(6))
    await reloader.wait_for_generation(2, timeout=TIMEOUT)
    assert max_results(reloader) == 6
    assert reloader.last_error is None


async def test_invalid_value_is_refused_with_its_line(path: Path, reloader: ConfigReloader) -> None:
    write(path, config_text(0))
    await reloader.wait_until(lambda r: r.last_error is not None, timeout=TIMEOUT)
    assert reloader.last_error is not None
    assert reloader.last_error.key == "skills.tool_search_max_results"
    assert reloader.last_error.line == 4
    assert max_results(reloader) == 5


async def test_half_written_file_does_not_drop_keys(path: Path, reloader: ConfigReloader) -> None:
    # Cut mid-value, as a reader might see a file being written in place: refused, and the
    # keys of the last good snapshot stay (the reference design reset them to defaults).
    write(path, config_text(7)[:-3])
    await reloader.wait_until(lambda r: r.last_error is not None, timeout=TIMEOUT)
    assert max_results(reloader) == 5
    assert reloader.snapshot().skills.tool_search_enabled is True


async def test_deletion_then_recreation(path: Path, reloader: ConfigReloader) -> None:
    before = reloader.snapshot()
    remove(path)
    await reloader.wait_until(lambda r: r.last_error is not None, timeout=TIMEOUT)
    assert reloader.last_error is not None
    assert "deleted" in reloader.last_error.message
    assert reloader.snapshot() is before
    write(path, config_text(5))  # the same content as before
    await reloader.wait_for_generation(2, timeout=TIMEOUT)
    assert reloader.last_error is None
    assert max_results(reloader) == 5


async def test_fifty_rapid_edits_end_on_the_last_value(
    path: Path, reloader: ConfigReloader
) -> None:
    for value in range(1, 51):
        write(path, config_text(value))
    await reloader.wait_until(lambda r: max_results(r) == 50, timeout=TIMEOUT)
    assert reloader.snapshot().skills.tool_search_max_results == 50
    assert reloader.last_error is None


async def test_snapshot_taken_before_a_reload_is_unchanged_and_frozen(
    path: Path, reloader: ConfigReloader
) -> None:
    """The invariant an ask relies on: it keeps the snapshot it read at its start."""
    in_flight = reloader.snapshot()
    write(path, config_text(3, enabled=False))
    await reloader.wait_for_generation(2, timeout=TIMEOUT)
    assert in_flight.skills.tool_search_max_results == 5
    assert in_flight.skills.tool_search_enabled is True
    assert in_flight.generation == 1
    with pytest.raises(ValidationError):
        in_flight.skills.tool_search_max_results = 3
    assert reloader.snapshot().skills.tool_search_max_results == 3


async def test_subscribers_and_undo(path: Path) -> None:
    seen: list[BotSettings] = []
    refused: list[ConfigError] = []
    async with ConfigReloader(path, debounce=0.05, subscribers=[seen.append]) as reloader:
        extra: list[int] = []
        undo = reloader.subscribe(lambda s: extra.append(s.generation), on_error=refused.append)
        write(path, config_text(2))
        await reloader.wait_for_generation(2, timeout=TIMEOUT)
        undo()
        write(path, "[skills\n")
        await reloader.wait_until(lambda r: r.last_error is not None, timeout=TIMEOUT)
        write(path, config_text(3))
        await reloader.wait_for_generation(3, timeout=TIMEOUT)
    # Subscribers run right after the swap, in the watcher thread, before the next event.
    assert [s.skills.tool_search_max_results for s in seen] == [2, 3]
    assert extra == [2]
    assert refused == []  # undone before the broken edit


async def test_a_failing_subscriber_does_not_block_reloads(path: Path) -> None:
    def boom(settings: BotSettings) -> None:
        raise RuntimeError("subscriber bug")

    async with ConfigReloader(path, debounce=0.05, subscribers=[boom]) as reloader:
        write(path, config_text(2))
        await reloader.wait_for_generation(2, timeout=TIMEOUT)
        write(path, config_text(4))
        await reloader.wait_for_generation(3, timeout=TIMEOUT)
    assert max_results(reloader) == 4


async def test_unchanged_content_is_not_a_new_generation(
    path: Path, reloader: ConfigReloader
) -> None:
    assert reloader.reload() is False
    write(path, config_text(5))  # same bytes
    assert reloader.reload() is False
    assert reloader.generation == 1


async def test_wait_times_out_with_timeout_error(reloader: ConfigReloader) -> None:
    with pytest.raises(TimeoutError):
        await reloader.wait_for_generation(99, timeout=0.05)


def test_invalid_file_at_start_raises(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    write(path, "[skills]\ntool_search_max_results = 0\n")
    with pytest.raises(ConfigError, match="must be at least 1"):
        ConfigReloader(path)
    with pytest.raises(ConfigError, match="not found"):
        ConfigReloader(tmp_path / "absent.toml")


def test_sync_use_and_idempotent_stop(path: Path) -> None:
    reloader = ConfigReloader(path)
    reloader.stop()
    with reloader:
        assert reloader.snapshot().generation == 1
    reloader.stop()
    assert reloader.snapshot().generation == 1  # still readable after stop


async def test_edits_while_stopped_are_picked_up_by_start(path: Path) -> None:
    reloader = ConfigReloader(path, debounce=0.05)
    write(path, config_text(4))
    async with reloader:
        assert max_results(reloader) == 4
        assert reloader.generation == 2


async def test_unreadable_file_keeps_the_last_good_snapshot(
    path: Path, reloader: ConfigReloader, caplog: pytest.LogCaptureFixture
) -> None:
    # chmod 000 does not stop root, who runs these tests, so the file is made unreadable for
    # everyone instead: a symlink to itself, renamed over it (reading it fails with ELOOP).
    good = reloader.snapshot()
    loop = path.with_name("loop.toml")
    loop.symlink_to(path.name)  # once renamed, config.toml -> config.toml
    with caplog.at_level(logging.ERROR, logger="bot_toolsearch.config"):
        os.replace(loop, path)
        await reloader.wait_until(lambda r: r.last_error is not None, timeout=TIMEOUT)
    assert reloader.last_error is not None
    assert reloader.last_error.message.startswith("cannot read config file: ")
    assert reloader.last_error.path == str(path)
    assert reloader.snapshot() is good
    assert any("cannot read config file" in r.getMessage() for r in caplog.records)
    remove(path)
    write(path, config_text(6))
    await reloader.wait_for_generation(2, timeout=TIMEOUT)
    assert reloader.last_error is None
    assert max_results(reloader) == 6


async def test_config_replaced_by_a_folder_is_refused(path: Path, reloader: ConfigReloader) -> None:
    good = reloader.snapshot()
    remove(path)
    make_folder(path)
    await reloader.wait_until(
        lambda r: r.last_error is not None and "deleted" not in r.last_error.message,
        timeout=TIMEOUT,
    )
    assert reloader.last_error is not None
    assert "cannot read config file" in reloader.last_error.message
    assert reloader.snapshot() is good


def make_link(link: Path, target: str) -> None:
    link.symlink_to(target)


def swap_link(link: Path, target: str) -> None:
    """Re-point ``link`` atomically (a new link renamed over it), as Kubernetes does."""
    temp = link.with_name(link.name + "_tmp")
    temp.symlink_to(target)
    os.replace(temp, link)


async def test_a_symlinked_file_follows_edits_of_its_target(tmp_path: Path) -> None:
    make_folder(tmp_path / "real")
    target = tmp_path / "real" / "bot.toml"
    write(target, config_text(5))
    link = tmp_path / "config.toml"
    make_link(link, "real/bot.toml")
    async with ConfigReloader(link, debounce=0.05) as reloader:
        temp = target.with_name(".bot.toml.tmp")  # an editor's save, in the target's folder
        write(temp, config_text(6))
        os.replace(temp, target)
        await reloader.wait_for_generation(2, timeout=TIMEOUT)
        assert max_results(reloader) == 6
        set_value(link, "skills.tool_search_max_results", 7)  # written through the link
        await reloader.wait_for_generation(3, timeout=TIMEOUT)
        assert max_results(reloader) == 7
        assert link.is_symlink()


async def test_a_re_pointed_link_is_followed_to_its_new_folder(tmp_path: Path) -> None:
    for name, value in (("a", 5), ("b", 8)):
        make_folder(tmp_path / name)
        write(tmp_path / name / "bot.toml", config_text(value))
    link = tmp_path / "config.toml"
    make_link(link, "a/bot.toml")
    async with ConfigReloader(link, debounce=0.05) as reloader:
        swap_link(link, "b/bot.toml")
        await reloader.wait_for_generation(2, timeout=TIMEOUT)
        assert max_results(reloader) == 8
        # The new target's folder is watched now: an edit there is seen too.
        write(tmp_path / "b" / "bot.toml", config_text(9))
        await reloader.wait_for_generation(3, timeout=TIMEOUT)
        assert max_results(reloader) == 9


async def test_a_configmap_style_update_is_seen(tmp_path: Path) -> None:
    # The layout a Kubernetes ConfigMap volume has; an update writes a new timestamped
    # folder and swaps the ..data link. No event ever names config.toml itself.
    volume = tmp_path / "volume"
    make_folder(volume)
    make_folder(volume / "..2026_12_02_a")
    write(volume / "..2026_12_02_a" / "config.toml", config_text(5))
    make_link(volume / "..data", "..2026_12_02_a")
    make_link(volume / "config.toml", "..data/config.toml")
    async with ConfigReloader(volume / "config.toml", debounce=0.05) as reloader:
        for generation, stamp, value in ((2, "b", 6), (3, "c", 7)):
            make_folder(volume / f"..2026_12_02_{stamp}")
            write(volume / f"..2026_12_02_{stamp}" / "config.toml", config_text(value))
            swap_link(volume / "..data", f"..2026_12_02_{stamp}")
            await reloader.wait_for_generation(generation, timeout=TIMEOUT)
            assert max_results(reloader) == value
        assert reloader.last_error is None


def write_in_two_steps(path: Path, first: str, rest: str, pause: float) -> None:
    """A writer that rewrites the file in place, pausing between two writes (no rename)."""
    import time

    with path.open("w", encoding="utf-8") as handle:
        handle.write(first)
        handle.flush()
        os.fsync(handle.fileno())
        time.sleep(pause)
        handle.write(rest)


async def test_a_half_written_file_that_parses_is_never_applied(path: Path) -> None:
    """Issue 27: the first half (no deny list yet) parsed and was live until the rest came."""
    import asyncio

    denied = '[tools]\ndeny = ["admin.*"]\n'
    write(path, config_text(5) + denied)
    seen: list[BotSettings] = []
    async with ConfigReloader(path, debounce=0.05, settle=1.5, subscribers=[seen.append]) as r:
        assert r.snapshot().tools.deny == ("admin.*",)
        # The first half alone parses: every [skills] key, no [tools] table yet.
        await asyncio.to_thread(write_in_two_steps, path, config_text(7), denied, 0.5)
        await r.wait_for_generation(2, timeout=TIMEOUT)
        assert r.generation == 2
    assert [(s.skills.tool_search_max_results, s.tools.deny) for s in seen] == [(7, ("admin.*",))]


async def test_a_settled_edit_still_applies_and_stop_ends_a_wait(path: Path) -> None:
    reloader = ConfigReloader(path, debounce=0.05, settle=0.2)
    async with reloader:
        write(path, config_text(6))
        await reloader.wait_for_generation(2, timeout=TIMEOUT)
    assert max_results(reloader) == 6
    with pytest.raises(ValueError, match="settle"):
        ConfigReloader(path, settle=-1)
