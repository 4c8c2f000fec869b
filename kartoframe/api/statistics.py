"""Per-file data-skipping statistics: inspect them, and build them for existing datasets.

Writes maintain the statistics (see ``docs/statistics.md``); these functions show them
and add them to datasets written without them (by plateau, kartothek or an older
kartoframe).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import pandas as pd
import pyarrow as pa

from kartoframe.api._args import StoreInput, check_uuid, ensure_store, str_list
from kartoframe.api.write import DatasetMetadataResult
from kartoframe.errors import ColumnNotFoundError, CorruptMetadataError, InvalidInputError
from kartoframe.execution.kernel import read_task_table
from kartoframe.execution.write import commit_write
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.statistics import (
    bloom_type_supported,
    compute_statistics,
    merge_statistics,
    with_files,
)
from kartoframe.plan.pruning import partition_values_table
from kartoframe.plan.scan import ReadTask, plan_scan
from kartoframe.storage.resolve import (
    bloom_columns_of,
    load_dataset,
    load_statistics,
    statistics_ref,
)
from kartoframe.storage.store import Store

__all__ = ["build_dataset_statistics", "dataset_statistics"]

_PANDAS_TYPES = {
    pa.int64(): pd.Int64Dtype(),
    pa.uint64(): pd.UInt64Dtype(),
    pa.bool_(): pd.BooleanDtype(),
}


def _current(loaded: LoadedDataset) -> pa.Table:
    """The usable statistics rows of a loaded dataset, in header order."""
    md = loaded.metadata
    return merge_statistics(
        loaded.statistics,
        [],
        md.partitions,
        loaded.schema,
        md.partition_keys,
        bloom_columns_of(loaded),
    )


def dataset_statistics(
    dataset_uuid: str, store: StoreInput, *, columns: Sequence[str] | None = None
) -> pd.DataFrame:
    """Per-file statistics of a dataset, one row per partition, from metadata only.

    Reads the header and the statistics file; no data file is opened.

    Parameters
    ----------
    dataset_uuid
        The dataset.
    store
        Store URL, :class:`kartoframe.Store` or factory.
    columns
        Columns to report (default: all, partition keys first).

    Returns
    -------
    pandas.DataFrame
        ``label``, ``file`` (data file key), ``rows``, ``bytes``, ``has_statistics`` and,
        per column ``c``, ``c.min``, ``c.max`` and ``c.nulls`` (nulls and NaN). Partition
        columns report their value. Files without statistics (written by plateau, say)
        have missing values; strings longer than 64 bytes show truncated bounds.

    Raises
    ------
    DatasetNotFoundError
        The dataset does not exist.
    ColumnNotFoundError
        A requested column is not in the dataset.

    Examples
    --------
    >>> import pandas as pd, kartoframe as kf
    >>> df = pd.DataFrame({"country": ["DE", "DE", "FR"], "units": [1, 5, 2]})
    >>> _ = kf.store_dataframes_as_dataset(store="memory://dstats-example",
    ...     dataset_uuid="sales", dfs=[df], partition_on=["country"])
    >>> stats = kf.dataset_statistics("sales", "memory://dstats-example")
    >>> stats[["country.min", "rows", "units.min", "units.max"]]
      country.min  rows  units.min  units.max
    0          DE     2          1          5
    1          FR     1          2          2
    """
    st = ensure_store(store)
    loaded = load_statistics(st, load_dataset(st, check_uuid(dataset_uuid)))
    md, schema = loaded.metadata, loaded.schema
    wanted = schema.names if columns is None else str_list(columns, "columns")
    missing = [c for c in wanted if c not in schema.names]
    if missing:
        raise ColumnNotFoundError(f"Columns {missing} are not in dataset {md.uuid!r}.")
    labels = list(md.partitions)
    stats = _current(loaded)
    row_of = {lb: i for i, lb in enumerate(stats.column("label").to_pylist())}
    take = pa.array([row_of.get(lb) for lb in labels], type=pa.int64())
    rows = stats.take(take)
    out: dict[str, pa.Array | pa.ChunkedArray] = {
        "label": pa.array(labels, type=pa.string()),
        "file": pa.array([md.partitions[lb] for lb in labels], type=pa.string()),
        "rows": rows.column("rows"),
        "bytes": rows.column("bytes"),
        "has_statistics": pa.array([lb in row_of for lb in labels], type=pa.bool_()),
    }
    pk = list(md.partition_keys)
    keys = partition_values_table(labels, pk, schema) if pk else None
    for c in wanted:
        if keys is not None and c in pk:
            out[f"{c}.min"] = keys.column(c)
            out[f"{c}.max"] = keys.column(c)
            out[f"{c}.nulls"] = pa.array([0] * len(labels), type=pa.int64())
            continue
        for group, suffix in (("min", "min"), ("max", "max"), ("null_count", "nulls")):
            if group in rows.column_names:
                struct = rows.column(group).combine_chunks()
                if struct.type.get_field_index(c) >= 0:
                    out[f"{c}.{suffix}"] = struct.field(c)
    table = pa.table(out)
    return table.to_pandas(types_mapper=_PANDAS_TYPES.get)


def _file_statistics(
    st: Store, loaded: LoadedDataset, labels: Sequence[str], blooms: Sequence[str]
) -> pa.Table:
    """Read the given files and compute their statistics (one row per file)."""
    md = loaded.metadata
    data_cols = [c for c in loaded.schema.names if c not in md.partition_keys]
    plan = plan_scan(loaded, columns=data_cols, labels=list(labels))

    def _one(task: ReadTask) -> pa.Table:
        f = task.files[0]
        table = read_task_table(plan, task, st, use_threads=False)
        stats = compute_statistics([table], bloom_filter_columns=blooms)
        return with_files(stats, [f.label], [f.key], [st.size(f.key)])

    with ThreadPoolExecutor(max_workers=4) as pool:
        parts = list(pool.map(_one, plan.tasks))
    return merge_statistics(
        None, parts, md.partitions, loaded.schema, md.partition_keys, list(blooms)
    )


def build_dataset_statistics(
    store: StoreInput,
    dataset_uuid: str,
    *,
    rebuild: bool = False,
    bloom_filter_columns: Sequence[str] | None = None,
) -> DatasetMetadataResult:
    """Compute per-file statistics for the files of a dataset that lack them, and commit.

    Files written by kartoframe already have statistics; this adds them to datasets
    written by plateau or kartothek (plateau drops kartoframe's statistics reference
    when it rewrites a header) and changes the bloom-filter configuration. Each data file
    without statistics is read once (columns outside the partition keys).

    Parameters
    ----------
    store
        Store URL, :class:`kartoframe.Store` or factory.
    dataset_uuid
        The dataset.
    rebuild
        Recompute the statistics of every file, not only of those lacking them.
    bloom_filter_columns
        Columns whose files get bloom filters (for ``==`` and ``in`` on high-cardinality
        columns; integer, string, binary, date and timestamp columns). Later kartoframe
        writes maintain them. None keeps the current configuration; changing it
        recomputes every file.

    Returns
    -------
    DatasetMetadataResult

    Raises
    ------
    ColumnNotFoundError
        A bloom-filter column is not in the dataset.
    InvalidInputError
        A bloom-filter column is a partition key or has an unsupported type.
    CommitConflictError
        The dataset changed while the statistics were built.

    Examples
    --------
    >>> import pandas as pd, kartoframe as kf
    >>> df = pd.DataFrame({"user": ["u1", "u2", "u3"], "units": [1, 5, 2]})
    >>> _ = kf.store_dataframes_as_dataset(store="memory://build-stats-example",
    ...     dataset_uuid="events", dfs=[df])
    >>> _ = kf.build_dataset_statistics("memory://build-stats-example", "events",
    ...     bloom_filter_columns=["user"])
    >>> kf.read_table("events", "memory://build-stats-example",
    ...     predicates=[[("user", "==", "u2")]])["units"].tolist()
    [5]
    """
    st = ensure_store(store)
    uuid = check_uuid(dataset_uuid)
    if not isinstance(rebuild, bool):
        raise InvalidInputError("rebuild must be a bool.")
    loaded = load_dataset(st, uuid)
    md, schema = loaded.metadata, loaded.schema
    ref = statistics_ref(md)
    current = ref.bloom_filter_columns if ref is not None else ()
    blooms = current
    if bloom_filter_columns is not None:
        blooms = tuple(str_list(bloom_filter_columns, "bloom_filter_columns"))
        missing = [c for c in blooms if c not in schema.names]
        if missing:
            raise ColumnNotFoundError(f"Bloom-filter columns {missing} are not in {uuid!r}.")
        for c in blooms:
            if c in md.partition_keys:
                raise InvalidInputError(
                    f"Column {c!r} is a partition key; it needs no bloom filter."
                )
            if not bloom_type_supported(schema.field(c).type):
                raise InvalidInputError(
                    f"Column {c!r} of type {schema.field(c).type} cannot have a bloom filter "
                    "(integer, string, binary, date and timestamp columns can)."
                )
    rebuild = rebuild or set(blooms) != set(current)
    try:
        existing = None if rebuild else _current(load_statistics(st, loaded))
    except CorruptMetadataError:  # an unreadable or missing file is rebuilt
        existing = None
    done = set(existing.column("label").to_pylist()) if existing is not None else set()
    todo = [lb for lb in md.partitions if lb not in done]
    fresh = _file_statistics(st, loaded, todo, blooms) if todo else None
    commit_write(
        st,
        uuid,
        [],
        base=loaded,
        storage_format=md.storage_format,
        table_name=md.table_name,
        owns_files=False,
        explicit_partitions=md.explicit_partitions,
        statistics=[fresh] if fresh is not None else [],
        bloom_filter_columns=blooms,
    )
    return DatasetMetadataResult(uuid, st)
