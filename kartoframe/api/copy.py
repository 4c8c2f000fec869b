"""Copy (and rename) a dataset within a store or to another store."""

from __future__ import annotations

from kartoframe.errors import DatasetExistsError, InvalidInputError
from kartoframe.format import naming
from kartoframe.front.args import StoreInput, ensure_store
from kartoframe.front.docs import fill
from kartoframe.front.results import DatasetMetadataResult
from kartoframe.plan.arguments import check_uuid
from kartoframe.progress import ProgressBar
from kartoframe.storage.dataset_copy import copied_keys, copy_files, renamed_header
from kartoframe.storage.lifecycle import commit
from kartoframe.storage.resolve import load_dataset, read_header

__all__ = ["copy_dataset"]


@fill
def copy_dataset(
    source_dataset_uuid: str,
    store: StoreInput,
    target_dataset_uuid: str | None = None,
    target_store: StoreInput | None = None,
    *,
    overwrite: bool = False,
    progress: bool = False,
) -> dict[str, DatasetMetadataResult]:
    """Copy a dataset, optionally renaming it, within one store or to another store.

    Every file the header references (data files, index files, the schema) is copied,
    then the header is published in the target (one atomic step): readers of the target
    see either nothing (or the old dataset) or the complete copy. Files of the source that
    no header references are not copied.

    Unlike kartothek's ``copy_dataset``, only the leading ``<uuid>/`` of a key is renamed
    (kartothek replaced the uuid anywhere in the key, including partition values), and an
    existing target is only replaced with ``overwrite=True``.

    Parameters
    ----------
    source_dataset_uuid
        The dataset to copy.
    store
        Source store: URL, :class:`kartoframe.Store` or factory.
    target_dataset_uuid
        Name of the copy (default: the source name; then the stores must differ).
    target_store
        Target store (default: the source store; then the names must differ).
    overwrite
        Replace an existing target dataset. Its files that the copy does not reuse become
        garbage for :func:`kartoframe.garbage_collect_dataset`.
    progress
        Show a progress bar of the files copied (only on a terminal).

    Returns
    -------
    dict
        ``{target_dataset_uuid: handle of the copy}`` (the shape of kartothek's result).

    Raises
    ------
    DatasetNotFoundError
        The source dataset does not exist.
    DatasetExistsError
        The target exists and ``overwrite`` is False.
    InvalidInputError
        Source and target are the same dataset in the same store.
    CommitConflictError
        The target was created or changed by another writer during the copy.

    Notes
    -----
    Per-file statistics (``build_dataset_statistics``) name the data files by key; a
    renamed copy drops them (rebuild them on the copy), a copy under the same name keeps
    them.

    $examples
    >>> _ = kf.store_dataframes_as_dataset(store="memory://copy-src", dataset_uuid="sales",
    ...     dfs=[pd.DataFrame({"country": ["DE", "FR"], "units": [1, 2]})],
    ...     partition_on=["country"])
    >>> sorted(kf.copy_dataset("sales", "memory://copy-src", "sales_2024"))
    ['sales_2024']
    >>> kf.read_table("sales_2024", "memory://copy-src")["units"].tolist()
    [1, 2]
    """
    src = ensure_store(store)
    tgt = src if target_store is None else ensure_store(target_store)
    old = check_uuid(source_dataset_uuid)
    new = old if target_dataset_uuid is None else check_uuid(target_dataset_uuid)
    if not isinstance(overwrite, bool):
        raise InvalidInputError("overwrite must be a bool.")
    if new == old and src == tgt:
        raise InvalidInputError(
            f"Cannot copy dataset {old!r} onto itself: give another target name or store."
        )
    loaded = load_dataset(src, old)
    existing = read_header(tgt, new)
    if existing is not None and not overwrite:
        raise DatasetExistsError(new)
    keys = copied_keys(loaded, new)
    with ProgressBar(f"copying {old}", len(keys), enabled=progress, unit="files") as bar:
        copy_files(src, tgt, keys, old, new, advance=bar.advance)
    commit(
        tgt,
        renamed_header(loaded.metadata, new),
        base_header=None if existing is None else existing[1],
        expect_absent=existing is None,
        schema_bytes=src.get(naming.common_metadata_key(old, loaded.metadata.table_name)),
    )
    return {new: DatasetMetadataResult(new, tgt)}
