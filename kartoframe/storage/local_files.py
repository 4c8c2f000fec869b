"""Publishing files on a local folder: atomic writes, parent folders, empty folders.

A local store publishes a key by writing a finished temp file and moving it into place
(``os.replace``) or, for a create, hard-linking it (``os.link`` fails if the key exists):
:func:`local_publish`. Folders are created on demand (:func:`local_makedirs`) and pruned
when a delete empties them (:func:`prune_empty_dirs`), so local listings look like an
object store's.
"""

from __future__ import annotations

import contextlib
import os
import uuid as _uuid
from collections.abc import Callable
from typing import TypeVar

__all__ = ["local_makedirs", "local_publish", "prune_empty_dirs"]

T = TypeVar("T")


def prune_empty_dirs(directory: str, root: str) -> None:
    """Remove empty folders from ``directory`` up to (not including) ``root``.

    Object stores have no empty "directories"; removing them after a delete keeps local
    listings the same. A folder a concurrent writer fills again is left alone (rmdir
    fails on a non-empty folder), and writers recreate a folder pruned under them (see
    :func:`local_makedirs`).
    """
    while directory != root and directory.startswith(root + os.sep):
        try:
            os.rmdir(directory)
        except OSError:
            return
        directory = os.path.dirname(directory)


def local_makedirs(path: str, write: Callable[[], T], attempts: int = 5) -> T:
    """Create the parent folders of ``path`` and call ``write``.

    ``write`` is repeated if the folder vanished before it created its file (a
    concurrent delete pruned the then-empty folder).
    """
    for attempt in range(attempts):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        try:
            return write()
        except FileNotFoundError:
            if attempt + 1 == attempts or os.path.isdir(os.path.dirname(path)):
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def local_publish(path: str, data: bytes, replace: bool) -> bool:
    """Write data to path atomically; without replace only if it is absent (the result)."""
    directory = os.path.dirname(path)
    tmp = os.path.join(directory, f".{os.path.basename(path)}.tmp-{_uuid.uuid4().hex}")

    def _write_tmp() -> None:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())

    local_makedirs(tmp, _write_tmp)
    try:
        if replace:
            os.replace(tmp, path)
            return True
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        return True
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
