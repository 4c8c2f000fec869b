"""Cube query planning: loaded metadata and indices -> :class:`CubeQueryPlan` (pure).

Three steps, each a pure function of the previous one's result:

1. :func:`~kartoframe.plan.cube_intention.determine_intention` validates the user's
   request against the datasets' schemas and index columns and splits the conditions per
   dataset;
2. :func:`member_queries` lowers each taking-part dataset's conditions to DNF and binds
   them **once** into a :class:`~kartoframe.plan.query.ReadQuery`, the value dataset reads
   use: :func:`kartoframe.plan.query.read_needs` names what to load (the secondary indices
   of columns used by conditions or ``partition_by``, index lookups, the per-file
   statistics that could skip files), the storage layer loads it;
3. :func:`plan_query` prunes every dataset like a dataset read, aligns the datasets'
   partitions and cuts the result into query groups (:mod:`kartoframe.plan.cube_groups`).

Engines only execute the plan: each dataset's part of a group is a
:class:`~kartoframe.plan.scan.ReadTask` of the dataset read kernel
(:mod:`kartoframe.execution.kernel`), joined by :mod:`kartoframe.execution.cube_join`; no
data file is opened during planning.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from operator import attrgetter

import pyarrow as pa

from kartoframe.format.cube import Cube, dataset_columns
from kartoframe.format.dataset import LoadedDataset
from kartoframe.plan.cube_groups import regroup
from kartoframe.plan.cube_intention import (
    QueryIntention,
    columns_to_load,
    determine_intention,
    relevant_datasets,
)
from kartoframe.plan.cube_plan import CubeQueryPlan, DatasetRead, QueryGroup, Role
from kartoframe.plan.integers import nullable_integer_columns
from kartoframe.plan.predicates import Predicate, bind
from kartoframe.plan.query import ReadQuery

__all__ = [
    "CubeQueryPlan",
    "DatasetRead",
    "QueryGroup",
    "QueryIntention",
    "determine_intention",
    "member_queries",
    "plan_query",
    "relevant_datasets",
]


def member_queries(
    cube: Cube,
    schemas: Mapping[str, pa.Schema],
    intention: QueryIntention,
    consistent_integers: bool = False,
) -> dict[str, ReadQuery]:
    """One bound read query per dataset: its conditions lowered to DNF and bound once.

    ``prune_predicate`` holds every condition on the dataset's columns (partitions are
    pruned by partition keys and indices with it); ``predicate``, the row filter that
    skips files and row groups and filters rows, only those not on cube partition columns
    (the dataset's post-conditions), in column order. ``dispatch_by`` holds the
    ``partition_by`` columns: their indices are loaded in full. ``consistent_integers``
    (dask) loads the statistics to type the integer columns of every group alike.
    """
    out: dict[str, ReadQuery] = {}
    for ds_id, schema in schemas.items():
        conj = intention.conditions.restrict(dataset_columns(schema))
        prune = bind(conj.to_predicates(), schema) if len(conj) else None
        post = intention.conditions_post.get(ds_id)
        out[ds_id] = ReadQuery(
            predicate=_restricted(prune, post.columns if post is not None else set()),
            prune_predicate=prune,
            dispatch_by=tuple(intention.partition_by),
            consistent_integers=consistent_integers,
        )
    return out


def _restricted(pred: Predicate | None, columns: set[str]) -> Predicate | None:
    """The literals of a one-conjunction predicate on ``columns``, ordered by column."""
    if pred is None or not columns:
        return None
    lits = [lit for lit in pred.conjunctions[0] if lit.column in columns]
    return Predicate((tuple(sorted(lits, key=attrgetter("column"))),)) if lits else None


def plan_query(
    cube: Cube,
    datasets: Mapping[str, LoadedDataset],
    intention: QueryIntention,
    queries: Mapping[str, ReadQuery],
    consistent_integers: bool = False,
) -> CubeQueryPlan:
    """Plan a cube query from loaded datasets and their bound :func:`member_queries`
    (with what :func:`kartoframe.plan.query.read_needs` asked for loaded).

    ``consistent_integers`` decides which integer columns every group's frame returns as
    pandas nullable integers (from the loaded statistics' null counts of all the groups'
    files), for engines that run the groups separately (dask); the merged eager run has one
    frame, whose own nulls decide.

    Raises
    ------
    InvalidInputError
        A dataset would have to be projected while keeping payload columns.
    """
    pby = intention.partition_by
    cube_dims, cube_parts = set(cube.dimension_columns), set(cube.partition_columns)

    restrictive: set[str] = set()
    for ds_id, loaded in datasets.items():
        if ds_id == cube.seed_dataset:
            continue
        mask = set(pby)
        for table in (intention.conditions_pre, intention.conditions_post):
            if ds_id in table:
                mask |= table[ds_id].columns
        mask -= cube_dims | cube_parts
        if mask & dataset_columns(loaded.schema):
            restrictive.add(ds_id)

    reads: list[DatasetRead] = []
    for ds_id in _join_order(cube, datasets, restrictive):
        loaded = datasets[ds_id]
        read = _dataset_read(cube, ds_id, loaded, intention, queries[ds_id], restrictive)
        if read is not None:
            reads.append(read)
    groups, stats = regroup(cube, datasets, intention, queries, reads)
    if consistent_integers:
        reads = [_with_nullable_integers(r, datasets[r.dataset_id], groups) for r in reads]
    return CubeQueryPlan(cube, intention, tuple(reads), groups, stats)


def _with_nullable_integers(
    read: DatasetRead, loaded: LoadedDataset, groups: Sequence[QueryGroup]
) -> DatasetRead:
    files = list({f.label: f for g in groups for f in g.files.get(read.dataset_id, ())}.values())
    nullable = nullable_integer_columns(
        read.schema, read.scan_columns, files, read.partition_keys, loaded.statistics
    )
    return dataclasses.replace(read, nullable_integers=nullable)


def _join_order(
    cube: Cube, datasets: Mapping[str, LoadedDataset], restrictive: set[str]
) -> list[str]:
    others = sorted(d for d in datasets if d != cube.seed_dataset)
    return (
        [cube.seed_dataset]
        + [d for d in others if d in restrictive]
        + [d for d in others if d not in restrictive]
    )


def _dataset_read(
    cube: Cube,
    ds_id: str,
    loaded: LoadedDataset,
    intention: QueryIntention,
    query: ReadQuery,
    restrictive: set[str],
) -> DatasetRead | None:
    found = columns_to_load(cube, ds_id, loaded.schema, intention)
    if found is None:
        return None
    candidates, projected = found
    cols = dataset_columns(loaded.schema)
    dims_q = intention.dimension_columns
    pk = tuple(loaded.metadata.partition_keys)
    join = tuple(c for c in dims_q if c in cols) + tuple(
        c for c in cube.partition_columns if c in pk
    )
    # rows of a group are filtered by its partition_by values before the keep-last step
    # (kartothek's order): those columns are part of the cell key unless already in it
    pby_payload = tuple(
        c
        for c in intention.partition_by
        if c in cols and c not in cube.partition_columns and c not in join
    )
    is_seed = ds_id == cube.seed_dataset
    role: Role = "seed" if is_seed else ("inner" if ds_id in restrictive else "left")
    return DatasetRead(
        dataset_id=ds_id,
        uuid=loaded.uuid,
        table_name=loaded.metadata.table_name,
        schema=loaded.schema,
        partition_keys=pk,
        role=role,
        load_columns=tuple(sorted(candidates)),
        join_columns=join,
        dedupe_columns=join + pby_payload,
        predicate=query.predicate,
        projected=projected,
        label_order={lb: i for i, lb in enumerate(loaded.metadata.partitions)},
    )
