"""simplekv/minimalkv key-value stores as kartoframe stores (plateau/kartothek migration).

plateau and kartothek take ``KeyValueStore`` objects (``minimalkv``, ``simplekv``,
``storefact``) or factories returning them. :func:`store_from_kvstore` turns any object with
that interface (``get``, ``put``, ``keys``/``iter_keys``, ``delete``, ``open``) into a
:class:`~kartoframe.storage.store.Store`:

* a filesystem store (``hfs://`` URLs: minimalkv/simplekv ``FilesystemStore``) is mapped
  back to a local-folder ``Store`` on its root: same keys, same files, and the local folder's
  atomic create (``os.link``) for commits;
* any other store is wrapped (:class:`KVStoreFileSystem`). A key-value store has no
  put-if-absent, so the wrapper cannot make a commit atomic across processes. In-memory
  dict stores (``hmemory://``) live in one process, where a process lock makes the create
  atomic; for every other store kartoframe refuses to commit unless only one process writes
  (``single_writer=True``, or ``KARTOFRAME_ALLOW_UNSAFE_COMMITS=1``). A warning, once per
  process, recommends :class:`kartoframe.Store`.
"""

from __future__ import annotations

import io
import threading
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import fsspec

from kartoframe.errors import InvalidInputError

if TYPE_CHECKING:
    from kartoframe.storage.store import Store

__all__ = [
    "KVStoreFileSystem",
    "KVStoreWarning",
    "is_kvstore",
    "store_from_kvstore",
]

_REQUIRED = ("get", "put", "delete", "open")
_create_lock = threading.Lock()
_warned = False


class KVStoreWarning(UserWarning):
    """A key-value store is used through the adapter (no atomic put-if-absent)."""


def is_kvstore(obj: object) -> bool:
    """Whether ``obj`` has the ``KeyValueStore`` interface (simplekv/minimalkv/storefact)."""
    if isinstance(obj, str | bytes | type):
        return False
    has_listing = callable(getattr(obj, "iter_keys", None)) or callable(getattr(obj, "keys", None))
    return has_listing and all(callable(getattr(obj, name, None)) for name in _REQUIRED)


def _filesystem_root(kv: object) -> str | None:
    """The root folder of a minimalkv/simplekv ``FilesystemStore`` (None for other stores)."""
    names = {c.__name__ for c in type(kv).__mro__}
    root = getattr(kv, "root", None)
    if "FilesystemStore" in names and isinstance(root, str) and root:
        return root
    return None


def _is_memory(kv: object) -> bool:
    """minimalkv/simplekv ``DictStore`` and friends: the data is a dict of this process."""
    names = {c.__name__ for c in type(kv).__mro__}
    return "DictStore" in names and isinstance(getattr(kv, "d", None), dict)


def store_from_kvstore(kv: Any, *, single_writer: bool = False) -> Store:
    """A :class:`kartoframe.Store` reading and writing a ``KeyValueStore`` object.

    Parameters
    ----------
    kv
        A simplekv/minimalkv store (or any object with ``get``, ``put``, ``delete``,
        ``open`` and ``keys``/``iter_keys``).
    single_writer
        Promise that only this process writes the store: commits then use a process lock
        as their put-if-absent. Without it, commits to a store that is neither a local
        folder nor in memory are refused unless ``KARTOFRAME_ALLOW_UNSAFE_COMMITS=1``.

    Returns
    -------
    kartoframe.Store
        A local-folder store for a ``FilesystemStore``; otherwise a store over
        :class:`KVStoreFileSystem` (URL ``kvstore://<class>-<id>``).

    Raises
    ------
    InvalidTypeError
        ``kv`` lacks the key-value store interface.

    Examples
    --------
    >>> from minimalkv import get_store_from_url
    >>> import kartoframe as kf
    >>> st = store_from_kvstore(get_store_from_url("hmemory://"))  # doctest: +SKIP
    """
    from kartoframe.errors import InvalidTypeError
    from kartoframe.storage.store import Store

    if not is_kvstore(kv):
        raise InvalidTypeError(
            f"{type(kv).__name__} is not a key-value store (it needs get, put, delete, open "
            "and keys or iter_keys)."
        )
    root = _filesystem_root(kv)
    if root is not None:
        return Store(root)
    atomic = single_writer or _is_memory(kv)
    _warn_once(kv, atomic)
    tag = f"{type(kv).__name__.lower()}-{id(kv):x}"
    return Store(f"kvstore://{tag}", filesystem=KVStoreFileSystem(kv, tag, atomic))


def _warn_once(kv: object, atomic: bool) -> None:
    global _warned
    if _warned:
        return
    _warned = True
    how = (
        "commits use a process lock (only this process may write it)"
        if atomic
        else "commits are refused unless KARTOFRAME_ALLOW_UNSAFE_COMMITS=1 (one writer only)"
    )
    warnings.warn(
        f"kartoframe uses the key-value store {type(kv).__name__} through an adapter: it has "
        f"no atomic put-if-absent, so {how}. Use kartoframe.Store(url) (file://, s3://, "
        "memory://, ...) for concurrent writers and faster I/O.",
        KVStoreWarning,
        stacklevel=4,
    )


class _KVWriter(io.BytesIO):
    """A file opened for writing: the bytes are put into the store on close."""

    def __init__(self, fs: KVStoreFileSystem, key: str, exclusive: bool) -> None:
        super().__init__()
        self._fs, self._key, self._exclusive = fs, key, exclusive
        self._done = False

    def close(self) -> None:
        if not self._done and not self.closed:
            self._done = True
            data = self.getvalue()
            if self._exclusive:
                self._fs.create(self._key, data)
            else:
                self._fs.put_key(self._key, data)
        super().close()


class KVStoreFileSystem(fsspec.AbstractFileSystem):  # type: ignore[misc]
    """An fsspec filesystem over a ``KeyValueStore``; paths are ``<tag>/<key>``.

    Only what :class:`~kartoframe.storage.store.Store` calls is implemented. ``mode="xb"``
    creates a key only if it is absent; it is atomic only when ``atomic`` is set (in-memory
    stores, or a promised single writer), through a process lock.
    """

    protocol = "kvstore"
    cachable = False

    def __init__(self, kv: Any, tag: str, atomic: bool = False) -> None:
        super().__init__()
        self.kv = kv
        self.tag = tag
        self.kartoframe_atomic_create = atomic

    # -- paths -------------------------------------------------------------------------
    def _key(self, path: str) -> str:
        path = path.split("://", 1)[-1].strip("/")
        if path == self.tag:
            return ""
        if not path.startswith(self.tag + "/"):
            raise FileNotFoundError(path)
        return path[len(self.tag) + 1 :]

    def _path(self, key: str) -> str:
        return f"{self.tag}/{key}" if key else self.tag

    def _keys(self, prefix: str) -> Iterator[str]:
        try:
            if callable(getattr(self.kv, "iter_keys", None)):
                yield from self.kv.iter_keys(prefix)
            else:
                yield from (k for k in self.kv.keys() if k.startswith(prefix))  # noqa: SIM118
        except ValueError as e:
            raise InvalidInputError(
                f"The key-value store refused the prefix {prefix!r}: {e}"
            ) from e

    def _call(self, key: str, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except KeyError:
            raise FileNotFoundError(2, "no such key", key) from None
        except ValueError as e:
            raise InvalidInputError(f"The key-value store refused the key {key!r}: {e}") from e

    # -- the verbs Store uses ----------------------------------------------------------------
    def cat_file(
        self, path: str, start: int | None = None, end: int | None = None, **kw: Any
    ) -> bytes:
        """The bytes of a key (``[start:end]``)."""
        key = self._key(path)
        data = bytes(self._call(key, self.kv.get, key))
        return data[start:end] if start is not None or end is not None else data

    def put_key(self, key: str, data: bytes) -> None:
        """Put ``data`` at ``key`` (overwriting)."""
        self._call(key, self.kv.put, key, bytes(data))

    def create(self, key: str, data: bytes) -> None:
        """Put ``data`` at ``key`` only if absent (``FileExistsError`` otherwise)."""
        with _create_lock:
            if self._call(key, self._has, key):
                raise FileExistsError(17, "key exists", key)
            self.put_key(key, data)

    def _has(self, key: str) -> bool:
        try:
            return key in self.kv
        except TypeError:  # no __contains__
            return any(k == key for k in self._keys(key))

    def pipe_file(self, path: str, value: bytes, mode: str = "overwrite", **kw: Any) -> None:
        """Put bytes at a key (``mode="create"``: only if absent)."""
        key = self._key(path)
        if mode == "create":
            self.create(key, value)
        else:
            self.put_key(key, value)

    def rm_file(self, path: str) -> None:
        """Delete a key."""
        key = self._key(path)
        self._call(key, self.kv.delete, key)

    def rm(self, path: Any, recursive: bool = False, maxdepth: int | None = None) -> None:
        """Delete keys."""
        for p in [path] if isinstance(path, str) else path:
            self.rm_file(p)

    def isfile(self, path: str) -> bool:
        """Whether a key exists."""
        try:
            key = self._key(path)
        except FileNotFoundError:
            return False
        return bool(key) and bool(self._call(key, self._has, key))

    def exists(self, path: str, **kw: Any) -> bool:
        """Whether a key or a key prefix (a "directory") exists."""
        try:
            self.info(path)
        except FileNotFoundError:
            return False
        return True

    def info(self, path: str, **kw: Any) -> dict[str, Any]:
        """Name, size and type of a key or a key prefix."""
        key = self._key(path)
        if key and self._call(key, self._has, key):
            return {"name": path, "size": len(self.cat_file(path)), "type": "file"}
        for _ in self._keys(key + "/" if key else ""):
            return {"name": path, "size": 0, "type": "directory"}
        raise FileNotFoundError(2, "no such key", path)

    def find(
        self,
        path: str,
        maxdepth: int | None = None,
        withdirs: bool = False,
        detail: bool = False,
        **kw: Any,
    ) -> Any:
        """All keys below a path."""
        key = self._key(path)
        found = [self._path(k) for k in self._keys(key + "/" if key else "")]
        if key and self._call(key, self._has, key):
            found.append(self._path(key))
        if detail:
            return {p: {"name": p, "type": "file"} for p in sorted(found)}
        return sorted(found)

    def ls(self, path: str, detail: bool = True, **kw: Any) -> Any:
        """Keys and "directories" directly below a path."""
        key = self._key(path)
        prefix = key + "/" if key else ""
        entries: dict[str, str] = {}
        for k in self._keys(prefix):
            head, sep, _ = k[len(prefix) :].partition("/")
            entries[self._path(prefix + head)] = "directory" if sep else "file"
        if not entries and not (key and self._has(key)):
            raise FileNotFoundError(2, "no such key", path)
        if detail:
            return [{"name": p, "type": t, "size": 0} for p, t in sorted(entries.items())]
        return sorted(entries)

    def _open(self, path: str, mode: str = "rb", **kw: Any) -> Any:
        key = self._key(path)
        if "r" in mode:
            return io.BytesIO(self.cat_file(path))
        if "a" in mode or "+" in mode:
            raise InvalidInputError(f"Mode {mode!r} is not supported on a key-value store.")
        return _KVWriter(self, key, exclusive="x" in mode)
