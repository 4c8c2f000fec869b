"""The dataset the optimize, merge and external-sort tests build: one append per day,
partitioned by ``p``, with an index on ``k`` and a bloom filter on ``k`` from the first
day on (so later days' files carry index entries and statistics too)."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

import kartoframe as kf


def append_daily(store: kf.Store, dataset_uuid: str, days: Iterable[pd.DataFrame]) -> pd.DataFrame:
    """Append each frame of ``days`` in its own commit; all their rows, in order."""
    frames = []
    for day, df in enumerate(days):
        frames.append(df)
        kf.update_dataset_from_dataframes(
            [df],
            store=store,
            dataset_uuid=dataset_uuid,
            partition_on=["p"],
            secondary_indices=["k"] if day == 0 else None,
        )
        if day == 0:
            kf.build_dataset_statistics(store, dataset_uuid, bloom_filter_columns=["k"])
    return pd.concat(frames, ignore_index=True)
