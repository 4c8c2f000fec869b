"""Predicates are bound once per read, cube conditions once per cube dataset.

Every read resolves through one path (:mod:`kartoframe.plan.query` binds, storage loads
what it says, :func:`kartoframe.plan.scan.plan_bound` plans): the counts below are calls
of :func:`kartoframe.plan.predicates.bind` with predicates, wherever it was imported.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pandas as pd
import pytest
from bind_counting import count_binds

import kartoframe as kf
from kartoframe import C

PREDICATES = [[("p", "==", 1), ("i", "==", 3), ("x", ">", 0.5)], [("i", "in", [4, 5])]]


def _frame(n: int = 200) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    return pd.DataFrame(
        {
            "p": np.arange(n) % 4,
            "i": rng.integers(0, 10, n),
            "x": rng.random(n),
            "rid": np.arange(n),
        }
    )


@pytest.fixture
def dataset(tmp_path: Any) -> kf.Store:
    store = kf.Store(f"file://{tmp_path}/data")
    df = _frame()
    for start in (0, 70, 140):
        kf.update_dataset_from_dataframes(
            [df.iloc[start : start + 70]],
            store=store,
            dataset_uuid="ds",
            partition_on=["p"],
            secondary_indices=["i"],
        )
    return store


def _expected(df: pd.DataFrame) -> list[int]:
    a = (df.p == 1) & (df.i == 3) & (df.x > 0.5)
    return sorted(df.loc[a | df.i.isin([4, 5]), "rid"])


def test_eager_read_binds_predicates_once(dataset: kf.Store, monkeypatch: Any) -> None:
    binds = count_binds(monkeypatch)
    got = kf.read_table("ds", dataset, predicates=PREDICATES)
    assert len(binds()) == 1
    assert sorted(got["rid"]) == _expected(_frame())


def test_iterator_read_binds_predicates_once(dataset: kf.Store, monkeypatch: Any) -> None:
    binds = count_binds(monkeypatch)
    frames = list(kf.read_dataset_as_dataframes__iterator("ds", dataset, predicates=PREDICATES))
    assert len(binds()) == 1
    assert sorted(pd.concat(frames)["rid"]) == _expected(_frame())
    binds_before = len(binds())
    frames = kf.read_dataset_as_dataframes("ds", dataset, predicates=PREDICATES, dispatch_by=["p"])
    assert len(binds()) == binds_before + 1
    assert sorted(pd.concat(frames)["rid"]) == _expected(_frame())


def test_dask_read_binds_predicates_once(dataset: kf.Store, monkeypatch: Any) -> None:
    pytest.importorskip("dask")
    binds = count_binds(monkeypatch)
    ddf = kf.read_dataset_as_ddf("ds", dataset, predicates=PREDICATES, categoricals=["i"])
    got = ddf.compute(scheduler="sync")
    assert len(binds()) == 1
    assert sorted(got["rid"]) == _expected(_frame())


def test_spark_read_binds_predicates_once(dataset: kf.Store, monkeypatch: Any, spark: Any) -> None:
    import kartoframe.spark as kfs

    binds = count_binds(monkeypatch)
    sdf = kfs.read_dataset_as_sdf(spark, "ds", dataset, predicates=PREDICATES)
    assert len(binds()) == 1
    assert sorted(r["rid"] for r in sdf.select("rid").collect()) == _expected(_frame())


@pytest.fixture
def cube_store(tmp_path: Any) -> tuple[kf.Cube, kf.Store]:
    store = kf.Store(f"file://{tmp_path}/cube")
    cube = kf.Cube(["d"], ["p"], uuid_prefix="c", index_columns=["i"])
    seed = pd.DataFrame(
        {"d": np.arange(40), "p": np.arange(40) % 4, "i": np.arange(40) % 5, "v": np.arange(40.0)}
    )
    enrich = pd.DataFrame({"d": np.arange(40), "p": np.arange(40) % 4, "w": np.arange(40) * 2})
    other = pd.DataFrame({"d": np.arange(40), "p": np.arange(40) % 4, "u": np.arange(40) * 3})
    kf.build_cube({"seed": seed, "enrich": enrich, "other": other}, cube, store)
    return cube, store


CONDITIONS = (C("p") >= 1) & (C("i") == 2) & (C("v") > 3.0) & (C("w") < 70)


def _check_once_per_dataset(binds: list[tuple[str, ...]], cube_store: Any) -> None:
    cube, store = cube_store
    schemas = {
        ds_id: tuple(md.schema.names) for ds_id, md in kf.discover_datasets(cube, store).items()
    }
    per_dataset = Counter({ds_id: binds.count(names) for ds_id, names in schemas.items()})
    # every dataset with conditions on its columns is bound exactly once
    assert per_dataset == Counter({"seed": 1, "enrich": 1, "other": 1})
    assert len(binds) == 3


def test_query_cube_binds_conditions_once_per_dataset(cube_store: Any, monkeypatch: Any) -> None:
    cube, store = cube_store
    binds = count_binds(monkeypatch)
    (df,) = kf.query_cube(cube, store, conditions=CONDITIONS)
    found = binds()
    assert sorted(df["d"]) == [7, 17, 22, 27]
    _check_once_per_dataset(found, cube_store)


def test_dask_query_cube_binds_conditions_once_per_dataset(
    cube_store: Any, monkeypatch: Any
) -> None:
    pytest.importorskip("dask")
    cube, store = cube_store
    binds = count_binds(monkeypatch)
    ddf = kf.query_cube_dataframe(cube, store, conditions=CONDITIONS, partition_by=["i"])
    df = ddf.compute(scheduler="sync")
    found = binds()
    assert sorted(df["d"]) == [7, 17, 22, 27]
    _check_once_per_dataset(found, cube_store)
