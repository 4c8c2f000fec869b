"""The external sort's pure parts: merging sorted runs (``merge_sorted``) equals a stable
sort of all the rows, and a z-order computed a part at a time (``DistinctValues`` of every
part, ``zorder_codes``) equals the z-order of the whole table.

Rows carry a unique ``row`` column, so "equal" means the same rows in the same order,
ties included. Data: nulls, NaN, -0.0 beside 0.0, strings, many ties; runs cut into
tables of random lengths, with empty tables and empty runs.
"""

from __future__ import annotations

import decimal
import itertools

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kartoframe.format.clustering import DistinctValues, sort_table, zorder_codes, zorder_indices
from kartoframe.format.sorted_merge import merge_sorted

#: single numeric keys (with and without nulls, NaN, -0.0, ties) take the merge's binary
#: search path where a round's tables have no nulls; the others the general one
KEY_SETS = [["a"], ["x"], ["c"], ["f"], ["t"], ["a", "s"], ["s", "x", "a"], ["x", "row"]]


def _table(seed: int, n: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, int(rng.integers(1, 30)), n).astype("float64")
    x[rng.random(n) < 0.05] = np.nan
    x[rng.random(n) < 0.05] = -0.0
    x[rng.random(n) < 0.05] = 0.0
    return pa.table(
        {
            "a": pa.array(rng.integers(0, 5, n), mask=rng.random(n) < 0.1),
            "x": pa.array(x, mask=rng.random(n) < 0.05),
            "s": pa.array([f"v{v}" for v in rng.integers(0, 7, n)], pa.string()),
            "row": np.arange(n),
            "c": rng.integers(0, 4, n).astype(np.uint64),
            "f": np.where(rng.random(n) < 0.1, np.nan, rng.integers(-2, 3, n) * 0.0 - 0.0),
            "t": pa.array(
                rng.integers(0, 50, n) * 10**6,
                pa.timestamp("us", tz="UTC"),
                mask=rng.random(n) < 0.1,
            ),
            "d": pa.array(rng.integers(0, 9, n), pa.int32()).cast(pa.date32()),
            "b": pa.array(rng.random(n) < 0.5, mask=rng.random(n) < 0.1),
            "m": pa.array(
                [decimal.Decimal(int(v)) / 4 for v in rng.integers(0, 9, n)], pa.decimal128(6, 2)
            ),
        }
    )


def _runs(table: pa.Table, keys: list[str], seed: int, k: int) -> list[list[pa.Table]]:
    """``table`` cut into ``k`` consecutive runs, each sorted and cut into tables."""
    rng = np.random.default_rng(seed)
    n = table.num_rows
    bounds = [0, *sorted(rng.integers(0, n + 1, k - 1).tolist()), n]
    runs = []
    for i in range(k):
        run = sort_table(table.slice(bounds[i], bounds[i + 1] - bounds[i]), keys, "linear")
        step = int(rng.integers(1, 40))
        tables = [run.slice(s, step) for s in range(0, run.num_rows, step)]
        if rng.random() < 0.3:
            tables.insert(int(rng.integers(0, len(tables) + 1)), run.slice(0, 0))
        runs.append(tables)
    return runs


@settings(max_examples=120)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(0, 400),
    k=st.integers(1, 7),
    keys=st.sampled_from(KEY_SETS),
)
def test_merging_sorted_runs_is_a_stable_sort_of_all_rows(
    seed: int, n: int, k: int, keys: list[str]
) -> None:
    table = _table(seed, n)
    merged = list(merge_sorted(_runs(table, keys, seed, k), keys))
    got = pa.concat_tables(merged) if merged else table.slice(0, 0)
    want = sort_table(table, keys, "linear")
    assert got.column("row").to_pylist() == want.column("row").to_pylist()
    assert got.schema == table.schema
    assert all(t.num_rows for t in merged)  # no empty tables come out


def test_a_merge_holds_one_table_of_each_run_at_a_time() -> None:
    """The merge pulls lazily: after the first table out, each run has given at most two
    of its tables (the one being emitted and the next), never all of them."""
    table = _table(7, 3000)
    runs = _runs(table, ["a"], 7, 4)
    pulled = [0] * len(runs)

    def counted(i: int):
        for t in runs[i]:
            pulled[i] += 1
            yield t

    out = merge_sorted([counted(i) for i in range(len(runs))], ["a"])
    next(out)
    assert all(p <= 2 for p in pulled), pulled
    assert sum(len(r) for r in runs) > 2 * len(runs)


def test_merging_no_runs_or_only_empty_ones_yields_nothing() -> None:
    assert list(merge_sorted([], ["a"])) == []
    empty = _table(0, 0)
    assert list(merge_sorted([[empty], [], [empty, empty]], ["a"])) == []


@settings(max_examples=80)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(0, 300),
    parts=st.integers(1, 5),
    columns=st.sampled_from(
        [["x"], ["a", "x"], ["s", "a", "x"], ["x", "a", "s", "row"], ["t", "d"], ["b", "m", "t"]]
    ),
)
def test_zorder_codes_of_parts_equal_those_of_the_whole(
    seed: int, n: int, parts: int, columns: list[str]
) -> None:
    table = _table(seed, n)
    rng = np.random.default_rng(seed)
    bounds = [0, *sorted(rng.integers(0, n + 1, parts - 1).tolist()), n]
    pieces = [table.slice(b, e - b) for b, e in itertools.pairwise(bounds)]
    distinct = [
        DistinctValues.union_of([DistinctValues.of(p.column(c)) for p in pieces]) for c in columns
    ]
    codes = np.concatenate([zorder_codes(p, columns, distinct) for p in pieces])
    whole = zorder_codes(table, columns, [DistinctValues.of(table.column(c)) for c in columns])
    assert (codes == whole).all()
    assert (codes == zorder_codes(table, columns)).all()  # the whole table's own ranks
    assert (np.argsort(codes, kind="stable") == zorder_indices(table, columns)).all()


def test_zorder_ranks_tie_zero_and_negative_zero_and_put_nulls_last() -> None:
    col = pa.array([0.0, -0.0, float("nan"), None, 1.0, -1.0])
    ranks, high = DistinctValues.of(col).ranks(col)
    assert ranks.tolist() == [1, 1, 3, 4, 2, 0]
    assert high == 4


def test_zorder_ranks_refuse_a_value_the_distinct_values_do_not_hold() -> None:
    with pytest.raises(ValueError, match="distinct values do not hold"):
        DistinctValues.of(pa.array([1, 2])).ranks(pa.array([3]))
    with pytest.raises(ValueError, match="distinct values do not hold"):
        DistinctValues.of(pa.array([0.5, None])).ranks(pa.array([None, 0.25]))
    with pytest.raises(ValueError, match="distinct values do not hold"):
        DistinctValues.of(pa.array(["a", "b"])).ranks(pa.array(["c"]))
