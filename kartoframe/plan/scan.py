"""Read planning: loaded dataset + query -> :class:`ScanPlan` (pure, no I/O)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from kartoframe.errors import ColumnNotFoundError, InvalidInputError
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.index import index_from_embedded
from kartoframe.plan.integers import nullable_integer_columns
from kartoframe.plan.predicates import (
    Literal,
    Predicate,
    bind,
    can_match_null,
    literal_expression,
    to_expression,
)
from kartoframe.plan.pruning import PruneStats, partition_values, prune
from kartoframe.plan.skipping import skip_by_statistics

__all__ = [
    "FilePart",
    "ReadTask",
    "ScanPlan",
    "index_lookups",
    "needs_statistics",
    "plan_scan",
    "required_index_columns",
]


@dataclasses.dataclass(frozen=True, slots=True)
class FilePart:
    """One data file to read and the partition values encoded in its key."""

    label: str
    key: str
    partition_values: tuple[Any, ...]


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

    def filter_for(self, task: ReadTask) -> pc.Expression | None:
        """Row filter of a task: the predicate and the task's extra literals."""
        expr = to_expression(self.predicate)
        for lit in task.extra:
            e = literal_expression(lit)
            expr = e if expr is None else (expr & e)
        return expr


def required_index_columns(
    loaded: LoadedDataset, predicates: object, dispatch_by: Sequence[str] | None = None
) -> set[str]:
    """Secondary-index columns a query needs loaded (for pruning or dispatch)."""
    pred = bind(predicates, loaded.schema) if predicates is not None else None
    wanted = set(pred.columns) if pred else set()
    wanted |= set(dispatch_by or ())
    secondary = set(loaded.metadata.indices) | set(loaded.metadata.embedded_indices)
    return wanted & secondary


def index_lookups(
    loaded: LoadedDataset, predicates: object, dispatch_by: Sequence[str] | None = None
) -> dict[str, tuple[Any, ...]]:
    """Index columns whose loaded index may be restricted to a few values.

    A column qualifies when every literal on it, in every conjunction, is ``==`` or
    ``in`` with non-null values (so the only index rows pruning consults are those
    values' rows) and it is not a dispatch column (dispatch needs every value). Returns
    column -> the values to load; the partial index then answers exactly as the full
    one (see :func:`kartoframe.format.index.index_from_bytes`).
    """
    pred = bind(predicates, loaded.schema) if predicates is not None else None
    if pred is None:
        return {}
    files = set(loaded.metadata.indices)  # embedded (legacy) indices are in the header
    values: dict[str, list[Any]] = {}
    broad: set[str] = set(dispatch_by or ())
    for conj in pred.conjunctions:
        for lit in conj:
            if lit.column not in files or lit.column in broad:
                continue
            if lit.op == "==" and lit.value is not None:
                values.setdefault(lit.column, []).append(lit.value)
            elif lit.op == "in" and not lit.has_null:
                values.setdefault(lit.column, []).extend(lit.value)
            else:
                broad.add(lit.column)
    return {c: tuple(v) for c, v in values.items() if c not in broad}


def needs_statistics(loaded: LoadedDataset, predicates: object) -> bool:
    """Whether a query's predicates can use per-file statistics.

    True if any literal is on a column that is not a partition key: the resolver should
    then load the statistics.
    """
    if predicates is None:
        return False
    pred = bind(predicates, loaded.schema)
    if pred is None:
        return False
    pk = set(loaded.metadata.partition_keys)
    indexed = set(loaded.metadata.indices) | set(loaded.metadata.embedded_indices)

    def exact(lit: Literal) -> bool:
        # answered per file by a key or an index: per-column statistics cannot prune more
        if lit.column in pk:
            return True
        return lit.column in indexed and lit.op in ("==", "in") and not can_match_null(lit)

    return not all(exact(lit) for conj in pred.conjunctions for lit in conj)


def _check_columns(names: Sequence[str], schema: pa.Schema, what: str) -> None:
    missing = [c for c in names if c not in schema.names]
    if missing:
        raise ColumnNotFoundError(
            f"{what} not found in the dataset: {missing} (columns: {schema.names})."
        )


def _indices(loaded: LoadedDataset) -> dict[str, pa.Table]:
    out = dict(loaded.indices)
    for col, emb in loaded.metadata.embedded_indices.items():
        if col not in out and col in loaded.schema.names:
            out[col] = index_from_embedded(col, loaded.schema.field(col).type, emb)
    return out


def plan_scan(
    loaded: LoadedDataset,
    *,
    columns: Sequence[str] | None = None,
    predicates: object = None,
    dispatch_by: Sequence[str] | None = None,
    categoricals: Sequence[str] | None = None,
    dates_as_object: bool = True,
    labels: Sequence[str] | None = None,
    dispatch_nulls: bool = True,
    consistent_integers: bool = True,
) -> ScanPlan:
    """Plan a read of a loaded dataset.

    Parameters
    ----------
    loaded
        Header, schema and the indices the predicates need.
    columns
        Projection in output order; None means all columns (partition keys first).
    predicates
        DNF predicates.
    dispatch_by
        None: one task per data file. ``[]``: one task for everything. A list of
        indexed columns: one task per distinct value combination.
    categoricals
        Columns to return as ``pandas.Categorical``.
    dates_as_object
        Return ``date`` columns as ``datetime.date`` objects.
    labels
        Candidate labels (default: the header's, in header order).
    dispatch_nulls
        When dispatching by a secondary-index column, add a last group (value None)
        holding the rows whose value is null, so no row is lost (indices do not list
        nulls). False drops those rows (needed for a sorted index with known divisions).
    consistent_integers
        Decide here which integer columns every frame returns as pandas nullable integers
        (:func:`kartoframe.plan.integers.nullable_integer_columns`, from the loaded
        statistics), so all frames of the read agree. False for reads converted into one
        frame (whose own nulls then decide) or never converted to pandas.
    """
    md, schema = loaded.metadata, loaded.schema
    if columns is not None:
        if isinstance(columns, str):
            raise InvalidInputError("columns must be a list of column names, not a string.")
        _check_columns(list(columns), schema, "Columns")
    out_cols = tuple(columns) if columns is not None else tuple(schema.names)
    cats = tuple(categoricals or ())
    _check_columns(cats, schema, "Categorical columns")
    pred = bind(predicates, schema)
    indices = _indices(loaded)
    candidates = list(md.partitions) if labels is None else list(labels)
    kept, stats = prune(pred, candidates, md.partition_keys, schema, indices)
    if loaded.statistics is not None and pred is not None:
        kept = skip_by_statistics(pred, kept, md.partitions, loaded.statistics, md.partition_keys)
        stats = dataclasses.replace(stats, after_statistics=len(kept))
    pk = md.partition_keys
    parts = [FilePart(lb, md.partitions[lb], partition_values(lb, pk, schema)) for lb in kept]
    tasks = _dispatch(parts, dispatch_by, pk, schema, indices, dispatch_nulls)
    nullable = (
        nullable_integer_columns(schema, out_cols, parts, pk, loaded.statistics, cats)
        if consistent_integers
        else ()
    )
    return ScanPlan(
        dataset_uuid=md.uuid,
        table_name=md.table_name,
        schema=schema,
        partition_keys=tuple(pk),
        columns=out_cols,
        predicate=pred,
        tasks=tuple(tasks),
        categoricals=cats,
        dates_as_object=dates_as_object,
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
