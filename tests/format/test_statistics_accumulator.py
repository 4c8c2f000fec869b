"""Statistics of a file added row group by row group (``SliceAccumulator``, what the
streaming writer of ``optimize`` uses) equal the statistics of all its rows at once, for
every split of the rows, column type and mix of nulls, NaNs, long strings, value-list
candidates and bloom filters; and with the value-list candidates judged on the first
row group only (the streaming writer's sample), the assembled statistics are the same.
"""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from kartoframe.format.statistics import STRING_STATS_MAX_BYTES, VALUE_LIST_MAX
from kartoframe.format.statistics_compute import (
    SliceAccumulator,
    assemble_statistics,
    slice_statistics,
    value_list_candidates,
)

BLOOMS = ["big", "s", "i"]


def _table(seed: int, n: int, distinct: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    nulls = rng.random(n) < 0.15
    long = "x" * (STRING_STATS_MAX_BYTES + 5)
    words = np.array([f"w{k:04d}" for k in range(distinct)] + [long + "a", long + "b"])
    floats = rng.random(n)
    floats[rng.random(n) < 0.1] = np.nan
    return pa.table(
        {
            "i": pa.array(rng.integers(0, distinct, n), mask=nulls),
            "big": pa.array(rng.integers(-(10**12), 10**12, n)),
            "small": pa.array(rng.integers(0, 3, n), type=pa.int8()),
            "s": pa.array(words[rng.integers(0, len(words) if seed % 2 else distinct, n)]),
            "f": pa.array(floats, mask=rng.random(n) < 0.05),
            "d": pa.array(rng.integers(0, distinct, n).astype("datetime64[D]")),
            "allnull": pa.nulls(n, type=pa.int64()),
        }
    )


def _parts(table: pa.Table, cuts: list[int]) -> list[pa.Table]:
    points = sorted({0, table.num_rows, *(c % (table.num_rows + 1) for c in cuts)})
    return [table.slice(a, b - a) for a, b in itertools.pairwise(points)]


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    n=st.integers(0, 3 * VALUE_LIST_MAX),
    distinct=st.integers(1, 2 * VALUE_LIST_MAX),
    cuts=st.lists(st.integers(0, 10**6), max_size=6),
)
def test_parts_add_up_to_the_whole(seed: int, n: int, distinct: int, cuts: list[int]) -> None:
    table = _table(seed, n, distinct)
    candidates = value_list_candidates(table)
    whole = slice_statistics(table, value_list_columns=candidates, bloom_filter_columns=BLOOMS)
    acc = SliceAccumulator(table.schema, value_list_columns=candidates, bloom_filter_columns=BLOOMS)
    for part in _parts(table, cuts):
        acc.add(part)
    parts = acc.finish()
    assert parts.rows == whole.rows == n
    assert parts.columns.keys() == whole.columns.keys()
    for name, want in whole.columns.items():
        got = parts.columns[name]
        assert (got.low, got.high, got.nulls, got.values, got.bloom) == (
            want.low,
            want.high,
            want.nulls,
            want.values,
            want.bloom,
        ), name
        assert (got.distinct is None) == (want.distinct is None), name
        if want.distinct is not None:
            assert got.distinct.to_pylist() == want.distinct.to_pylist(), name
    assert assemble_statistics([parts]).equals(assemble_statistics([whole]))
    # the streaming writer judges the candidates on its first row group: same result
    pieces = _parts(table, cuts)
    sample = SliceAccumulator(
        table.schema,
        value_list_columns=value_list_candidates(pieces[0]) if pieces else candidates,
        bloom_filter_columns=BLOOMS,
    )
    for part in pieces:
        sample.add(part)
    assert assemble_statistics([sample.finish()]).equals(assemble_statistics([whole]))
