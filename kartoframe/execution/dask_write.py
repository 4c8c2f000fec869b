"""The two task objects of every dask write graph (dask DataFrame, delayed and bag writes).

A :class:`~kartoframe.execution.dask_engine.PartitionWriter` writes one input's files and
a :class:`~kartoframe.execution.dask_engine.Committer` commits all of them once; both share
one fresh token, which names the graph's keys.
"""

from __future__ import annotations

import uuid as _uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kartoframe.execution import dask_engine as de
from kartoframe.execution.write import DataSerializer
from kartoframe.format import naming
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.schema import SchemaEvolution
from kartoframe.storage.resolve import bloom_columns_of
from kartoframe.storage.store import Store

__all__ = ["writer_and_committer"]


def writer_and_committer(
    st: Store,
    uuid: str,
    *,
    base: LoadedDataset | None,
    result: Callable[[str, Store], Any],
    partition_on: list[str],
    secondary_indices: list[str],
    index_columns: list[str],
    serializer: DataSerializer,
    sort_partitions_by: list[str],
    metadata: Mapping[str, Any] | None,
    storage_format: naming.MetadataFormat,
    table_name: str,
    expect_absent: bool,
    remove_labels: Iterable[str] = (),
    create_or_update: bool = False,
    drop_columns: tuple[str, ...] = (),
    schema_evolution: SchemaEvolution = "none",
    app_id: str | None = None,
    app_version: int | None = None,
    commit_info: Mapping[str, Any] | None = None,
) -> tuple[de.PartitionWriter, de.Committer]:
    """The partition writer and the committer of one write to dataset ``uuid``.

    ``base`` is the dataset as loaded before the write (None: create or overwrite): the
    writer checks each input against its schema and keeps its bloom-filter columns.
    ``result`` turns the committed dataset into the value the graph computes to; the other
    arguments are those of :func:`~kartoframe.execution.write.commit_write`
    (``create_or_update``: an update of a missing dataset lands as an append if it appears).
    """
    token = _uuid.uuid4().hex
    writer = de.PartitionWriter(
        store=st,
        dataset_uuid=uuid,
        table_name=table_name,
        partition_on=tuple(partition_on),
        index_columns=tuple(index_columns),
        serializer=serializer,
        sort_partitions_by=tuple(sort_partitions_by),
        base_schema=base.schema if base is not None else None,
        token=token,
        drop_columns=drop_columns,
        schema_evolution=schema_evolution,
        bloom_filter_columns=bloom_columns_of(base),
    )
    committer = de.Committer(
        store=st,
        dataset_uuid=uuid,
        base=base,
        commit_kwargs={
            "partition_on": partition_on,
            "secondary_indices": secondary_indices,
            "remove_labels": remove_labels,
            "metadata": metadata,
            "storage_format": storage_format,
            "table_name": table_name,
            "expect_absent": expect_absent,
            "create_or_update": create_or_update,
            "schema_evolution": schema_evolution,
            "app_id": app_id,
            "app_version": app_version,
            "commit_info": commit_info,
        },
        result=result,
        token=token,
    )
    return writer, committer
