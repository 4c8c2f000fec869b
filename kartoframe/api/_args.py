"""Argument normalisation shared by the public functions."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kartoframe.api.compat import resolve_factory
from kartoframe.errors import InvalidInputError, InvalidTypeError
from kartoframe.execution.write import ParquetSerializer
from kartoframe.format import naming
from kartoframe.storage.csv_files import CsvSerializer
from kartoframe.storage.store import Store
from kartoframe.storage.store_arg import ensure_store

StoreInput = Store | str | Callable[[], Any]

__all__ = [
    "StoreInput",
    "any_serializer_arg",
    "dataset_args",
    "maintenance_flags",
    "check_columns_arg",
    "check_format",
    "check_uuid",
    "ensure_store",
    "serializer_arg",
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


def serializer_arg(df_serializer: object) -> ParquetSerializer:
    """Validate ``df_serializer`` (Parquet only: the Spark writes)."""
    if df_serializer is None:
        return ParquetSerializer()
    if isinstance(df_serializer, ParquetSerializer):
        return df_serializer
    if isinstance(df_serializer, CsvSerializer):
        raise InvalidInputError(
            "CsvSerializer is accepted by the pandas, dask, delayed and bag writes; Spark "
            "writes Parquet only: use the ParquetSerializer here."
        )
    raise InvalidTypeError(
        f"df_serializer must be a kartoframe.ParquetSerializer, got {type(df_serializer).__name__}."
    )


def any_serializer_arg(df_serializer: object) -> ParquetSerializer | CsvSerializer:
    """Validate ``df_serializer`` of a pandas, dask, delayed or bag write: Parquet or CSV."""
    if isinstance(df_serializer, CsvSerializer):
        return df_serializer
    return serializer_arg(df_serializer)


def check_metadata_version(version: object) -> None:
    """Only metadata version 4 exists."""
    if version not in (None, 4):
        raise InvalidInputError(f"Only metadata version 4 is supported, got {version!r}.")


def dataset_args(
    dataset_uuid: object, store: Any, factory: object = None, *, uuid_first: bool = False
) -> tuple[str, Store]:
    """``(uuid, Store)`` of the dataset arguments (or plateau's ``factory=``), validated
    (the store first, unless ``uuid_first``: the order of the checks the function had).
    """
    dataset_uuid, store = resolve_factory(factory, dataset_uuid, store)
    if uuid_first:
        uuid = check_uuid(dataset_uuid)
        return uuid, ensure_store(store)
    st = ensure_store(store)
    return check_uuid(dataset_uuid), st


def maintenance_flags(dry_run: object, force: object) -> None:
    """``dry_run`` and ``force`` of the maintenance functions are booleans."""
    if not isinstance(dry_run, bool) or not isinstance(force, bool):
        raise InvalidInputError("dry_run and force must be booleans.")
