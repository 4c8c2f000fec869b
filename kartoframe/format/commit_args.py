"""Checks of the commit arguments users pass (pure: no I/O).

``app_id`` / ``app_version`` (an application transaction: a retried write is skipped if the
dataset already records it) and ``commit_info`` (the user's dict recorded in the log), and
the test whether a header already records an application transaction. Used by the write
APIs before any file is written, and by :func:`kartoframe.storage.commit.commit_transaction`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import orjson

from kartoframe.errors import InvalidInputError, InvalidTypeError
from kartoframe.format.header import DatasetHeader
from kartoframe.format.header_stamp import header_txn

__all__ = [
    "NO_COMMIT_OPTIONS",
    "CommitOptions",
    "already_committed",
    "check_app_transaction",
    "check_commit_info",
    "check_user_metadata",
]

#: Largest ``app_version`` (headers and log entries store it as a signed 64-bit integer).
MAX_APP_VERSION = 2**63 - 1


def check_app_transaction(app_id: object, app_version: object) -> tuple[str | None, int | None]:
    """Validate ``app_id`` / ``app_version`` (both or neither).

    Raises
    ------
    InvalidInputError, InvalidTypeError
    """
    if app_id is None and app_version is None:
        return None, None
    if app_id is None or app_version is None:
        raise InvalidInputError("app_id and app_version must be given together.")
    if not isinstance(app_id, str) or not app_id or len(app_id) > 1000:
        raise InvalidTypeError("app_id must be a non-empty string (at most 1000 characters).")
    if not isinstance(app_version, int) or isinstance(app_version, bool) or app_version < 0:
        raise InvalidTypeError("app_version must be a non-negative integer.")
    if app_version > MAX_APP_VERSION:
        err = InvalidInputError(
            f"app_version {app_version} is too large: it is stored as a signed 64-bit "
            f"integer (at most {MAX_APP_VERSION})."
        )
        try:
            orjson.dumps(app_version)
        except TypeError as e:
            raise err from e
        raise err
    return app_id, app_version


def check_commit_info(commit_info: object) -> dict[str, Any] | None:
    """Validate a user ``commit_info`` (a JSON-serialisable dict with string keys)."""
    if commit_info is None:
        return None
    if not isinstance(commit_info, Mapping) or not all(isinstance(k, str) for k in commit_info):
        raise InvalidTypeError("commit_info must be a dict with string keys.")
    try:
        orjson.dumps(dict(commit_info))
    except TypeError as e:
        raise InvalidTypeError(f"commit_info must be JSON-serialisable: {e}") from e
    return dict(commit_info)


def check_user_metadata(metadata: Mapping[str, Any], what: str = "metadata") -> Mapping[str, Any]:
    """Check that user metadata (stored in the header) can be encoded; return it.

    Headers are JSON or msgpack documents: values must be JSON-serialisable (strings,
    numbers within 64 bits, booleans, None, lists and dicts of those).

    Raises
    ------
    InvalidTypeError
        A value cannot be encoded (the message names it).
    """
    try:
        orjson.dumps(dict(metadata), option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY)
    except TypeError as e:
        raise InvalidTypeError(
            f"{what} must be JSON-serialisable (strings, numbers within 64 bits, booleans, "
            f"None, lists and dicts of those): {e}"
        ) from e
    return metadata


def already_committed(
    header: DatasetHeader | None, app_id: str | None, version: int | None
) -> bool:
    """Whether ``header`` records ``app_id`` at ``version`` or later."""
    if header is None or app_id is None or version is None:
        return False
    recorded = header_txn(header).get(app_id)
    return recorded is not None and recorded >= version


@dataclasses.dataclass(frozen=True, slots=True)
class CommitOptions:
    """The commit options every write carries as one value.

    Attributes
    ----------
    app_id, app_version
        The application transaction (both or neither): a dataset that already records
        ``app_version`` (or a later one) for ``app_id`` is not written again.
    commit_info
        The user's JSON-serialisable dict recorded with the commit.
    """

    app_id: str | None = None
    app_version: int | None = None
    commit_info: Mapping[str, Any] | None = None

    @classmethod
    def of(cls, app_id: object, app_version: object, commit_info: object = None) -> CommitOptions:
        """The options of a write's keywords, the transaction checked (the commit info is
        checked when the commit is built, as before).
        """
        txn_id, txn_version = check_app_transaction(app_id, app_version)
        return cls(txn_id, txn_version, commit_info)  # type: ignore[arg-type]

    def recorded_in(self, header: DatasetHeader | None) -> bool:
        """Whether ``header`` already records this application transaction."""
        return already_committed(header, self.app_id, self.app_version)


#: No application transaction, no commit info.
NO_COMMIT_OPTIONS = CommitOptions()
