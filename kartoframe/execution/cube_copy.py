"""``kf.copy_cube`` run: check the target, plan (:mod:`kartoframe.plan.cube_copy`), copy.

The stores must differ (a probe key written to the target is looked up in the source),
the renamed prefix and dataset ids must be valid and every requested dataset must exist;
the plan is checked against the target's datasets before any file is copied.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kartoframe.errors import DatasetNotFoundError
from kartoframe.format.cube import Cube, str_tuple
from kartoframe.plan.cube_copy import plan_cube_copy
from kartoframe.storage.cube_members import load_cube_datasets
from kartoframe.storage.dataset_copy import assert_stores_differ, copy_renamed
from kartoframe.storage.store import Store

__all__ = ["copy_cube_datasets"]


def copy_cube_datasets(
    cube: Cube,
    src: Store,
    tgt: Store,
    *,
    overwrite: bool,
    datasets: Iterable[str] | None,
    renamed_cube_prefix: str | None,
    renamed_datasets: Mapping[str, str] | None,
) -> dict[str, str]:
    """Copy the cube's (selected) datasets from ``src`` to ``tgt``; source id -> new uuid."""
    renamed = dict(renamed_datasets or {})
    if renamed_cube_prefix is not None:
        cube.copy(uuid_prefix=renamed_cube_prefix)  # validates the prefix
    for new in renamed.values():
        cube.ktk_dataset_uuid(new)
    assert_stores_differ(src, tgt, cube.ktk_dataset_uuid(cube.seed_dataset))
    wanted = None if datasets is None else set(str_tuple(datasets, "datasets", ordered=False))
    source = load_cube_datasets(src, cube.uuid_prefix, wanted)
    if wanted is None and not source:
        raise DatasetNotFoundError(cube.ktk_dataset_uuid(cube.seed_dataset), src.url)
    if wanted is not None:
        missing = sorted(wanted - set(source))
        if missing:
            raise DatasetNotFoundError(cube.ktk_dataset_uuid(missing[0]), src.url)
    target_prefix = renamed_cube_prefix or cube.uuid_prefix
    plan = plan_cube_copy(
        cube,
        source,
        load_cube_datasets(tgt, target_prefix),
        renamed_prefix=renamed_cube_prefix,
        renamed=renamed,
        overwrite=overwrite,
    )
    for ds_id, new_uuid in plan.items():
        copy_renamed(src, tgt, source[ds_id], new_uuid, overwrite=overwrite)
    return plan
