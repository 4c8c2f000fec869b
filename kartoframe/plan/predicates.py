"""Predicates in disjunctive normal form (DNF), bound to a schema.

At the API boundary predicates are the familiar nested lists
``[[(col, op, value), ...], ...]`` (outer list OR, inner list AND). :func:`bind`
validates them once against the dataset schema and returns a :class:`Predicate` whose
literals carry the column type and a normalised value. Every analysis is a function of
that value: :func:`to_expression` (a pyarrow expression used for row filtering, row-group
statistics and partition/index evaluation), :func:`can_match_null`, :func:`columns`.

Null semantics (documented in ``docs/predicates.md``):

* ``(c, "==", None)`` selects nulls (NaN counts as null), ``(c, "!=", None)`` non-nulls.
* ``==, !=, <, <=, >, >=`` with a non-null value never select nulls (SQL semantics;
  plateau keeps nulls for ``!=`` with a deprecation warning).
* ``in`` selects nulls only if the list contains a null; ``not in`` never selects nulls.
* ``is distinct from v`` selects everything not equal to ``v``, nulls included.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kartoframe.errors import ColumnNotFoundError, InvalidPredicateError
from kartoframe.format.value_ranges import ValueRange
from kartoframe.format.values import is_null_value, normalize_literal

__all__ = [
    "COMPARISONS",
    "OPERATORS",
    "Literal",
    "Predicate",
    "bind",
    "can_match_null",
    "conjunction_expression",
    "covering_ranges",
    "literal_range",
    "literal_expression",
    "predicate_columns",
    "to_expression",
]

OPERATORS = ("==", "!=", "<", "<=", ">", ">=", "in", "not in", "is distinct from")
_NULL_OK = ("==", "!=", "is distinct from")

#: The plain comparisons as functions of (column, value): they build pyarrow expressions
#: and Spark columns alike (``is distinct from`` a value is ``!=`` or null: see
#: :func:`literal_expression`).
COMPARISONS: dict[str, Callable[[Any, Any], Any]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


@dataclasses.dataclass(frozen=True, slots=True)
class Literal:
    """One bound comparison ``column op value``.

    ``value`` is normalised to the column type; ``None`` stands for null; for ``in`` and
    ``not in`` it is a tuple of non-null values and ``has_null`` tells whether the list
    contained a null.
    """

    column: str
    op: str
    value: Any
    arrow_type: pa.DataType
    has_null: bool = False

    def __repr__(self) -> str:
        return f"({self.column!r}, {self.op!r}, {self.value!r})"


@dataclasses.dataclass(frozen=True, slots=True)
class Predicate:
    """A bound DNF: OR over conjunctions, AND inside."""

    conjunctions: tuple[tuple[Literal, ...], ...]

    @property
    def columns(self) -> set[str]:
        """All referenced columns."""
        return {lit.column for conj in self.conjunctions for lit in conj}


def predicate_columns(predicates: object) -> set[str]:
    """The columns a DNF (or a bound :class:`Predicate`) names; None: no column.

    Raises
    ------
    InvalidPredicateError
        ``predicates`` is not a list of lists of ``(column, op, value)`` tuples.
    """
    if predicates is None:
        return set()
    if isinstance(predicates, Predicate):
        return predicates.columns
    return {lit[0] for conj in _check_shape(predicates) for lit in conj}


def _check_shape(predicates: object) -> list[list[tuple[str, str, Any]]]:
    if not isinstance(predicates, list | tuple):
        raise InvalidPredicateError(
            f"predicates must be a list of lists of (column, op, value) tuples, got "
            f"{type(predicates).__name__}."
        )
    if len(predicates) == 0:
        raise InvalidPredicateError("Empty predicates; use None for no filter.")
    out: list[list[tuple[str, str, Any]]] = []
    for conj in predicates:
        if not isinstance(conj, list | tuple):
            raise InvalidPredicateError(
                f"Each conjunction must be a list of (column, op, value) tuples, got {conj!r}."
            )
        if len(conj) == 0:
            raise InvalidPredicateError("Empty conjunction in predicates.")
        lits = []
        for lit in conj:
            if not isinstance(lit, list | tuple) or len(lit) != 3:
                raise InvalidPredicateError(
                    f"Each literal must be a (column, op, value) 3-tuple, got {lit!r}."
                )
            col, op, value = lit
            if not isinstance(col, str):
                raise InvalidPredicateError(f"Column name must be a string, got {col!r}.")
            if op not in OPERATORS:
                raise InvalidPredicateError(
                    f"Unknown operator {op!r} in {lit!r}; use one of {', '.join(OPERATORS)}."
                )
            lits.append((col, op, value))
        out.append(lits)
    return out


def _bind_literal(col: str, op: str, value: Any, t: pa.DataType) -> Literal:
    if op in ("in", "not in"):
        if isinstance(value, str | bytes) or not isinstance(
            value, list | tuple | set | frozenset | np.ndarray | pa.Array
        ):
            raise InvalidPredicateError(
                f"Operator {op!r} on column {col!r} needs a list of values, got {value!r}."
            )
        items = value.to_pylist() if isinstance(value, pa.Array) else list(value)
        has_null = any(is_null_value(v) for v in items)
        vals = tuple(normalize_literal(col, t, v) for v in items if not is_null_value(v))
        return Literal(col, op, vals, t, has_null)
    if isinstance(value, list | tuple | set | frozenset | np.ndarray):
        raise InvalidPredicateError(
            f"Operator {op!r} on column {col!r} needs a scalar, got {value!r}."
        )
    if is_null_value(value):
        if op not in _NULL_OK:
            raise InvalidPredicateError(
                f"Cannot compare column {col!r} with a null value using {op!r}; only "
                "'==', '!=' and 'is distinct from' accept null."
            )
        return Literal(col, op, None, t)
    if isinstance(value, bytes) and b"\x00" in value:
        raise InvalidPredicateError(f"Bytes values containing NUL are not supported ({col!r}).")
    return Literal(col, op, normalize_literal(col, t, value), t)


def bind(predicates: object, schema: pa.Schema) -> Predicate | None:
    """Validate DNF predicates against a schema.

    Parameters
    ----------
    predicates
        ``None`` or ``[[(column, op, value), ...], ...]``.
    schema
        The dataset schema (partition columns included).

    Returns
    -------
    Predicate or None

    Raises
    ------
    InvalidPredicateError
        Malformed predicates, unknown operators, nulls with ordering operators.
    ColumnNotFoundError
        A referenced column is not in the schema.
    InvalidTypeError
        A literal value does not match the column type.
    """
    if predicates is None:
        return None
    conjs = _check_shape(predicates)
    names = set(schema.names)
    bound = []
    for conj in conjs:
        lits = []
        for col, op, value in conj:
            if col not in names:
                raise ColumnNotFoundError(
                    f"Predicate column {col!r} is not in the dataset (columns: {sorted(names)})."
                )
            lits.append(_bind_literal(col, op, value, schema.field(col).type))
        bound.append(tuple(lits))
    return Predicate(tuple(bound))


def can_match_null(lit: Literal) -> bool:
    """Whether a literal can be true for a null value of its column."""
    if lit.op == "==":
        return lit.value is None
    if lit.op == "is distinct from":
        return lit.value is not None
    if lit.op == "in":
        return lit.has_null
    return False


def _scalar(lit: Literal, value: Any) -> Any:
    if isinstance(value, pa.Scalar):
        return value
    t = lit.arrow_type
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_null(t):
        return pa.scalar(value)
    return pa.scalar(value, type=t)


def _value_set(lit: Literal) -> pa.Array:
    t = lit.arrow_type
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_timestamp(t):
        ns = pa.array(
            [v.as_py() if isinstance(v, pa.Scalar) else v for v in lit.value],
            type=pa.timestamp("ns", tz=t.tz),
        )
        out = ns.cast(t, safe=False)
        # a literal with digits below the column's unit equals no stored value
        return out.filter(pc.equal(out.cast(ns.type), ns))
    return pa.array(list(lit.value), type=None if pa.types.is_null(t) else t)


def literal_expression(lit: Literal) -> pc.Expression:
    """The pyarrow expression of a literal, with kartoframe's null semantics."""
    f = pc.field(lit.column)
    t = lit.arrow_type.value_type if pa.types.is_dictionary(lit.arrow_type) else lit.arrow_type
    # not ``is_null(nan_is_null=True)``: pyarrow's scanner simplifies that to false for
    # row groups whose statistics say null_count == 0, dropping their NaN rows
    is_null = (f.is_null() | pc.is_nan(f)) if pa.types.is_floating(t) else f.is_null()
    op, v = lit.op, lit.value
    if op in ("in", "not in"):
        if not v:
            expr = pc.scalar(False)
        elif pa.types.is_floating(t):
            # pyarrow's scanner mis-simplifies ``is_in`` on float columns against row-group
            # statistics (a file holding only 0.0 is skipped for ``is_in([0.0])``): use
            # equalities, which it simplifies correctly
            expr = f == _scalar(lit, v[0])
            for x in v[1:]:
                expr = expr | (f == _scalar(lit, x))
        else:
            expr = f.isin(_value_set(lit))
        if op == "in":
            return (expr | is_null) if lit.has_null else (expr & ~is_null)
        return ~expr & ~is_null
    if v is None:
        return is_null if op == "==" else ~is_null
    s = _scalar(lit, v)
    compare = COMPARISONS.get(op)
    if compare is not None:
        return compare(f, s)
    # is distinct from (non-null value)
    return (f != s) | is_null


def conjunction_expression(
    conj: Sequence[Literal], columns: set[str] | None = None
) -> pc.Expression | None:
    """AND of the literals (restricted to ``columns`` if given); None if none apply."""
    exprs = [literal_expression(lit) for lit in conj if columns is None or lit.column in columns]
    if not exprs:
        return None
    out = exprs[0]
    for e in exprs[1:]:
        out = out & e
    return out


def to_expression(pred: Predicate | None) -> pc.Expression | None:
    """The whole DNF as one pyarrow expression (None for no filter)."""
    if pred is None:
        return None
    out: pc.Expression | None = None
    for conj in pred.conjunctions:
        e = conjunction_expression(conj)
        assert e is not None
        out = e if out is None else (out | e)
    return out


def literal_range(lit: Literal) -> ValueRange | None:
    """The :class:`~kartoframe.format.value_ranges.ValueRange` a literal asks of every row,
    if footer statistics can prove it (integers and dates: comparisons and a one-value
    ``in``; strings: equality only); None otherwise.
    """
    t = lit.arrow_type.value_type if pa.types.is_dictionary(lit.arrow_type) else lit.arrow_type
    op, v = lit.op, lit.value
    if op == "in" and not lit.has_null and isinstance(v, tuple) and len(v) == 1:
        op, v = "==", v[0]
    if v is None or op not in COMPARISONS or op == "!=":
        return None
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        ok = isinstance(v, str) and op == "=="
        return ValueRange(lit.column, v, v, exact=True) if ok else None
    if pa.types.is_integer(t):
        ok = isinstance(v, int) and not isinstance(v, bool)
    elif pa.types.is_date(t):
        ok = isinstance(v, dt.date) and not isinstance(v, dt.datetime)
    else:
        return None
    if not ok:
        return None
    if op == "==":
        return ValueRange(lit.column, v, v)
    if op in ("<", "<="):
        return ValueRange(lit.column, high=v, high_inclusive=op == "<=")
    return ValueRange(lit.column, low=v, low_inclusive=op == ">=")


def covering_ranges(
    pred: Predicate | None, extra: Sequence[Literal] = ()
) -> tuple[tuple[ValueRange, ...], ...]:
    """The conjunctions of ``pred`` (each with the ``extra`` literals ANDed) that footer
    statistics could prove for every row of a file, as ranges; those with a literal no
    range expresses are left out (empty: nothing can be proven).
    """
    if pred is None and not extra:
        return ()
    out = []
    for conj in pred.conjunctions if pred is not None else ((),):
        ranges = [r for lit in (*conj, *extra) if (r := literal_range(lit)) is not None]
        if len(ranges) == len(conj) + len(extra):
            out.append(tuple(ranges))
    return tuple(out)
