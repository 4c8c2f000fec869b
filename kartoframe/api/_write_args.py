"""Argument resolution shared by the writes (eager, iterator, dask, delayed/bag, Spark).

A new dataset's arguments are checked in one order by every writer; an update takes the
partition keys and the table of the dataset it updates (they must match what was asked
for) and maintains every existing secondary index.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from kartoframe.api._args import (
    StoreInput,
    check_format,
    check_metadata_version,
    check_uuid,
    ensure_store,
    str_list,
)
from kartoframe.errors import InvalidInputError
from kartoframe.format import naming
from kartoframe.format.commit_args import check_app_transaction
from kartoframe.format.dataset import LoadedDataset
from kartoframe.storage.store import Store

__all__ = ["NewDatasetArgs", "new_dataset_args", "update_indices", "update_layout"]


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


def update_layout(
    base: LoadedDataset | None, uuid: str, partition_on: object, table_name: str
) -> tuple[list[str], str]:
    """The partition keys and table name an update writes with.

    For an existing dataset (``base``) they are the dataset's: a ``partition_on`` other than
    its keys, or a ``table_name`` other than ``"table"`` and its table, is refused. For a
    new dataset they are the arguments (no ``partition_on``: no partition keys).
    """
    pon = str_list(partition_on, "partition_on") if partition_on is not None else None
    if base is not None:
        md = base.metadata
        if pon is not None and tuple(pon) != md.partition_keys:
            raise InvalidInputError(
                f"Incompatible set of partition keys encountered: dataset {uuid!r} is "
                f"partitioned on {list(md.partition_keys)}, got {pon}."
            )
        pon = list(md.partition_keys)
        if table_name != "table" and table_name != md.table_name:
            raise InvalidInputError(
                f"table_name {table_name!r} differs from the dataset's table {md.table_name!r}."
            )
        table_name = md.table_name
    return pon or [], table_name


def update_indices(
    base: LoadedDataset | None, partition_on: list[str], secondary_indices: object
) -> tuple[list[str], list[str]]:
    """The requested secondary indices, and every index the update maintains (sorted):
    the requested ones and the dataset's (its partition keys excluded).
    """
    sidx = str_list(secondary_indices, "secondary_indices")
    existing = base.metadata.index_columns - set(partition_on) if base is not None else set()
    return sidx, sorted(set(sidx) | existing)
