"""Argument normalisation shared by the public functions (the pure checks are
:mod:`kartoframe.plan.arguments`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar, cast

from kartoframe.errors import InvalidInputError, InvalidTypeError
from kartoframe.execution.write import ParquetSerializer
from kartoframe.plan.arguments import check_uuid, resolve_factory
from kartoframe.storage.csv_files import CsvSerializer
from kartoframe.storage.store import Store
from kartoframe.storage.store_arg import ensure_store

StoreInput = Store | str | Callable[[], Any]

__all__ = [
    "StoreInput",
    "verb_like",
    "any_serializer_arg",
    "dataset_args",
    "maintenance_flags",
    "ensure_store",
    "serializer_arg",
]


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


F = TypeVar("F", bound=Callable[..., Any])


def verb_like(template: F, name: str, doc: str, run: Callable[..., Any]) -> F:
    """A public verb with ``template``'s signature (and type) that calls ``run(**arguments)``.

    Verbs that take the same keywords (``build_cube`` and ``extend_cube``, on every engine)
    are written once: the second one binds its arguments with the first one's signature.
    """
    signature = inspect.signature(template)

    @functools.wraps(template)
    def verb(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return run(**bound.arguments)

    verb.__name__ = verb.__qualname__ = name
    verb.__doc__ = doc
    return cast(F, verb)
