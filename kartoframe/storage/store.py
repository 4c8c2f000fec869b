"""The store: a picklable handle on an fsspec filesystem rooted at a URL.

This module (with the rest of :mod:`kartoframe.storage`) is the only place that talks to
fsspec. Keys are ``/``-separated and relative to the store root; every key is checked so
that no name can address a file outside the root.

Every verb runs through one retry policy: transient failures (timeouts, dropped
connections, 5xx answers surfaced as ``OSError``) are retried with exponential backoff
and jitter; when the attempts are exhausted, or the failure is permanent (permission
denied, read-only or full disk), a :class:`~kartoframe.errors.StorageError` is raised.
A missing key is not a failure of the store: it raises ``FileNotFoundError`` (or returns
None / False, depending on the verb) and is never retried.
"""

from __future__ import annotations

import contextlib
import errno
import os
import random
import sys
import threading
import time
import uuid as _uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import IO, Any, TypeVar
from urllib.parse import urlsplit

import fsspec
import pyarrow.fs as pafs

from kartoframe.errors import (
    CorruptMetadataError,
    InvalidInputError,
    InvalidTypeError,
    KartoframeError,
    MissingBucketError,
    MissingDependencyError,
    StorageCredentialsError,
    StorageError,
    UnsafePathError,
)
from kartoframe.storage import kvstore

__all__ = ["Store", "ensure_store"]

T = TypeVar("T")

#: Errors that describe the state of a key, not a failure of the store.
_NOT_TRANSIENT = (
    FileNotFoundError,
    FileExistsError,
    PermissionError,
    IsADirectoryError,
    NotADirectoryError,
)
#: ``OSError`` numbers that retrying cannot fix.
_PERMANENT_ERRNOS = frozenset(
    {
        errno.ENOSPC,
        errno.EROFS,
        errno.EACCES,
        errno.EPERM,
        errno.EINVAL,
        errno.ENOENT,
        errno.EEXIST,
        errno.EISDIR,
        errno.ENOTDIR,
        errno.ENAMETOOLONG,
        errno.EDQUOT,
        errno.EBADF,
    }
)
_SECRET_WORDS = (
    "key",
    "secret",
    "token",
    "pass",
    "credential",
    "sas",
    "signature",
    "connection_string",
    "auth",
    "private",
)
#: Object stores whose fsspec implementation keeps a listings cache; kartoframe turns it
#: off (unless the caller sets ``use_listings_cache``) because other processes write.
_LISTING_CACHE_PROTOCOLS = frozenset({"s3", "s3a", "gs", "gcs", "abfs", "az", "adl", "abfss"})
#: Protocols whose fsspec implementation does an atomic conditional PUT for
#: ``pipe_file(mode="create")`` (``If-None-Match: *``), including empty objects.
_PIPE_CREATE_PROTOCOLS = frozenset({"s3", "s3a"})
_MISSING_PACKAGE = {"s3": ("s3fs", "s3"), "s3a": ("s3fs", "s3")}
#: Verbs that create objects: on an object store they fail "not found" only for a
#: missing bucket or container.
_WRITE_VERBS = frozenset({"put", "put_if_absent", "write"})
_memory_lock = threading.Lock()


def _is_secret(name: object) -> bool:
    low = str(name).lower()
    return any(w in low for w in _SECRET_WORDS)


def _is_secret_param(name: str) -> bool:
    """Whether a URL query parameter holds a secret (``sig`` of an Azure SAS URL...)."""
    return _is_secret(name) or name.lower() == "sig"


def _redact(value: Any) -> Any:
    """A copy of storage options with every secret-looking value replaced by ``***``.

    Values under a secret-looking name (``key``, ``secret``, ``token``, ``pass``...) at any
    depth are replaced; URLs anywhere (``endpoint_url``, proxies) lose their password.
    """
    if isinstance(value, dict):
        return {k: "***" if _is_secret(k) else _redact(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_redact(v) for v in value)
    if isinstance(value, str):
        return _redact_url(value)
    return value


def _secret_values(value: Any, inside_secret: bool = False) -> list[str]:
    """Every string stored under a secret-looking option name (recursively)."""
    out: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            out += _secret_values(v, inside_secret or _is_secret(k))
    elif isinstance(value, list | tuple):
        for v in value:
            out += _secret_values(v, inside_secret)
    elif isinstance(value, str | bytes) and value:
        text = value.decode(errors="replace") if isinstance(value, bytes) else value
        if inside_secret:
            out.append(text)
        out += _url_secrets(text)  # a password or signature inside a URL, at any depth
    return out


def _url_secrets(text: str) -> list[str]:
    """The password and secret-looking query values of a URL (e.g. a proxy URL)."""
    if "://" not in text:
        return []
    out = [pw] if (pw := _url_password(text)) else []
    try:
        query = urlsplit(text).query
    except ValueError:
        return out
    for name, _, val in (part.partition("=") for part in query.split("&")):
        if val and _is_secret_param(name):
            out.append(val)
    return out


def _redact_url(url: str) -> str:
    """Hide a URL's password (``proto://user:password@host/...``) and secret values.

    Values of secret-looking query parameters (``?sig=...``, ``?token=...``) are hidden too.
    """
    if "://" not in url:
        return url
    scheme, rest = url.split("://", 1)
    netloc, sep, path = rest.partition("/")
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        if ":" in userinfo:
            userinfo = userinfo.split(":", 1)[0] + ":***"
        netloc = f"{userinfo}@{host}"
    if "?" in path:
        path, query = path.split("?", 1)
        parts = [p.partition("=") for p in query.split("&")]
        path += "?" + "&".join(
            f"{n}{eq}***" if v and _is_secret_param(n) else f"{n}{eq}{v}" for n, eq, v in parts
        )
    return f"{scheme}://{netloc}{sep}{path}"


def _url_password(url: str) -> str | None:
    try:
        return urlsplit(url).password
    except ValueError:
        return None


class Store:
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
        scheme = urlsplit(url).scheme if "://" in url else ""
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
                    f"{_redact_url(url)!r}; known: file, memory, s3, gs, abfs, ... "
                    "(any fsspec protocol)."
                )
            self._protocol = scheme
            self._root = url.split("://", 1)[1].rstrip("/")
            self.url = url.rstrip("/")
            if _url_options(scheme, self.url):  # ftp://user:pw@host:port/dir, abfs://c@acct/...
                self._root = _filesystem_class(scheme)._strip_protocol(self.url).rstrip("/")
        self.storage_options = dict(storage_options)
        self.retries = max(1, retries)
        self._filesystem = filesystem
        self._fs: fsspec.AbstractFileSystem | None = filesystem

    # -- identity and pickling ---------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "storage_options": self.storage_options,
            "retries": self.retries,
            "_protocol": self._protocol,
            "_root": self._root,
            "_filesystem": self._filesystem,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.url = state["url"]
        self.storage_options = state["storage_options"]
        self.retries = state["retries"]
        self._protocol = state["_protocol"]
        self._root = state["_root"]
        self._filesystem = state.get("_filesystem")
        self._fs = self._filesystem

    def __repr__(self) -> str:
        opts = f", {_redact(self.storage_options)}" if self.storage_options else ""
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
        return _redact_url(self.url)

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
        options = {**_url_options(self._protocol, self.url), **self.storage_options}
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
                f"options ({', '.join(sorted(_redact(options))) or 'none given'})."
            )
            raise err from (e if self._safe_message(e) == str(e) else None)

    def path(self, key: str) -> str:
        """The filesystem path of a key (after checking it is safe)."""
        _check_key(key)
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

    # -- retries ---------------------------------------------------------------------
    def _safe_message(self, e: BaseException) -> str:
        text = str(e)
        secrets = _secret_values(self.storage_options) + _url_secrets(self.url)
        for s in sorted(set(secrets), key=len, reverse=True):
            text = text.replace(s, "***")
        return text

    def _error(self, what: str, key: str, e: BaseException, attempts: int) -> StorageError:
        err = StorageError(
            f"{what} of {key!r} in {self.display_url} failed after {attempts} "
            f"attempt(s): {type(e).__name__}: {self._safe_message(e)}"
        )
        err.errno = getattr(e, "errno", None)
        return err

    def _chain(self, err: StorageError, e: BaseException) -> StorageError:
        """``err`` with ``e`` as its cause, unless ``e``'s message holds a secret."""
        err.__cause__ = e if self._safe_message(e) == str(e) else None
        err.__suppress_context__ = True
        return err

    def _missing_bucket(self, what: str, key: str, e: FileNotFoundError) -> StorageError | None:
        """A :class:`MissingBucketError` if ``e`` says the bucket/container is missing.

        On an object store a write cannot fail with "not found" for any other reason.
        """
        if self.is_local or self._protocol == "memory":
            return None
        if not (what in _WRITE_VERBS or _says_no_bucket(e)):
            return None
        bucket = self._root.strip("/").split("/", 1)[0]
        return self._chain(
            MissingBucketError(
                f"{what} of {key!r} in {self.display_url} failed: the bucket (or container) "
                f"{bucket!r} does not exist or is not visible with these credentials. Create "
                f"it first; kartoframe does not create buckets. ({self._safe_message(e)})"
            ),
            e,
        )

    def _credentials_error(self, what: str, key: str, e: BaseException) -> StorageError:
        return self._chain(
            StorageCredentialsError(
                f"{what} of {key!r} in {self.display_url} failed: the store found no usable "
                f"credentials or refused them ({type(e).__name__}: {self._safe_message(e)}). "
                "Pass them as storage options (e.g. key=..., secret=... for S3) or configure "
                "the provider's usual environment variables or profile."
            ),
            e,
        )

    def _call(self, what: str, key: str, fn: Callable[[], T]) -> T:
        delay = 0.05
        for attempt in range(1, self.retries + 1):
            try:
                return fn()
            except KartoframeError:
                raise
            except FileNotFoundError as e:
                bucket_error = self._missing_bucket(what, key, e)
                if bucket_error is not None:
                    raise bucket_error from bucket_error.__cause__
                raise
            except Exception as e:
                if _is_credentials_failure(e):
                    cred_error = self._credentials_error(what, key, e)
                    raise cred_error from cred_error.__cause__
                if not _is_store_failure(e):
                    raise
                if attempt >= self.retries or not _transient(e):
                    err = self._chain(self._error(what, key, e, attempt), e)
                    raise err from err.__cause__
                time.sleep(delay * (1 + random.random()))
                delay = min(delay * 2, 2.0)
        raise AssertionError("unreachable")  # pragma: no cover

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
            self._call("put", key, lambda: _local_publish(path, data, replace=True))
        else:
            self._call("put", key, lambda: self.fs.pipe_file(path, data))

    def put_if_absent(self, key: str, data: bytes) -> bool:
        """Create a key only if it does not exist; return whether this call created it.

        Local disk: a finished temp file is hard-linked to the final name
        (``os.link`` fails if it exists). S3: a conditional PUT (``If-None-Match: *``,
        also for empty objects). GCS/Azure: fsspec's exclusive-create mode.
        ``memory://``: a process lock.

        If an attempt fails transiently and the retry finds the key holding exactly
        ``data``, the earlier attempt is taken to have succeeded (its answer was lost)
        and True is returned.
        """
        path = self.path(key)
        if self.is_local:
            created = self._call("put_if_absent", key, lambda: _local_publish(path, data, False))
            if not created and os.path.isdir(path):
                raise _directory_at(key, self.display_url)
            return created
        attempts = 0

        def _create() -> bool:
            nonlocal attempts
            attempts += 1
            try:
                if self._protocol == "memory":
                    with _memory_lock:
                        below = self._memory_paths(path)
                        if (below is None and self.fs.isdir(path)) or below:
                            raise _directory_at(key, self.display_url)
                        if self.fs.exists(path):
                            raise FileExistsError(path)
                        self.fs.pipe_file(path, data)
                elif self._protocol in _PIPE_CREATE_PROTOCOLS:
                    self.fs.pipe_file(path, data, mode="create")
                else:
                    with self.fs.open(path, "xb") as f:
                        f.write(data)
            except FileExistsError:
                return attempts > 1 and self._holds(path, data)
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
            _prune_empty_dirs(os.path.dirname(path), self._root)

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
            _check_key(prefix, allow_trailing=True)
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


def _as_bytes(data: Any) -> bytes:
    return data if isinstance(data, bytes) else bytes(data)


def _client_failure_types() -> tuple[type[BaseException], ...]:
    """Transport errors of object-store clients that do not derive from ``OSError``.

    Only clients that are already imported are looked at (no import cost).
    """
    out: list[type[BaseException]] = []
    botocore = sys.modules.get("botocore.exceptions")
    if botocore is not None:
        out += [botocore.ConnectionError, botocore.HTTPClientError]
    aiohttp = sys.modules.get("aiohttp")
    if aiohttp is not None:
        out += [aiohttp.ClientConnectionError, aiohttp.ClientPayloadError]
    azure = sys.modules.get("azure.core.exceptions")
    if azure is not None:
        out += [azure.ServiceRequestError, azure.ServiceResponseError]
    return tuple(out)


def _is_store_failure(e: BaseException) -> bool:
    """Whether ``e`` is a failure of the store (I/O), as opposed to a programming error."""
    return isinstance(e, (OSError, TimeoutError, ConnectionError, *_client_failure_types()))


def _filesystem_class(protocol: str) -> Any:
    return fsspec.get_filesystem_class(protocol)


def _url_options(protocol: str, url: str) -> dict[str, Any]:
    """Filesystem options a URL carries in its authority (``user:pw@host:port``).

    Only looked at when the URL has user info or a port, so plain object-store URLs
    (``s3://bucket/prefix``) do not import their filesystem here.
    """
    netloc = url.split("://", 1)[1].split("/", 1)[0]
    if "@" not in netloc and ":" not in netloc:
        return {}
    try:
        options = _filesystem_class(protocol)._get_kwargs_from_urls(url)
    except Exception:  # an implementation that cannot parse its own URLs: no options
        return {}
    return dict(options) if isinstance(options, dict) else {}


def _is_credentials_failure(e: BaseException) -> bool:
    """Whether ``e`` is an object-store client's "no (valid) credentials" error.

    Only clients that are already imported are looked at (no import cost).
    """
    types: list[type[BaseException]] = []
    botocore = sys.modules.get("botocore.exceptions")
    if botocore is not None:
        types += [
            botocore.NoCredentialsError,
            botocore.PartialCredentialsError,
            botocore.CredentialRetrievalError,
        ]
    google = sys.modules.get("google.auth.exceptions")
    if google is not None:
        types += [google.DefaultCredentialsError, google.RefreshError]
    azure = sys.modules.get("azure.core.exceptions")
    if azure is not None:
        types += [azure.ClientAuthenticationError]
    return isinstance(e, tuple(types))


def _says_no_bucket(e: BaseException) -> bool:
    """Whether an error (or its cause) says that the bucket or container does not exist."""
    seen: BaseException | None = e
    for _ in range(4):
        if seen is None:
            return False
        name = type(seen).__name__
        text = str(seen).lower()
        if name in ("NoSuchBucket", "ContainerNotFound", "ResourceNotFoundError") and (
            "bucket" in text or "container" in text or name == "NoSuchBucket"
        ):
            return True
        if "bucket does not exist" in text or "container does not exist" in text:
            return True
        if "nosuchbucket" in text or "containernotfound" in text:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _transient(e: BaseException) -> bool:
    """Whether retrying may help."""
    if isinstance(e, _NOT_TRANSIENT):
        return False
    if isinstance(e, TimeoutError | ConnectionError):
        return True
    if isinstance(e, OSError):
        return e.errno not in _PERMANENT_ERRNOS
    return isinstance(e, _client_failure_types())


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


def _directory_at(key: str, where: str) -> CorruptMetadataError:
    """The error for a folder found where a key must be created (a corrupt layout)."""
    return CorruptMetadataError(
        f"Cannot create {key!r} in {where}: a directory exists at that key. No writer "
        "creates directories there, so the dataset's layout is corrupt; remove it by hand."
    )


def _prune_empty_dirs(directory: str, root: str) -> None:
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


def _local_publish(path: str, data: bytes, replace: bool) -> bool:
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


def ensure_store(store: Store | str | os.PathLike[str] | Callable[[], Any]) -> Store:
    """Normalise the ``store`` argument of every public function.

    Accepts a :class:`Store`, a URL string or local path (``str`` or ``pathlib.Path``),
    a simplekv/minimalkv key-value store (see :mod:`kartoframe.storage.kvstore`), or a
    zero-argument factory returning one of those.

    Raises
    ------
    InvalidTypeError
        For any other type, or a factory returning one.
    InvalidInputError
        For an empty URL or an unknown protocol.
    """
    if isinstance(store, Store):
        return store
    if isinstance(store, str):
        return Store(store)
    if isinstance(store, os.PathLike):
        path = os.fspath(store)
        if isinstance(path, str):
            return Store(path)
    elif kvstore.is_kvstore(store):  # a simplekv/minimalkv store object
        return kvstore.store_from_kvstore(store)
    elif callable(store):
        made = store()
        if isinstance(made, Store | str) or (
            isinstance(made, os.PathLike) and isinstance(os.fspath(made), str)
        ):
            return ensure_store(made)
        if kvstore.is_kvstore(made):  # plateau's store factories
            return kvstore.store_from_kvstore(made)
        raise InvalidTypeError(
            f"The store factory {store!r} returned {type(made).__name__}; it must return a "
            "kartoframe.Store, a URL string or a simplekv/minimalkv key-value store."
        )
    raise InvalidTypeError(
        f"store must be a kartoframe.Store, a URL string or a factory, got {type(store).__name__}."
    )
