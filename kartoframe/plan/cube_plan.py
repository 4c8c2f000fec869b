"""Cube query plan values: how each dataset takes part, the query groups, the plan.

Engines only execute a :class:`CubeQueryPlan`: each dataset's files of a group are read
by the dataset read kernel (:func:`kartoframe.execution.kernel.read_task_table`, through
:attr:`DatasetRead.scan`) and joined by :mod:`kartoframe.execution.cube_join`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Literal

import pyarrow as pa

from kartoframe.format.cube import Cube
from kartoframe.plan import predicates as preds
from kartoframe.plan.cube_intention import QueryIntention
from kartoframe.plan.pruning import PruneStats
from kartoframe.plan.scan import FilePart, ReadTask, ScanPlan

__all__ = ["CubeQueryPlan", "DatasetRead", "QueryGroup", "Role"]

Role = Literal["seed", "inner", "left"]


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class DatasetRead:
    """How one dataset takes part in the query.

    Attributes
    ----------
    dataset_id, uuid, table_name, schema, partition_keys
        The dataset.
    role
        ``"seed"``, ``"inner"`` (restrictive: inner join) or ``"left"`` (left join).
    load_columns
        Data columns to load (sorted; partition columns are materialised from keys).
    join_columns
        Columns the dataset is joined to the seed on: its dimension columns in the query,
        then its partition keys that are cube partition columns.
    dedupe_columns
        Cell key for the keep-last de-duplication: ``join_columns`` plus this dataset's
        ``partition_by`` columns that are not already in them (groups filter rows by
        their ``partition_by`` value before keeping the last row, as kartothek does).
    predicate
        Row filter (the dataset's post-conditions), bound to its schema.
    projected
        The dataset has dimension columns outside the query dimensions (seed only).
    label_order
        Position of every partition label in the header (commit order).
    nullable_integers
        Integer columns every frame reads as pandas nullable integers, decided for all
        groups at once (see :mod:`kartoframe.plan.integers`; set by
        ``plan_query(consistent_integers=True)``).
    """

    dataset_id: str
    uuid: str
    table_name: str
    schema: pa.Schema
    partition_keys: tuple[str, ...]
    role: Role
    load_columns: tuple[str, ...]
    join_columns: tuple[str, ...]
    dedupe_columns: tuple[str, ...]
    predicate: preds.Predicate | None
    projected: bool
    label_order: Mapping[str, int] = dataclasses.field(default_factory=dict)
    nullable_integers: tuple[str, ...] = ()

    @property
    def scan_columns(self) -> tuple[str, ...]:
        """Columns the scan must produce (load, join and de-duplication columns)."""
        return tuple(dict.fromkeys([*self.load_columns, *self.join_columns, *self.dedupe_columns]))

    @property
    def scan(self) -> ScanPlan:
        """The dataset read of this dataset (no tasks): what the read kernel runs with
        :meth:`QueryGroup.task`.
        """
        return ScanPlan(
            dataset_uuid=self.uuid,
            table_name=self.table_name,
            schema=self.schema,
            partition_keys=self.partition_keys,
            columns=self.scan_columns,
            predicate=self.predicate,
            tasks=(),
        )

    @property
    def cube_partition_keys(self) -> tuple[str, ...]:
        """Partition keys that are join columns (cube partition columns)."""
        return tuple(c for c in self.join_columns if c in self.partition_keys)


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class QueryGroup:
    """One unit of work: one result frame (before dropping empty ones).

    Attributes
    ----------
    key
        ``(column, value)`` of the ``partition_by`` columns for this group (empty if the
        query has no ``partition_by``).
    files
        Dataset id -> files to read, in commit (header) order.
    extra
        Dataset id -> additional row-filter literals (``partition_by`` values on columns
        that are not cube partition columns).
    """

    key: tuple[tuple[str, Any], ...]
    files: Mapping[str, tuple[FilePart, ...]]
    extra: Mapping[str, tuple[preds.Literal, ...]]

    def task(self, dataset_id: str) -> ReadTask:
        """The read task of a dataset in this group: its files (commit order) and the
        group's extra row filter.
        """
        return ReadTask(self.files.get(dataset_id, ()), extra=self.extra.get(dataset_id, ()))

    def needs_dedupe(self, read: DatasetRead) -> bool:
        """Whether this group can hold several rows per cell of ``read``'s dataset.

        True for a projected dataset or when two files share the cube partition values
        (appends). Files written by cube writes hold unique cells, so otherwise the
        keep-last step can be skipped.
        """
        if read.projected:
            return True
        positions = [read.partition_keys.index(c) for c in read.cube_partition_keys]
        seen: set[tuple[Any, ...]] = set()
        for f in self.files.get(read.dataset_id, ()):
            k = tuple(f.partition_values[i] for i in positions)
            if k in seen:
                return True
            seen.add(k)
        return False


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class CubeQueryPlan:
    """A planned cube query; engines run it group by group (or merged).

    Attributes
    ----------
    cube, intention
        What was asked.
    reads
        Participating datasets in join order: seed, restrictive (inner), others (left).
    groups
        Groups sorted by ``partition_by`` key (by cube partition when no ``partition_by``).
    prune_stats
        Dataset id -> files kept by each pruning stage of that dataset (partition keys,
        secondary indices, per-file statistics), before the datasets are aligned;
        :meth:`file_counts` gives the files the query finally reads.
    """

    cube: Cube
    intention: QueryIntention
    reads: tuple[DatasetRead, ...]
    groups: tuple[QueryGroup, ...]
    prune_stats: Mapping[str, PruneStats] = dataclasses.field(default_factory=dict)

    @property
    def output_columns(self) -> tuple[str, ...]:
        """Result columns in order."""
        return self.intention.output_columns

    @property
    def sort_columns(self) -> tuple[str, ...]:
        """Result rows are sorted by these: query dimensions, then cube partitions."""
        return tuple(self.intention.dimension_columns) + tuple(self.cube.partition_columns)

    def slim(self) -> CubeQueryPlan:
        """The plan without what tasks do not need (header label order, the groups)."""
        reads = tuple(dataclasses.replace(r, label_order={}) for r in self.reads)
        return dataclasses.replace(self, reads=reads, groups=())

    def read(self, dataset_id: str) -> DatasetRead:
        """The :class:`DatasetRead` of a dataset id."""
        for r in self.reads:
            if r.dataset_id == dataset_id:
                return r
        raise KeyError(dataset_id)

    def file_counts(self) -> dict[str, int]:
        """Dataset id -> number of distinct data files the query reads (all groups)."""
        out: dict[str, int] = {}
        for r in self.reads:
            labels = {f.label for g in self.groups for f in g.files.get(r.dataset_id, ())}
            out[r.dataset_id] = len(labels)
        return out

    def merged(self) -> QueryGroup:
        """All groups as one (files de-duplicated, commit order kept, no extra filters).

        Running the merged group and splitting the result by the ``partition_by``
        columns gives the same frames as running every group: rows of a group are those
        whose ``partition_by`` values equal the group key, and the keep-last key includes
        the ``partition_by`` payload columns.
        """
        files: dict[str, tuple[FilePart, ...]] = {}
        for r in self.reads:
            seen: dict[str, FilePart] = {}
            for g in self.groups:
                for f in g.files.get(r.dataset_id, ()):
                    seen.setdefault(f.label, f)
            order = r.label_order
            files[r.dataset_id] = tuple(sorted(seen.values(), key=lambda f: order[f.label]))
        return QueryGroup((), files, {})

    def coalesced(self, max_groups: int) -> tuple[QueryGroup, ...]:
        """Without ``partition_by``: merge neighbouring groups into at most ``max_groups``."""
        if self.intention.partition_by or len(self.groups) <= max_groups:
            return self.groups
        size = -(-len(self.groups) // max(1, max_groups))
        out = []
        for start in range(0, len(self.groups), size):
            chunk = self.groups[start : start + size]
            sub = dataclasses.replace(self, groups=chunk)
            out.append(sub.merged())
        return tuple(out)
