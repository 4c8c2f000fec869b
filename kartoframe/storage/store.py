"""The store: a picklable handle on an fsspec filesystem rooted at a URL.

This module (with the rest of :mod:`kartoframe.storage`) is the only place that talks to
fsspec. Keys are ``/``-separated and relative to the store root; every key is checked so
that no name can address a file outside the root.

Every verb runs through one retry policy: transient failures (timeouts, dropped
connections, 5xx answers surfaced as ``OSError``) are retried with exponential backoff
and jitter; when the attempts are exhausted, or the failure is permanent (permission
denied, read-only or full disk), a :class:`~kartoframe.errors.StorageError` is raised.
A missing key is not a failure of the store: it raises ``FileNotFoundError`` (or returns
None / False, depending on the verb) and is never retried. The failure policy is
:mod:`kartoframe.storage.failures`, URLs and hiding secrets :mod:`kartoframe.storage.urls`,
atomic local writes :mod:`kartoframe.storage.local_files`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import IO, Any, TypeVar
from urllib.parse import urlsplit

import fsspec
import pyarrow.fs as pafs

from kartoframe.errors import (
    InvalidInputError,
    InvalidTypeError,
    MissingDependencyError,
    StorageError,
)
from kartoframe.storage.failures import RetryingStore
from kartoframe.storage.keys import check_key, directory_at
from kartoframe.storage.local_files import local_publish, prune_empty_dirs
from kartoframe.storage.urls import filesystem_class, redact_options, redact_url, url_options

__all__ = ["Store"]

T = TypeVar("T")

#: Object stores whose fsspec implementation keeps a listings cache; kartoframe turns it
#: off (unless the caller sets ``use_listings_cache``) because other processes write.
_LISTING_CACHE_PROTOCOLS = frozenset({"s3", "s3a", "gs", "gcs", "abfs", "az", "adl", "abfss"})
#: Protocols whose fsspec implementation does an atomic conditional PUT for
#: ``pipe_file(mode="create")`` (``If-None-Match: *``), including empty objects.
_PIPE_CREATE_PROTOCOLS = frozenset({"s3", "s3a"})
_MISSING_PACKAGE = {"s3": ("s3fs", "s3"), "s3a": ("s3fs", "s3")}
_memory_lock = threading.Lock()


class Store(RetryingStore):
    """A location holding datasets: a local folder, memory, or an object-store prefix.

    Parameters
    ----------
    url
        ``file:///abs/dir``, a plain path (``str`` or ``pathlib.Path``),
        ``memory://name``, ``s3://bucket/prefix``, ``gs://...``, ``abfs://...`` or any
        fsspec URL. ``hfs://`` (minimalkv style) is accepted as a synonym of ``file://``.
    retries
        Attempts for transient errors (timeouts, 5xx, connection resets); at least 1.
    filesystem
        An already constructed fsspec filesystem to use instead of creating one from
        ``url`` and ``storage_options`` (for wrappers: caching, instrumentation, fault
        injection in tests). Paths given to it are ``<root>/<key>`` as for the default
        filesystem. It travels with the Store when pickled. On local folders, publishing
        (:meth:`put`, :meth:`put_if_absent`) and Parquet I/O use the operating system
        directly, so only reads and listings go through it.
    **storage_options
        Passed to the fsspec filesystem (credentials, ``client_kwargs``, ...). They are
        never shown in ``repr`` or error messages.

    Notes
    -----
    A Store is cheap to pickle (URL and options only): it travels into dask and Spark
    tasks and opens its filesystem lazily, on first use, in whichever process uses it.
    Listing caches of object-store filesystems are disabled by default (other processes
    write to the same prefix); pass ``use_listings_cache=True`` to re-enable them.

    Examples
    --------
    >>> import kartoframe as kf
    >>> store = kf.Store("memory://docs-example")
    >>> store.put("a/b.txt", b"hello")
    >>> store.get("a/b.txt")
    b'hello'
    """

    def __init__(
        self,
        url: str | os.PathLike[str],
        *,
        retries: int = 5,
        filesystem: fsspec.AbstractFileSystem | None = None,
        **storage_options: Any,
    ) -> None:
        if isinstance(url, os.PathLike):
            url = os.fspath(url)
        if not isinstance(url, str):
            raise InvalidTypeError(f"A store URL must be a string, got {type(url).__name__}.")
        if not url:
            raise InvalidInputError("A store URL must be a non-empty string.")
        if filesystem is not None and not isinstance(filesystem, fsspec.AbstractFileSystem):
            raise InvalidTypeError(
                f"filesystem must be an fsspec filesystem, got {type(filesystem).__name__}."
            )
        if not isinstance(retries, int) or isinstance(retries, bool):
            raise InvalidTypeError(f"retries must be an int, got {type(retries).__name__}.")
        try:
            scheme = urlsplit(url).scheme if "://" in url else ""
        except ValueError as e:  # e.g. "[...]" read as an IPv6 host
            raise InvalidInputError(f"Invalid store URL {url!r}: {e}") from None
        if scheme in ("", "hfs", "file"):
            path = url.split("://", 1)[1] if "://" in url else url
            if not path:
                raise InvalidInputError(f"Store URL {url!r} names no directory.")
            self._protocol = "file"
            self._root = os.path.abspath(path)
            self.url = "file://" + self._root
        else:
            if filesystem is None and scheme not in fsspec.available_protocols():
                raise InvalidInputError(
                    f"Unknown storage protocol {scheme!r} in store URL "
                    f"{redact_url(url)!r}; known: file, memory, s3, gs, abfs, ... "
                    "(any fsspec protocol)."
                )
            self._protocol = scheme
            self._root = url.split("://", 1)[1].rstrip("/")
            self.url = url.rstrip("/")
            if url_options(scheme, self.url):  # ftp://user:pw@host:port/dir, abfs://c@acct/...
                self._root = filesystem_class(scheme)._strip_protocol(self.url).rstrip("/")
        self.storage_options = dict(storage_options)
        self.retries = max(1, retries)
        self._filesystem = filesystem
        self._fs: fsspec.AbstractFileSystem | None = filesystem

    # -- identity and pickling ---------------------------------------------------------
    #: What a pickled store carries besides a given filesystem (``_fs``, the connected
    #: fsspec filesystem, is not pickled: it is opened again where the store is used).
    _PICKLED = ("url", "storage_options", "retries", "_protocol", "_root")

    def __getstate__(self) -> dict[str, Any]:
        state = {name: getattr(self, name) for name in self._PICKLED}
        state["_filesystem"] = self._filesystem
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name in self._PICKLED:
            setattr(self, name, state[name])
        self._filesystem = state.get("_filesystem")  # optional in a state
        self._fs = self._filesystem

    def __repr__(self) -> str:
        opts = f", {redact_options(self.storage_options)}" if self.storage_options else ""
        return f"Store({self.display_url!r}{opts})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Store) and (self.url, self.storage_options) == (
            other.url,
            other.storage_options,
        )

    def __hash__(self) -> int:
        return hash(self.url)

    @property
    def display_url(self) -> str:
        """The URL with any embedded password hidden (safe for messages and logs)."""
        return redact_url(self.url)

    @property
    def protocol(self) -> str:
        """The fsspec protocol (``"file"`` for local folders)."""
        return self._protocol

    @property
    def is_local(self) -> bool:
        """True for a local folder."""
        return self._protocol == "file"

    @property
    def fs(self) -> fsspec.AbstractFileSystem:
        """The fsspec filesystem, created on first use."""
        if self._fs is None:
            self._fs = self._open_filesystem()
        return self._fs

    def _open_filesystem(self) -> fsspec.AbstractFileSystem:
        if self._protocol == "file":
            return fsspec.filesystem("file", auto_mkdir=True)
        # what the URL itself says (host, port, user, password of ftp://user:pw@host/dir),
        # overridden by explicit storage options
        options = {**url_options(self._protocol, self.url), **self.storage_options}
        if self._protocol in _LISTING_CACHE_PROTOCOLS:
            options.setdefault("use_listings_cache", False)
        try:
            return fsspec.filesystem(self._protocol, **options)
        except ImportError as e:
            if self._protocol in _MISSING_PACKAGE:
                raise MissingDependencyError(*_MISSING_PACKAGE[self._protocol]) from None
            raise InvalidInputError(
                f"Cannot open store {self.display_url}: {self._safe_message(e)}"
            ) from None
        except (TypeError, ValueError) as e:
            # e.g. a required connection option is missing or has the wrong type
            err = InvalidInputError(
                f"Cannot open store {self.display_url} with the {self._protocol!r} filesystem: "
                f"{type(e).__name__}: {self._safe_message(e)}. Check the URL and the storage "
                f"options ({', '.join(sorted(redact_options(options))) or 'none given'})."
            )
            raise err from (e if self._safe_message(e) == str(e) else None)

    def path(self, key: str) -> str:
        """The filesystem path of a key (after checking it is safe)."""
        check_key(key)
        return f"{self._root}/{key}" if self._root else key

    def _key_of(self, path: str) -> str | None:
        """The key of a path returned by a listing (None if outside the root)."""
        if self.is_local and os.sep == "\\":  # pragma: no cover - Windows only
            path = path.replace("\\", "/")
        if "://" in path:
            path = path.split("://", 1)[1]
        root = self._root.strip("/")
        if not root:
            return path.lstrip("/") or None
        stripped = path.lstrip("/")
        if stripped.startswith(root + "/"):
            return stripped[len(root) + 1 :] or None
        return None

    # -- verbs -----------------------------------------------------------------------
    def get(self, key: str) -> bytes:
        """Return the bytes of a key (``FileNotFoundError`` if missing)."""
        return self._fetch(key, one_request=True)

    def get_many(self, keys: Sequence[str], *, max_workers: int = 8) -> list[bytes]:
        """Return the whole bytes of several keys (in order), fetched concurrently.

        Each object is fetched with its own retries (on S3 a large object in concurrent
        ranged GETs); a missing key raises ``FileNotFoundError``.
        """
        if len(keys) <= 1:
            return [self._fetch(k, one_request=False) for k in keys]
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(max_workers, len(keys))) as pool:
            return list(pool.map(lambda k: self._fetch(k, one_request=False), keys))

    def _fetch(self, key: str, *, one_request: bool) -> bytes:
        path = self.path(key)
        # s3fs probes the size (HEAD, and a LIST for a missing key) before a concurrent
        # chunked GET; metadata files are small: one plain GET is one request
        limit = one_request and self._protocol in _PIPE_CREATE_PROTOCOLS
        kwargs = {"max_concurrency": 1} if limit else {}
        return self._call(
            "get", key, lambda: _as_bytes(self._not_dir(self.fs.cat_file, path, **kwargs))
        )

    def get_or_none(self, key: str) -> bytes | None:
        """Return the bytes of a key, or None if it does not exist."""
        try:
            return self.get(key)
        except FileNotFoundError:
            return None

    def get_range_from_end(self, key: str, length: int) -> bytes:
        """Return the last ``length`` bytes of a key (all of it if it is shorter), in one
        suffix-range request.
        """
        path = self.path(key)
        if not isinstance(length, int) or length <= 0:
            raise InvalidInputError(f"Invalid suffix length {length!r} for key {key!r}.")
        return self._call(
            "ranged get",
            key,
            lambda: _as_bytes(self._not_dir(self.fs.cat_file, path, start=-length)),
        )

    def get_range(self, key: str, start: int, end: int) -> bytes:
        """Return bytes ``[start, end)`` of a key (clipped to its size)."""
        path = self.path(key)
        if not (isinstance(start, int) and isinstance(end, int)) or start < 0 or end < start:
            raise InvalidInputError(f"Invalid byte range [{start}, {end}) for key {key!r}.")
        if end == start:
            return b""
        return self._call(
            "ranged get",
            key,
            lambda: _as_bytes(self._not_dir(self.fs.cat_file, path, start=start, end=end)),
        )

    def put(self, key: str, data: bytes) -> None:
        """Write a key atomically (readers see the old or the new content)."""
        path = self.path(key)
        if self.is_local:
            self._call("put", key, lambda: local_publish(path, data, replace=True))
        else:
            self._call("put", key, lambda: self.fs.pipe_file(path, data))

    def put_if_absent(self, key: str, data: bytes) -> bool:
        """Create a key only if it does not exist; return whether this call created it.

        Local disk: a finished temp file is hard-linked to the final name
        (``os.link`` fails if it exists). S3: a conditional PUT (``If-None-Match: *``,
        also for empty objects). GCS/Azure: fsspec's exclusive-create mode.
        ``memory://``: a process lock.

        A key that exists already and holds exactly ``data`` counts as created by this
        call: an attempt whose answer was lost (a timeout after the store wrote it) was
        retried, by this store's retry policy or inside the client library (s3fs and
        botocore retry a timed-out PUT themselves, and the retry answers 412, which
        arrives as ``FileExistsError`` on what is our first attempt). Payloads that
        must not be confused with another writer's (log entries) are unique.
        """
        path = self.path(key)
        if self.is_local:
            created = self._call("put_if_absent", key, lambda: local_publish(path, data, False))
            if not created and os.path.isdir(path):
                raise directory_at(key, self.display_url)
            return created or self._holds(path, data)  # the same answer on every store

        def _create() -> bool:
            try:
                if self._protocol == "memory":
                    with _memory_lock:
                        below = self._memory_paths(path)
                        if (below is None and self.fs.isdir(path)) or below:
                            raise directory_at(key, self.display_url)
                        if self.fs.exists(path):
                            raise FileExistsError(path)
                        self.fs.pipe_file(path, data)
                elif self._protocol in _PIPE_CREATE_PROTOCOLS:
                    self.fs.pipe_file(path, data, mode="create")
                else:
                    with self.fs.open(path, "xb") as f:
                        f.write(data)
            except FileExistsError:
                return self._holds(path, data)
            return True

        return self._call("put_if_absent", key, _create)

    def _holds(self, path: str, data: bytes) -> bool:
        try:
            return bytes(self.fs.cat_file(path)) == bytes(data)
        except Exception:
            return False

    def _not_dir(self, fn: Callable[..., Any], path: str, **kwargs: Any) -> Any:
        """Call ``fn(path)``; a directory at ``path`` counts as a missing key."""
        try:
            return fn(path, **kwargs)
        except IsADirectoryError:
            raise FileNotFoundError(errno.ENOENT, "no object at key (a directory)", path) from None

    def delete(self, key: str) -> None:
        """Delete a key; a missing key is not an error."""
        path = self.path(key)

        def _rm() -> None:
            with contextlib.suppress(FileNotFoundError):
                self.fs.rm_file(path)

        self._call("delete", key, _rm)
        if self.is_local:
            prune_empty_dirs(os.path.dirname(path), self._root)

    def delete_many(self, keys: Iterable[str]) -> None:
        """Delete several keys (missing ones are ignored).

        All keys are checked before anything is deleted. A key that cannot be deleted
        does not stop the others: every key is attempted, then one :class:`StorageError`
        lists the keys that failed (the first failure is its ``__cause__``).

        Raises
        ------
        StorageError
            Some keys could not be deleted (the message names each of them).
        """
        keys = list(keys)
        paths = [self.path(k) for k in keys]
        if not keys:
            return
        if not (self.is_local or self._protocol == "memory"):

            def _rm() -> None:
                with contextlib.suppress(FileNotFoundError):
                    self.fs.rm(paths)

            label = keys[0] if len(keys) == 1 else f"{keys[0]} (+{len(keys) - 1})"
            try:
                self._call("delete", label, _rm)
                return
            except StorageError:
                pass  # a batch can fail for some keys only: delete one by one below
        failed: list[tuple[str, BaseException]] = []
        for k in keys:
            try:
                self.delete(k)
            except Exception as e:  # collected, raised below
                failed.append((k, e))
        if failed:
            listed = "; ".join(f"{k!r}: {e}" for k, e in failed[:10])
            more = f" (and {len(failed) - 10} more)" if len(failed) > 10 else ""
            raise StorageError(
                f"Could not delete {len(failed)} of {len(keys)} keys in {self.display_url}: "
                f"{listed}{more}"
            ) from failed[0][1]

    def exists(self, key: str) -> bool:
        """Whether a key exists (a "directory" is not a key)."""
        path = self.path(key)
        return bool(self._call("exists", key, lambda: self.fs.isfile(path)))

    def _list_start(self, prefix: str) -> str:
        if prefix:
            if not isinstance(prefix, str):
                raise InvalidTypeError(f"A key prefix must be a string, got {prefix!r}.")
            check_key(prefix, allow_trailing=True)
        base, _, _ = prefix.rpartition("/")
        return self.path(base) if base else self._root

    def _memory_files(self, start: str) -> dict[str, Any] | None:
        """Files of fsspec's in-memory filesystem below ``start``, from one snapshot.

        fsspec lists ``memory://`` with ``tuple(store.items())`` over its process-wide
        dict: an allocation per key, and any allocation may run a garbage collection
        whose finalizers let another thread write — "dictionary changed size during
        iteration". ``dict.copy`` is one C call that allocates nothing while it copies.
        None for every other filesystem.
        """
        from fsspec.implementations.memory import MemoryFileSystem

        # the protocol first: building another filesystem may connect (and fail) here
        if self._protocol != "memory" or not isinstance(self.fs, MemoryFileSystem):
            return None
        root = self.fs._strip_protocol(start).rstrip("/") + "/"
        return {p: f for p, f in self.fs.store.copy().items() if p.startswith(root)}

    def _memory_paths(self, start: str) -> list[str] | None:
        """Paths of the in-memory filesystem below ``start`` (None: another filesystem)."""
        files = self._memory_files(start)
        return None if files is None else list(files)

    def find_details(self, start: str) -> dict[str, dict[str, Any]]:
        """Files below the path ``start`` with fsspec's details (``find(detail=True)``).

        Raises FileNotFoundError if ``start`` does not exist (except on ``memory://``).
        """
        files = self._memory_files(start)
        if files is not None:
            return {
                p: {"name": p, "size": f.size, "type": "file", "created": f.created.timestamp()}
                for p, f in files.items()
            }
        found: dict[str, dict[str, Any]] = self.fs.find(start, detail=True, withdirs=False)
        return found

    def iter_keys(self, prefix: str = "") -> Iterator[str]:
        """All keys starting with ``prefix`` (recursive, sorted)."""
        start = self._list_start(prefix)
        found = self._memory_paths(start)
        if found is None:
            try:
                found = self._call("list", prefix or "<root>", lambda: self.fs.find(start))
            except FileNotFoundError:
                return iter(())
        keys = {self._key_of(p) for p in found}
        return iter(sorted(k for k in keys if k is not None and k.startswith(prefix)))

    def iter_prefixes(self, prefix: str = "", delimiter: str = "/") -> Iterator[str]:
        """Names directly below the "directory" of ``prefix`` that start with it.

        Keys are returned as they are, "directories" with a trailing ``/`` (cube
        discovery: ``iter_prefixes("cube++")`` yields ``cube++seed/`` and
        ``cube++seed.by-dataset-metadata.json``). Sorted, without duplicates.
        """
        if delimiter != "/":
            raise InvalidInputError("Only '/' is supported as delimiter.")
        start = self._list_start(prefix)
        below = self._memory_paths(start)
        if below is not None:
            top = self.fs._strip_protocol(start).rstrip("/") + "/"
            entries: list[dict[str, Any]] = []
            for p in below:
                name, sep, _ = p[len(top) :].partition("/")
                entries.append({"name": top + name, "type": "directory" if sep else "file"})
        else:
            try:
                entries = self._call(
                    "list", prefix or "<root>", lambda: self.fs.ls(start, detail=True)
                )
            except FileNotFoundError:
                return iter(())
        out: set[str] = set()
        for e in entries:
            key = self._key_of(e["name"])
            if key is None or not key.startswith(prefix):
                continue
            key = key.rstrip("/")
            out.add(key + "/" if e.get("type") == "directory" else key)
        return iter(sorted(out))

    def open_input(self, key: str) -> IO[bytes]:
        """A seekable binary file object for ranged reads (Parquet footers)."""
        path = self.path(key)

        def _open() -> IO[bytes]:
            f = self._not_dir(self.fs.open, path, mode="rb")
            details = getattr(f, "details", None)  # object stores: a "directory" opens lazily
            if isinstance(details, dict) and details.get("type") == "directory":
                f.close()
                raise FileNotFoundError(errno.ENOENT, "no object at key (a directory)", path)
            return f  # type: ignore[no-any-return]

        return self._call("open", key, _open)

    def size(self, key: str) -> int:
        """Size of a key in bytes (``FileNotFoundError`` if missing)."""
        path = self.path(key)

        def _size() -> int:
            info = self.fs.info(path)
            if info.get("type") == "directory":
                raise FileNotFoundError(errno.ENOENT, "no object at key (a directory)", path)
            return int(info["size"])

        return self._call("size", key, _size)

    def arrow_filesystem(self) -> pafs.FileSystem:
        """A pyarrow filesystem for :meth:`path` names (native for local folders).

        Scans of remote stores do not use it: a ``PyFileSystem`` hands Python objects to
        Arrow's worker threads, which can abort the process at interpreter exit
        (:func:`kartoframe.storage.parquet.read_files` fetches remote objects instead).
        """
        if self.is_local:
            return pafs.LocalFileSystem()
        return pafs.PyFileSystem(pafs.FSSpecHandler(self.fs))

    @property
    def supports_conditional_put(self) -> bool:
        """Whether :meth:`put_if_absent` is atomic on this filesystem."""
        if getattr(self._filesystem, "kartoframe_atomic_create", False):
            return True  # an adapted key-value store (kvstore.py) that can create atomically
        return self._protocol in ("file", "memory", "s3", "s3a", "gs", "gcs", "abfs", "az")

    def with_retry(self, what: str, key: str, fn: Callable[[], T]) -> T:
        """Run ``fn`` with this store's retry policy for transient errors."""
        return self._call(what, key, fn)

    def once(self, what: str, key: str, fn: Callable[[], T]) -> T:
        """Run ``fn`` once, its failures reported as :meth:`with_retry` reports them, for
        what cannot be repeated (the next part of a file being written).
        """
        return self._call(what, key, fn, attempts=1)


def _as_bytes(data: Any) -> bytes:
    return data if isinstance(data, bytes) else bytes(data)
