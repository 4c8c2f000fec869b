"""A data file's rows with their low-cardinality strings still dictionary-encoded (pure).

A large write gathers each file's rows from a source whose low-cardinality string
columns are dictionary-encoded (:mod:`kartoframe.plan.partition_plan`). Decoding them to
strings before writing, only for the Parquet writer to hash every value back into a
dictionary, was 8 % of the single-threaded encoding of the 5M-row, 200-file sales write.
:func:`encoded_file_rows` hands such columns to the writer encoded, each with a
dictionary of only the entries its file uses, in the order the file first uses them:
the order in which the writer's own encoder would have met them. The Parquet bytes are
those of the decoded strings (dictionary page, data pages, statistics); the file's
Arrow schema, written by :func:`kartoframe.storage.parquet.write_table` from the
declared schema this returns, says ``string`` as before, so every reader gets strings.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kartoframe.format.convert import storage_table, storage_type

__all__ = ["compact_dictionary", "encoded_file_rows"]

#: The bytes of values a string array's 32-bit offsets can address.
_MAX_STRING_BYTES = 2**31 - 1


def compact_dictionary(
    column: pa.ChunkedArray | pa.Array, value_type: pa.DataType
) -> pa.DictionaryArray:
    """``column`` (dictionary-encoded) with a dictionary of only the entries its rows
    use, numbered in the order the rows first use them, its values cast to
    ``value_type``; nulls stay null.
    """
    if isinstance(column, pa.ChunkedArray):
        array = column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
    else:
        array = column
    indices = array.indices
    used = pc.unique(indices)  # in order of first use
    if used.null_count:
        used = used.drop_null()
    renumber = np.zeros(len(array.dictionary), dtype=np.int32)
    renumber[used.to_numpy(zero_copy_only=False)] = np.arange(len(used), dtype=np.int32)
    codes = pa.array(renumber).take(indices)  # a null index gives a null code
    return pa.DictionaryArray.from_arrays(codes, array.dictionary.take(used).cast(value_type))


def encoded_file_rows(
    gathered: pa.Table,
    body: pa.Schema,
    encode: Collection[str],
    *,
    row_group_rows: int,
    dictionary_page_limit: int,
) -> tuple[pa.Table, pa.Schema] | None:
    """The rows of one data file as the writer takes them, and the file's declared schema.

    ``gathered`` holds the file's rows as gathered (string columns of ``body`` possibly
    dictionary-encoded), ``encode`` the columns the writer dictionary-encodes. A string
    column of ``body`` that ``gathered`` holds encoded stays encoded (see
    :func:`compact_dictionary`) when it is in ``encode``, the file is one row group
    (at most ``row_group_rows`` rows: one dictionary per row group), and its dictionary
    stays below ``dictionary_page_limit`` bytes (the writer then never falls back to
    plain pages, with either input). Every other column is decoded and cast as
    :func:`~kartoframe.format.convert.storage_table` casts it.

    Returns None when no column stays encoded: write ``storage_table`` of the decoded
    rows as before.
    """
    if gathered.num_rows == 0 or gathered.num_rows > row_group_rows:
        return None
    if any(f.metadata for f in body):
        return None  # kept as written by the plain path (field metadata and all)
    kept: dict[str, pa.DictionaryArray] = {}
    for name in encode:
        if name not in body.names or name not in gathered.column_names:
            continue
        t = body.field(name).type
        col = gathered.column(name)
        if not pa.types.is_dictionary(col.type) or not (
            pa.types.is_string(t) or pa.types.is_large_string(t)
        ):
            continue
        compact = compact_dictionary(col, storage_type(t))
        entries = compact.dictionary
        if entries.nbytes >= dictionary_page_limit:
            continue
        longest = pc.max(pc.binary_length(entries)).as_py() or 0
        if longest * gathered.num_rows > _MAX_STRING_BYTES:
            continue  # the decoded strings could need large offsets: as before
        kept[name] = compact
        kept[name] = compact
    if not kept:
        return None
    others = [n for n in gathered.column_names if n not in kept]
    plain = gathered.select(others)
    plain = storage_table(
        plain.cast(pa.schema([body.field(n) for n in others], metadata=plain.schema.metadata))
    )
    columns = []
    fields = []
    for name in gathered.column_names:
        if name in kept:
            columns.append(kept[name])
            fields.append(pa.field(name, kept[name].type.value_type, body.field(name).nullable))
        else:
            columns.append(plain.column(name))
            fields.append(plain.schema.field(name))
    rows = pa.Table.from_arrays(columns, names=gathered.column_names)
    return rows, pa.schema(fields, metadata=gathered.schema.metadata)
