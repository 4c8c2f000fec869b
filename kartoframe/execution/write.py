"""The one commit of every write: validate the chunks, write side files, fold, publish.

Every write path (eager, iterator, dask, Spark, cubes, index and statistics builds) is:
:func:`~kartoframe.execution.chunks.write_chunk` for each input chunk, then one
:func:`commit_write` on the driver. The commit is split by responsibility:

1. :func:`kartoframe.plan.commit_plan.plan_commit` (pure) validates the chunks against each
   other and the base and says which of the base's side files it merges into;
2. storage loads them (:func:`~kartoframe.storage.resolve.load_indices`,
   :func:`~kartoframe.storage.side_files.kept_statistics`);
3. the new index and statistics tables are computed (pure) and written by storage
   (:mod:`kartoframe.storage.side_files`);
4. :func:`kartoframe.format.fold.fold` (pure) folds the header changes into the new header;
5. :func:`kartoframe.storage.commit.commit_transaction` publishes it (and rebuilds on a
   newer version if another writer committed first).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

import pyarrow as pa

from kartoframe.execution.chunks import (
    DataSerializer,
    ParquetSerializer,
    delete_files,
    write_chunk,
)
from kartoframe.format import naming
from kartoframe.format.commit_args import NO_COMMIT_OPTIONS, CommitOptions, check_commit_info
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.fold import fold
from kartoframe.format.header import DatasetHeader
from kartoframe.format.index_group import IndexSource
from kartoframe.format.schema import SchemaEvolution, schema_to_bytes
from kartoframe.format.statistics import StatisticsRef
from kartoframe.plan.commit_plan import (
    CommitPlan,
    CommitShape,
    StatisticsStep,
    header_changes,
    index_tables,
    merged_statistics,
    plan_commit,
    statistics_step,
)
from kartoframe.plan.write import ChunkResult, WrittenPartition
from kartoframe.plan.write_request import ResolvedWrite
from kartoframe.storage.commit import commit_transaction
from kartoframe.storage.commit_values import Built, Intent
from kartoframe.storage.log import current_state
from kartoframe.storage.resolve import load_indices
from kartoframe.storage.side_files import (
    kept_statistics,
    write_index_file,
    write_statistics_file,
)
from kartoframe.storage.store import Store

__all__ = [
    "ChunkResult",
    "already_recorded",
    "CommitOptions",
    "DataSerializer",
    "ParquetSerializer",
    "WrittenPartition",
    "commit_resolved",
    "commit_write",
    "only_removed_files",
    "delete_files",
    "write_chunk",
]


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
    commit: CommitOptions = NO_COMMIT_OPTIONS,
    operation: str | None = None,
    operation_parameters: Mapping[str, Any] | None = None,
    remove_scope: Callable[[LoadedDataset], set[str]] | None = None,
    create_or_update: bool = False,
    optimized: Mapping[str, Sequence[str]] | None = None,
    placed: Mapping[str, str] | None = None,
    change_files: Sequence[str] | None = None,
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
    commit
        :class:`~kartoframe.format.commit_args.CommitOptions`: the application transaction
        (if the dataset already records ``app_version``, or a higher one, for ``app_id``,
        nothing is committed, the written files are deleted and the current header is
        returned) and the ``commit_info`` dict recorded with the commit.
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
    optimized
        Labels of the written files that ``optimize`` produced, with their sort order
        (recorded in the header, :mod:`kartoframe.format.optimized`).
    placed
        Added label -> removed label whose place in the header's (commit) order it
        takes (:class:`~kartoframe.format.fold.PlacePartitions`); others go to the end.
    change_files
        Change files written for this commit (its exact change feed, recorded in the
        log entry; deleted with the data files if the commit fails or is skipped).

    Raises
    ------
    SchemaError
        Chunks disagree with each other or with the stored schema.
    CommitConflictError
        The dataset changed concurrently in a conflicting way.
    """
    written_keys = [p.key for c in chunks for p in c.partitions] if owns_files else []
    written_keys += list(change_files or ())
    index_keys_written: list[str] = []
    removes = set(remove_labels)
    txn = CommitOptions.of(commit.app_id, commit.app_version)
    info = check_commit_info(commit.commit_info)
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

    shape = CommitShape(
        partition_on=tuple(partition_on) if partition_on is not None else None,
        secondary_indices=tuple(secondary_indices),
        remove_labels=frozenset(removes),
        metadata=metadata,
        storage_format=storage_format,
        table_name=table_name,
        empty_schema=empty_schema,
        explicit_partitions=explicit_partitions,
        schema_evolution=schema_evolution,
        extra_statistics=tuple(statistics),
        bloom_filter_columns=(
            tuple(bloom_filter_columns) if bloom_filter_columns is not None else None
        ),
        optimized={lb: tuple(o) for lb, o in optimized.items()} if optimized else None,
        placed=dict(placed) if placed else None,
    )

    def _build(b: LoadedDataset | None) -> Built:
        start = len(index_keys_written)
        md, schema, schema_bytes = _commit(
            store, dataset_uuid, chunks, b, shape, index_keys_written
        )
        return Built(md, schema, schema_bytes, tuple(index_keys_written[start:]))

    intent = Intent(
        mode,  # type: ignore[arg-type]
        operation,
        params,
        removes=frozenset(removes),
        scope=remove_scope,
        app_id=txn.app_id,
        app_version=txn.app_version,
        commit_info=info,
        update_operation=as_update,
        changes=tuple(change_files) if change_files is not None else None,
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


def already_recorded(store: Store, dataset_uuid: str, commit: CommitOptions) -> bool:
    """Whether the dataset already records the application transaction of ``commit``
    (a retried step: nothing is written). No transaction: False, without any read.
    """
    if commit.app_id is None:
        return False
    state = current_state(store, dataset_uuid)
    return commit.recorded_in(state.header if state else None)


def only_removed_files(_: LoadedDataset) -> set[str]:
    """The ``remove_scope`` of a commit that rewrites given files (optimize, merge): on a
    newer version it removes nothing beyond them, so concurrent appends, even into the
    same partitions, are not a conflict; a concurrent removal of one of them is.
    """
    return set()


def commit_resolved(
    store: Store, target: ResolvedWrite, chunks: Sequence[ChunkResult], **kwargs: Any
) -> DatasetHeader:
    """:func:`commit_write` of a resolved write request (``kwargs``: the other arguments)."""
    return commit_write(store, target.uuid, chunks, **target.commit_arguments(), **kwargs)


def _commit(
    store: Store,
    dataset_uuid: str,
    chunks: Sequence[ChunkResult],
    base: LoadedDataset | None,
    shape: CommitShape,
    keys_written: list[str],
) -> tuple[DatasetHeader, pa.Schema, bytes | None]:
    """Build the new header on ``base``: plan (pure), side files (storage), fold (pure).

    Returns the header, the schema and the new ``_common_metadata`` bytes (None if the
    schema is unchanged); the commit protocol publishes them. Every side file written is
    appended to ``keys_written`` as soon as it exists.
    """
    plan = plan_commit(dataset_uuid, chunks, base, shape)
    loaded = load_indices(store, base, plan.load_indices) if base is not None else None
    tables = index_tables(plan, loaded.indices if loaded is not None else {})
    refs = {col: table for col, table in tables.items() if isinstance(table, str)}
    new = {col: table for col, table in tables.items() if not isinstance(table, str)}
    step = statistics_step(plan)
    if not new or step.action in ("keep", "drop"):
        refs.update(_write_index_files(store, dataset_uuid, new, keys_written))
        stats = _write_statistics(store, dataset_uuid, base, plan, step, keys_written)
    else:
        # the index files are written on a thread while the statistics are merged and
        # written (both encode Parquet, which releases the GIL; on an object store both
        # wait on uploads). Either failing still records every key written before.
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="kf-index-files") as side:
            indexing = side.submit(_write_index_files, store, dataset_uuid, new, keys_written)
            stats = _write_statistics(store, dataset_uuid, base, plan, step, keys_written)
            refs.update(indexing.result())
    now = dt.datetime.now(dt.UTC).isoformat()
    header = fold(base, header_changes(plan, refs, stats), now=now)
    return header, plan.schema, schema_to_bytes(plan.schema) if plan.schema_changed else None


def _write_index_files(
    store: Store,
    dataset_uuid: str,
    tables: Mapping[str, pa.Table | IndexSource],
    keys_written: list[str],
) -> dict[str, str]:
    """Write each new index as an index file; return their keys (also appended to
    ``keys_written`` as each file exists).
    """
    refs = {}
    for col, table in tables.items():
        refs[col] = write_index_file(store, dataset_uuid, col, table)
        keys_written.append(refs[col])
    return refs


def _write_statistics(
    store: Store,
    dataset_uuid: str,
    base: LoadedDataset | None,
    plan: CommitPlan,
    step: StatisticsStep,
    keys_written: list[str],
) -> StatisticsRef | Literal["keep"] | None:
    """Carry out the commit's statistics step; return the new header's reference (a
    written file's key is appended to ``keys_written``).
    """
    if step.action == "merge":
        # only the rows of the base's files the new header keeps (an optimize or a large
        # replacement keeps few: the others' bloom filters are never decoded)
        old = kept_statistics(store, base, plan.partitions) if step.read_base else None
        merged = merged_statistics(plan, step, old)
        if merged is None:
            return None
        key = write_statistics_file(store, dataset_uuid, merged)
        keys_written.append(key)
        return StatisticsRef(key, partitions=merged.num_rows, bloom_filter_columns=step.blooms)
    if step.action == "append":
        ref = step.base_ref
        assert ref is not None
        delta = merged_statistics(plan, step, None)
        if delta is None or not delta.num_rows:
            return "keep"  # no row for a partition of the new header: nothing to add
        key = write_statistics_file(store, dataset_uuid, delta)
        keys_written.append(key)
        return dataclasses.replace(
            ref, partitions=ref.partitions + delta.num_rows, deltas=(*ref.deltas, key)
        )
    return "keep" if step.action == "keep" else None
