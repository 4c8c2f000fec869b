"""Kartothek cubes: discovery and queries (kartothek 5.3 names and keywords).

Eager writes live in :mod:`kartoframe.api.cube_write`, maintenance (delete, copy, cleanup,
stats) in :mod:`kartoframe.api.cube_admin`, the dask variants in :mod:`kartoframe.dask.cube`.
Every query starts with :func:`kartoframe.front.cube_query.plan_cube_query`.

A cube is a set of plain v4 datasets ``<uuid_prefix>++<dataset_id>``; see
``docs/cubes.md`` for the model, the query semantics and what readers observe while a
multi-dataset write is in progress.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from kartoframe.execution.cube_join import run_merged
from kartoframe.format.cube import Cube
from kartoframe.front import cube_signatures as sig
from kartoframe.front.args import StoreInput, arguments_of, ensure_store, same_parameters
from kartoframe.front.cube_args import fill
from kartoframe.front.cube_query import discover_with_datasets, metadata_of, plan_cube_query
from kartoframe.front.metadata import DatasetMetadata
from kartoframe.storage.cube_members import load_checked, load_cube_datasets

__all__ = [
    "discover_cube",
    "discover_datasets",
    "discover_datasets_unchecked",
    "query_cube",
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
    return metadata_of(st, load_cube_datasets(st, uuid_prefix, filter_ktk_cube_dataset_ids))


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
    return metadata_of(st, load_checked(cube, st, filter_ktk_cube_dataset_ids))


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


# -- queries -----------------------------------------------------------------------------


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
