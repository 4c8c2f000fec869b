"""The scan types for pandas (``pandas_read_schema``) and the conversion of a scan result
(``table_to_frame``) give the frames the dataset's pandas metadata asks for, whatever the
string offsets' width and the columns' chunking."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from kartoframe.format.convert import pandas_read_schema, table_to_frame


def _schema() -> pa.Schema:
    frame = pd.DataFrame(
        {
            "s": pd.Series(["a", None, "c"], dtype="str"),
            "o": pd.Series(["x", "y", None], dtype=object),
            "ext": pd.Series(["p", None, "r"], dtype="string"),
            "cat": pd.Series(["u", "v", "u"], dtype="category"),
            "b": [b"1", b"2", None],
            "t": pd.to_datetime(["2024-01-01", "2024-01-02", None]).astype("datetime64[ns]"),
            "i": [1, 2, 3],
        }
    )
    schema = pa.Schema.from_pandas(frame, preserve_index=False)
    # a dataset schema stores categoricals as their values' type (plateau's normalisation)
    # and timestamps in µs (the pandas metadata keeps the frame's ns)
    schema = schema.set(schema.get_field_index("cat"), pa.field("cat", pa.string()))
    return schema.set(schema.get_field_index("t"), pa.field("t", pa.timestamp("us")))


def test_read_schema_scans_strings_as_large_strings_and_categoricals_as_dictionaries() -> None:
    schema = _schema()
    got = pandas_read_schema(schema, ("cat",))
    assert got.names == schema.names
    assert got.metadata == schema.metadata
    types = dict(zip(got.names, got.types, strict=True))
    assert types["s"] == types["o"] == types["ext"] == pa.large_string()
    assert types["cat"] == pa.dictionary(pa.int32(), pa.string())
    assert types["b"] == pa.binary()  # pandas converts binary to bytes objects either way
    assert types["t"] == pa.timestamp("ns")  # the frame's unit; stored as µs
    assert types["i"] == pa.int64()
    # without categoricals the categorical's column is a plain string column
    assert pandas_read_schema(schema).field("cat").type == pa.large_string()


def _table(schema: pa.Schema, n: int, chunks: int) -> pa.Table:
    rng = np.random.default_rng(n)
    words = np.array(["alpha", "beta", "gamma", "", "delta"], dtype=object)

    def strings() -> list[str | None]:
        return [None if i % 7 == 3 else str(w) for i, w in enumerate(rng.choice(words, n))]

    start = dt.datetime(2024, 1, 1)
    table = pa.table(
        {
            "s": pa.array(strings(), pa.string()),
            "o": pa.array(strings(), pa.string()),
            "ext": pa.array(strings(), pa.string()),
            "cat": pa.array(strings(), pa.string()),
            "b": pa.array([None if i % 5 == 0 else bytes([i % 256]) for i in range(n)]),
            "t": pa.array(
                [start + dt.timedelta(microseconds=int(x)) for x in rng.integers(0, 10**9, n)],
                pa.timestamp("us"),
            ),
            "i": pa.array(rng.integers(-(2**40), 2**40, n), pa.int64()),
        },
        schema=schema.remove_metadata(),
    ).replace_schema_metadata(schema.metadata)
    if chunks > 1:
        step = -(-n // chunks)
        table = pa.concat_tables([table.slice(i, step) for i in range(0, n, step)])
    return table


@pytest.mark.parametrize("chunks", [1, 7])
@pytest.mark.parametrize("categoricals", [(), ("cat",)])
def test_frames_are_the_same_from_either_string_type_and_any_chunking(
    chunks: int, categoricals: tuple[str, ...]
) -> None:
    schema = _schema()
    table = _table(schema, 500, chunks)
    assert table.column("s").num_chunks == chunks
    read_schema = pandas_read_schema(schema, categoricals)
    scanned = table.cast(read_schema)
    assert scanned.schema.field("s").type == pa.large_string()
    want = table_to_frame(_table(schema, 500, 1), schema, categoricals=categoricals)
    got = table_to_frame(scanned, schema, categoricals=categoricals)
    pd.testing.assert_frame_equal(got, want)
    assert got["s"].dtype == pd.StringDtype(na_value=np.nan)  # pandas' default str dtype
    assert got["o"].dtype == pd.StringDtype(na_value=np.nan)
    assert got["ext"].dtype == pd.StringDtype()  # the frame's "string" dtype comes back
    assert got["t"].dtype == np.dtype("datetime64[ns]")
    if categoricals:
        assert isinstance(got["cat"].dtype, pd.CategoricalDtype)
    assert got["s"].isna().sum() == table.column("s").null_count
    assert got["i"].tolist() == table.column("i").to_pylist()
