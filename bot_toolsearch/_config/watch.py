"""`DirectoryWatcher`: watchdog on whole directories, filtered and debounced.

Editors save by writing a temporary file and renaming it over the original, so a single file
is watched through its directory, and move *destinations* count as changes. Events are
collected until none has arrived for ``debounce`` seconds; then ``on_change`` runs once, in
the watcher's own worker thread, with every changed path. A watched directory that is deleted
(or replaced) is noticed by a cheap periodic check and watched again when it reappears.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from types import TracebackType

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirModifiedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver, ObservedWatch

__all__ = ["DirectoryWatcher"]

log = logging.getLogger("bot_toolsearch.watch")

# Opening or reading a file is not a change (and the reloader reads the file it watches).
_EVENTS: list[type[FileSystemEvent]] = [
    FileCreatedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileDeletedEvent,
    FileClosedEvent,
    DirCreatedEvent,
    DirModifiedEvent,
    DirMovedEvent,
    DirDeletedEvent,
]
_RECHECK = 0.25
"""Seconds between checks that each watched directory still is the one being watched."""


def _new_observer() -> BaseObserver:
    """The platform's observer; on Linux one whose recursive watches survive nested folders.

    When folders are nested quickly (``mkdir -p a/b/c``), watchdog's recursive inotify watch
    can register the same callback for a subfolder twice and warns with a RuntimeWarning from
    its reader thread. Under ``-W error`` (pytest's ``filterwarnings = error``) that warning is
    an exception which ends the reader thread, and every later event is lost. Registering the
    callback a watch already has is harmless, so this observer treats it as a no-op.
    """
    if sys.platform.startswith("linux"):
        try:
            from .watch_inotify import idempotent_inotify_observer
        except ImportError:  # no usable inotify (old libc): watchdog's own choice below
            pass
        else:
            observer = idempotent_inotify_observer()
            if observer is not None:
                return observer
    return Observer()


class _Handler(FileSystemEventHandler):
    def __init__(
        self,
        directory: Path,
        feed: Callable[[Iterator[Path]], None],
        gone: Callable[[Path], None],
    ) -> None:
        self._directory = directory
        self._feed = feed
        self._gone = gone

    def on_any_event(self, event: FileSystemEvent) -> None:
        paths = [event.src_path, getattr(event, "dest_path", "")]
        if (
            isinstance(event, DirDeletedEvent | DirMovedEvent)
            and Path(os.fsdecode(event.src_path)) == self._directory
        ):
            # The OS watch died with the directory; a new one with the same inode number
            # would otherwise look like the old one to the periodic check.
            self._gone(self._directory)
        self._feed(Path(os.fsdecode(p)) for p in paths if p)


class DirectoryWatcher:
    """Watches directories and reports changed paths in debounced batches.

    Args:
        directories: directories to watch; one that does not exist yet is watched once it
            appears.
        on_change: called with the changed paths (``frozenset[Path]``) in the watcher's worker
            thread; an exception is logged and the watcher goes on.
        debounce: seconds without events before a batch is reported.
        recursive: also watch subdirectories.
        match: keeps only the paths it returns true for; every path when ``None``.
    """

    def __init__(
        self,
        directories: Sequence[Path],
        on_change: Callable[[frozenset[Path]], None],
        *,
        debounce: float = 0.2,
        recursive: bool = False,
        match: Callable[[Path], bool] | None = None,
    ) -> None:
        if debounce < 0:
            raise ValueError("debounce must be >= 0")
        self._dirs = [Path(d).absolute() for d in directories]
        self._on_change = on_change
        self._debounce = debounce
        self._recursive = recursive
        self._match = match
        self._cond = threading.Condition()
        self._pending: set[Path] = set()
        self._last_event = 0.0
        self._stopping = False
        self._observer: BaseObserver | None = None
        self._worker: threading.Thread | None = None
        # directory -> (its watch, (st_dev, st_ino) when scheduled); None while missing
        self._watches: dict[Path, tuple[ObservedWatch, tuple[int, int]] | None] = {}
        # directory -> its listing when it was watched again, compared on the next tick
        self._fresh: dict[Path, dict[Path, tuple[int, int]]] = {}
        self._gone: set[Path] = set()  # directories whose watch died since the last tick

    def start(self) -> None:
        """Start watching; a second call does nothing."""
        with self._cond:
            if self._worker is not None:
                return
            self._stopping = False
            self._observer = _new_observer()
            self._observer.daemon = True
            for directory in self._dirs:
                self._watches[directory] = None
                self._schedule(self._observer, directory, announce=False)
            self._observer.start()
            self._worker = threading.Thread(
                target=self._run, args=(self._observer,), name="bot_toolsearch-watch", daemon=True
            )
            self._worker.start()

    def stop(self) -> None:
        """Stop watching and join the threads; safe to call more than once, or before start."""
        with self._cond:
            worker, observer = self._worker, self._observer
            self._worker = self._observer = None
            self._stopping = True
            self._pending.clear()
            self._cond.notify_all()
        if observer is not None:
            observer.stop()
            observer.join()
        if worker is not None and worker is not threading.current_thread():
            worker.join()

    def add(self, directories: Iterable[Path]) -> None:
        """Also watch ``directories`` (those not watched yet), from the next periodic check.

        What a newly watched directory already holds is reported once, as for a directory
        that reappears, so nothing written meanwhile is missed.
        """
        with self._cond:
            for directory in (Path(d).absolute() for d in directories):
                if directory not in self._dirs:
                    self._dirs.append(directory)
                    if self._worker is not None:
                        self._watches[directory] = None

    def __enter__(self) -> DirectoryWatcher:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _feed(self, paths: Iterator[Path]) -> None:
        kept = [p for p in paths if self._match is None or self._match(p)]
        if not kept:
            return
        with self._cond:
            self._pending.update(kept)
            self._last_event = time.monotonic()
            self._cond.notify_all()

    def _schedule(self, observer: BaseObserver, directory: Path, *, announce: bool) -> None:
        """Watch ``directory`` if it exists; ``announce`` reports what is already in it."""
        try:
            stat = directory.stat()
            watch = observer.schedule(
                _Handler(directory, self._feed, self._mark_gone),
                str(directory),
                recursive=self._recursive,
                event_filter=_EVENTS,
            )
        except OSError:
            return  # missing (or gone again): checked again on the next tick
        self._watches[directory] = (watch, (stat.st_dev, stat.st_ino))
        if announce:
            # Files written before the new watch existed would otherwise go unnoticed. The
            # emitter adds its OS watch in its own thread a moment later, so the next tick
            # scans again and reports what changed in between.
            listing = self._scan(directory)
            self._fresh[directory] = listing
            self._feed(iter([directory, *listing]))

    def _mark_gone(self, directory: Path) -> None:
        with self._cond:
            self._gone.add(directory)

    def _scan(self, directory: Path) -> dict[Path, tuple[int, int]]:
        try:
            found = list(directory.rglob("*") if self._recursive else directory.iterdir())
        except OSError:
            return {}
        listing = {}
        for path in found:
            with contextlib.suppress(OSError):
                info = path.stat()
                listing[path] = (info.st_mtime_ns, info.st_size)
        return listing

    def _recheck(self, observer: BaseObserver) -> None:
        """Re-watch directories that were deleted, replaced or created since the last check.

        Runs without ``self._cond`` held: the observer holds its own lock while it dispatches
        to ``_feed``, which takes ours, so holding ours here could deadlock.
        """
        for directory, before in list(self._fresh.items()):
            del self._fresh[directory]
            after = self._scan(directory)
            changed = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
            self._feed(iter(changed))
        with self._cond:
            gone, self._gone = self._gone, set()
            entries = list(self._watches.items())
        for directory, entry in entries:
            try:
                stat = directory.stat()
                current: tuple[int, int] | None = (stat.st_dev, stat.st_ino)
            except OSError:
                current = None
            if entry is not None and entry[1] == current and directory not in gone:
                continue
            if entry is not None:
                with contextlib.suppress(KeyError):  # the emitter may have stopped itself
                    observer.unschedule(entry[0])
                self._watches[directory] = None
            if current is not None and not self._stopping:
                self._schedule(observer, directory, announce=True)

    def _run(self, observer: BaseObserver) -> None:
        next_check = time.monotonic() + _RECHECK
        while True:
            batch: frozenset[Path] = frozenset()
            with self._cond:
                while not self._stopping:
                    now = time.monotonic()
                    if now >= next_check:
                        break
                    if self._pending and now - self._last_event >= self._debounce:
                        batch = frozenset(self._pending)
                        self._pending.clear()
                        break
                    wait = next_check - now
                    if self._pending:
                        wait = min(wait, self._last_event + self._debounce - now)
                    self._cond.wait(max(wait, 0.001))
                if self._stopping:
                    return
            if not batch:
                self._recheck(observer)
                next_check = time.monotonic() + _RECHECK
                continue
            try:
                self._on_change(batch)
            except Exception:
                log.exception("directory watcher callback failed for %d path(s)", len(batch))
