"""Cube maintenance: delete, copy (with renaming), cleanup and statistics."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kartoframe.execution.cube_copy import copy_cube_datasets
from kartoframe.format.cube import Cube
from kartoframe.format.dataset import LoadedDataset
from kartoframe.front.args import StoreInput, ensure_store, maintenance_flags
from kartoframe.front.cube_args import check_cube, fill
from kartoframe.storage.cube_members import load_cube_datasets
from kartoframe.storage.footer_stats import footer_sizes
from kartoframe.storage.garbage import delete_loaded, prefix_garbage
from kartoframe.storage.retention import GRACE_HOURS, check_grace
from kartoframe.storage.store import Store

__all__ = ["cleanup_cube", "collect_stats", "copy_cube", "delete_cube"]


def _selected(store: Store, cube: Cube, datasets: object) -> dict[str, LoadedDataset]:
    if isinstance(datasets, str):
        datasets = [datasets]
    return load_cube_datasets(store, cube.uuid_prefix, datasets)


def delete_cube(cube: Cube, store: StoreInput, datasets: Iterable[str] | None = None) -> None:
    """Delete the cube's datasets (or the selected ones).

    Each dataset is deleted like :func:`kartoframe.delete_dataset` does it — the deletion
    is committed first (the dataset disappears atomically for readers and concurrent
    writers lose), then the files its header references and its log are removed. Files no
    header references (garbage) are left to :func:`cleanup_cube`, as in kartothek.
    """
    check_cube(cube)
    st = ensure_store(store)
    for _ds_id, loaded in sorted(_selected(st, cube, datasets).items()):
        delete_loaded(st, loaded)


@fill
def cleanup_cube(
    cube: Cube,
    store: StoreInput,
    *,
    dry_run: bool = False,
    grace_hours: float = GRACE_HOURS,
    force: bool = False,
) -> list[str]:
    """Delete the files under ``<uuid_prefix>++`` that no dataset of the cube needs.

    Safe to run at any time with its defaults, also while cube writes run: it is
    :func:`kartoframe.garbage_collect_dataset` with ``retention_hours=0`` (the current
    version only, kartothek's meaning) run on every dataset uuid found under the prefix.
    For a dataset that exists (a header, or a log that commits it: a create between its
    log entry and its header exists), deleted are the data, index and statistics files
    its current version does not reference — nor any version committed while the
    cleanup runs (each dataset's log is read again after the listing) — and old temp
    files; its header, ``_common_metadata`` and transaction log stay. For a uuid without
    a dataset (deleted datasets, failed writes) every file a write of it generates goes,
    log included. In both cases a file is deleted only if

    * its name is one kartoframe's (or plateau's) writes generate
      (:mod:`kartoframe.format.generated`): other files under the prefix are never
      touched;
    * it is older than ``grace_hours`` by the store's modification time: the files of a
      ``build_cube``, ``extend_cube``, ``append_to_cube`` or ``update_cube`` written but
      not yet committed are newer.

    Parameters
    ----------
    cube
        The cube (its ``uuid_prefix`` selects the keys).
    $store
    dry_run
        Delete nothing; return exactly what the call would delete (the same
        computation).
    $grace_hours
    force
        Allow ``grace_hours`` below 1 hour. **Unsafe** while any write to the cube runs:
        its files can be deleted before it commits. A warning is logged (logger
        ``kartoframe.maintenance``).

    $returns_deleted

    Raises
    ------
    InvalidInputError
        ``grace_hours`` is not a finite number >= 0, or below 1 without ``force``, or
        ``dry_run``/``force`` is not a bool.
    CorruptMetadataError
        A dataset's header or log is corrupt (nothing of it is deleted).
    """
    check_cube(cube)
    st = ensure_store(store)
    maintenance_flags(dry_run, force)
    grace = check_grace(grace_hours, force=force, what="cleanup_cube")
    return prefix_garbage(st, cube.uuid_prefix, grace, dry_run=dry_run)


def collect_stats(
    cube: Cube, store: StoreInput, datasets: Iterable[str] | None = None
) -> dict[str, dict[str, int]]:
    """Per dataset: ``blobsize`` (bytes), ``files``, ``partitions`` (physical), ``rows``.

    Row counts come from the Parquet footers (ranged reads), sizes from the store.
    """
    check_cube(cube)
    st = ensure_store(store)
    return {
        ds_id: footer_sizes(st, loaded.metadata)
        for ds_id, loaded in sorted(_selected(st, cube, datasets).items())
    }


def copy_cube(
    cube: Cube,
    src_store: StoreInput,
    tgt_store: StoreInput,
    overwrite: bool = False,
    datasets: Iterable[str] | None = None,
    renamed_cube_prefix: str | None = None,
    renamed_datasets: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Copy the cube's datasets to another store, optionally renaming prefix and datasets.

    The target is checked first: the stores must differ (a probe key is written to the
    target and looked up in the source), existing target datasets need ``overwrite``, and
    the target cube must be consistent with the copied datasets. Files are copied first,
    then headers are published one dataset at a time (the seed last).

    Returns
    -------
    dict
        Source dataset id -> target dataset uuid.
    """
    check_cube(cube)
    src, tgt = ensure_store(src_store), ensure_store(tgt_store)
    return copy_cube_datasets(
        cube,
        src,
        tgt,
        overwrite=overwrite,
        datasets=datasets,
        renamed_cube_prefix=renamed_cube_prefix,
        renamed_datasets=renamed_datasets,
    )
