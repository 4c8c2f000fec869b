"""Per-file statistics of a chunk's files: rows of one shared table (no Arrow table per
file), which travel alone when pickled and become tables again in one ``take`` per chunk."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pyarrow as pa

import kartoframe as kf
from kartoframe.execution.chunks import write_chunk
from kartoframe.execution.write import commit_write
from kartoframe.plan.write import StatisticsRow, statistics_tables


def _table(n: int, tag: str) -> pa.Table:
    return pa.table({"label": [f"{tag}{i}" for i in range(n)], "v": np.arange(n)})


def test_rows_of_one_table_become_one_take_in_order() -> None:
    a, b, loose = _table(5, "a"), _table(3, "b"), _table(1, "t")
    rows = [StatisticsRow(a, 4), StatisticsRow(a, 1), loose, StatisticsRow(a, 2)]
    rows += [StatisticsRow(b, 0), StatisticsRow(b, 2)]
    got = statistics_tables(rows)
    assert [t.column("label").to_pylist() for t in got] == [
        ["a4", "a1"],
        ["t0"],
        ["a2"],
        ["b0", "b2"],
    ]
    assert statistics_tables([]) == []


def test_a_pickled_row_travels_without_its_table() -> None:
    big = _table(100_000, "x")
    row = StatisticsRow(big, 77)
    data = pickle.dumps(row, protocol=5)
    assert len(data) < len(pickle.dumps(big, protocol=5)) / 100
    back = pickle.loads(data)
    assert isinstance(back, StatisticsRow) and back.table.num_rows == 1
    assert back == row and back != StatisticsRow(big, 78)
    assert back.one().column("label").to_pylist() == ["x77"]


def test_files_of_a_chunk_share_its_statistics_table(tmp_path) -> None:
    store = kf.Store(f"file://{tmp_path}")
    df = pd.DataFrame({"p": np.repeat(np.arange(50), 3), "x": np.arange(150)})
    result = write_chunk(store, "ds", df, partition_on=["p"])
    stats = [w.statistics for w in result.partitions]
    assert all(isinstance(s, StatisticsRow) for s in stats)
    assert len({id(s.table) for s in stats}) == 1  # type: ignore[union-attr]
    (table,) = statistics_tables(stats)  # type: ignore[arg-type]
    assert table.column("label").to_pylist() == [w.label for w in result.partitions]
    assert table.column("key").to_pylist() == [w.key for w in result.partitions]
    # a file pickled alone (a Spark task's record) carries its row only
    one = pickle.loads(pickle.dumps(result.partitions[7]))
    assert one.statistics.table.num_rows == 1
    assert statistics_tables([one.statistics])[0].column("label").to_pylist() == [
        result.partitions[7].label
    ]


def test_a_many_partition_write_keeps_every_files_statistics(tmp_path) -> None:
    df = pd.DataFrame({"p": np.repeat(np.arange(300), 2), "x": np.arange(600)})
    url = f"file://{tmp_path}"
    kf.store_dataframes_as_dataset(url, "ds", [df], partition_on=["p"])
    kf.update_dataset_from_dataframes([df.assign(x=df["x"] + 1000)], url, "ds")
    stats = kf.dataset_statistics("ds", url).sort_values(["p.min", "x.min"])
    assert len(stats) == 600 and stats["has_statistics"].all()
    want = df.groupby("p")["x"].agg(["min", "max"])
    first, second = stats.iloc[0::2], stats.iloc[1::2]
    assert first["x.min"].tolist() == want["min"].tolist()
    assert first["x.max"].tolist() == want["max"].tolist()
    assert (second["x.min"] - 1000).tolist() == want["min"].tolist()
    assert (stats["rows"] == 2).all()


def test_a_pickled_chunk_carries_one_statistics_table(tmp_path) -> None:
    """A dask or Spark task's result: the files' statistics travel as one table per chunk
    (not a one-row table per file, ~50 KB of objects each once unpickled)."""
    store = kf.Store(f"file://{tmp_path}")
    df = pd.DataFrame({"p": np.repeat(np.arange(200), 3), "x": np.arange(600)})
    result = write_chunk(store, "ds", df, partition_on=["p"], index_columns=["x"])
    data = pickle.dumps(result, protocol=5)
    back = pickle.loads(data)
    stats = [w.statistics for w in back.partitions]
    assert all(isinstance(s, StatisticsRow) for s in stats)
    assert len({id(s.table) for s in stats}) == 1  # type: ignore[union-attr]
    assert stats[0].table.num_rows == 200  # type: ignore[union-attr]
    assert back.partitions == result.partitions
    assert back.schema == result.schema and back.origin == result.origin
    one_by_one = len(pickle.dumps(result.partitions, protocol=5))  # a row each, as before
    assert len(data) < one_by_one / 2
    # committed, the travelled result gives every file its own statistics and index entry
    commit_write(store, "ds", [back], base=None, partition_on=["p"], secondary_indices=["x"])
    stats = kf.dataset_statistics("ds", store).sort_values("p.min")
    assert stats["x.min"].tolist() == list(range(0, 600, 3))
    assert stats["x.max"].tolist() == list(range(2, 600, 3))
    got = kf.read_table("ds", store, predicates=[[("x", "==", 301)]])
    assert got["p"].tolist() == [100] and got["x"].tolist() == [301]
