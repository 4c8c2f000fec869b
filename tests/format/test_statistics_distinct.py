"""The bloom filter of a many-valued integer column is built from its sorted distinct
hashes (no hash table of the values): the filter must be the one built from the
distinct values, for every integer type, with nulls and several chunks."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from kartoframe.format.column_kernels import distinct_hashes, distinct_values
from kartoframe.format.statistics import bloom_hashes, build_bloom
from kartoframe.format.statistics_compute import slice_statistics


@pytest.mark.parametrize(
    "t", [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint32(), pa.uint64()]
)
@pytest.mark.parametrize("n", [0, 1, 2, 7, 5_000, 70_000])
def test_the_filter_equals_the_one_of_the_distinct_values(t: pa.DataType, n: int) -> None:
    rng = np.random.default_rng(n)
    bits = t.bit_width - 1 if pa.types.is_signed_integer(t) else t.bit_width
    hi = min(2**bits - 1, 10**6)
    lo = -hi if pa.types.is_signed_integer(t) else 0
    values = rng.integers(lo, hi, n)
    nulls = rng.random(n) < 0.1
    half = n // 2
    col = pa.chunked_array(
        [
            pa.array(values[:half], type=t, mask=nulls[:half]),
            pa.array(values[half:], type=t, mask=nulls[half:]),
        ],
        type=t,
    )
    want = build_bloom(bloom_hashes(distinct_values(col, t)))
    assert build_bloom(distinct_hashes(col)) == want
    hashes = distinct_hashes(col)
    assert len(hashes) == len(distinct_values(col, t))
    assert (np.diff(hashes.astype(np.float64)) > 0).all() if len(hashes) > 1 else True


def test_slice_statistics_of_an_id_column_with_a_bloom() -> None:
    ids = pa.table({"id": np.arange(100_000, dtype=np.int64)[::-1]})
    stats = slice_statistics(ids, bloom_filter_columns=["id"]).columns["id"]
    assert stats.bloom == build_bloom(bloom_hashes(pa.array(np.arange(100_000))))
    assert (stats.low, stats.high) == (0, 99_999)
