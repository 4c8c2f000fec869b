"""A cube write whose dataset version stands although its header could not be written.

When the header of a committed version cannot be written *and* its revert cannot be
recorded, the version stands (kartoframe readers apply the log) and the write raises
``HeaderPublishError``. In a cube write that dataset is committed: undoing the datasets
committed before it would leave a cube in which the seed has the new rows and the other
datasets have not. The write instead commits every dataset, then raises the error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest

import kartoframe as kf
from kartoframe.format import naming, txlog
from kartoframe.storage.commit import HeaderPublishError

CUBE = kf.Cube(["x"], ["p"], uuid_prefix="cc")


def _denied(path: str) -> PermissionError:
    return PermissionError(13, "denied", path)


def _seed(xs: list[int]) -> pd.DataFrame:
    return pd.DataFrame({"x": xs, "p": [x % 2 for x in xs], "v": [float(x) for x in xs]})


def _enrich(xs: list[int]) -> pd.DataFrame:
    return pd.DataFrame({"x": xs, "p": [x % 2 for x in xs], "w": [10 * x for x in xs]})


def test_a_standing_seed_version_keeps_the_other_datasets(
    memory_store: kf.Store, make_faulty: Callable[..., tuple[kf.Store, Any]]
) -> None:
    kf.build_cube({"seed": _seed([0, 1]), "enrich": _enrich([0, 1])}, CUBE, memory_store)
    store, ffs = make_faulty(memory_store)
    seed_uuid = CUBE.ktk_dataset_uuid("seed")
    ffs.inject("pipe_file", exc=_denied, times=None, match=naming.header_key(seed_uuid, "json"))
    ffs.inject("pipe_file", exc=_denied, times=None, match=txlog.entry_key(seed_uuid, 2))
    with pytest.raises(HeaderPublishError) as info:
        kf.append_to_cube({"seed": _seed([2, 3]), "enrich": _enrich([2, 3])}, CUBE, store)
    assert info.value.version == 1
    ffs.heal()
    # both datasets hold the appended rows: the cube is the completed operation
    (df,) = kf.query_cube(CUBE, memory_store)
    df = df.sort_values("x")
    assert df["x"].tolist() == [0, 1, 2, 3]
    assert df["w"].tolist() == [0, 10, 20, 30]
    history = kf.dataset_history(CUBE.ktk_dataset_uuid("enrich"), memory_store)
    assert [r.operation for r in history][:1] == ["APPEND"]
    assert not history[0].reverted


def test_a_failing_seed_commit_still_undoes_the_others(
    memory_store: kf.Store, make_faulty: Callable[..., tuple[kf.Store, Any]]
) -> None:
    """The seed's commit fails before its commit point: nothing of the write remains."""
    kf.build_cube({"seed": _seed([0, 1]), "enrich": _enrich([0, 1])}, CUBE, memory_store)
    store, ffs = make_faulty(memory_store)
    seed_uuid = CUBE.ktk_dataset_uuid("seed")
    ffs.inject("pipe_file", exc=_denied, times=None, match=txlog.entry_key(seed_uuid, 1))
    with pytest.raises(kf.StorageError):
        kf.append_to_cube({"seed": _seed([2, 3]), "enrich": _enrich([2, 3])}, CUBE, store)
    ffs.heal()
    enrich = kf.read_table(CUBE.ktk_dataset_uuid("enrich"), memory_store)
    assert sorted(enrich["x"]) == [0, 1]
    (df,) = kf.query_cube(CUBE, memory_store)
    assert sorted(df["x"]) == [0, 1]
