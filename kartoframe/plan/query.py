"""A read query, bound once, and what resolving it needs (pure, no I/O).

Every read — eager, iterator, dask, Spark, and each dataset of a cube query — starts here:

1. :func:`bind_query` validates the user's arguments and binds the DNF predicates to the
   dataset schema **once** into a frozen :class:`ReadQuery`;
2. :func:`read_needs` computes from the header and the query what planning needs loaded
   (the secondary indices, which of them may be restricted to a few values, the per-file
   statistics) as a :class:`ReadNeeds`;
3. the storage layer loads exactly that
   (:func:`kartoframe.storage.resolve.load_for_read`), and
4. :func:`kartoframe.plan.scan.plan_bound` plans the read from the query without binding
   anything again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from kartoframe.format.dataset import LoadedDataset
from kartoframe.plan.integers import integer_statistics_needed
from kartoframe.plan.predicates import Literal, Predicate, bind, can_match_null

__all__ = [
    "ReadNeeds",
    "ReadQuery",
    "bind_query",
    "bound",
    "index_lookups",
    "needs_statistics",
    "read_needs",
    "required_index_columns",
]


@dataclasses.dataclass(frozen=True, slots=True)
class ReadQuery:
    """A validated read request with its predicates bound to the dataset schema.

    Attributes
    ----------
    columns
        Projection in output order (None: all columns, partition keys first).
    predicate
        The row filter: per-file statistics and Parquet row groups are skipped with it and
        rows filtered by it.
    prune_predicate
        What partitions are pruned with (partition keys, secondary indices); the same
        value as ``predicate`` for dataset reads, all the conditions on the dataset's
        columns for a cube dataset.
    dispatch_by
        None: one task per file; ``()``: one task; columns: one task per value.
    categoricals, dates_as_object
        pandas conversion options.
    consistent_integers
        Decide the integer dtypes of every frame at planning time (loads the statistics
        for their null counts when that needs them).
    dispatch_nulls
        Dispatching by a secondary-index column adds a group for its nulls.
    known_categories
        Also load the indices of categorical secondary-index columns (dask's known
        categories); they are then never restricted to a few values.
    typing_columns
        The columns whose integer dtypes decide whether the statistics are loaded for
        ``consistent_integers`` (None: ``columns``); dask leaves out its index column.
    """

    columns: tuple[str, ...] | None = None
    predicate: Predicate | None = None
    prune_predicate: Predicate | None = None
    dispatch_by: tuple[str, ...] | None = None
    categoricals: tuple[str, ...] = ()
    dates_as_object: bool = True
    consistent_integers: bool = True
    dispatch_nulls: bool = True
    known_categories: bool = False
    typing_columns: tuple[str, ...] | None = None


def bound(predicates: object, schema: pa.Schema) -> Predicate | None:
    """``predicates`` bound to ``schema`` (an already bound :class:`Predicate` as it is)."""
    if predicates is None or isinstance(predicates, Predicate):
        return predicates
    return bind(predicates, schema)


#: ReadQuery fields given as sequences (stored as tuples; None stays None)
_SEQUENCES = ("columns", "dispatch_by", "typing_columns")


def bind_query(schema: pa.Schema, *, predicates: object = None, **options: Any) -> ReadQuery:
    """Bind a read request to a dataset schema (the only place dataset predicates are bound).

    ``options`` are the other :class:`ReadQuery` fields (``columns``, ``dispatch_by``,
    ``categoricals``, ``dates_as_object``, ``consistent_integers``, ``dispatch_nulls``,
    ``known_categories``, ``typing_columns``); sequences may be lists. Columns are checked
    by planning (:func:`kartoframe.plan.scan.plan_bound`), after the predicates.
    """
    pred = bound(predicates, schema)
    for name in _SEQUENCES:
        if options.get(name) is not None:
            options[name] = tuple(options[name])
    options["categoricals"] = tuple(options.get("categoricals") or ())
    return ReadQuery(predicate=pred, prune_predicate=pred, **options)


@dataclasses.dataclass(frozen=True, slots=True)
class ReadNeeds:
    """What a read needs loaded besides the header and schema.

    Attributes
    ----------
    indices
        Secondary-index columns to load.
    lookups
        Index columns whose file may be read for these values only (see
        :func:`index_lookups`).
    statistics
        The per-file statistics skip files: load them (a missing file is an error).
    optional_statistics
        The statistics only type integer columns: load them if present and readable.
    """

    indices: tuple[str, ...] = ()
    lookups: Mapping[str, tuple[Any, ...]] = dataclasses.field(default_factory=dict)
    statistics: bool = False
    optional_statistics: bool = False

    def __bool__(self) -> bool:
        """Whether anything is to be loaded."""
        return bool(self.indices) or self.statistics or self.optional_statistics


def _secondary(loaded: LoadedDataset) -> set[str]:
    return set(loaded.metadata.indices) | set(loaded.metadata.embedded_indices)


def required_index_columns(
    loaded: LoadedDataset, predicates: object, dispatch_by: Sequence[str] | None = None
) -> set[str]:
    """Secondary-index columns a query needs loaded (for pruning or dispatch)."""
    pred = bound(predicates, loaded.schema)
    wanted = set(pred.columns) if pred else set()
    return (wanted | set(dispatch_by or ())) & _secondary(loaded)


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
    pred = bound(predicates, loaded.schema)
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
    pred = bound(predicates, loaded.schema)
    if pred is None:
        return False
    pk = set(loaded.metadata.partition_keys)
    indexed = _secondary(loaded)

    def exact(lit: Literal) -> bool:
        # answered per file by a key or an index: per-column statistics cannot prune more
        if lit.column in pk:
            return True
        return lit.column in indexed and lit.op in ("==", "in") and not can_match_null(lit)

    return not all(exact(lit) for conj in pred.conjunctions for lit in conj)


def read_needs(loaded: LoadedDataset, query: ReadQuery) -> ReadNeeds:
    """What to load for ``query`` (indices, index lookups, statistics); pure."""
    dispatch = query.dispatch_by or ()
    need = required_index_columns(loaded, query.prune_predicate, dispatch)
    need -= set(loaded.metadata.partition_keys)
    broad = tuple(dispatch)
    if query.known_categories:
        cats = set(query.categoricals) & _secondary(loaded)
        need |= cats
        broad += tuple(sorted(cats))
    lookups = index_lookups(loaded, query.prune_predicate, broad)
    stats = loaded.statistics is None and needs_statistics(loaded, query.predicate)
    typed = query.typing_columns if query.typing_columns is not None else query.columns
    optional = (
        not stats
        and loaded.statistics is None
        and query.consistent_integers
        and integer_statistics_needed(
            loaded.schema, typed, loaded.metadata.partition_keys, query.categoricals
        )
    )
    return ReadNeeds(tuple(sorted(need - set(loaded.indices))), lookups, stats, optional)
