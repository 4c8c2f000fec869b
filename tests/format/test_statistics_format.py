"""The statistics layout: computation, truncation, bloom filters, conform/merge, codec."""

from __future__ import annotations

import datetime as dt
import decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from kartoframe.errors import CorruptMetadataError, UnsafePathError
from kartoframe.format import statistics as fs
from kartoframe.format import statistics_compute as fc


def _stats(*tables: pa.Table, blooms: tuple[str, ...] = ()) -> list[dict]:
    return fc.compute_statistics(list(tables), bloom_filter_columns=blooms).to_pylist()


def test_min_max_nulls_of_every_type() -> None:
    berlin = pa.timestamp("us", tz="Europe/Berlin")
    t = pa.table(
        {
            "i": pa.array([3, None, -1], pa.int8()),
            "u": pa.array([1, 2, 3], pa.uint16()),
            "f": pa.array([1.5, float("nan"), None], pa.float32()),
            "b": pa.array([True, None, True]),
            "s": pa.array(["b", "a", None], pa.large_string()),
            "d": pa.array([dt.date(2020, 1, 2), dt.date(2020, 1, 1), None]),
            "ts": pa.array([0, 1_000_000_000, None], pa.timestamp("ns", tz="Europe/Berlin")),
            "dec": pa.array([decimal.Decimal("1.25"), None, decimal.Decimal("-3.50")]),
            "cat": pa.array(["x", "y", "x"]).dictionary_encode(),
            "n": pa.nulls(3),
            "lst": pa.array([[1], None, [2, 3]]),
        }
    )
    (row,) = _stats(t)
    assert row["rows"] == 3
    mn, mx, nulls = row["min"], row["max"], row["null_count"]
    assert (mn["i"], mx["i"], nulls["i"]) == (-1, 3, 1)
    assert (mn["u"], mx["u"]) == (1, 3)
    # NaN counts as null and is not a bound
    assert (mn["f"], mx["f"], nulls["f"]) == (1.5, 1.5, 2)
    assert (mn["b"], mx["b"], nulls["b"]) == (True, True, 1)
    assert (mn["s"], mx["s"]) == ("a", "b")
    assert (mn["d"], mx["d"]) == (dt.date(2020, 1, 1), dt.date(2020, 1, 2))
    assert mx["ts"] == dt.datetime(1970, 1, 1, 1, 0, 1, tzinfo=mx["ts"].tzinfo)
    assert str(mx["ts"].tzinfo) == "Europe/Berlin"
    assert (mn["dec"], mx["dec"]) == (decimal.Decimal("-3.50"), decimal.Decimal("1.25"))
    assert (mn["cat"], mx["cat"]) == ("x", "y")
    assert nulls["n"] == 3 and "n" not in mn
    assert "lst" not in nulls  # nested columns carry no statistics
    schema = fc.compute_statistics([t]).schema
    assert schema.field("min").type.field("ts").type == berlin
    assert schema.field("min").type.field("i").type == pa.int64()  # normalised types
    assert schema.field("min").type.field("cat").type == pa.string()


def test_one_row_per_slice_and_empty_and_all_null_slices() -> None:
    t = pa.table({"x": [1, 2, None, None], "s": ["a", "b", None, None]})
    rows = _stats(t.slice(0, 2), t.slice(2, 2), t.slice(0, 0))
    assert [r["rows"] for r in rows] == [2, 2, 0]
    assert rows[0]["min"]["x"] == 1 and rows[0]["max"]["x"] == 2
    assert rows[1]["min"]["x"] is None and rows[1]["null_count"]["x"] == 2
    assert rows[2]["null_count"]["x"] == 0 and rows[2]["min"]["x"] is None


def test_value_lists_only_for_low_cardinality_chunks() -> None:
    few = pa.table({"s": ["b", "a", "b", None], "i": [3, 1, 3, 1], "f": [1.0, 2.0, 1.0, 1.0]})
    (row,) = _stats(few)
    assert row["value_list"]["s"] == ["a", "b"]
    assert row["value_list"]["i"] == [1, 3]
    assert "f" not in row["value_list"]  # floats never keep value lists
    many = pa.table({"i": np.arange(fs.VALUE_LIST_MAX + 1)})
    # the chunk has too many distinct values: no slice keeps a list, even a small one
    rows = _stats(many.slice(0, 2), many.slice(2, fs.VALUE_LIST_MAX - 1))
    assert [r["value_list"]["i"] for r in rows] == [None, None]
    long = pa.table({"s": ["x" * (fs.STRING_STATS_MAX_BYTES + 1), "y"]})
    assert _stats(long)[0]["value_list"]["s"] is None  # values must be exact


@pytest.mark.parametrize("distinct", [fs.VALUE_LIST_MAX, fs.VALUE_LIST_MAX + 1])
@pytest.mark.parametrize("layout", ["sorted", "shuffled", "late"])
def test_value_list_decision_on_large_chunks(distinct: int, layout: str) -> None:
    """The sampled shortcuts only ever say "too many": the exact count decides."""
    n = 40_000
    rng = np.random.default_rng(distinct)
    if layout == "sorted":  # the first rows hold a single value
        values = np.sort(rng.integers(0, distinct, n))
        values[-distinct:] = np.arange(distinct)
        values.sort()
    elif layout == "shuffled":
        values = rng.permutation(np.arange(n) % distinct)
    else:  # one value occurs only in the very last row
        values = np.arange(n) % (distinct - 1)
        values[-1] = distinct - 1
    table = pa.table({"i": values})
    slices = [table.slice(0, 10_000), table.slice(10_000, 30_000)]
    rows = _stats(*slices)
    lists = [r["value_list"]["i"] for r in rows]
    if distinct <= fs.VALUE_LIST_MAX:
        assert lists == [sorted(set(s["i"].to_pylist())) for s in slices]
    else:
        assert lists == [None, None]


@pytest.mark.parametrize(
    "values",
    [
        ["a" * 100, "a" * 70 + "b"],
        ["é" * 40, "é" * 39 + "ê" + "z" * 5],  # multi-byte: cut at a character boundary
        ["\U0010ffff" * 20, "\U0010ffff" * 17],  # the last code point cannot be incremented
        ["z" * 64, "z" * 65],
    ],
)
def test_truncated_string_bounds_stay_valid(values: list[str]) -> None:
    (row,) = _stats(pa.table({"s": values}))
    lo, hi = row["min"]["s"], row["max"]["s"]
    assert len(lo.encode()) <= fs.STRING_STATS_MAX_BYTES
    assert lo <= min(values)
    if hi is not None:  # None: no upper bound could be built
        assert len(hi.encode()) <= fs.STRING_STATS_MAX_BYTES
        assert hi >= max(values)
    assert lo != hi  # truncated bounds never claim "all values equal"


def test_truncated_binary_bounds() -> None:
    values = [b"\x01" * 80, b"\x01" * 70 + b"\xff" * 20]
    (row,) = _stats(pa.table({"b": values}))
    assert row["min"]["b"] <= min(values) and row["max"]["b"] >= max(values)
    (row,) = _stats(pa.table({"b": [b"\xff" * 80]}))
    assert row["max"]["b"] is None


@pytest.mark.parametrize(
    ("values", "arrow_type"),
    [
        ([f"user-{i}" for i in range(2000)], pa.string()),
        (list(range(-1000, 1000)), pa.int64()),
        ([dt.date(2000, 1, 1) + dt.timedelta(days=i) for i in range(2000)], pa.date32()),
        (
            [dt.datetime(2020, 1, 1) + dt.timedelta(seconds=i) for i in range(2000)],
            pa.timestamp("us"),
        ),
    ],
)
def test_bloom_filter_has_no_false_negatives(values: list, arrow_type: pa.DataType) -> None:
    t = pa.table({"c": pa.array(values, arrow_type)})
    stats = fc.compute_statistics([t], bloom_filter_columns=["c"])
    bloom = stats.column("bloom").combine_chunks().field("c")
    present = fs.bloom_hashes(pa.array(values, arrow_type))
    hits = [fs.bloom_may_contain(bloom, present[i : i + 1])[0] for i in range(0, 2000, 7)]
    assert all(hits)
    absent_values = (
        [f"other-{i}" for i in range(1000)]
        if pa.types.is_string(arrow_type)
        else list(range(5000, 6000))
        if pa.types.is_integer(arrow_type)
        else None
    )
    if absent_values is not None:
        absent = fs.bloom_hashes(pa.array(absent_values, arrow_type))
        false_pos = sum(fs.bloom_may_contain(bloom, absent[i : i + 1])[0] for i in range(1000))
        assert false_pos < 50  # ~1 % expected


def test_bloom_null_filter_means_unknown() -> None:
    blooms = pa.array([None, fs.build_bloom(fs.bloom_hashes(pa.array([1, 2])))], pa.binary())
    h = fs.bloom_hashes(pa.array([999_999]))
    assert fs.bloom_may_contain(blooms, h)[0]


def test_codec_round_trip_and_versions() -> None:
    t = pa.table({"x": [1, 2], "s": ["a", "b"]})
    stats = fc.with_files(fc.compute_statistics([t]), ["l"], ["ds/table/l.parquet"], [10])
    data = fs.statistics_to_bytes(stats)
    back = fs.statistics_from_bytes(data)
    assert back is not None and back.to_pylist() == stats.to_pylist()
    meta = pq.read_schema(pa.BufferReader(data)).metadata
    assert meta[b"kartoframe.statistics.version"] == b"1"
    newer = stats.replace_schema_metadata({b"kartoframe.statistics.version": b"99"})
    sink = pa.BufferOutputStream()
    pq.write_table(newer, sink)
    assert fs.statistics_from_bytes(sink.getvalue().to_pybytes()) is None  # ignored
    sink = pa.BufferOutputStream()
    pq.write_table(stats.replace_schema_metadata(None), sink)
    with pytest.raises(CorruptMetadataError, match="version"):
        fs.statistics_from_bytes(sink.getvalue().to_pybytes())
    with pytest.raises(CorruptMetadataError):
        fs.statistics_from_bytes(b"not parquet")
    sink = pa.BufferOutputStream()
    pq.write_table(
        pa.table({"label": [1]}).replace_schema_metadata({b"kartoframe.statistics.version": b"1"}),
        sink,
    )
    with pytest.raises(CorruptMetadataError, match="label"):
        fs.statistics_from_bytes(sink.getvalue().to_pybytes())


def _file_stats(n_files: int, rows_each: int, blooms: tuple[str, ...]) -> pa.Table:
    rng = np.random.default_rng(0)
    tables = [
        pa.table({"id": rng.integers(0, 2**40, rows_each), "k": rng.integers(0, 5, rows_each)})
        for _ in range(n_files)
    ]
    stats = fc.compute_statistics(tables, bloom_filter_columns=blooms)
    labels = [f"l{i}" for i in range(n_files)]
    return fc.with_files(stats, labels, [f"ds/table/{lb}.parquet" for lb in labels], [1] * n_files)


def _groups(stats: pa.Table) -> list[int]:
    md = pq.ParquetFile(pa.BufferReader(fs.statistics_to_bytes(stats))).metadata
    return [md.row_group(i).num_rows for i in range(md.num_row_groups)]


def test_statistics_files_split_in_row_groups_only_where_rows_are_large() -> None:
    # 200 files of min/max rows: one row group (each group costs a full reader ~1 ms)
    small = _file_stats(200, 50, ())
    assert _groups(small) == [200]
    # with bloom filters of 20,000 ids a file the rows are large: several groups, so a
    # reader of a few files' rows decodes only their blooms; never more than 32 groups
    heavy = _file_stats(200, 20_000, ("id",))
    groups = _groups(heavy)
    assert sum(groups) == 200 and 4 <= len(groups) <= fs.STATISTICS_MAX_GROUPS
    assert fs.statistics_group_rows(heavy) * heavy.nbytes >= fs.STATISTICS_GROUP_BYTES * 200
    back = fs.statistics_from_bytes(fs.statistics_to_bytes(heavy))
    assert back is not None and back.to_pylist() == heavy.to_pylist()


def test_statistics_ref_parsing() -> None:
    ref = fs.StatisticsRef("ds/_kartoframe/stats/x.statistics.pq", partitions=3)
    assert fs.StatisticsRef.from_dict(ref.to_dict(), "ds") == ref
    assert fs.StatisticsRef.from_dict({"key": 5, "version": 1}, "ds") is None
    assert fs.StatisticsRef.from_dict("junk", "ds") is None
    with pytest.raises(UnsafePathError):
        fs.StatisticsRef.from_dict({"key": "other/x", "version": 1}, "ds")
    assert fs.statistics_key("ds", "2020-01-01T00:00:00+00:00").endswith(".statistics.pq")


def test_conform_fills_unknown_and_casts() -> None:
    old = fc.with_files(
        fc.compute_statistics([pa.table({"x": pa.array([1, 5], pa.int32())})]), ["a"], ["k"], [1]
    )
    schema = pa.schema([("p", pa.string()), ("x", pa.int64()), ("y", pa.string())])
    out = fs.conform_statistics(old, schema, ["p"])
    (row,) = out.to_pylist()
    assert row["min"] == {"x": 1, "y": None}
    assert row["null_count"] == {"x": 0, "y": None}  # y added later: unknown
    assert out.schema.field("min").type.field("x").type == pa.int64()
    assert "p" not in out.schema.field("null_count").type.names


def test_merge_keeps_only_listed_partitions_with_the_same_key() -> None:
    schema = pa.schema([("x", pa.int64())])

    def rows(labels: list[str], keys: list[str], lo: int) -> pa.Table:
        tables = [pa.table({"x": [lo + i]}) for i in range(len(labels))]
        return fc.with_files(fc.compute_statistics(tables), labels, keys, [1] * len(labels))

    old = rows(["a", "b", "c"], ["ka", "kb", "kc"], 0)
    new = rows(["d", "b"], ["kd", "kb"], 10)
    merged = fs.merge_statistics(
        old, [new], {"d": "kd", "b": "kb", "a": "ka", "c": "other"}, schema, []
    )
    got = [(r["label"], r["min"]["x"]) for r in merged.to_pylist()]
    assert got == [("d", 10), ("b", 11), ("a", 0)]  # header order, new rows win, c stale


@pytest.mark.parametrize(
    "arrow_type",
    [pa.int8(), pa.int16(), pa.int32(), pa.uint8(), pa.uint32(), pa.float32(), pa.large_string()],
)
def test_narrow_types_give_the_statistics_of_their_widened_columns(arrow_type) -> None:
    """Statistics are computed on the stored (narrow) type and only the results are cast."""
    if pa.types.is_large_string(arrow_type):
        values = [["b", None, "a"], ["zz", "y" * 300], [None]]
    elif pa.types.is_floating(arrow_type):
        values = [[1.5, None, float("nan")], [-2.25, 7.0], [None]]
    else:
        values = [[3, None, 1], [100, 7], [None]]
    narrow = [pa.table({"c": pa.array(v, arrow_type)}) for v in values]
    wide_type = fs.base_type(arrow_type)
    assert wide_type != arrow_type
    wide = [t.cast(pa.schema([("c", wide_type)])) for t in narrow]
    got = fc.compute_statistics(narrow, bloom_filter_columns=["c"])
    want = fc.compute_statistics(wide, bloom_filter_columns=["c"])
    assert got.schema == want.schema
    assert got.to_pylist() == want.to_pylist()


def test_large_chunks_with_categorical_columns_get_statistics() -> None:
    """Dictionary (categorical) columns are sampled by their values (regression)."""
    n = 40_000
    cat = pa.array(np.array(["b", "a", "c"], dtype=object)[np.arange(n) % 3]).dictionary_encode()
    table = pa.table({"c": cat, "x": np.arange(n)})
    rows = _stats(table.slice(0, 20_000), table.slice(20_000))
    assert [r["value_list"]["c"] for r in rows] == [["a", "b", "c"], ["a", "b", "c"]]
    assert [(r["min"]["c"], r["max"]["c"]) for r in rows] == [("a", "c"), ("a", "c")]
    assert [r["value_list"]["x"] for r in rows] == [None, None]
    assert rows[1]["min"]["x"] == 20_000


@pytest.mark.parametrize("arrow_type", [pa.float64(), pa.float32()])
@pytest.mark.parametrize("seed", range(40))
def test_float_bounds_are_arrows_min_max(arrow_type: pa.DataType, seed: int) -> None:
    """The float bounds (numpy's fmin/fmax over the buffers) are Arrow's ``min_max`` of the
    same column, and the NaN count Arrow's ``is_nan`` count: NaN, nulls, infinities,
    signed zeros, empty and all-null chunks, several chunks. A zero bound's sign is not
    kept: both pick whichever zero their reduction order meets (Arrow keeps the first),
    and -0.0 == 0.0 in every comparison that skips files."""
    import math

    from kartoframe.format.column_kernels import float_bounds, nan_count

    rng = np.random.default_rng(seed)
    pool = [0.0, -0.0, 1.5, -2.5, np.nan, np.inf, -np.inf, None, 1e-300, -1e308]
    chunks = []
    for _ in range(int(rng.integers(1, 4))):
        n = int(rng.integers(0, 12))
        picked = [pool[i] for i in rng.integers(0, len(pool), n)]
        values = np.array([np.nan if v is None else v for v in picked], dtype=np.float64)
        # a null slot holds NaN or a number underneath: neither counts as a NaN
        nulls = np.array([v is None for v in picked], dtype=bool)
        values[nulls & (rng.random(n) < 0.5)] = 7.0
        chunks.append(pa.array(values, type=arrow_type, mask=nulls, from_pandas=False))
    column = pa.chunked_array(chunks, type=arrow_type)
    assert nan_count(column) == (pc.sum(pc.is_nan(column)).as_py() or 0)
    if len(column) == column.null_count:
        return  # the accumulator asks for no bounds then
    got = float_bounds(column)
    assert got is not None
    mm = pc.min_max(column)
    want = (mm["min"].as_py(), mm["max"].as_py())
    for g, w in zip(got, want, strict=True):
        if math.isnan(w):
            assert math.isnan(g), (got, want, column)
        else:
            assert g == w, (got, want, column)
