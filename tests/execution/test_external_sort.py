"""``optimize`` with ``sort_by`` sorts a few files at a time into runs spilled to the local
disk and merges them (``execution/external_sort``, ``storage/spill``).

Whatever the runs, the new files must hold the rows a stable sort of the partition's rows
gives (ties in commit order), with the same row groups, index entries and statistics: a
unit sorted as one run is compared with the same unit sorted as one run per file, and
both with ``sort_table`` of the rows read. On every engine that runs ``rewrite_unit``.
The spill folder must be gone afterwards, also when the optimize fails half-way, and a
failure must leave the dataset as it was.

``SORT_RUN_BYTES`` is lowered on the real module so that a small dataset makes many
runs (every file becomes one), and ``ZORDER_IN_MEMORY_BYTES`` so that a z-order spills
too; the baseline sorts each partition as one run (a z-order: in memory).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from daily_appends import append_daily

import kartoframe as kf
from kartoframe.execution import optimize as optimize_module
from kartoframe.execution.chunks import split_rows
from kartoframe.execution.external_sort import (
    DistinctAccumulator,
    spill_sorted_runs,
    spilled_with_distinct,
)
from kartoframe.format.clustering import sort_table
from kartoframe.storage.spill import SpillFolder

UUID = "events"
COLUMNS = ["k", "x", "s", "row"]


def _day(day: int, rows: int = 80) -> pd.DataFrame:
    rng = np.random.default_rng(day)
    x = rng.normal(size=rows)
    x[rng.random(rows) < 0.05] = np.nan
    return pd.DataFrame(
        {
            "p": rng.integers(0, 2, rows),
            "k": pd.array(rng.integers(0, 12, rows), dtype="Int64"),  # ties and nulls
            "x": x,
            "s": rng.choice(["a", "b", "c"], rows),
            "row": np.arange(rows) + 1000 * day,
        }
    )


def _build(store: kf.Store, days: int = 8) -> None:
    append_daily(store, UUID, (_day(day) for day in range(days)))


def _written(store: kf.Store) -> dict[str, tuple[pa.Table, list[int], dict]]:
    """Each partition's new file: its rows in order, its row-group sizes, and its
    statistics row (less the file's name and size)."""
    stats = kf.dataset_statistics(UUID, store).drop(columns=["file", "bytes"])
    out = {}
    for label, key in kf.read_dataset_metadata(UUID, store).partitions.items():
        pf = pq.ParquetFile(store.open_input(key))
        groups = [pf.metadata.row_group(i).num_rows for i in range(pf.metadata.num_row_groups)]
        row = stats[stats["label"] == label].drop(columns=["label"]).iloc[0].to_dict()
        out[label.split("/")[0]] = (pf.read(), groups, row)
    return out


def _spilling(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(optimize_module, "SORT_RUN_BYTES", 1)  # one file per run
    monkeypatch.setattr(optimize_module, "ZORDER_IN_MEMORY_BYTES", 0)  # z-orders spill too


@pytest.fixture
def spill_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """TMPDIR of this test: where the spill folders go."""
    path = tmp_path / "tmp"
    path.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(path))
    return path


@pytest.mark.parametrize(
    ("sort_by", "method"), [(["k", "x"], "linear"), (["k", "s"], "zorder"), (["x"], "zorder")]
)
def test_many_runs_write_what_one_run_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spill_dir: Path, sort_by, method
) -> None:
    in_memory = kf.Store(f"file://{tmp_path}/a")  # one run per partition
    spilled = kf.Store(f"file://{tmp_path}/b")  # one run per file
    _build(in_memory)
    _build(spilled)
    rows = {  # each partition's rows in commit order, sorted whole
        f"p={p}": sort_table(
            pa.Table.from_pandas(
                kf.read_table(UUID, in_memory, predicates=[[("p", "==", p)]], columns=COLUMNS),
                preserve_index=False,
            ),
            sort_by,
            method,
        )
        for p in (0, 1)
    }
    options = {"sort_by": sort_by, "sort_method": method, "row_group_size": 70}
    expected = kf.optimize_dataset(UUID, in_memory, **options)
    _spilling(monkeypatch)
    got = kf.optimize_dataset(UUID, spilled, **options)

    assert (got.files_removed, got.files_added) == (expected.files_removed, expected.files_added)
    want, have = _written(in_memory), _written(spilled)
    assert sorted(want) == sorted(have) == ["p=0", "p=1"]
    for part in want:
        assert have[part][0].equals(want[part][0]), part  # same rows, same order
        assert have[part][0].column("row").equals(rows[part].column("row")), part
        assert have[part][1] == want[part][1]  # same row groups
        assert str(have[part][2]) == str(want[part][2])  # same statistics (NaN-safe)
    for column in ("k",):  # the index and the statistics of the new files agree
        a = kf.read_table(UUID, in_memory, predicates=[[(column, "==", 3)]])
        b = kf.read_table(UUID, spilled, predicates=[[(column, "==", 3)]])
        pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True))
    assert list(spill_dir.iterdir()) == []  # the spill folders are gone


def test_the_dask_engine_spills_the_same_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spill_dir: Path
) -> None:
    in_memory = kf.Store(f"file://{tmp_path}/a")
    spilled = kf.Store(f"file://{tmp_path}/b")
    _build(in_memory)
    _build(spilled)
    kf.optimize_dataset(UUID, in_memory, sort_by=["k"])
    _spilling(monkeypatch)
    kf.optimize_dataset_as_delayed(UUID, spilled, sort_by=["k"]).compute(scheduler="threads")
    want, have = _written(in_memory), _written(spilled)
    for part in want:
        assert have[part][0].equals(want[part][0]), part
    assert list(spill_dir.iterdir()) == []


def test_a_failure_while_spilling_leaves_the_dataset_and_no_spill_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spill_dir: Path
) -> None:
    store = kf.Store(f"file://{tmp_path}/a")
    _build(store)
    header = kf.read_dataset_metadata(UUID, store)
    victim = sorted(header.partitions.items())[-1]  # read late: runs are spilled by then
    Path(f"{tmp_path}/a/{victim[1]}").write_bytes(b"PAR1 truncated by hand")
    keys = set(store.iter_keys(""))
    _spilling(monkeypatch)
    with pytest.raises(Exception, match=victim[1].rsplit("/", 1)[1].split(".")[0]):
        kf.optimize_dataset(UUID, store, sort_by=["k"])
    assert kf.read_dataset_metadata(UUID, store).partitions == header.partitions
    assert set(store.iter_keys("")) == keys  # no new data file left behind
    assert list(spill_dir.iterdir()) == []


@pytest.mark.parametrize("method", ["linear", "zorder"])
def test_spilled_runs_merge_to_the_sorted_table(spill_dir: Path, method: str) -> None:
    table = pa.Table.from_pandas(
        pd.concat([_day(d) for d in range(6)], ignore_index=True), preserve_index=False
    )
    batches = [table.slice(s, 97) for s in range(0, table.num_rows, 97)]
    sort_by = ["k", "s"]
    with SpillFolder() as spill:
        distinct = None
        if method == "zorder":
            seen = DistinctAccumulator(sort_by)
            for batch in batches:
                seen.add(batch)
            distinct = seen.result()
        runs = spill_sorted_runs(
            batches, sort_by, method, spill, distinct=distinct, merge_batch_bytes=512
        )
        assert len(runs.paths) == len(batches) and runs.rows == table.num_rows
        assert all(p.parent == spill.path for p in runs.paths)
        merged = pa.concat_tables(runs.merged())
        folder = spill.path
    assert merged.equals(sort_table(table, sort_by, method))
    assert not folder.exists()


def test_a_zorder_needs_the_distinct_values_of_all_batches(spill_dir: Path) -> None:
    with SpillFolder() as spill, pytest.raises(ValueError, match="distinct values"):
        spill_sorted_runs([pa.table({"a": [1]})], ["a"], "zorder", spill)
    with SpillFolder() as spill, pytest.raises(kf.errors.InvalidInputError, match="sort_method"):
        spill_sorted_runs([pa.table({"a": [1]})], ["a"], "hilbert", spill)  # type: ignore[arg-type]


def test_split_rows_cuts_a_stream_into_parts_of_n_rows() -> None:
    tables = [pa.table({"a": list(range(s, s + n))}) for s, n in [(0, 3), (3, 0), (3, 7), (10, 2)]]
    parts = [pa.concat_tables(list(p)).column("a").to_pylist() for p in split_rows(tables, 5)]
    assert parts == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [10, 11]]
    assert [list(p) for p in split_rows([], 5)] == []
    # a part left unfinished is skipped, the next part starts where it should
    it = split_rows(tables, 6)
    next(it)  # taken, not read
    assert pa.concat_tables(list(next(it))).column("a").to_pylist() == [6, 7, 8, 9, 10, 11]


def test_tables_spilled_for_their_distinct_values_come_back_whole(spill_dir: Path) -> None:
    tables = [
        pa.concat_tables([pa.table({"a": [3, 1]}), pa.table({"a": [2]})]),  # two chunks
        pa.table({"a": pa.array([], pa.int64())}),
        pa.table({"a": [None, 5]}),
    ]
    with SpillFolder() as spill:
        back, distinct = spilled_with_distinct(tables, ["a"], spill)
        assert len(list(spill.path.iterdir())) == 3
        got = list(back)
        assert [t.column("a").to_pylist() for t in got] == [[3, 1, 2], [None, 5]]
        assert list(spill.path.iterdir()) == []  # each removed once read
    assert distinct[0].values.tolist() == [1, 2, 3, 5] and distinct[0].has_null
