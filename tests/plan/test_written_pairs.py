"""Index pairs of a chunk's files: rows of one shared table per indexed column (no Arrow
table per file), which travel alone when pickled, once per chunk inside a pickled chunk,
and become tables again as one slice per run of files."""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pandas as pd
import pyarrow as pa

import kartoframe as kf
from kartoframe.execution.chunks import write_chunk
from kartoframe.execution.write import commit_write
from kartoframe.format.index import build_index, index_value_pairs
from kartoframe.plan.write import ChunkResult, PairsRows, pairs_tables, shared_pairs


def _files(n: int) -> list[tuple[str, pa.Table]]:
    rng = np.random.default_rng(n)
    return [
        (f"p={i}/f", index_value_pairs("x", pa.array(rng.integers(0, 9, size=5)), f"p={i}/f"))
        for i in range(n)
    ]


def test_shared_rows_hold_each_files_pairs() -> None:
    files = _files(6)
    rows = shared_pairs("x", files)
    assert len({id(r.table) for r in rows}) == 1
    for (label, table), r in zip(files, rows, strict=True):
        got = r.pairs()
        assert got["x"].to_pylist() == table["x"].to_pylist()
        assert got["label"].cast(pa.string()).to_pylist() == [label] * table.num_rows
    # the index built from the shared rows is the one built from the files' own tables
    want = build_index("x", pa.int64(), [t for _, t in files])
    assert build_index("x", pa.int64(), pairs_tables(rows)).equals(want)


def test_runs_of_one_table_become_one_slice() -> None:
    a, b = shared_pairs("x", _files(4)), shared_pairs("x", _files(3))
    loose = _files(1)[0][1]
    got = pairs_tables([a[0], a[1], loose, a[2], a[3], b[0], b[2], b[1]])
    sizes = [t.num_rows for t in got]
    assert sizes == [
        a[1].stop - a[0].start,
        loose.num_rows,
        a[3].stop - a[2].start,
        b[0].stop - b[0].start,  # b[2] does not follow b[0]: a new slice
        b[2].stop - b[2].start,
        b[1].stop - b[1].start,
    ]
    assert pairs_tables([]) == []


def test_a_pickled_row_travels_without_its_table() -> None:
    rows = shared_pairs("x", _files(200))
    back = pickle.loads(pickle.dumps(rows[77], protocol=5))
    assert isinstance(back, PairsRows) and back.table.num_rows == back.stop - back.start
    assert back == rows[77] and back != rows[78]
    assert len(pickle.dumps(rows[77])) < len(pickle.dumps(rows[0].table)) / 10


def test_a_pickled_chunk_carries_one_pairs_table_per_column(tmp_path) -> None:
    store = kf.Store(f"file://{tmp_path}")
    df = pd.DataFrame(
        {"p": np.repeat(np.arange(100), 4), "x": np.arange(400) % 7, "y": np.arange(400)}
    )
    result = write_chunk(store, "ds", df, partition_on=["p"], index_columns=["x", "y"])
    for col in ("x", "y"):
        assert len({id(w.index_pairs[col].table) for w in result.partitions}) == 1
    data = pickle.dumps(result, protocol=5)
    back = pickle.loads(data)
    for col in ("x", "y"):
        assert len({id(w.index_pairs[col].table) for w in back.partitions}) == 1
    assert back.partitions == result.partitions
    assert len(data) < len(pickle.dumps(result.partitions, protocol=5)) / 2
    # a chunk whose files are no longer one run of the table (a filtered re-write)
    # pickles file by file and still commits every file's index entries
    odd = dataclasses.replace(back, partitions=back.partitions[::2])
    again = pickle.loads(pickle.dumps(odd))
    assert again.partitions == odd.partitions
    commit_write(store, "ds", [again], base=None, partition_on=["p"], secondary_indices=["x", "y"])
    got = kf.read_table("ds", store, predicates=[[("y", "in", [9, 10, 13])]])
    assert sorted(got["y"]) == [9, 10]  # 13 is in partition 3, which was dropped
    assert sorted(got["p"]) == [2, 2]
    index = kf.read_dataset_metadata("ds", store).load_index("y")
    labels = {w.label for w in odd.partitions}
    want: dict[int, list[str]] = {}
    for w in odd.partitions:
        for y in w.index_pairs["y"].pairs()["y"].to_pylist():
            want[y] = [w.label]
    got_index = dict(zip(index["y"].tolist(), (list(v) for v in index["partition"])))
    assert got_index == want and {lb for v in got_index.values() for lb in v} == labels
    # a chunk without shared rows pickles as it is
    assert ChunkResult((), None, "x").__reduce__()[0] is ChunkResult
