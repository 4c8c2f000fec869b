"""Typed values: partition-value rendering/parsing and literal normalisation.

All type rules for scalars live here (the reference implementations scattered them,
which is where their bool and timezone bugs came from):

* :func:`render_partition_value` turns a Python/numpy/pandas scalar into the string
  used in a ``col=value`` key component (``str()`` of the pandas scalar, as plateau does).
* :func:`parse_partition_value` turns such a string back into a Python value of the
  column's arrow type (``"False"`` -> ``False``; tz-aware timestamps keep their zone).
* :func:`normalize_literal` checks a predicate literal against a column type and returns
  a value pyarrow can compare with that column.
"""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from kartoframe.errors import CorruptMetadataError, InvalidPredicateError, InvalidTypeError

__all__ = [
    "is_null_value",
    "normalize_literal",
    "parse_partition_value",
    "render_partition_value",
]


def is_null_value(value: object) -> bool:
    """True for None, NaN, NaT and pandas.NA."""
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    if isinstance(value, float | np.floating):
        return bool(np.isnan(value))
    if isinstance(value, np.datetime64 | np.timedelta64):
        return bool(np.isnat(value))
    return False


def render_partition_value(value: object) -> str:
    """Render a partition value as plateau does (``str`` of the pandas scalar)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, dt.datetime):
        return str(pd.Timestamp(value))
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8")
    return str(value)


def parse_partition_value(text: str, arrow_type: pa.DataType, column: str = "") -> Any:
    """Parse a decoded key value into a Python value of ``arrow_type``.

    Raises
    ------
    CorruptMetadataError
        If the text is not a valid value of the type.
    """
    t = arrow_type
    try:
        if pa.types.is_dictionary(t):
            t = t.value_type
        if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t):
            return text
        if pa.types.is_integer(t):
            return int(text)
        if pa.types.is_floating(t):
            return float(text)
        if pa.types.is_boolean(t):
            low = text.lower()
            if low in ("true", "1"):
                return True
            if low in ("false", "0"):
                return False
            raise ValueError(f"not a boolean: {text!r}")
        if pa.types.is_date(t):
            return (
                dt.date.fromisoformat(text[:10]) if len(text) > 10 else dt.date.fromisoformat(text)
            )
        if pa.types.is_timestamp(t):
            ts = pd.Timestamp(text)
            if t.tz is not None:
                ts = ts.tz_localize("UTC") if ts.tzinfo is None else ts
                return ts.tz_convert(t.tz).to_pydatetime()
            if ts.tzinfo is not None:
                ts = ts.tz_convert("UTC").tz_localize(None)
            return ts.to_pydatetime()
        if pa.types.is_decimal(t):
            return decimal.Decimal(text)
        if pa.types.is_binary(t) or pa.types.is_large_binary(t):
            return text.encode("utf-8")
    except (ValueError, TypeError, decimal.InvalidOperation) as e:
        raise CorruptMetadataError(
            f"Partition value {text!r} of column {column!r} is not a valid {arrow_type}: {e}"
        ) from e
    raise CorruptMetadataError(f"Unsupported partition column type {arrow_type} for {column!r}.")


def _type_error(column: str, arrow_type: pa.DataType, value: object) -> InvalidTypeError:
    return InvalidTypeError(
        f"Unexpected type for predicate: column {column!r} has type {arrow_type} but the "
        f"predicate value {value!r} has type {type(value).__name__}."
    )


#: ``(bit width, signed) -> (lowest, highest)`` value of the Arrow integer types.
_INT_RANGES = {
    (bits, signed): (
        (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    )
    for bits in (8, 16, 32, 64)
    for signed in (True, False)
}


def _out_of_range(column: str, t: pa.DataType, value: int) -> InvalidPredicateError:
    """The error for an integer literal the column's type cannot hold (cause: Arrow's)."""
    err = InvalidPredicateError(
        f"Predicate value {value!r} on column {column!r} is out of range for its type {t} "
        f"({_INT_RANGES[t.bit_width, pa.types.is_signed_integer(t)][0]} .. "
        f"{_INT_RANGES[t.bit_width, pa.types.is_signed_integer(t)][1]})."
    )
    try:
        pa.scalar(value, type=t)
    except (OverflowError, pa.ArrowException) as e:
        err.__cause__ = e
    return err


def normalize_literal(column: str, arrow_type: pa.DataType, value: object) -> Any:
    """Check a non-null literal against a column type and normalise it.

    Returns a Python scalar (or :class:`pyarrow.Scalar`) directly comparable with the
    column in pyarrow compute.

    Raises
    ------
    InvalidTypeError
        If the value's kind does not match the column (e.g. a string for an int
        column, a ``datetime`` for a ``date`` column, or a naive timestamp for a
        tz-aware column).
    InvalidPredicateError
        An integer the column's type cannot hold (``2**63`` for an ``int64`` column).
    """
    t = arrow_type
    if pa.types.is_dictionary(t):
        t = t.value_type
    v = (
        value.item()
        if isinstance(value, np.generic) and not isinstance(value, np.datetime64)
        else value
    )
    if pa.types.is_null(t):
        return v
    if pa.types.is_boolean(t):
        if isinstance(v, bool):
            return v
        raise _type_error(column, arrow_type, value)
    if pa.types.is_integer(t):
        if isinstance(v, int) and not isinstance(v, bool):
            lo, hi = _INT_RANGES[t.bit_width, pa.types.is_signed_integer(t)]
            if not lo <= v <= hi:
                raise _out_of_range(column, t, v)
            return v
        raise _type_error(column, arrow_type, value)
    if pa.types.is_floating(t):
        if isinstance(v, int | float) and not isinstance(v, bool):
            return float(v)
        raise _type_error(column, arrow_type, value)
    if pa.types.is_decimal(t):
        if isinstance(v, decimal.Decimal | int) and not isinstance(v, bool):
            return decimal.Decimal(v)
        raise _type_error(column, arrow_type, value)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        if isinstance(v, str):
            return v
        raise _type_error(column, arrow_type, value)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        if isinstance(v, bytes):
            return v
        raise _type_error(column, arrow_type, value)
    if pa.types.is_date(t):
        if isinstance(v, dt.date) and not isinstance(v, dt.datetime):
            return v
        raise _type_error(column, arrow_type, value)
    if pa.types.is_timestamp(t):
        if isinstance(v, dt.datetime | np.datetime64):
            ts = pd.Timestamp(v)
        else:
            raise _type_error(column, arrow_type, value)
        if (ts.tzinfo is None) != (t.tz is None):
            raise InvalidTypeError(
                f"Predicate on column {column!r} ({arrow_type}) compares a "
                f"{'naive' if ts.tzinfo is None else 'tz-aware'} timestamp {value!r}; "
                f"use a {'tz-aware' if t.tz else 'naive'} timestamp."
            )
        if t.tz is not None:
            ts = ts.tz_convert(t.tz)
        return pa.scalar(ts, type=pa.timestamp("ns", tz=t.tz))
    raise InvalidTypeError(
        f"Predicates on column {column!r} of type {arrow_type} are not supported."
    )
