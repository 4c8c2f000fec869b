"""The first step of every cube query and discovery (eager, dask, Spark, the CLI): load
the cube's datasets once and plan (no data file is opened).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kartoframe.execution.read_resolve import resolve_cube_query
from kartoframe.format.cube import Cube, check_datasets, cube_from_members, member_from_loaded
from kartoframe.format.dataset import LoadedDataset
from kartoframe.front import cube_signatures as sig
from kartoframe.front.args import StoreInput, arguments_of, ensure_store, same_parameters
from kartoframe.front.cube_args import check_cube
from kartoframe.front.metadata import DatasetMetadata
from kartoframe.plan.cube_query import CubeQueryPlan
from kartoframe.storage.cube_members import load_checked, load_cube_datasets
from kartoframe.storage.cube_members import select_members as _selected
from kartoframe.storage.store import Store

__all__ = ["discover_with_datasets", "metadata_of", "plan_cube_query"]


def discover_with_datasets(
    uuid_prefix: str, store: StoreInput, filter_ids: object = None
) -> tuple[Cube, dict[str, DatasetMetadata]]:
    """:func:`kartoframe.discover_cube` and :func:`kartoframe.discover_datasets` with one
    load of the headers.
    """
    st = ensure_store(store)
    datasets = load_cube_datasets(st, uuid_prefix, filter_ids)
    members = {k: member_from_loaded(k, v) for k, v in datasets.items()}
    cube = cube_from_members(uuid_prefix, members)
    check_datasets(members, cube)
    return cube, metadata_of(st, datasets)


def metadata_of(store: Store, datasets: Mapping[str, LoadedDataset]) -> dict[str, DatasetMetadata]:
    """Each loaded dataset as the :class:`DatasetMetadata` the fronts return."""
    return {k: DatasetMetadata(v, store) for k, v in datasets.items()}


@same_parameters(sig.PlanQuery)
def plan_cube_query(*args: Any, **kwargs: Any) -> tuple[CubeQueryPlan, Store]:
    """Resolve the cube's metadata and plan a query (no data file is opened).

    Loads headers and schemas, validates the request, loads only the secondary indices of
    columns used by conditions or ``partition_by`` (of the datasets taking part) and the
    per-file statistics of the datasets whose conditions could use them (see
    ``docs/statistics.md``), and returns the plan engines run. ``consistent_integers``
    (engines running groups separately: dask) decides the integer dtypes of every group's
    frame at planning time, loading the statistics for their null counts. ``loaded``: the
    cube's datasets as :func:`discover_with_datasets` returned them (their headers are not
    loaded again).

    Raises
    ------
    CorruptMetadataError
        A needed statistics file the header references is missing or undecodable
        (``build_dataset_statistics`` rebuilds it).
    """
    query = arguments_of(plan_cube_query, args, kwargs)  # what is left goes to the resolve
    cube = check_cube(query.pop("cube"))
    st = ensure_store(query.pop("store"))
    datasets, loaded = query.pop("datasets"), query.pop("loaded")
    if isinstance(datasets, str):
        datasets = [datasets]
    if loaded is None:
        members = load_checked(cube, st, datasets)
    else:
        members = _selected(cube, {k: md._loaded for k, md in loaded.items()}, datasets)
    return resolve_cube_query(st, cube, members, **query), st
