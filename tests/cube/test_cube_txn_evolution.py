"""Cube writes: idempotent application transactions, schema evolution, bloom filters.

Every cube write (eager and dask) takes ``app_id``/``app_version``/``commit_info`` and
records them on each dataset commit; appends and updates take ``schema_evolution``.
"""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest

import kartoframe as kf
from kartoframe.api.read import plan_read
from kartoframe.dask.cube import (
    append_to_cube_from_dataframe,
    build_cube_from_dataframe,
    update_cube_from_dataframe,
)
from kartoframe.storage.resolve import load_dataset, statistics_ref


def _seed(n: int = 6, offset: int = 0) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "x": list(range(offset, offset + n)),
            "p": [i % 2 for i in range(n)],
            "v1": [float(i) for i in range(n)],
        }
    )


def _enrich(xs: list[int]) -> pd.DataFrame:
    return pd.DataFrame({"x": xs, "p": [i % 2 for i in xs], "v2": [10 * i for i in xs]})


@pytest.fixture
def cube() -> kf.Cube:
    return kf.Cube(["x"], ["p"], uuid_prefix="txn")


def _files(store: kf.Store, uuid: str) -> int:
    """Data files in the store (referenced or not: a retry must not even write one)."""
    return sum(1 for k in store.iter_keys(f"{uuid}/") if k.endswith(".parquet"))


def _rows(cube: kf.Cube, store: kf.Store) -> pd.DataFrame:
    (df,) = kf.query_cube(cube, store)
    return df.sort_values("x").reset_index(drop=True)


# -- application transactions ------------------------------------------------------------


def test_retried_append_commits_once(cube: kf.Cube, store: kf.Store) -> None:
    kf.build_cube(_seed(), cube, store)
    info = {"job": "nightly", "run": 7}
    first = kf.append_to_cube(
        _seed(2, offset=100), cube, store, app_id="pipe", app_version=1, commit_info=info
    )
    files = _files(store, "txn++seed")
    again = kf.append_to_cube(
        _seed(2, offset=100), cube, store, app_id="pipe", app_version=1, commit_info=info
    )
    assert sorted(first) == sorted(again) == ["seed"]
    assert again["seed"].uuid == "txn++seed"
    assert _files(store, "txn++seed") == files  # nothing written by the retry
    assert len(_rows(cube, store)) == 8
    newest = kf.dataset_history("txn++seed", store)[0]
    assert (newest.app_id, newest.app_version, newest.commit_info) == ("pipe", 1, info)
    assert newest.parameters["cube_operation"] == "append"
    # an older version is a retry too; a newer one commits
    kf.append_to_cube(_seed(2, offset=200), cube, store, app_id="pipe", app_version=0)
    assert len(_rows(cube, store)) == 8
    kf.append_to_cube(_seed(2, offset=200), cube, store, app_id="pipe", app_version=2)
    assert len(_rows(cube, store)) == 10


def test_retry_after_a_crash_between_dataset_commits(cube: kf.Cube, store: kf.Store) -> None:
    """An attempt committed ``enrich`` and died before the seed: the retry must not append
    ``enrich`` twice and must still append the seed."""
    kf.build_cube({"seed": _seed(), "enrich": _enrich([0, 1])}, cube, store)
    # the first attempt's enrich commit (enrich commits before the seed)
    kf.append_to_cube({"enrich": _enrich([2, 3])}, cube, store, app_id="job", app_version=5)
    enrich_files = _files(store, "txn++enrich")
    out = kf.append_to_cube(
        {"seed": _seed(2, offset=50), "enrich": _enrich([2, 3])},
        cube,
        store,
        app_id="job",
        app_version=5,
    )
    assert sorted(out) == ["enrich", "seed"]
    assert _files(store, "txn++enrich") == enrich_files
    assert kf.dataset_history("txn++seed", store)[0].app_id == "job"
    enrich = kf.read_table("txn++enrich", store)
    assert sorted(enrich["x"]) == [0, 1, 2, 3]  # no duplicate cells
    assert set(_rows(cube, store)["x"]) == {0, 1, 2, 3, 4, 5, 50, 51}


def test_retried_build_and_remove(cube: kf.Cube, store: kf.Store) -> None:
    data = {"seed": _seed(), "enrich": _enrich([0, 1, 2])}
    kf.build_cube(data, cube, store, app_id="b", app_version=1)
    # a plain retry of a build raises DatasetExistsError; with the transaction it is a no-op
    assert sorted(kf.build_cube(data, cube, store, app_id="b", app_version=1)) == [
        "enrich",
        "seed",
    ]
    with pytest.raises(kf.DatasetExistsError):
        kf.build_cube(data, cube, store)
    kf.remove_partitions(cube, store, kf.C("p") == 0, app_id="rm", app_version=1)
    after = _rows(cube, store)
    assert set(after["p"]) == {1}
    kf.append_to_cube(_seed(2, offset=10), cube, store)  # adds p=0 rows again
    kf.remove_partitions(cube, store, kf.C("p") == 0, app_id="rm", app_version=1)
    assert 0 in set(_rows(cube, store)["p"])  # the retry removed nothing


def test_transaction_arguments_are_checked(cube: kf.Cube, store: kf.Store) -> None:
    kf.build_cube(_seed(), cube, store)
    with pytest.raises(kf.InvalidInputError, match="together"):
        kf.append_to_cube(_seed(1, 9), cube, store, app_id="x")
    with pytest.raises(kf.InvalidTypeError):
        kf.append_to_cube(_seed(1, 9), cube, store, app_id="x", app_version="1")  # type: ignore[arg-type]
    with pytest.raises(kf.InvalidTypeError, match="commit_info"):
        kf.append_to_cube(_seed(1, 9), cube, store, commit_info={"f": object()})
    assert len(_rows(cube, store)) == 6


def test_dask_cube_writes_are_idempotent(cube: kf.Cube, store: kf.Store) -> None:
    dd = pytest.importorskip("dask.dataframe")
    build_cube_from_dataframe(
        dd.from_pandas(_seed(), npartitions=2), cube, store, app_id="d", app_version=1
    ).compute(scheduler="threads")
    job = append_to_cube_from_dataframe(
        dd.from_pandas(_seed(4, offset=20), npartitions=2),
        cube,
        store,
        app_id="d",
        app_version=2,
        commit_info={"who": "dask"},
    )
    assert sorted(job.compute(scheduler="threads")) == ["seed"]
    files = _files(store, "txn++seed")
    retry = append_to_cube_from_dataframe(
        dd.from_pandas(_seed(4, offset=20), npartitions=2),
        cube,
        store,
        app_id="d",
        app_version=2,
    )
    assert sorted(retry.compute(scheduler="threads")) == ["seed"]
    assert _files(store, "txn++seed") == files
    assert len(_rows(cube, store)) == 10
    assert kf.dataset_history("txn++seed", store)[0].commit_info == {"who": "dask"}


# -- schema evolution ----------------------------------------------------------------------


def test_append_with_a_new_payload_column(cube: kf.Cube, store: kf.Store) -> None:
    kf.build_cube({"seed": _seed(), "enrich": _enrich([0, 1, 2])}, cube, store)
    wider = _seed(2, offset=30).assign(v3=pd.array(["a", "b"], dtype="string"))
    before = kf.read_dataset_metadata("txn++seed", store).partitions
    with pytest.raises(kf.SchemaError):
        kf.append_to_cube(wider, cube, store)
    assert kf.read_dataset_metadata("txn++seed", store).partitions == before
    kf.append_to_cube(wider, cube, store, schema_evolution="add_columns")
    schema = kf.read_dataset_schema("txn++seed", store)
    assert schema.field("v3").type == pa.string()
    df = _rows(cube, store)
    assert df.loc[df.x >= 30, "v3"].tolist() == ["a", "b"]
    assert df.loc[df.x < 30, "v3"].isna().all()  # older files: typed nulls
    assert df.loc[df.x < 3, "v2"].tolist() == [0, 10, 20]
    events = kf.schema_history("txn++seed", store)
    assert events[-1].change == "add_columns"
    assert "v3" in events[-1].added
    # queries with a condition on the new column
    (hit,) = kf.query_cube(cube, store, conditions=kf.C("v3") == "b")
    assert hit["x"].tolist() == [31]


def test_evolution_keeps_the_cube_rules(cube: kf.Cube, store: kf.Store) -> None:
    kf.build_cube({"seed": _seed(), "enrich": _enrich([0, 1, 2])}, cube, store)
    # v2 is enrich's payload: the seed cannot add it
    with pytest.raises(kf.InvalidInputError, match="v2"):
        kf.append_to_cube(
            _seed(1, offset=40).assign(v2=1), cube, store, schema_evolution="add_columns"
        )
    # a type change is not an evolution
    with pytest.raises(kf.SchemaError):
        kf.append_to_cube(
            _seed(1, offset=40).assign(v1="text"), cube, store, schema_evolution="add_columns"
        )
    # only appends and updates evolve; build and extend define schemas
    with pytest.raises(kf.InvalidInputError, match="schema_evolution"):
        kf.api.cube_write._write(
            "extend",
            {"other": _enrich([0]).rename(columns={"v2": "v9"})},
            cube,
            store,
            metadata=None,
            schema_evolution="add_columns",
        )
    with pytest.raises(kf.InvalidInputError, match="schema_evolution"):
        kf.append_to_cube(_seed(1, 40), cube, store, schema_evolution="anything")  # type: ignore[arg-type]
    assert len(_rows(cube, store)) == 6


def test_evolution_cannot_add_dimension_columns() -> None:
    cube = kf.Cube(["x", "y"], ["p"], uuid_prefix="dims")
    store = kf.Store("memory://cube-evolution-dims")
    seed = pd.DataFrame({"x": [1, 2], "y": [1, 1], "p": [0, 0], "v": [1.0, 2.0]})
    kf.build_cube({"seed": seed, "e": pd.DataFrame({"x": [1], "p": [0], "w": [5]})}, cube, store)
    with pytest.raises(kf.SchemaError, match="dimension"):
        kf.append_to_cube(
            {"e": pd.DataFrame({"x": [2], "y": [1], "p": [0], "w": [6]})},
            cube,
            store,
            schema_evolution="add_columns",
        )


def test_dask_update_with_evolution(cube: kf.Cube, store: kf.Store) -> None:
    dd = pytest.importorskip("dask.dataframe")
    kf.build_cube({"seed": _seed(), "enrich": _enrich([0, 1, 2, 3])}, cube, store)
    new = _enrich([0, 2]).assign(v4=[1.5, 2.5])
    job = update_cube_from_dataframe(
        {"enrich": dd.from_pandas(new, npartitions=2)},
        cube,
        store,
        remove_conditions=kf.C("p") == 0,
        schema_evolution="add_columns",
    )
    job.compute(scheduler="threads")
    enrich = kf.read_table("txn++enrich", store).sort_values("x")
    assert enrich["x"].tolist() == [0, 1, 2, 3]  # p=0 replaced by the new rows
    assert enrich["v4"].tolist()[0] == 1.5 and pd.isna(enrich["v4"].tolist()[1])
    with pytest.raises(kf.SchemaError):
        update_cube_from_dataframe(
            {"enrich": dd.from_pandas(_enrich([4]).assign(v5=1), npartitions=1)},
            cube,
            store,
        )


# -- statistics and bloom filters ----------------------------------------------------------


def test_cube_appends_maintain_bloom_filters(cube: kf.Cube, store: kf.Store) -> None:
    users = pd.DataFrame(
        {"x": range(40), "p": [0] * 40, "user": [f"u{i}" for i in range(40)], "v1": 1.0}
    )
    kf.build_cube(users.iloc[:20], cube, store)
    kf.build_dataset_statistics(store, "txn++seed", bloom_filter_columns=["user"])
    kf.append_to_cube(users.iloc[20:], cube, store)
    ref = statistics_ref(load_dataset(store, "txn++seed").metadata)
    assert ref is not None and ref.bloom_filter_columns == ("user",)
    # min/max of both files overlap ("u0".."u9" vs "u20".."u39"): only blooms separate them
    plan, _ = plan_read("txn++seed", store, predicates=[[("user", "==", "u25")]])
    assert plan.stats.after_statistics == 1
    stats = kf.dataset_statistics("txn++seed", store)
    assert stats["has_statistics"].all() and len(stats) == 2
