"""Types of the columns an implicit dataset's stored schema leaves ``null``.

plateau's ``create_empty_dataset_header`` writes ``_common_metadata`` from a frame in which
an empty ``object`` column has the Arrow type ``null``; files written later by
``write_single_partition`` hold strings there, and since the header of such an *implicit*
dataset lists no partitions, no commit ever upgraded the stored schema. Scanning with
``null`` would fail (``Unsupported cast from large_string to null``); plateau reads each
file with its own types. kartoframe takes the type from the data files' footers instead.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from kartoframe.errors import KartoframeError
from kartoframe.format.header import DatasetHeader
from kartoframe.format.schema import PANDAS_KEY, normalize_schema, pandas_metadata
from kartoframe.storage.csv_files import is_csv_key, probe_csv_files
from kartoframe.storage.probe import read_footers
from kartoframe.storage.store import Store

__all__ = ["fill_null_types", "with_column_types"]

#: Footers read concurrently per round (rounds stop once every null column has a type).
BATCH = 16


def with_column_types(
    schema: pa.Schema, found: Mapping[str, tuple[pa.DataType, dict[str, Any] | None]]
) -> pa.Schema:
    """Return ``schema`` with the given columns retyped.

    Their pandas metadata records are replaced by the given ones, where there are.
    """
    if not found:
        return schema
    fields = [pa.field(f.name, found[f.name][0]) if f.name in found else f for f in schema]
    meta = pandas_metadata(schema)
    if meta is None:
        return pa.schema(fields, metadata=schema.metadata)
    columns = []
    for rec in meta.get("columns", []):
        name = rec.get("name") if isinstance(rec, dict) else None
        new = found[name][1] if isinstance(name, str) and name in found else None
        columns.append(new if new is not None else rec)
    meta = {**meta, "columns": columns}
    return pa.schema(
        fields,
        metadata={**(schema.metadata or {}), PANDAS_KEY: json.dumps(meta, sort_keys=True).encode()},
    )


def _schema_of(table: pa.Table) -> pa.Schema:
    return table.schema


def fill_null_types(store: Store, header: DatasetHeader, schema: pa.Schema) -> pa.Schema:
    """Give the ``null`` columns of ``schema`` the (normalised) type the data files have.

    Footers are read in the header's partition order, :data:`BATCH` at a time, until every
    such column has a type; a column that is ``null`` in every file stays ``null``. Files
    that cannot be read are skipped here (the scan reports them).
    """
    pending = [f.name for f in schema if pa.types.is_null(f.type)]
    if not pending:
        return schema
    found: dict[str, tuple[pa.DataType, dict[str, Any] | None]] = {}
    keys = list(dict.fromkeys(header.partitions.values()))
    for start in range(0, len(keys), BATCH):
        chunk = keys[start : start + BATCH]
        found_schemas: dict[str, pa.Schema | BaseException] = {
            k: f if isinstance(f, BaseException) else f.schema.to_arrow_schema()
            for k, f in read_footers(store, [k for k in chunk if not is_csv_key(k)]).items()
        }  # (CSV files: the types pyarrow infers for the columns the schema leaves null)
        found_schemas.update(
            probe_csv_files(store, [k for k in chunk if is_csv_key(k)], schema, _schema_of)
        )
        for key in chunk:
            raw = found_schemas[key]
            if isinstance(raw, BaseException):
                continue
            try:
                file_schema = normalize_schema(raw)
            except (KartoframeError, pa.ArrowException):
                continue
            records = {
                r.get("name"): r
                for r in (pandas_metadata(file_schema) or {}).get("columns", [])
                if isinstance(r, dict)
            }
            for name in pending:
                if name in found or name not in file_schema.names:
                    continue
                t = file_schema.field(name).type
                if not pa.types.is_null(t):
                    found[name] = (t, records.get(name))
        if len(found) == len(pending):
            break
    return with_column_types(schema, found)
