"""Statistics read from dictionary-encoded strings (the write kernel gathers
low-cardinality strings so) and from timestamps of other units than the statistics'
microseconds equal the statistics of the decoded, cast column; and the files a chunk
writes carry the statistics of their rows as read back."""

from __future__ import annotations

import datetime
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kartoframe as kf
from kartoframe.execution.chunks import write_chunk
from kartoframe.format.statistics import STRING_STATS_MAX_BYTES
from kartoframe.format.statistics_compute import assemble_statistics, slice_statistics

LONG = "x" * (STRING_STATS_MAX_BYTES + 3)
WORDS = ["b", "a", "", "é", LONG + "z", LONG + "a", "c"]
UNITS = ["s", "ms", "us", "ns"]


def _stats(table: pa.Table, **kw: Any) -> pa.Table:
    return assemble_statistics([slice_statistics(table, **kw)])


def _decoded(table: pa.Table) -> pa.Table:
    """The table with every column cast to its statistics type first (as before)."""
    cols = []
    for col in table.columns:
        t = col.type
        if pa.types.is_dictionary(t):
            t = pa.string()
        elif pa.types.is_timestamp(t):
            t = pa.timestamp("us", tz=t.tz)
        cols.append(col.cast(t))
    return pa.Table.from_arrays(cols, names=table.column_names)


@settings(max_examples=80, deadline=None)
@given(
    codes=st.lists(st.one_of(st.none(), st.integers(0, len(WORDS) - 1)), max_size=60),
    large=st.booleans(),
    unit=st.sampled_from(UNITS),
    tz=st.sampled_from([None, "UTC", "Europe/Berlin"]),
    micros=st.lists(st.one_of(st.none(), st.integers(-(10**15), 10**15)), min_size=60, max_size=60),
    candidate=st.booleans(),
)
def test_encoded_strings_and_timestamps_give_the_decoded_statistics(
    codes: list[int | None],
    large: bool,
    unit: str,
    tz: str | None,
    micros: list[int | None],
    candidate: bool,
) -> None:
    n = len(codes)
    words = pa.array(WORDS, pa.large_string() if large else pa.string())
    # entries the rows do not use must not count (a file's rows of the chunk's dictionary)
    strings = pa.DictionaryArray.from_arrays(pa.array(codes, pa.int32()), words)
    per_unit = {"s": 1_000_000, "ms": 1_000, "us": 1, "ns": 1}
    ticks = [None if m is None else m // per_unit[unit] for m in micros[:n]]
    if unit == "ns":  # whole microseconds, as a write keeps them
        ticks = [None if v is None else v * 1_000 for v in ticks]
    stamps = pa.array(ticks, pa.timestamp(unit, tz=tz))
    table = pa.table({"s": strings, "t": stamps})
    columns = ["s", "t"] if candidate else []
    got = _stats(table, value_list_columns=columns, bloom_filter_columns=["s"])
    want = _stats(_decoded(table), value_list_columns=columns, bloom_filter_columns=["s"])
    assert got.equals(want)


def test_a_dictionary_with_null_entries_is_decoded() -> None:
    strings = pa.DictionaryArray.from_arrays(
        pa.array([0, 1, 1, 2], pa.int32()), pa.array(["a", None, "c"])
    )
    table = pa.table({"s": strings})
    got = _stats(table, value_list_columns=["s"])
    assert got.equals(_stats(_decoded(table), value_list_columns=["s"]))
    assert got["null_count"].to_pylist() == [{"s": 2}]


@pytest.mark.parametrize("sort", [False, True], ids=["input order", "sorted"])
def test_written_files_carry_the_statistics_of_their_rows(tmp_path: Any, sort: bool) -> None:
    """A chunk large enough to gather its low-cardinality strings through a dictionary:
    each file's statistics are those of the file's rows as read back."""
    rng = np.random.default_rng(5)
    n = 60_000
    channel = np.array(["store", "online", None, "app", LONG], dtype=object)
    start = datetime.datetime(2024, 1, 1)
    table = pa.table(
        {
            "p": rng.integers(0, 6, n),
            "channel": pa.array(channel[rng.integers(0, 5, n)], pa.large_string()),
            "t": pa.array(
                [start + datetime.timedelta(seconds=int(s)) for s in rng.integers(0, 10**7, n)],
                pa.timestamp("ns"),
            ),
            "x": rng.random(n),
        }
    )
    result = write_chunk(
        kf.Store(f"file://{tmp_path}"),
        "u",
        table,
        partition_on=["p"],
        sort_partitions_by=["x"] if sort else (),
    )
    assert len(result.partitions) == 6
    for w in result.partitions:
        stored = pq.read_table(tmp_path / w.key)
        want = _stats(stored, value_list_columns=["channel"])
        row = w.statistics
        assert row is not None and not isinstance(row, pa.Table)
        got = row.one()
        for group in ("null_count", "min", "max", "value_list"):
            assert got[group].to_pylist() == want[group].to_pylist(), group
        assert pc.sum(stored["channel"].is_null()).as_py() > 0
