"""Copying a dataset's files to another name or store (``kf.copy_dataset``, ``kf.copy_cube``).

Only the leading ``<uuid>/`` of a key is renamed. A renamed copy drops the per-file
statistics reference (the statistics name the data files by key).
"""

from __future__ import annotations

import uuid as _uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from kartoframe.errors import CorruptMetadataError, InvalidInputError
from kartoframe.format import naming
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.header import DatasetHeader, kartoframe_section, with_kartoframe_section
from kartoframe.storage.lifecycle import commit
from kartoframe.storage.resolve import statistics_ref
from kartoframe.storage.store import Store

__all__ = [
    "assert_stores_differ",
    "copied_keys",
    "copy_renamed",
    "copy_files",
    "rekey",
    "renamed_header",
]


def rekey(key: str, old: str, new: str, *, strict: bool = True) -> str:
    """``key`` of dataset ``old`` renamed to dataset ``new``.

    Raises
    ------
    CorruptMetadataError
        ``strict`` and the key is outside the folder of ``old``.
    """
    if strict and not key.startswith(old + "/"):
        raise CorruptMetadataError(
            f"Dataset {old!r} references {key!r}, a key outside its folder; cannot copy it."
        )
    return new + key[len(old) :]


def renamed_header(md: DatasetHeader, new: str, *, strict: bool = True) -> DatasetHeader:
    """The header of the copy named ``new`` (without statistics if renamed)."""
    old = md.uuid
    header = md.replace(
        uuid=new,
        partitions={lb: rekey(k, old, new, strict=strict) for lb, k in md.partitions.items()},
        indices={c: rekey(k, old, new, strict=strict) for c, k in md.indices.items()},
    )
    if new != old:
        section = kartoframe_section(header)
        if section.pop("statistics", None) is not None:
            header = with_kartoframe_section(header, section)
    return header


def copied_keys(loaded: LoadedDataset, new: str, *, schema_file: bool = False) -> list[str]:
    """The keys a copy named ``new`` copies: data and index files, the statistics file when
    the name stays, ``_common_metadata`` with ``schema_file`` (sorted).
    """
    md = loaded.metadata
    keys = set(md.partitions.values()) | set(md.indices.values())
    stats = statistics_ref(md)
    if stats is not None and new == md.uuid:
        keys.update(stats.keys)
    if schema_file:
        keys.add(naming.common_metadata_key(md.uuid, md.table_name))
    return sorted(keys)


def copy_files(
    src: Store,
    tgt: Store,
    keys: list[str],
    old: str,
    new: str,
    *,
    strict: bool = True,
    advance: Callable[[], object] | None = None,
) -> None:
    """Copy ``keys`` of dataset ``old`` to dataset ``new`` in ``tgt``, 8 at a time;
    ``advance`` is called after each file.
    """

    def _copy(key: str) -> None:
        tgt.put(rekey(key, old, new, strict=strict), src.get(key))
        if advance is not None:
            advance()

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(_copy, keys))


def assert_stores_differ(src: Store, tgt: Store, prefix: str) -> None:
    """A probe key written to ``tgt`` (and removed) must not show up in ``src``."""
    key = f"{prefix}/.test_store_difference.{_uuid.uuid4().hex}"
    tgt.put(key, b"")
    try:
        if src.exists(key):
            raise InvalidInputError("Stores are identical but should not be.")
    finally:
        tgt.delete(key)


def copy_renamed(
    src: Store, tgt: Store, loaded: LoadedDataset, new: str, *, overwrite: bool
) -> None:
    """Copy a cube dataset's files (``_common_metadata`` included) to ``new`` in ``tgt``,
    then publish its renamed header (create; ``overwrite``: or replace).
    """
    keys = copied_keys(loaded, new, schema_file=True)
    copy_files(src, tgt, keys, loaded.uuid, new, strict=False)
    header = renamed_header(loaded.metadata, new, strict=False)
    commit(tgt, header, base_header=None, expect_absent=not overwrite)
