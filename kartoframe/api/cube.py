"""Kartothek cubes: discovery and queries (kartothek 5.3 names and keywords).

Eager writes live in :mod:`kartoframe.api.cube_write`.

A cube is a set of plain v4 datasets ``<uuid_prefix>++<dataset_id>``; see
``docs/cubes.md`` for the model, the query semantics and what readers observe while a
multi-dataset write is in progress. Maintenance (delete, copy, cleanup, stats) lives in
:mod:`kartoframe.api.cube_admin`; the dask variants in
:mod:`kartoframe.execution.cube_dask`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pandas as pd

from kartoframe.api import _cube_signatures as sig
from kartoframe.api._args import StoreInput, arguments_of, ensure_store, same_parameters
from kartoframe.api._cube_args import check_cube, fill
from kartoframe.api.read import DatasetMetadata
from kartoframe.execution.cube_join import run_merged
from kartoframe.execution.read_resolve import resolve_cube_query
from kartoframe.format.cube import Cube, check_datasets, cube_from_members, member_from_loaded
from kartoframe.format.dataset import LoadedDataset
from kartoframe.plan.cube_query import CubeQueryPlan
from kartoframe.storage.cube_members import load_checked
from kartoframe.storage.cube_members import load_cube_datasets as load_cube_datasets
from kartoframe.storage.cube_members import select_members as _selected
from kartoframe.storage.store import Store

if TYPE_CHECKING:
    import dask.dataframe as dd

__all__ = [
    "discover_cube",
    "discover_datasets",
    "discover_datasets_unchecked",
    "plan_cube_query",
    "query_cube",
    "query_cube_dataframe",
]

# -- discovery -------------------------------------------------------------------------


@fill
def discover_datasets_unchecked(
    uuid_prefix: str, store: StoreInput, filter_ktk_cube_dataset_ids: object = None
) -> dict[str, DatasetMetadata]:
    """Datasets whose uuid starts with ``<uuid_prefix>++`` (listing with a delimiter).

    Parameters
    ----------
    $cube_prefix
    filter_ktk_cube_dataset_ids
        Only these dataset ids.

    Returns
    -------
    dict
        Dataset id -> :class:`kartoframe.DatasetMetadata`.
    """
    st = ensure_store(store)
    return _metadata(st, load_cube_datasets(st, uuid_prefix, filter_ktk_cube_dataset_ids))


def discover_datasets(
    cube: Cube, store: StoreInput, filter_ktk_cube_dataset_ids: object = None
) -> dict[str, DatasetMetadata]:
    """The cube's datasets, checked against the cube rules.

    Raises
    ------
    InvalidInputError
        A requested dataset is missing or a cube rule is broken (e.g. no seed).
    """
    st = ensure_store(store)
    return _metadata(st, load_checked(cube, st, filter_ktk_cube_dataset_ids))


@fill
def discover_cube(
    uuid_prefix: str, store: StoreInput, filter_ktk_cube_dataset_ids: object = None
) -> Cube:
    """Rebuild a :class:`kartoframe.Cube` from the metadata stored in its datasets.

    Reads the ``ktk_cube_*`` keys (and the legacy ``klee_*`` ones); index columns are all
    secondary-indexed columns that are neither dimension nor partition columns. The cube
    is then checked against its datasets.

    Parameters
    ----------
    $cube_prefix
    filter_ktk_cube_dataset_ids
        Only consider these datasets (the seed must be among them).

    Returns
    -------
    Cube
        (kartothek returned ``(cube, datasets)``; use :func:`discover_datasets` for those.)

    Raises
    ------
    FormatError
        No seed, several seeds, or unrecoverable metadata.
    """
    return discover_with_datasets(uuid_prefix, store, filter_ktk_cube_dataset_ids)[0]


def discover_with_datasets(
    uuid_prefix: str, store: StoreInput, filter_ids: object = None
) -> tuple[Cube, dict[str, DatasetMetadata]]:
    """:func:`discover_cube` and :func:`discover_datasets` with one load of the headers."""
    st = ensure_store(store)
    datasets = load_cube_datasets(st, uuid_prefix, filter_ids)
    members = {k: member_from_loaded(k, v) for k, v in datasets.items()}
    cube = cube_from_members(uuid_prefix, members)
    check_datasets(members, cube)
    return cube, _metadata(st, datasets)


def _metadata(store: Store, datasets: Mapping[str, LoadedDataset]) -> dict[str, DatasetMetadata]:
    return {k: DatasetMetadata(v, store) for k, v in datasets.items()}


# -- queries -----------------------------------------------------------------------------


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


@fill
@same_parameters(sig.Query)
def query_cube(*args: Any, **kwargs: Any) -> list[pd.DataFrame]:
    """Query a cube into pandas.

    The seed defines the cells; other datasets are left-joined on their dimension
    columns, restricted datasets (conditions or ``partition_by`` on their own payload)
    inner-joined, lower-dimensional datasets broadcast; appends overlay (last commit wins
    per cell). See ``docs/cubes.md``.

    Parameters
    ----------
    $cube_query_params

    Returns
    -------
    list of pandas.DataFrame
        ``[]``, ``[df]`` or, with ``partition_by``, one frame per value in sorted order.
        Columns are alphabetical; rows are sorted by dimension then partition columns.

    $cube_examples
    >>> _ = kf.build_cube(df, cube, "memory://docs-query")
    >>> kf.query_cube(cube, "memory://docs-query", conditions=kf.C("SALES") > 15)[0]
      COUNTRY_CODE  SALES  YEAR
    0           FR   20.0  2024
    """
    return run_merged(*plan_cube_query(**arguments_of(query_cube, args, kwargs)))


@same_parameters(sig.Query)
def query_cube_dataframe(*args: Any, **kwargs: Any) -> dd.DataFrame:
    """Query a cube as a dask DataFrame (one partition per query group).

    Same semantics and arguments as :func:`query_cube`; ``meta`` has the exact result
    dtypes. Planning happens now (metadata and needed indices); data files are read by
    the tasks.
    """
    from kartoframe.execution.cube_dask import plan_to_dataframe

    # one frame per group: the same integer dtypes in all of them
    arguments = arguments_of(query_cube_dataframe, args, kwargs)
    plan, st = plan_cube_query(**arguments, consistent_integers=True)
    result: dd.DataFrame = plan_to_dataframe(plan, st)
    return result
