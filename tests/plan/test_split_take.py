"""plan_partitions gathers low-cardinality strings through a dictionary: same result."""

from __future__ import annotations

import dataclasses
import datetime

import numpy as np
import pyarrow as pa
import pytest

import kartoframe.plan.partition_plan as partition_plan
from kartoframe.errors import InvalidInputError
from kartoframe.plan.partition_plan import _gather_source, plan_one_partition, plan_partitions


@pytest.mark.parametrize("threads", [False, True], ids=["serial", "threads"])
@pytest.mark.parametrize("t", [pa.string(), pa.large_string()])
@pytest.mark.parametrize("distinct", [3, 1000, 50_000])
def test_group_rows_equal_arrow_take(
    t: pa.DataType, distinct: int, threads: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if threads:  # plan column by column on threads, as tables of a million rows are
        monkeypatch.setattr(partition_plan, "PARALLEL_PLAN_ROWS", 1)
    rng = np.random.default_rng(distinct)
    n = 120_000
    words = np.array([f"w{i:05d}" for i in range(distinct)], dtype=object)
    values = words[rng.integers(0, distinct, n)].tolist()
    for i in rng.integers(0, n, 500):
        values[i] = None
    table = pa.table({"p": rng.integers(0, 5, n), "s": pa.array(values, type=t), "i": np.arange(n)})
    body = table.drop_columns(["p"])
    encoded = pa.types.is_dictionary(_gather_source(body).schema.field("s").type)
    assert encoded == (distinct <= 1000)
    plan = plan_partitions(table, ["p"], file_uuid="f")
    df = table.to_pandas()
    assert len(plan) == 5
    for g in range(len(plan)):
        (p,) = plan.values[g]
        want = pa.Table.from_pandas(df[df["p"] == p].drop(columns="p"), preserve_index=False)
        part = plan.rows(g)
        assert part.schema.field("s").type == t
        assert part.to_pandas().equals(want.to_pandas())


def test_split_with_a_low_cardinality_string_column() -> None:
    rng = np.random.default_rng(1)
    n = 100_000
    table = pa.table(
        {
            "p": pa.array(rng.integers(0, 7, n)),
            "channel": pa.array(
                np.array(["store", "online", "app", None], dtype=object)[rng.integers(0, 4, n)],
                type=pa.large_string(),
            ),
            "x": pa.array(np.arange(n)),
        }
    )
    plan = plan_partitions(table, ["p"], file_uuid="f")
    df = table.to_pandas()
    assert len(plan) == 7
    for g, (value,) in enumerate(plan.values):
        want = df[df["p"] == value].drop(columns="p").reset_index(drop=True)
        rows = plan.rows(g)
        assert rows.schema.field("channel").type == pa.large_string()
        assert rows.to_pandas().equals(want)


def test_multi_chunk_columns_are_gathered_like_single_chunk_ones() -> None:
    """pandas.read_parquet returns string columns in many chunks (one per row group)."""
    rng = np.random.default_rng(3)
    n = 50_000
    parts = rng.integers(0, 9, n)
    words = np.array(["a", "bb", "ccc"], dtype=object)[rng.integers(0, 3, n)]
    single = pa.table({"p": parts, "s": pa.array(words, pa.large_string()), "i": np.arange(n)})
    chunked = pa.Table.from_batches(single.to_batches(max_chunksize=4_000))
    assert chunked["s"].num_chunks > 1
    a = plan_partitions(single, ["p"], file_uuid="f")
    b = plan_partitions(chunked, ["p"], file_uuid="f")
    assert a.labels == b.labels
    for g in range(len(a)):
        assert b.rows(g).equals(a.rows(g))
        assert b.rows(g)["s"].num_chunks == 1


@pytest.mark.parametrize("rows", [4, 40_000], ids=["small", "large"])
@pytest.mark.parametrize("threads", [False, True], ids=["serial", "threads"])
def test_multi_chunk_input_keeps_its_schema_metadata(
    rows: int, threads: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The files of a multi-chunk table (what optimize and pandas.read_parquet give) kept
    no pandas metadata: combining the chunks rebuilt the table without it. A large table
    is gathered from a prepared source (column by column, on threads if asked), with
    and without a dictionary-encoded column."""
    if threads:
        monkeypatch.setattr(partition_plan, "PARALLEL_PLAN_ROWS", 1)
    half = rows // 2
    chunked = pa.chunked_array([pa.array(np.arange(half)), pa.array(np.arange(half, rows))])
    few = pa.array(np.array(["a", "b"], dtype=object)[np.arange(rows) % 2], pa.large_string())
    parts = np.repeat([1, 2], half)
    for extra in ({}, {"s": few}):
        table = pa.table({"p": parts, "v": chunked, **extra}).replace_schema_metadata({"k": "v"})
        plan = plan_partitions(table, ["p"], file_uuid="f")
        for i in range(len(plan)):
            rows_i = plan.rows(i)
            assert rows_i.schema.metadata == {b"k": b"v"}
            assert rows_i["v"].to_pylist() == list(range(i * half, (i + 1) * half))


def test_one_known_partition_plans_like_a_table_of_that_partition() -> None:
    """An optimize unit is written as one partition without its partition column: the same
    label, values and rows as grouping a table that holds the column."""
    body = pa.table({"v": [3, 1, 2], "s": ["x", "y", "z"]})
    day = datetime.date(2024, 5, 1)
    full = body.append_column("p", pa.array(["DE"] * 3)).append_column("d", pa.array([day] * 3))
    grouped = plan_partitions(full, ["p", "d"], file_uuid="f", sort_by=["v"])
    one = plan_one_partition(body, ["p", "d"], ["DE", day], file_uuid="f", sort_by=["v"])
    assert one.labels == grouped.labels == ("p=DE/d=2024-05-01/f",)
    assert one.values == grouped.values
    assert one.rows(0).equals(grouped.rows(0))
    assert one.rows(0)["v"].to_pylist() == [1, 2, 3]
    with pytest.raises(InvalidInputError, match="1 partition values"):
        plan_one_partition(body, ["p", "d"], ["DE"], file_uuid="f")


@pytest.mark.parametrize("threads", [False, True], ids=["serial", "threads"])
@pytest.mark.parametrize("distinct", [3, 300, 60_000], ids=["few", "some", "many"])
def test_value_codes_number_equal_keys_equally(
    distinct: int, threads: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Equal key tuples get equal codes, different ones different codes, all below the
    count; few possible codes are 2 bytes a row. Four columns of 60,000 distinct values
    make 1.3e19 possible codes: more than int64 holds, so they are renumbered instead of
    overflowing."""
    if threads:
        monkeypatch.setattr(partition_plan, "PARALLEL_PLAN_ROWS", 1)
    rng = np.random.default_rng(distinct)
    n = 120_000
    columns = {c: rng.integers(0, distinct, n) for c in "abcd"}
    columns["s"] = pa.array([f"v{i}" for i in rng.integers(0, 2, n)], pa.large_string())
    columns["one"] = np.full(n, 7)  # a single value: contributes nothing to the codes
    table = pa.table(columns)
    for keys in (["s"], ["a", "s"], ["a", "b", "c", "d"], ["one", "a"], ["one", "s", "one"]):
        codes, count = partition_plan.value_codes(table, keys)
        tuples = list(zip(*(table[k].to_pylist() for k in keys), strict=True))
        first: dict[tuple[object, ...], int] = {}
        assert all(first.setdefault(t, c) == c for t, c in zip(tuples, codes.tolist()))
        assert len(set(codes.tolist())) == len(first)
        assert int(codes.min()) >= 0 and int(codes.max()) < count
        if count <= 1 << 16:
            assert codes.dtype == np.uint16
    codes, count = partition_plan.value_codes(table, [])  # no key: one code for every row
    assert count == 1 and codes.tolist() == [0] * n and codes.dtype == np.uint16


@pytest.mark.parametrize(
    "keys",
    [["a"], ["a", "b"], ["big"]],
    ids=["one key", "two keys", "codes past 65,536"],
)
def test_group_ids_name_the_group_of_every_row(keys: list[str]) -> None:
    """Each row's group from the kept key codes is the group whose rows hold it (the
    plan's order inverted), for dense and for renumbered codes."""
    rng = np.random.default_rng(11)
    n = 5_000
    table = pa.table(
        {
            "a": pa.array(rng.integers(0, 7, n)),
            "b": pa.array([f"s{v}" for v in rng.integers(0, 5, n)]),
            "big": pa.array(rng.integers(0, 70_000, n) * 1_000_003),
            "x": pa.array(np.arange(n)),
        }
    )
    plan = plan_partitions(table, keys, file_uuid="u")
    assert plan.keys is not None
    ids = plan.group_ids()
    assert ids.dtype == np.int32
    inverted = np.full(n, -1)
    for g in range(len(plan)):
        rows = plan.order[plan.starts[g] : plan.ends[g]]
        inverted[rows] = g
        assert np.array_equal(plan.rows(g)["x"].to_numpy(), np.sort(rows))
    assert np.array_equal(ids, inverted)
    # the same plan without the kept codes gives the same groups
    assert np.array_equal(dataclasses.replace(plan, keys=None).group_ids(), ids)


@pytest.mark.parametrize("threads", [False, True], ids=["serial", "threads"])
def test_group_keys_are_the_values_of_their_first_rows(
    threads: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The key values of each group (read from the key columns' dictionaries) are those
    of the group's rows, for every kind of partition column, in order of appearance."""
    if threads:
        monkeypatch.setattr(partition_plan, "PARALLEL_PLAN_ROWS", 1)
    rng = np.random.default_rng(5)
    n = 40_000
    day = datetime.date(2024, 1, 1)
    pick = rng.integers(0, 3, n)
    columns = {
        "i": pa.array(pick - 1, pa.int16()),
        "s": pa.array(["x", "ß/ü", "a b"]).take(pa.array(pick)),
        "cat": pa.array(["lo", "mid", "hi"]).take(pa.array(pick)).dictionary_encode(),
        "d": pa.array([day + datetime.timedelta(days=int(v)) for v in pick], pa.date32()),
        "ts": pa.array(pick * 3_600_000_000, pa.timestamp("us", tz="UTC")),
        "b": pa.array(pick == 1),
        "x": pa.array(np.arange(n)),
    }
    table = pa.table(columns)
    for keys in (["i"], ["s", "cat"], ["d", "ts", "b"], ["cat", "i", "s", "d"]):
        plan = plan_partitions(table.slice(7), keys, file_uuid="u")  # an offset slice
        firsts = []
        for g in range(len(plan)):
            rows = plan.rows(g)["x"]  # the rows' positions in ``table``
            for k, v in zip(keys, plan.values[g], strict=True):
                assert table[k].take(rows).to_pylist() == [v] * len(rows), (keys, k)
            firsts.append(int(rows[0].as_py()))
        assert firsts == sorted(firsts)  # groups in order of first appearance
