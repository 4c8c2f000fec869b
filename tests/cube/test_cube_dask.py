"""Dask-specific cube behaviour: shuffle and buckets, laziness, meta, partitions."""

from __future__ import annotations

import pandas as pd
import pytest

import kartoframe as kf
from kartoframe import C

dd = pytest.importorskip("dask.dataframe")


def _seed(n: int = 40) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "x": range(n),
            "y": [i % 3 for i in range(n)],
            "p": [i % 4 for i in range(n)],
            "i": [i % 5 for i in range(n)],
            "v1": [float(i) for i in range(n)],
        }
    )


@pytest.mark.parametrize(("shuffle", "buckets"), [(False, 1), (True, 1), (True, 2)])
def test_build_from_dataframe_files(cube, store, shuffle, buckets):
    seed = _seed()
    job = kf.build_cube_from_dataframe(
        dd.from_pandas(seed, npartitions=3),
        cube,
        store,
        shuffle=shuffle,
        num_buckets=buckets,
        bucket_by=["x"] if buckets > 1 else None,
    )
    assert list(store.iter_keys("")) == []  # lazy: nothing written yet
    result = job.compute(scheduler="sync")
    assert sorted(result) == ["seed"]
    labels = kf.read_dataset_metadata("cube++seed", store).partitions
    per_value: dict[str, int] = {}
    for lb in labels:
        per_value[lb.split("/")[0]] = per_value.get(lb.split("/")[0], 0) + 1
    if shuffle:
        assert all(n <= buckets for n in per_value.values())
        assert max(per_value.values()) == buckets
    else:
        assert max(per_value.values()) > 1  # one file per input partition and value
    (df,) = kf.query_cube(cube, store)
    expected = seed.sort_values(["x", "y", "p"])[["i", "p", "v1", "x", "y"]]
    pd.testing.assert_frame_equal(df, expected.reset_index(drop=True))


def test_update_cube_from_dataframe(cube, store, seed_df, enrich_df):
    kf.build_cube({"seed": seed_df, "enrich": enrich_df}, cube, store)
    new = pd.DataFrame({"x": [7], "y": [7], "p": [0], "i": [1], "v1": [7.0]})
    job = kf.update_cube_from_dataframe(
        {"seed": dd.from_pandas(new, npartitions=1)},
        cube,
        store,
        remove_conditions=C("p") == 0,
        ktk_cube_dataset_ids=["seed", "enrich"],
    )
    job.compute(scheduler="sync")
    (df,) = kf.query_cube(cube, store)
    assert sorted(zip(df.x, df.y)) == [(2, 0), (2, 1), (7, 7)]
    assert [
        lb.split("/")[0] for lb in kf.read_dataset_metadata("cube++enrich", store).partitions
    ] == [
        "p=1",
        "p=2",
    ]


def test_query_dataframe_partitions_and_meta(cube, store, seed_df, enrich_df, low_df):
    kf.build_cube({"seed": seed_df, "enrich": enrich_df}, cube, store)
    kf.extend_cube({"low": low_df}, cube, store, partition_on={"low": []})
    ddf = kf.query_cube_dataframe(cube, store, partition_by=["i"])
    assert ddf.npartitions == 2
    parts = [p.compute(scheduler="sync") for p in ddf.to_delayed()]
    assert [p.i.unique().tolist() for p in parts] == [[1], [2]]
    for p in parts:
        pd.testing.assert_series_equal(p.dtypes, ddf._meta.dtypes)
    empty = kf.query_cube_dataframe(cube, store, conditions=C("p") == 9)
    assert empty.npartitions == 1
    out = empty.compute(scheduler="sync")
    assert len(out) == 0 and list(out.columns) == list(ddf.columns)
    pd.testing.assert_series_equal(out.dtypes, ddf._meta.dtypes)
    # lazy reads: deleting the files after planning makes the compute fail
    for k in kf.read_dataset_metadata("cube++seed", store).partitions.values():
        store.delete(k)
    with pytest.raises(OSError):
        ddf.compute(scheduler="sync")


def test_dask_groups_share_the_lower_dimensional_read(cube, store, seed_df, enrich_df, low_df):
    from kartoframe.execution.cube_dask import GroupLoader, _Group
    from kartoframe.execution.cube_join import load_group
    from kartoframe.front.cube_query import plan_cube_query

    kf.build_cube({"seed": seed_df, "enrich": enrich_df}, cube, store)
    kf.extend_cube({"low": low_df}, cube, store, partition_on={"low": []})
    plan, st = plan_cube_query(cube, store, partition_by=["p"], consistent_integers=True)
    assert len(plan.groups) == 2
    loader = GroupLoader(plan.slim(), st, "t")
    frames = [loader(_Group(g, f"t-{i}")) for i, g in enumerate(plan.groups)]
    assert len(loader.memo) == 1  # "low" only: seed and enrich differ per group
    for g, got in zip(plan.groups, frames):
        pd.testing.assert_frame_equal(got, load_group(plan, g, st, threads=False))
    assert sorted(pd.concat(frames).v3.tolist()) == ["a", "a", "b", "b", "c", "c"]
    ddf = kf.query_cube_dataframe(cube, store, partition_by=["p"])
    expected = pd.concat(kf.query_cube(cube, store, partition_by=["p"]), ignore_index=True)
    pd.testing.assert_frame_equal(ddf.compute().reset_index(drop=True), expected)
