"""A data file's rows with their low-cardinality strings still dictionary-encoded (pure).

A large write gathers each file's rows from a source whose low-cardinality string
columns are dictionary-encoded (:mod:`kartoframe.plan.partition_plan`). Decoding them to
strings before writing, only for the Parquet writer to hash every value back into a
dictionary, costs the decode, a cast and the hashing. :class:`EncodedFileRows` hands
such columns to the writer encoded, each file's dictionary cut to the entries the file
uses, numbered in the order the file first uses them: the order in which the writer's
own encoder would have met them. The Parquet bytes are those of the decoded strings
(dictionary page, data pages, statistics); the file's Arrow schema, written by
:func:`kartoframe.storage.parquet.write_table` from :attr:`EncodedFileRows.declared`,
says ``string`` as before, so every reader gets strings.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kartoframe.format.convert import storage_type

__all__ = ["EncodedFileRows", "compact_dictionary", "encoded_file_rows"]

#: The bytes of values a string array's 32-bit offsets can address.
_MAX_STRING_BYTES = 2**31 - 1


def compact_dictionary(array: pa.DictionaryArray, value_type: pa.DataType) -> pa.DictionaryArray:
    """``array`` with a dictionary of only the entries its rows use, numbered in the
    order the rows first use them, its values cast to ``value_type``; nulls stay null.
    """
    indices = array.indices
    used = pc.unique(indices)  # in order of first use
    if used.null_count:
        used = used.drop_null()
    renumber = np.zeros(len(array.dictionary), dtype=np.int32)
    renumber[used.to_numpy(zero_copy_only=False)] = np.arange(len(used), dtype=np.int32)
    codes = pa.array(renumber).take(indices)  # a null index gives a null code
    return pa.DictionaryArray.from_arrays(codes, array.dictionary.take(used).cast(value_type))


@dataclasses.dataclass(frozen=True, slots=True)
class EncodedFileRows:
    """How the files of one chunk are handed to the writer (see :func:`encoded_file_rows`).

    ``encoded`` are the columns that stay dictionary-encoded, ``cast_to`` the others
    with their stored types, ``declared`` every file's Arrow schema (the encoded
    columns' value types), ``max_rows`` the rows of a row group.
    """

    names: tuple[str, ...]
    encoded: frozenset[str]
    cast_to: pa.Schema
    declared: pa.Schema
    max_rows: int

    def rows(self, gathered: pa.Table) -> pa.Table | None:
        """One file's rows as the writer takes them (``gathered`` from the chunk's gather
        source), or None: write the decoded rows instead (a file of several row groups,
        or a value the stored types refuse, whose error the plain path raises).
        """
        if not 0 < gathered.num_rows <= self.max_rows:
            return None
        try:
            plain = gathered.select(self.cast_to.names).cast(self.cast_to)
        except pa.ArrowException:
            return None
        columns = []
        for name in self.names:
            if name in self.encoded:
                column = gathered.column(name)
                array = column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
                columns.append(compact_dictionary(array, self.declared.field(name).type))
            else:
                columns.append(plain.column(name))
        return pa.Table.from_arrays(columns, names=list(self.names))


def encoded_file_rows(
    source: pa.Table,
    body: pa.Schema,
    encode: Collection[str],
    *,
    row_group_rows: int,
    max_file_rows: int,
    dictionary_page_limit: int,
) -> EncodedFileRows | None:
    """How a chunk's files keep their low-cardinality strings encoded, or None (decode).

    ``source`` is the chunk's gather source (``body``'s rows, low-cardinality string
    columns dictionary-encoded in one chunk), ``encode`` the columns the writer
    dictionary-encodes, ``max_file_rows`` the rows of the chunk's largest file. A string
    column stays encoded when it is in ``encode`` and ``source`` holds it encoded, and
    its whole dictionary (so each file's) is under ``dictionary_page_limit`` bytes: the
    writer then never falls back to plain pages, with either input; and no file's
    strings could outgrow 32-bit offsets. Files must be of one row group (at most
    ``row_group_rows`` rows: one dictionary per row group); fields with metadata are
    written as before.
    """
    if any(f.metadata for f in body) or source.num_rows == 0:
        return None
    encoded = set()
    for name in encode:
        if name not in body.names or name not in source.column_names:
            continue
        t = body.field(name).type
        column = source.column(name)
        if not (pa.types.is_string(t) or pa.types.is_large_string(t)):
            continue
        if not pa.types.is_dictionary(column.type) or column.num_chunks != 1:
            continue
        entries = column.chunk(0).dictionary
        if entries.null_count or entries.nbytes >= dictionary_page_limit:
            continue
        longest = pc.max(pc.binary_length(entries)).as_py() or 0
        if longest * max_file_rows > _MAX_STRING_BYTES:
            continue
        encoded.add(name)
    if not encoded:
        return None
    names = tuple(body.names)
    fields = [pa.field(f.name, storage_type(f.type), f.nullable) for f in body]
    declared = pa.schema(fields, metadata=body.metadata)
    cast_to = pa.schema([f for f in fields if f.name not in encoded])
    return EncodedFileRows(names, frozenset(encoded), cast_to, declared, row_group_rows)
