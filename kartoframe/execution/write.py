"""The write kernel shared by every engine: write chunks, then commit once.

Every write path (eager, iterator, dask, Spark) is: :func:`write_chunk` for each input
chunk (it runs wherever the chunk is — a thread, a dask worker, a Spark executor — and
returns a small picklable :class:`ChunkResult`), then one :func:`commit_write` on the
driver, which validates the schemas of all chunks, merges the secondary indices and
publishes the header.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pyarrow as pa

from kartoframe.errors import CommitConflictError, InvalidInputError
from kartoframe.format import naming
from kartoframe.format.convert import frame_to_table, storage_table
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.header import DatasetHeader
from kartoframe.format.index import (
    build_index,
    empty_index,
    index_to_bytes,
    index_value_pairs,
    merge_index,
)
from kartoframe.format.schema import compatible_merge, normalize_schema, schema_to_bytes
from kartoframe.plan.write import check_write_columns, new_file_uuid, split_partitions
from kartoframe.storage.commit import commit
from kartoframe.storage.parquet import write_table
from kartoframe.storage.resolve import load_indices
from kartoframe.storage.store import Store

__all__ = [
    "ChunkResult",
    "ParquetSerializer",
    "WrittenPartition",
    "commit_write",
    "delete_files",
    "write_chunk",
]


@dataclasses.dataclass(frozen=True, slots=True)
class ParquetSerializer:
    """How data files are written (plateau's ``ParquetSerializer``).

    Parameters
    ----------
    compression
        Parquet codec (``"SNAPPY"`` default, ``"ZSTD"``, ``"GZIP"``, ``"NONE"``...).
    chunk_size
        Rows per row group (None: pyarrow's default).
    """

    compression: str = "SNAPPY"
    chunk_size: int | None = None

    def __post_init__(self) -> None:
        if self.chunk_size is not None:
            if not isinstance(self.chunk_size, int) or isinstance(self.chunk_size, bool):
                raise InvalidInputError("chunk_size must be an int or None.")
            if self.chunk_size < 1:
                raise InvalidInputError("chunk_size must be >= 1.")


@dataclasses.dataclass(frozen=True, slots=True)
class WrittenPartition:
    """A data file written by a chunk."""

    label: str
    key: str
    rows: int
    size: int
    index_pairs: Mapping[str, pa.Table]


@dataclasses.dataclass(frozen=True, slots=True)
class ChunkResult:
    """What a chunk write returns to the committer (small and picklable)."""

    partitions: tuple[WrittenPartition, ...]
    schema: pa.Schema | None
    origin: str


def delete_files(store: Store, keys: Iterable[str]) -> None:
    """Best-effort removal of files written by a failed write."""
    with contextlib.suppress(Exception):
        store.delete_many(list(keys))


def write_chunk(
    store: Store,
    dataset_uuid: str,
    df: Any,
    *,
    table_name: str = "table",
    partition_on: Sequence[str] = (),
    index_columns: Sequence[str] = (),
    serializer: ParquetSerializer | None = None,
    sort_partitions_by: Sequence[str] = (),
    origin: str = "",
    max_workers: int = 4,
    file_uuid: str | None = None,
) -> ChunkResult:
    """Write one input frame as data files (no header change).

    ``df`` may be a pandas DataFrame or a pyarrow Table. Partition columns are removed
    from the files; nulls in them are refused. Files get fresh uuid names (or
    ``file_uuid``, which must be unique per call: the Spark engine prefixes it with a
    job id so that a failed job can find and remove its files).
    """
    serializer = serializer or ParquetSerializer()
    table = df if isinstance(df, pa.Table) else frame_to_table(df, what=origin or "DataFrame")
    check_write_columns(table.schema, partition_on, index_columns, what=origin or "the data")
    schema = normalize_schema(table.schema, partition_on)
    slices = split_partitions(
        table,
        partition_on,
        file_uuid=file_uuid or new_file_uuid(),
        sort_by=list(sort_partitions_by),
    )
    written: list[WrittenPartition] = []
    keys: list[str] = []

    def _one(s: Any) -> WrittenPartition:
        key = naming.data_key(dataset_uuid, table_name, s.label)
        keys.append(key)
        data = storage_table(s.table)
        size = write_table(
            store,
            key,
            data,
            compression=serializer.compression.lower() if serializer.compression else None,
            row_group_size=serializer.chunk_size,
        )
        pairs = {c: index_value_pairs(c, s.table[c], s.label) for c in index_columns}
        return WrittenPartition(s.label, key, s.table.num_rows, size, pairs)

    try:
        if len(slices) > 1 and max_workers > 1:
            with ThreadPoolExecutor(max_workers=min(max_workers, len(slices))) as pool:
                written = list(pool.map(_one, slices))
        else:
            written = [_one(s) for s in slices]
    except BaseException:
        delete_files(store, keys)
        raise
    return ChunkResult(tuple(written), schema, origin)


def _now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat()


def _write_index(store: Store, dataset_uuid: str, column: str, index: pa.Table) -> str:
    data = index_to_bytes(index)
    ts = dt.datetime.now(dt.UTC)
    for _ in range(1000):
        key = naming.index_key(dataset_uuid, column, ts.isoformat())
        if store.put_if_absent(key, data):
            return key
        ts += dt.timedelta(microseconds=1)
    raise CommitConflictError(f"Could not find a free index file name for {column!r}.")


def commit_write(
    store: Store,
    dataset_uuid: str,
    chunks: Sequence[ChunkResult],
    *,
    base: LoadedDataset | None,
    partition_on: Sequence[str] | None = None,
    secondary_indices: Sequence[str] = (),
    remove_labels: Iterable[str] = (),
    metadata: Mapping[str, Any] | None = None,
    storage_format: naming.MetadataFormat = "json",
    table_name: str = "table",
    expect_absent: bool = False,
    empty_schema: pa.Schema | None = None,
    explicit_partitions: bool = True,
    owns_files: bool = True,
) -> DatasetHeader:
    """Validate all chunks against each other and the base, merge indices, publish.

    Parameters
    ----------
    base
        The dataset as loaded before the write (None: create or overwrite).
    partition_on
        The partition keys (None: take the base's).
    secondary_indices
        Indices to create (for an update, all existing indices are maintained anyway).
    remove_labels
        Partitions removed by this commit (``delete_scope``).
    metadata
        User metadata merged over the base's (``creation_time`` is kept).
    empty_schema
        Schema to use when no chunk carries one (creating an empty dataset).
    owns_files
        Whether the chunks' data files were written for this commit (they are deleted
        if it fails); False when re-committing existing files (index rebuilds).

    Raises
    ------
    SchemaError
        Chunks disagree with each other or with the stored schema.
    CommitConflictError
        The dataset changed concurrently.
    """
    written_keys = [p.key for c in chunks for p in c.partitions] if owns_files else []
    index_keys_written: list[str] = []
    try:
        md = _commit(
            store,
            dataset_uuid,
            chunks,
            base=base,
            partition_on=partition_on,
            secondary_indices=secondary_indices,
            remove_labels=set(remove_labels),
            metadata=metadata,
            storage_format=storage_format,
            table_name=table_name,
            expect_absent=expect_absent,
            empty_schema=empty_schema,
            explicit_partitions=explicit_partitions,
            index_keys_written=index_keys_written,
        )
    except BaseException:
        delete_files(store, written_keys + index_keys_written)
        raise
    return md


def _commit(
    store: Store,
    dataset_uuid: str,
    chunks: Sequence[ChunkResult],
    *,
    base: LoadedDataset | None,
    partition_on: Sequence[str] | None,
    secondary_indices: Sequence[str],
    remove_labels: set[str],
    metadata: Mapping[str, Any] | None,
    storage_format: naming.MetadataFormat,
    table_name: str,
    expect_absent: bool,
    empty_schema: pa.Schema | None,
    explicit_partitions: bool,
    index_keys_written: list[str],
) -> DatasetHeader:
    bmd = base.metadata if base is not None else None
    pkeys = tuple(partition_on) if partition_on is not None else (bmd.partition_keys if bmd else ())
    if bmd is not None and tuple(bmd.partition_keys) != pkeys:
        raise InvalidInputError(
            f"Incompatible set of partition keys encountered: dataset {dataset_uuid!r} is "
            f"partitioned on {list(bmd.partition_keys)}, the write uses {list(pkeys)}."
        )
    schema = base.schema if base is not None else None
    origin_ref = "the stored schema" if base is not None else ""
    for c in chunks:
        if c.schema is None:
            continue
        cs = normalize_schema(c.schema, pkeys) if pkeys != () else c.schema
        schema = compatible_merge(
            schema,
            cs,
            dataset_uuid=dataset_uuid,
            origin=c.origin or "a written partition",
            reference_origin=origin_ref or "the first written partition",
        )
        origin_ref = origin_ref or (c.origin or "the first written partition")
    if schema is None:
        schema = empty_schema
    if schema is None:
        raise InvalidInputError(f"Nothing to commit for dataset {dataset_uuid!r}.")
    schema_changed = base is None or not schema.equals(base.schema, check_metadata=True)

    existing_idx = set(bmd.indices) | set(bmd.embedded_indices) if bmd else set()
    new_idx = set(secondary_indices)
    survivors = set(bmd.partitions) - remove_labels if bmd is not None else set()
    if new_idx - existing_idx and survivors:
        missing = sorted(new_idx - existing_idx)
        raise InvalidInputError(
            f"Incorrect indices provided for dataset {dataset_uuid!r}: {missing} are not "
            "indexed yet; build them with build_dataset_indices first."
        )
    all_idx = sorted(existing_idx | new_idx)
    for col in all_idx:
        if col not in schema.names:
            raise InvalidInputError(
                f"Index column {col!r} is not in the schema of {dataset_uuid!r}."
            )
        if col in pkeys:
            raise InvalidInputError(
                f"Cannot create secondary index on partition columns: [{col!r}]."
            )

    new_parts = [p for c in chunks for p in c.partitions]
    old_parts = dict(bmd.partitions) if bmd else {}
    removed = {lb for lb in remove_labels if lb in old_parts}
    partitions = {lb: k for lb, k in old_parts.items() if lb not in removed}
    for p in new_parts:
        if p.label in partitions:
            raise CommitConflictError(f"Partition label {p.label!r} already exists.")
        partitions[p.label] = p.key

    loaded = base
    if base is not None:
        need = [c for c in all_idx if c in existing_idx and (new_parts or removed)]
        loaded = load_indices(store, base, need)
    index_refs: dict[str, str] = {}
    for col in all_idx:
        add = [p.index_pairs[col] for p in new_parts if col in p.index_pairs]
        if len(add) != len(new_parts):
            raise InvalidInputError(
                f"Written partitions lack index values for {col!r}; write chunks with all "
                "indexed columns."
            )
        if bmd is not None and col in bmd.indices and not add and not removed:
            index_refs[col] = bmd.indices[col]
            continue
        current = loaded.indices.get(col) if loaded is not None else None
        t = schema.field(col).type
        if current is None:
            idx = build_index(col, t, add) if add else empty_index(col, t)
        else:
            idx = merge_index(col, current, add, removed)
        key = _write_index(store, dataset_uuid, col, idx)
        index_keys_written.append(key)
        index_refs[col] = key

    user_meta: dict[str, Any] = dict(bmd.metadata) if bmd else {}
    if "creation_time" not in user_meta:
        user_meta = {"creation_time": _now_iso(), **user_meta}
    if metadata:
        for k, v in metadata.items():
            if k == "creation_time" and "creation_time" in user_meta:
                continue
            user_meta[k] = v
    new_md = DatasetHeader(
        uuid=dataset_uuid,
        partitions=partitions,
        table_name=table_name if bmd is None else bmd.table_name,
        partition_keys=pkeys,
        indices=index_refs,
        embedded_indices={},
        metadata=user_meta,
        explicit_partitions=explicit_partitions,
        storage_format=storage_format if bmd is None else bmd.storage_format,
        extra=dict(bmd.extra) if bmd else {},
    )
    commit(
        store,
        new_md,
        base_header=base.header_bytes if base is not None else None,
        expect_absent=expect_absent,
        schema_bytes=schema_to_bytes(schema) if schema_changed else None,
    )
    return new_md
