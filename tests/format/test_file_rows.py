"""A data file's low-cardinality strings handed to the Parquet writer still encoded:
the same file as the decoded strings give (format.file_rows, storage.parquet)."""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kartoframe.format.convert import storage_table
from kartoframe.format.file_rows import compact_dictionary, encoded_file_rows
from kartoframe.storage.parquet import DICTIONARY_PAGE_LIMIT, encode_table

PANDAS = {b"pandas": b'{"columns": []}'}


def _gathered(values: list[str | None], order: np.ndarray, *, large: bool = True) -> pa.Table:
    """A file's rows as a write gathers them: ``values`` dictionary-encoded over a whole
    body (the dictionary in the body's order of first use), then taken at ``order``.
    """
    t = pa.large_string() if large else pa.string()
    body = pa.array(values, t)
    encoded = pc.dictionary_encode(body)
    n = len(order)
    return pa.table(
        {
            "s": encoded.take(pa.array(order)),
            "i": pa.array(np.arange(n, dtype=np.int64)),
            "ts": pa.array((np.arange(n) * 1000).astype("datetime64[ns]")),
        }
    ).replace_schema_metadata(PANDAS)


def _body(gathered: pa.Table, large: bool = True) -> pa.Schema:
    t = pa.large_string() if large else pa.string()
    return pa.schema(
        [pa.field("s", t), pa.field("i", pa.int64()), pa.field("ts", pa.timestamp("ns"))],
        metadata=gathered.schema.metadata,
    )


def _decoded(gathered: pa.Table, body: pa.Schema) -> pa.Table:
    return storage_table(gathered.cast(body))


def _parts(data: pa.Buffer) -> tuple[bytes, dict, dict]:
    """The bytes before the footer, the footer's key-value pairs, its row groups."""
    raw = data.to_pybytes()
    footer = int.from_bytes(raw[-8:-4], "little")
    md = pq.ParquetFile(io.BytesIO(raw)).metadata
    groups = [md.row_group(i).to_dict() for i in range(md.num_row_groups)]
    return raw[: len(raw) - 8 - footer], dict(md.metadata), {"groups": groups}


def _assert_same_file(gathered: pa.Table, body: pa.Schema, encode: list[str]) -> None:
    out = encoded_file_rows(
        gathered,
        body,
        encode,
        row_group_rows=1 << 20,
        dictionary_page_limit=DICTIONARY_PAGE_LIMIT,
    )
    assert out is not None
    rows, declared = out
    assert pa.types.is_dictionary(rows.schema.field("s").type)
    plain = _decoded(gathered, body)
    assert declared == plain.schema
    assert declared.metadata == plain.schema.metadata
    ours = encode_table(rows, "snappy", None, encode, declared)
    theirs = encode_table(plain, "snappy", None, encode)
    assert _parts(ours) == _parts(theirs)
    back = pq.read_table(pa.BufferReader(ours))
    assert back.schema == plain.schema
    assert back.schema.metadata == plain.schema.metadata
    assert back.equals(plain)


def test_a_file_using_some_entries_in_another_order_is_the_decoded_strings_file() -> None:
    values = ["zeta", "alpha", None, "mü", "", "beta", "alpha"] * 50
    # first uses: 'beta', 'mü', 'alpha', None, 'zeta', '' (not the body's order)
    order = np.array([5, 3, 3, 1, 2, 0, 5, 1, 4, 4, 2, 1, 6] * 40)
    _assert_same_file(_gathered(values, order), _body(_gathered(values, order)), ["s", "i"])


def test_the_file_declares_strings_and_readers_get_strings() -> None:
    values = ["a", "b", "c"] * 10
    g = _gathered(values, np.arange(30)[::-1].copy())
    rows, declared = encoded_file_rows(
        g, _body(g), ["s"], row_group_rows=1 << 20, dictionary_page_limit=DICTIONARY_PAGE_LIMIT
    ) or (None, None)
    assert rows is not None and declared is not None
    data = encode_table(rows, "snappy", None, ["s"], declared)
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
    g = _gathered(values, order, large=large)
    _assert_same_file(g, _body(g, large), ["s", "i", "ts"])


def test_compact_dictionary_keeps_used_entries_in_order_of_first_use() -> None:
    arr = pa.DictionaryArray.from_arrays(
        pa.array([3, None, 1, 3, 1], pa.int32()), pa.array(["a", "b", "c", "d"], pa.large_string())
    )
    out = compact_dictionary(pa.chunked_array([arr]), pa.string())
    assert out.dictionary.to_pylist() == ["d", "b"]
    assert out.dictionary.type == pa.string()
    assert out.indices.to_pylist() == [0, None, 1, 0, 1]
    assert out.to_pylist() == arr.to_pylist()


@pytest.mark.parametrize(
    "case",
    ["not in encode", "two row groups", "dictionary over the page limit", "field metadata"],
)
def test_files_the_writer_could_write_otherwise_are_decoded(case: str) -> None:
    values = ["a", "b", "c"] * 10
    g = _gathered(values, np.arange(30))
    body = _body(g)
    encode, rows, limit = ["s"], 1 << 20, DICTIONARY_PAGE_LIMIT
    if case == "not in encode":
        encode = ["i"]
    elif case == "two row groups":
        rows = 29
    elif case == "dictionary over the page limit":
        limit = 16
    else:
        body = body.set(0, body.field("s").with_metadata({b"k": b"v"}))
    assert (
        encoded_file_rows(g, body, encode, row_group_rows=rows, dictionary_page_limit=limit) is None
    )


def test_columns_stored_as_categoricals_are_left_as_they_are() -> None:
    # a categorical of the input is dictionary-typed in the body: written as before
    g = _gathered(["a", "b"] * 5, np.arange(10))
    body = _body(g).set(0, pa.field("s", g.schema.field("s").type))
    assert (
        encoded_file_rows(g, body, ["s"], row_group_rows=1 << 20, dictionary_page_limit=1 << 20)
        is None
    )
