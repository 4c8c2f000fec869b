"""Checks of the arguments every public function shares (pure: no I/O).

The public fronts (:mod:`kartoframe.api`) and the planners of the engines validate column
lists, dataset uuids, header formats, the metadata version and ``schema_evolution`` with
these, so a bad argument gets the same :class:`~kartoframe.errors.KartoframeError` on
every engine. plateau's shared keywords (``plateau/core/docs.py``) are accepted here too:
``factory=`` (:func:`resolve_factory`) and the dask functions' ``table=``
(:func:`table_name_arg`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kartoframe.errors import InvalidInputError, InvalidTypeError
from kartoframe.format import naming
from kartoframe.format.schema import SCHEMA_EVOLUTIONS, SchemaEvolution

__all__ = [
    "evolution_arg",
    "resolve_factory",
    "table_name_arg",
    "check_columns_arg",
    "check_format",
    "check_metadata_version",
    "check_uuid",
    "str_list",
]


def check_int(value: object, name: str, minimum: int) -> int:
    """Validate an integer argument of at least ``minimum``.

    Raises
    ------
    InvalidTypeError
        Not an int (``bool`` is refused).
    InvalidInputError
        Below ``minimum``.
    """
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidTypeError(f"{name} must be an int, got {type(value).__name__}.")
    if value < minimum:
        raise InvalidInputError(f"{name} must be >= {minimum}, got {value}.")
    return value


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


def evolution_arg(schema_evolution: object) -> SchemaEvolution:
    """Validate ``schema_evolution``."""
    if schema_evolution not in SCHEMA_EVOLUTIONS:
        raise InvalidInputError(
            f"schema_evolution must be one of {list(SCHEMA_EVOLUTIONS)}, got {schema_evolution!r}."
        )
    return schema_evolution  # type: ignore[return-value]


def resolve_factory(factory: object, dataset_uuid: object, store: object) -> tuple[Any, Any]:
    """``(dataset_uuid, store)`` from plateau's ``factory=`` (a ``DatasetFactory``).

    A ``DatasetFactory`` is a dataset uuid plus a store factory (and a metadata cache
    kartoframe does not need). Any object with ``dataset_uuid`` and ``store_factory`` (or
    ``store``) attributes is accepted; without a factory the arguments are returned as given.

    Raises
    ------
    InvalidTypeError
        ``factory`` has no ``dataset_uuid`` or no store.
    InvalidInputError
        ``dataset_uuid`` is given as well and differs from the factory's.
    """
    if factory is None:
        return dataset_uuid, store
    uuid = getattr(factory, "dataset_uuid", None)
    made = getattr(factory, "store_factory", None) or getattr(factory, "store", None)
    if uuid is None or made is None:
        raise InvalidTypeError(
            f"factory must be a plateau DatasetFactory (dataset_uuid and store_factory), got "
            f"{type(factory).__name__}; pass dataset_uuid= and store= instead."
        )
    if dataset_uuid is not None and dataset_uuid != uuid:
        raise InvalidInputError(
            f"dataset_uuid {dataset_uuid!r} differs from the factory's {uuid!r}; pass one of them."
        )
    return uuid, made if store is None else store


def table_name_arg(table: object, table_name: str, default: str = "table") -> str:
    """The table name from plateau's ``table=`` (dask functions) and ``table_name=``.

    Raises
    ------
    InvalidInputError
        Both are given with different values.
    """
    if table is None:
        return table_name
    if not isinstance(table, str):
        raise InvalidTypeError(f"table must be a table name (str), got {type(table).__name__}.")
    if table_name != default and table_name != table:
        raise InvalidInputError(
            f"table={table!r} and table_name={table_name!r} disagree; pass only table_name."
        )
    return table
