"""Reading parts of the statistics: the base columns of every file (optimize's sizes) and
the rows of the files a commit keeps (a commit that removes most files never decodes
their bloom filters). Both must agree with the whole merged table, deltas included."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

import kartoframe as kf
from kartoframe.storage.resolve import (
    load_dataset,
    load_statistics,
    statistics_base_columns,
    statistics_ref,
)
from kartoframe.storage.side_files import base_statistics

UUID = "parts"


def _day(day: int, rows: int = 40) -> pd.DataFrame:
    rng = np.random.default_rng(day)
    return pd.DataFrame(
        {"p": rng.integers(0, 4, rows), "k": rng.integers(0, 10_000, rows), "day": day}
    )


def _build(store: kf.Store, days: int = 6) -> None:
    for day in range(days):
        kf.update_dataset_from_dataframes(
            [_day(day)], store=store, dataset_uuid=UUID, partition_on=["p"]
        )
        if day == 0:
            kf.build_dataset_statistics(store, UUID, bloom_filter_columns=["k"])


def _by_label(table: pa.Table) -> dict[str, dict]:
    return {row["label"]: row for row in table.to_pylist()}


def test_base_columns_merge_to_the_whole_tables_columns(memory_store) -> None:
    _build(memory_store)
    loaded = load_dataset(memory_store, UUID)
    ref = statistics_ref(loaded.metadata)
    assert ref is not None and len(ref.deltas) >= 3  # appends wrote deltas
    tables = statistics_base_columns(memory_store, loaded)
    assert tables is not None and len(tables) == len(ref.keys)
    assert all(t.column_names == ["label", "key", "rows", "bytes"] for t in tables)
    merged: dict[str, tuple] = {}
    for t in tables:  # later rows win
        for row in t.to_pylist():
            merged[row["label"]] = (row["key"], row["rows"], row["bytes"])
    whole = load_statistics(memory_store, loaded).statistics
    assert whole is not None
    want = {r["label"]: (r["key"], r["rows"], r["bytes"]) for r in whole.to_pylist()}
    live = loaded.metadata.partitions
    assert {lb: v for lb, v in merged.items() if live.get(lb) == v[0]} == want


def test_the_kept_files_rows_equal_the_whole_tables(memory_store) -> None:
    _build(memory_store)
    loaded = load_dataset(memory_store, UUID)
    whole = _by_label(load_statistics(memory_store, loaded).statistics)
    kept = sorted(loaded.metadata.partitions)[::3]
    part = base_statistics(memory_store, loaded, kept)
    assert part is not None
    got = {lb: row for lb, row in _by_label(part).items() if lb in kept}
    assert got == {lb: whole[lb] for lb in kept}
    assert base_statistics(memory_store, loaded, []) is None


def test_an_optimize_of_most_partitions_keeps_the_others_statistics(memory_store) -> None:
    """Three of four partitions compacted: most rows go stale, so the commit folds the
    statistics into one file, reading only the kept partition's rows of the old ones."""
    _build(memory_store)
    before = _by_label(load_statistics(memory_store, load_dataset(memory_store, UUID)).statistics)
    result = kf.optimize_dataset(UUID, memory_store, predicates=[[("p", "!=", 0)]])
    ref = statistics_ref(load_dataset(memory_store, UUID).metadata)
    assert ref is not None and ref.deltas == ()  # folded
    assert result.files_removed > 1
    loaded = load_dataset(memory_store, UUID)
    after = _by_label(load_statistics(memory_store, loaded).statistics)
    assert sorted(after) == sorted(loaded.metadata.partitions)
    untouched = [lb for lb in before if lb.startswith("p=0/")]
    assert untouched and all(after[lb] == before[lb] for lb in untouched)
    new = [lb for lb in after if not lb.startswith("p=0/")]
    assert len(new) == result.files_added
    assert all(after[lb]["bloom"]["k"] for lb in new)
    assert sum(after[lb]["rows"] for lb in after) == sum(before[lb]["rows"] for lb in before)
    assert kf.check_dataset(UUID, memory_store).ok


def test_a_base_describing_few_files_is_read_whole_with_the_same_rows(memory_store) -> None:
    """A header of many files of which the statistics describe few (plateau wrote the
    rest) reads its statistics files whole and keeps the rows by lookup; the rows kept
    are those of the row-group path, and the fold commit stores the same statistics."""
    from kartoframe.format.header_partitions import PatchedPartitions
    from kartoframe.format.statistics_rows import live_statistics
    from kartoframe.storage import side_files

    _build(memory_store)
    loaded = load_dataset(memory_store, UUID)
    ref = statistics_ref(loaded.metadata)
    assert ref is not None and ref.deltas
    base = loaded.metadata.partitions
    gone = sorted(base)[::2]  # half the files replaced or removed
    fresh = {f"p=9/new{i}": f"{UUID}/table/p=9/new{i}.parquet" for i in range(4 * len(base))}
    fresh[gone[0]] = f"{UUID}/table/{gone[0]}-again.parquet"  # a label given a new file
    header = PatchedPartitions.over(base, frozenset(gone), fresh)
    assert ref.partitions * side_files.FEW_STATISTICS_ROWS < len(header)
    few = side_files.kept_statistics(memory_store, loaded, header)
    old_rule = side_files.FEW_STATISTICS_ROWS
    side_files.FEW_STATISTICS_ROWS = 10**9  # never "few": the row-group path
    try:
        by_groups = side_files.kept_statistics(memory_store, loaded, header)
    finally:
        side_files.FEW_STATISTICS_ROWS = old_rule
    assert few is not None and by_groups is not None
    a, b = live_statistics([few], header), live_statistics([by_groups], header)
    assert a.to_pylist() == b.to_pylist()
    kept = [lb for lb in base if lb not in gone]
    assert sorted(a.column("label").to_pylist()) == sorted(kept)


def test_appends_to_a_plateau_dataset_fold_their_statistics_right(tmp_path, monkeypatch) -> None:
    """Files without statistics (plateau wrote them), then kartoframe appends: the fold
    of their deltas (the few-rows path) keeps exactly the appended files' rows, in
    header order."""
    import pytest

    from kartoframe.format.statistics import MAX_STATISTICS_DELTAS

    plateau = pytest.importorskip("plateau.api.dataset")
    url = str(tmp_path / "store")
    from kartoframe.storage import side_files

    whole_reads = []
    read_whole = side_files.statistics_files
    monkeypatch.setattr(
        side_files,
        "statistics_files",
        lambda store, loaded: whole_reads.append(1) or read_whole(store, loaded),
    )
    df = pd.DataFrame({"p": range(200), "k": range(200), "day": -1})
    plateau.store_dataframes_as_dataset(
        store=f"hfs://{url}", dataset_uuid=UUID, dfs=[df], partition_on=["p"]
    )
    for day in range(MAX_STATISTICS_DELTAS + 3):
        kf.update_dataset_from_dataframes(
            [_day(day, rows=3)], store=url, dataset_uuid=UUID, partition_on=["p"]
        )
    store = kf.ensure_store(url)
    loaded = load_dataset(store, UUID)
    ref = statistics_ref(loaded.metadata)
    assert ref is not None and len(ref.deltas) < MAX_STATISTICS_DELTAS  # folded once
    stats = load_statistics(store, loaded).statistics
    assert stats is not None
    live = loaded.metadata.partitions
    described = stats.column("label").to_pylist()
    assert whole_reads == [1]  # the fold read the few rows whole
    assert len(described) == len(set(described)) == len(live) - 200  # the appended files
    keys = stats.column("key").to_pylist()
    assert all(live[lb] == k for lb, k in zip(described, keys, strict=True))
    assert described == [lb for lb in live if lb in set(described)]  # header order
    assert kf.check_dataset(UUID, store).ok
