"""Statistics of many small files computed at once (``grouped_slice_statistics``, what a
write of many tiny partitions uses) equal each file's ``slice_statistics``: for every
column type with statistics, nulls, NaNs (alone in a file, too), signed zeros, long
strings, narrow stored types, dictionaries, value-list candidates and bloom filters, and
any grouping of the rows.
"""

from __future__ import annotations

import datetime
import decimal

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from kartoframe.format.statistics import STRING_STATS_MAX_BYTES
from kartoframe.format.statistics_compute import (
    assemble_statistics,
    grouped_slice_statistics,
    slice_statistics,
)


def _table(seed: int, n: int, distinct: int) -> pa.Table:
    rng = np.random.default_rng(seed)

    def mask(p: float = 0.15) -> np.ndarray:
        return rng.random(n) < p

    long = "x" * (STRING_STATS_MAX_BYTES + 5)
    words = np.array([f"w{k:04d}" for k in range(distinct)] + [long + "a", long + "b\u00e9"])
    floats = rng.choice([0.0, -0.0, 1.5, -2.5, np.nan, np.inf], n)
    stamps = rng.integers(0, 10**6, n) * 1000
    return pa.table(
        {
            "i": pa.array(rng.integers(0, distinct, n), mask=mask()),
            "small": pa.array(rng.integers(-3, 3, n), type=pa.int16()),
            "u": pa.array(rng.integers(0, 9, n), type=pa.uint32()),
            "f": pa.array(floats, mask=mask(0.05)),
            "f32": pa.array(floats.astype(np.float32)),
            "b": pa.array(rng.random(n) < 0.5, mask=mask()),
            "s": pa.array(words[rng.integers(0, len(words), n)], type=pa.large_string()),
            "bin": pa.array([w.encode() for w in words[rng.integers(0, len(words), n)]]),
            "cat": pa.array(words[rng.integers(0, 3, n)]).dictionary_encode(),
            "d": pa.array(rng.integers(0, distinct, n).astype("datetime64[D]")),
            "ts": pa.array(stamps, type=pa.timestamp("ns", tz="Europe/Berlin"), mask=mask()),
            "dec": pa.array(
                [decimal.Decimal(int(k)) / 4 for k in rng.integers(-50, 50, n)],
                type=pa.decimal128(9, 2),
            ),
            "when": pa.array([datetime.date(2024, 1, 1)] * n),
            "allnull": pa.nulls(n, type=pa.int64()),
        }
    )


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    groups=st.integers(1, 40),
    rows=st.integers(1, 6),
    distinct=st.integers(1, 30),
    blooms=st.sampled_from([[], ["i", "s"], ["ts", "f"]]),
    candidates=st.sampled_from([[], ["i", "s", "d", "cat"], ["small", "u", "bin"]]),
)
def test_grouped_equals_each_groups_slice(
    seed: int,
    groups: int,
    rows: int,
    distinct: int,
    blooms: list[str],
    candidates: list[str],
) -> None:
    rng = np.random.default_rng(seed)
    n = groups * rows + int(rng.integers(0, groups))
    ids = np.concatenate([np.arange(groups), rng.integers(0, groups, n - groups)])
    rng.shuffle(ids)
    ids = ids.astype(np.int32)
    table = _table(seed, n, distinct)
    got = grouped_slice_statistics(
        table, ids, groups, value_list_columns=candidates, bloom_filter_columns=blooms
    )
    want = [
        slice_statistics(
            table.take(pa.array(np.flatnonzero(ids == g))),
            value_list_columns=candidates,
            bloom_filter_columns=blooms,
        )
        for g in range(groups)
    ]
    assert len(got) == groups
    for g, (a, b) in enumerate(zip(got, want, strict=True)):
        assert a.rows == b.rows == int((ids == g).sum())
        assert list(a.columns) == list(b.columns)
        for name in b.columns:
            assert a.columns[name] == b.columns[name], (g, name)
    assert assemble_statistics(got).equals(assemble_statistics(want))


def test_a_file_of_nan_and_nulls_has_no_bounds() -> None:
    table = pa.table({"f": pa.array([np.nan, None, 1.0, np.nan], type=pa.float64())})
    ids = np.array([0, 0, 1, 0], dtype=np.int32)
    first, second = grouped_slice_statistics(table, ids, 2)
    assert (first.columns["f"].low, first.columns["f"].high, first.columns["f"].nulls) == (
        None,
        None,
        3,
    )
    assert (second.columns["f"].low, second.columns["f"].high) == (1.0, 1.0)
