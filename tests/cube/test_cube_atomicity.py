"""Multi-dataset writes: commit order (seed last), undo on failure, what readers see mid-way."""

from __future__ import annotations

import pandas as pd
import pytest

import kartoframe as kf
from kartoframe.execution import cube_write


def keys(store: kf.Store) -> dict[str, bytes]:
    # the transaction log keeps an undone commit and its revert entry (history)
    return {k: store.get(k) for k in store.iter_keys("") if "/_kartoframe/log/" not in k}


def _fail_on(monkeypatch, uuid: str, error: Exception) -> list[str]:
    real = cube_write.commit_write
    order: list[str] = []

    def flaky(store, dataset_uuid, *args, **kwargs):
        order.append(dataset_uuid)
        if dataset_uuid == uuid:
            raise error
        return real(store, dataset_uuid, *args, **kwargs)

    monkeypatch.setattr(cube_write, "commit_write", flaky)
    return order


def _observe_before(monkeypatch, uuid: str, observer) -> list:
    real = cube_write.commit_write
    seen: list = []

    def observing(store, dataset_uuid, *args, **kwargs):
        if dataset_uuid == uuid:
            seen.append(observer())
        return real(store, dataset_uuid, *args, **kwargs)

    monkeypatch.setattr(cube_write, "commit_write", observing)
    return seen


def test_seed_is_committed_last(cube, store, seed_df, enrich_df, low_df, monkeypatch):
    order = _fail_on(monkeypatch, "never", RuntimeError())
    kf.build_cube(
        {"seed": seed_df, "enrich": enrich_df, "low": low_df}, cube, store, partition_on={"low": []}
    )
    assert order == ["cube++enrich", "cube++low", "cube++seed"]


def test_failed_build_is_undone(cube, store, seed_df, enrich_df, monkeypatch):
    _fail_on(monkeypatch, "cube++seed", kf.CommitConflictError("seed commit failed"))
    with pytest.raises(kf.CommitConflictError, match="seed commit failed"):
        kf.build_cube({"seed": seed_df, "enrich": enrich_df}, cube, store)
    assert keys(store) == {}


@pytest.mark.parametrize("verb", ["append", "update", "overwrite", "remove"])
def test_failed_change_restores_every_dataset(
    cube, store, seed_df, enrich_df, low_df, monkeypatch, verb
):
    kf.build_cube({"seed": seed_df, "enrich": enrich_df}, cube, store)
    kf.extend_cube({"low": low_df}, cube, store, partition_on={"low": []})
    before = keys(store)
    _fail_on(monkeypatch, "cube++seed", OSError("disk full"))
    new_seed = seed_df.assign(v1=-1.0)
    new_enrich = enrich_df.assign(v2=-1)
    with pytest.raises(OSError, match="disk full"):
        if verb == "append":
            kf.append_to_cube({"seed": new_seed, "enrich": new_enrich}, cube, store)
        elif verb == "update":
            kf.update_cube(
                {"seed": new_seed, "enrich": new_enrich},
                cube,
                store,
                remove_conditions=kf.C("p") == 0,
            )
        elif verb == "overwrite":
            kf.build_cube(
                {"seed": new_seed, "enrich": new_enrich, "low": low_df},
                cube,
                store,
                overwrite=True,
                partition_on={"low": []},
            )
        else:
            kf.remove_partitions(cube, store, kf.C("p") == 0)
    assert keys(store) == before


def test_undo_keeps_a_dataset_another_writer_built_upon(
    cube, store, seed_df, enrich_df, monkeypatch
):
    kf.build_cube({"seed": seed_df, "enrich": enrich_df}, cube, store)
    real = cube_write.commit_write

    def racing(st, dataset_uuid, *args, **kwargs):
        if dataset_uuid == "cube++seed":
            # another writer commits to enrich between our two commits
            kf.update_dataset_from_dataframes([], st, "cube++enrich", metadata={"other": 1})
            raise kf.CommitConflictError("seed changed")
        return real(st, dataset_uuid, *args, **kwargs)

    monkeypatch.setattr(cube_write, "commit_write", racing)
    with pytest.raises(kf.CommitConflictError):
        kf.append_to_cube({"seed": seed_df.assign(v1=9.0), "enrich": enrich_df}, cube, store)
    # enrich cannot be rolled back without losing the other writer's commit: it stays,
    # with our appended files still referenced (and readable)
    md = kf.read_dataset_metadata("cube++enrich", store)
    assert md.metadata["other"] == 1
    assert len(kf.read_table("cube++enrich", store)) == 8


def test_reader_during_build_sees_no_cube(cube, store, seed_df, enrich_df, monkeypatch):
    def observer():
        with pytest.raises(kf.InvalidInputError, match=r'Seed data \("seed"\) is missing'):
            kf.query_cube(cube, store)
        with pytest.raises(kf.FormatError, match="Could not find seed dataset"):
            kf.discover_cube("cube", store)
        return sorted(kf.discover_datasets_unchecked("cube", store))

    seen = _observe_before(monkeypatch, "cube++seed", observer)
    kf.build_cube({"seed": seed_df, "enrich": enrich_df}, cube, store)
    assert seen == [["enrich"]]


def test_reader_during_append_sees_non_seed_changes_first(
    cube, store, seed_df, enrich_df, monkeypatch
):
    kf.build_cube({"seed": seed_df, "enrich": enrich_df}, cube, store)
    new_seed = pd.DataFrame({"x": [9], "y": [9], "p": [1], "i": [1], "v1": [9.0]})
    new_enrich = pd.DataFrame({"x": [0, 9], "y": [0, 9], "p": [0, 1], "v2": [-10, 99]})
    seen = _observe_before(monkeypatch, "cube++seed", lambda: kf.query_cube(cube, store)[0])
    kf.append_to_cube({"seed": new_seed, "enrich": new_enrich}, cube, store)
    (mid,) = seen
    # the overlay of an existing cell is visible, the new cell (not yet in the seed) is not
    assert mid[(mid.x == 0) & (mid.y == 0)].v2.tolist() == [-10]
    assert 9 not in mid.x.tolist()
    (after,) = kf.query_cube(cube, store)
    assert after[after.x == 9].v2.tolist() == [99]
