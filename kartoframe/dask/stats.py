"""Dataset statistics as dask collections: content hashes and Parquet footer statistics.

Both functions return lazy dask objects (as in plateau's ``io.dask.dataframe``); building
them reads only the header and the indices the predicates need.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kartoframe.errors import InvalidInputError
from kartoframe.front.args import StoreInput, ensure_store
from kartoframe.front.docs import fill
from kartoframe.plan.arguments import check_uuid, resolve_factory, str_list
from kartoframe.storage.resolve import load_dataset

__all__ = ["collect_dataset_metadata", "hash_dataset"]


@fill
def hash_dataset(
    store: StoreInput | None = None,
    dataset_uuid: str | None = None,
    subset: Sequence[str] | None = None,
    group_key: Sequence[str] | None = None,
    predicates: object = None,
    table: str | None = None,
    factory: Any = None,
) -> Any:
    """A ``uint64`` content hash per partition, or per group of ``group_key`` values.

    A hash is the sum of :func:`pandas.util.hash_pandas_object` over the rows (index
    ignored), so it does not depend on row order. Equal data gives equal hashes; hashes are
    not guaranteed to stay the same across kartoframe or pandas versions.

    $params_store_dataset
    subset
        Columns to hash (default: all columns).
    group_key
        Columns to group by: one hash per distinct combination, indexed by it. Groups on
        partition keys only are read one group per task; other keys are shuffled (dask's
        task shuffle).
    predicates
        DNF filter: only matching rows are hashed.
    table
        plateau's table name; it must be the dataset's table.
    $factory

    Returns
    -------
    dask.dataframe.Series
        ``uint64``; one value per data file (``group_key=None``) or per group.

    $examples
    >>> df = pd.DataFrame({"country": ["DE", "FR", "DE"], "units": [1, 2, 3]})
    >>> _ = kf.store_dataframes_as_dataset(store="memory://hash-example",
    ...     dataset_uuid="sales", dfs=[df], partition_on=["country"])
    >>> hashes = kf.hash_dataset("memory://hash-example", "sales", group_key=["country"])
    >>> hashes.compute().index.tolist()
    ['DE', 'FR']
    """
    dataset_uuid, store = resolve_factory(factory, dataset_uuid, store)
    from kartoframe.execution import dask_engine as de
    from kartoframe.execution.graph_stats import hash_graph
    from kartoframe.execution.read_plan import plan_loaded_read

    de.dask_modules()
    sub = str_list(subset, "subset") if subset is not None else None
    keys = str_list(group_key, "group_key")
    st = ensure_store(store)
    loaded = load_dataset(st, check_uuid(dataset_uuid))
    if table is not None and table != loaded.metadata.table_name:
        raise InvalidInputError(
            f"Dataset {loaded.metadata.uuid!r} has no table {table!r} (its table is "
            f"{loaded.metadata.table_name!r})."
        )
    # groups of partition keys are whole files: read one group per task, no shuffle
    by_files = bool(keys) and set(keys) <= set(loaded.metadata.partition_keys)
    plan, output, _ = plan_loaded_read(
        st,
        loaded,
        columns=None if sub is None else sorted(set(sub) | set(keys)),
        predicates=predicates,
        dispatch_by=keys if by_files else None,
    )
    return hash_graph(plan, st, output, keys, sub, by_files=by_files)


@fill
def collect_dataset_metadata(
    store: StoreInput | None = None,
    dataset_uuid: str | None = None,
    predicates: object = None,
    frac: float = 1.0,
    *,
    seed: int | None = None,
    factory: Any = None,
) -> Any:
    """Parquet footer statistics of a dataset's files, one row per file and row group.

    $params_store_dataset
    predicates
        Restrict to the files that may hold matching rows. Only partition keys and
        secondary indices prune here (footers are read, not data), so the result
        describes whole files.
    frac
        Fraction of the (remaining) files to sample, in ``(0, 1]``; at least one file is
        kept.
    seed
        Seed of the sample (default: random).
    $factory

    Returns
    -------
    dask.dataframe.DataFrame
        Columns ``partition_label``, ``row_group_id``, ``row_group_compressed_size``,
        ``row_group_uncompressed_size``, ``number_rows_total``, ``number_row_groups``,
        ``serialized_size``, ``number_rows_per_row_group``.

    $examples
    >>> df = pd.DataFrame({"country": ["DE", "FR", "DE"], "units": [1, 2, 3]})
    >>> _ = kf.store_dataframes_as_dataset(store="memory://stats-example",
    ...     dataset_uuid="sales", dfs=[df], partition_on=["country"])
    >>> stats = kf.collect_dataset_metadata("memory://stats-example", "sales").compute()
    >>> int(stats["number_rows_total"].sum()), len(stats)
    (3, 2)
    """
    dataset_uuid, store = resolve_factory(factory, dataset_uuid, store)
    from kartoframe.execution import dask_engine as de
    from kartoframe.execution.graph_stats import metadata_graph
    from kartoframe.execution.read_plan import plan_read

    de.dask_modules()
    if not isinstance(frac, int | float) or isinstance(frac, bool) or not 0.0 < frac <= 1.0:
        raise InvalidInputError(f"frac must be in (0, 1], got {frac!r}.")
    plan, st = plan_read(dataset_uuid, store, predicates=predicates, columns=[])
    return metadata_graph(plan, st, frac, seed)
