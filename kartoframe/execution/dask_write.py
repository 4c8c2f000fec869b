"""Dask write graphs: a writer task per input partition, one commit task.

:func:`write_graph` maps a :class:`PartitionWriter` over the partitions of a dask
DataFrame (each call runs :func:`~kartoframe.execution.write.write_chunk` and returns a small
:class:`~kartoframe.execution.write.ChunkResult`) and adds one final task running a
:class:`Committer`, which calls :func:`~kartoframe.execution.write.commit_write` once. A
writer that fails returns a :class:`WriteFailure` instead of raising, so the committer sees
every outcome, deletes the files of the partitions that did succeed and re-raises the first
error: a failed write leaves the dataset (and the store) as it was.
"""

from __future__ import annotations

import dataclasses
import uuid as _uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pandas as pd
import pyarrow as pa

from kartoframe.errors import ColumnNotFoundError, InvalidInputError
from kartoframe.execution.dask_engine import check_positive_int, delayed, no_string_conversion
from kartoframe.execution.write import (
    ChunkResult,
    DataSerializer,
    commit_write,
    delete_files,
    write_chunk,
)
from kartoframe.format import naming
from kartoframe.format.commit_args import NO_COMMIT_OPTIONS, CommitOptions
from kartoframe.format.convert import frame_to_table
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.schema import SchemaEvolution, merge_into_stored, normalize_schema
from kartoframe.plan.write import check_against_base, check_write_columns
from kartoframe.plan.write_request import ResolvedWrite
from kartoframe.storage.resolve import bloom_columns_of
from kartoframe.storage.store import Store

__all__ = [
    "BUCKET_COLUMN",
    "Committer",
    "PartitionWriter",
    "WriteFailure",
    "ddf_write_graph",
    "prepare_ddf",
    "shuffle_for_write",
    "write_graph",
    "resolved_writer_and_committer",
    "writer_and_committer",
]


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
    commit: CommitOptions = NO_COMMIT_OPTIONS,
) -> tuple[PartitionWriter, Committer]:
    """The partition writer and the committer of one write to dataset ``uuid``.

    ``base`` is the dataset as loaded before the write (None: create or overwrite): the
    writer checks each input against its schema and keeps its bloom-filter columns.
    ``result`` turns the committed dataset into the value the graph computes to; the other
    arguments are those of :func:`~kartoframe.execution.write.commit_write`
    (``create_or_update``: an update of a missing dataset lands as an append if it appears).
    """
    token = _uuid.uuid4().hex
    writer = PartitionWriter(
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
    committer = Committer(
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
            "commit": commit,
        },
        result=result,
        token=token,
    )
    return writer, committer


def resolved_writer_and_committer(
    st: Store, target: ResolvedWrite, **kwargs: Any
) -> tuple[PartitionWriter, Committer]:
    """:func:`writer_and_committer` of a resolved write request (``kwargs``: the rest)."""
    return writer_and_committer(
        st, target.uuid, index_columns=target.index_columns, **target.commit_arguments(), **kwargs
    )


#: Hidden column holding the hash bucket of a row during a shuffled write.
BUCKET_COLUMN = "__kartoframe_bucket__"


# --------------------------------------------------------------------------------------------
# writes
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class WriteFailure:
    """Returned by a :class:`PartitionWriter` that failed (the committer re-raises it)."""

    error: BaseException
    origin: str


@dataclasses.dataclass(frozen=True)
class PartitionWriter:
    """Writes one dask partition as data files and returns its :class:`ChunkResult`.

    Empty partitions write no file (their schema still takes part in the validation).
    ``base_schema``, when given, is checked before anything is written (updates).
    """

    store: Store
    dataset_uuid: str
    table_name: str
    partition_on: tuple[str, ...]
    index_columns: tuple[str, ...]
    serializer: DataSerializer
    sort_partitions_by: tuple[str, ...]
    base_schema: pa.Schema | None
    token: str
    drop_columns: tuple[str, ...] = ()
    schema_evolution: SchemaEvolution = "none"
    bloom_filter_columns: tuple[str, ...] = ()

    def __call__(self, df: pd.DataFrame, number: int) -> ChunkResult | WriteFailure:
        """Write partition number ``number``; never raises (failures are returned)."""
        origin = f"dask partition {number}"
        try:
            if self.drop_columns:
                df = df.drop(columns=[c for c in self.drop_columns if c in df.columns])
            return self._write(df, origin)
        except Exception as e:
            return WriteFailure(e, origin)

    def _write(self, df: pd.DataFrame, origin: str) -> ChunkResult:
        pon = list(self.partition_on)
        table = frame_to_table(df, what=origin)
        schema = check_against_base(
            table.schema,
            self.base_schema,
            pon,
            list(self.index_columns),
            dataset_uuid=self.dataset_uuid,
            origin=origin,
            schema_evolution=self.schema_evolution,
        )
        if table.num_rows == 0:
            return ChunkResult((), schema, origin)
        return write_chunk(
            self.store,
            self.dataset_uuid,
            table,
            table_name=self.table_name,
            partition_on=pon,
            index_columns=list(self.index_columns),
            serializer=self.serializer,
            sort_partitions_by=list(self.sort_partitions_by),
            origin=origin,
            max_workers=1,
            bloom_filter_columns=self.bloom_filter_columns,
        )

    def __dask_tokenize__(self) -> tuple[str, str]:
        return (type(self).__name__, self.token)


@dataclasses.dataclass(frozen=True)
class Committer:
    """The final task of a write graph: one :func:`commit_write` over all partition results.

    ``commit_kwargs`` are passed to :func:`commit_write`; ``result`` turns the committed
    header into the value the graph computes to.
    """

    store: Store
    dataset_uuid: str
    base: Any
    commit_kwargs: Mapping[str, Any]
    result: Callable[[str, Store], Any]
    token: str

    def __call__(self, outcomes: Sequence[ChunkResult | WriteFailure]) -> Any:
        """Commit the written partitions, or delete them and raise the first failure."""
        failures = [o for o in outcomes if isinstance(o, WriteFailure)]
        chunks = [o for o in outcomes if isinstance(o, ChunkResult)]
        if failures:
            delete_files(self.store, [p.key for c in chunks for p in c.partitions])
            raise failures[0].error
        md = commit_write(
            self.store, self.dataset_uuid, chunks, base=self.base, **self.commit_kwargs
        )
        return self.result(md.uuid, self.store)

    def __dask_tokenize__(self) -> tuple[str, str]:
        return (type(self).__name__, self.token)


def prepare_ddf(
    ddf: Any,
    *,
    partition_on: list[str],
    secondary_indices: list[str],
    shuffle: bool,
    num_buckets: int,
    bucket_by: list[str],
    repartition_ratio: float | None,
    base: LoadedDataset | None,
    uuid: str,
    schema_evolution: SchemaEvolution = "none",
) -> tuple[Any, tuple[str, ...]]:
    """Validate the frame's columns on its meta and apply repartitioning / shuffling.

    Returns the frame to write and the columns the writers drop (the shuffle's bucket).
    """
    check_positive_int(num_buckets, "num_buckets")
    meta_table = frame_to_table(ddf._meta, what="the dask DataFrame's meta")
    check_write_columns(meta_table.schema, partition_on, secondary_indices, what="the DataFrame")
    missing = [c for c in bucket_by if c not in meta_table.schema.names]
    if missing:
        raise ColumnNotFoundError(f"bucket_by columns not found in the DataFrame: {missing}.")
    if base is not None:
        merge_into_stored(
            base.schema,
            normalize_schema(meta_table.schema, partition_on),
            schema_evolution=schema_evolution,
            dataset_uuid=uuid,
            origin="the dask DataFrame's meta",
            partition_keys=partition_on,
        )
    if repartition_ratio is not None:
        if not isinstance(repartition_ratio, int | float) or repartition_ratio <= 0:
            raise InvalidInputError(f"repartition_ratio must be > 0, got {repartition_ratio!r}.")
        n = max(1, int(-(-ddf.npartitions // repartition_ratio)))
        ddf = ddf.repartition(npartitions=n)
    if not shuffle:
        if bucket_by or num_buckets != 1:
            raise InvalidInputError("bucket_by and num_buckets need shuffle=True.")
        return ddf, ()
    if not partition_on:
        raise InvalidInputError("shuffle=True needs partition_on (rows are shuffled on it).")
    return shuffle_for_write(ddf, partition_on, bucket_by, num_buckets), (BUCKET_COLUMN,)


def hash_bucket(df: pd.DataFrame, columns: Sequence[str], num_buckets: int) -> pd.DataFrame:
    """Add :data:`BUCKET_COLUMN`: a stable hash of ``columns`` modulo ``num_buckets``."""
    if num_buckets == 1 or len(df) == 0:
        bucket = pd.Series(0, index=df.index, dtype="uint64")
    else:
        h = pd.util.hash_pandas_object(df[list(columns)], index=False)
        bucket = h % num_buckets
    return df.assign(**{BUCKET_COLUMN: bucket.astype("uint64")})


def shuffle_for_write(
    ddf: Any, partition_on: Sequence[str], bucket_by: Sequence[str], num_buckets: int
) -> Any:
    """Shuffle rows so each (partition value, bucket) lands in exactly one dask partition.

    Uses dask's task-based shuffle (the disk-based one can lose data on a cluster).
    """
    cols = list(bucket_by) or [c for c in ddf.columns if c not in partition_on]
    with no_string_conversion():
        meta = ddf._meta.assign(**{BUCKET_COLUMN: pd.Series([], dtype="uint64")})
        tagged = ddf.map_partitions(hash_bucket, cols, num_buckets, meta=meta)
        return tagged.shuffle(on=[*partition_on, BUCKET_COLUMN], shuffle_method="tasks")


def ddf_write_graph(
    ddf: Any,
    st: Store,
    target: ResolvedWrite,
    *,
    result: Callable[[str, Store], Any],
    metadata: Mapping[str, Any] | None,
    serializer: DataSerializer,
    sort_partitions_by: list[str],
    shuffle: bool,
    num_buckets: int,
    bucket_by: list[str],
    repartition_ratio: float | None,
    remove_labels: set[str] | None = None,
) -> Any:
    """The write graph of a resolved request: the frame checked on its meta and prepared
    (:func:`prepare_ddf`), one writer task per partition and one commit task.
    """
    prepared: Any = None
    drop: tuple[str, ...] = ()
    if ddf is not None:
        prepared, drop = prepare_ddf(
            ddf,
            partition_on=target.partition_on,
            secondary_indices=target.index_columns,
            shuffle=shuffle,
            num_buckets=num_buckets,
            bucket_by=bucket_by,
            repartition_ratio=repartition_ratio,
            base=target.base,
            uuid=target.uuid,
            schema_evolution=target.request.schema_evolution,
        )
    writer, committer = resolved_writer_and_committer(
        st,
        target,
        result=result,
        serializer=serializer,
        sort_partitions_by=sort_partitions_by,
        metadata=metadata,
        remove_labels=remove_labels or set(),
        drop_columns=drop,
    )
    return write_graph(prepared, writer, committer)


def write_graph(ddf: Any, writer: PartitionWriter, committer: Committer) -> Any:
    """A ``Delayed`` that writes every partition of ``ddf`` and then commits once.

    ``ddf`` may be None (commit only, e.g. a delete-only update).
    """
    token = committer.token
    outcomes = []
    if ddf is not None:
        with no_string_conversion():
            parts = ddf.to_delayed(optimize_graph=True)
        write = delayed(writer, pure=True)
        outcomes = [
            write(p, i, dask_key_name=(f"kartoframe-write-{token}", i)) for i, p in enumerate(parts)
        ]
    return delayed(committer, pure=True)(outcomes, dask_key_name=f"kartoframe-commit-{token}")
