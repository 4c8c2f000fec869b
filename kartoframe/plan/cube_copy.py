"""The plan of ``kf.copy_cube``: target uuids, conflicts and the cube rules, checked first."""

from __future__ import annotations

from collections.abc import Mapping

from kartoframe.errors import DatasetExistsError
from kartoframe.format.cube import SEPARATOR, Cube, check_datasets, member_from_loaded
from kartoframe.format.dataset import LoadedDataset

__all__ = ["plan_cube_copy"]


def plan_cube_copy(
    cube: Cube,
    source: Mapping[str, LoadedDataset],
    target: Mapping[str, LoadedDataset],
    *,
    renamed_prefix: str | None,
    renamed: Mapping[str, str],
    overwrite: bool,
) -> dict[str, str]:
    """Source dataset id -> target uuid, in copy order (the seed last).

    Raises
    ------
    DatasetExistsError
        A target dataset exists and ``overwrite`` is False.
    SchemaError, InvalidInputError
        The target cube would break a cube rule.
    """
    prefix = renamed_prefix or cube.uuid_prefix
    new_cube = cube.copy(
        uuid_prefix=prefix, seed_dataset=renamed.get(cube.seed_dataset, cube.seed_dataset)
    )
    new_ids = {ds_id: renamed.get(ds_id, ds_id) for ds_id in source}
    if not overwrite:
        for ds_id in sorted(source):
            if new_ids[ds_id] in target:
                raise DatasetExistsError(f"{prefix}{SEPARATOR}{new_ids[ds_id]}")
    members = {k: member_from_loaded(k, v) for k, v in target.items()}
    for ds_id, loaded in source.items():
        members[new_ids[ds_id]] = member_from_loaded(new_ids[ds_id], loaded)
    check_datasets(members, new_cube)
    order = sorted(source, key=lambda d: (d == cube.seed_dataset, d))
    return {ds_id: f"{prefix}{SEPARATOR}{new_ids[ds_id]}" for ds_id in order}
