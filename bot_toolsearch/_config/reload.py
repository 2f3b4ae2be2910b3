"""`ConfigReloader`: the live, hot-reloaded settings of one ``config.toml``.

The watcher thread reads, parses and validates the file off the ask path and only then swaps
in a new frozen `BotSettings` with the next ``generation``; ``snapshot()`` is a plain attribute
read. A broken edit, or a deleted or unreadable file, keeps the last good snapshot, is logged
once with file:line:column and is recorded as ``last_error``.

A change is applied only once the file has been stable for ``settle`` seconds (its modification
time, size and inode unchanged over that moment): an editor or a script that writes the file
in several steps, without an atomic rename, can leave a half-written file that happens to
parse (a ``[tools] deny`` list cut short), and that file would otherwise be live until the next
event.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType

from bot_toolsearch._errors import ConfigError

from .file import decode_config, parse_config, read_config_text
from .link_chain import link_chain
from .settings import BotSettings
from .watch import DirectoryWatcher

__all__ = ["ConfigReloader"]

log = logging.getLogger("bot_toolsearch.config")

SETTLE_SECONDS = 0.5
"""How long the file must stay unchanged before a watched change is applied."""
_SETTLE_TRIES = 40
"""Most settle waits for one batch of events; a file still changing then is left to the
next event (its writer's next write raises one)."""

ReloadCallback = Callable[[BotSettings], object]
ReloadErrorCallback = Callable[[ConfigError], object]


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class ConfigReloader:
    """Hot-reloaded settings from one config file.

    The file is loaded when the reloader is built (generation 1); `start` begins watching.

    Args:
        path: the config file.
        debounce: seconds of quiet after the last file event before reloading.
        settle: seconds the file must stay unchanged before a watched change is applied
            (`SETTLE_SECONDS`); 0 applies it at once.
        subscribers: called with each new snapshot, in the watcher thread.
        env: environment for the fallbacks; ``os.environ`` (read at every reload) when omitted.

    Raises:
        ConfigError: the file cannot be read or is invalid at start.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        debounce: float = 0.2,
        settle: float = SETTLE_SECONDS,
        subscribers: Iterable[ReloadCallback] = (),
        env: dict[str, str] | None = None,
    ) -> None:
        if settle < 0:
            raise ValueError("settle must be >= 0")
        self._path = Path(path).absolute()
        self._debounce = debounce
        self._settle = settle
        self._stopping = threading.Event()
        self._env = env
        self._lock = threading.Lock()  # guards state changes and the waiter list
        self._reload_lock = threading.Lock()  # one reload at a time
        self._on_reload: list[ReloadCallback] = list(subscribers)
        self._on_error: list[ReloadErrorCallback] = []
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._watcher: DirectoryWatcher | None = None
        self._chain: frozenset[Path] = frozenset((self._path,))
        text = read_config_text(self._path)
        loaded, errors = parse_config(text, path=self._path, env=env)
        if loaded is None:
            raise errors[0]
        self._last_text: str | None = text
        self._current: BotSettings = loaded.settings.model_copy(update={"generation": 1})
        self._last_error: ConfigError | None = None

    @property
    def path(self) -> Path:
        """The watched config file (absolute)."""
        return self._path

    def snapshot(self) -> BotSettings:
        """The current settings: one reference read, no I/O or parsing."""
        return self._current

    @property
    def generation(self) -> int:
        """Generation of the current snapshot: 1 after the first load, +1 per reload."""
        generation: int = self._current.generation
        return generation

    @property
    def last_error(self) -> ConfigError | None:
        """Why the latest reload was refused; ``None`` after a successful one."""
        return self._last_error

    def subscribe(
        self, on_reload: ReloadCallback, *, on_error: ReloadErrorCallback | None = None
    ) -> Callable[[], None]:
        """Call ``on_reload(snapshot)`` after each reload (and ``on_error(err)`` on refusals).

        Callbacks run in the thread that reloaded; an exception in one is logged.

        Returns:
            A function that undoes the subscription.
        """
        with self._lock:
            self._on_reload.append(on_reload)
            if on_error is not None:
                self._on_error.append(on_error)

        def undo() -> None:
            with self._lock:
                with contextlib.suppress(ValueError):
                    self._on_reload.remove(on_reload)
                if on_error is not None:
                    with contextlib.suppress(ValueError):
                        self._on_error.remove(on_error)

        return undo

    async def wait_until(
        self,
        predicate: Callable[[ConfigReloader], bool],
        *,
        timeout: float | None = None,  # noqa: ASYNC109 -- tests and hosts wait with a bound
    ) -> None:
        """Wait until ``predicate(self)`` holds, rechecking after every reload attempt.

        Raises:
            TimeoutError: it did not hold within ``timeout`` seconds.
        """
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(timeout):
            while True:
                future: asyncio.Future[None] = loop.create_future()
                with self._lock:
                    # Checked under the lock that state changes take, so no wake-up is lost.
                    if predicate(self):
                        return
                    self._waiters.append((loop, future))
                try:
                    await future
                finally:
                    with self._lock, contextlib.suppress(ValueError):
                        self._waiters.remove((loop, future))

    async def wait_for_generation(
        self,
        generation: int,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 -- as in wait_until
    ) -> BotSettings:
        """Wait until the snapshot's generation is at least ``generation``; returns it.

        Raises:
            TimeoutError: no such reload within ``timeout`` seconds.
        """
        await self.wait_until(lambda r: r.generation >= generation, timeout=timeout)
        return self._current

    def reload(self) -> bool:
        """Re-read the file now (the watcher calls this); returns whether a new snapshot is live.

        An unchanged file is not reloaded. A missing, unreadable or invalid file keeps the
        current snapshot and sets `last_error`.
        """
        with self._reload_lock:
            try:
                text = decode_config(self._path.read_bytes(), self._path)
            except FileNotFoundError:
                if self._last_text is None and self._last_error is not None:
                    return False  # already reported
                self._last_text = None
                self._refuse(ConfigError("config file was deleted", path=str(self._path)))
                return False
            except OSError as exc:
                self._last_text = None
                message = f"cannot read config file: {exc.strerror}"
                self._refuse(ConfigError(message, path=str(self._path)))
                return False
            except ConfigError as err:
                self._last_text = None
                self._refuse(err)
                return False
            if text == self._last_text:
                return False
            self._last_text = text
            loaded, errors = parse_config(text, path=self._path, env=self._env)
            if loaded is None:
                self._refuse(errors[0], more=len(errors) - 1)
                return False
            with self._lock:
                new: BotSettings = loaded.settings.model_copy(
                    update={"generation": self.generation + 1}
                )
                self._current = new
                self._last_error = None
                callbacks = list(self._on_reload)
            log.info("reloaded %s (generation %d)", self._path, new.generation)
            self._wake()
            for callback in callbacks:
                try:
                    callback(new)
                except Exception:
                    log.exception("config reload subscriber %r failed", callback)
            return True

    def _refuse(self, error: ConfigError, *, more: int = 0) -> None:
        with self._lock:
            self._last_error = error
            callbacks = list(self._on_error)
            generation = self.generation
        extra = f" (and {more} more problem{'s' * (more > 1)})" if more else ""
        log.error("%s%s; keeping the settings of generation %d", error, extra, generation)
        self._wake()
        for callback in callbacks:
            try:
                callback(error)
            except Exception:
                log.exception("config reload error subscriber %r failed", callback)

    def _wake(self) -> None:
        with self._lock:
            waiters, self._waiters = self._waiters, []
        for loop, future in waiters:
            with contextlib.suppress(RuntimeError):  # that loop is closed: nobody waits
                loop.call_soon_threadsafe(_resolve, future)

    def _on_change(self, paths: frozenset[Path]) -> None:
        del paths  # the watcher only reports the paths of our file's link chain
        self._follow_links()
        if self._settled():
            self.reload()

    def _settled(self) -> bool:
        """Whether the file has stayed unchanged for ``settle`` seconds, waiting for it (in the
        watcher thread); ``False`` when stopping, or when it kept changing."""
        if not self._settle:
            return True
        before = self._signature()
        if before is not None and 0 <= time.time() - before[0] / 1e9 >= self._settle:
            return True  # written long enough ago (a clock skew never counts as old)
        for _ in range(_SETTLE_TRIES):
            if self._stopping.wait(self._settle):
                return False
            after = self._signature()
            if after == before:
                return True
            before = after
        log.warning("%s keeps changing; not reloaded until it settles", self._path)
        return False

    def _signature(self) -> tuple[int, int, int] | None:
        """The file's (modification time in ns, size, inode), through its links; ``None`` when
        it cannot be read (the reload then reports why)."""
        try:
            info = self._path.stat()
        except OSError:
            return None
        return (info.st_mtime_ns, info.st_size, info.st_ino)

    def _follow_links(self) -> None:
        """Watch every path the config file's symlinks lead through, as they are now."""
        chain = link_chain(self._path)
        self._chain = frozenset(chain)  # one reference swap; the watcher thread reads it
        if self._watcher is not None:
            self._watcher.add(path.parent for path in chain)

    def start(self) -> None:
        """Start watching the file's directory; a second call does nothing.

        A symlinked file is followed: an edit of its target, a re-pointed link and a swapped
        folder link (a Kubernetes ConfigMap update) are all noticed.
        """
        if self._watcher is not None:
            return
        self._stopping.clear()
        self._follow_links()
        self._watcher = DirectoryWatcher(
            sorted({path.parent for path in self._chain}),
            self._on_change,
            debounce=self._debounce,
            match=lambda path: path in self._chain,
        )
        self._watcher.start()
        self.reload()  # an edit between the first load and the watch would be missed otherwise

    def stop(self) -> None:
        """Stop watching; the last snapshot stays readable. Safe to call more than once."""
        self._stopping.set()
        watcher, self._watcher = self._watcher, None
        if watcher is not None:
            watcher.stop()

    def __enter__(self) -> ConfigReloader:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    async def __aenter__(self) -> ConfigReloader:
        self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await asyncio.to_thread(self.stop)
