"""DirectoryWatcher against the real watchdog observer: waits on a queue, never sleeps."""

from __future__ import annotations

import os
import queue
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot_toolsearch._config.watch import DirectoryWatcher

TIMEOUT = 10.0


class Changes:
    """Collects batches from the watcher thread."""

    def __init__(self) -> None:
        self.batches: queue.Queue[frozenset[Path]] = queue.Queue()

    def __call__(self, paths: frozenset[Path]) -> None:
        self.batches.put(paths)

    def next(self) -> frozenset[Path]:
        return self.batches.get(timeout=TIMEOUT)

    def until(self, path: Path) -> None:
        """Wait for a batch that contains ``path``."""
        while path not in self.next():
            pass


@pytest.fixture
def changes() -> Changes:
    return Changes()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    folder = tmp_path / "watched"
    folder.mkdir()
    return folder


def toml_only(path: Path) -> bool:
    return path.suffix == ".toml"


@pytest.fixture
def watcher(folder: Path, changes: Changes) -> Iterator[DirectoryWatcher]:
    with DirectoryWatcher([folder], changes, debounce=0.05, match=toml_only) as watcher:
        yield watcher


def test_rewrite_is_reported(folder: Path, changes: Changes, watcher: DirectoryWatcher) -> None:
    (folder / "a.toml").write_text("x = 1\n")
    assert changes.next() == {folder / "a.toml"}


def test_rename_over_reports_the_destination(
    folder: Path, changes: Changes, watcher: DirectoryWatcher
) -> None:
    target = folder / "config.toml"
    temp = folder / ".config.toml.swp"
    temp.write_text("x = 2\n")
    os.replace(temp, target)
    changes.until(target)


def test_match_filters_paths(folder: Path, changes: Changes, watcher: DirectoryWatcher) -> None:
    (folder / "notes.txt").write_text("ignored")
    (folder / "b.toml").write_text("y = 1\n")
    assert changes.next() == {folder / "b.toml"}


def test_debounce_batches_a_burst(folder: Path, changes: Changes) -> None:
    paths = [folder / f"f{i}.toml" for i in range(20)]
    # A debounce far longer than the burst takes, so the burst is one batch.
    with DirectoryWatcher([folder], changes, debounce=1.0, match=toml_only):
        for path in paths:
            path.write_text("v = 1\n")
        assert changes.next() == set(paths)
    assert changes.batches.empty()


def test_deleted_and_recreated_directory_is_watched_again(
    folder: Path, changes: Changes, watcher: DirectoryWatcher
) -> None:
    (folder / "a.toml").write_text("x = 1\n")
    changes.until(folder / "a.toml")
    shutil.rmtree(folder)
    changes.until(folder / "a.toml")  # the deletion
    folder.mkdir()
    (folder / "c.toml").write_text("z = 1\n")
    changes.until(folder / "c.toml")
    (folder / "c.toml").write_text("z = 2\n")  # the new directory is really watched
    changes.until(folder / "c.toml")


def test_directory_missing_at_start_is_watched_once_created(
    tmp_path: Path, changes: Changes
) -> None:
    later = tmp_path / "later"
    with DirectoryWatcher([later], changes, debounce=0.05, match=toml_only):
        later.mkdir()
        (later / "x.toml").write_text("a = 1\n")
        changes.until(later / "x.toml")


def test_recursive_watch_sees_subfolders(tmp_path: Path, changes: Changes) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    with DirectoryWatcher([tmp_path], changes, debounce=0.05, recursive=True, match=toml_only):
        (tmp_path / "a" / "b" / "deep.toml").write_text("d = 1\n")
        changes.until(tmp_path / "a" / "b" / "deep.toml")


def test_a_failing_callback_does_not_stop_the_watcher(folder: Path) -> None:
    seen: queue.Queue[frozenset[Path]] = queue.Queue()
    calls = 0

    def flaky(paths: frozenset[Path]) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("boom")
        seen.put(paths)

    with DirectoryWatcher([folder], flaky, debounce=0.05, match=toml_only):
        (folder / "a.toml").write_text("1")
        # The first batch raised; keep writing until a later batch gets through (bounded, so a
        # watcher that died with the callback fails the test instead of hanging it).
        delivered: frozenset[Path] = frozenset()
        for _ in range(int(TIMEOUT)):
            (folder / "a.toml").write_text("2")
            try:
                delivered = seen.get(timeout=1.0)
                break
            except queue.Empty:
                continue
    assert folder / "a.toml" in delivered
    assert calls >= 2


def test_reading_a_file_is_not_a_change(folder: Path, changes: Changes) -> None:
    target = folder / "a.toml"
    target.write_text("x = 1\n")
    with DirectoryWatcher([folder], changes, debounce=0.05, match=toml_only):
        target.read_text()
        (folder / "marker.toml").write_text("m = 1\n")
        assert changes.next() == {folder / "marker.toml"}


def test_stop_is_idempotent_and_joins(folder: Path, changes: Changes) -> None:
    watcher = DirectoryWatcher([folder], changes)
    watcher.stop()  # before start
    watcher.start()
    watcher.start()  # second start does nothing
    before = {t.name for t in threading.enumerate()}
    assert "bot_toolsearch-watch" in before
    watcher.stop()
    watcher.stop()
    assert "bot_toolsearch-watch" not in {t.name for t in threading.enumerate()}


def test_negative_debounce_is_refused(folder: Path, changes: Changes) -> None:
    with pytest.raises(ValueError, match="debounce"):
        DirectoryWatcher([folder], changes, debounce=-1)


def test_nested_folders_made_quickly_do_not_stop_a_recursive_watch(
    tmp_path: Path, changes: Changes
) -> None:
    # Deep folders made one level at a time race watchdog's recursive walk, which then adds
    # some watches twice; under filterwarnings=error that used to kill its reader thread.
    with DirectoryWatcher([tmp_path], changes, debounce=0.05, recursive=True, match=toml_only):
        for i in range(1000):
            nested = tmp_path / f"n{i}"
            for _ in range(6):
                nested.mkdir()
                nested = nested / "x"
        final = tmp_path / "n0" / "x" / "x" / "final.toml"
        final.write_text("done = true\n")
        changes.until(final)


def test_added_directory_is_watched_and_its_files_announced(
    tmp_path: Path, folder: Path, changes: Changes, watcher: DirectoryWatcher
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "early.toml").write_text("x = 1\n")  # there before the watch: announced once
    watcher.add([other, folder])  # an already watched directory is not added twice
    changes.until(other / "early.toml")
    (other / "late.toml").write_text("y = 1\n")
    changes.until(other / "late.toml")
    (folder / "a.toml").write_text("z = 1\n")
    changes.until(folder / "a.toml")


def test_directory_added_before_start_is_watched(tmp_path: Path, changes: Changes) -> None:
    other = tmp_path / "other"
    other.mkdir()
    watcher = DirectoryWatcher([], changes, debounce=0.05, match=toml_only)
    watcher.add([other])
    with watcher:
        (other / "a.toml").write_text("x = 1\n")
        changes.until(other / "a.toml")
