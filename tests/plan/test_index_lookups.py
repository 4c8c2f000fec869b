"""Equality lookups read only the index rows (and row groups) of their values."""

from __future__ import annotations

import uuid

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import kartoframe as kf
from kartoframe.format import index as fi
from kartoframe.plan.scan import index_lookups
from kartoframe.storage.resolve import load_dataset


@pytest.fixture
def small_row_groups(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fi, "LABELS_PER_ROW_GROUP", 16)
    monkeypatch.setattr(fi, "MIN_VALUES_PER_ROW_GROUP", 2)


def _frame(n: int = 3_000) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    i = pd.array(rng.integers(0, 400, n), dtype="Int64")
    i[rng.integers(0, n, 50)] = pd.NA
    return pd.DataFrame(
        {
            "p": rng.integers(0, 12, n),
            "i": i,
            "s": [f"v{x:03d}" for x in rng.integers(0, 300, n)],
            "rid": np.arange(n),
        }
    )


def test_index_files_have_value_sorted_row_groups(small_row_groups: None) -> None:
    pairs = [
        fi.index_value_pairs("c", pa.array(np.arange(k, 500, 3)), f"p={k}/x") for k in range(6)
    ]
    idx = fi.build_index("c", pa.int64(), pairs)
    data = fi.index_to_bytes(idx)
    md = pq.ParquetFile(pa.BufferReader(data)).metadata
    assert md.num_row_groups > 10
    full = fi.index_from_bytes(data, "c")
    assert full.equals(idx)
    for only in ([7], [0, 499, 250], [10_000], []):
        part = fi.index_from_bytes(data, "c", only=only)
        # every row of the looked-up values is there, exactly as in the full index
        assert part.schema == idx.schema
        got = dict(zip(part["c"].to_pylist(), part["partition"].to_pylist()))
        want = dict(zip(idx["c"].to_pylist(), idx["partition"].to_pylist()))
        assert {v: got.get(v) for v in only} == {v: want.get(v) for v in only}
        assert set(got) <= set(want)
    # the lookup decodes only the row groups whose range holds the value
    assert fi._read_value_groups(data, "c", [7]).num_rows < idx.num_rows / 5


def test_a_lookup_decodes_the_labels_of_its_values_only(small_row_groups: None) -> None:
    pairs = [
        fi.index_value_pairs("c", pa.array([f"v{x:03d}" for x in range(k, 300, 4)]), f"p={k}/x")
        for k in range(8)
    ]
    idx = fi.build_index("c", pa.string(), pairs)
    data = fi.index_to_bytes(idx)
    assert pq.ParquetFile(pa.BufferReader(data)).metadata.num_row_groups > 10
    want = dict(zip(idx["c"].to_pylist(), idx["partition"].to_pylist()))
    for only in (["v007"], ["v000", "v299", "v150", "v151"], ["nope"], ["v010", "nope"]):
        part = fi._read_value_groups(data, "c", sorted(only))
        # the rows of the looked-up values, over several row groups, and no other
        assert sorted(part["c"].to_pylist()) == sorted(v for v in only if v in want)
        full = fi.index_from_bytes(data, "c", only=sorted(only))
        assert full.schema == idx.schema
        assert dict(zip(full["c"].to_pylist(), full["partition"].to_pylist())) == {
            v: want[v] for v in only if v in want
        }


def test_values_that_do_not_fit_the_index_type_keep_every_row() -> None:
    table = pa.table({"c": pa.array([1, 2, 3], pa.int8()), "partition": [["a"], ["b"], ["c"]]})
    assert fi._rows_of(table, "c", [2]).to_pydict() == {"c": [2], "partition": [["b"]]}
    assert fi._rows_of(table, "c", [2, 1000]).equals(table)  # 1000 is no int8
    assert fi._rows_of(table, "c", ["2"]).equals(table)


def test_index_lookups_only_for_equality_on_every_literal() -> None:
    store = kf.Store(f"memory://lookups-{uuid.uuid4().hex}")
    kf.store_dataframes_as_dataset(
        store=store, dataset_uuid="ds", dfs=[_frame(200)], partition_on=["p"],
        secondary_indices=["i", "s"],
    )  # fmt: skip
    loaded = load_dataset(store, "ds")
    assert index_lookups(loaded, [[("i", "==", 3)]]) == {"i": (3,)}
    assert index_lookups(loaded, [[("i", "in", [3, 4])], [("s", "==", "v001")]]) == {
        "i": (3, 4),
        "s": ("v001",),
    }
    # any other operator on the column, a null that must match, or dispatch: full index
    assert index_lookups(loaded, [[("i", "==", 3)], [("i", ">", 7)]]) == {}
    assert index_lookups(loaded, [[("i", "in", [3, None])]]) == {}
    assert index_lookups(loaded, [[("i", "==", None)]]) == {}
    assert index_lookups(loaded, [[("i", "==", 3)]], dispatch_by=["i"]) == {}
    assert index_lookups(loaded, [[("p", "==", 3)]]) == {}  # partition keys have no file
    assert index_lookups(loaded, None) == {}


PREDICATES = [
    [[("i", "==", 17)]],
    [[("i", "in", [1, 2, 399, 1000])]],
    [[("i", "==", 17), ("p", "==", 3)]],
    [[("i", "==", 17)], [("s", "==", "v010")]],
    [[("i", "in", [5, 6]), ("s", "in", ["v005", "v100"])]],
    [[("i", "==", 17)], [("i", ">=", 390)]],
    [[("i", "in", [3, None])]],
    [[("i", "==", None)]],
    [[("s", "==", "nope")]],
]


@pytest.mark.parametrize("predicates", PREDICATES)
def test_reads_with_partial_indices_equal_pandas(small_row_groups: None, predicates) -> None:
    df = _frame()
    store = kf.Store(f"memory://partial-{uuid.uuid4().hex}")
    kf.store_dataframes_as_dataset(
        store=store, dataset_uuid="ds", dfs=[df], partition_on=["p"],
        secondary_indices=["i", "s"],
    )  # fmt: skip
    got = kf.read_table("ds", store, predicates=predicates)
    mask = np.zeros(len(df), dtype=bool)
    for conj in predicates:
        m = np.ones(len(df), dtype=bool)
        for col, op, value in conj:
            s = df[col]
            if op == "==":
                m &= s.isna().to_numpy() if value is None else (s == value).fillna(False).to_numpy()
            elif op == ">=":
                m &= (s >= value).fillna(False).to_numpy()
            else:  # in
                hit = s.isin([v for v in value if v is not None]).to_numpy()
                if None in value:
                    hit |= s.isna().to_numpy()
                m &= hit
        mask |= m
    assert sorted(got["rid"]) == sorted(df.loc[mask, "rid"])
