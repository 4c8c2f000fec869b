"""Index entries of a chunk's files: labels of one partial index per indexed column (no
Arrow table per file), which travel alone when pickled, once per chunk inside a pickled
chunk, and are merged by the commit row group by row group."""

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
from kartoframe.format.index_group import merge_parts
from kartoframe.plan.write import ChunkResult, FilePairs, chunk_pairs, index_parts


def _files(n: int, seed: int = 0, prefix: str = "p") -> list[tuple[str, pa.Table]]:
    rng = np.random.default_rng(seed)
    labels = [f"{prefix}={i}/f" for i in range(n)]
    return [(lb, index_value_pairs("x", pa.array(rng.integers(0, 9, size=5)), lb)) for lb in labels]


def _merged(rows: list[pa.Table | FilePairs]) -> pa.Table:
    return merge_parts("x", index_parts("x", rows)).table()


def test_a_files_entries_are_its_pairs() -> None:
    files = _files(6)
    entries = chunk_pairs("x", files)
    assert len({id(e.index) for e in entries}) == 1
    assert entries[0].index.codes.dtype == np.uint16  # 2 bytes per value and file
    for (label, table), e in zip(files, entries, strict=True):
        got = e.pairs()
        assert sorted(got["x"].to_pylist()) == sorted(table["x"].to_pylist())
        assert got["label"].cast(pa.string()).to_pylist() == [label] * got.num_rows
    want = build_index("x", pa.int64(), [t for _, t in files])
    assert _merged(entries).equals(want)  # type: ignore[arg-type]


def test_entries_in_any_mix_and_order_merge_to_the_index_of_their_pairs() -> None:
    """Whole chunks, chunks with files missing or reordered, and plain pair tables between
    them: each value lists its labels in input order."""
    a, b = _files(5, 1, "a"), _files(4, 2, "b")
    ea, eb = chunk_pairs("x", a), chunk_pairs("x", b)
    loose = _files(2, 3, "t")
    cases = [
        ([*ea, *eb], [*a, *b]),
        ([ea[0], ea[2], loose[0][1], ea[3], eb[1]], [a[0], a[2], loose[0], a[3], b[1]]),
        ([eb[3], eb[0], eb[2], loose[1][1], loose[0][1]], [b[3], b[0], b[2], loose[1], loose[0]]),
        ([loose[0][1]], [loose[0]]),
    ]
    for rows, files in cases:
        want = build_index("x", pa.int64(), [t for _, t in files])
        assert _merged(rows).equals(want)  # type: ignore[arg-type]
    assert index_parts("x", []) == []


def test_a_pickled_entry_travels_without_its_chunk() -> None:
    entries = chunk_pairs("x", _files(200))
    back = pickle.loads(pickle.dumps(entries[77], protocol=5))
    assert isinstance(back, FilePairs) and len(back.index.labels) == 1
    assert back == entries[77] and back != entries[78]
    assert len(pickle.dumps(entries[77])) < len(pickle.dumps(entries[0].index)) / 5


def test_a_pickled_chunk_carries_one_partial_index_per_column(tmp_path) -> None:
    store = kf.Store(f"file://{tmp_path}")
    df = pd.DataFrame(
        {"p": np.repeat(np.arange(100), 4), "x": np.arange(400) % 7, "y": np.arange(400)}
    )
    result = write_chunk(store, "ds", df, partition_on=["p"], index_columns=["x", "y"])
    for col in ("x", "y"):
        assert len({id(w.index_pairs[col].index) for w in result.partitions}) == 1
    data = pickle.dumps(result, protocol=5)
    back = pickle.loads(data)
    for col in ("x", "y"):
        assert len({id(w.index_pairs[col].index) for w in back.partitions}) == 1
    assert back.partitions == result.partitions
    assert len(data) < len(pickle.dumps(result.partitions, protocol=5)) / 2
    # a chunk whose files are no longer all of its partial index (a filtered re-write)
    # still commits exactly its files' index entries
    odd = dataclasses.replace(back, partitions=back.partitions[::2])
    again = pickle.loads(pickle.dumps(odd))
    assert again.partitions == odd.partitions
    commit_write(store, "ds", [again], base=None, partition_on=["p"], secondary_indices=["x", "y"])
    got = kf.read_table("ds", store, predicates=[[("y", "in", [9, 10, 13])]])
    assert sorted(got["y"]) == [9, 10]  # 13 is in partition 3, which was dropped
    assert sorted(got["p"]) == [2, 2]
    index = kf.read_dataset_metadata("ds", store).load_index("y")
    want: dict[int, list[str]] = {}
    for w in odd.partitions:
        for y in w.index_pairs["y"].pairs()["y"].to_pylist():
            want.setdefault(y, []).append(w.label)
    got_index = dict(zip(index["y"].tolist(), (list(v) for v in index["partition"])))
    assert got_index == want and len(want) == 200
    # a chunk without shared entries pickles as it is
    assert ChunkResult((), None, "x").__reduce__()[0] is ChunkResult


def test_files_without_values_keep_their_labels() -> None:
    """An all-null indexed column: the chunk's partial index has no value but every file
    keeps its label code (hypothesis found the commit indexing past the labels)."""
    files = [
        (f"p={i}/f", index_value_pairs("x", pa.array([None], pa.int64()), f"p={i}/f"))
        for i in range(3)
    ]
    entries = chunk_pairs("x", files)
    assert len(entries[0].index.labels) == 3 and entries[0].index.num_rows == 0
    assert _merged([entries[0], entries[2]]).num_rows == 0
    with_values = chunk_pairs("x", _files(2))
    assert _merged([entries[1], *with_values]).equals(_merged(with_values))  # type: ignore[list-item]
