"""Dask graphs of the dataset statistics: content hashes and Parquet footer statistics."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pandas as pd

from kartoframe.execution import dask_engine as de
from kartoframe.execution import dask_stats as ds
from kartoframe.plan.scan import ScanPlan
from kartoframe.storage.store import Store

__all__ = ["hash_graph", "metadata_graph"]


def hash_graph(
    plan: ScanPlan,
    st: Store,
    output: Sequence[str],
    keys: Sequence[str],
    subset: Sequence[str] | None,
    *,
    by_files: bool,
) -> Any:
    """The ``uint64`` hash per partition (no ``keys``) or per group of ``keys``; groups
    are whole tasks when ``by_files``, else shuffled (dask's task shuffle).
    """
    ddf = de.plan_to_ddf(plan, st, output_columns=list(output))
    hashed = list(subset) if subset is not None else list(output)
    keys = list(keys)
    with de.no_string_conversion():
        if not keys:
            return ddf.map_partitions(ds.hash_partition, hashed, meta=pd.Series([], dtype="uint64"))
        meta = ds.hash_groups(ddf._meta, keys, hashed)
        grouped = ddf if by_files else ddf.shuffle(on=keys, shuffle_method="tasks")
        return grouped.map_partitions(ds.hash_groups, keys, hashed, meta=meta)


def metadata_graph(plan: ScanPlan, st: Store, frac: float, seed: int | None) -> Any:
    """Footer statistics of the planned files (a sample of ``frac`` of them, at least one)."""
    parts = [(f.label, f.key) for t in plan.tasks for f in t.files]
    if frac < 1.0 and parts:
        rng = random.Random(seed)
        parts = rng.sample(parts, max(1, int(len(parts) * frac)))
    token = de.plan_token(plan, st, "metadata", parts)
    return ds.metadata_ddf(st, parts, token)
