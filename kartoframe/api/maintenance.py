"""Delete, garbage-collect and index existing datasets."""

from __future__ import annotations

from collections.abc import Sequence

from kartoframe.api._args import StoreInput, check_uuid, ensure_store, str_list
from kartoframe.api.write import DatasetMetadataResult
from kartoframe.errors import ColumnNotFoundError, DatasetNotFoundError, InvalidInputError
from kartoframe.execution.kernel import read_task_table
from kartoframe.execution.write import ChunkResult, WrittenPartition, commit_write
from kartoframe.format import naming
from kartoframe.format.index import check_indexable, index_value_pairs
from kartoframe.plan.scan import plan_scan
from kartoframe.storage.commit import delete_headers
from kartoframe.storage.resolve import load_dataset, read_header
from kartoframe.storage.store import Store

__all__ = [
    "build_dataset_indices",
    "delete_dataset",
    "garbage_collect_dataset",
    "unreferenced_keys",
]


def _referenced(store: Store, dataset_uuid: str) -> tuple[set[str], str]:
    loaded = load_dataset(store, dataset_uuid)
    md = loaded.metadata
    keys = set(md.partitions.values()) | set(md.indices.values())
    keys.add(naming.common_metadata_key(md.uuid, md.table_name))
    return keys, md.table_name


def unreferenced_keys(store: Store, dataset_uuid: str) -> list[str]:
    """Keys below ``<uuid>/<table>/`` and ``<uuid>/indices/`` no header references."""
    keys, table = _referenced(store, dataset_uuid)
    found = read_header(store, dataset_uuid)
    assert found is not None
    if not found[0].explicit_partitions:
        # implicit dataset: every data file is live
        candidates = list(store.iter_keys(f"{dataset_uuid}/indices/"))
    else:
        candidates = list(store.iter_keys(naming.table_prefix(dataset_uuid, table)))
        candidates += list(store.iter_keys(f"{dataset_uuid}/indices/"))
    return [k for k in candidates if k not in keys]


def garbage_collect_dataset(dataset_uuid: str, store: StoreInput) -> list[str]:
    """Delete files of a dataset that its header no longer references.

    Removes orphaned data files (from overwritten or deleted partitions, or failed
    writes) and superseded index files; keeps ``_common_metadata``.

    Returns
    -------
    list of str
        The deleted keys.
    """
    st = ensure_store(store)
    uuid = check_uuid(dataset_uuid)
    garbage = unreferenced_keys(st, uuid)
    st.delete_many(garbage)
    return garbage


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
    if read_header(st, uuid) is None:
        raise DatasetNotFoundError(uuid, st.url)
    keys, _ = _referenced(st, uuid)
    garbage = unreferenced_keys(st, uuid)
    delete_headers(st, uuid)
    st.delete_many(sorted(keys | set(garbage)))


def build_dataset_indices(
    store: StoreInput, dataset_uuid: str, columns: Sequence[str]
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
    for task in plan.tasks:
        table = read_task_table(plan, task, st)
        f = task.files[0]
        pairs = {c: index_value_pairs(c, table[c], f.label) for c in all_cols}
        parts.append(WrittenPartition(f.label, f.key, table.num_rows, 0, pairs))
    chunk = ChunkResult(tuple(parts), None, "index build")
    base_without = loaded.metadata.replace(partitions={}, indices={}, embedded_indices={})
    from kartoframe.format.dataset import LoadedDataset

    rebuilt = commit_write(
        st,
        uuid,
        [chunk],
        base=LoadedDataset(base_without, loaded.schema, {}, loaded.header_bytes),
        secondary_indices=all_cols,
        storage_format=md.storage_format,
        table_name=md.table_name,
        owns_files=False,
    )
    del rebuilt
    return DatasetMetadataResult(uuid, st)
