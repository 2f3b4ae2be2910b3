"""`link_chain`: the paths whose replacement changes what a (possibly symlinked) path opens.

A config file is often a symlink: to a file kept elsewhere, or, in a Kubernetes ConfigMap
volume, ``config.toml -> ..data/config.toml`` with ``..data -> ..2026_12_02_…`` swapped
atomically on each update. A watcher on the link's own folder sees neither an edit of the
target nor the swap of ``..data``; watching every path of the chain, in every folder it
passes through, sees both.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["link_chain"]

_MAX_LINKS = 40
"""Symlinks followed before giving up, as the Linux kernel does (``ELOOP``)."""


def link_chain(path: str | os.PathLike[str]) -> tuple[Path, ...]:
    """The absolute path, each symlink met while resolving it, and the file it ends at.

    Resolves component by component as the operating system does, so a symlinked folder on
    the way (``..data``) is listed too. A missing component ends resolution lexically; a loop
    stops after 40 links. Never raises for a path that cannot be resolved.

    Returns:
        The paths in the order met, without repeats; the first is ``path`` made absolute and
        the last is where it currently leads (the same path when nothing is a link).
    """
    start = Path(path).absolute()
    found = [start]
    pending = list(start.parts)
    current = Path(pending.pop(0))  # the root
    links = 0
    while pending:
        name = pending.pop(0)
        if name in ("", "."):
            continue
        if name == "..":
            current = current.parent  # ``current`` is already resolved: its parent is real
            continue
        candidate = current / name
        try:
            target = os.readlink(candidate)
        except OSError:  # not a link, or missing: resolution goes on lexically
            current = candidate
            continue
        links += 1
        found.append(candidate)
        if links > _MAX_LINKS:
            current = candidate
            pending.clear()
            break
        parts = list(Path(target).parts)
        if parts and Path(target).is_absolute():
            current = Path(parts.pop(0))
        pending[:0] = parts
    found.append(current)
    return tuple(dict.fromkeys(found))
