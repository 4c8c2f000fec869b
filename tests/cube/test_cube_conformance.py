"""Cube writes and queries, run against every engine (eager, dask threads, dask LocalCluster).

Each test checks hand-written expectations of the reference semantics, and most also
compare with the pandas oracle in ``cube_reference.py``.
"""

from __future__ import annotations

import json

import pandas as pd
import pyarrow.parquet as pq
import pytest
from cube_reference import assert_results_equal, reference_query

import kartoframe as kf
from kartoframe import C

PKEYS = {"seed": ["p"], "enrich": ["p"], "low": []}


def _build_all(engine, cube, store, seed_df, enrich_df, low_df) -> dict:
    engine.write("build", {"seed": seed_df, "enrich": enrich_df}, cube, store)
    engine.write("extend", {"low": low_df}, cube, store, partition_on={"low": []})
    return {"seed": [seed_df], "enrich": [enrich_df], "low": [low_df]}


def _check(engine, cube, store, written, **query) -> list[pd.DataFrame]:
    got = engine.query(cube, store, **{k: v for k, v in query.items() if k != "literals"})
    exp = reference_query(
        cube,
        written,
        PKEYS,
        conditions=query.get("literals", ()),
        datasets=query.get("datasets"),
        dimension_columns=query.get("dimension_columns"),
        partition_by=query.get("partition_by"),
        payload_columns=query.get("payload_columns"),
    )
    assert_results_equal(got, exp)
    return got


def test_seed_only_roundtrip(engine, cube, store, seed_df):
    engine.write("build", seed_df, cube, store)
    (df,) = engine.query(cube, store)
    assert list(df.columns) == ["i", "p", "v1", "x", "y"]
    expected = seed_df.sort_values(["x", "y", "p"])[["i", "p", "v1", "x", "y"]]
    pd.testing.assert_frame_equal(df, expected.reset_index(drop=True))


def test_full_query_semantics(engine, cube, store, seed_df, enrich_df, low_df):
    written = _build_all(engine, cube, store, seed_df, enrich_df, low_df)
    (df,) = _check(engine, cube, store, written)
    # seed defines the cells: the enrich cell (5, 5) is not returned (lazy seed)
    assert list(zip(df.x, df.y)) == [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]
    assert list(df.columns) == ["i", "p", "v1", "v2", "v3", "x", "y"]
    # left join: missing enrichment is NULL, dtype nullable
    assert df.v2.tolist()[:3] == [10, pd.NA, pd.NA]
    assert str(df.v2.dtype) == "Int64"
    # the lower-dimensional dataset broadcasts over y
    assert df.v3.tolist() == ["a", "a", "b", "b", "c", "c"]


def test_condition_on_payload_makes_dataset_restrictive(
    engine, cube, store, seed_df, enrich_df, low_df
):
    written = _build_all(engine, cube, store, seed_df, enrich_df, low_df)
    (df,) = _check(
        engine, cube, store, written, conditions=C("v2") > 10, literals=[("v2", ">", 10)]
    )
    assert list(zip(df.x, df.y)) == [(1, 1), (2, 0)]
    assert str(df.v2.dtype) == "int64"  # inner join: no NULLs possible


@pytest.mark.parametrize(
    ("conditions", "literals"),
    [
        (C("x") >= 1, [("x", ">=", 1)]),
        (C("p") == 0, [("p", "==", 0)]),
        (C("i").isin([2]), [("i", "in", [2])]),
        (C("y").in_interval(1, None), [("y", "in_interval", (1, None))]),
        ((C("x") < 2) & (C("v3") != "a"), [("x", "<", 2), ("v3", "!=", "a")]),
        (C("v1") > 100, [("v1", ">", 100)]),
    ],
)
def test_conditions(engine, cube, store, seed_df, enrich_df, low_df, conditions, literals):
    written = _build_all(engine, cube, store, seed_df, enrich_df, low_df)
    _check(engine, cube, store, written, conditions=conditions, literals=literals)


@pytest.mark.parametrize("partition_by", [["p"], ["i"], ["v3"], ["x"]])
def test_partition_by(engine, cube, store, seed_df, enrich_df, low_df, partition_by):
    written = _build_all(engine, cube, store, seed_df, enrich_df, low_df)
    if partition_by == ["v3"]:
        kf.build_dataset_indices(store, cube.ktk_dataset_uuid("low"), ["v3"])
    frames = _check(engine, cube, store, written, partition_by=partition_by)
    keys = [f[partition_by[0]].unique().tolist() for f in frames]
    assert all(len(k) == 1 for k in keys)
    assert [k[0] for k in keys] == sorted(k[0] for k in keys)


def test_projection(engine, cube, store, seed_df, enrich_df, low_df):
    written = _build_all(engine, cube, store, seed_df, enrich_df, low_df)
    (df,) = _check(engine, cube, store, written, dimension_columns=["x"], payload_columns=["v3"])
    assert list(df.columns) == ["p", "v3", "x"]
    assert df.x.tolist() == [0, 1, 2]


def test_dimension_order_sorts_rows(engine, cube, store, seed_df, enrich_df, low_df):
    written = _build_all(engine, cube, store, seed_df, enrich_df, low_df)
    (df,) = _check(engine, cube, store, written, dimension_columns=["y", "x"])
    assert list(zip(df.y, df.x)) == sorted(zip(df.y, df.x))


def test_datasets_and_payload_subsets(engine, cube, store, seed_df, enrich_df, low_df):
    written = _build_all(engine, cube, store, seed_df, enrich_df, low_df)
    (df,) = _check(engine, cube, store, written, datasets=["seed", "low"])
    assert "v2" not in df.columns
    (df,) = _check(engine, cube, store, written, payload_columns=["v2"])
    assert list(df.columns) == ["p", "v2", "x", "y"]


def test_empty_result(engine, cube, store, seed_df, enrich_df, low_df):
    _build_all(engine, cube, store, seed_df, enrich_df, low_df)
    assert engine.query(cube, store, conditions=C("v1") > 1e9) == []
    assert engine.query(cube, store, conditions=C("p") == 7, partition_by=["p"]) == []


def test_append_overlays_cells(engine, cube, store, seed_df, enrich_df, low_df):
    written = _build_all(engine, cube, store, seed_df, enrich_df, low_df)
    new_seed = pd.DataFrame({"x": [2, 3], "y": [0, 0], "p": [1, 1], "i": [9, 9], "v1": [-1.0, 7.0]})
    new_enrich = pd.DataFrame({"x": [1], "y": [1], "p": [0], "v2": [-11]})
    engine.write("append", {"seed": new_seed, "enrich": new_enrich}, cube, store)
    written["seed"].append(new_seed)
    written["enrich"].append(new_enrich)
    (df,) = _check(engine, cube, store, written)
    row = df[(df.x == 2) & (df.y == 0)].iloc[0]
    assert (row.v1, row.i) == (-1.0, 9)  # the newer seed row wins
    assert df[(df.x == 1) & (df.y == 1)].v2.tolist() == [-11]
    assert df[(df.x == 3)].v3.isna().all()  # new cell, no lowdim entry
    # conditions apply before the overlay (as in kartothek): the stale row is found
    _check(engine, cube, store, written, conditions=C("v2") > 10, literals=[("v2", ">", 10)])
    _check(engine, cube, store, written, partition_by=["i"])


def test_conditions_see_rows_before_the_overlay(engine, cube, store, seed_df, enrich_df, low_df):
    """A condition rejecting a cell's newer row returns its older row (kartothek 5.3 does).

    kartothek applies a dataset's conditions while loading each file (predicate pushdown,
    ``conditions_post``) and only then keeps the last row per cell
    (``kartothek/io_components/cube/query/_group.py``: ``load_dataframes(predicates=...)``,
    then ``drop_sorted_duplicates_keep_last``; kartothek-plateau-facts.md §3.1 step 2 and
    §3.2 steps 1-2). Pruning by a secondary index (``conditions_pre``) and by per-file
    statistics drops the newer file the same way. Checked against kartothek 5.3 itself in
    ``test_cube_interop.py::test_kartothek_agrees_conditions_see_rows_before_the_overlay``.
    """
    written = _build_all(engine, cube, store, seed_df, enrich_df, low_df)
    # corrections: enrich (1, 1) v2 11 -> 0; seed (1, 1) i 2 -> 9, v1 3.0 -> -3.0
    fix_enrich = pd.DataFrame({"x": [1], "y": [1], "p": [0], "v2": [0]})
    fix_seed = pd.DataFrame({"x": [1], "y": [1], "p": [0], "i": [9], "v1": [-3.0]})
    engine.write("append", {"seed": fix_seed, "enrich": fix_enrich}, cube, store)
    written["seed"].append(fix_seed)
    written["enrich"].append(fix_enrich)

    (full,) = _check(engine, cube, store, written)
    cell = full[(full.x == 1) & (full.y == 1)]
    assert cell[["i", "v1", "v2"]].values.tolist() == [[9, -3.0, 0]]  # the newer rows win

    # payload condition on a non-seed dataset (the row filter; per-file statistics skip the
    # correction's file): the stale v2 = 11 of (1, 1) is returned, not dropped
    lit = [("v2", ">", 10)]
    (df,) = _check(engine, cube, store, written, conditions=C("v2") > 10, literals=lit)
    assert list(zip(df.x, df.y, df.v2)) == [(1, 1, 11), (2, 0, 12)]
    # condition on the seed's indexed column (index pruning drops the correction's file)
    lit = [("i", "==", 2)]
    (df,) = _check(engine, cube, store, written, conditions=C("i") == 2, literals=lit)
    assert list(zip(df.x, df.y, df.i, df.v1)) == [(0, 1, 2, 1.0), (1, 1, 2, 3.0), (2, 1, 2, 5.0)]
    # the newer row is found by a condition it satisfies
    (df,) = _check(engine, cube, store, written, conditions=C("i") == 9, literals=[("i", "==", 9)])
    assert list(zip(df.x, df.y, df.v1)) == [(1, 1, -3.0)]


def test_update_removes_and_appends_in_one_commit(engine, cube, store, seed_df, enrich_df):
    engine.write("build", {"seed": seed_df, "enrich": enrich_df}, cube, store)
    before = kf.read_dataset_metadata(cube.ktk_dataset_uuid("seed"), store).partitions
    new = pd.DataFrame({"x": [7], "y": [7], "p": [0], "i": [1], "v1": [7.0]})
    engine.write("update", {"seed": new}, cube, store, remove_conditions=C("p") == 0)
    after = kf.read_dataset_metadata(cube.ktk_dataset_uuid("seed"), store).partitions
    assert not [lb for lb in after if lb.startswith("p=0/") and lb in before]
    (df,) = engine.query(cube, store)
    assert sorted(zip(df.x, df.y)) == [(2, 0), (2, 1), (7, 7)]
    # enrich was not touched
    assert len(kf.read_table(cube.ktk_dataset_uuid("enrich"), store)) == 4


def test_extend_overwrite_moves_a_column(engine, cube, store, seed_df, enrich_df):
    engine.write("build", {"seed": seed_df, "enrich": enrich_df}, cube, store)
    other = enrich_df.rename(columns={"v2": "w"})
    with pytest.raises(kf.DatasetExistsError):
        engine.write("extend", {"enrich": other}, cube, store)
    engine.write("extend", {"enrich": other}, cube, store, overwrite=True)
    (df,) = engine.query(cube, store)
    assert "w" in df.columns and "v2" not in df.columns


def test_written_datasets_follow_the_format(engine, cube, store, seed_df, enrich_df, low_df):
    _build_all(engine, cube, store, seed_df, enrich_df, low_df)
    seed = kf.read_dataset_metadata("cube++seed", store)
    assert seed.metadata_storage_format == "json"
    assert seed.partition_keys == ["p"]
    assert sorted(seed.secondary_indices) == ["i", "x", "y"]
    meta = seed.metadata
    assert meta["ktk_cube_dimension_columns"] == ["x", "y"]
    assert meta["ktk_cube_is_seed"] is True
    assert meta["ktk_cube_partition_columns"] == ["p"]
    assert meta["ktk_cube_suppress_index_on"] == []
    enrich = kf.read_dataset_metadata("cube++enrich", store)
    assert enrich.metadata["ktk_cube_is_seed"] is False
    assert enrich.secondary_indices == []
    low = kf.read_dataset_metadata("cube++low", store)
    assert low.partition_keys == []
    raw = json.loads(store.get("cube++seed.by-dataset-metadata.json"))
    assert list(raw)[:6] == [
        "dataset_metadata_version",
        "dataset_uuid",
        "indices",
        "metadata",
        "partitions",
        "partition_keys",
    ]
    for key in seed.partitions.values():
        with store.open_input(key) as f:
            pf = pq.ParquetFile(f)
            assert pf.metadata.row_group(0).column(0).compression == "ZSTD"
            table = pf.read()
        xs = table.column("x").to_pylist()
        ys = table.column("y").to_pylist()
        assert list(zip(xs, ys)) == sorted(zip(xs, ys))
        assert "__index_level_0__" not in table.column_names
    assert kf.discover_cube("cube", store) == cube


def test_query_errors(engine, cube, store, seed_df, enrich_df, low_df):
    _build_all(engine, cube, store, seed_df, enrich_df, low_df)
    with pytest.raises(kf.InvalidInputError, match="Cannot project dataset"):
        engine.query(cube, store, dimension_columns=["x"])
    with pytest.raises(kf.InvalidInputError, match="are not indexed and cannot be used: v1"):
        engine.query(cube, store, partition_by=["v1"])
    with pytest.raises(kf.InvalidTypeError, match="has wrong type"):
        engine.query(cube, store, conditions=C("x") == "a")
    with pytest.raises(kf.InvalidTypeError, match="unstable iteration order"):
        engine.query(cube, store, dimension_columns={"x", "y"})
    with pytest.raises(kf.ColumnNotFoundError, match="missing from the cube: zz"):
        engine.query(cube, store, conditions=C("zz") == 1)
