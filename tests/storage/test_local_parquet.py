"""``storage/local_parquet``: local Parquet files opened one after the other, the columns
of files with the same Parquet schema worked out once."""

from __future__ import annotations

import datetime
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kartoframe.storage.local_parquet import LocalParquetFiles
from kartoframe.storage.local_scan import _constant_column


def _write(path, table: pa.Table) -> str:
    pq.write_table(table, path)
    return str(path)


def _alike(i: int) -> pa.Table:
    return pa.table(
        {
            "a": pa.array([i, i + 1], pa.int64()),
            "s": pa.array(
                [{"x": i, "y": "p"}, None], pa.struct([("x", pa.int32()), ("y", pa.string())])
            ),
            "l": pa.array([[1, 2], []], pa.list_(pa.int16())),
            "b": ["u", "v"],
        }
    )


def test_files_alike_share_one_layout_and_read_the_columns_asked(tmp_path) -> None:
    paths = [_write(tmp_path / f"{i}.parquet", _alike(i)) for i in range(3)]
    files = LocalParquetFiles()
    layouts = []
    for path in paths:
        with files.open(path) as f:
            layouts.append(f.layout)
            assert f.size == os.path.getsize(path)
            assert f.metadata.num_rows == 2
            assert f.holds(["b", "a"]) and not f.holds(["a", "zz"])
            assert f.holds_any(["zz", "l"]) and not f.holds_any(["zz", "x", "y"])
            for columns in (["b", "a"], ["s", "l"], ["l", "b", "s", "a"], ["a"]):
                got = f.read(columns)
                assert got.column_names == columns
                assert got.equals(pq.read_table(path, columns=columns).select(columns))
    assert layouts[0] is layouts[1] is layouts[2]
    # the nested columns' leaves: a struct of two, a list of one
    assert layouts[0].leaves == {"a": [0], "s": [1, 2], "l": [3], "b": [4]}


def test_a_file_of_another_schema_gets_its_own_columns(tmp_path) -> None:
    first = _write(tmp_path / "0.parquet", _alike(0))
    # the same names in another order, and one more column in front
    other = pa.table({"extra": [1.5, 2.5], "b": ["w", "x"], "a": pa.array([7, 8], pa.int64())})
    second = _write(tmp_path / "1.parquet", other)
    # the same names and order, another type: the schema differs, so do the leaves' types
    third = _write(
        tmp_path / "2.parquet", _alike(2).set_column(0, "a", pa.array([1, 2], pa.int8()))
    )
    files = LocalParquetFiles()
    with files.open(first) as f:
        assert f.read(["a", "b"]).to_pydict() == {"a": [0, 1], "b": ["u", "v"]}
    with files.open(second) as f:
        assert f.layout.leaves == {"extra": [0], "b": [1], "a": [2]}
        assert not f.holds(["s"])
        assert f.read(["a", "b"]).to_pydict() == {"a": [7, 8], "b": ["w", "x"]}
    with files.open(third) as f:
        got = f.read(["a", "b"])
        assert got.schema.field("a").type == pa.int8()
        assert got.to_pydict() == {"a": [1, 2], "b": ["u", "v"]}
    with files.open(first) as f:  # and back
        assert f.read(["b", "a"]).to_pydict() == {"b": ["u", "v"], "a": [0, 1]}


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
def test_files_that_cannot_be_opened_raise_and_leave_no_descriptor_open(tmp_path) -> None:
    whole = _write(tmp_path / "whole.parquet", _alike(0))
    cut = tmp_path / "cut.parquet"
    data = (tmp_path / "whole.parquet").read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    garbage = tmp_path / "garbage.parquet"
    garbage.write_bytes(b"not parquet at all" * 10)
    files = LocalParquetFiles()
    before = _open_descriptors()
    with pytest.raises(FileNotFoundError), files.open(str(tmp_path / "missing.parquet")):
        pass
    for bad in (cut, garbage, tmp_path):  # a cut file, no Parquet, a directory
        with pytest.raises((OSError, pa.ArrowException)), files.open(str(bad)):
            pass
    with pytest.raises(RuntimeError), files.open(whole):
        raise RuntimeError("the caller fails while the file is open")
    assert _open_descriptors() == before
    with files.open(whole) as f:  # still opens files afterwards
        assert f.read(["a"]).num_rows == 2


@pytest.mark.parametrize(
    ("t", "values"),
    [
        (pa.large_string(), ["DE", "DE", "FR", None, "IT"]),
        (pa.int64(), [3, 3, 4, 5, 5]),
        (pa.date32(), [datetime.date(2024, 1, 1), None, datetime.date(2024, 2, 1)] * 2),
        (pa.timestamp("us", "Europe/Berlin"), [datetime.datetime(2024, 1, 1, 12), None]),
        (pa.bool_(), [True, False, True]),
        (pa.float64(), [1.5, float("nan"), 1.5]),
        (pa.dictionary(pa.int32(), pa.string()), ["a", "a", "b", "a"]),  # no decoding kernel
    ],
)
def test_partition_columns_repeat_each_files_value_for_its_rows(t, values) -> None:
    counts = [(2 * i + 1) % 4 for i in range(len(values))]  # 1, 3, 1, 3, ...
    counts[1] = 0  # a file without rows adds none
    got = _constant_column(values, counts, t)
    assert isinstance(got, pa.Array)  # one chunk
    expected = pa.array([v for v, n in zip(values, counts) for _ in range(n)], type=t)
    assert got.type == t
    assert [str(v) for v in got.to_pylist()] == [str(v) for v in expected.to_pylist()]  # NaN


def test_partition_columns_of_files_without_rows_are_empty() -> None:
    got = _constant_column(["a", "b"], [0, 0], pa.string())
    assert got.type == pa.string() and len(got) == 0
    assert len(_constant_column([], [], pa.int64())) == 0
