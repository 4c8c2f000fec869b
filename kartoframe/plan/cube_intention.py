"""Cube query intention: the user's request validated against the datasets (pure).

:func:`determine_intention` checks the request against the datasets' schemas and index
columns (unknown columns, non-indexed ``partition_by``, literal types, sets instead of
sequences) and splits the conditions per dataset; :func:`relevant_datasets` names the
datasets taking part. :mod:`kartoframe.plan.cube_query` then binds each dataset's
conditions once and plans the query.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

import pyarrow as pa

from kartoframe.errors import ColumnNotFoundError, InvalidInputError
from kartoframe.format.cube import Cube, dataset_columns, payload_subset, str_tuple
from kartoframe.plan.conditions import Conjunction, check_condition_types

__all__ = ["QueryIntention", "columns_to_load", "determine_intention", "relevant_datasets"]


@dataclasses.dataclass(frozen=True, slots=True)
class QueryIntention:
    """The validated request.

    Attributes
    ----------
    dimension_columns
        Query dimension columns (a strict subset of the cube's means projection).
    partition_by
        Columns forming one result frame per distinct value (may be empty).
    conditions
        All conditions.
    conditions_pre
        Per dataset: conditions on its indexed columns (used for partition pruning).
    conditions_post
        Per dataset: conditions on its columns that are not cube partition columns
        (evaluated on rows while loading).
    output_columns
        Returned columns, alphabetical; always includes the cube partition columns.
    """

    dimension_columns: tuple[str, ...]
    partition_by: tuple[str, ...]
    conditions: Conjunction
    conditions_pre: Mapping[str, Conjunction]
    conditions_post: Mapping[str, Conjunction]
    output_columns: tuple[str, ...]


def _missing(what: str, missing: Iterable[str]) -> None:
    cols = sorted(missing)
    if cols:
        raise ColumnNotFoundError(f"{what}: {', '.join(cols)}")


def determine_intention(
    cube: Cube,
    schemas: Mapping[str, pa.Schema],
    indexed_columns: Mapping[str, set[str]],
    *,
    conditions: object = None,
    dimension_columns: object = None,
    partition_by: object = None,
    payload_columns: object = None,
) -> QueryIntention:
    """Validate a query against the datasets (schemas and indexed columns).

    Parameters
    ----------
    cube
        The cube spec.
    schemas
        Dataset id -> dataset schema of every queried dataset.
    indexed_columns
        Dataset id -> partition keys and secondary-index columns.
    conditions, dimension_columns, partition_by, payload_columns
        As in :func:`kartoframe.query_cube`.

    Raises
    ------
    ColumnNotFoundError
        Unknown dimension, partition-by, condition or payload columns.
    InvalidInputError
        Empty dimension columns, non-indexed ``partition_by`` columns.
    InvalidTypeError
        Sets where order matters; literal values of the wrong type.
    """
    available: set[str] = set()
    for schema in schemas.values():
        available |= dataset_columns(schema)
    if dimension_columns is None:
        dims = cube.dimension_columns
    else:
        dims = str_tuple(dimension_columns, "dimension_columns")
        _missing(
            "Following dimension columns were requested but are missing from the cube",
            set(dims) - set(cube.dimension_columns),
        )
        if not dims:
            raise InvalidInputError("Dimension columns cannot be empty.")
    pby = str_tuple(partition_by, "partition_by")
    _missing(
        "Following partition-by columns were requested but are missing from the cube",
        set(pby) - available,
    )
    all_indexed: set[str] = set()
    for cols in indexed_columns.values():
        all_indexed |= set(cols)
    not_indexed = sorted(set(pby) - all_indexed)
    if not_indexed:
        raise InvalidInputError(
            "Following partition-by columns are not indexed and cannot be used: "
            + ", ".join(not_indexed)
        )
    seed_indexed = indexed_columns.get(cube.seed_dataset, set())
    dims_not_in_seed = sorted(
        c for c in pby if c in cube.dimension_columns and c not in seed_indexed
    )
    if dims_not_in_seed:
        raise InvalidInputError(
            "Following partition-by columns are dimension columns without an index in the "
            f"seed dataset and cannot be used: {', '.join(dims_not_in_seed)}"
        )
    conj = Conjunction(conditions)
    _missing(
        "Following condition columns are required but are missing from the cube",
        conj.columns - available,
    )
    check_condition_types(conj, schemas)
    split = conj.split_by_column()
    pre: dict[str, Conjunction] = {}
    post: dict[str, Conjunction] = {}
    for ds_id, schema in schemas.items():
        cols = dataset_columns(schema)
        sub_pre = [split[c] for c in sorted(split) if c in indexed_columns.get(ds_id, set())]
        if sub_pre:
            pre[ds_id] = Conjunction(sub_pre)
        post_cols = (cols & conj.columns) - set(cube.partition_columns)
        sub_post = [split[c] for c in sorted(split) if c in post_cols]
        if sub_post:
            post[ds_id] = Conjunction(sub_post)
    if payload_columns is None:
        payload = available
    else:
        payload = set(str_tuple(payload_columns, "payload_columns", ordered=False))
        _missing("Cannot find the following requested payload columns", payload - available)
    output = tuple(sorted(set(pby) | set(dims) | payload | set(cube.partition_columns)))
    return QueryIntention(dims, pby, conj, pre, post, output)


def columns_to_load(
    cube: Cube, ds_id: str, schema: pa.Schema, intention: QueryIntention
) -> tuple[set[str], bool] | None:
    """Columns a dataset contributes (None: it is not loaded) and whether it is projected."""
    is_seed = ds_id == cube.seed_dataset
    cols = dataset_columns(schema)
    dims_q = intention.dimension_columns
    dimensionality = cols & set(cube.dimension_columns)
    post = intention.conditions_post.get(ds_id)
    mask = (
        set(intention.output_columns) | set(dims_q) | (post.columns if post is not None else set())
    )
    if not is_seed:
        mask -= set(cube.partition_columns)
    candidates = cols & mask
    payload = payload_subset(candidates, cube)
    if not (is_seed or payload):
        return None
    projected = not dimensionality <= set(dims_q)
    if projected and payload:
        raise InvalidInputError(
            f'Cannot project dataset "{ds_id}" with dimensionality '
            f"[{', '.join(sorted(dimensionality))}] to [{', '.join(sorted(dims_q))}] while "
            f"keeping the following payload intact: {', '.join(sorted(payload))}"
        )
    return candidates, projected


def relevant_datasets(
    cube: Cube, schemas: Mapping[str, pa.Schema], intention: QueryIntention
) -> set[str]:
    """Datasets that take part in the query: the seed and those contributing payload.

    Raises
    ------
    InvalidInputError
        A dataset would have to be projected while keeping payload columns.
    """
    return {
        ds_id
        for ds_id in sorted(schemas)
        if columns_to_load(cube, ds_id, schemas[ds_id], intention) is not None
    }
