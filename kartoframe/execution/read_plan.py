"""Read plans of every engine: resolve once, then plan (no data file is opened).

:func:`plan_read` (pandas: eager, iterator, the CLI, Spark's arrow reader) and
:func:`plan_ddf_read` (dask, delayed and bag) load the header, the schema and only the
secondary indices (restricted to the values of equality predicates) and statistics the
read needs (:func:`~kartoframe.execution.read_resolve.resolve_read`), binding the request
once. For dask, ``dask_index_on`` becomes a dispatch on its column (nulls dropped: a sorted
index with known divisions cannot hold them) and categorical indexed columns get
dataset-wide categories.
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

__all__ = ["plan_ddf_read", "plan_loaded_read", "plan_read"]


def plan_read(
    dataset_uuid: str,
    store: Any,
    *,
    version: int | None = None,
    as_of: object = None,
    consistent_integers: bool = True,
    **options: Any,
) -> tuple[ScanPlan, Store]:
    """Resolve and plan a read for pandas (loads the header, the schema and what it needs).

    ``options``: ``columns``, ``predicates``, ``dispatch_by``, ``categoricals``,
    ``dates_as_object``. ``version`` / ``as_of`` select a past version (see
    :func:`kartoframe.read_table`). ``consistent_integers`` decides at planning time which
    integer columns every frame returns as pandas nullable integers (see
    :mod:`kartoframe.plan.integers`; loads the per-file statistics when that needs them);
    False for a read converted into one frame, whose own nulls decide.
    """
    plan, st, _, _ = plan_ddf_read(
        dataset_uuid,
        store,
        version=version,
        as_of=as_of,
        dask=False,
        consistent_integers=consistent_integers,
        **options,
    )
    return plan, st


def plan_ddf_read(
    dataset_uuid: str,
    store: Any,
    *,
    version: int | None = None,
    as_of: object = None,
    **options: Any,
) -> tuple[ScanPlan, Store, LoadedDataset, list[str]]:
    """Resolve and plan a read for dask; returns the plan, store, loaded dataset, columns.

    ``options``: the keywords of :func:`plan_loaded_read`; ``version`` / ``as_of`` select
    a past version.
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
    dask: bool = True,
    consistent_integers: bool = True,
) -> tuple[ScanPlan, list[str], LoadedDataset]:
    """:func:`plan_ddf_read` for an already loaded dataset; ``dask`` False plans for
    pandas (``consistent_integers`` as in :func:`plan_read`).
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
        columns=plan_cols if dask else cols,
        predicates=predicates,
        dispatch_by=dispatch,
        categoricals=cats,
        dates_as_object=dates_as_object,
        # a sorted index with known divisions cannot hold nulls: dask_index_on drops them
        dispatch_nulls=dask_index_on is None,
        known_categories=dask,  # categorical indexed columns get dataset-wide categories
        # dask: integer dtypes of every partition and meta from the null counts
        typing_columns=cols if dask else None,
        consistent_integers=consistent_integers,
    )
    plan, loaded = resolve_read(st, loaded, query)
    return plan, output, loaded
