"""A chunk's partial index built from the whole column at once (``files_index``) is the
one grouping the files' pairs makes (``group_index`` of ``index_value_pairs``), and the
write kernel's files carry it."""

from __future__ import annotations

import datetime
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kartoframe as kf
import kartoframe.format.index_group as index_group
from kartoframe.execution.chunks import write_chunk
from kartoframe.format.index import index_value_pairs
from kartoframe.format.index_group import files_index, group_index


def _by_files(column: str, values: pa.Array, groups: np.ndarray, labels: list[str]) -> Any:
    pairs = [
        index_value_pairs(column, values.filter(pa.array(groups == g)), lb)
        for g, lb in enumerate(labels)
    ]
    return group_index(column, values.type, pairs)


def _plain(values: pa.Array) -> list[Any]:
    return ["NaN" if v != v else v for v in values.to_pylist()]  # NaN equal to NaN


def _same(a: Any, b: Any) -> None:
    assert a.values.type == b.values.type
    assert _plain(a.values) == _plain(b.values)
    assert np.array_equal(a.offsets, b.offsets)
    assert np.array_equal(a.codes.astype(np.int64), b.codes.astype(np.int64))
    assert a.codes.dtype == b.codes.dtype
    assert a.labels.equals(b.labels)


VALUES = {
    "int": (pa.int64(), st.one_of(st.none(), st.integers(-(2**40), 2**40))),
    "int16": (pa.int16(), st.one_of(st.none(), st.integers(-5, 5))),
    "str": (pa.large_string(), st.one_of(st.none(), st.text(max_size=3))),
    # NaN, -0.0 and 0.0: one value each in an index (NaN of any bit pattern)
    "float": (
        pa.float32(),
        st.one_of(st.none(), st.sampled_from([0.0, -0.0, float("nan"), -float("nan"), 1.5])),
    ),
    "bool": (pa.bool_(), st.one_of(st.none(), st.booleans())),
    "date": (pa.date32(), st.one_of(st.none(), st.dates(datetime.date(2020, 1, 1)))),
    "ns": (
        pa.timestamp("ns"),
        st.one_of(
            st.none(), st.datetimes(datetime.datetime(2000, 1, 1), datetime.datetime(2200, 1, 1))
        ),
    ),
}


@settings(max_examples=250, deadline=None)
@given(kind=st.sampled_from(sorted(VALUES)), data=st.data())
def test_files_index_is_the_grouped_pairs(kind: str, data: st.DataObject) -> None:
    t, strategy = VALUES[kind]
    n_files = data.draw(st.integers(1, 7))
    values = data.draw(st.lists(strategy, max_size=40))
    # some files may get no row, or only nulls
    groups = np.array(
        data.draw(
            st.lists(st.integers(0, n_files - 1), min_size=len(values), max_size=len(values))
        ),
        dtype=np.int32,
    )
    labels = [f"p={g}/f" for g in range(n_files)]
    arr = pa.array(values, type=t)
    got = files_index(
        "c", pa.chunked_array([arr[: len(arr) // 2], arr[len(arr) // 2 :]], t), groups, labels
    )
    assert got is not None
    _same(got, _by_files("c", arr, groups, labels))


def test_dictionary_values_and_many_files() -> None:
    rng = np.random.default_rng(3)
    n = 50_000
    words = pa.array([f"w{i:04d}" for i in range(3_000)])
    arr = pa.DictionaryArray.from_arrays(pa.array(rng.integers(0, 3_000, n)), words)
    groups = rng.integers(0, 300, n).astype(np.int32)
    labels = [f"p={g}/f" for g in range(300)]
    got = files_index("c", pa.chunked_array([arr]), groups, labels)
    assert got is not None and got.codes.dtype == np.uint16
    _same(got, _by_files("c", arr.cast(pa.string()), groups, labels))


def test_too_many_cells_or_no_hash_kernel_give_none(monkeypatch: pytest.MonkeyPatch) -> None:
    arr = pa.chunked_array([pa.array(np.arange(100))])
    groups = np.arange(100, dtype=np.int32) % 10
    labels = [f"p={g}/f" for g in range(10)]
    monkeypatch.setattr(index_group, "MAX_INDEX_CELLS", 999)  # 100 values x 10 files
    assert files_index("c", arr, groups, labels) is None
    monkeypatch.setattr(index_group, "MAX_INDEX_CELLS", 1000)
    assert files_index("c", arr, groups, labels) is not None
    # the grid is held to 8 bytes a row (at least 1 MiB): 1,000 files of 2 rows each
    monkeypatch.setattr(index_group, "MAX_INDEX_CELLS", 1 << 26)
    files = np.arange(2_000, dtype=np.int32) // 2
    names = [f"p={g}/f" for g in range(1_000)]
    spread = pa.chunked_array([pa.array(np.arange(2_000))])  # 2M cells
    assert files_index("c", spread, files, names) is None
    paired = pa.chunked_array([pa.array(np.arange(2_000) // 2)])  # 1M cells
    assert files_index("c", paired, files, names) is not None
    nested = pa.chunked_array([pa.array([{"a": 1}] * 4)])
    assert files_index("c", nested, np.zeros(4, np.int32), ["p=0/f"]) is None


@pytest.mark.parametrize(
    ("t", "low"),
    [
        (pa.int64(), -(2**63)),  # the differences from the minimum near int64's ends
        (pa.int64(), 2**63 - 300),
        (pa.uint64(), 2**64 - 300),
        (pa.int8(), -128),
        (pa.uint32(), 2**32 - 300),
        (pa.dictionary(pa.int16(), pa.int16()), -150),  # a categorical of integers
    ],
    ids=["int64-min", "int64-max", "uint64-max", "int8", "uint32", "dictionary"],
)
def test_integers_of_a_narrow_range_are_coded_by_their_offset(t: pa.DataType, low: int) -> None:
    rng = np.random.default_rng(7)
    n, n_files = 2_000, 13
    offsets = rng.integers(0, 256, n)
    values: list[int | None] = [low + int(o) for o in offsets]
    values[5] = values[17] = None  # nulls are not indexed
    plain = pa.array(values, type=t.value_type if pa.types.is_dictionary(t) else t)
    arr = plain.dictionary_encode().cast(t) if pa.types.is_dictionary(t) else plain
    groups = rng.integers(0, n_files, n).astype(np.int32)
    labels = [f"p={g}/f" for g in range(n_files)]
    chunked = pa.chunked_array([arr[:700], arr[700:]], arr.type)
    direct = index_group._integer_files_index(
        "c", chunked, groups, pa.array(labels), index_group.MAX_INDEX_CELLS
    )
    assert direct is not None  # the range path was taken
    expected = _by_files("c", plain, groups, labels)
    _same(direct, expected)
    _same(files_index("c", chunked, groups, labels), expected)


def test_integers_of_a_wide_range_are_hashed() -> None:
    values = pa.array([0, 2**40, None, 2**40, -(2**50)], pa.int64())
    groups = np.array([0, 1, 1, 0, 2], np.int32)
    labels = ["p=0/f", "p=1/f", "p=2/f"]
    chunked = pa.chunked_array([values])
    cap = index_group.MAX_INDEX_CELLS
    assert index_group._integer_files_index("c", chunked, groups, pa.array(labels), cap) is None
    got = files_index("c", chunked, groups, labels)
    assert got is not None  # the hashing path: three distinct values, nine cells
    _same(got, _by_files("c", values, groups, labels))
    nulls = pa.chunked_array([pa.array([None, None], pa.int64())])
    assert index_group._integer_files_index("c", nulls, groups[:2], pa.array(labels), cap) is None
    empty = files_index("c", nulls, groups[:2], labels)
    assert empty is not None and empty.num_rows == 0


@pytest.mark.parametrize("cells", [index_group.MAX_INDEX_CELLS, 1], ids=["grid", "per file"])
@pytest.mark.parametrize("rows", [600, 200_000], ids=["small files", "large files"])
def test_written_files_carry_the_same_entries(
    cells: int, rows: int, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The write kernel's entries, through the grid or through each file's pairs (the
    fallback), are the file's distinct non-null values, whatever path wrote the file."""
    monkeypatch.setattr(index_group, "MAX_INDEX_CELLS", cells)
    rng = np.random.default_rng(rows)
    x = rng.integers(0, 5_000, rows).astype(float)
    x[rng.integers(0, rows, 50)] = np.nan
    table = pa.table(
        {
            "p": rng.integers(0, 30, rows),
            "x": pa.array(x, mask=np.arange(rows) % 97 == 0),
            "s": pa.array([f"s{i % 13}" for i in range(rows)]),
        }
    )
    for workers in (1, 4):
        result = write_chunk(
            kf.Store(f"file://{tmp_path}/w{cells}-{workers}"),
            "u",
            table,
            partition_on=["p"],
            index_columns=["x", "s"],
            max_workers=workers,
        )
        assert len(result.partitions) == 30
        for w in result.partitions:
            p = int(w.label.split("/")[0].split("=")[1])
            rows_of = table.filter(pa.compute.equal(table["p"], p))
            for c in ("x", "s"):
                want = index_value_pairs(c, rows_of[c], w.label)
                got = w.index_pairs[c]
                got = got if isinstance(got, pa.Table) else got.pairs()
                assert _plain(got[c]) == _plain(want.sort_by(c)[c])  # values sorted
                assert set(got["label"].to_pylist()) <= {w.label}
