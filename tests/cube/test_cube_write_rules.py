"""Every write rule is checked before any byte is written (exact reference messages)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

import kartoframe as kf
from kartoframe import C


def keys(store: kf.Store) -> dict[str, bytes]:
    return {k: store.get(k) for k in store.iter_keys("")}


@pytest.fixture
def built(cube, store, seed_df, enrich_df):
    kf.build_cube({"seed": seed_df, "enrich": enrich_df}, cube, store)
    return store


def _fails(store, exc, message, fn, *args, **kw):
    before = keys(store)
    with pytest.raises(exc, match=re.escape(message) if message else None):
        fn(*args, **kw)
    assert keys(store) == before, "a failed write changed the store"


def test_build_rules(cube, store, seed_df, enrich_df):
    bad_null = seed_df.astype({"x": "float64"})
    bad_null.loc[0, "x"] = np.nan
    dup = pd.concat([seed_df, seed_df.iloc[[1]]])
    cases = [
        (kf.InvalidInputError, 'Seed data ("seed") is missing.', {"enrich": enrich_df}, {}),
        (
            kf.InvalidInputError,
            'Missing dimension columns in seed data "seed": y',
            seed_df.drop(columns="y"),
            {},
        ),
        (
            kf.InvalidInputError,
            'Dataset "enrich" must have at least 1 of the following dimension columns: x, y',
            {"seed": seed_df, "enrich": enrich_df.drop(columns=["x", "y"])},
            {},
        ),
        (
            kf.InvalidInputError,
            'Missing partition columns in dataset "enrich": p',
            {"seed": seed_df, "enrich": enrich_df.drop(columns="p")},
            {},
        ),
        (
            kf.InvalidInputError,
            'Found NULL-values in dimension column "x" of dataset "seed"',
            bad_null,
            {},
        ),
        (
            kf.InvalidInputError,
            'Found NULL-values in index column "i" of dataset "seed"',
            seed_df.astype({"i": "Int64"}).assign(i=[1, None, 1, 2, 1, 2]),
            {},
        ),
        (
            kf.InvalidInputError,
            'Found NULL-values in partition column "p" of dataset "seed"',
            seed_df.astype({"p": "float64"}).assign(p=[0, np.nan, 0, 0, 1, 1]),
            {},
        ),
        (
            kf.InvalidInputError,
            'Found duplicate cells by [p, x, y] in dataset "seed", example:',
            dup,
            {},
        ),
        (
            kf.InvalidInputError,
            "Found columns present in multiple datasets: - v1: enrich, seed",
            {"seed": seed_df, "enrich": enrich_df.assign(v1=1.0)},
            {},
        ),
        (
            kf.InvalidInputError,
            "Seed dataset seed must have the following, fixed partition-on attribute: p",
            seed_df,
            {"partition_on": {"seed": ["i"]}},
        ),
        (
            kf.InvalidInputError,
            "partition-on attribute of dataset enrich contains duplicates: p, p",
            {"seed": seed_df, "enrich": enrich_df},
            {"partition_on": {"enrich": ["p", "p"]}},
        ),
        (
            kf.InvalidInputError,
            "Unspecified but provided partition columns in enrich: p",
            {"seed": seed_df, "enrich": enrich_df},
            {"partition_on": {"enrich": []}},
        ),
        (
            kf.InvalidInputError,
            "Provided metadata for otherwise unspecified ktk_cube_dataset_ids: foo",
            seed_df,
            {"metadata": {"foo": {}}},
        ),
        (
            kf.InvalidTypeError,
            "Provided metadata should be a dict but is list",
            seed_df,
            {"metadata": []},
        ),
        (
            kf.InvalidTypeError,
            "Provided metadata for dataset seed should be a dict but is int",
            seed_df,
            {"metadata": {"seed": 1}},
        ),
        (
            kf.InvalidTypeError,
            'Provided DataFrame is not a pandas.DataFrame or None, but is a "int"',
            [1],
            {},
        ),
        (
            kf.InvalidTypeError,
            "Sparse data is not supported.",
            seed_df.astype({"v1": pd.SparseDtype("float64")}),
            {},
        ),
        (
            kf.InvalidTypeError,
            "Object of type int is not a string: 7",
            seed_df.assign(q=1).rename(columns={"q": 7}),
            {},
        ),
        (
            kf.EmptyInputError,
            "Cannot write empty datasets: enrich",
            {"seed": seed_df, "enrich": enrich_df.iloc[:0]},
            {},
        ),
        (
            kf.SchemaError,
            "Found incompatible entries for column x",
            {"seed": seed_df, "enrich": enrich_df.astype({"x": "str"})},
            {},
        ),
        (kf.InvalidUUIDError, "dataset id", {"seed": seed_df, "a.b": enrich_df}, {}),
        (
            kf.InvalidInputError,
            "must not contain UUID separator",
            {"seed": seed_df, "a++b": enrich_df},
            {},
        ),
    ]
    for exc, message, data, kw in cases:
        _fails(store, exc, message, kf.build_cube, data, cube, store, **kw)


def test_duplicate_columns(cube, store, seed_df):
    df = pd.concat([seed_df, seed_df[["v1"]]], axis=1)
    _fails(
        store,
        kf.InvalidInputError,
        'Duplicate columns found in dataset "seed": x, y, p, i, v1, v1',
        kf.build_cube,
        df,
        cube,
        store,
    )


def test_duplicate_cell_message_shows_keys_and_payload(cube, store, seed_df):
    dup = pd.concat([seed_df, seed_df.iloc[[1]].assign(v1=99.0)])
    with pytest.raises(kf.InvalidInputError) as info:
        kf.build_cube(dup, cube, store)
    text = str(info.value)
    assert "Keys:" in text and "Identical Payload:" in text and "Non-Idential Payload:" in text
    assert "99.0" in text and "\ni " in text


def test_existing_cube_rules(cube, built, seed_df, enrich_df, low_df):
    store = built
    _fails(
        store,
        kf.DatasetExistsError,
        "cube++enrich",
        kf.build_cube,
        {"seed": seed_df, "enrich": enrich_df},
        cube,
        store,
    )
    _fails(
        store,
        kf.InvalidInputError,
        "Following datasets exists but are not overwritten (partial overwrite), this is not "
        "allowed: enrich",
        kf.build_cube,
        seed_df,
        cube,
        store,
        overwrite=True,
    )
    _fails(
        store,
        kf.InvalidInputError,
        'Seed data ("seed") cannot be written during extension.',
        kf.extend_cube,
        {"seed": seed_df},
        cube,
        store,
    )
    _fails(
        store,
        kf.InvalidInputError,
        'Payload written in "other" is already present in cube: v2',
        kf.extend_cube,
        {"other": enrich_df},
        cube,
        store,
    )
    _fails(
        store,
        kf.InvalidInputError,
        "Unknown / non-existing datasets: low",
        kf.append_to_cube,
        {"low": low_df},
        cube,
        store,
    )
    _fails(
        store,
        kf.SchemaError,
        "not compatible",
        kf.append_to_cube,
        {"enrich": enrich_df.assign(v2=["a", "b", "c", "d"])},
        cube,
        store,
    )
    _fails(
        store,
        kf.SchemaError,
        "not compatible",
        kf.append_to_cube,
        {"enrich": enrich_df.assign(extra=1)},
        cube,
        store,
    )
    _fails(
        store,
        kf.InvalidInputError,
        "Can only remove partitions with conditions concerning cubes physical partition columns.",
        kf.remove_partitions,
        cube,
        store,
        conditions=C("x") == 1,
    )
    _fails(
        store,
        kf.InvalidInputError,
        "Unknown ktk_cube_dataset_ids: nope",
        kf.remove_partitions,
        cube,
        store,
        C("p") == 0,
        ktk_cube_dataset_ids=["nope"],
    )
    _fails(
        store,
        kf.InvalidInputError,
        'Ktk_cube Dataset ID "enrich" is present during pipeline execution but was not '
        "specified in ktk_cube_dataset_ids (seed).",
        kf.update_cube,
        {"enrich": enrich_df},
        cube,
        store,
        remove_conditions=C("p") == 0,
        ktk_cube_dataset_ids=["seed"],
    )


def test_extend_requires_a_consistent_cube(cube, store, enrich_df):
    _fails(
        store,
        kf.InvalidInputError,
        'Seed data ("seed") is missing.',
        kf.extend_cube,
        {"enrich": enrich_df},
        cube,
        store,
    )


def test_cube_spec_validation():
    with pytest.raises(kf.InvalidTypeError, match="unstable iteration order"):
        kf.Cube({"x", "y"}, ["p"], "c")
    with pytest.raises(kf.InvalidInputError, match="dimension_columns must not be empty"):
        kf.Cube([], ["p"], "c")
    with pytest.raises(kf.InvalidInputError, match="partition_columns must not be empty"):
        kf.Cube(["x"], [], "c")
    with pytest.raises(kf.InvalidInputError, match="contains duplicates: x, x"):
        kf.Cube(["x", "x"], ["p"], "c")
    with pytest.raises(
        kf.InvalidInputError,
        match="partition_columns cannot share columns with dimension_columns, but share the "
        "following: x",
    ):
        kf.Cube(["x"], ["x"], "c")
    with pytest.raises(kf.InvalidInputError, match="index_columns cannot share columns"):
        kf.Cube(["x"], ["p"], "c", index_columns=["p"])
    with pytest.raises(kf.InvalidInputError, match="must be a subset of dimension_columns"):
        kf.Cube(["x"], ["p"], "c", suppress_index_on=["y"])
    with pytest.raises(kf.InvalidInputError, match="must not contain UUID separator"):
        kf.Cube(["x"], ["p"], "a++b")
    with pytest.raises(kf.InvalidUUIDError):
        kf.Cube(["x"], ["p"], "a/b")
    with pytest.raises(kf.InvalidUUIDError):
        kf.Cube(["x"], ["p"], "c", seed_dataset="s.eed")
    cube = kf.Cube(("x", "y"), "p", "c", index_columns={"b", "a"})
    assert cube.partition_columns == ("p",)
    assert cube.index_columns == ("a", "b")
    assert cube.ktk_index_columns == {"a", "b", "p", "x", "y"}
    with pytest.raises(AttributeError):
        cube.uuid_prefix = "d"  # type: ignore[misc]
    assert cube.copy(uuid_prefix="d").uuid_prefix == "d"


def test_dask_rules_are_checked_before_the_graph(cube, store, seed_df, enrich_df):
    dd = pytest.importorskip("dask.dataframe")
    _fails(
        store,
        kf.InvalidInputError,
        'Missing dimension columns in seed data "seed": y',
        kf.build_cube_from_dataframe,
        dd.from_pandas(seed_df.drop(columns="y"), npartitions=1),
        cube,
        store,
    )
    _fails(
        store,
        kf.InvalidInputError,
        "Found columns present in multiple datasets: - v1: enrich, seed",
        kf.build_cube_from_dataframe,
        {
            "seed": dd.from_pandas(seed_df, npartitions=1),
            "enrich": dd.from_pandas(enrich_df.assign(v1=1.0), npartitions=1),
        },
        cube,
        store,
    )
    _fails(
        store,
        kf.InvalidTypeError,
        'not a dask.dataframe.DataFrame or None, but is a "DataFrame"',
        kf.build_cube_from_dataframe,
        seed_df,
        cube,
        store,
    )


@pytest.mark.parametrize("shuffle", [False, True])
def test_dask_data_errors_leave_the_store_unchanged(cube, store, seed_df, enrich_df, shuffle):
    dd = pytest.importorskip("dask.dataframe")
    kf.build_cube({"seed": seed_df, "enrich": enrich_df}, cube, store)
    bad = enrich_df.astype({"y": "Int64"})
    bad.loc[2, "y"] = pd.NA
    job = kf.append_to_cube_from_dataframe(
        {
            "enrich": dd.from_pandas(bad, npartitions=2),
            "seed": dd.from_pandas(seed_df, npartitions=2),
        },
        cube,
        store,
        shuffle=shuffle,
    )
    before = keys(store)
    with pytest.raises(kf.InvalidInputError, match='NULL-values in dimension column "y"'):
        job.compute(scheduler="sync")
    assert keys(store) == before
    dup = pd.concat([seed_df, seed_df])
    job = kf.append_to_cube_from_dataframe(
        dd.from_pandas(dup, npartitions=1), cube, store, shuffle=shuffle
    )
    with pytest.raises(kf.InvalidInputError, match="Found duplicate cells"):
        job.compute(scheduler="sync")
    assert keys(store) == before
