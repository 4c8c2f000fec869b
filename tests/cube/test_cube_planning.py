"""Query planning: validation messages, pushdown to keys and indices, purity."""

from __future__ import annotations

import pandas as pd
import pytest

import kartoframe as kf
from kartoframe import C
from kartoframe.execution import read_resolve
from kartoframe.execution.cube_join import load_group, run_merged
from kartoframe.front.cube_query import plan_cube_query


@pytest.fixture
def full(cube, store, seed_df, enrich_df, low_df):
    kf.build_cube({"seed": seed_df, "enrich": enrich_df}, cube, store)
    kf.extend_cube({"low": low_df}, cube, store, partition_on={"low": []})
    return store


@pytest.mark.parametrize(
    ("kw", "exc", "message"),
    [
        (
            {"dimension_columns": ["x", "z"]},
            kf.ColumnNotFoundError,
            "Following dimension columns were requested but are missing from the cube: z",
        ),
        ({"dimension_columns": []}, kf.InvalidInputError, "Dimension columns cannot be empty."),
        (
            {"partition_by": ["zz"]},
            kf.ColumnNotFoundError,
            "Following partition-by columns were requested but are missing from the cube: zz",
        ),
        (
            {"partition_by": ["v2"]},
            kf.InvalidInputError,
            "Following partition-by columns are not indexed and cannot be used: v2",
        ),
        (
            {"partition_by": {"p"}},
            kf.InvalidTypeError,
            "has type set which has an unstable iteration order",
        ),
        (
            {"conditions": C("zz") > 1},
            kf.ColumnNotFoundError,
            "Following condition columns are required but are missing from the cube: zz",
        ),
        (
            {"conditions": C("v2") > 1.5},
            kf.InvalidTypeError,
            "Condition `v2 > 1.5` has wrong type. Expected `int64 (int64)` but got `1.5 (float)`",
        ),
        (
            {"payload_columns": ["v9"]},
            kf.ColumnNotFoundError,
            "Cannot find the following requested payload columns: v9",
        ),
        (
            {"dimension_columns": ["x"]},
            kf.InvalidInputError,
            'Cannot project dataset "enrich" with dimensionality [x, y] to [x] while keeping the '
            "following payload intact: v2",
        ),
        (
            {"dimension_columns": ["x"], "payload_columns": ["v3"], "conditions": C("v1") > 0},
            kf.InvalidInputError,
            'Cannot project dataset "seed" with dimensionality [x, y] to [x] while keeping the '
            "following payload intact: v1",
        ),
        (
            {"datasets": ["seed", "nope"]},
            kf.InvalidInputError,
            "Could not find the following requested datasets: nope",
        ),
        ({"datasets": ["enrich"]}, kf.InvalidInputError, 'Seed data ("seed") is missing.'),
    ],
)
def test_query_validation(cube, full, kw, exc, message):
    import re

    with pytest.raises(exc, match=re.escape(message)):
        kf.query_cube(cube, full, **kw)


def test_partition_by_a_dimension_needs_the_seed_index(store, seed_df):
    cube = kf.Cube(["x", "y"], ["p"], "noidx", suppress_index_on=["x"])
    kf.build_cube(seed_df, cube, store)
    with pytest.raises(kf.InvalidInputError, match="not indexed and cannot be used: x"):
        kf.query_cube(cube, store, partition_by=["x"])
    assert [f.y.iloc[0] for f in kf.query_cube(cube, store, partition_by=["y"])] == [0, 1]


def _delete(store: kf.Store, uuid: str, prefix: str) -> list[str]:
    md = kf.read_dataset_metadata(uuid, store)
    gone = [k for lb, k in md.partitions.items() if lb.startswith(prefix)]
    store.delete_many(gone)
    return gone


def test_planning_opens_no_data_file(cube, full):
    for ds in ("seed", "enrich", "low"):
        _delete(full, cube.ktk_dataset_uuid(ds), "")
    plan, _ = plan_cube_query(cube, full, conditions=C("v2") > 0, partition_by=["p"])
    assert [r.dataset_id for r in plan.reads] == ["seed", "enrich", "low"]
    assert [r.role for r in plan.reads] == ["seed", "inner", "left"]
    assert [dict(g.key) for g in plan.groups] == [{"p": 0}, {"p": 1}]
    with pytest.raises(OSError):
        kf.query_cube(cube, full)  # executing does need the files


def test_pruned_partitions_are_never_opened(cube, store):
    seed = pd.DataFrame(
        {"x": range(6), "y": 0, "p": [0, 0, 1, 1, 2, 2], "i": [0, 0, 1, 1, 2, 2], "v1": 1.0}
    )
    enrich = pd.DataFrame({"x": range(6), "y": 0, "p": [0, 0, 1, 1, 2, 2], "v2": range(6)})
    kf.build_cube({"seed": seed, "enrich": enrich}, cube, store)
    _delete(store, "cube++seed", "p=0/")
    _delete(store, "cube++enrich", "p=0/")
    # secondary index (i) and partition key (p) pruning keep the deleted files out
    (df,) = kf.query_cube(cube, store, conditions=C("i") == 1)
    assert df.x.tolist() == [2, 3]
    (df,) = kf.query_cube(cube, store, conditions=C("p").isin([1, 2]))
    assert df.x.tolist() == [2, 3, 4, 5]
    frames = kf.query_cube(cube, store, conditions=C("i") >= 1, partition_by=["i"])
    assert [f.i.iloc[0] for f in frames] == [1, 2]
    with pytest.raises(OSError):
        kf.query_cube(cube, store, conditions=C("v1") > 0)


def test_only_needed_indices_are_loaded(cube, full, monkeypatch):
    calls: list[tuple[str, tuple[str, ...]]] = []
    real = read_resolve.load_for_read

    def recording(store, loaded, **needs):
        if needs["indices"]:
            calls.append((loaded.uuid, tuple(needs["indices"])))
        return real(store, loaded, **needs)

    monkeypatch.setattr(read_resolve, "load_for_read", recording)
    kf.query_cube(cube, full)
    assert calls == []
    kf.query_cube(cube, full, conditions=(C("i") == 1) & (C("x") > 0), payload_columns=["v1"])
    assert calls == [("cube++seed", ("i", "x"))]
    calls.clear()
    kf.query_cube(cube, full, partition_by=["i"], datasets=["seed", "enrich"])
    assert calls == [("cube++seed", ("i",))]


def test_merged_equals_groups(cube, full, seed_df):
    kf.append_to_cube(seed_df.iloc[:3].assign(i=7), cube, full)
    for kw in ({}, {"partition_by": ["i"]}, {"conditions": C("v2") > 10, "partition_by": ["p"]}):
        plan, st = plan_cube_query(cube, full, **kw)
        merged = run_merged(plan, st)
        groups = [f for f in (load_group(plan, g, st) for g in plan.groups) if len(f)]
        if not kw.get("partition_by"):
            groups = [
                pd.concat(groups, ignore_index=True)
                .sort_values(list(plan.sort_columns))
                .reset_index(drop=True)
            ]
        assert len(merged) == len(groups)
        for a, b in zip(merged, groups):
            pd.testing.assert_frame_equal(a, b)


def test_plan_is_picklable_and_pure(cube, full):
    import pickle

    plan, _ = plan_cube_query(cube, full, conditions=C("i") == 1)
    again = pickle.loads(pickle.dumps(plan))
    assert [r.dataset_id for r in again.reads] == [r.dataset_id for r in plan.reads]
    assert len(again.groups) == len(plan.groups) == 2
    seed = plan.read("seed")
    assert seed.join_columns == ("x", "y", "p")
    assert seed.predicate is not None
    assert plan.sort_columns == ("x", "y", "p")


@pytest.fixture
def aligned(store):
    """A seed, an indexed dataset with an extra partition key ``q`` that covers only the
    seed's partition p=1, and one partitioned by a timestamp ``t``.
    """
    cube = kf.Cube(
        uuid_prefix="c", dimension_columns=["x"], partition_columns=["p"], index_columns=["q"]
    )
    seed = pd.DataFrame({"x": [1, 2, 3], "p": [1, 1, 2], "v": [1.0, 2.0, 3.0]})
    other = pd.DataFrame({"x": [1, 2], "p": [1, 1], "q": [10, 11], "w": [5, 6]})
    ts = pd.DataFrame(
        {"x": [1, 3], "p": [1, 2], "t": pd.to_datetime(["2020-01-01", "2020-01-02"]), "z": [1, 2]}
    )
    kf.build_cube(
        {"seed": seed, "other": other, "ts": ts},
        cube,
        store,
        partition_on={"other": ["p", "q"], "ts": ["p", "t"]},
    )
    return cube


def _key_prefixes(group):
    """A group's key (value types included) and each dataset's files as their partitions."""
    key = tuple((c, type(v).__name__, v) for c, v in group.key)
    files = {ds: [f.label.rsplit("/", 1)[0] for f in fs] for ds, fs in group.files.items()}
    return key, files


T1, T2 = pd.Timestamp("2020-01-01"), pd.Timestamp("2020-01-02")
P1T1, P2T2 = "p=1/t=2020-01-01%2000%3A00%3A00", "p=2/t=2020-01-02%2000%3A00%3A00"


@pytest.mark.parametrize(
    ("partition_by", "expected"),
    [
        (
            ["q"],
            [
                ((("q", "int", 10),), {"seed": ["p=1"], "other": ["p=1/q=10"], "ts": [P1T1]}),
                ((("q", "int", 11),), {"seed": ["p=1"], "other": ["p=1/q=11"], "ts": [P1T1]}),
            ],
        ),
        (
            ["t"],
            [
                (
                    (("t", "Timestamp", T1),),
                    {"seed": ["p=1"], "ts": [P1T1], "other": ["p=1/q=10", "p=1/q=11"]},
                ),
                ((("t", "Timestamp", T2),), {"seed": ["p=2"], "ts": [P2T2], "other": []}),
            ],
        ),
        (
            ["p"],
            [
                (
                    (("p", "int", 1),),
                    {"seed": ["p=1"], "other": ["p=1/q=10", "p=1/q=11"], "ts": [P1T1]},
                ),
                ((("p", "int", 2),), {"seed": ["p=2"], "other": [], "ts": [P2T2]}),
            ],
        ),
        (
            ["q", "t"],
            [
                (
                    (("q", "int", 10), ("t", "Timestamp", T1)),
                    {"seed": ["p=1"], "other": ["p=1/q=10"], "ts": [P1T1]},
                ),
                (
                    (("q", "int", 11), ("t", "Timestamp", T1)),
                    {"seed": ["p=1"], "other": ["p=1/q=11"], "ts": [P1T1]},
                ),
            ],
        ),
    ],
)
def test_groups_align_datasets_by_partition(aligned, store, partition_by, expected):
    """The groups of an alignment of three datasets: their keys keep the column types
    (ints, Timestamps; a seed partition without ``q`` drops out of ``q``'s groups) and
    each dataset's files are the partitions with the group's values (pinned on the
    pandas-merge alignment this replaced).
    """
    plan, _ = plan_cube_query(aligned, store, partition_by=partition_by)
    assert [_key_prefixes(g) for g in plan.groups] == expected
