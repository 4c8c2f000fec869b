"""plateau keyword compatibility: ``factory=``, ``table=`` and keywords kartoframe refuses.

plateau's public functions share keywords (``plateau/core/docs.py``). kartoframe accepts each
of them, or refuses it with an error that names what to use instead; this module holds the
shared handling.
"""

from __future__ import annotations

from typing import Any

from kartoframe.errors import InvalidInputError, InvalidTypeError

__all__ = ["resolve_factory", "table_name_arg"]


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
