"""Per-column kernels of the write's statistics (pure): bounds, NaN counts and distinct
values of one column of one file, in numpy or Arrow, whichever is faster for it.

:mod:`kartoframe.format.statistics_compute` assembles them into per-file statistics.
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kartoframe.format.statistics import bloom_hashes

__all__ = [
    "distinct_values",
    "distinct_hashes",
    "float_bounds",
    "nan_count",
    "sorted_unique",
    "used_entries",
]


def float_bounds(values: pa.Array | pa.ChunkedArray) -> tuple[float, float] | None:
    """The smallest and largest non-NaN, non-null value of a float32 or float64 column, by
    numpy's ``fmin``/``fmax`` (NaN if there is none); None for any other type.

    Arrow's ``min_max`` takes about 100 µs for 25,000 doubles (the integers' kernel: 8 µs);
    the two reductions over the buffer take 7 µs, with the same values (NaN skipped). A
    zero bound may differ in sign: each picks whichever zero its reduction order meets,
    and -0.0 == 0.0 in every comparison that skips files.
    """
    if not (pa.types.is_float32(values.type) or pa.types.is_float64(values.type)):
        return None
    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    lo = hi = math.nan
    for chunk in chunks:
        if len(chunk) == chunk.null_count:
            continue
        data = chunk.to_numpy(zero_copy_only=False)  # nulls become NaN, which is skipped
        lo = float(np.fmin(lo, np.fmin.reduce(data)))
        hi = float(np.fmax(hi, np.fmax.reduce(data)))
    return lo, hi


def nan_count(values: pa.ChunkedArray) -> int:
    """NaNs of a float column, nulls not counted (numpy: 7 µs for 25,000 doubles, Arrow's
    ``is_nan`` and ``sum`` 32 µs).
    """
    count = 0
    for chunk in values.chunks:
        if len(chunk) > chunk.null_count:  # nulls become NaN in the copy: taken off
            data = chunk.to_numpy(zero_copy_only=False)
            count += int(np.count_nonzero(np.isnan(data))) - chunk.null_count
    return count


def sorted_unique(hashes: np.ndarray) -> np.ndarray:
    """``hashes`` sorted in place, repeats dropped."""
    hashes.sort()
    if len(hashes) < 2:
        return hashes
    first = np.empty(len(hashes), dtype=bool)
    first[0] = True
    np.not_equal(hashes[1:], hashes[:-1], out=first[1:])
    return hashes[first]


def distinct_hashes(col: pa.ChunkedArray) -> np.ndarray:
    """The bloom hashes of the distinct values of an integer column (nulls left out).

    A bloom column that is no value-list candidate has many distinct values (ids): a
    hash table of them (``pc.unique``) takes about 160 bytes per value, and was the
    largest allocation of a write. splitmix64 is a bijection of 64-bit integers, so the
    distinct hashes of all rows are the hashes of the distinct values: the rows' hashes
    (8 bytes a row) sorted in place, and their repeats dropped. Same
    filter, a fraction of the memory, and faster on many distinct values.
    """
    return sorted_unique(bloom_hashes(col.drop_null().combine_chunks() if col.null_count else col))


def distinct_values(col: pa.ChunkedArray | pa.Array, t: pa.DataType) -> pa.Array:
    """The non-null distinct values of a column, with type ``t``."""
    uniq = pc.unique(col).drop_null()
    return uniq.cast(t) if uniq.type != t else uniq


def used_entries(col: pa.ChunkedArray, t: pa.DataType) -> pa.ChunkedArray:
    """The dictionary entries a dictionary-encoded column's rows use, with type ``t``.

    A 25,000-row file of 4 distinct strings: counting its codes takes about 20 µs,
    hashing its strings about 200 µs.
    """
    parts = []
    for chunk in col.chunks:
        codes = chunk.indices.drop_null() if chunk.indices.null_count else chunk.indices
        n = len(chunk.dictionary)
        if n <= 4 * len(codes):
            used = pa.array(np.flatnonzero(np.bincount(codes.to_numpy(), minlength=n)))
        else:  # a large dictionary (a categorical's), few rows
            used = pc.unique(codes)
        entries = chunk.dictionary.take(used)
        parts.append(entries.cast(t) if entries.type != t else entries)
    return pa.chunked_array(parts, type=t)
