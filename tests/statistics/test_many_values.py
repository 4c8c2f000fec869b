"""``in`` with many values (a merge's keys): the vectorised statistics tests give the same
answers as testing every value on its own, and stay fast."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pytest

from kartoframe.format import statistics as fs
from kartoframe.format.statistics_compute import compute_statistics, with_files
from kartoframe.plan.predicates import bind
from kartoframe.plan.skipping import skip_by_statistics


def _files(columns: dict[str, list], n_files: int) -> tuple[list[pa.Table], list[str], dict]:
    table = pa.table(columns)
    step = -(-table.num_rows // n_files)
    tables = [table.slice(i * step, step) for i in range(n_files)]
    labels = [f"f{i}" for i in range(n_files)]
    return tables, labels, {lb: f"ds/table/{lb}.parquet" for lb in labels}


@pytest.mark.parametrize(
    "kind", ["int", "float", "string", "date", "nulls", "decimal", "timestamp"]
)
def test_in_with_many_values_keeps_exactly_what_single_values_keep(kind: str) -> None:
    rng = np.random.default_rng(7)
    n = 4_000
    ints = np.sort(rng.integers(0, 100_000, n))
    make = {
        "int": lambda v: [int(x) for x in v],
        "float": lambda v: [float(x) / 7 for x in v],
        "string": lambda v: [f"k{x:06d}" for x in v],
        "date": lambda v: [dt.date(2000, 1, 1) + dt.timedelta(days=int(x) // 50) for x in v],
        "nulls": lambda v: [None if x % 3 == 0 else int(x) for x in v],
        "decimal": lambda v: [__import__("decimal").Decimal(int(x)) / 100 for x in v],
        "timestamp": lambda v: [
            dt.datetime(2020, 1, 1, tzinfo=dt.UTC) + dt.timedelta(seconds=int(x)) for x in v
        ],
    }[kind]
    tables, labels, parts = _files({"k": make(ints)}, 40)
    if kind == "nulls":  # a file of nulls only: its min and max are unknown
        tables[3] = pa.table({"k": pa.nulls(tables[3].num_rows, pa.int64())})
    stats = with_files(compute_statistics(tables), labels, list(parts.values()), [1] * 40)
    probe = make(rng.integers(0, 40_000, 25))  # within the first files only
    if kind == "nulls":  # data with nulls, literals without (every file has a null)
        probe = [int(x) for x in rng.integers(0, 40_000, 25)]
    schema = tables[0].schema if kind != "nulls" else pa.schema([("k", pa.int64())])
    many = skip_by_statistics(bind([[("k", "in", probe)]], schema), labels, parts, stats)
    single: set[str] = set()
    for v in probe:  # ``in`` a list with None also matches nulls, as ``== None`` does
        single |= set(skip_by_statistics(bind([[("k", "==", v)]], schema), labels, parts, stats))
    assert set(many) == single
    assert 0 < len(many) < len(labels)  # the test can fail both ways


def test_bloom_many_hashes_per_filter_equals_one_hash_at_a_time() -> None:
    rng = np.random.default_rng(1)
    blooms = pa.array(
        [fs.build_bloom(fs.bloom_hashes(pa.array(rng.integers(0, 10**9, 200)))) for _ in range(5)]
        + [None],
        pa.binary(),
    )
    for size in (3, 50, 2_000):  # fewer and more hashes than filters
        probe = fs.bloom_hashes(pa.array(rng.integers(0, 10**9, size)))
        want = np.zeros(len(blooms), dtype=bool)
        for i in range(size):
            want |= fs.bloom_may_contain(blooms, probe[i : i + 1])
        assert fs.bloom_may_contain(blooms, probe).tolist() == want.tolist()
    members = fs.bloom_hashes(pa.array(rng.integers(0, 10**9, 1)))
    assert fs.bloom_may_contain(blooms[:1], np.concatenate([members] * 10)).tolist() in (
        [True],
        [False],
    )
