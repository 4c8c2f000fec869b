"""Partition pruning: partition keys first, then secondary indices. Pure functions.

A label survives a conjunction if its partition-key values satisfy the conjunction's
literals on partition columns *and* every index-prunable literal's index lists the label.
A literal that can match nulls is never used for index pruning, because indices do not
hold nulls (the reference implementations lose null rows there). The union over the
conjunctions survives.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from kartoframe.format.index import index_labels
from kartoframe.format.naming import parse_label, quote, unquote
from kartoframe.format.values import parse_partition_value
from kartoframe.plan.predicates import (
    Literal,
    Predicate,
    can_match_null,
    conjunction_expression,
    literal_expression,
)

__all__ = [
    "PruneStats",
    "partition_value_rows",
    "partition_values",
    "partition_values_table",
    "prune",
]


@dataclasses.dataclass(frozen=True, slots=True)
class PruneStats:
    """How many partitions each pruning stage kept.

    ``after_statistics`` counts the files left after data skipping with per-file
    statistics (the files a read opens); it equals ``after_indices`` when no statistics
    were used (left at -1 by a caller, it is set to ``after_indices``).
    """

    total: int
    after_partition_keys: int
    after_indices: int
    after_statistics: int = -1

    def __post_init__(self) -> None:
        if self.after_statistics < 0:
            object.__setattr__(self, "after_statistics", self.after_indices)


def partition_values(
    label: str, partition_keys: Sequence[str], schema: pa.Schema
) -> tuple[Any, ...]:
    """Typed partition-key values of one label, in ``partition_keys`` order."""
    if not partition_keys:
        return ()
    pairs = dict(parse_label(label, list(partition_keys)))
    out = []
    for k in partition_keys:
        if k not in pairs:
            from kartoframe.errors import CorruptMetadataError

            raise CorruptMetadataError(f"Partition label {label!r} lacks partition key {k!r}.")
        out.append(_parse_cached(pairs[k], schema.field(k).type, k))
    return tuple(out)


@lru_cache(maxsize=65536)
def _parse_cached(text: str, arrow_type: pa.DataType, column: str) -> Any:
    return parse_partition_value(text, arrow_type, column)


def partition_values_table(
    labels: Sequence[str], partition_keys: Sequence[str], schema: pa.Schema
) -> pa.Table:
    """A table with one row per label: ``__label__`` plus the typed key columns.

    Column-wise: Arrow splits the labels, and each key's distinct values are parsed once
    (a dataset of n partitions costs O(n) in Arrow plus O(distinct values) in Python).
    Labels that are not exactly ``key=value/.../file`` in key order (legacy values with an
    unescaped ``/``, extra components) take the per-label parser, :func:`partition_values`.
    """
    names = pa.array(list(labels), type=pa.string())
    cols: dict[str, pa.Array] = {"__label__": names}
    fast = _key_columns(names, partition_keys, schema) if len(names) else None
    if fast is None:
        rows = [partition_values(lb, partition_keys, schema) for lb in labels]
        fast = [
            pa.array([r[i] for r in rows], type=schema.field(k).type)
            for i, k in enumerate(partition_keys)
        ]
    cols.update(zip(partition_keys, fast, strict=True))
    return pa.table(cols)


def partition_value_rows(
    labels: Sequence[str], partition_keys: Sequence[str], schema: pa.Schema
) -> list[tuple[Any, ...]]:
    """:func:`partition_values` of every label (column-wise where the key types convert
    to the same Python values through Arrow: strings, integers, floats, booleans, dates).
    """
    if not partition_keys:
        return [()] * len(labels)
    if len(labels) > 1 and all(_row_safe(schema.field(k).type) for k in partition_keys):
        try:
            table = partition_values_table(labels, partition_keys, schema)
        except (pa.ArrowInvalid, OverflowError):
            pass  # e.g. a value out of its integer type's range: the per-label parser keeps it
        else:
            return list(zip(*(table[k].to_pylist() for k in partition_keys), strict=True))
    return [partition_values(lb, partition_keys, schema) for lb in labels]


#: key types whose values convert to the same Python values through Arrow
_ROW_SAFE = (
    pa.types.is_string,
    pa.types.is_large_string,
    pa.types.is_integer,
    pa.types.is_floating,
    pa.types.is_boolean,
    pa.types.is_date,
)


def _row_safe(t: pa.DataType) -> bool:
    return any(is_type(t) for is_type in _ROW_SAFE)


def _key_columns(
    names: pa.StringArray, partition_keys: Sequence[str], schema: pa.Schema
) -> list[pa.Array] | None:
    """The typed key columns of well-formed labels, or None if any label is not."""
    components = pc.split_pattern(names, "/")
    width = pc.min_max(pc.list_value_length(components)).as_py()
    if width["min"] != len(partition_keys) + 1 or width["max"] != width["min"]:
        return None
    out = []
    for i, key in enumerate(partition_keys):
        component = pc.list_element(components, i)
        prefix = quote(key) + "="
        if not pc.all(pc.starts_with(component, prefix)).as_py():
            return None
        encoded = pc.utf8_slice_codeunits(component, len(prefix)).dictionary_encode()
        arrow_type = schema.field(key).type
        distinct = [
            _parse_cached(unquote(v), arrow_type, key) for v in encoded.dictionary.to_pylist()
        ]
        out.append(pa.array(distinct, type=arrow_type).take(encoded.indices))
    return out


def prune(
    predicate: Predicate | None,
    labels: Sequence[str],
    partition_keys: Sequence[str],
    schema: pa.Schema,
    indices: Mapping[str, pa.Table],
) -> tuple[list[str], PruneStats]:
    """Return the labels (in input order) that may hold matching rows.

    Parameters
    ----------
    predicate
        Bound predicate or None.
    labels
        Candidate labels in header order.
    partition_keys, schema
        Used to type the values encoded in the labels.
    indices
        Loaded secondary indices (column -> index table); columns without a loaded
        index are not used for pruning.
    """
    n = len(labels)
    if predicate is None or n == 0:
        return list(labels), PruneStats(n, n, n)
    pk = set(partition_keys)
    uses_keys = any(lit.column in pk for conj in predicate.conjunctions for lit in conj)
    table = partition_values_table(labels, partition_keys, schema) if uses_keys else None
    keep_keys: set[str] = set()
    keep_all: set[str] = set()
    for conj in predicate.conjunctions:
        if table is not None:
            expr = conjunction_expression(conj, pk)
            cand = set(labels) if expr is None else set(table.filter(expr)["__label__"].to_pylist())
        else:
            cand = set(labels)
        keep_keys |= cand
        for lit in conj:
            if not cand:
                break
            index = indices.get(lit.column)
            if index is None or lit.column in pk or can_match_null(lit):
                continue
            cand &= index_labels(index, evaluate_mask(lit, index))
        keep_all |= cand
    # (set sizes first: a million labels pruned to none or all cost no pass over them)
    kept = _in_order(labels, keep_all, n)
    after_keys = (
        len(keep_keys) if len(keep_keys) in (0, n) else sum(map(keep_keys.__contains__, labels))
    )
    return kept, PruneStats(n, after_keys, len(kept))


def _in_order(labels: Sequence[str], keep: set[str], n: int) -> list[str]:
    """The labels in ``keep`` (a subset of the ``n`` ``labels``), in ``labels`` order: all of
    them when ``keep`` is as large as ``labels`` (then no label repeats).
    """
    if not keep:
        return []
    if len(keep) == n:
        return list(labels)
    return [lb for lb in labels if lb in keep]


def evaluate_mask(lit: Literal, table: pa.Table) -> pa.ChunkedArray:
    """Evaluate one literal over a table holding its column; returns a boolean mask."""
    return ds.dataset(table).to_table(columns={"m": literal_expression(lit)})["m"]
