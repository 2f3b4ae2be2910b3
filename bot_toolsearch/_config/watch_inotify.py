"""A Linux inotify observer on which re-adding a watch's own callback is a no-op, not a warning.

watchdog's recursive inotify watch adds a watch for every folder it finds below a newly
created one. When folders are nested quickly (``mkdir -p a/b/c``), the ``IN_CREATE`` of a
subfolder can arrive after that walk already watched it, and the watch is added again with
the same callback id. watchdog then overwrites the callback with itself and issues a
``RuntimeWarning`` from its inotify reader thread. Under ``-W error`` (pytest's
``filterwarnings = error``) the warning is raised as an exception, the reader thread dies and
every later event of the observer is lost. Registering the very callback a watch already
holds changes nothing, so this reader skips it; any other overwrite still warns as before.
"""

from __future__ import annotations

from watchdog.observers.api import BaseObserver
from watchdog.observers.inotify import InotifyEmitter
from watchdog.observers.inotify_c import CallbackId, InotifyFD, Mask, WatchCallback, WatchDescriptor

__all__ = ["IdempotentInotifyFD", "idempotent_inotify_observer"]


class IdempotentInotifyFD(InotifyFD):
    """An inotify reader on which adding a callback a watch already has does nothing."""

    def _add_callback(
        self, path: bytes, mask: Mask, callback: WatchCallback, id_: CallbackId
    ) -> WatchDescriptor:
        watch = self._get_or_create_watch(path, mask)
        if watch.callbacks.get(id_) is callback:
            return watch.wd
        return super()._add_callback(path, mask, callback, id_)


class _IdempotentInotifyObserver(BaseObserver):
    """watchdog's ``InotifyObserver`` with an `IdempotentInotifyFD` as its reader."""

    def __init__(self) -> None:
        self._inotify_fd = IdempotentInotifyFD()
        self._inotify_fd.start()
        super().__init__(InotifyEmitter, inotify_fd=self._inotify_fd)

    def on_thread_stop(self) -> None:
        super().on_thread_stop()
        self._inotify_fd.stop()
        self._inotify_fd.join()


def idempotent_inotify_observer() -> BaseObserver | None:
    """A new observer, or ``None`` when this watchdog's inotify internals are not the known ones."""
    if not all(hasattr(InotifyFD, name) for name in ("_add_callback", "_get_or_create_watch")):
        return None
    return _IdempotentInotifyObserver()
