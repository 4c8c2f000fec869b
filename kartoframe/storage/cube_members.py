"""Load a cube's member datasets: header and schema of every ``<prefix>++<id>`` dataset
(concurrently on remote stores: :func:`~kartoframe.storage.io_map.io_map`), and the
requested ones checked against the cube rules.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from kartoframe.errors import DatasetNotFoundError, InvalidInputError
from kartoframe.format.cube import (
    SEPARATOR,
    Cube,
    check_datasets,
    dataset_ids_from_listing,
    member_from_loaded,
    str_tuple,
)
from kartoframe.format.dataset import LoadedDataset
from kartoframe.storage.io_map import io_map
from kartoframe.storage.resolve import load_dataset
from kartoframe.storage.store import Store

__all__ = ["load_checked", "load_cube_datasets", "select_members"]

#: the logger of the cube API (where these loads were made before)
_log = logging.getLogger("kartoframe.api.cube")


def _dataset_ids(store: Store, uuid_prefix: str) -> list[str]:
    names = store.iter_prefixes(prefix=uuid_prefix + SEPARATOR, delimiter="/")
    return dataset_ids_from_listing(uuid_prefix, names)


def _filter_arg(value: object) -> set[str] | None:
    if value is None:
        return None
    return set(str_tuple(value, "filter_ktk_cube_dataset_ids", ordered=False))


def load_cube_datasets(
    store: Store, uuid_prefix: str, filter_ids: object = None
) -> dict[str, LoadedDataset]:
    """Load header and schema of the cube's datasets (no consistency check)."""
    ids = _dataset_ids(store, uuid_prefix)
    wanted = _filter_arg(filter_ids)
    if wanted is not None:
        ids = [i for i in ids if i in wanted]

    def _load(ds_id: str) -> tuple[str, LoadedDataset | None]:
        try:
            return ds_id, load_dataset(store, f"{uuid_prefix}{SEPARATOR}{ds_id}")
        except DatasetNotFoundError:  # removed between listing and loading
            _log.warning("Ignoring dataset %r: its header disappeared.", ds_id)
            return ds_id, None

    found = io_map(store, _load, ids)
    return {k: v for k, v in found if v is not None}


def load_checked(cube: Cube, store: Store, filter_ids: object = None) -> dict[str, LoadedDataset]:
    """Load the cube's (requested) datasets and check them against the cube rules.

    Raises
    ------
    InvalidInputError
        A requested dataset is missing or a cube rule is broken (e.g. no seed).
    """
    return select_members(cube, load_cube_datasets(store, cube.uuid_prefix, filter_ids), filter_ids)


def select_members(
    cube: Cube, datasets: Mapping[str, LoadedDataset], filter_ids: object = None
) -> dict[str, LoadedDataset]:
    """The requested datasets of the loaded ones, checked against the cube rules."""
    wanted = _filter_arg(filter_ids)
    if wanted is not None:
        missing = sorted(wanted - set(datasets))
        if missing:
            raise InvalidInputError(
                f"Could not find the following requested datasets: {', '.join(missing)}"
            )
        datasets = {k: v for k, v in datasets.items() if k in wanted}
    check_datasets({k: member_from_loaded(k, v) for k, v in datasets.items()}, cube)
    return dict(datasets)
