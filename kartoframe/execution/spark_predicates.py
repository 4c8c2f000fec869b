"""Bound kartoframe predicates as Spark columns, with kartoframe's null semantics."""

from __future__ import annotations

import datetime as dt
import decimal
from typing import TYPE_CHECKING, Any

import pandas as pd
import pyarrow as pa

from kartoframe.errors import InvalidInputError
from kartoframe.execution.spark_engine import _F, column, spark_type
from kartoframe.format.spark_types import (
    to_spark_type,
)
from kartoframe.plan.predicates import COMPARISONS, Predicate
from kartoframe.plan.predicates import Literal as PredLiteral

if TYPE_CHECKING:
    from pyspark.sql import Column


def _value_type(t: pa.DataType) -> pa.DataType:
    return t.value_type if pa.types.is_dictionary(t) else t


def _timestamp_ns(value: Any) -> int:
    """Nanoseconds since the epoch (UTC for tz-aware values, wall time for naive ones)."""
    if isinstance(value, pa.TimestampScalar):
        factor = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}[value.type.unit]
        return int(value.value) * factor
    ts = pd.Timestamp(value)
    if ts.tzinfo is not None:
        ts = ts.tz_convert("UTC")
    return int(ts.as_unit("ns").value)


def _timestamp_text(us: int, aware: bool) -> str:
    text = (dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=us)).isoformat(sep=" ")
    return text + "+00:00" if aware else text


def _timestamp_lit(us: int, t: pa.DataType) -> Column:
    aware = t.tz is not None
    return _F().lit(_timestamp_text(us, aware)).cast("timestamp" if aware else "timestamp_ntz")


def spark_literal(value: Any, t: pa.DataType) -> Column:
    """A Spark literal of a (normalised) value of a column of Arrow type ``t``."""
    F = _F()
    t = _value_type(t)
    spark_t = spark_type(to_spark_type(t))
    if value is None:
        return F.lit(None).cast(spark_t)
    if pa.types.is_timestamp(t):
        return _timestamp_lit(_timestamp_ns(value) // 1000, t)
    if isinstance(value, pa.Scalar):
        value = value.as_py()
    if isinstance(value, bool | str | float | dt.date | decimal.Decimal):
        return F.lit(value)
    if isinstance(value, bytes):
        return F.lit(bytearray(value))
    if isinstance(value, int):
        if -(2**63) <= value < 2**63:
            return F.lit(value)
        return F.lit(str(value)).cast("decimal(20,0)")
    return F.lit(value).cast(spark_t)


def typed_literal(value: Any, t: pa.DataType) -> Column:
    """A literal cast to exactly the Spark type of ``t`` (partition values)."""
    return spark_literal(value, t).cast(spark_type(to_spark_type(_value_type(t))))


def _timestamp_in_values(lit: PredLiteral) -> list[Any]:
    # pyarrow's ``isin`` casts the value set to the column unit with truncation
    t = _value_type(lit.arrow_type)
    ns = pa.array([_timestamp_ns(v) for v in lit.value], type=pa.timestamp("ns"))
    return [int(x) for x in ns.cast(pa.timestamp(t.unit), safe=False).cast(pa.int64())]


def _literal_column(lit: PredLiteral) -> Column:
    """One bound literal as a Spark column, true exactly where pyarrow's is."""
    F = _F()
    c = column(lit.column)
    t = _value_type(lit.arrow_type)
    is_float = pa.types.is_floating(t)
    is_null = (c.isNull() | F.isnan(c)) if is_float else c.isNull()
    op, v = lit.op, lit.value
    if op in ("in", "not in"):
        if pa.types.is_timestamp(t) and v:
            per_unit = {"s": 10**6, "ms": 10**3, "us": 1, "ns": 0}[t.unit]
            if per_unit == 0:
                raise InvalidInputError("Nanosecond timestamp columns cannot be read by Spark.")
            items = [_timestamp_lit(x * per_unit, t) for x in _timestamp_in_values(lit)]
        else:
            items = [spark_literal(x, t) for x in v]
        expr = c.isin(*items) if items else F.lit(False)
        if op == "in":
            return (expr | is_null) if lit.has_null else (expr & ~is_null)
        return ~expr & ~is_null
    if v is None:
        return is_null if op == "==" else ~is_null
    if pa.types.is_timestamp(t):
        ns = _timestamp_ns(v)
        us, rem = divmod(ns, 1000)
        s = _timestamp_lit(us, t)
        if rem:
            # the column holds whole microseconds: compare with the floor, exactly
            if op == "==":
                return F.lit(False)
            if op in ("!=", "is distinct from"):
                return ~c.isNull() if op == "!=" else F.lit(True)
            op = {"<": "<=", "<=": "<=", ">": ">", ">=": ">"}[op]
    else:
        s = spark_literal(v, t)
    compare = COMPARISONS.get(op)
    if compare is None:
        # is distinct from (non-null value)
        return (c != s) | is_null
    if is_float and op in (">", ">="):
        # Spark orders NaN above every number; pyarrow compares it as false
        return compare(c, s) & ~F.isnan(c)
    return compare(c, s)


def predicate_to_column(pred: Predicate | None) -> Column | None:
    """The whole DNF as one Spark column (None for no filter).

    Rows where the column is true are exactly the rows pyarrow's
    :func:`~kartoframe.plan.predicates.to_expression` keeps: nulls (and NaN, for
    ``== None``) follow kartoframe's documented semantics.
    """
    if pred is None:
        return None
    out: Column | None = None
    for conj in pred.conjunctions:
        e: Column | None = None
        for lit in conj:
            lc = _literal_column(lit)
            e = lc if e is None else (e & lc)
        assert e is not None
        out = e if out is None else (out | e)
    return out


# -- reads -----------------------------------------------------------------------------
