"""Read planning: loaded dataset + bound query -> :class:`ScanPlan` (pure, no I/O)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from kartoframe.errors import ColumnNotFoundError, InvalidInputError
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.index import index_from_embedded
from kartoframe.format.value_ranges import ValueRange
from kartoframe.plan.file_part import FilePart
from kartoframe.plan.integers import nullable_integer_columns
from kartoframe.plan.predicates import (
    Literal,
    Predicate,
    covering_ranges,
    literal_expression,
    to_expression,
)
from kartoframe.plan.pruning import PruneStats, partition_value_rows, prune
from kartoframe.plan.query import (
    ReadQuery,
    bind_query,
    index_lookups,
    needs_statistics,
    required_index_columns,
)
from kartoframe.plan.skipping import skip_by_statistics

__all__ = [
    "FilePart",
    "ReadTask",
    "ScanPlan",
    "all_indices",
    "check_columns",
    "index_lookups",
    "needs_statistics",
    "plan_bound",
    "plan_scan",
    "required_index_columns",
    "select_files",
]


@dataclasses.dataclass(frozen=True, slots=True)
class ReadTask:
    """The unit of work of every engine: some files, read and concatenated.

    ``dispatch_values`` are the values of the ``dispatch_by`` columns for this group;
    ``extra`` is an additional row filter (set when dispatching on a secondary-index
    column, so each group receives only its rows).
    """

    files: tuple[FilePart, ...]
    dispatch_values: tuple[tuple[str, Any], ...] = ()
    extra: tuple[Literal, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class ScanPlan:
    """A planned read. Engines only run it."""

    dataset_uuid: str
    table_name: str
    schema: pa.Schema
    partition_keys: tuple[str, ...]
    columns: tuple[str, ...]
    predicate: Predicate | None
    tasks: tuple[ReadTask, ...]
    categoricals: tuple[str, ...] = ()
    dates_as_object: bool = True
    stats: PruneStats = dataclasses.field(default_factory=lambda: PruneStats(0, 0, 0))
    #: integer columns every frame returns as pandas nullable integers (``Int64``), decided
    #: at planning time (see :mod:`kartoframe.plan.integers`)
    nullable_integers: tuple[str, ...] = ()

    def output_schema(self) -> pa.Schema:
        """Schema of the result (projection of the dataset schema, in output order)."""
        return pa.schema(
            [self.schema.field(c) for c in self.columns], metadata=self.schema.metadata
        )

    def filter_columns(self, task: ReadTask) -> tuple[str, ...]:
        """The columns :meth:`filter_for` reads."""
        cols = self.predicate.columns if self.predicate is not None else set()
        return tuple(sorted(cols | {lit.column for lit in task.extra}))

    def covering_for(self, task: ReadTask) -> tuple[tuple[ValueRange, ...], ...]:
        """The conjunctions of the task's row filter as ranges that a file's footer
        statistics can prove for all its rows (a file so proven is read without the
        filter; :mod:`kartoframe.format.value_ranges`).
        """
        return covering_ranges(self.predicate, task.extra)

    def filter_for(self, task: ReadTask) -> pc.Expression | None:
        """Row filter of a task: the predicate and the task's extra literals."""
        expr = to_expression(self.predicate)
        for lit in task.extra:
            e = literal_expression(lit)
            expr = e if expr is None else (expr & e)
        return expr


def check_columns(names: Sequence[str], schema: pa.Schema, what: str) -> None:
    """Raise :class:`ColumnNotFoundError` naming ``names`` the schema lacks."""
    missing = [c for c in names if c not in schema.names]
    if missing:
        raise ColumnNotFoundError(
            f"{what} not found in the dataset: {missing} (columns: {schema.names})."
        )


def all_indices(loaded: LoadedDataset) -> dict[str, pa.Table]:
    """The loaded secondary indices plus the header's embedded (legacy) ones."""
    out = dict(loaded.indices)
    for col, emb in loaded.metadata.embedded_indices.items():
        if col not in out and col in loaded.schema.names:
            out[col] = index_from_embedded(col, loaded.schema.field(col).type, emb)
    return out


def select_files(
    loaded: LoadedDataset,
    query: ReadQuery,
    indices: Mapping[str, pa.Table],
    labels: Sequence[str] | None = None,
) -> tuple[list[str], PruneStats]:
    """The one place that prunes: partition keys -> secondary indices (with
    ``query.prune_predicate``) -> per-file statistics (with the row filter
    ``query.predicate``, when loaded). Row groups are skipped by the scan of the kept files
    with the same row filter (:meth:`ScanPlan.filter_for`).

    Returns the kept labels (in ``labels`` order; default: the header's) and the counts.
    """
    md = loaded.metadata
    candidates = list(md.partitions) if labels is None else list(labels)
    kept, stats = prune(
        query.prune_predicate, candidates, md.partition_keys, loaded.schema, indices
    )
    if loaded.statistics is not None and query.predicate is not None:
        kept = skip_by_statistics(
            query.predicate, kept, md.partitions, loaded.statistics, md.partition_keys
        )
        stats = dataclasses.replace(stats, after_statistics=len(kept))
    return kept, stats


def plan_scan(
    loaded: LoadedDataset, *, labels: Sequence[str] | None = None, **request: Any
) -> ScanPlan:
    """Bind a request and plan it, for callers holding the raw arguments.

    ``request`` holds the keywords of :func:`kartoframe.plan.query.bind_query` (``columns``,
    ``predicates``, ``dispatch_by``, ``categoricals``, ``dates_as_object``,
    ``consistent_integers``, ``dispatch_nulls``); ``labels`` the candidate labels
    (default: the header's, in header order). See :func:`plan_bound`.
    """
    return plan_bound(loaded, bind_query(loaded.schema, **request), labels)


def plan_bound(
    loaded: LoadedDataset, query: ReadQuery, labels: Sequence[str] | None = None
) -> ScanPlan:
    """Plan a bound read of a loaded dataset (what :func:`kartoframe.plan.query.read_needs`
    asked for loaded); binds nothing.

    Parameters
    ----------
    loaded
        Header, schema and the indices (and statistics) the query needs.
    query
        The bound request (see :class:`kartoframe.plan.query.ReadQuery`): ``dispatch_by``
        None gives one task per data file, ``()`` one task for everything, indexed
        columns one task per distinct value combination (with a last group for the nulls
        of a secondary-index column unless ``dispatch_nulls`` is False: indices do not
        list nulls, and a sorted index with known divisions must drop them).
        ``consistent_integers`` decides here which integer columns every frame returns as
        pandas nullable integers (:func:`kartoframe.plan.integers.nullable_integer_columns`,
        from the loaded statistics), so all frames of the read agree; False for reads
        converted into one frame (whose own nulls then decide) or never converted to pandas.
    labels
        Candidate labels (default: the header's, in header order).
    """
    md, schema = loaded.metadata, loaded.schema
    columns = query.columns
    if columns is not None:
        if isinstance(columns, str):
            raise InvalidInputError("columns must be a list of column names, not a string.")
        check_columns(list(columns), schema, "Columns")
    out_cols = tuple(columns) if columns is not None else tuple(schema.names)
    cats = query.categoricals
    check_columns(cats, schema, "Categorical columns")
    indices = all_indices(loaded)
    kept, stats = select_files(loaded, query, indices, labels)
    pk = md.partition_keys
    values = partition_value_rows(kept, pk, schema)
    parts = [FilePart(lb, md.partitions[lb], v) for lb, v in zip(kept, values, strict=True)]
    tasks = _dispatch(parts, query.dispatch_by, pk, schema, indices, query.dispatch_nulls)
    nullable = (
        nullable_integer_columns(schema, out_cols, parts, pk, loaded.statistics, cats)
        if query.consistent_integers
        else ()
    )
    return ScanPlan(
        dataset_uuid=md.uuid,
        table_name=md.table_name,
        schema=schema,
        partition_keys=tuple(pk),
        columns=out_cols,
        predicate=query.predicate,
        tasks=tuple(tasks),
        categoricals=cats,
        dates_as_object=query.dates_as_object,
        stats=stats,
        nullable_integers=nullable,
    )


def _dispatch(
    parts: list[FilePart],
    dispatch_by: Sequence[str] | None,
    partition_keys: Sequence[str],
    schema: pa.Schema,
    indices: dict[str, pa.Table],
    dispatch_nulls: bool = True,
) -> list[ReadTask]:
    if dispatch_by is None:
        return [ReadTask((p,)) for p in parts]
    dispatch = list(dispatch_by)
    if not dispatch:
        return [ReadTask(tuple(parts))] if parts else []
    not_indexed = [c for c in dispatch if c not in partition_keys and c not in indices]
    if not_indexed:
        raise InvalidInputError(
            f"Dispatch columns must be indexed (partition keys or secondary indices): "
            f"{not_indexed}."
        )
    pk_pos = {k: i for i, k in enumerate(partition_keys)}
    label_values: dict[str, dict[str, list[Any]]] = {}
    for col in dispatch:
        if col in pk_pos:
            continue
        exploded: dict[str, list[Any]] = {}
        idx = indices[col]
        values = idx.column(0).to_pylist()
        for v, labels in zip(values, idx.column(1).to_pylist()):
            for lb in labels:
                exploded.setdefault(lb, []).append(v)
        label_values[col] = exploded
    groups: dict[tuple[Any, ...], list[FilePart]] = {}
    for p in parts:
        combos: list[tuple[Any, ...]] = [()]
        for col in dispatch:
            if col in pk_pos:
                vals = [p.partition_values[pk_pos[col]]]
            else:
                vals = label_values[col].get(p.label, [])
                if dispatch_nulls:
                    vals = [*vals, None]  # any file may hold nulls; the filter finds them
            combos = [(*c, v) for c in combos for v in vals]
        for combo in combos:
            groups.setdefault(combo, []).append(p)
    ordered = sorted(groups.items(), key=lambda kv: _sort_key(kv[0]))
    tasks = []
    for combo, files in ordered:
        extra = tuple(
            Literal(col, "==", None if v is None else v, schema.field(col).type)
            for col, v in zip(dispatch, combo)
            if col not in pk_pos
        )
        tasks.append(ReadTask(tuple(files), tuple(zip(dispatch, combo)), extra))
    return tasks


def _sort_key(combo: tuple[Any, ...]) -> tuple[Any, ...]:
    # null groups sort last
    return tuple(
        (v is None, "" if v is None else type(v).__name__, 0 if v is None else v) for v in combo
    )
