"""plateau's schema utilities (``plateau.api.dataset``) on kartoframe's schema code.

``make_meta``, ``empty_dataframe_from_schema``, ``normalize_column_order``,
``validate_compatible`` and ``normalize_type`` keep plateau's names and arguments. Schemas
are plain ``pyarrow.Schema`` objects (plateau wraps them in a ``SchemaWrapper``; a wrapper
is accepted wherever a schema is, through its ``internal()``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
import pyarrow as pa

from kartoframe.errors import ColumnNotFoundError, InvalidTypeError, SchemaError
from kartoframe.format import schema as fschema
from kartoframe.format.convert import frame_to_table

__all__ = [
    "empty_dataframe_from_schema",
    "make_meta",
    "normalize_column_order",
    "normalize_type",
    "validate_compatible",
]


def _schema(obj: object, what: str = "schema") -> pa.Schema:
    if isinstance(obj, pa.Schema):
        return obj
    internal = getattr(obj, "internal", None)  # plateau's SchemaWrapper
    if callable(internal):
        inner = internal()
        if isinstance(inner, pa.Schema):
            return inner
    raise InvalidTypeError(f"{what} must be a pyarrow.Schema, got {type(obj).__name__}.")


def normalize_type(
    t_pa: pa.DataType,
    t_pd: str | None = None,
    t_np: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> tuple[pa.DataType, str | None, str | None, dict[str, Any] | None]:
    """Normalise an arrow type the way the Kartothek format stores it.

    Signed integers become ``int64``, unsigned ``uint64``, floats ``float64``, dictionaries
    their value type, lists their normalised value type (as plateau does); kartoframe also
    normalises large strings/binaries and timestamp units (``us``).

    Returns
    -------
    tuple
        ``(arrow type, pandas type name, numpy type name, metadata)``: for numbers, lists
        and dictionaries the names of the normalised type, otherwise the given ones.

    Examples
    --------
    >>> import pyarrow as pa, kartoframe as kf
    >>> kf.normalize_type(pa.int8(), "int8", "int8", None)
    (DataType(int64), 'int64', 'int64', None)
    """
    if not isinstance(t_pa, pa.DataType):
        raise InvalidTypeError(f"t_pa must be a pyarrow DataType, got {type(t_pa).__name__}.")
    if pa.types.is_dictionary(t_pa):
        return normalize_type(t_pa.value_type, t_pd, t_np, None)
    t = fschema.normalize_type(t_pa)
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        name = "float64" if pa.types.is_floating(t) else str(t)
        return t, name, name, None
    if pa.types.is_list(t_pa) or pa.types.is_large_list(t_pa):
        inner = t_pd[len("list[") : -1] if t_pd and t_pd.startswith("list[") else None
        _, inner_pd, _, _ = normalize_type(t_pa.value_type, inner, None, None)
        return t, f"list[{inner_pd}]", "object", None
    return t, t_pd, t_np, metadata


def normalize_column_order(schema: Any, partition_keys: Sequence[str] | None = None) -> pa.Schema:
    """The schema with partition keys first, then the other columns by name.

    Pandas index columns are dropped and types normalised (as kartoframe stores schemas).

    Examples
    --------
    >>> import pyarrow as pa, kartoframe as kf
    >>> kf.normalize_column_order(pa.schema([("b", pa.int64()), ("p", pa.string()),
    ...                                      ("a", pa.int64())]), ["p"]).names
    ['p', 'a', 'b']
    """
    return fschema.normalize_schema(_schema(schema), list(partition_keys or []))


def make_meta(obj: Any, origin: str, partition_keys: Sequence[str] | None = None) -> pa.Schema:
    """The normalised dataset schema of a DataFrame or schema (plateau's ``make_meta``).

    Parameters
    ----------
    obj
        A ``pandas.DataFrame``, a ``pyarrow.Schema`` or plateau's ``SchemaWrapper``.
    origin
        Where ``obj`` comes from, used in error messages.
    partition_keys
        Columns ordered first.

    Raises
    ------
    InvalidTypeError
        ``obj`` is neither a DataFrame nor a schema.

    Examples
    --------
    >>> import pandas as pd, kartoframe as kf
    >>> kf.make_meta(pd.DataFrame({"b": [1], "a": ["x"]}), origin="example").names
    ['a', 'b']
    """
    if isinstance(obj, pd.DataFrame):
        schema = frame_to_table(obj.head(0), what=str(origin)).schema
    else:
        schema = _schema(obj, "obj")
    return fschema.normalize_schema(schema, list(partition_keys or []))


def validate_compatible(schemas: Sequence[Any], ignore_pandas: bool = False) -> pa.Schema | None:
    """Check that schemas are compatible and return the reference (merged) schema.

    Columns of type ``null`` (all-None) are compatible with any type; everything else must
    match after :func:`normalize_type`. ``ignore_pandas`` is accepted for plateau
    compatibility: pandas metadata never takes part in the comparison.

    Returns
    -------
    pyarrow.Schema or None
        None for an empty list.

    Raises
    ------
    SchemaError
        Two schemas differ (also a ``ValueError``, as in plateau); the message lists the
        differing columns.
    """
    del ignore_pandas
    reference: pa.Schema | None = None
    for i, s in enumerate(schemas):
        current = _schema(s)
        reference = fschema.compatible_merge(
            reference,
            current,
            dataset_uuid="<validate_compatible>",
            origin=f"schema {i}",
            reference_origin="the first schema",
        )
    return reference


def empty_dataframe_from_schema(
    schema: Any,
    columns: Sequence[str] | None = None,
    date_as_object: bool = False,
    coerce_temporal_nanoseconds: bool = True,
) -> pd.DataFrame:
    """An empty DataFrame typed by the schema (optionally only ``columns``, in that order).

    Raises
    ------
    ColumnNotFoundError
        A requested column is not in the schema.

    Examples
    --------
    >>> import pyarrow as pa, kartoframe as kf
    >>> kf.empty_dataframe_from_schema(pa.schema([("a", pa.int64())])).dtypes.to_dict()
    {'a': dtype('int64')}
    """
    sch = _schema(schema)
    if columns is not None:
        missing = [c for c in columns if c not in sch.names]
        if missing:
            raise ColumnNotFoundError(f"Columns cannot be found in the schema: {missing}.")
    try:
        table = fschema.empty_table(sch, list(columns) if columns is not None else None)
        return table.to_pandas(
            date_as_object=date_as_object,
            coerce_temporal_nanoseconds=coerce_temporal_nanoseconds,
        )
    except (pa.ArrowException, ValueError, TypeError) as e:
        raise SchemaError(f"Cannot build an empty DataFrame from the schema: {e}") from e
