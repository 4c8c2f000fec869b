"""Building per-file statistics of existing datasets (``kf.build_dataset_statistics``)."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa

from kartoframe.errors import CorruptMetadataError
from kartoframe.execution.kernel import read_task_table
from kartoframe.execution.write import commit_write
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.statistics import merge_statistics
from kartoframe.format.statistics_compute import compute_statistics, with_files
from kartoframe.plan.scan import ReadTask, plan_scan
from kartoframe.plan.stats_report import current_statistics
from kartoframe.storage.resolve import bloom_columns_of, load_statistics
from kartoframe.storage.store import Store

__all__ = ["build_statistics"]


def _file_statistics(
    st: Store, loaded: LoadedDataset, labels: Sequence[str], blooms: Sequence[str]
) -> pa.Table:
    """Read the given files and compute their statistics (one row per file)."""
    md = loaded.metadata
    data_cols = [c for c in loaded.schema.names if c not in md.partition_keys]
    plan = plan_scan(loaded, columns=data_cols, labels=list(labels))

    def _one(task: ReadTask) -> pa.Table:
        f = task.files[0]
        table = read_task_table(plan, task, st, use_threads=False)
        stats = compute_statistics([table], bloom_filter_columns=blooms)
        return with_files(stats, [f.label], [f.key], [st.size(f.key)])

    with ThreadPoolExecutor(max_workers=4) as pool:
        parts = list(pool.map(_one, plan.tasks))
    return merge_statistics(
        None, parts, md.partitions, loaded.schema, md.partition_keys, list(blooms)
    )


def build_statistics(
    st: Store, loaded: LoadedDataset, blooms: tuple[str, ...], *, rebuild: bool
) -> None:
    """Compute the statistics of the files that lack them (``rebuild``: of all) and commit.

    A change of the bloom-filter columns recomputes every file.
    """
    md = loaded.metadata
    rebuild = rebuild or set(blooms) != set(bloom_columns_of(loaded))
    try:
        existing = (
            None
            if rebuild
            else current_statistics(load_statistics(st, loaded), bloom_columns_of(loaded))
        )
    except CorruptMetadataError:  # an unreadable or missing file is rebuilt
        existing = None
    done = set(existing.column("label").to_pylist()) if existing is not None else set()
    todo = [lb for lb in md.partitions if lb not in done]
    fresh = _file_statistics(st, loaded, todo, blooms) if todo else None
    commit_write(
        st,
        md.uuid,
        [],
        base=loaded,
        storage_format=md.storage_format,
        table_name=md.table_name,
        owns_files=False,
        explicit_partitions=md.explicit_partitions,
        statistics=[fresh] if fresh is not None else [],
        bloom_filter_columns=blooms,
    )
