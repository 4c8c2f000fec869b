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
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pyarrow as pa

from kartoframe.errors import CommitConflictError, CorruptMetadataError, InvalidInputError
from kartoframe.format import naming
from kartoframe.format.commit_args import check_app_transaction, check_commit_info
from kartoframe.format.convert import frame_to_table, storage_table
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.header import DatasetHeader, kartoframe_section, with_kartoframe_section
from kartoframe.format.index import (
    build_index,
    empty_index,
    index_to_bytes,
    index_value_pairs,
    merge_index,
)
from kartoframe.format.schema import (
    SchemaChange,
    SchemaEvolution,
    compatible_merge,
    evolve_schema,
    normalize_schema,
    schema_to_bytes,
)
from kartoframe.format.statistics import (
    SliceStatistics,
    StatisticsRef,
    assemble_statistics,
    merge_statistics,
    slice_statistics,
    statistics_key,
    statistics_to_bytes,
    value_list_candidates,
    with_files,
)
from kartoframe.plan.write import check_write_columns, new_file_uuid, plan_partitions
from kartoframe.storage.commit import (
    Built,
    Intent,
    commit_transaction,
    committed_version,
)
from kartoframe.storage.csv_files import CsvSerializer, csv_key, write_csv
from kartoframe.storage.parquet import write_table
from kartoframe.storage.resolve import load_indices, load_statistics
from kartoframe.storage.store import Store

__all__ = [
    "ChunkResult",
    "DataSerializer",
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


#: How data files are written: Parquet (the default) or CSV (plateau's ``CsvSerializer``).
DataSerializer = ParquetSerializer | CsvSerializer


@dataclasses.dataclass(frozen=True, slots=True)
class WrittenPartition:
    """A data file written by a chunk.

    ``statistics`` is the file's row of per-file statistics (see
    :mod:`kartoframe.format.statistics`), or None if they were not computed.
    """

    label: str
    key: str
    rows: int
    size: int
    index_pairs: Mapping[str, pa.Table]
    statistics: pa.Table | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class ChunkResult:
    """What a chunk write returns to the committer (small and picklable)."""

    partitions: tuple[WrittenPartition, ...]
    schema: pa.Schema | None
    origin: str


def delete_files(store: Store, keys: Iterable[str]) -> None:
    """Best-effort removal of files written by a failed write.

    Called while an exception is handled: if that exception was raised after the write's
    version was committed (see :func:`kartoframe.storage.commit.committed_version`), the
    files are referenced and nothing is deleted.
    """
    if committed_version(sys.exc_info()[1]) is not None:
        return
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
    serializer: DataSerializer | None = None,
    sort_partitions_by: Sequence[str] = (),
    origin: str = "",
    max_workers: int = 4,
    file_uuid: str | None = None,
    statistics: bool = True,
    bloom_filter_columns: Sequence[str] = (),
) -> ChunkResult:
    """Write one input frame as data files (no header change).

    ``df`` may be a pandas DataFrame or a pyarrow Table. Partition columns are removed
    from the files; nulls in them are refused. Files get fresh uuid names (or
    ``file_uuid``, which must be unique per call: the Spark engine prefixes it with a
    job id so that a failed job can find and remove its files). Unless ``statistics``
    is False, per-file statistics are computed from the written slices (bloom filters
    for ``bloom_filter_columns``) and returned with the result for the commit.
    """
    serializer = serializer or ParquetSerializer()
    table = df if isinstance(df, pa.Table) else frame_to_table(df, what=origin or "DataFrame")
    check_write_columns(table.schema, partition_on, index_columns, what=origin or "the data")
    schema = normalize_schema(table.schema, partition_on)
    plan = plan_partitions(
        table,
        partition_on,
        file_uuid=file_uuid or new_file_uuid(),
        sort_by=list(sort_partitions_by),
    )
    candidates = _value_list_candidates(plan.body) if statistics else None
    keys: list[str] = []

    def _one(i: int) -> tuple[WrittenPartition, SliceStatistics | None]:
        # gather, encode and drop one file's rows: no reordered copy of the whole chunk
        label = plan.labels[i]
        rows = plan.rows(i)
        key = naming.data_key(dataset_uuid, table_name, label)
        if isinstance(serializer, CsvSerializer):
            key = csv_key(key, serializer)
            keys.append(key)
            size = write_csv(store, key, rows, serializer)
        else:
            keys.append(key)
            size = write_table(
                store,
                key,
                storage_table(rows),
                compression=serializer.compression.lower() if serializer.compression else None,
                row_group_size=serializer.chunk_size,
            )
        pairs = {c: index_value_pairs(c, rows[c], label) for c in index_columns}
        stats = None
        if candidates is not None:
            stats = _slice_statistics(rows, candidates, bloom_filter_columns)
        return WrittenPartition(label, key, rows.num_rows, size, pairs), stats

    results: list[tuple[WrittenPartition, SliceStatistics | None]] = []
    try:
        if len(plan) > 1 and max_workers > 1:
            with ThreadPoolExecutor(max_workers=min(max_workers, len(plan))) as pool:
                results = list(pool.map(_one, range(len(plan))))
        else:
            results = [_one(i) for i in range(len(plan))]
    except BaseException:
        delete_files(store, keys)
        raise
    written = [w for w, _ in results]
    parts = [st for _, st in results]
    if written and candidates is not None and all(st is not None for st in parts):
        written = _with_statistics(written, assemble_statistics(parts))  # type: ignore[arg-type]
    return ChunkResult(tuple(written), schema, origin)


def _value_list_candidates(body: pa.Table) -> frozenset[str] | None:
    """Value-list candidates of a chunk, or None: no statistics (no compute kernels)."""
    try:
        return value_list_candidates(body)
    except pa.ArrowException:
        return None


def _slice_statistics(
    rows: pa.Table, candidates: frozenset[str], bloom_filter_columns: Sequence[str]
) -> SliceStatistics | None:
    """One file's statistics, or None for types without compute kernels."""
    try:
        return slice_statistics(
            rows, value_list_columns=candidates, bloom_filter_columns=bloom_filter_columns
        )
    except pa.ArrowException:
        return None  # files without statistics


def _with_statistics(written: list[WrittenPartition], computed: pa.Table) -> list[WrittenPartition]:
    """Attach each file's statistics row (computed from the slices as written)."""
    labels = [w.label for w in written]
    stats = with_files(computed, labels, [w.key for w in written], [w.size for w in written])
    # ``take`` copies: a row must not drag the whole chunk's buffers along when pickled
    return [
        dataclasses.replace(w, statistics=stats.take(pa.array([i], pa.int64())))
        for i, w in enumerate(written)
    ]


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


def _write_statistics(store: Store, dataset_uuid: str, stats: pa.Table) -> str:
    data = statistics_to_bytes(stats)
    ts = dt.datetime.now(dt.UTC)
    for _ in range(1000):
        key = statistics_key(dataset_uuid, ts.isoformat())
        if store.put_if_absent(key, data):
            return key
        ts += dt.timedelta(microseconds=1)
    raise CommitConflictError(f"Could not find a free statistics file name for {dataset_uuid!r}.")


def _base_statistics(store: Store, base: LoadedDataset | None) -> pa.Table | None:
    """The base's statistics; an unreadable file counts as none (rows become unknown)."""
    if base is None:
        return None
    try:
        return load_statistics(store, base).statistics
    except CorruptMetadataError:
        return None


#: Table name kartoframe cannot share with its own side files.
_RESERVED_TABLE = "_kartoframe"


def _schema_record(
    section: dict[str, Any],
    schema: pa.Schema,
    base: LoadedDataset | None,
    change: SchemaChange,
) -> None:
    """Update the schema record of the ``kartoframe`` map in place.

    ``schema`` is the schema as an Arrow IPC message (base64), ``schema_version`` counts
    the schema changes and ``schema_history`` lists them (``create``, ``adopt`` for a
    dataset first committed by kartoframe after another writer, ``add_columns``, and
    ``external`` when the stored schema differs from the recorded one).
    """
    import base64

    now = _now_iso()
    history = section.get("schema_history")
    history = list(history) if isinstance(history, list) else []
    version = section.get("schema_version")
    version = version if isinstance(version, int) and not isinstance(version, bool) else None
    if base is None:
        version, history = 1, []
        history.append(
            {"version": 1, "timestamp": now, "change": "create", "columns": _types(schema)}
        )
    elif version is None:
        version, history = 1, []
        history.append(
            {"version": 1, "timestamp": now, "change": "adopt", "columns": _types(base.schema)}
        )
    else:
        recorded = _recorded_schema(section)
        if recorded is not None and _types(recorded) != _types(base.schema):
            version += 1
            history.append(
                {
                    "version": version,
                    "timestamp": now,
                    "change": "external",
                    "columns": _types(base.schema),
                }
            )
    if change:
        version += 1
        event: dict[str, Any] = {"version": version, "timestamp": now, "change": "add_columns"}
        event["added"] = {n: str(t) for n, t in change.added}
        event["widened"] = {n: [str(a), str(b)] for n, a, b in change.widened}
        history.append(event)
    section["schema"] = base64.b64encode(schema.serialize().to_pybytes()).decode("ascii")
    section["schema_version"] = version
    section["schema_history"] = history


def _types(schema: pa.Schema) -> dict[str, str]:
    return {f.name: str(f.type) for f in schema}


def _recorded_schema(section: Mapping[str, Any]) -> pa.Schema | None:
    """The schema recorded in a ``kartoframe`` map (None if absent or undecodable)."""
    import base64
    import binascii

    raw = section.get("schema")
    if not isinstance(raw, str):
        return None
    try:
        return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(raw, validate=True)))
    except (binascii.Error, ValueError, pa.ArrowException):
        return None


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
    schema_evolution: SchemaEvolution = "none",
    statistics: Sequence[pa.Table] = (),
    bloom_filter_columns: Sequence[str] | None = None,
    app_id: str | None = None,
    app_version: int | None = None,
    commit_info: Mapping[str, Any] | None = None,
    operation: str | None = None,
    operation_parameters: Mapping[str, Any] | None = None,
    remove_scope: Callable[[LoadedDataset], set[str]] | None = None,
    create_or_update: bool = False,
) -> DatasetHeader:
    """Validate all chunks against each other and the base, merge indices, publish.

    The header is published through the transaction log
    (:func:`kartoframe.storage.commit.commit_transaction`): if another writer commits
    first, the header is rebuilt on the newer version (indices merged again) unless the
    two commits conflict (``docs/transactions.md``).

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
    schema_evolution
        ``"none"``: every chunk must match the stored schema. ``"add_columns"``: chunks
        may add nullable columns and widen decimals (recorded as a schema change in the
        header's ``kartoframe`` map); dropping or retyping a column is still refused.
    statistics
        Extra per-file statistics to merge in (statistics builds); the chunks' own
        statistics are always merged.
    bloom_filter_columns
        New bloom-filter configuration of the dataset (None: keep the base's).
    app_id, app_version
        Application transaction id: if the dataset already records ``app_version`` (or a
        higher one) for ``app_id``, nothing is committed (the written files are deleted)
        and the current header is returned.
    commit_info
        A JSON-serialisable dict recorded with the commit (``dataset_history``).
    operation, operation_parameters
        How the commit is named in the history (default: derived from the change).
    remove_scope
        Re-evaluates ``remove_labels`` on a newer version when the commit is rebased
        (serialisable ``delete_scope``); None: any concurrent change in the partition
        directories of ``remove_labels`` is a conflict.
    create_or_update
        With ``base=None`` and ``expect_absent``: an update of a dataset that did not
        exist (``update_dataset_from_dataframes`` on a missing dataset). If another
        writer creates the dataset first, this commit is rebuilt as an update of that
        version instead of failing (every such writer lands).

    Raises
    ------
    SchemaError
        Chunks disagree with each other or with the stored schema.
    CommitConflictError
        The dataset changed concurrently in a conflicting way.
    """
    written_keys = [p.key for c in chunks for p in c.partitions] if owns_files else []
    index_keys_written: list[str] = []
    removes = set(remove_labels)
    app_id, app_version = check_app_transaction(app_id, app_version)
    info = check_commit_info(commit_info)
    mode = "update" if base is not None else ("create" if expect_absent else "overwrite")
    if mode == "create" and create_or_update:
        mode = "create_or_update"
    n_files = sum(len(c.partitions) for c in chunks)
    params: dict[str, Any] = {"files_added": n_files}
    if removes:
        params["partitions_removed"] = len(removes)
    if partition_on is not None:
        params["partition_on"] = list(partition_on)
    if secondary_indices:
        params["secondary_indices"] = list(secondary_indices)
    if metadata:
        params["metadata_keys"] = sorted(str(k) for k in metadata)
    if schema_evolution != "none":
        params["schema_evolution"] = schema_evolution
    params.update(operation_parameters or {})
    if n_files and removes:
        as_update = "UPDATE"
    elif n_files:
        as_update = "APPEND"
    elif removes:
        as_update = "DELETE_PARTITIONS"
    else:
        as_update = "SET_METADATA" if metadata else "UPDATE"
    if operation is None:
        operation = (
            as_update if mode == "update" else ("CREATE" if mode != "overwrite" else "OVERWRITE")
        )

    def _build(b: LoadedDataset | None) -> Built:
        start = len(index_keys_written)
        md, schema, schema_bytes = _commit(
            store,
            dataset_uuid,
            chunks,
            base=b,
            partition_on=partition_on,
            secondary_indices=secondary_indices,
            remove_labels=removes,
            metadata=metadata,
            storage_format=storage_format,
            table_name=table_name,
            expect_absent=expect_absent,
            empty_schema=empty_schema,
            explicit_partitions=explicit_partitions,
            index_keys_written=index_keys_written,
            schema_evolution=schema_evolution,
            extra_statistics=statistics,
            bloom_filter_columns=bloom_filter_columns,
        )
        return Built(md, schema, schema_bytes, tuple(index_keys_written[start:]))

    intent = Intent(
        mode,  # type: ignore[arg-type]
        operation,
        params,
        removes=frozenset(removes),
        scope=remove_scope,
        app_id=app_id,
        app_version=app_version,
        commit_info=info,
        update_operation=as_update,
    )
    try:
        result = commit_transaction(store, dataset_uuid, _build, base=base, intent=intent)
    except BaseException:
        delete_files(store, written_keys + index_keys_written)  # unless committed
        raise
    if result.skipped:
        delete_files(store, written_keys)
    assert result.header is not None
    return result.header


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
    schema_evolution: SchemaEvolution = "none",
    extra_statistics: Sequence[pa.Table] = (),
    bloom_filter_columns: Sequence[str] | None = None,
) -> tuple[DatasetHeader, pa.Schema, bytes | None]:
    """Build the new header on ``base`` (writing index and statistics files).

    Returns the header, the schema and the new ``_common_metadata`` bytes (None if the
    schema is unchanged); the commit protocol publishes them.
    """
    bmd = base.metadata if base is not None else None
    pkeys = tuple(partition_on) if partition_on is not None else (bmd.partition_keys if bmd else ())
    if bmd is not None and tuple(bmd.partition_keys) != pkeys:
        raise InvalidInputError(
            f"Incompatible set of partition keys encountered: dataset {dataset_uuid!r} is "
            f"partitioned on {list(bmd.partition_keys)}, the write uses {list(pkeys)}."
        )
    if schema_evolution not in ("none", "add_columns"):
        raise InvalidInputError(
            f"schema_evolution must be 'none' or 'add_columns', got {schema_evolution!r}."
        )
    schema = base.schema if base is not None else None
    origin_ref = "the stored schema" if base is not None else ""
    change = SchemaChange()
    for c in chunks:
        if c.schema is None:
            continue
        cs = normalize_schema(c.schema, pkeys) if pkeys != () else c.schema
        if schema_evolution == "add_columns":
            schema, step = evolve_schema(
                schema,
                cs,
                dataset_uuid=dataset_uuid,
                origin=c.origin or "a written partition",
                partition_keys=pkeys,
                required=base.schema.names if base is not None else (),
                reference_origin=origin_ref or "the first written partition",
            )
            change = change.then(step) if base is not None else change
        else:
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
    # an implicit base's schema may have been completed from its data files (null columns,
    # see storage/null_types.py): the commit that makes it explicit stores it
    schema_changed = (
        base is None
        or not base.metadata.explicit_partitions
        or not schema.equals(base.schema, check_metadata=True)
    )

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
        need = [
            c
            for c in all_idx
            if c in existing_idx and (new_parts or removed or c in base.metadata.embedded_indices)
        ]
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
    section = kartoframe_section(bmd) if bmd is not None else {}
    _schema_record(section, schema, base, change)
    _statistics_record(
        store,
        dataset_uuid,
        section,
        base=base,
        chunks=chunks,
        extra=extra_statistics,
        partitions=partitions,
        changed=bool(new_parts or removed),
        schema=schema,
        partition_keys=pkeys,
        table_name=table_name if bmd is None else bmd.table_name,
        bloom_filter_columns=bloom_filter_columns,
        keys_written=index_keys_written,
    )
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
    new_md = with_kartoframe_section(new_md, section)
    return new_md, schema, schema_to_bytes(schema) if schema_changed else None


def _statistics_record(
    store: Store,
    dataset_uuid: str,
    section: dict[str, Any],
    *,
    base: LoadedDataset | None,
    chunks: Sequence[ChunkResult],
    extra: Sequence[pa.Table],
    partitions: Mapping[str, str],
    changed: bool,
    schema: pa.Schema,
    partition_keys: Sequence[str],
    table_name: str,
    bloom_filter_columns: Sequence[str] | None,
    keys_written: list[str],
) -> None:
    """Write the statistics file of the new header and update the reference in place.

    The file is rewritten when the partitions change (or statistics are added): rows of
    the base file are kept for the partitions the new header still lists with the same
    data file, rows of the written chunks are added. A header without any described
    partition gets no statistics reference.
    """
    ref = StatisticsRef.from_dict(section.get("statistics"), dataset_uuid)
    blooms = tuple(bloom_filter_columns) if bloom_filter_columns is not None else None
    new = [p.statistics for c in chunks for p in c.partitions if p.statistics is not None]
    new += list(extra)
    if table_name == _RESERVED_TABLE or not partitions:
        section.pop("statistics", None)
        return
    if not changed and not new and (blooms is None or ref is None):
        return
    if blooms is None:
        blooms = ref.bloom_filter_columns if ref is not None else ()
    old = _base_statistics(store, base) if ref is not None else None
    merged = merge_statistics(old, new, partitions, schema, partition_keys, blooms)
    if merged.num_rows == 0 and not blooms:
        section.pop("statistics", None)
        return
    key = _write_statistics(store, dataset_uuid, merged)
    keys_written.append(key)
    ref = StatisticsRef(key, partitions=merged.num_rows, bloom_filter_columns=blooms)
    section["statistics"] = ref.to_dict()
