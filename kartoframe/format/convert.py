"""pandas <-> Arrow conversion, in one place.

Write side: :func:`frame_to_table` validates a DataFrame and converts it with the types
kartoframe stores (strings as ``string``, timestamps checked for µs precision).
Read side: :func:`table_to_frame` converts a scan result to pandas with the dataset's
pandas metadata, so extension dtypes (``Int64``, ``boolean``, ``string``), pandas 3's
``str`` dtype, timestamp units and time zones come back as written.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from kartoframe.errors import InvalidInputError, InvalidTypeError, SchemaError
from kartoframe.format.schema import PANDAS_KEY, pandas_metadata

__all__ = [
    "column_records",
    "declares_missing_values",
    "frame_to_table",
    "pandas_read_schema",
    "records_to_frame",
    "storage_table",
    "storage_type",
    "table_to_frame",
]


def frame_to_table(df: object, *, what: str = "DataFrame") -> pa.Table:
    """Validate a DataFrame and convert it to Arrow (index dropped).

    Raises
    ------
    InvalidTypeError
        Not a DataFrame, or non-string column names.
    InvalidInputError
        Duplicate column names.
    SchemaError
        A column cannot be converted to Arrow.
    """
    if not isinstance(df, pd.DataFrame):
        raise InvalidTypeError(f"Expected a pandas.DataFrame for {what}, got {type(df).__name__}.")
    bad = [c for c in df.columns if not isinstance(c, str)]
    if bad:
        raise InvalidTypeError(f"Column names must be strings; got {bad!r} in {what}.")
    if df.columns.has_duplicates:
        dups = sorted({c for c in df.columns if list(df.columns).count(c) > 1})
        raise InvalidInputError(f"Duplicate column names in {what}: {dups}.")
    try:
        return pa.Table.from_pandas(df, preserve_index=False)
    except (pa.ArrowException, ValueError, TypeError) as e:
        raise SchemaError(f"Cannot convert {what} to Arrow: {e}") from e


def storage_type(t: pa.DataType) -> pa.DataType:
    """The type a column of type ``t`` is written with (see :func:`storage_table`)."""
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return pa.binary()
    if pa.types.is_dictionary(t):
        return pa.dictionary(t.index_type, storage_type(t.value_type), t.ordered)
    if pa.types.is_timestamp(t) and t.unit == "ns":
        return pa.timestamp("us", tz=t.tz)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(storage_type(t.value_type))
    return t


def storage_table(table: pa.Table) -> pa.Table:
    """Cast a table to the types written into data files.

    ``large_string`` becomes ``string`` (readable by old pyarrow), nanosecond
    timestamps become microseconds — refused if that would lose precision.

    Raises
    ------
    SchemaError
        A nanosecond timestamp column holds values that are not whole microseconds.
    """
    fields = []
    changed = False
    for f in table.schema:
        nt = storage_type(f.type)
        changed |= nt != f.type
        fields.append(pa.field(f.name, nt, f.nullable))
    if not changed:
        return table
    schema = pa.schema(fields, metadata=table.schema.metadata)
    cols = []
    for f, col in zip(schema, table.columns):
        if f.type == col.type:
            cols.append(col)
            continue
        try:
            cols.append(col.cast(f.type, safe=True))
        except pa.ArrowInvalid as e:
            if pa.types.is_timestamp(f.type):
                raise SchemaError(
                    f"Column {f.name!r} has nanosecond timestamps that are not whole "
                    "microseconds; kartoframe stores µs (as Spark and the Kartothek "
                    "type system do). Round them first, e.g. `s.dt.floor('us')`."
                ) from e
            cols.append(col)  # e.g. a string column over 2 GiB stays large_string
            fields[len(cols) - 1] = pa.field(f.name, col.type)
    return pa.Table.from_arrays(cols, schema=pa.schema(fields, metadata=table.schema.metadata))


def _restore_units(
    df: pd.DataFrame, records: Mapping[str, dict[str, Any]], converted: pa.Schema
) -> pd.DataFrame:
    """``df``'s datetime columns in the units their records name (a frame written with
    pandas' nanoseconds gets them back). ``converted``, the schema of the table ``df``
    was converted from, spares the look at a column Arrow already gave that unit (Arrow
    converts timestamps in their own unit): the conversion of a 12,500-row, 10-column
    dask partition took 300 µs with that look at its timestamp column, 271 µs without.
    """
    for name, rec in records.items():
        numpy_type = rec.get("numpy_type")
        if not isinstance(numpy_type, str) or not numpy_type.startswith("datetime64["):
            continue
        if numpy_type == "datetime64[us]" or name not in df.columns:
            continue
        unit = numpy_type[len("datetime64[") : -1].split(",")[0]
        i = converted.get_field_index(name)
        if i >= 0:
            t = converted.field(i).type
            if pa.types.is_timestamp(t) and t.unit == unit:
                continue
        col = df[name]
        dtype = col.dtype
        if isinstance(dtype, pd.DatetimeTZDtype):
            if dtype.unit != unit:
                df[name] = col.dt.as_unit(unit)
        elif (
            isinstance(dtype, np.dtype) and dtype.kind == "M" and np.datetime_data(dtype)[0] != unit
        ):
            df[name] = col.dt.as_unit(unit)
    return df


_NULLABLE_INTEGERS = {
    pa.int8(): "Int8",
    pa.int16(): "Int16",
    pa.int32(): "Int32",
    pa.int64(): "Int64",
    pa.uint8(): "UInt8",
    pa.uint16(): "UInt16",
    pa.uint32(): "UInt32",
    pa.uint64(): "UInt64",
}


def declares_missing_values(numpy_type: object) -> bool:
    """Whether a pandas-metadata ``numpy_type`` names a dtype with a missing value.

    pandas extension dtypes are capitalised (``Int64``, ``UInt8``, ``Float64``), pyarrow
    backed ones end in ``[pyarrow]``; numpy's (``int64``) are neither.
    """
    return isinstance(numpy_type, str) and (
        numpy_type[:1].isupper() or numpy_type.endswith("[pyarrow]")
    )


def _nullable_integer_records(
    table: pa.Table, records: dict[str, dict[str, Any]], nullable_integers: Collection[str]
) -> dict[str, dict[str, Any]]:
    """Pandas metadata records that read integer columns as pandas nullable integers
    (``Int64``), never as ``float64`` (which changes values above 2**53).

    Columns in ``nullable_integers`` (decided for the whole read by the plan, see
    :mod:`kartoframe.plan.integers`) are converted with or without nulls; other integer
    columns holding nulls too (cost: one ``null_count`` per integer column), so a frame
    never gets floats even where the plan's information was wrong. Columns whose records
    already name a dtype with a missing value (``Int64``, ``int64[pyarrow]``) keep it.
    """
    out: dict[str, dict[str, Any]] = {}
    for field, column in zip(table.schema, table.columns):
        nullable = _NULLABLE_INTEGERS.get(field.type)
        if nullable is None or (field.name not in nullable_integers and column.null_count == 0):
            continue
        rec = records.get(field.name)
        numpy_type = rec.get("numpy_type") if rec is not None else None
        if declares_missing_values(numpy_type):
            continue
        base = rec or {
            "name": field.name,
            "field_name": field.name,
            "pandas_type": str(field.type),
            "metadata": None,
        }
        out[field.name] = {**base, "numpy_type": nullable}
    return out


@functools.lru_cache(maxsize=256)
def pandas_read_schema(schema: pa.Schema, categoricals: tuple[str, ...] = ()) -> pa.Schema:
    """The schema to scan with when the result goes to pandas.

    Timestamps are stored in µs; a frame written with another unit (pandas' default
    nanoseconds) gets it back. Casting inside the multi-threaded scan is cheaper than a
    pandas ``as_unit`` pass over the finished frame.

    String and binary columns in ``categoricals`` are scanned as dictionaries: a file
    that stores the column dictionary-encoded (a pandas ``Categorical`` written by
    plateau or kartoframe) keeps its dictionary, so the declared categories come back in
    their declared order, unused ones included (categories of other files follow).

    Other string columns are scanned as ``large_string``, the type pandas' Arrow-backed
    string dtype (pandas 3's default) holds: pandas would otherwise cast each one on the
    calling thread (offsets widened to 64 bits) when it converts the table. For pandas'
    ``object`` strings both types convert alike.
    """
    wanted = set(categoricals)
    fields = []
    for f in schema:
        if pa.types.is_string(f.type) or pa.types.is_binary(f.type):
            if f.name in wanted:
                f = pa.field(f.name, pa.dictionary(pa.int32(), f.type), f.nullable, f.metadata)
            elif pa.types.is_string(f.type):
                f = pa.field(f.name, pa.large_string(), f.nullable, f.metadata)
        fields.append(f)
    schema = pa.schema(fields, metadata=schema.metadata)
    meta = pandas_metadata(schema) or {}
    units: dict[str, str] = {}
    for rec in meta.get("columns", []):
        numpy_type = rec.get("numpy_type") if isinstance(rec, dict) else None
        if isinstance(numpy_type, str) and numpy_type.startswith("datetime64["):
            unit = numpy_type[len("datetime64[") : -1].split(",")[0]
            if unit in ("s", "ms", "ns"):
                units[rec.get("name")] = unit
    if not units:
        return schema
    fields = [
        pa.field(f.name, pa.timestamp(units[f.name], tz=f.type.tz), f.nullable, f.metadata)
        if f.name in units and pa.types.is_timestamp(f.type)
        else f
        for f in schema
    ]
    return pa.schema(fields, metadata=schema.metadata)


def table_to_frame(
    table: pa.Table,
    schema: pa.Schema,
    *,
    categoricals: Sequence[str] = (),
    dates_as_object: bool = True,
    nullable_integers: Collection[str] = (),
) -> pd.DataFrame:
    """Convert a scan result to pandas using the dataset's pandas metadata.

    Parameters
    ----------
    table
        The scan result (its columns are a projection of ``schema``).
    schema
        Dataset schema whose pandas metadata restores extension dtypes and units.
    categoricals
        Columns to return as ``pandas.Categorical``.
    dates_as_object
        ``date`` columns as ``datetime.date`` objects (else ``datetime64``).
    nullable_integers
        Integer columns returned as pandas nullable integers (``Int64``) even without
        nulls (a read's plan decides them for all its frames); other integer columns are
        nullable integers only where they hold nulls.
    """
    if table.num_columns == 0:
        return pd.DataFrame(index=pd.RangeIndex(table.num_rows))
    records = column_records(table, schema, nullable_integers=nullable_integers)
    return records_to_frame(
        table,
        pandas_metadata(schema) or {},
        records,
        categoricals=categoricals,
        dates_as_object=dates_as_object,
    )


def column_records(
    table: pa.Table, schema: pa.Schema, *, nullable_integers: Collection[str] = ()
) -> dict[str, dict[str, Any]]:
    """The pandas metadata records (by column name) that convert ``table``'s columns as
    :func:`table_to_frame` does: the dataset ``schema``'s, with integer columns as pandas
    nullable integers where ``nullable_integers`` names them or they hold nulls.
    """
    meta = pandas_metadata(schema) or {}
    records = {r["name"]: r for r in meta.get("columns", []) if isinstance(r, dict)}
    return {**records, **_nullable_integer_records(table, records, nullable_integers)}


def records_to_frame(
    table: pa.Table,
    meta: Mapping[str, Any],
    records: Mapping[str, dict[str, Any]],
    *,
    categoricals: Sequence[str] = (),
    dates_as_object: bool = True,
) -> pd.DataFrame:
    """Convert ``table`` to pandas in one pass with a column record each (see
    :func:`column_records`; columns of several datasets may be converted together) and
    the rest of the pandas metadata ``meta`` (the column index).
    """
    names = table.column_names
    sub = dict(meta)
    sub["columns"] = [records[n] for n in names if n in records]
    sub["index_columns"] = []
    table = table.replace_schema_metadata({PANDAS_KEY: json.dumps(sub).encode()})
    cats = [c for c in categoricals if c in names]
    for c in cats:
        col = table[c]
        if not pa.types.is_dictionary(col.type):
            idx = names.index(c)
            table = table.set_column(idx, c, pc.dictionary_encode(col))
    # one block a column lets single-chunk columns convert without a copy (a 25k-row
    # table: 0.21 ms against 0.46 ms); columns of many chunks are copied anyway, and into
    # pandas' consolidated blocks faster (5M rows in 200 chunks: 23 ms against 33 ms)
    split = all(col.num_chunks <= 1 for col in table.columns)
    df = table.to_pandas(date_as_object=dates_as_object, split_blocks=split, self_destruct=False)
    return _restore_units(df, records, table.schema)
