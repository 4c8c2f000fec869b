"""remove_partitions, delete, copy (with renaming), cleanup, stats and discovery."""

from __future__ import annotations

import pandas as pd
import pyarrow.parquet as pq
import pytest

import kartoframe as kf
from kartoframe import C


@pytest.fixture
def full(cube, store, seed_df, enrich_df, low_df):
    kf.build_cube({"seed": seed_df, "enrich": enrich_df}, cube, store)
    kf.extend_cube({"low": low_df}, cube, store, partition_on={"low": []})
    return store


def _labels(store, uuid):
    return sorted(kf.read_dataset_metadata(uuid, store).partitions)


def test_remove_partitions(cube, full):
    store = full
    kf.remove_partitions(cube, store, C("p") == 0, metadata={"seed": {"note": "p0 gone"}})
    assert [lb.split("/")[0] for lb in _labels(store, "cube++seed")] == ["p=1"]
    assert [lb.split("/")[0] for lb in _labels(store, "cube++enrich")] == ["p=1", "p=2"]
    # a dataset without partition keys loses everything (as in kartothek)
    assert _labels(store, "cube++low") == []
    md = kf.read_dataset_metadata("cube++seed", store).metadata
    assert md["note"] == "p0 gone" and md["ktk_cube_is_seed"] is True
    (df,) = kf.query_cube(cube, store)
    assert df.x.tolist() == [2, 2]


def test_remove_partitions_of_selected_datasets(cube, full):
    kf.remove_partitions(cube, full, C("p").isin([0, 2]), ktk_cube_dataset_ids=["enrich"])
    assert len(_labels(full, "cube++seed")) == 2
    assert [lb.split("/")[0] for lb in _labels(full, "cube++enrich")] == ["p=1"]
    assert len(_labels(full, "cube++low")) == 1


def test_delete_cube_keeps_other_cubes_and_garbage(cube, full, seed_df):
    other = cube.copy(uuid_prefix="cube2")
    kf.build_cube(seed_df, other, full)
    kf.append_to_cube(seed_df.assign(v1=-1.0), cube, full)  # leaves an old index file
    tracked = {k for ds in kf.discover_datasets(cube, full).values() for k in _tracked(full, ds)}
    # the transaction log belongs to the live dataset (and goes with it), it is not garbage
    garbage = {k for k in full.iter_keys("cube++") if "/_kartoframe/log/" not in k} - tracked
    assert garbage
    kf.delete_cube(cube, full, datasets=["low"])
    assert sorted(kf.discover_datasets_unchecked("cube", full)) == ["enrich", "seed"]
    kf.delete_cube(cube, full)
    assert set(full.iter_keys("cube++")) == garbage
    assert kf.discover_cube("cube2", full) == other
    # brand-new files: only a forced cleanup without a grace window deletes them
    assert kf.cleanup_cube(cube, full) == []
    assert kf.cleanup_cube(cube, full, grace_hours=0, force=True) == sorted(garbage)
    assert list(full.iter_keys("cube++")) == []
    assert kf.query_cube(other, full)[0].shape == (6, 5)


def _tracked(store, md):
    from kartoframe.storage.garbage import referenced_keys as dataset_keys
    from kartoframe.storage.resolve import load_dataset

    return dataset_keys(load_dataset(store, md.uuid))


def test_cleanup_removes_only_untracked_keys(cube, full):
    store = full
    stray = f"cube++seed/table/p=0/{'a' * 32}.parquet"
    orphan = f"cube++gone/table/p=0/{'b' * 32}.parquet"
    store.put(stray, b"junk")
    store.put(orphan, b"junk")
    store.put("cube2++seed/table/x.parquet", b"other cube")
    store.put(f"cube2++seed/table/{'c' * 32}.parquet", b"other cube")
    # names no write generates are never deleted, whatever their age
    foreign = ["cube++seed/table/p=0/stray.parquet", "cube++gone/table/p=0/orphan.parquet"]
    for key in foreign:
        store.put(key, b"junk")
    (before,) = kf.query_cube(cube, store)
    assert kf.cleanup_cube(cube, store) == []  # brand-new: inside the grace window
    removed = kf.cleanup_cube(cube, store, grace_hours=0, force=True)
    assert removed == [orphan, stray]
    assert store.exists("cube2++seed/table/x.parquet")
    assert store.exists(f"cube2++seed/table/{'c' * 32}.parquet")
    assert all(store.exists(k) for k in foreign)
    pd.testing.assert_frame_equal(kf.query_cube(cube, store)[0], before)
    assert kf.cleanup_cube(cube, store, grace_hours=0, force=True) == []


def test_collect_stats(cube, full, seed_df):
    kf.append_to_cube(seed_df.iloc[:2], cube, full)
    stats = kf.collect_stats(cube, full)
    assert sorted(stats) == ["enrich", "low", "seed"]
    seed = stats["seed"]
    assert (seed["files"], seed["partitions"], seed["rows"]) == (3, 2, 8)
    md = kf.read_dataset_metadata("cube++seed", full)
    assert seed["blobsize"] == sum(full.size(k) for k in md.partitions.values())
    rows = 0
    for k in md.partitions.values():
        with full.open_input(k) as f:
            rows += pq.ParquetFile(f).metadata.num_rows
    assert rows == 8
    assert stats["low"] == {**stats["low"], "files": 1, "partitions": 1, "rows": 3}
    assert list(kf.collect_stats(cube, full, datasets=["low"])) == ["low"]


def test_copy_cube(cube, full, tmp_path):
    target = kf.Store(f"file://{tmp_path}/target")
    (expected,) = kf.query_cube(cube, full)
    kf.copy_cube(cube, full, target)
    pd.testing.assert_frame_equal(kf.query_cube(cube, target)[0], expected)
    with pytest.raises(kf.DatasetExistsError):
        kf.copy_cube(cube, full, target, datasets=["enrich"])
    kf.copy_cube(cube, full, target, datasets=["enrich"], overwrite=True)
    with pytest.raises(kf.InvalidInputError, match=r"Stores are identical but should not be\."):
        kf.copy_cube(cube, full, full, renamed_cube_prefix="other")
    with pytest.raises(kf.DatasetNotFoundError):
        kf.copy_cube(cube, full, target, datasets=["nope"], overwrite=True)


def test_copy_cube_with_renames(cube, full, tmp_path):
    target = kf.Store(f"file://{tmp_path}/target")
    (expected,) = kf.query_cube(cube, full)
    out = kf.copy_cube(
        cube,
        full,
        target,
        renamed_cube_prefix="renamed",
        renamed_datasets={"seed": "base", "enrich": "extra"},
    )
    assert out == {"enrich": "renamed++extra", "low": "renamed++low", "seed": "renamed++base"}
    new_cube = cube.copy(uuid_prefix="renamed", seed_dataset="base")
    assert kf.discover_cube("renamed", target) == new_cube
    pd.testing.assert_frame_equal(kf.query_cube(new_cube, target)[0], expected)
    assert not any(k.startswith("cube++") for k in target.iter_keys(""))
    # the copy is self-contained: deleting the source does not affect it
    kf.delete_cube(cube, full)
    pd.testing.assert_frame_equal(kf.query_cube(new_cube, target)[0], expected)


def test_copy_checks_the_target_cube_first(cube, full, tmp_path, seed_df):
    target = kf.Store(f"file://{tmp_path}/target")
    clash = pd.DataFrame({"x": [0], "y": [0], "p": [0], "v2": ["text"]})
    other_cube = cube
    kf.build_cube(
        {"seed": seed_df, "other": clash.rename(columns={"v2": "v3"})}, other_cube, target
    )
    before = sorted(target.iter_keys(""))
    with pytest.raises(kf.KartoframeError):
        kf.copy_cube(cube, full, target, datasets=["low"], overwrite=False)
    assert sorted(target.iter_keys("")) == before


def test_discover_reads_legacy_klee_keys(store, seed_df):
    legacy_cube = kf.Cube(["x", "y"], ["p"], "legacy", index_columns=["i"])
    kf.build_cube(seed_df, legacy_cube, store)
    from kartoframe.format.cube import cube_from_members, member_from_loaded
    from kartoframe.storage.resolve import load_dataset

    loaded = load_dataset(store, "legacy++seed")
    member = member_from_loaded("seed", loaded)
    meta = {
        "klee_is_seed": True,
        "klee_dimension_columns": ["x", "y"],
        "klee_timestamp_column": "KLEE_TS",
    }
    legacy = member.__class__(
        "seed", member.schema, ("p", "KLEE_TS"), member.secondary_indices, meta
    )
    found = cube_from_members("legacy", {"seed": legacy})
    assert found.partition_columns == ("p",)
    assert found.dimension_columns == ("x", "y")
    assert found.index_columns == ("i",)
    bad = member.__class__(
        "seed",
        member.schema,
        ("p", "T"),
        member.secondary_indices,
        {"klee_is_seed": True, "klee_dimension_columns": ["x"]},
    )
    with pytest.raises(kf.FormatError, match="timestamp column is 'KLEE_TS'"):
        cube_from_members("legacy", {"seed": bad})
    two = {"a": legacy, "b": legacy}
    with pytest.raises(kf.FormatError, match="multiple possible seed datasets"):
        cube_from_members("legacy", two)
