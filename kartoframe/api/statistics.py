"""Per-file data-skipping statistics: inspect them, and build them for existing datasets.

Writes maintain the statistics (see ``docs/statistics.md``); these functions show them
and add them to datasets written without them (by plateau, kartothek or an older
kartoframe).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from kartoframe.errors import InvalidInputError
from kartoframe.execution.stats_build import build_statistics
from kartoframe.front.args import StoreInput, ensure_store
from kartoframe.front.docs import fill
from kartoframe.front.results import DatasetMetadataResult
from kartoframe.plan.arguments import check_uuid, str_list
from kartoframe.plan.stats_report import bloom_columns_arg, statistics_frame
from kartoframe.storage.resolve import bloom_columns_of, load_dataset, load_statistics

__all__ = ["build_dataset_statistics", "dataset_statistics"]


@fill
def dataset_statistics(
    dataset_uuid: str, store: StoreInput, *, columns: Sequence[str] | None = None
) -> pd.DataFrame:
    """Per-file statistics of a dataset, one row per partition, from metadata only.

    Reads the header and the statistics file; no data file is opened.

    $params_dataset
    columns
        Columns to report (default: all, partition keys first).

    Returns
    -------
    pandas.DataFrame
        ``label``, ``file`` (data file key), ``rows``, ``bytes``, ``has_statistics`` and,
        per column ``c``, ``c.min``, ``c.max`` and ``c.nulls`` (nulls and NaN). Partition
        columns report their value. Files without statistics (written by plateau, say)
        have missing values; strings longer than 64 bytes show truncated bounds.

    $raises_not_found
    ColumnNotFoundError
        A requested column is not in the dataset.

    $examples
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
    wanted = loaded.schema.names if columns is None else str_list(columns, "columns")
    return statistics_frame(loaded, wanted, bloom_columns_of(loaded))


@fill
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

    $params_store_dataset
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

    $examples
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
    blooms = bloom_columns_of(loaded)
    if bloom_filter_columns is not None:
        blooms = tuple(str_list(bloom_filter_columns, "bloom_filter_columns"))
        bloom_columns_arg(loaded.metadata, loaded.schema, blooms)
    build_statistics(st, loaded, blooms, rebuild=rebuild)
    return DatasetMetadataResult(uuid, st)
