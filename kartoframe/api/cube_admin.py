"""Cube maintenance: delete, copy (with renaming), cleanup and statistics."""

from __future__ import annotations

import uuid as _uuid
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor

from kartoframe.api._args import StoreInput, ensure_store
from kartoframe.api.cube import load_cube_datasets
from kartoframe.api.maintenance import collect_dataset_garbage
from kartoframe.errors import (
    DatasetExistsError,
    DatasetNotFoundError,
    InvalidInputError,
    InvalidTypeError,
    InvalidUUIDError,
)
from kartoframe.format import naming
from kartoframe.format.cube import SEPARATOR, Cube, check_datasets, member_from_loaded, str_tuple
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.header import DatasetHeader, kartoframe_section, with_kartoframe_section
from kartoframe.storage.lifecycle import commit, delete_headers, delete_log, mark_deleted
from kartoframe.storage.parquet import read_footer
from kartoframe.storage.resolve import statistics_ref
from kartoframe.storage.retention import GRACE_HOURS, check_grace
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
    store
        Store URL, :class:`kartoframe.Store` or factory.
    dry_run
        Delete nothing; return exactly what the call would delete (the same
        computation).
    grace_hours
        Minimum age of a deleted file (default 1 hour). Shorter windows need ``force``.
    force
        Allow ``grace_hours`` below 1 hour. **Unsafe** while any write to the cube runs:
        its files can be deleted before it commits. A warning is logged (logger
        ``kartoframe.maintenance``).

    Returns
    -------
    list of str
        The deleted keys (with ``dry_run``: the keys that would be deleted), sorted.

    Raises
    ------
    InvalidInputError
        ``grace_hours`` is not a finite number >= 0, or below 1 without ``force``, or
        ``dry_run``/``force`` is not a bool.
    CorruptMetadataError
        A dataset's header or log is corrupt (nothing of it is deleted).
    """
    _check_cube(cube)
    st = ensure_store(store)
    if not isinstance(dry_run, bool) or not isinstance(force, bool):
        raise InvalidInputError("dry_run and force must be booleans.")
    grace = check_grace(grace_hours, force=force, what="cleanup_cube")
    return prefix_garbage(st, cube.uuid_prefix, grace, dry_run=dry_run)


def cube_garbage(
    cube: Cube, store: StoreInput, *, grace_hours: float = GRACE_HOURS, force: bool = False
) -> list[str]:
    """The keys :func:`cleanup_cube` would delete (sorted), without deleting anything."""
    return cleanup_cube(cube, store, dry_run=True, grace_hours=grace_hours, force=force)


def prefix_uuids(store: Store, uuid_prefix: str) -> list[str]:
    """Every dataset uuid that owns a key under ``<uuid_prefix>++`` (sorted).

    A key ``<uuid>/...`` or a header ``<uuid>.by-dataset-metadata.*`` names its dataset;
    names that are no valid uuid (foreign folders) are skipped.
    """
    found: set[str] = set()
    for key in store.iter_keys(uuid_prefix + SEPARATOR):
        head, sep, _ = key.partition("/")
        if not sep:
            suffix = next((x for x in naming.HEADER_SUFFIXES.values() if head.endswith(x)), None)
            if suffix is None:
                continue
            head = head[: -len(suffix)]
        if len(head) > len(uuid_prefix + SEPARATOR):
            try:
                found.add(naming.validate_uuid(head))
            except InvalidUUIDError:  # not a dataset's name
                continue
    return sorted(found)


def prefix_garbage(
    store: Store, uuid_prefix: str, grace_hours: float, *, dry_run: bool
) -> list[str]:
    """:func:`cleanup_cube` on validated arguments: the dataset garbage collection
    (:func:`kartoframe.api.maintenance.collect_dataset_garbage`, ``retention_hours=0``) of
    every uuid under the prefix; the deleted (``dry_run``: deletable) keys, sorted.
    """
    deleted: list[str] = []
    for uuid in prefix_uuids(store, uuid_prefix):
        try:
            keys = collect_dataset_garbage(store, uuid, 0.0, grace_hours, dry_run=dry_run)
        except DatasetNotFoundError:  # deleted while the cleanup ran: nothing to do
            continue
        deleted.extend(keys or ())
    return sorted(deleted)


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
