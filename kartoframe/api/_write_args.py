"""Argument checks shared by the dataset writes (eager, iterator, dask, delayed/bag, Spark).

A new dataset's arguments are checked in one order by every writer
(:func:`new_dataset_args`); an update's become a
:class:`~kartoframe.plan.write_request.WriteRequest` (:func:`update_request`) that
:func:`~kartoframe.plan.write_request.resolve_write` resolves against the dataset: its
partition keys and table (they must match what was asked for) and every existing index.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar, cast

from kartoframe.api._args import (
    StoreInput,
    check_format,
    check_metadata_version,
    check_uuid,
    ensure_store,
    str_list,
)
from kartoframe.format import naming
from kartoframe.format.commit_args import NO_COMMIT_OPTIONS, CommitOptions, check_app_transaction
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.schema import SchemaEvolution
from kartoframe.plan.write_request import WriteRequest, resolve_write
from kartoframe.storage.store import Store

__all__ = [
    "NewDatasetArgs",
    "verb_like",
    "new_dataset_args",
    "update_indices",
    "update_layout",
    "update_request",
]


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


class NewDatasetArgs(NamedTuple):
    """The checked arguments of a write that creates (or overwrites) a dataset."""

    uuid: str
    store: Store
    storage_format: naming.MetadataFormat
    partition_on: list[str]
    secondary_indices: list[str]


def new_dataset_args(
    dataset_uuid: object,
    store: StoreInput,
    *,
    metadata_storage_format: object,
    metadata_version: object,
    table_name: str,
    partition_on: object,
    secondary_indices: object,
    check_store: Callable[[Store], None] | None = None,
    app_transaction: tuple[str | None, int | None] | None = None,
) -> NewDatasetArgs:
    """Check a new dataset's arguments, in this order: uuid, store (and ``check_store``),
    format, metadata version (and ``app_transaction``: ``(app_id, app_version)``), table
    name, partition columns, secondary indices.
    """
    uuid = check_uuid(dataset_uuid)
    st = ensure_store(store)
    if check_store is not None:
        check_store(st)
    fmt = check_format(metadata_storage_format)
    check_metadata_version(metadata_version)
    if app_transaction is not None:
        check_app_transaction(*app_transaction)
    naming.validate_name(table_name, "table_name")
    pon = str_list(partition_on, "partition_on")
    sidx = str_list(secondary_indices, "secondary_indices")
    return NewDatasetArgs(uuid, st, fmt, pon, sidx)


def update_request(
    uuid: str,
    partition_on: object,
    secondary_indices: object,
    table_name: str,
    storage_format: naming.MetadataFormat = "json",
    *,
    schema_evolution: SchemaEvolution = "none",
    commit: CommitOptions = NO_COMMIT_OPTIONS,
) -> WriteRequest:
    """The request of an update (``partition_on`` None: the dataset's keys)."""
    pon = str_list(partition_on, "partition_on") if partition_on is not None else None
    sidx = str_list(secondary_indices, "secondary_indices")
    return WriteRequest(
        uuid,
        "update",
        tuple(pon) if pon is not None else None,
        tuple(sidx),
        table_name,
        storage_format,
        schema_evolution=schema_evolution,
        commit=commit,
    )


def update_layout(
    base: LoadedDataset | None, uuid: str, partition_on: object, table_name: str
) -> tuple[list[str], str]:
    """The partition keys and table name an update writes with (see :func:`resolve_write`)."""
    target = resolve_write(update_request(uuid, partition_on, (), table_name), base)
    return target.partition_on, target.table_name


def update_indices(
    base: LoadedDataset | None, partition_on: list[str], secondary_indices: object
) -> tuple[list[str], list[str]]:
    """The requested secondary indices, and every index the update maintains (sorted):
    the requested ones and the dataset's (its partition keys excluded).
    """
    uuid = base.uuid if base is not None else "new"
    target = resolve_write(update_request(uuid, None, secondary_indices, "table"), base)
    return target.secondary_indices, target.index_columns
