"""The plan of a dask (and delayed/bag) read: resolve once, then plan (no data file opened).

``dask_index_on`` becomes a dispatch on its column (nulls dropped: a sorted index with known
divisions cannot hold them); categorical indexed columns get dataset-wide categories.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kartoframe.errors import InvalidInputError, InvalidTypeError
from kartoframe.execution.read_resolve import resolve_read
from kartoframe.format.dataset import LoadedDataset
from kartoframe.plan.arguments import check_columns_arg, check_uuid, str_list
from kartoframe.plan.query import bind_query
from kartoframe.plan.scan import ScanPlan
from kartoframe.storage.resolve import load_dataset
from kartoframe.storage.store import Store
from kartoframe.storage.store_arg import ensure_store

__all__ = ["plan_ddf_read", "plan_loaded_read"]


def plan_ddf_read(
    dataset_uuid: str,
    store: Any,
    *,
    version: int | None = None,
    as_of: object = None,
    **options: Any,
) -> tuple[ScanPlan, Store, LoadedDataset, list[str]]:
    """Resolve and plan a read for dask; returns the plan, store, loaded dataset, columns.

    Loads the header, the schema and only the secondary indices the predicates, the
    dispatch and the categoricals need. No data file is opened. ``options``: the keywords
    of :func:`plan_loaded_read`; ``version`` / ``as_of`` select a past version.
    """
    st = ensure_store(store)
    loaded = load_dataset(st, check_uuid(dataset_uuid), version=version, as_of=as_of)
    plan, output, loaded = plan_loaded_read(st, loaded, **options)
    return plan, st, loaded, output


def plan_loaded_read(
    st: Store,
    loaded: LoadedDataset,
    *,
    columns: Sequence[str] | None = None,
    predicates: object = None,
    dispatch_by: Sequence[str] | None = None,
    categoricals: Sequence[str] | None = None,
    dates_as_object: bool = True,
    dask_index_on: str | None = None,
) -> tuple[ScanPlan, list[str], LoadedDataset]:
    """:func:`plan_ddf_read` for an already loaded dataset (loads the indices it needs,
    restricted to the values of equality predicates as for eager reads).
    """
    cols = check_columns_arg(columns)
    cats = str_list(categoricals, "categoricals")
    dispatch = None if dispatch_by is None else str_list(dispatch_by, "dispatch_by")
    if dask_index_on is not None:
        if not isinstance(dask_index_on, str):
            raise InvalidTypeError(
                f"dask_index_on must be a column name, got {type(dask_index_on).__name__}."
            )
        if dispatch:
            raise InvalidInputError(
                "dask_index_on and dispatch_by cannot be combined: dask_index_on dispatches "
                "by its column already."
            )
        dispatch = [dask_index_on]
    output = list(cols) if cols is not None else list(loaded.schema.names)
    plan_cols = output
    if dask_index_on is not None:
        output = [c for c in output if c != dask_index_on]
        plan_cols = [*output, dask_index_on]
    query = bind_query(
        loaded.schema,
        columns=plan_cols,
        predicates=predicates,
        dispatch_by=dispatch,
        categoricals=cats,
        dates_as_object=dates_as_object,
        # a sorted index with known divisions cannot hold nulls: dask_index_on drops them
        dispatch_nulls=dask_index_on is None,
        known_categories=True,  # categorical indexed columns get dataset-wide categories
        typing_columns=cols,  # integer dtypes of every partition and meta: from null counts
    )
    plan, loaded = resolve_read(st, loaded, query)
    return plan, output, loaded
