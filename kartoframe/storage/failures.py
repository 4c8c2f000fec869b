"""Failures of a store: which are transient, how they are reported, the retry loop.

Transient failures (timeouts, dropped connections, 5xx answers surfaced as ``OSError``,
object-store client transport errors) are retried with exponential backoff and jitter by
:class:`RetryingStore` (the base class of :class:`~kartoframe.storage.store.Store`); when the
attempts are exhausted, or the failure is permanent (permission denied, read-only or full
disk), a :class:`~kartoframe.errors.StorageError` is raised, a
:class:`~kartoframe.errors.MissingBucketError` or
:class:`~kartoframe.errors.StorageCredentialsError` where the failure says so. Messages
never show a secret of the URL or the storage options.
"""

from __future__ import annotations

import errno
import random
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

from kartoframe.errors import (
    KartoframeError,
    MissingBucketError,
    StorageCredentialsError,
    StorageError,
)
from kartoframe.storage.urls import redact_url, secret_values, url_secrets

__all__ = [
    "RetryingStore",
    "client_failure_types",
    "is_credentials_failure",
    "is_store_failure",
    "is_transient",
    "says_no_bucket",
]

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


def client_failure_types() -> tuple[type[BaseException], ...]:
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


def is_store_failure(e: BaseException) -> bool:
    """Whether ``e`` is a failure of the store (I/O), as opposed to a programming error."""
    return isinstance(e, (OSError, TimeoutError, ConnectionError, *client_failure_types()))


def is_credentials_failure(e: BaseException) -> bool:
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


def says_no_bucket(e: BaseException) -> bool:
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


def is_transient(e: BaseException) -> bool:
    """Whether retrying may help."""
    if isinstance(e, _NOT_TRANSIENT):
        return False
    if isinstance(e, TimeoutError | ConnectionError):
        return True
    if isinstance(e, OSError):
        return e.errno not in _PERMANENT_ERRNOS
    return isinstance(e, client_failure_types())


#: Verbs that create objects: on an object store they fail "not found" only for a
#: missing bucket or container.
_WRITE_VERBS = frozenset({"put", "put_if_absent", "write"})


class RetryingStore:
    """The retry policy and the error messages of a store (the base class of ``Store``)."""

    url: str
    storage_options: dict[str, Any]
    retries: int
    _protocol: str
    _root: str

    def _safe_message(self, e: BaseException) -> str:
        text = str(e)
        secrets = secret_values(self.storage_options) + url_secrets(self.url)
        for s in sorted(set(secrets), key=len, reverse=True):
            text = text.replace(s, "***")
        return text

    def _error(self, what: str, key: str, e: BaseException, attempts: int) -> StorageError:
        err = StorageError(
            f"{what} of {key!r} in {redact_url(self.url)} failed after {attempts} "
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
        if self._protocol in ("file", "memory"):
            return None
        if not (what in _WRITE_VERBS or says_no_bucket(e)):
            return None
        bucket = self._root.strip("/").split("/", 1)[0]
        return self._chain(
            MissingBucketError(
                f"{what} of {key!r} in {redact_url(self.url)} failed: the bucket (or container) "
                f"{bucket!r} does not exist or is not visible with these credentials. Create "
                f"it first; kartoframe does not create buckets. ({self._safe_message(e)})"
            ),
            e,
        )

    def _credentials_error(self, what: str, key: str, e: BaseException) -> StorageError:
        return self._chain(
            StorageCredentialsError(
                f"{what} of {key!r} in {redact_url(self.url)} failed: the store found no usable "
                f"credentials or refused them ({type(e).__name__}: {self._safe_message(e)}). "
                "Pass them as storage options (e.g. key=..., secret=... for S3) or configure "
                "the provider's usual environment variables or profile."
            ),
            e,
        )

    def _call(self, what: str, key: str, fn: Callable[[], T], attempts: int | None = None) -> T:
        """Run ``fn``, its store failures reported as :class:`StorageError` (and kin);
        transient ones are retried up to ``attempts`` (default: the store's ``retries``).
        """
        limit = self.retries if attempts is None else attempts
        delay = 0.05
        for attempt in range(1, limit + 1):
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
                if is_credentials_failure(e):
                    cred_error = self._credentials_error(what, key, e)
                    raise cred_error from cred_error.__cause__
                if not is_store_failure(e):
                    raise
                if attempt >= limit or not is_transient(e):
                    err = self._chain(self._error(what, key, e, attempt), e)
                    raise err from err.__cause__
                time.sleep(delay * (1 + random.random()))
                delay = min(delay * 2, 2.0)
        raise AssertionError("unreachable")  # pragma: no cover
