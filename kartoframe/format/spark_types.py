"""Arrow <-> Spark type mapping, in one place (pure: no pyspark import, no I/O).

Spark types are represented by their JSON form (what ``DataType.jsonValue()`` returns
and ``StructType.fromJson`` accepts): ``"long"``, ``"decimal(20,0)"``,
``{"type": "array", "elementType": ..., "containsNull": true}``, ... The Spark engine
turns them into pyspark objects; everything else here is pyarrow only.

Mapping (kartoframe's normalised Arrow type -> Spark):

=======================================  ==========================================
Arrow                                     Spark
=======================================  ==========================================
``int8/16/32/64``                         ``byte/short/integer/long``
``uint8/16/32``                           ``short/integer/long``
``uint64``                                ``decimal(20,0)`` (what Spark's Parquet
                                          reader uses for UINT_64)
``float16/32``, ``float64``               ``float``, ``double``
``string``/``large_string``               ``string``
``binary``/``large_binary``               ``binary``
``date32/64``                             ``date``
``timestamp[unit]`` (naive)               ``timestamp_ntz`` (microseconds)
``timestamp[unit, tz]``                   ``timestamp`` (an instant, microseconds)
``decimal128(p, s)``                      ``decimal(p,s)``
``list``, ``struct``, ``map``             ``array``, ``struct``, ``map``
``null``                                  ``void``
=======================================  ==========================================

Spark timestamps have microsecond precision; nanosecond values that are not whole
microseconds are refused (kartoframe's dataset schemas hold microseconds anyway).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from kartoframe.errors import InvalidTypeError, SchemaError

__all__ = [
    "SPARK_TZ",
    "from_spark_schema",
    "from_spark_table",
    "from_spark_type",
    "native_parquet_readable",
    "partition_text_castable",
    "spark_arrow_schema",
    "spark_arrow_type",
    "spark_unescape",
    "to_spark_schema",
    "to_spark_table",
    "to_spark_type",
]

#: Time zone kartoframe gives Spark ``timestamp`` (instant) columns it stores.
SPARK_TZ = "UTC"

_DECIMAL_RE = re.compile(r"decimal\(\s*(\d+)\s*,\s*(-?\d+)\s*\)")
_CHAR_RE = re.compile(r"(var)?char\(\s*\d+\s*\)")


def to_spark_type(t: pa.DataType, column: str = "") -> Any:
    """The Spark type (JSON form) holding values of an Arrow type.

    Raises
    ------
    InvalidTypeError
        For Arrow types Spark cannot represent (time of day, durations, unions, ...).
    """
    if pa.types.is_dictionary(t):
        return to_spark_type(t.value_type, column)
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_signed_integer(t):
        return {8: "byte", 16: "short", 32: "integer", 64: "long"}[t.bit_width]
    if pa.types.is_unsigned_integer(t):
        return {8: "short", 16: "integer", 32: "long", 64: "decimal(20,0)"}[t.bit_width]
    if pa.types.is_floating(t):
        return "double" if t.bit_width == 64 else "float"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if (
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_binary_view(t)
        or pa.types.is_fixed_size_binary(t)
    ):
        return "binary"
    if pa.types.is_date(t):
        return "date"
    if pa.types.is_timestamp(t):
        return "timestamp" if t.tz is not None else "timestamp_ntz"
    if pa.types.is_decimal(t):
        if t.precision > 38:
            raise InvalidTypeError(
                f"Column {column!r} has type {t}; Spark decimals hold at most 38 digits."
            )
        return f"decimal({t.precision},{t.scale})"
    if pa.types.is_null(t):
        return "void"
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return {
            "type": "array",
            "elementType": to_spark_type(t.value_type, column),
            "containsNull": True,
        }
    if pa.types.is_map(t):
        return {
            "type": "map",
            "keyType": to_spark_type(t.key_type, column),
            "valueType": to_spark_type(t.item_type, column),
            "valueContainsNull": True,
        }
    if pa.types.is_struct(t):
        return {
            "type": "struct",
            "fields": [
                _field_json(t.field(i).name, to_spark_type(t.field(i).type, column))
                for i in range(t.num_fields)
            ],
        }
    raise InvalidTypeError(f"Column {column!r} has type {t}, which Spark cannot represent.")


def _field_json(name: str, spark_type: Any) -> dict[str, Any]:
    return {"name": name, "type": spark_type, "nullable": True, "metadata": {}}


def to_spark_schema(
    schema: pa.Schema,
    columns: Sequence[str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A Spark struct type (JSON form) for (a projection of) an Arrow schema.

    ``overrides`` replaces the Spark type of some columns.
    """
    names = list(columns) if columns is not None else schema.names
    over = overrides or {}
    return {
        "type": "struct",
        "fields": [
            _field_json(n, over[n] if n in over else to_spark_type(schema.field(n).type, n))
            for n in names
        ],
    }


def from_spark_type(spark_type: Any, column: str = "") -> pa.DataType:
    """The Arrow type of a Spark type (JSON form), as Spark's Arrow batches carry it.

    ``timestamp`` (an instant) becomes ``timestamp[us, tz=UTC]``.

    Raises
    ------
    InvalidTypeError
        For Spark types kartoframe cannot store (intervals, variant, ...).
    """
    if isinstance(spark_type, str):
        name = spark_type.strip().lower()
        simple: dict[str, pa.DataType] = {
            "boolean": pa.bool_(),
            "byte": pa.int8(),
            "short": pa.int16(),
            "integer": pa.int32(),
            "long": pa.int64(),
            "float": pa.float32(),
            "double": pa.float64(),
            "string": pa.string(),
            "binary": pa.binary(),
            "date": pa.date32(),
            "timestamp": pa.timestamp("us", tz=SPARK_TZ),
            "timestamp_ntz": pa.timestamp("us"),
            "void": pa.null(),
            "null": pa.null(),
        }
        if name in simple:
            return simple[name]
        if name.startswith("string"):  # collated strings
            return pa.string()
        if _CHAR_RE.fullmatch(name):
            return pa.string()
        m = _DECIMAL_RE.fullmatch(name)
        if m:
            return pa.decimal128(int(m.group(1)), int(m.group(2)))
        if name == "decimal":
            return pa.decimal128(10, 0)
    elif isinstance(spark_type, Mapping):
        kind = spark_type.get("type")
        if kind == "array":
            return pa.list_(from_spark_type(spark_type["elementType"], column))
        if kind == "map":
            return pa.map_(
                from_spark_type(spark_type["keyType"], column),
                from_spark_type(spark_type["valueType"], column),
            )
        if kind == "struct":
            return pa.struct(
                [
                    pa.field(f["name"], from_spark_type(f["type"], column))
                    for f in spark_type["fields"]
                ]
            )
        if kind == "udt" and "sqlType" in spark_type:
            return from_spark_type(spark_type["sqlType"], column)
    raise InvalidTypeError(
        f"Column {column!r} has Spark type {spark_type!r}, which kartoframe cannot store."
    )


def from_spark_schema(struct: Mapping[str, Any]) -> pa.Schema:
    """The Arrow schema of a Spark struct type (JSON form, ``df.schema.jsonValue()``).

    Raises
    ------
    InvalidTypeError
        Unsupported column types, or non-unique column names.
    """
    fields = [pa.field(f["name"], from_spark_type(f["type"], f["name"])) for f in struct["fields"]]
    names = [f.name for f in fields]
    dups = sorted({n for n in names if names.count(n) > 1})
    if dups:
        raise InvalidTypeError(f"Duplicate column names in the Spark DataFrame: {dups}.")
    return pa.schema(fields)


def spark_arrow_type(t: pa.DataType) -> pa.DataType:
    """The Arrow type Spark expects in ``mapInArrow`` output for a column of type ``t``."""
    return from_spark_type(to_spark_type(t))


def spark_arrow_schema(schema: pa.Schema, columns: Sequence[str] | None = None) -> pa.Schema:
    """Arrow schema of Spark's representation of (a projection of) a dataset schema."""
    names = list(columns) if columns is not None else schema.names
    return pa.schema([pa.field(n, spark_arrow_type(schema.field(n).type)) for n in names])


def _cast(col: pa.ChunkedArray, target: pa.DataType, name: str) -> Any:
    src = col.type
    if src == target:
        return col
    if pa.types.is_dictionary(src):
        col = col.cast(src.value_type)
        src = col.type
        if src == target:
            return col
    if pa.types.is_null(src):
        return pa.nulls(len(col), type=target)
    try:
        return col.cast(target, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise SchemaError(
            f"Column {name!r} of type {src} cannot be given to Spark as {target}: {e}"
        ) from e


def to_spark_table(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Cast a scan result to the Arrow types Spark expects (``schema`` from
    :func:`spark_arrow_schema`); columns are taken by name in ``schema`` order.

    Raises
    ------
    SchemaError
        A value cannot be represented (e.g. nanosecond timestamps that are not whole
        microseconds: Spark holds microseconds).
    """
    cols = [_cast(table.column(f.name), f.type, f.name) for f in schema]
    return pa.Table.from_arrays(cols, schema=schema)


def from_spark_table(
    table: pa.Table, timezones: Mapping[str, str | None] | None = None
) -> pa.Table:
    """Normalise an Arrow table produced by Spark before kartoframe stores it.

    Spark labels instants with the session time zone; they are stored as UTC, or in the
    zone of the dataset's column given in ``timezones`` (same instants, so updates of
    datasets written by pandas keep their schema).
    """
    zones = timezones or {}
    fields = []
    cols = []
    changed = False
    for f, col in zip(table.schema, table.columns):
        t = f.type
        if pa.types.is_timestamp(t) and t.tz is not None:
            tz = zones.get(f.name) or SPARK_TZ
            if t.tz != tz:
                t = pa.timestamp(t.unit, tz=tz)
                col = col.cast(t)
                changed = True
        fields.append(pa.field(f.name, t))
        cols.append(col)
    if not changed:
        return table
    return pa.Table.from_arrays(cols, schema=pa.schema(fields, metadata=table.schema.metadata))


def native_parquet_readable(t: pa.DataType) -> bool:
    """Whether Spark's Parquet reader reads every file kartoframe may hold for a column
    of dataset type ``t`` (narrower ints and floats widen; unsigned types do not).

    Timestamps and null-typed file columns still need a look at each file's footer.
    """
    if pa.types.is_dictionary(t):
        return native_parquet_readable(t.value_type)
    if pa.types.is_unsigned_integer(t) or pa.types.is_null(t):
        return False
    if pa.types.is_decimal(t):
        return bool(t.precision <= 38)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return native_parquet_readable(t.value_type)
    if pa.types.is_map(t):
        return native_parquet_readable(t.key_type) and native_parquet_readable(t.item_type)
    if pa.types.is_struct(t):
        return all(native_parquet_readable(t.field(i).type) for i in range(t.num_fields))
    return bool(
        pa.types.is_boolean(t)
        or pa.types.is_signed_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_date32(t)
        or pa.types.is_timestamp(t)
    )


_HEX_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")


def spark_unescape(component: str) -> str:
    """Decode a key component the way Spark's partition discovery does.

    Spark turns every ``%XX`` into the single character ``U+00XX`` (so UTF-8 escapes of
    non-ASCII characters come out as Latin-1 mojibake); kartoframe decodes UTF-8.
    """
    return _HEX_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), component)


_INT_RE = re.compile(r"[+-]?\d{1,18}")
_UINT_RE = re.compile(r"\d{1,20}")
_FLOAT_RE = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d{1,3})?")
_DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}")
_TS_RE = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(\.\d{1,6})?")
_TZ_RE = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(\.\d{1,6})?([+-]\d{2}:\d{2}|Z)")
_DEC_RE = re.compile(r"[+-]?(\d*)(?:\.(\d+))?")


def partition_text_castable(text: str, t: pa.DataType) -> bool:
    """Whether Spark's cast of a decoded partition value to the Spark type of ``t``
    gives exactly the value kartoframe parses (a conservative whitelist of formats).
    """
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return True
    if pa.types.is_signed_integer(t):
        return bool(_INT_RE.fullmatch(text))
    if pa.types.is_unsigned_integer(t):
        return bool(_UINT_RE.fullmatch(text)) and int(text) < 2**64
    if pa.types.is_floating(t):
        return bool(_FLOAT_RE.fullmatch(text))
    if pa.types.is_boolean(t):
        return text.lower() in ("true", "false")
    if pa.types.is_date32(t):
        return bool(_DATE_RE.fullmatch(text))
    if pa.types.is_timestamp(t):
        return bool((_TZ_RE if t.tz is not None else _TS_RE).fullmatch(text))
    if pa.types.is_decimal(t):
        m = _DEC_RE.fullmatch(text)
        if not m or not (m.group(1) or m.group(2)):
            return False
        int_digits = len(m.group(1).lstrip("0"))
        frac_digits = len(m.group(2) or "")
        return bool(frac_digits <= t.scale and int_digits <= t.precision - t.scale)
    return False
