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
:class:`StorageError`                    ``OSError``
:class:`MissingDependencyError`          ``ImportError``
======================================  ===============================
"""

from __future__ import annotations

__all__ = [
    "ColumnNotFoundError",
    "CommitConflictError",
    "CorruptMetadataError",
    "DatasetExistsError",
    "DatasetNotFoundError",
    "EmptyInputError",
    "FormatError",
    "InvalidInputError",
    "InvalidPredicateError",
    "InvalidTypeError",
    "InvalidUUIDError",
    "KartoframeError",
    "MissingDependencyError",
    "NullPartitionValueError",
    "SchemaError",
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


class StorageError(KartoframeError, OSError):
    """The store failed (after retries)."""


class CommitConflictError(KartoframeError):
    """A concurrent commit changed what this commit depends on."""


class MissingDependencyError(KartoframeError, ImportError):
    """An optional dependency is not installed."""

    def __init__(self, package: str, extra: str) -> None:
        super().__init__(
            f"{package} is required for this feature; install it with "
            f"`pip install 'kartoframe[{extra}]'`."
        )
