"""The inotify reader used by DirectoryWatcher: re-adding a watch's own callback is a no-op."""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux")


class Callback:
    def on_event(self, event: object) -> None:
        del event

    def on_watch_deleted(self, wd: object) -> None:
        del wd

    def on_queue_overflow(self) -> None:
        pass


def test_readding_the_same_callback_does_not_warn(tmp_path: Path) -> None:
    from watchdog.observers.inotify_c import CallbackId, InotifyConstants, Mask

    from bot_toolsearch._config.watch_inotify import IdempotentInotifyFD

    reader = IdempotentInotifyFD()
    try:
        callback = Callback()
        mask = Mask(InotifyConstants.IN_CREATE)
        path = os.fsencode(tmp_path)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            first = reader.add_callback(path, mask, callback, CallbackId(1))
            again = reader.add_callback(path, mask, callback, CallbackId(1))
        assert first == again
        # Another callback under the same id is still a real overwrite and still warns.
        with pytest.warns(RuntimeWarning, match="already exists"):
            reader.add_callback(path, mask, Callback(), CallbackId(1))
    finally:
        reader.close()


def test_the_watcher_uses_the_idempotent_reader() -> None:
    from bot_toolsearch._config.watch import _new_observer
    from bot_toolsearch._config.watch_inotify import IdempotentInotifyFD

    observer = _new_observer()
    assert isinstance(getattr(observer, "_inotify_fd", None), IdempotentInotifyFD)
    observer.start()
    observer.stop()
    observer.join()
