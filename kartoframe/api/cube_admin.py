"""Cube maintenance: delete, copy (with renaming), cleanup and statistics."""

from __future__ import annotations

import uuid as _uuid
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor

from kartoframe.api._args import StoreInput, ensure_store
from kartoframe.api.cube import load_cube_datasets
from kartoframe.errors import (
    DatasetExistsError,
    DatasetNotFoundError,
    InvalidInputError,
    InvalidTypeError,
)
from kartoframe.format import naming
from kartoframe.format.cube import SEPARATOR, Cube, check_datasets, member_from_loaded, str_tuple
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.header import DatasetHeader, kartoframe_section, with_kartoframe_section
from kartoframe.format.statistics import STATISTICS_DIR
from kartoframe.storage.lifecycle import commit, delete_headers, delete_log, mark_deleted
from kartoframe.storage.parquet import read_footer
from kartoframe.storage.resolve import statistics_ref
from kartoframe.storage.store import Store

__all__ = ["cleanup_cube", "collect_stats", "copy_cube", "delete_cube"]


def _check_cube(cube: object) -> Cube:
    if not isinstance(cube, Cube):
        raise InvalidTypeError(f"cube must be a kartoframe.Cube, got {type(cube).__name__}.")
    return cube


def dataset_keys(loaded: LoadedDataset) -> set[str]:
    """Every key a dataset's header references: header, schema, indices, data files."""
    md = loaded.metadata
    keys = {naming.header_key(md.uuid, md.storage_format)}
    keys.add(naming.common_metadata_key(md.uuid, md.table_name))
    keys |= set(md.indices.values())
    keys |= set(md.partitions.values())
    stats = statistics_ref(md)
    if stats is not None and stats.key is not None:
        keys.add(stats.key)
    return keys


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
    _check_cube(cube)
    st = ensure_store(store)
    for _ds_id, loaded in sorted(_selected(st, cube, datasets).items()):
        keys = dataset_keys(loaded)
        mark_deleted(st, loaded.uuid)
        delete_headers(st, loaded.uuid)
        st.delete_many(sorted(keys))
        delete_log(st, loaded.uuid)


def cleanup_cube(cube: Cube, store: StoreInput) -> list[str]:
    """Delete every key under ``<uuid_prefix>++`` that no live dataset of the cube needs.

    Kept: the keys each discovered dataset's header references and its kartoframe
    metadata below ``<uuid>/_kartoframe/`` (transaction log; unreferenced statistics files
    are garbage). Deleted: everything else, including all files of datasets whose header
    is gone.

    Returns
    -------
    list of str
        The deleted keys.
    """
    st = ensure_store(store)
    garbage = cube_garbage(cube, st)
    st.delete_many(garbage)
    return garbage


def cube_garbage(cube: Cube, store: StoreInput) -> list[str]:
    """The keys :func:`cleanup_cube` would delete (sorted), without deleting anything."""
    _check_cube(cube)
    st = ensure_store(store)
    datasets = load_cube_datasets(st, cube.uuid_prefix)
    live: set[str] = set()
    for loaded in datasets.values():
        live |= dataset_keys(loaded)
    owners = sorted((d.uuid for d in datasets.values()), key=len, reverse=True)
    garbage = []
    for key in st.iter_keys(cube.uuid_prefix + SEPARATOR):
        if key in live:
            continue
        owner = next((u for u in owners if key.startswith((u + "/", u + "."))), None)
        if (
            owner is not None
            and key.startswith(f"{owner}/_kartoframe/")
            and not key.startswith(f"{owner}/{STATISTICS_DIR}/")
        ):
            continue
        garbage.append(key)
    return sorted(garbage)


def collect_stats(
    cube: Cube, store: StoreInput, datasets: Iterable[str] | None = None
) -> dict[str, dict[str, int]]:
    """Per dataset: ``blobsize`` (bytes), ``files``, ``partitions`` (physical), ``rows``.

    Row counts come from the Parquet footers (ranged reads), sizes from the store.
    """
    _check_cube(cube)
    st = ensure_store(store)
    out: dict[str, dict[str, int]] = {}
    for ds_id, loaded in sorted(_selected(st, cube, datasets).items()):
        md = loaded.metadata
        keys = list(md.partitions.values())

        def _one(key: str) -> tuple[int, int]:
            return read_footer(st, key).num_rows, st.size(key)

        with ThreadPoolExecutor(max_workers=8) as pool:
            sizes = list(pool.map(_one, keys))
        physical = {lb.rsplit("/", 1)[0] if "/" in lb else "" for lb in md.partitions}
        out[ds_id] = {
            "blobsize": sum(s for _, s in sizes),
            "files": len(keys),
            "partitions": len(physical) if md.partition_keys else 1,
            "rows": sum(r for r, _ in sizes),
        }
    return out


def _assert_stores_different(src: Store, tgt: Store, prefix: str) -> None:
    key = f"{prefix}/.test_store_difference.{_uuid.uuid4().hex}"
    tgt.put(key, b"")
    try:
        if src.exists(key):
            raise InvalidInputError("Stores are identical but should not be.")
    finally:
        tgt.delete(key)


def _renamed_uuid(
    ds_id: str, prefix: str, renamed_prefix: str | None, renamed: Mapping[str, str]
) -> tuple[str, str]:
    new_id = renamed.get(ds_id, ds_id)
    new_prefix = renamed_prefix or prefix
    return new_id, f"{new_prefix}{SEPARATOR}{new_id}"


def _rekey(key: str, old: str, new: str) -> str:
    return new + key[len(old) :]


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
    _check_cube(cube)
    src, tgt = ensure_store(src_store), ensure_store(tgt_store)
    renamed = dict(renamed_datasets or {})
    if renamed_cube_prefix is not None:
        cube.copy(uuid_prefix=renamed_cube_prefix)  # validates the prefix
    for new in renamed.values():
        cube.ktk_dataset_uuid(new)
    _assert_stores_different(src, tgt, cube.ktk_dataset_uuid(cube.seed_dataset))
    wanted = None if datasets is None else set(str_tuple(datasets, "datasets", ordered=False))
    source = load_cube_datasets(src, cube.uuid_prefix, wanted)
    if wanted is None and not source:
        raise DatasetNotFoundError(cube.ktk_dataset_uuid(cube.seed_dataset), src.url)
    if wanted is not None:
        missing = sorted(wanted - set(source))
        if missing:
            raise DatasetNotFoundError(cube.ktk_dataset_uuid(missing[0]), src.url)
    new_cube = cube.copy(
        uuid_prefix=renamed_cube_prefix or cube.uuid_prefix,
        seed_dataset=renamed.get(cube.seed_dataset, cube.seed_dataset),
    )
    target = load_cube_datasets(tgt, new_cube.uuid_prefix)
    plan: dict[str, tuple[str, str]] = {
        ds_id: _renamed_uuid(ds_id, cube.uuid_prefix, renamed_cube_prefix, renamed)
        for ds_id in source
    }
    if not overwrite:
        for ds_id in sorted(source):
            new_id, new_uuid = plan[ds_id]
            if new_id in target:
                raise DatasetExistsError(new_uuid)
    members = {k: member_from_loaded(k, v) for k, v in target.items()}
    for ds_id, loaded in source.items():
        new_id, _ = plan[ds_id]
        members[new_id] = member_from_loaded(new_id, loaded)
    check_datasets(members, new_cube)
    order = sorted(source, key=lambda d: (d == cube.seed_dataset, d))
    for ds_id in order:
        loaded = source[ds_id]
        _, new_uuid = plan[ds_id]
        _copy_dataset(src, tgt, loaded, new_uuid, overwrite=overwrite)
    return {ds_id: plan[ds_id][1] for ds_id in order}


def _copy_dataset(
    src: Store, tgt: Store, loaded: LoadedDataset, new_uuid: str, *, overwrite: bool
) -> None:
    md = loaded.metadata
    old = md.uuid
    keys = sorted(set(md.partitions.values()) | set(md.indices.values()))
    keys.append(naming.common_metadata_key(old, md.table_name))
    stats = statistics_ref(md)
    if stats is not None and stats.key is not None and new_uuid == old:
        keys.append(stats.key)

    def _copy(key: str) -> None:
        tgt.put(_rekey(key, old, new_uuid), src.get(key))

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(_copy, keys))
    header = DatasetHeader(
        uuid=new_uuid,
        partitions={lb: _rekey(k, old, new_uuid) for lb, k in md.partitions.items()},
        table_name=md.table_name,
        partition_keys=md.partition_keys,
        indices={c: _rekey(k, old, new_uuid) for c, k in md.indices.items()},
        embedded_indices=md.embedded_indices,
        metadata=md.metadata,
        explicit_partitions=md.explicit_partitions,
        storage_format=md.storage_format,
        extra=md.extra,
    )
    if new_uuid != old:
        # per-file statistics name the data files by key: drop them for a renamed copy
        section = kartoframe_section(header)
        section.pop("statistics", None)
        header = with_kartoframe_section(header, section)
    commit(tgt, header, base_header=None, expect_absent=not overwrite)
