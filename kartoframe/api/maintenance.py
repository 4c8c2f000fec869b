"""Delete, garbage-collect and index existing datasets."""

from __future__ import annotations

import re
from collections.abc import Sequence

from kartoframe.api._args import StoreInput, check_uuid, ensure_store, str_list
from kartoframe.api.write import DatasetMetadataResult
from kartoframe.errors import ColumnNotFoundError, DatasetNotFoundError, InvalidInputError
from kartoframe.execution.kernel import read_task_table
from kartoframe.execution.write import ChunkResult, WrittenPartition, commit_write
from kartoframe.format import naming, txlog
from kartoframe.format.index import check_indexable, index_value_pairs
from kartoframe.format.statistics import STATISTICS_DIR, STATISTICS_SUFFIX
from kartoframe.plan.scan import plan_scan
from kartoframe.progress import track
from kartoframe.storage.lifecycle import delete_log, mark_deleted
from kartoframe.storage.resolve import dataset_exists, load_dataset, read_header, statistics_ref
from kartoframe.storage.retention import (
    DEFAULT_RETENTION_HOURS,
    check_retention,
    data_candidates,
    retained_versions,
)
from kartoframe.storage.store import Store

__all__ = [
    "build_dataset_indices",
    "delete_dataset",
    "garbage_collect_dataset",
    "leftover_keys",
    "unreferenced_keys",
]


def _referenced(store: Store, dataset_uuid: str) -> tuple[set[str], str]:
    loaded = load_dataset(store, dataset_uuid)
    md = loaded.metadata
    keys = set(md.partitions.values()) | set(md.indices.values())
    keys.add(naming.common_metadata_key(md.uuid, md.table_name))
    stats = statistics_ref(md)
    if stats is not None and stats.key is not None:
        keys.add(stats.key)
    return keys, md.table_name


def unreferenced_keys(
    store: Store, dataset_uuid: str, retention_hours: float | None = None
) -> list[str]:
    """Keys below ``<uuid>/<table>/``, ``<uuid>/indices/`` and ``<uuid>/_kartoframe/stats/``
    that the header does not reference (nor, with ``retention_hours``, any version that was
    current inside that window; see ``docs/transactions.md``).
    """
    if retention_hours is not None:
        kept = retained_versions(store, dataset_uuid, retention_hours)
        assert kept.current.header is not None
        return [k for k in data_candidates(store, kept.current.header) if k not in kept.referenced]
    keys, table = _referenced(store, dataset_uuid)
    found = read_header(store, dataset_uuid)
    assert found is not None
    if not found[0].explicit_partitions:
        # implicit dataset: every data file is live
        candidates = list(store.iter_keys(f"{dataset_uuid}/indices/"))
    else:
        candidates = list(store.iter_keys(naming.table_prefix(dataset_uuid, table)))
        candidates += list(store.iter_keys(f"{dataset_uuid}/indices/"))
    candidates += list(store.iter_keys(f"{dataset_uuid}/{STATISTICS_DIR}/"))
    return [k for k in candidates if k not in keys]


def garbage_collect_dataset(
    dataset_uuid: str,
    store: StoreInput,
    retention_hours: float = DEFAULT_RETENTION_HOURS,
) -> list[str]:
    """Delete files of a dataset that its header no longer references.

    Removes orphaned data files (from overwritten or deleted partitions, or failed
    writes) and superseded index and statistics files; keeps ``_common_metadata``.
    Files that a version inside the retention window still needs are kept, so readers of
    those versions (``version=`` / ``as_of=``, or a read that started before an update)
    keep working; ``retention_hours=0`` frees everything the current version does not
    reference (plateau's behaviour). Unlike :func:`kartoframe.vacuum_dataset` it deletes
    unreferenced files of any age (so never run it while a write is in progress) and
    leaves the transaction log alone.

    A dataset without a header (a failed create whose own cleanup failed too) is
    collected entirely: every file with a name kartoframe or plateau generates below
    ``<uuid>/`` (see :func:`leftover_keys`), log included.

    Parameters
    ----------
    dataset_uuid
        The dataset.
    store
        Store URL, :class:`kartoframe.Store` or factory.
    retention_hours
        Keep what versions current during this many past hours need (default 168).

    Returns
    -------
    list of str
        The deleted keys.

    Raises
    ------
    DatasetNotFoundError
        No header and no file a write of this dataset leaves.
    """
    st = ensure_store(store)
    uuid = check_uuid(dataset_uuid)
    hours = check_retention(retention_hours, force=True, what="garbage_collect_dataset")
    if read_header(st, uuid) is None:
        leftovers = leftover_keys(st, uuid)
        if not leftovers:
            raise DatasetNotFoundError(uuid, st.display_url)
        st.delete_many(leftovers)
        return leftovers
    garbage = unreferenced_keys(st, uuid, hours)
    st.delete_many(garbage)
    return garbage


def _leftover_pattern(dataset_uuid: str) -> re.Pattern[str]:
    """Data, ``_common_metadata``, index and statistics files a write of the dataset makes."""
    u = re.escape(dataset_uuid)
    reserved = "|".join(map(re.escape, sorted(naming.RESERVED_TABLE_NAMES)))
    table = rf"(?!(?:{reserved})/|indices/)[^/]+"
    return re.compile(
        rf"{u}/(?:"
        rf"{table}/(?:[^/]+/)*[0-9a-f]{{32}}{re.escape(naming.PARQUET_SUFFIX)}"
        rf"|{table}/{re.escape(naming.COMMON_METADATA)}"
        rf"|indices/[^/]+/[^/]+{re.escape(naming.INDEX_SUFFIX)}"
        rf"|{re.escape(STATISTICS_DIR)}/[^/]+{re.escape(STATISTICS_SUFFIX)}"
        r")"
    )


def leftover_keys(store: Store, dataset_uuid: str) -> list[str]:
    """Files a write of ``dataset_uuid`` left behind when the dataset has no header.

    A create that failed, and whose own cleanup failed too, leaves data, index,
    statistics and log files but no header. Only keys with the names kartoframe (and
    plateau) generate are listed: data files named by a 32-digit hex uuid, index and
    statistics files, ``_common_metadata`` and log entries. Anything else under the
    prefix (a folder of other files that happens to share the name) is never touched.
    """
    pattern = _leftover_pattern(dataset_uuid)
    log = txlog.log_prefix(dataset_uuid)
    return sorted(
        k
        for k in store.iter_keys(f"{dataset_uuid}/")
        if pattern.fullmatch(k)
        or (k.startswith(log) and txlog.parse_log_name(k[len(log) :]) is not None)
    )


def delete_dataset(dataset_uuid: str, store: StoreInput) -> None:
    """Delete a dataset: header first (so readers never see a partial dataset), then files.

    Whichever header exists (JSON or msgpack) is removed.

    Raises
    ------
    DatasetNotFoundError
        If the dataset does not exist.
    """
    st = ensure_store(store)
    uuid = check_uuid(dataset_uuid)
    if not dataset_exists(st, uuid):
        raise DatasetNotFoundError(uuid, st.display_url)
    keys, _ = _referenced(st, uuid)
    garbage = unreferenced_keys(st, uuid, 0.0)
    # the log records the deletion first: writers that started before lose their commit
    mark_deleted(st, uuid)
    st.delete_many(sorted(keys | set(garbage)))
    delete_log(st, uuid)


def build_dataset_indices(
    store: StoreInput,
    dataset_uuid: str,
    columns: Sequence[str],
    *,
    progress: bool = False,
) -> DatasetMetadataResult:
    """Build (or rebuild) secondary indices by scanning the needed columns.

    Parameters
    ----------
    store
        Store URL, :class:`kartoframe.Store` or factory.
    dataset_uuid
        The dataset.
    columns
        Columns to index (not partition keys).
    progress
        Show a progress bar of the files scanned (only on a terminal).
    """
    st = ensure_store(store)
    uuid = check_uuid(dataset_uuid)
    cols = str_list(columns, "columns")
    if not cols:
        raise InvalidInputError("columns must name at least one column to index.")
    loaded = load_dataset(st, uuid)
    md = loaded.metadata
    missing = [c for c in cols if c not in loaded.schema.names]
    if missing:
        raise ColumnNotFoundError(f"Cannot index unknown columns {missing} of {uuid!r}.")
    bad = [c for c in cols if c in md.partition_keys]
    if bad:
        raise InvalidInputError(f"Cannot create secondary index on partition columns: {bad}.")
    for c in cols:
        check_indexable(c, loaded.schema.field(c).type)
    all_cols = sorted(set(cols) | set(md.indices))
    plan = plan_scan(loaded, columns=all_cols)
    # rebuild every index from the data so all indices cover all partitions
    parts = []
    for task in track(plan.tasks, f"indexing {uuid}", enabled=progress, unit="files"):
        table = read_task_table(plan, task, st)
        f = task.files[0]
        pairs = {c: index_value_pairs(c, table[c], f.label) for c in all_cols}
        parts.append(WrittenPartition(f.label, f.key, table.num_rows, 0, pairs))
    chunk = ChunkResult(tuple(parts), None, "index build")
    # every partition is removed and re-added with its index values: a concurrent write
    # to any partition conflicts (this build read all of them)
    rebuilt = commit_write(
        st,
        uuid,
        [chunk],
        base=loaded,
        remove_labels=set(md.partitions),
        secondary_indices=all_cols,
        storage_format=md.storage_format,
        table_name=md.table_name,
        owns_files=False,
        operation="BUILD_INDEX",
        operation_parameters={"columns": cols},
    )
    del rebuilt
    return DatasetMetadataResult(uuid, st)
