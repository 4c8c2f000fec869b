"""A real fsspec filesystem wrapper that injects failures, for storage-layer tests.

:class:`FaultyFileSystem` is fsspec's own :class:`~fsspec.implementations.dirfs.DirFileSystem`
with an empty prefix (so it delegates every call, unchanged, to the wrapped filesystem)
plus a list of :class:`Fault` rules checked before the fsspec methods the storage layer
uses. It is handed to ``kf.Store(url, filesystem=...)``; nothing of kartoframe is mocked.

Loaded by ``tests/storage/conftest.py`` and ``tests/errors/conftest.py`` with
:func:`load` (the test folders are not packages).
"""

from __future__ import annotations

import dataclasses
import errno
from collections import Counter
from collections.abc import Callable
from typing import Any

from fsspec.implementations.dirfs import DirFileSystem

#: Verbs that can be failed: the fsspec methods kartoframe's storage layer calls.
VERBS = (
    "cat_file",
    "pipe_file",
    "open",  # read modes
    "open_write",  # w / x / a modes
    "rm_file",
    "rm",
    "isfile",
    "exists",
    "info",
    "ls",
    "find",
    "size",
)
WRITE_VERBS = ("pipe_file", "open_write")
DELETE_VERBS = ("rm_file", "rm")


def transient(path: str) -> BaseException:
    """A connection reset, as a flaky network produces."""
    return ConnectionError(f"injected: connection reset while accessing {path}")


def permission_denied(path: str) -> BaseException:
    """A store that is not writable (AccessDenied / EACCES)."""
    return PermissionError(errno.EACCES, "injected: access denied", path)


@dataclasses.dataclass
class Fault:
    """Fail ``verb`` calls whose path contains ``match``.

    Attributes
    ----------
    verb
        One of :data:`VERBS`.
    exc
        Builds the exception from the path.
    times
        How many matching calls fail (None: all of them).
    skip
        Let this many matching calls pass first.
    match
        Substring of the path (None: every path).
    after
        Run the real operation, then raise (an answer lost on the way back).
    """

    verb: str
    exc: Callable[[str], BaseException] = transient
    times: int | None = 1
    skip: int = 0
    match: str | None = None
    after: bool = False
    fired: int = 0
    paths: list[str] = dataclasses.field(default_factory=list)  # where it fired

    def applies(self, verb: str, path: str) -> bool:
        if verb != self.verb or (self.match is not None and self.match not in path):
            return False
        if self.skip > 0:
            self.skip -= 1
            return False
        return self.times is None or self.fired < self.times


class FaultyFileSystem(DirFileSystem):
    """Delegates to ``fs``; fails calls according to the injected :class:`Fault` rules.

    ``calls`` counts every call per verb (attempts, including failed ones).
    """

    cachable = False  # every wrapper is a fresh instance with its own rules and counters

    def __init__(self, fs: Any, **kwargs: Any) -> None:
        super().__init__(path="", fo="", fs=fs, **kwargs)
        self.faults: list[Fault] = []
        self.calls: Counter[str] = Counter()

    def inject(self, verb: str, **kwargs: Any) -> Fault:
        """Add a rule; see :class:`Fault` for the keywords."""
        if verb not in VERBS:
            raise ValueError(f"unknown verb {verb!r}")
        fault = Fault(verb, **kwargs)
        self.faults.append(fault)
        return fault

    def make_read_only(self, exc: Callable[[str], BaseException] = permission_denied) -> None:
        """Every later write and delete fails (a store that became read-only)."""
        for verb in WRITE_VERBS + DELETE_VERBS:
            self.inject(verb, exc=exc, times=None)

    def heal(self) -> None:
        """Remove every rule."""
        self.faults.clear()

    def _gate(self, verb: str, path: Any, op: Callable[[], Any]) -> Any:
        self.calls[verb] += 1
        text = path if isinstance(path, str) else " ".join(map(str, path))
        for fault in self.faults:
            if fault.applies(verb, text):
                fault.fired += 1
                fault.paths.append(text)
                if fault.after:
                    op()
                raise fault.exc(text)
        return op()

    # -- the fsspec methods used by kartoframe.storage (sync API) ---------------------
    def cat_file(self, path: Any, *args: Any, **kwargs: Any) -> Any:
        return self._gate(
            "cat_file", path, lambda: DirFileSystem.cat_file(self, path, *args, **kwargs)
        )

    def pipe_file(self, path: Any, *args: Any, **kwargs: Any) -> Any:
        return self._gate(
            "pipe_file", path, lambda: DirFileSystem.pipe_file(self, path, *args, **kwargs)
        )

    def open(self, path: Any, mode: str = "rb", *args: Any, **kwargs: Any) -> Any:
        verb = "open_write" if any(c in mode for c in "wxa") else "open"
        return self._gate(verb, path, lambda: DirFileSystem.open(self, path, mode, *args, **kwargs))

    def rm_file(self, path: Any, **kwargs: Any) -> Any:
        return self._gate("rm_file", path, lambda: DirFileSystem.rm_file(self, path, **kwargs))

    def rm(self, path: Any, *args: Any, **kwargs: Any) -> Any:
        return self._gate("rm", path, lambda: DirFileSystem.rm(self, path, *args, **kwargs))

    def isfile(self, path: Any) -> Any:
        return self._gate("isfile", path, lambda: DirFileSystem.isfile(self, path))

    def exists(self, path: Any, **kwargs: Any) -> Any:
        return self._gate("exists", path, lambda: DirFileSystem.exists(self, path, **kwargs))

    def info(self, path: Any, **kwargs: Any) -> Any:
        return self._gate("info", path, lambda: DirFileSystem.info(self, path, **kwargs))

    def ls(self, path: Any, detail: bool = True, **kwargs: Any) -> Any:
        return self._gate("ls", path, lambda: DirFileSystem.ls(self, path, detail, **kwargs))

    def find(self, path: Any, *args: Any, **kwargs: Any) -> Any:
        return self._gate("find", path, lambda: DirFileSystem.find(self, path, *args, **kwargs))

    def size(self, path: Any) -> Any:
        return self._gate("size", path, lambda: DirFileSystem.size(self, path))
