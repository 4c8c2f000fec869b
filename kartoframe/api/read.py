"""Eager and iterator reads (plateau ``io.eager`` / ``io.iter`` names and keywords)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pandas as pd
import pyarrow as pa

from kartoframe.execution.kernel import (
    iter_plan_batches,
    read_plan_table,
    read_task_frame,
    to_frame,
)
from kartoframe.execution.read_plan import plan_read as plan_read
from kartoframe.front import dataset_signatures as sig
from kartoframe.front.args import arguments_of, read_front, same_parameters
from kartoframe.front.docs import fill
from kartoframe.front.metadata import DatasetMetadata as DatasetMetadata
from kartoframe.front.metadata import read_dataset_metadata as read_dataset_metadata
from kartoframe.progress import ProgressBar, progress_enabled

__all__ = [
    "DatasetMetadata",
    "plan_read",
    "read_dataset_as_dataframes",
    "read_dataset_as_dataframes__iterator",
    "read_dataset_metadata",
    "read_table",
]


@fill
@same_parameters(sig.ReadTable)
def read_table(*args: Any, **kwargs: Any) -> pd.DataFrame:
    """Read a dataset (or the rows matching ``predicates``) into one DataFrame.

    Pruning runs partition keys -> secondary indices -> per-file statistics (see
    ``docs/statistics.md``) -> Parquet row-group statistics -> row filter; no data file
    of a pruned partition is opened. Rows come in header (commit) order, file by file.

    $params_dataset
    columns
        Projection, in output order (default: all, partition keys first).
    predicate_pushdown_to_io
        Kept for plateau compatibility; statistics are always used.
    categoricals
        Columns to return as ``pandas.Categorical``.
    dates_as_object
        ``date`` columns as ``datetime.date`` objects (default) or ``datetime64``.
    predicates
        DNF filter ``[[(col, op, value), ...], ...]``.
    progress
        Show a progress bar of the files read (only on a terminal; see
        :mod:`kartoframe.progress`). The files are then read in batches.
    version
        Read this version of the dataset (time travel; see
        :func:`kartoframe.dataset_history`) instead of the current one.
    as_of
        Read the version that was current at this time (``datetime`` — naive means UTC —,
        ``pandas.Timestamp``, ISO string or epoch milliseconds).
    $factory

    Returns
    -------
    pandas.DataFrame
        Typed from the dataset schema even when no row matches.

    $examples
    >>> df = pd.DataFrame({"country": ["DE", "FR", "DE"], "units": [1, 2, 3]})
    >>> _ = kf.store_dataframes_as_dataset(store="memory://rt-example",
    ...     dataset_uuid="sales", dfs=[df], partition_on=["country"])
    >>> kf.read_table("sales", "memory://rt-example",
    ...               predicates=[[("country", "==", "DE")]])["units"].tolist()
    [1, 3]
    """
    arguments = arguments_of(read_table, args, kwargs)
    # one frame: its own nulls decide (consistent_integers=False)
    plan, st, _, _ = read_front(arguments, uuid_first=False, dask=False, consistent_integers=False)
    if progress_enabled(arguments["progress"]):
        n_files = sum(len(t.files) for t in plan.tasks)
        with ProgressBar(f"reading {plan.dataset_uuid}", n_files, unit="files") as bar:
            tables = []
            for table, n in iter_plan_batches(plan, st):
                tables.append(table)
                bar.advance(n)
        return to_frame(plan, pa.concat_tables(tables))
    return to_frame(plan, read_plan_table(plan, st))


@same_parameters(sig.ReadFrames)
def read_dataset_as_dataframes__iterator(*args: Any, **kwargs: Any) -> Iterator[pd.DataFrame]:
    """Yield one DataFrame per partition (or dispatch group), holding one at a time.

    Memory stays bounded by the largest partition. Parameters as in
    :func:`read_dataset_as_dataframes`.
    """
    # the arguments are bound now (a bad one raises here), the read plans at the first frame
    return _frames(arguments_of(read_dataset_as_dataframes__iterator, args, kwargs))


def _frames(arguments: dict[str, Any]) -> Iterator[pd.DataFrame]:
    plan, st, _, _ = read_front(arguments, uuid_first=False, dask=False)
    for task in plan.tasks:
        frame = read_task_frame(plan, task, st)
        if len(frame) == 0 and any(v is None for _, v in task.dispatch_values):
            continue  # the null group of a secondary-index dispatch, when there are no nulls
        yield frame
        del frame  # do not hold the previous frame while the next one is decoded


@same_parameters(sig.ReadFrames)
def read_dataset_as_dataframes(*args: Any, **kwargs: Any) -> list[pd.DataFrame]:
    """Read a dataset as a list of DataFrames, one per partition or dispatch group.

    ``dispatch_by=None`` gives one frame per data file, ``[]`` one frame for all,
    and a list of indexed columns one frame per distinct value combination (sorted).
    Parameters (including ``version`` / ``as_of`` for time travel) as in
    :func:`read_table`.
    """
    return list(read_dataset_as_dataframes__iterator(*args, **kwargs))
