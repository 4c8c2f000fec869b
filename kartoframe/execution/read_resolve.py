"""Resolve a bound read: load what it needs, then plan it (the one path of every read).

:func:`resolve_read` is what eager, iterator, dask and Spark dataset reads, and every
dataset of a cube query, go through: :func:`kartoframe.plan.query.read_needs` (pure) says
what to load, :func:`kartoframe.storage.resolve.load_for_read` loads exactly that
(concurrently on remote stores), and :func:`kartoframe.plan.scan.plan_bound` plans
without binding again.
"""

from __future__ import annotations

from collections.abc import Mapping

from kartoframe.format.cube import Cube
from kartoframe.format.dataset import LoadedDataset
from kartoframe.plan.cube_query import (
    CubeQueryPlan,
    determine_intention,
    member_queries,
    plan_query,
    relevant_datasets,
)
from kartoframe.plan.query import ReadNeeds, ReadQuery, read_needs
from kartoframe.plan.scan import ScanPlan, plan_bound
from kartoframe.storage.io_map import io_map
from kartoframe.storage.resolve import load_for_read
from kartoframe.storage.store import Store

__all__ = ["load_needed", "resolve_cube_query", "resolve_read"]


def load_needed(store: Store, loaded: LoadedDataset, query: ReadQuery) -> LoadedDataset:
    """``loaded`` with the indices, index lookups and statistics ``query`` needs."""
    return _load(store, loaded, read_needs(loaded, query))


def _load(store: Store, loaded: LoadedDataset, needs: ReadNeeds) -> LoadedDataset:
    if not needs:
        return loaded
    return load_for_read(
        store,
        loaded,
        indices=needs.indices,
        lookups=needs.lookups,
        statistics=needs.statistics,
        optional_statistics=needs.optional_statistics,
    )


def resolve_read(
    store: Store, loaded: LoadedDataset, query: ReadQuery
) -> tuple[ScanPlan, LoadedDataset]:
    """Load what ``query`` needs and plan it; returns the plan and the loaded dataset
    (whose indices may be partial: good for this query only).
    """
    loaded = load_needed(store, loaded, query)
    return plan_bound(loaded, query), loaded


def resolve_cube_query(
    store: Store,
    cube: Cube,
    datasets: Mapping[str, LoadedDataset],
    *,
    conditions: object = None,
    dimension_columns: object = None,
    partition_by: object = None,
    payload_columns: object = None,
    consistent_integers: bool = False,
) -> CubeQueryPlan:
    """Plan a cube query over its loaded (and checked) datasets.

    Validates the request, binds each taking-part dataset's conditions once
    (:func:`kartoframe.plan.cube_query.member_queries`), loads what each needs — the same
    :func:`load_needed` as dataset reads, the datasets concurrently on a remote store — and
    plans.
    """
    schemas = {k: v.schema for k, v in datasets.items()}
    indexed = {
        k: set(v.metadata.partition_keys)
        | set(v.metadata.indices)
        | set(v.metadata.embedded_indices)
        for k, v in datasets.items()
    }
    intention = determine_intention(
        cube,
        schemas,
        indexed,
        conditions=conditions,
        dimension_columns=dimension_columns,
        partition_by=partition_by,
        payload_columns=payload_columns,
    )
    relevant = relevant_datasets(cube, schemas, intention)
    loaded = {k: v for k, v in datasets.items() if k in relevant}
    queries = member_queries(
        cube, {k: v.schema for k, v in loaded.items()}, intention, consistent_integers
    )
    needs = {k: read_needs(v, queries[k]) for k, v in loaded.items()}
    jobs = sorted(k for k, n in needs.items() if n)
    loaded.update(zip(jobs, io_map(store, lambda k: _load(store, loaded[k], needs[k]), jobs)))
    return plan_query(cube, loaded, intention, queries, consistent_integers)
