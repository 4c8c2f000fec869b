"""A data file's low-cardinality strings handed to the Parquet writer still encoded:
the same file as the decoded strings give (format.file_rows, storage.parquet)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from parquet_files import footer_parts

from kartoframe.format.convert import storage_table
from kartoframe.format.file_rows import EncodedFileRows, compact_dictionary, encoded_file_rows
from kartoframe.storage.parquet import DICTIONARY_PAGE_LIMIT, encode_table

PANDAS = {b"pandas": b'{"columns": []}'}


def _source(values: list[str | None], *, large: bool = True) -> pa.Table:
    """A chunk's gather source: ``values`` dictionary-encoded over the whole body (the
    dictionary in the body's order of first use) beside two other columns.
    """
    t = pa.large_string() if large else pa.string()
    n = len(values)
    return pa.table(
        {
            "s": pc.dictionary_encode(pa.array(values, t)),
            "i": pa.array(np.arange(n, dtype=np.int64)),
            "ts": pa.array((np.arange(n) * 1000).astype("datetime64[ns]")),
        }
    ).replace_schema_metadata(PANDAS)


def _body(source: pa.Table, large: bool = True) -> pa.Schema:
    t = pa.large_string() if large else pa.string()
    return pa.schema(
        [pa.field("s", t), pa.field("i", pa.int64()), pa.field("ts", pa.timestamp("ns"))],
        metadata=source.schema.metadata,
    )


def _plan(
    source: pa.Table, body: pa.Schema, encode: list[str], **kw: int
) -> EncodedFileRows | None:
    options = {
        "row_group_rows": 1 << 20,
        "max_file_rows": source.num_rows,
        "dictionary_page_limit": DICTIONARY_PAGE_LIMIT,
    }
    options.update(kw)
    return encoded_file_rows(source, body, encode, **options)


def _decoded(gathered: pa.Table, body: pa.Schema) -> pa.Table:
    return storage_table(gathered.cast(body))


def _assert_same_file(
    source: pa.Table, order: np.ndarray, encode: list[str], large: bool = True
) -> None:
    body = _body(source, large)
    how = _plan(source, body, encode)
    assert how is not None and how.encoded == {"s"}
    gathered = source.take(pa.array(order, pa.int64()))
    rows = how.rows(gathered)
    assert rows is not None
    assert pa.types.is_dictionary(rows.schema.field("s").type)
    plain = _decoded(gathered, body)
    assert how.declared == plain.schema
    assert how.declared.metadata == plain.schema.metadata
    ours = encode_table(rows, "snappy", None, encode, how.declared)
    theirs = encode_table(plain, "snappy", None, encode)
    assert footer_parts(ours.to_pybytes()) == footer_parts(theirs.to_pybytes())
    back = pq.read_table(pa.BufferReader(ours))
    assert back.schema == plain.schema
    assert back.schema.metadata == plain.schema.metadata
    assert back.equals(plain)


def test_a_file_using_some_entries_in_another_order_is_the_decoded_strings_file() -> None:
    values = ["zeta", "alpha", None, "mü", "", "beta", "alpha"] * 50
    # first uses: 'beta', 'mü', 'alpha', None, 'zeta', '' (not the body's order)
    order = np.array([5, 3, 3, 1, 2, 0, 5, 1, 4, 4, 2, 1, 6] * 40)
    _assert_same_file(_source(values), order, ["s", "i"])


def test_the_file_declares_strings_and_readers_get_strings() -> None:
    values = ["a", "b", "c"] * 10
    source = _source(values)
    how = _plan(source, _body(source), ["s"])
    assert how is not None
    rows = how.rows(source.take(pa.array(np.arange(30)[::-1].copy())))
    assert rows is not None
    data = encode_table(rows, "snappy", None, ["s"], how.declared)
    pf = pq.ParquetFile(pa.BufferReader(data))
    assert pf.schema_arrow.field("s").type == pa.string()
    assert pf.schema_arrow.field("ts").type == pa.timestamp("us")
    assert pf.read().column("s").to_pylist() == [values[i] for i in range(29, -1, -1)]
    stats = pf.metadata.row_group(0).column(0).statistics
    assert (stats.min, stats.max, stats.null_count) == ("a", "c", 0)


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(
        st.one_of(st.none(), st.sampled_from(["", "a", "b", "ü€", "long " * 20, "z"])),
        min_size=1,
        max_size=40,
    ),
    picks=st.lists(st.integers(min_value=0, max_value=10**6), min_size=1, max_size=300),
    large=st.booleans(),
)
def test_any_strings_and_nulls_give_the_decoded_strings_file(
    values: list[str | None], picks: list[int], large: bool
) -> None:
    order = np.array([p % len(values) for p in picks])
    _assert_same_file(_source(values, large=large), order, ["s", "i", "ts"], large)


def test_compact_dictionary_keeps_used_entries_in_order_of_first_use() -> None:
    arr = pa.DictionaryArray.from_arrays(
        pa.array([3, None, 1, 3, 1], pa.int32()), pa.array(["a", "b", "c", "d"], pa.large_string())
    )
    out = compact_dictionary(arr, pa.string())
    assert out.dictionary.to_pylist() == ["d", "b"]
    assert out.dictionary.type == pa.string()
    assert out.indices.to_pylist() == [0, None, 1, 0, 1]
    assert out.to_pylist() == arr.to_pylist()


@pytest.mark.parametrize(
    "case",
    [
        "not in encode",
        "dictionary over the page limit",
        "strings that could outgrow 32-bit offsets",
        "field metadata",
        "stored as a categorical",
        "plain strings in the source",
    ],
)
def test_chunks_the_writer_could_write_otherwise_are_decoded(case: str) -> None:
    source = _source(["a", "b", "c"] * 10)
    body = _body(source)
    encode, kw = ["s"], {}
    if case == "not in encode":
        encode = ["i"]
    elif case == "dictionary over the page limit":
        kw = {"dictionary_page_limit": 16}
    elif case == "strings that could outgrow 32-bit offsets":
        kw = {"max_file_rows": 2**31}  # one-byte strings
    elif case == "field metadata":
        body = body.set(0, body.field("s").with_metadata({b"k": b"v"}))
    elif case == "stored as a categorical":  # dictionary-typed in the body: as before
        body = body.set(0, pa.field("s", source.schema.field("s").type))
    else:
        source = source.set_column(0, "s", source.column("s").cast(pa.large_string()))
    assert _plan(source, body, encode, **kw) is None


def test_files_of_several_row_groups_or_refused_values_are_decoded() -> None:
    source = _source(["a", "b", "c"] * 10)
    how = _plan(source, _body(source), ["s"], row_group_rows=29)
    assert how is not None
    assert how.rows(source) is None  # 30 rows: two row groups
    assert how.rows(source.slice(0, 29)) is not None
    # a nanosecond the stored microseconds cannot hold: the plain path raises the error
    odd = source.set_column(2, "ts", pa.array(np.arange(30).astype("datetime64[ns]")))
    assert how.rows(odd.slice(0, 29)) is None
