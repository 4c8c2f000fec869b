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
