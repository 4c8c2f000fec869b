"""Table schemas: normalisation, compatibility, and the ``_common_metadata`` codec.

The dataset schema is a :class:`pyarrow.Schema` whose types are *normalised* the way the
Kartothek type system prescribes (ints -> int64, uints -> uint64, floats -> float64,
dictionaries -> their value type, timestamps -> microseconds) with the partition keys
first and the other columns in alphabetical order. Data files keep their original types;
readers cast them to the dataset schema.

Strings are normalised to ``string`` (not ``large_string``) so that readers built on old
pyarrow versions (kartothek 5.3) can read what kartoframe writes; the two are treated as
the same type everywhere.
"""

from __future__ import annotations

import base64
import dataclasses
import io
import json
from collections.abc import Collection, Iterable, Sequence
from typing import Any, Literal

import pyarrow as pa
import pyarrow.parquet as pq

from kartoframe.errors import CorruptMetadataError, SchemaError
from kartoframe.format.arrow_memory import reader

__all__ = [
    "SCHEMA_EVOLUTIONS",
    "SchemaChange",
    "SchemaEvolution",
    "compatible_merge",
    "declared_schema_metadata",
    "empty_table",
    "evolve_schema",
    "merge_into_stored",
    "merge_schema",
    "normalize_schema",
    "normalize_type",
    "order_names",
    "pandas_metadata",
    "schema_diff",
    "schema_from_bytes",
    "schema_to_bytes",
]

PANDAS_KEY = b"pandas"
#: The Parquet footer key of a file's Arrow schema (base64 of its IPC message).
ARROW_SCHEMA_KEY = b"ARROW:schema"


def declared_schema_metadata(schema: pa.Schema) -> dict[bytes, bytes]:
    """The footer key-value pairs pyarrow writes for a table of ``schema``: its metadata
    and the schema itself, which readers take the column types from. A writer given rows
    of other types (``store_schema=False``: strings still dictionary-encoded) adds them,
    and the file is the one the declared table gives.
    """
    return {**(schema.metadata or {}), ARROW_SCHEMA_KEY: base64.b64encode(schema.serialize())}


def normalize_type(t: pa.DataType) -> pa.DataType:
    """Return the normalised Kartothek type of an arrow type."""
    if pa.types.is_dictionary(t):
        return normalize_type(t.value_type)
    if pa.types.is_signed_integer(t):
        return pa.int64()
    if pa.types.is_unsigned_integer(t):
        return pa.uint64()
    if pa.types.is_floating(t):
        return pa.float64()
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return pa.binary()
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", tz=t.tz)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(normalize_type(t.value_type))
    return t


def order_names(names: Iterable[str], partition_keys: Sequence[str]) -> list[str]:
    """Partition keys first (in order), then the other names alphabetically."""
    pk = list(partition_keys)
    rest = sorted(n for n in names if n not in pk)
    return pk + rest


def _pandas_record(field: pa.Field, original: dict[str, Any] | None) -> dict[str, Any]:
    """Pandas metadata record of a normalised field, keeping extension dtypes."""
    t = field.type
    orig_numpy = (original or {}).get("numpy_type")
    rec: dict[str, Any] = {
        "name": field.name,
        "field_name": field.name,
        "pandas_type": "object",
        "numpy_type": "object",
        "metadata": None,
    }
    if original is not None:
        rec.update({k: v for k, v in original.items() if k in ("pandas_type", "numpy_type")})
        rec["metadata"] = original.get("metadata")
    is_ext = isinstance(orig_numpy, str) and orig_numpy[:1].isupper()
    if pa.types.is_signed_integer(t):
        rec["pandas_type"] = "int64"
        rec["numpy_type"] = "Int64" if is_ext else "int64"
    elif pa.types.is_unsigned_integer(t):
        rec["pandas_type"] = "uint64"
        rec["numpy_type"] = "UInt64" if is_ext else "uint64"
    elif pa.types.is_floating(t):
        rec["pandas_type"] = "float64"
        rec["numpy_type"] = "Float64" if is_ext else "float64"
    elif pa.types.is_string(t):
        if rec["pandas_type"] not in ("unicode", "object", "string") or rec["numpy_type"] not in (
            "object",
            "str",
            "string",
        ):
            rec["pandas_type"], rec["numpy_type"] = "unicode", "object"
        rec["metadata"] = None
    elif pa.types.is_boolean(t):
        rec["pandas_type"] = "bool"
        rec["numpy_type"] = "boolean" if orig_numpy == "boolean" else "bool"
    elif pa.types.is_timestamp(t):
        rec["pandas_type"] = "datetimetz" if t.tz else "datetime"
        if not (isinstance(orig_numpy, str) and orig_numpy.startswith("datetime64[")):
            rec["numpy_type"] = "datetime64[us]"
        rec["metadata"] = {"timezone": t.tz} if t.tz else None
    elif pa.types.is_date(t):
        rec["pandas_type"], rec["numpy_type"], rec["metadata"] = "date", "object", None
    elif original is None:
        rec["pandas_type"] = str(t)
    if (
        isinstance(orig_numpy, str)
        and orig_numpy.endswith("[pyarrow]")
        and (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t))
    ):
        rec["numpy_type"] = f"{t}[pyarrow]"  # pyarrow-backed: read back as such, nulls kept
    if rec.get("pandas_type") == "categorical":
        rec["pandas_type"], rec["numpy_type"], rec["metadata"] = str(t), "object", None
    return rec


def pandas_metadata(schema: pa.Schema) -> dict[str, Any] | None:
    """Return the decoded pandas metadata of a schema, if any."""
    raw = (schema.metadata or {}).get(PANDAS_KEY)
    if raw is None:
        return None
    try:
        meta = json.loads(raw)
    except ValueError as e:
        raise CorruptMetadataError(f"Invalid pandas metadata in schema: {e}") from e
    return meta if isinstance(meta, dict) else None


def normalize_schema(schema: pa.Schema, partition_keys: Sequence[str] = ()) -> pa.Schema:
    """Normalise types, order columns and clean the pandas metadata of a schema.

    Pandas index columns (``__index_level_0__`` and friends, as the schema's pandas
    metadata lists them in ``index_columns``) are dropped: the dataset schema describes
    columns only. A column that merely has such a name (a user's column, or one written
    without pandas metadata, e.g. by Spark) is data and is kept.
    """
    old_meta = pandas_metadata(schema) or {}
    index_fields = {c for c in old_meta.get("index_columns", []) if isinstance(c, str)}
    records = {
        r.get("field_name", r.get("name")): r
        for r in old_meta.get("columns", [])
        if isinstance(r, dict)
    }
    fields = {f.name: f for f in schema if f.name not in index_fields}
    missing = [k for k in partition_keys if k not in fields]
    if missing:
        raise SchemaError(f"Partition columns {missing} are missing from the schema.")
    new_fields = []
    for name in order_names(fields, partition_keys):
        f = fields[name]
        new_fields.append(pa.field(name, normalize_type(f.type), nullable=True))
    new_meta: dict[str, Any] = {
        "index_columns": [],
        "column_indexes": old_meta.get("column_indexes", []),
        "columns": [_pandas_record(f, records.get(f.name)) for f in new_fields],
        "attributes": old_meta.get("attributes", {}),
        "creator": old_meta.get("creator", {"library": "pyarrow", "version": pa.__version__}),
        "pandas_version": old_meta.get("pandas_version", ""),
    }
    md = {PANDAS_KEY: json.dumps(new_meta, sort_keys=True).encode()}
    return pa.schema(new_fields, metadata=md)


def schema_to_bytes(schema: pa.Schema) -> bytes:
    """Serialise a schema as an empty Parquet file (``_common_metadata``)."""
    buf = io.BytesIO()
    pq.write_metadata(schema, buf, version="2.6")
    return buf.getvalue()


def schema_from_bytes(
    data: bytes, partition_keys: Sequence[str] = (), origin: str = ""
) -> pa.Schema:
    """Read a ``_common_metadata`` file and return the normalised schema."""
    try:
        raw = pq.read_schema(reader(data))
    except (pa.ArrowException, OSError) as e:
        raise CorruptMetadataError(f"Cannot read schema {origin}: {e}") from e
    return normalize_schema(raw, [k for k in partition_keys if k in raw.names])


def empty_table(schema: pa.Schema, columns: Sequence[str] | None = None) -> pa.Table:
    """Return a zero-row table of (a projection of) the schema."""
    if columns is not None:
        schema = pa.schema([schema.field(c) for c in columns], metadata=schema.metadata)
    return schema.empty_table()


def _same(a: pa.DataType, b: pa.DataType) -> bool:
    return bool(normalize_type(a) == normalize_type(b))


def schema_diff(reference: pa.Schema, other: pa.Schema) -> list[str]:
    """Human-readable differences between two schemas (ignoring null-typed columns)."""
    lines: list[str] = []
    ref = {f.name: f.type for f in reference}
    oth = {f.name: f.type for f in other}
    for name in sorted(set(ref) | set(oth)):
        a, b = ref.get(name), oth.get(name)
        if a is None and b is not None:
            lines.append(f"column {name!r}: not in reference, {b} in new data")
        elif b is None and a is not None:
            lines.append(f"column {name!r}: {a} in reference, missing in new data")
        elif a is not None and b is not None and not _same(a, b):
            if pa.types.is_null(a) or pa.types.is_null(b):
                continue
            lines.append(f"column {name!r}: {a} in reference, {b} in new data")
    return lines


def compatible_merge(
    reference: pa.Schema | None,
    new: pa.Schema,
    *,
    dataset_uuid: str,
    origin: str,
    reference_origin: str = "dataset schema",
) -> pa.Schema:
    """Check that ``new`` is compatible with ``reference`` and return the merged schema.

    Columns of arrow type ``null`` (all-None columns) are compatible with any type; the
    merged schema takes the concrete type. Everything else must match after
    normalisation.

    Raises
    ------
    SchemaError
        With the dataset, the origin of the offending data and a column-by-column diff.
    """
    if reference is None:
        return new
    diff = schema_diff(reference, new)
    if diff:
        details = "\n  ".join(diff)
        raise SchemaError(
            f"Schemas for dataset {dataset_uuid!r} are not compatible: {origin} differs "
            f"from {reference_origin}:\n  {details}"
        )
    upgraded = False
    fields = []
    for f in reference:
        nt = new.field(f.name).type
        if pa.types.is_null(f.type) and not pa.types.is_null(nt):
            fields.append(pa.field(f.name, nt))
            upgraded = True
        else:
            fields.append(f)
    if not upgraded:
        return reference
    merged = pa.schema(fields, metadata=reference.metadata)
    meta = pandas_metadata(merged) or {}
    new_records = {r["name"]: r for r in (pandas_metadata(new) or {}).get("columns", [])}
    cols = meta.get("columns", [])
    for i, rec in enumerate(cols):
        if pa.types.is_null(reference.field(rec["name"]).type) and rec["name"] in new_records:
            cols[i] = new_records[rec["name"]]
    return merged.with_metadata({PANDAS_KEY: json.dumps(meta, sort_keys=True).encode()})


#: How a write may change the dataset schema: ``"none"`` (the default) refuses any
#: change; ``"add_columns"`` accepts new (nullable) columns and safe widenings.
SchemaEvolution = Literal["none", "add_columns"]
SCHEMA_EVOLUTIONS: tuple[str, ...] = ("none", "add_columns")


@dataclasses.dataclass(frozen=True, slots=True)
class SchemaChange:
    """What an evolving write changes in the dataset schema.

    Attributes
    ----------
    added
        New columns and their (normalised) types.
    widened
        Columns whose type was widened: ``(name, old type, new type)``.
    """

    added: tuple[tuple[str, pa.DataType], ...] = ()
    widened: tuple[tuple[str, pa.DataType, pa.DataType], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.added or self.widened)

    def then(self, other: SchemaChange) -> SchemaChange:
        """Return this change followed by ``other`` (widened twice: keeps the first type)."""
        added = dict(self.added)
        widened = {n: (a, b) for n, a, b in self.widened}
        for n, t in other.added:
            added[n] = t
        for n, a, b in other.widened:
            if n in added:
                added[n] = b
            else:
                widened[n] = (widened[n][0] if n in widened else a, b)
        return SchemaChange(
            tuple(sorted(added.items())),
            tuple(sorted((n, a, b) for n, (a, b) in widened.items())),
        )


def _is_widening(old: pa.DataType, new: pa.DataType) -> bool:
    """Whether every value of ``old`` is exactly representable in ``new`` (documented set).

    Only decimals need it: the normalisation already unifies integer, float, string,
    dictionary and timestamp-unit variants. A decimal may grow in precision and scale as
    long as neither its integer digits nor its scale shrink.
    """
    if pa.types.is_decimal(old) and pa.types.is_decimal(new):
        digits_kept = new.precision - new.scale >= old.precision - old.scale
        return bool(new.scale >= old.scale and digits_kept)
    return False


def _sign_swap(a: pa.DataType, b: pa.DataType) -> bool:
    return bool(
        (pa.types.is_signed_integer(a) and pa.types.is_unsigned_integer(b))
        or (pa.types.is_unsigned_integer(a) and pa.types.is_signed_integer(b))
    )


def evolve_schema(
    reference: pa.Schema | None,
    new: pa.Schema,
    *,
    dataset_uuid: str,
    origin: str,
    partition_keys: Sequence[str] = (),
    required: Collection[str] = (),
    reference_origin: str = "the stored schema",
) -> tuple[pa.Schema, SchemaChange]:
    """Merge ``new`` into ``reference`` allowing new columns and safe widenings.

    Parameters
    ----------
    reference
        The schema so far (None: ``new`` is taken as is).
    new
        A normalised schema of data being written.
    required
        Columns ``new`` must have (the stored schema's columns: dropping a column is
        refused; columns added by the same write may be absent from some chunks).

    Returns
    -------
    (pyarrow.Schema, SchemaChange)
        The merged schema (partition keys first, then alphabetical) and what changed.

    Raises
    ------
    SchemaError
        A required column is missing, or a column changes type other than by a safe
        widening (type changes, signed/unsigned swaps); the message lists every
        offending column.
    """
    if reference is None:
        return new, SchemaChange()
    problems: list[str] = []
    ref = {f.name: f.type for f in reference}
    oth = {f.name: f.type for f in new}
    types: dict[str, pa.DataType] = dict(ref)
    from_new: set[str] = set()
    added: list[tuple[str, pa.DataType]] = []
    widened: list[tuple[str, pa.DataType, pa.DataType]] = []
    for name in sorted(set(ref) | set(oth)):
        a, b = ref.get(name), oth.get(name)
        if b is None:
            if name in required:
                problems.append(
                    f"column {name!r}: {a} in {reference_origin}, missing in {origin} "
                    "(dropping a column is not supported)"
                )
            continue
        if a is None:
            types[name] = b
            from_new.add(name)
            added.append((name, b))
            continue
        if _same(a, b) or pa.types.is_null(b):
            continue
        if pa.types.is_null(a):
            types[name] = b
            from_new.add(name)
        elif _sign_swap(normalize_type(a), normalize_type(b)):
            problems.append(
                f"column {name!r}: {a} in {reference_origin}, {b} in {origin} "
                "(signed/unsigned swap is not a safe change)"
            )
        elif _is_widening(a, b):
            types[name] = b
            from_new.add(name)
            widened.append((name, a, b))
        elif _is_widening(b, a):
            continue
        else:
            problems.append(
                f"column {name!r}: {a} in {reference_origin}, {b} in {origin} "
                "(type changes are not supported; only new columns and widening decimals)"
            )
    if problems:
        details = "\n  ".join(problems)
        raise SchemaError(
            f"Schema of dataset {dataset_uuid!r} cannot evolve with schema_evolution="
            f"'add_columns': {origin} differs from {reference_origin}:\n  {details}"
        )
    if not from_new:
        return reference, SchemaChange()
    fields = [pa.field(n, types[n]) for n in order_names(types, partition_keys)]
    records = {r.get("name"): r for r in (pandas_metadata(reference) or {}).get("columns", [])}
    new_records = {r.get("name"): r for r in (pandas_metadata(new) or {}).get("columns", [])}
    meta = dict(pandas_metadata(reference) or {})
    meta.setdefault("index_columns", [])
    meta.setdefault("column_indexes", [])
    cols = []
    for f in fields:
        rec = new_records.get(f.name) if f.name in from_new else records.get(f.name)
        cols.append(rec if rec is not None else _pandas_record(f, None))
    meta["columns"] = cols
    merged = pa.schema(fields, metadata={PANDAS_KEY: json.dumps(meta, sort_keys=True).encode()})
    return merged, SchemaChange(tuple(added), tuple(widened))


def merge_schema(
    reference: pa.Schema | None,
    new: pa.Schema,
    *,
    schema_evolution: SchemaEvolution,
    dataset_uuid: str,
    origin: str,
    partition_keys: Sequence[str] = (),
    required: Collection[str] | None = None,
    reference_origin: str = "the stored schema",
) -> tuple[pa.Schema, SchemaChange]:
    """``new`` (normalised) merged into ``reference`` under ``schema_evolution``.

    ``"add_columns"`` accepts new nullable columns and safe widenings
    (:func:`evolve_schema`; ``required`` defaults to every column of ``reference``);
    ``"none"`` requires the schemas to match (:func:`compatible_merge`, no change).

    Returns
    -------
    (pyarrow.Schema, SchemaChange)
        The merged schema and what it changed.

    Raises
    ------
    SchemaError
        ``new`` does not fit ``reference`` under ``schema_evolution``.
    """
    if schema_evolution == "add_columns":
        if required is None:
            required = reference.names if reference is not None else ()
        return evolve_schema(
            reference,
            new,
            dataset_uuid=dataset_uuid,
            origin=origin,
            partition_keys=partition_keys,
            required=required,
            reference_origin=reference_origin,
        )
    merged = compatible_merge(
        reference, new, dataset_uuid=dataset_uuid, origin=origin, reference_origin=reference_origin
    )
    return merged, SchemaChange()


def merge_into_stored(
    stored: pa.Schema,
    new: pa.Schema,
    *,
    schema_evolution: SchemaEvolution,
    dataset_uuid: str,
    origin: str,
    partition_keys: Sequence[str] = (),
) -> pa.Schema:
    """The stored schema after data of the normalised schema ``new`` is written to it.

    :func:`merge_schema` against the stored schema (every stored column required). This
    is the check every writer (eager, dask, Spark, cube) runs against the stored schema
    before it writes a file.

    Raises
    ------
    SchemaError
        ``new`` does not fit the stored schema under ``schema_evolution``.
    """
    merged, _ = merge_schema(
        stored,
        new,
        schema_evolution=schema_evolution,
        dataset_uuid=dataset_uuid,
        origin=origin,
        partition_keys=partition_keys,
    )
    return merged
