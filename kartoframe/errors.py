"""The kartoframe error hierarchy.

Every error kartoframe raises on purpose derives from :class:`KartoframeError`.
Subclasses also derive from the builtin exception a Python user would expect, so
``except FileNotFoundError`` or ``except ValueError`` keep working:

======================================  ===============================
error                                    also a
======================================  ===============================
:class:`DatasetNotFoundError`            ``FileNotFoundError``
:class:`DatasetExistsError`              ``FileExistsError``
:class:`InvalidInputError` (+ children)  ``ValueError``
:class:`InvalidTypeError`                ``TypeError``
:class:`SchemaError`                     ``ValueError``
:class:`FormatError` (+ children)        ``ValueError``
:class:`MissingDataFileError`            ``ValueError``, ``FileNotFoundError``
:class:`StorageError` (+ children)       ``OSError``
:class:`StorageCredentialsError`         ``OSError``, ``PermissionError``
:class:`MissingDependencyError`          ``ImportError``
:class:`SparkPythonWorkerError`          ``RuntimeError``
======================================  ===============================
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ChangesUnavailableError",
    "ColumnNotFoundError",
    "CommitConflictError",
    "CorruptDataError",
    "CorruptMetadataError",
    "DatasetExistsError",
    "DatasetNotFoundError",
    "DuplicateKeyError",
    "EmptyInputError",
    "FormatError",
    "InvalidInputError",
    "InvalidPredicateError",
    "InvalidTypeError",
    "InvalidUUIDError",
    "KartoframeError",
    "MissingBucketError",
    "MissingDataFileError",
    "MissingDependencyError",
    "NullPartitionValueError",
    "SchemaError",
    "SparkPythonWorkerError",
    "StorageCredentialsError",
    "StorageError",
    "UnsafePathError",
    "UnsupportedVersionError",
]


class KartoframeError(Exception):
    """Base class of every error raised by kartoframe."""


class DatasetNotFoundError(KartoframeError, FileNotFoundError):
    """The dataset has no header in the store."""

    def __init__(self, dataset_uuid: str, where: str = "") -> None:
        self.dataset_uuid = dataset_uuid
        suffix = f" in {where}" if where else ""
        super().__init__(f"Dataset {dataset_uuid!r} does not exist{suffix}.")

    def __str__(self) -> str:
        return str(self.args[0])


class DatasetExistsError(KartoframeError, FileExistsError):
    """The dataset exists and ``overwrite`` was not set."""

    def __init__(self, dataset_uuid: str) -> None:
        self.dataset_uuid = dataset_uuid
        super().__init__(
            f"Dataset {dataset_uuid!r} already exists and overwrite is not permitted "
            "(pass overwrite=True to replace it)."
        )

    def __str__(self) -> str:
        return str(self.args[0])


class InvalidInputError(KartoframeError, ValueError):
    """An argument has an invalid value."""


class InvalidUUIDError(InvalidInputError):
    """A dataset uuid (or cube prefix / dataset id) breaks the naming rules."""


class ColumnNotFoundError(InvalidInputError):
    """A requested column is not part of the dataset."""


class InvalidPredicateError(InvalidInputError):
    """A predicate is malformed (shape, operator, or value)."""


class NullPartitionValueError(InvalidInputError):
    """A ``partition_on`` column contains nulls (they cannot be encoded in a key)."""


class DuplicateKeyError(InvalidInputError):
    """A merge source holds two rows with the same key (the message names the key)."""


class ChangesUnavailableError(InvalidInputError):
    """The change feed of a requested version cannot be read any more: ``vacuum_dataset``
    removed its log entry or the files it needs (the message names the oldest version
    whose changes can still be read).
    """


class EmptyInputError(InvalidInputError):
    """Nothing to write."""


class UnsafePathError(InvalidInputError):
    """A name would address a key outside the store root or the dataset."""


class InvalidTypeError(KartoframeError, TypeError):
    """An argument or a predicate literal has the wrong type."""


class SchemaError(KartoframeError, ValueError):
    """Schemas of partitions (or of a write and the dataset) are not compatible."""


class FormatError(KartoframeError, ValueError):
    """Stored metadata does not follow the Kartothek format."""


class CorruptMetadataError(FormatError):
    """A header or index file cannot be decoded, or a key has the wrong type."""


class UnsupportedVersionError(FormatError):
    """The header has a ``dataset_metadata_version`` other than 4."""


class CorruptDataError(FormatError):
    """A data file of a dataset cannot be read as Parquet with the dataset's schema.

    Attributes
    ----------
    dataset_uuid, partition, key
        The dataset, the partition (its ``col=value/...`` path, empty if unpartitioned)
        and the key of the file.
    """

    def __init__(
        self, message: str, *, dataset_uuid: str = "", partition: str = "", key: str = ""
    ) -> None:
        super().__init__(message)
        self.dataset_uuid = dataset_uuid
        self.partition = partition
        self.key = key

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), str(self.args[0]), self.__dict__))

    def __str__(self) -> str:
        return str(self.args[0])


class MissingDataFileError(CorruptDataError, FileNotFoundError):
    """A data file the dataset's header references does not exist (the dataset is corrupt).

    Also a ``FileNotFoundError``, but not a :class:`DatasetNotFoundError`: the dataset
    exists and one of its files is gone.
    """


class StorageError(KartoframeError, OSError):
    """The store failed (after retries)."""


class MissingBucketError(StorageError):
    """The bucket (or container) of an object-store URL does not exist."""


class StorageCredentialsError(StorageError, PermissionError):
    """The object store found no usable credentials (or refused the ones given)."""


class CommitConflictError(KartoframeError):
    """A concurrent commit changed what this commit depends on."""


class SparkPythonWorkerError(KartoframeError, RuntimeError):
    """A Spark session's Python workers run an interpreter without kartoframe.

    Raised before the first Spark job that needs Python workers of a local session, and by
    :func:`kartoframe.spark.cluster_session` / :func:`kartoframe.spark.check_executors`
    when a cluster's executors cannot start their interpreter, cannot import kartoframe
    or run another kartoframe version; the fix is to create the session with
    :func:`kartoframe.spark.local_session` (or ``cluster_session(master, python=...)``) or
    to set ``PYSPARK_PYTHON`` to an interpreter with kartoframe before the session starts.
    """


class MissingDependencyError(KartoframeError, ImportError):
    """An optional dependency is not installed."""

    def __init__(self, package: str, extra: str) -> None:
        super().__init__(
            f"{package} is required for this feature; install it with "
            f"`pip install 'kartoframe[{extra}]'`."
        )


def _rebuild(cls: type[BaseException], message: str, state: dict[str, Any]) -> BaseException:
    """Unpickle an error whose constructor takes keyword arguments (dask, Spark)."""
    err = cls(message)
    err.__dict__.update(state)
    return err
