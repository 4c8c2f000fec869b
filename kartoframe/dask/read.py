"""Datasets as dask DataFrames: lazy reads (plateau ``io.dask`` names).

Graph-based writes live in :mod:`kartoframe.dask.write`.

dask is imported only when one of these functions runs, so ``import kartoframe`` works without
it; calling them without dask raises :class:`~kartoframe.errors.MissingDependencyError`.
"""

from __future__ import annotations

from typing import Any

from kartoframe.errors import InvalidInputError
from kartoframe.front import dataset_signatures as sig
from kartoframe.front.args import arguments_of, read_front, same_parameters
from kartoframe.front.docs import fill

__all__ = ["read_dataset_as_ddf"]


@fill
@same_parameters(sig.ReadDdf)
def read_dataset_as_ddf(*args: Any, **kwargs: Any) -> Any:
    """Read a dataset as a lazy ``dask.dataframe.DataFrame``.

    Building the frame reads the header, the schema and the secondary indices the
    ``predicates`` (or ``dispatch_by``, ``dask_index_on``, ``categoricals``) need; no data
    file is opened until the frame is computed. Each dask partition reads one data file
    (after pruning), or one dispatch group. A column selection on the result (``ddf[["a"]]``)
    is pushed down by dask's optimizer to the Parquet reader.

    Parameters
    ----------
    dataset_uuid
        The dataset.
    store
        Store URL, :class:`kartoframe.Store` or factory. It is pickled into the graph, so
        workers must be able to reach it (a shared folder or an object store).
    columns
        Projection, in output order (default: all, partition keys first).
    predicates
        DNF filter ``[[(col, op, value), ...], ...]``; prunes partitions and row groups and
        filters rows inside each task.
    dispatch_by
        ``None``: one partition per data file; ``[]``: one partition for everything; a list
        of indexed columns: one partition per distinct value combination (sorted).
    categoricals
        Columns to return as ``category``. Partition keys and columns with a secondary
        index get known, dataset-wide categories; others have unknown categories.
    dates_as_object
        ``date`` columns as ``datetime.date`` objects (default) or ``datetime64``.
    predicate_pushdown_to_io
        Kept for plateau compatibility; statistics are always used.
    dask_index_on
        An indexed, sortable column: one partition per value, the column becomes the
        index and the divisions are known, so ``loc`` and joins on it need no shuffle.
        Cannot be combined with ``dispatch_by``.
    version, as_of
        Read a past version (time travel), as in :func:`kartoframe.read_table`.
    table
        plateau's name of the table to read; it must be the dataset's table (default:
        whichever it is).
    factory
        plateau's ``DatasetFactory`` instead of ``dataset_uuid`` and ``store``.

    Returns
    -------
    dask.dataframe.DataFrame
        ``meta`` typed from the stored schema; pandas 3 ``str`` columns stay ``str``.

    Raises
    ------
    MissingDependencyError
        dask is not installed.
    $not_found

    $examples
    >>> df = pd.DataFrame({"country": ["DE", "FR", "DE"], "units": [1, 2, 3]})
    >>> _ = kf.store_dataframes_as_dataset(store="memory://ddf-example",
    ...     dataset_uuid="sales", dfs=[df], partition_on=["country"])
    >>> ddf = kf.read_dataset_as_ddf("sales", "memory://ddf-example")
    >>> ddf.npartitions
    2
    >>> ddf.groupby("country")["units"].sum().compute().to_dict()
    {'DE': 4, 'FR': 2}
    >>> by_country = kf.read_dataset_as_ddf("sales", "memory://ddf-example",
    ...                                     dask_index_on="country")
    >>> by_country.known_divisions, by_country.loc["FR"].compute()["units"].tolist()
    (True, [2])
    """
    from kartoframe.execution import dask_engine as de

    arguments = arguments_of(read_dataset_as_ddf, args, kwargs)
    table, dask_index_on = arguments["table"], arguments["dask_index_on"]
    de.dask_modules()
    with de.gc_paused():
        plan, st, loaded, output = read_front(arguments, uuid_first=True)
        if table is not None and table != loaded.metadata.table_name:
            raise InvalidInputError(
                f"Dataset {loaded.metadata.uuid!r} has no table {table!r} (its table is "
                f"{loaded.metadata.table_name!r})."
            )
        cats = de.known_categories(
            loaded, plan.categoricals, dates_as_object=arguments["dates_as_object"]
        )
        token = de.plan_token(
            plan, st, loaded.header_bytes, dask_index_on, de.categories_token(cats)
        )
        return de.plan_to_ddf(
            plan, st, output_columns=output, index_on=dask_index_on, categories=cats, token=token
        )
