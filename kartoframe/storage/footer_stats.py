"""Sizes and row counts of a dataset's data files, from the store and the Parquet footers."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from kartoframe.format.header import DatasetHeader
from kartoframe.format.naming import label_directory
from kartoframe.storage.parquet import read_footer
from kartoframe.storage.store import Store

__all__ = ["data_file_sizes", "footer_sizes"]


def data_file_sizes(store: Store, keys: Sequence[str]) -> dict[str, int]:
    """Sizes in bytes of data files, asked of the store (8 requests at a time)."""
    if not keys:
        return {}
    with ThreadPoolExecutor(max_workers=min(8, len(keys))) as pool:
        return dict(zip(keys, pool.map(store.size, keys), strict=True))


def footer_sizes(store: Store, md: DatasetHeader) -> dict[str, int]:
    """``blobsize`` (bytes), ``files``, ``partitions`` (physical) and ``rows`` of a dataset.

    Row counts come from the Parquet footers (ranged reads, 8 at a time), sizes from the
    store.
    """
    keys = list(md.partitions.values())

    def _one(key: str) -> tuple[int, int]:
        return read_footer(store, key).num_rows, store.size(key)

    with ThreadPoolExecutor(max_workers=8) as pool:
        sizes = list(pool.map(_one, keys))
    physical = {label_directory(lb) for lb in md.partitions}
    return {
        "blobsize": sum(s for _, s in sizes),
        "files": len(keys),
        "partitions": len(physical) if md.partition_keys else 1,
        "rows": sum(r for r, _ in sizes),
    }
