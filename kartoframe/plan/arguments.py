"""Checks of the arguments every public function shares (pure: no I/O).

The public fronts (:mod:`kartoframe.api`) and the planners of the engines validate column
lists, dataset uuids, header formats and the metadata version with these, so a bad
argument gets the same :class:`~kartoframe.errors.KartoframeError` on every engine.
"""

from __future__ import annotations

from collections.abc import Sequence

from kartoframe.errors import InvalidInputError, InvalidTypeError
from kartoframe.format import naming

__all__ = [
    "check_columns_arg",
    "check_format",
    "check_metadata_version",
    "check_uuid",
    "str_list",
]


def check_uuid(dataset_uuid: object) -> str:
    """Validate a dataset uuid argument."""
    if dataset_uuid is None:
        raise InvalidInputError("dataset_uuid is required.")
    return naming.validate_uuid(dataset_uuid)


def check_format(fmt: object) -> naming.MetadataFormat:
    """Validate ``metadata_storage_format``."""
    if fmt not in ("json", "msgpack"):
        raise InvalidInputError(
            f"Unknown metadata_storage_format {fmt!r}; use 'json' or 'msgpack'."
        )
    return fmt  # type: ignore[return-value]


def str_list(value: object, name: str) -> list[str]:
    """Normalise a list-of-column-names argument (None -> [])."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if not isinstance(value, Sequence | set | frozenset | tuple):
        raise InvalidTypeError(f"{name} must be a list of column names, got {value!r}.")
    out = list(value)
    bad = [v for v in out if not isinstance(v, str)]
    if bad:
        raise InvalidTypeError(f"{name} must contain column names (strings), got {bad!r}.")
    return out


def check_columns_arg(columns: object) -> list[str] | None:
    """Validate a ``columns`` projection argument."""
    if columns is None:
        return None
    if isinstance(columns, str):
        raise InvalidInputError("columns must be a list of column names, not a string.")
    return str_list(columns, "columns")


def check_metadata_version(version: object) -> None:
    """Only metadata version 4 exists."""
    if version not in (None, 4):
        raise InvalidInputError(f"Only metadata version 4 is supported, got {version!r}.")
