"""The store: a picklable handle on an fsspec filesystem rooted at a URL.

This module (with the rest of :mod:`kartoframe.storage`) is the only place that talks to
fsspec. Keys are ``/``-separated and relative to the store root; every key is checked so
that no name can address a file outside the root.
"""

from __future__ import annotations

import contextlib
import errno
import os
import random
import threading
import time
import uuid as _uuid
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any, TypeVar
from urllib.parse import urlsplit

import fsspec
import pyarrow.fs as pafs

from kartoframe.errors import InvalidInputError, StorageError, UnsafePathError

__all__ = ["Store", "ensure_store"]

T = TypeVar("T")

_NOT_TRANSIENT = (
    FileNotFoundError,
    FileExistsError,
    PermissionError,
    IsADirectoryError,
    NotADirectoryError,
)
_SECRET_WORDS = ("key", "secret", "token", "password", "credential", "sas", "signature")
_memory_lock = threading.Lock()


def _is_secret(name: str) -> bool:
    low = name.lower()
    return any(w in low for w in _SECRET_WORDS)


def _redact(options: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in options.items():
        if isinstance(v, dict):
            out[k] = _redact(v)
        else:
            out[k] = "***" if _is_secret(k) else v
    return out


class Store:
    """A location holding datasets: a local folder, memory, or an object-store prefix.

    Parameters
    ----------
    url
        ``file:///abs/dir``, a plain path, ``memory://name``, ``s3://bucket/prefix``,
        ``gs://...``, ``abfs://...`` or any fsspec URL. ``hfs://`` (minimalkv style) is
        accepted as a synonym of ``file://``.
    retries
        Attempts for transient errors (timeouts, 5xx, connection resets).
    **storage_options
        Passed to the fsspec filesystem (credentials, ``client_kwargs``, ...). They are
        never shown in ``repr`` or error messages.

    Examples
    --------
    >>> import kartoframe as kf
    >>> store = kf.Store("memory://docs-example")
    >>> store.put("a/b.txt", b"hello")
    >>> store.get("a/b.txt")
    b'hello'
    """

    def __init__(self, url: str, *, retries: int = 5, **storage_options: Any) -> None:
        if not isinstance(url, str) or not url:
            raise InvalidInputError(f"A store URL must be a non-empty string, got {url!r}.")
        scheme = urlsplit(url).scheme if "://" in url else ""
        if scheme in ("", "hfs"):
            path = url.split("://", 1)[1] if "://" in url else url
            self._protocol = "file"
            self._root = os.path.abspath(path)
            self.url = "file://" + self._root
        elif scheme == "file":
            self._protocol = "file"
            self._root = os.path.abspath(url[len("file://") :])
            self.url = "file://" + self._root
        else:
            self._protocol = scheme
            self._root = url.split("://", 1)[1].rstrip("/")
            self.url = url.rstrip("/")
        self.storage_options = dict(storage_options)
        self.retries = max(1, int(retries))
        self._fs: fsspec.AbstractFileSystem | None = None

    # -- identity and pickling ---------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "storage_options": self.storage_options,
            "retries": self.retries,
            "_protocol": self._protocol,
            "_root": self._root,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.url = state["url"]
        self.storage_options = state["storage_options"]
        self.retries = state["retries"]
        self._protocol = state["_protocol"]
        self._root = state["_root"]
        self._fs = None

    def __repr__(self) -> str:
        opts = f", {_redact(self.storage_options)}" if self.storage_options else ""
        return f"Store({self.url!r}{opts})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Store) and (self.url, self.storage_options) == (
            other.url,
            other.storage_options,
        )

    def __hash__(self) -> int:
        return hash(self.url)

    @property
    def is_local(self) -> bool:
        """True for a local folder."""
        return self._protocol == "file"

    @property
    def fs(self) -> fsspec.AbstractFileSystem:
        """The fsspec filesystem, created on first use."""
        if self._fs is None:
            if self._protocol == "file":
                self._fs = fsspec.filesystem("file", auto_mkdir=True)
            else:
                self._fs = fsspec.filesystem(self._protocol, **self.storage_options)
        return self._fs

    def path(self, key: str) -> str:
        """The filesystem path of a key (after checking it is safe)."""
        _check_key(key)
        return f"{self._root}/{key}" if self._root else key

    def _key_of(self, path: str) -> str:
        path = path.replace("\\", "/") if self.is_local and os.sep == "\\" else path
        root = self._root.rstrip("/") + "/"
        stripped = self.fs._strip_protocol(path) if not self.is_local else path
        if stripped.startswith(root):
            return stripped[len(root) :]
        return stripped.lstrip("/")

    # -- retries ---------------------------------------------------------------------
    def _call(self, what: str, key: str, fn: Callable[[], T]) -> T:
        delay = 0.05
        for attempt in range(self.retries):
            try:
                return fn()
            except _NOT_TRANSIENT:
                raise
            except (OSError, TimeoutError, ConnectionError) as e:
                if attempt + 1 >= self.retries or not _transient(e):
                    raise StorageError(
                        f"{what} of {key!r} in {self.url} failed after {attempt + 1} "
                        f"attempt(s): {type(e).__name__}: {_safe_message(e, self)}"
                    ) from None
                time.sleep(delay * (1 + random.random()))
                delay = min(delay * 2, 2.0)
        raise AssertionError("unreachable")  # pragma: no cover

    # -- verbs -----------------------------------------------------------------------
    def get(self, key: str) -> bytes:
        """Return the bytes of a key (``FileNotFoundError`` if missing)."""
        path = self.path(key)
        return self._call("get", key, lambda: self.fs.cat_file(path))  # type: ignore[no-any-return]

    def get_or_none(self, key: str) -> bytes | None:
        """Return the bytes of a key, or None if it does not exist."""
        try:
            return self.get(key)
        except FileNotFoundError:
            return None

    def get_range(self, key: str, start: int, end: int) -> bytes:
        """Return bytes ``[start, end)`` of a key."""
        path = self.path(key)
        return self._call(  # type: ignore[no-any-return]
            "ranged get", key, lambda: self.fs.cat_file(path, start=start, end=end)
        )

    def put(self, key: str, data: bytes) -> None:
        """Write a key atomically (readers see the old or the new content)."""
        path = self.path(key)
        if self.is_local:
            self._call("put", key, lambda: _local_publish(path, data, replace=True))
        else:
            self._call("put", key, lambda: self.fs.pipe_file(path, data))

    def put_if_absent(self, key: str, data: bytes) -> bool:
        """Create a key only if it does not exist; return whether this call created it.

        Local disk: a finished temp file is hard-linked to the final name
        (``os.link`` fails if it exists). S3/GCS/Azure: a conditional PUT
        (``If-None-Match: *``) through fsspec's exclusive-create mode. ``memory://``:
        a process lock.
        """
        path = self.path(key)
        if self.is_local:
            return self._call("put_if_absent", key, lambda: _local_publish(path, data, False))
        if self._protocol == "memory":
            with _memory_lock:
                if self.fs.exists(path):
                    return False
                self.fs.pipe_file(path, data)
                return True

        def _xput() -> bool:
            try:
                with self.fs.open(path, "xb") as f:
                    f.write(data)
            except FileExistsError:
                return False
            return True

        return self._call("put_if_absent", key, _xput)

    def delete(self, key: str) -> None:
        """Delete a key; a missing key is not an error."""
        path = self.path(key)

        def _rm() -> None:
            with contextlib.suppress(FileNotFoundError):
                self.fs.rm_file(path)

        self._call("delete", key, _rm)

    def delete_many(self, keys: Iterable[str]) -> None:
        """Delete several keys (missing ones are ignored)."""
        keys = list(keys)
        if not keys:
            return
        if self.is_local or self._protocol == "memory":
            for k in keys:
                self.delete(k)
            return
        paths = [self.path(k) for k in keys]
        self._call("delete", keys[0], lambda: self.fs.rm(paths))

    def exists(self, key: str) -> bool:
        """Whether a key exists."""
        path = self.path(key)
        return bool(self._call("exists", key, lambda: self.fs.isfile(path)))

    def iter_keys(self, prefix: str = "") -> Iterator[str]:
        """All keys starting with ``prefix`` (recursive, sorted)."""
        if prefix:
            _check_key(prefix.rstrip("/") or prefix, allow_trailing=True)
        base, _, _ = prefix.rpartition("/")
        start = self.path(base) if base else self._root
        try:
            found = self._call("list", prefix, lambda: self.fs.find(start))
        except FileNotFoundError:
            return iter(())
        keys = sorted(self._key_of(p) for p in found)
        return iter([k for k in keys if k.startswith(prefix)])

    def iter_prefixes(self, prefix: str = "", delimiter: str = "/") -> Iterator[str]:
        """Names directly below ``prefix`` up to the next delimiter (cube discovery)."""
        if delimiter != "/":
            raise InvalidInputError("Only '/' is supported as delimiter.")
        base, _, _ = prefix.rpartition("/")
        start = self.path(base) if base else self._root
        try:
            entries = self._call("list", prefix, lambda: self.fs.ls(start, detail=True))
        except FileNotFoundError:
            return iter(())
        out = []
        for e in entries:
            key = self._key_of(e["name"])
            if not key.startswith(prefix):
                continue
            out.append(key + "/" if e.get("type") == "directory" else key)
        return iter(sorted(out))

    def open_input(self, key: str) -> IO[bytes]:
        """A seekable binary file object for ranged reads (Parquet footers)."""
        path = self.path(key)
        return self._call("open", key, lambda: self.fs.open(path, "rb"))  # type: ignore[no-any-return]

    def size(self, key: str) -> int:
        """Size of a key in bytes."""
        path = self.path(key)
        return int(self._call("size", key, lambda: self.fs.size(path)))

    def arrow_filesystem(self) -> pafs.FileSystem:
        """A pyarrow filesystem for :meth:`path` names (native for local folders)."""
        if self.is_local:
            return pafs.LocalFileSystem()
        return pafs.PyFileSystem(pafs.FSSpecHandler(self.fs))

    @property
    def supports_conditional_put(self) -> bool:
        """Whether :meth:`put_if_absent` is atomic on this filesystem."""
        return self._protocol in ("file", "memory", "s3", "s3a", "gs", "gcs", "abfs", "az")

    def with_retry(self, what: str, key: str, fn: Callable[[], T]) -> T:
        """Run ``fn`` with this store's retry policy for transient errors."""
        return self._call(what, key, fn)


def _transient(e: BaseException) -> bool:
    if isinstance(e, TimeoutError | ConnectionError):
        return True
    if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EROFS):
        return False
    return isinstance(e, OSError)


def _safe_message(e: BaseException, store: Store) -> str:
    text = str(e)
    for k, v in store.storage_options.items():
        if _is_secret(k) and isinstance(v, str) and v:
            text = text.replace(v, "***")
    return text


def _check_key(key: str, allow_trailing: bool = False) -> None:
    if not isinstance(key, str) or not key:
        raise UnsafePathError(f"Invalid key {key!r}.")
    if key.startswith("/") or "\\" in key or "\x00" in key or "://" in key:
        raise UnsafePathError(f"Unsafe key {key!r}: absolute or with forbidden characters.")
    parts = key.split("/")
    if allow_trailing and parts and parts[-1] == "":
        parts = parts[:-1]
    for p in parts:
        if p in ("", ".", ".."):
            raise UnsafePathError(f"Unsafe key {key!r}: empty, '.' or '..' component.")


def _local_publish(path: str, data: bytes, replace: bool) -> bool:
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    tmp = os.path.join(directory, f".{os.path.basename(path)}.tmp-{_uuid.uuid4().hex}")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
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


def ensure_store(store: Store | str | Callable[[], Any]) -> Store:
    """Normalise the ``store`` argument of every public function.

    Accepts a :class:`Store`, a URL string, or a zero-argument factory returning either.
    """
    if isinstance(store, Store):
        return store
    if isinstance(store, str):
        return Store(store)
    if callable(store):
        return ensure_store(store())
    raise InvalidInputError(
        f"store must be a kartoframe.Store, a URL string or a factory, got {type(store).__name__}."
    )
