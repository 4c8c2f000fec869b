"""A filtered local scan reads small files whole and filters their rows; a larger file only
if its footer statistics (or partition values) prove the filter for every row (then without
the filter). Either way it returns the dataset scan's rows.
"""

from __future__ import annotations

import datetime as dt
import itertools
import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kartoframe as kf
from kartoframe.format.value_ranges import ValueRange
from kartoframe.plan.predicates import bind, covering_ranges, literal_range, to_expression
from kartoframe.storage import local_scan, parquet
from kartoframe.storage.local_scan import read_local_files

SCHEMA = pa.schema(
    [
        ("p", pa.string()),
        ("k", pa.int64()),
        ("s", pa.string()),
        ("d", pa.date32()),
        ("f", pa.float64()),
        ("n", pa.int64()),
        ("u", pa.uint8()),
    ]
)
D = [dt.date(2024, 1, d) for d in (1, 2, 3)]


def _file(rng: np.random.Generator, constant: bool, rows: int) -> pa.Table:
    """A file body: constant k/s/d (or varied), floats with NaN, ints with nulls."""

    def pick(values: list[Any]) -> list[Any]:
        if constant:
            return [values[int(rng.integers(len(values)))]] * rows
        return [values[int(i)] for i in rng.integers(0, len(values), rows)]

    f = rng.choice([0.5, 1.5, np.nan], rows)
    n = [None if rng.random() < 0.3 else int(v) for v in rng.integers(0, 3, rows)]
    return pa.table(
        {
            "k": pa.array(pick([1, 2, 3]), pa.int64()),
            "s": pa.array(pick(["a", "b", "ü"]), pa.string()),
            "d": pa.array(pick(D), pa.date32()),
            "f": pa.array(f, pa.float64()),
            "n": pa.array(n, pa.int64()),
            # narrower in the file than in the dataset: the scan widens it
            "u": pa.array(pick([0, 7]), pa.uint8()),
        }
    )


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[kf.Store, list[str], list[Any]]:
    root: Path = tmp_path_factory.mktemp("covering")
    store = kf.Store(f"file://{root}")
    rng = np.random.default_rng(7)
    keys, pvs = [], []
    for i in range(12):
        p = ["x", "y"][i % 2]
        key = f"ds/table/p={p}/f{i}.parquet"
        os.makedirs(os.path.dirname(store.path(key)), exist_ok=True)
        # two row groups for some files: each must prove the range
        pq.write_table(_file(rng, i % 3 != 0, 6 + i), store.path(key), row_group_size=4 + i % 5)
        keys.append(key)
        pvs.append((("p", p),))
    return store, keys, pvs


def _same(a: pa.Table, b: pa.Table) -> bool:
    """Same schema and values (NaN equal to NaN; chunking ignored)."""
    return a.schema.equals(b.schema, check_metadata=True) and a.to_pandas().equals(b.to_pandas())


def _scan(store: kf.Store, keys: list[str], pvs: Any, **options: Any) -> pa.Table:
    """The dataset scan alone (the file-by-file path switched off)."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(parquet, "read_local_files", lambda *a, **k: None)
        return parquet.read_files(store, keys, SCHEMA, partition_values=pvs, **options)


LITERALS = st.one_of(
    st.tuples(st.just("k"), st.sampled_from(["==", "<", "<=", ">", ">=", "!="]), st.integers(0, 4)),
    st.tuples(
        st.just("k"), st.sampled_from(["in", "not in"]), st.lists(st.integers(1, 3), max_size=2)
    ),
    st.tuples(
        st.just("s"), st.sampled_from(["==", "<", ">=", "!="]), st.sampled_from(["a", "b", "ü"])
    ),
    st.tuples(st.just("d"), st.sampled_from(["==", "<", ">", ">="]), st.sampled_from(D)),
    st.tuples(st.just("f"), st.sampled_from(["==", "<", ">="]), st.sampled_from([0.5, 1.5])),
    st.tuples(st.just("n"), st.sampled_from(["==", ">=", "is distinct from"]), st.integers(0, 2)),
    st.tuples(st.just("n"), st.sampled_from(["==", "!="]), st.none()),
    st.tuples(st.just("u"), st.sampled_from(["==", ">", "<="]), st.sampled_from([0, 7])),
    st.tuples(st.just("p"), st.sampled_from(["==", "!="]), st.sampled_from(["x", "y"])),
)
PREDICATES = st.lists(st.lists(LITERALS, min_size=1, max_size=3), min_size=1, max_size=2)


def _local(
    store: kf.Store, keys: list[str], pvs: Any, columns: Any, pred: Any, **options: Any
) -> pa.Table | None:
    """The file-by-file path with the kernel's filter arguments (None: it declined)."""
    return read_local_files(
        store,
        keys,
        SCHEMA,
        pvs,
        columns,
        filter=to_expression(pred),
        filter_columns=sorted(pred.columns),
        covering=covering_ranges(pred),
        **options,
    )


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(predicates=PREDICATES, columns=st.sampled_from([None, ["k"], ["s", "p"], ["f", "u"]]))
def test_filtered_reads_equal_the_dataset_scan(files, predicates, columns) -> None:
    store, keys, pvs = files
    pred = bind(predicates, SCHEMA)
    options = {"columns": columns, "filter": to_expression(pred)}
    expected = _scan(store, keys, pvs, **options)
    covering = covering_ranges(pred)
    got = parquet.read_files(
        store,
        keys,
        SCHEMA,
        partition_values=pvs,
        covering=covering,
        filter_columns=sorted(pred.columns),
        **options,
    )
    assert _same(got, expected)
    # the small files are read whole and filtered, on one thread and split over several
    for use_threads in (False, True):
        fast = _local(store, keys, pvs, columns, pred, use_threads=use_threads)
        assert fast is not None and _same(fast, expected)
    with pytest.MonkeyPatch.context() as m:
        # split over threads, filtered every few rows, the pages handed back every time
        m.setattr(local_scan, "SPLIT_FILES", 2)
        m.setattr(local_scan, "FILTER_ROWS", 10)
        m.setattr(local_scan, "RELEASE_BYTES", 0)
        fast = _local(store, keys, pvs, columns, pred)
        assert fast is not None and _same(fast, expected)
        # every file as if large: read by this path only if its statistics prove the filter
        m.setattr(local_scan, "SMALL_FILE_BYTES", 0)
        for key, pv in zip(keys, pvs):
            one = _local(store, [key], [pv], columns, pred)
            if one is not None:
                assert _same(one, _scan(store, [key], [pv], **options)), key
            got = parquet.read_files(
                store,
                [key],
                SCHEMA,
                partition_values=[pv],
                covering=covering,
                filter_columns=sorted(pred.columns),
                **options,
            )
            assert _same(got, _scan(store, [key], [pv], **options)), key


def test_a_proven_file_is_read_without_the_filter(files, monkeypatch) -> None:
    """A file above SMALL_FILE_BYTES (here: any) is read file by file under a filter only
    if its footer statistics or partition values prove the filter for all its rows."""
    monkeypatch.setattr(local_scan, "SMALL_FILE_BYTES", 0)
    store, keys, pvs = files
    key, pv = keys[1], pvs[1]  # constant k, s, d
    body = pq.read_table(store.path(key))
    k, s = body["k"][0].as_py(), body["s"][0].as_py()
    pred = bind([[("k", "==", k), ("s", "==", s), ("p", "==", dict(pv)["p"])]], SCHEMA)
    assert [len(c) for c in covering_ranges(pred)] == [3]
    fast = _local(store, [key], [pv], ["k", "f"], pred)
    assert fast is not None and fast.num_rows == body.num_rows
    expected = _scan(store, [key], [pv], columns=["k", "f"], filter=to_expression(pred))
    assert _same(fast, expected)
    # another value, the other partition, or a column with nulls: not proven
    for other in (
        [[("k", "==", k + 10)]],
        [[("p", "==", "z")]],
        [[("k", "==", k), ("n", ">=", 0)]],
        [[("k", ">", k)]],
    ):
        assert _local(store, [key], [pv], ["k"], bind(other, SCHEMA)) is None, other
    # a varied file is not proven by a value it holds
    varied = keys[0]
    assert _local(store, [varied], [pvs[0]], ["k"], bind([[("k", "==", 1)]], SCHEMA)) is None


@pytest.mark.parametrize("use_threads", [False, True])
def test_small_and_proven_large_files_interleaved(files, use_threads, monkeypatch) -> None:
    """Small files (filtered, read with the filter's column) and larger proven ones (read
    without it) alternate: runs of both kinds, in file order, as the dataset scan reads
    them; one larger file the statistics do not prove sends the scan to the dataset scan.
    """
    store, keys, pvs = files
    sizes = [os.path.getsize(store.path(k)) for k in keys]
    monkeypatch.setattr(local_scan, "SMALL_FILE_BYTES", sorted(sizes)[len(sizes) // 2])
    monkeypatch.setattr(local_scan, "SPLIT_FILES", 4)
    order = [i for pair in zip(range(6), range(11, 5, -1)) for i in pair]
    ks, ps = [keys[i] for i in order], [pvs[i] for i in order]
    small = [sizes[i] <= local_scan.SMALL_FILE_BYTES for i in order]
    assert small[0] and sum(a != b for a, b in itertools.pairwise(small)) >= 3
    pred = bind([[("u", ">=", 0)]], SCHEMA)  # u holds no null: every file proven
    fast = _local(store, ks, ps, ["s", "p"], pred, use_threads=use_threads)
    expected = _scan(store, ks, ps, columns=["s", "p"], filter=to_expression(pred))
    assert fast is not None and _same(fast, expected)
    assert fast.num_rows == sum(6 + i for i in range(12))
    unproven = bind([[("u", ">=", 1)]], SCHEMA)
    assert _local(store, ks, ps, ["s"], unproven, use_threads=use_threads) is None


def test_small_files_are_filtered_without_a_proof(files) -> None:
    """Files of at most SMALL_FILE_BYTES are read whole and filtered: an unproven filter,
    one on a partition column, on a column outside the projection, or matching no row
    reads as the dataset scan does, without the dataset scan."""
    store, keys, pvs = files
    for predicates, columns in (
        ([[("k", "==", 2)]], ["s"]),
        ([[("p", "==", "y"), ("f", "<", 1.0)], [("n", "==", None)]], ["k", "p"]),
        ([[("k", ">", 99)]], None),
        ([[("u", "==", 7)]], ["d"]),
    ):
        pred = bind(predicates, SCHEMA)
        for use_threads in (False, True):
            fast = _local(store, keys, pvs, columns, pred, use_threads=use_threads)
            expected = _scan(store, keys, pvs, columns=columns, filter=to_expression(pred))
            assert fast is not None and _same(fast, expected), predicates
            assert fast.column_names == (columns or SCHEMA.names)
    # without the filter's columns there is no fast path
    pred = bind([[("k", "==", 2)]], SCHEMA)
    assert read_local_files(store, keys, SCHEMA, pvs, ["s"], filter=to_expression(pred)) is None


PX = (("p", "x"),)


def _one_file(tmp_path: Path, name: str, rows: int, **write_options: Any) -> tuple[Any, ...]:
    """A store with one constant file in partition ``p=x``, the filter ``k == <its k>``
    and that filter's ranges."""
    store = kf.Store(f"file://{tmp_path}")
    key = f"ds/table/p=x/{name}.parquet"
    os.makedirs(os.path.dirname(store.path(key)), exist_ok=True)
    table = _file(np.random.default_rng(rows), True, rows)
    pq.write_table(table, store.path(key), **write_options)
    pred = bind([[("k", "==", table["k"][0].as_py())]], SCHEMA)
    return store, key, pred, covering_ranges(pred)


def _read_k(store: kf.Store, key: str, pred: Any, cov: Any) -> pa.Table:
    """Column ``k`` of the file, filtered, with the ranges (the kernel's call)."""
    return parquet.read_files(
        store,
        [key],
        SCHEMA,
        partition_values=[PX],
        columns=["k"],
        filter=to_expression(pred),
        filter_columns=sorted(pred.columns),
        covering=cov,
    )


def test_files_without_statistics_keep_the_filter(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(local_scan, "SMALL_FILE_BYTES", 0)
    store, key, pred, cov = _one_file(tmp_path, "nostats", 5, write_statistics=False)
    assert _local(store, [key], [PX], ["k"], pred) is None
    assert _read_k(store, key, pred, cov).num_rows == 5


@pytest.mark.parametrize(
    ("literal", "expected"),
    [
        (("k", "==", 2), ValueRange("k", 2, 2)),
        (("k", "in", [2]), ValueRange("k", 2, 2)),
        (("k", "<", 2), ValueRange("k", high=2, high_inclusive=False)),
        (("k", ">=", 2), ValueRange("k", low=2)),
        (("d", ">", D[0]), ValueRange("d", low=D[0], low_inclusive=False)),
        (("s", "==", "a"), ValueRange("s", "a", "a", exact=True)),
        (("s", "<", "a"), None),  # strings: equality only
        (("k", "in", [1, 2]), None),
        (("k", "!=", 2), None),
        (("k", "not in", [2]), None),
        (("n", "==", None), None),
        (("n", "is distinct from", 1), None),
        (("f", "==", 0.5), None),  # floats: NaN is not in the null count
    ],
)
def test_literal_ranges(literal: tuple, expected: ValueRange | None) -> None:
    pred = bind([[literal]], SCHEMA)
    assert pred is not None
    assert literal_range(pred.conjunctions[0][0]) == expected


def test_covering_ranges_drop_unprovable_conjunctions() -> None:
    pred = bind([[("k", "==", 1), ("f", "<", 1.0)], [("k", "==", 2)]], SCHEMA)
    assert covering_ranges(pred) == ((ValueRange("k", 2, 2),),)
    assert covering_ranges(None) == ()
    assert covering_ranges(bind([[("f", "<", 1.0)]], SCHEMA)) == ()


def test_a_truncated_file_is_reported_as_without_the_proof(tmp_path) -> None:
    store, key, pred, cov = _one_file(tmp_path, "cut", 50)
    data = Path(store.path(key)).read_bytes()
    Path(store.path(key)).write_bytes(data[: len(data) // 2])  # footer gone
    assert _local(store, [key], [PX], ["k"], pred) is None
    with pytest.raises(kf.CorruptDataError, match=r"cut\.parquet"):
        _read_k(store, key, pred, cov)
