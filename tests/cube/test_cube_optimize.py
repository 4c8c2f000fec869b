"""``optimize_cube``: every dataset compacted and sorted by the dimension columns, query
results unchanged (the keep-last overlay of appends included, also with an append racing
the optimize), and kartothek 5.3 still queries the optimized cube."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from kartothek53 import run_kartothek

import kartoframe as kf
from kartoframe.execution.optimize import commit_optimize, load_optimize, rewrite_unit
from kartoframe.storage.store_arg import ensure_store

CUBE = kf.Cube(["city", "day"], ["country"], "weather", index_columns=["station"])
APPENDS = 6


def _seed(rows: int = 40, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "country": rng.choice(["DE", "FR"], rows),
            "city": rng.choice(["a", "b", "c", "d"], rows),
            "day": rng.integers(0, 10, rows),
            "temp": rng.normal(size=rows).round(3),
            "station": rng.integers(0, 5, rows),
        }
    ).drop_duplicates(["country", "city", "day"])


def _cube(store: kf.Store) -> None:
    """A seed and an enrich dataset, then appends that correct earlier cells (overlay)."""
    seed = _seed()
    enrich = seed[["country", "city", "day"]].assign(rain=np.arange(len(seed)) * 0.5)
    kf.build_cube({"seed": seed, "enrich": enrich}, CUBE, store)
    for i in range(1, APPENDS + 1):
        fix = _seed(rows=12, seed=i).assign(temp=float(100 * i))
        kf.append_to_cube({"seed": fix}, CUBE, store)


def _query(store: kf.Store) -> pd.DataFrame:
    (df,) = kf.query_cube(CUBE, store)
    return df.reset_index(drop=True)


def _files(store: kf.Store, ds_id: str) -> dict[str, str]:
    return dict(kf.read_dataset_metadata(CUBE.ktk_dataset_uuid(ds_id), store).partitions)


def test_optimize_cube_sorts_by_dimensions_and_keeps_every_answer(file_store) -> None:
    _cube(file_store)
    before = _query(file_store)
    assert (before["temp"] >= 100).any()  # the overlay of appends is visible
    n_seed = len(_files(file_store, "seed"))

    results = kf.optimize_cube(CUBE, file_store)

    assert list(results) == ["seed", "enrich"]  # the seed first
    assert results["seed"].files_removed == n_seed
    assert results["seed"].files_added == 2  # one per country
    assert results["enrich"].files_removed == 2  # one per partition, rewritten sorted
    pd.testing.assert_frame_equal(_query(file_store), before)
    for key in _files(file_store, "seed").values():
        table = pq.read_table(file_store.open_input(key))
        cells = list(zip(table["city"].to_pylist(), table["day"].to_pylist(), strict=True))
        assert cells == sorted(cells)
    assert kf.check_cube(CUBE, file_store).ok
    again = kf.optimize_cube(CUBE, file_store)
    assert all(r.files_removed == 0 for r in again.values())
    # selected by the partition column, and a dry run
    dry = kf.optimize_cube(CUBE, file_store, sort_by=[], dry_run=True)
    assert all(r.dry_run for r in dry.values())


def test_predicates_leave_out_datasets_without_their_columns(file_store) -> None:
    """``enrich`` (no ``station``) is left out, and a bad option fails before the seed
    commits (every dataset is planned first)."""
    _cube(file_store)
    seed_files = _files(file_store, "seed")
    with pytest.raises(kf.InvalidInputError, match="partition keys"):
        kf.optimize_cube(CUBE, file_store, predicates=[[("station", "==", 1)]])
    assert _files(file_store, "seed") == seed_files  # nothing committed
    wide = kf.Cube(["city", "day"], ["country"], "wide")
    seed = _seed()
    kf.build_cube(
        {"seed": seed, "flat": seed[["city", "day"]].drop_duplicates().assign(v=1)},
        wide,
        file_store,
        partition_on={"flat": []},
    )
    kf.append_to_cube({"seed": _seed(seed=5)}, wide, file_store)
    results = kf.optimize_cube(wide, file_store, predicates=[[("country", "==", "DE")]])
    assert list(results) == ["seed"]
    assert results["seed"].partitions_optimized == ("country=DE",)


def test_an_append_racing_the_optimize_still_wins_the_overlay(file_store) -> None:
    """The append commits after the optimize read the seed's files: its corrections were
    committed later, so they must still win over the rows the optimize rewrote."""
    _cube(file_store)
    st = ensure_store(file_store)
    uuid = CUBE.ktk_dataset_uuid("seed")
    plan, base = load_optimize(st, uuid, sort_by=["city", "day"])
    chunks = [rewrite_unit(st, plan, u) for u in plan.units]
    late = _seed(rows=30, seed=99).assign(temp=-1.0)
    kf.append_to_cube({"seed": late}, CUBE, file_store)
    expected = _query(file_store)
    assert (expected["temp"] == -1.0).sum() == len(late)

    commit_optimize(st, plan, base, chunks)

    pd.testing.assert_frame_equal(_query(file_store), expected)


def test_kartothek_queries_an_optimized_cube(file_store, tmp_path) -> None:
    _cube(file_store)
    kf.optimize_cube(CUBE, file_store)
    spec = {
        "uuid_prefix": CUBE.uuid_prefix,
        "dimension_columns": list(CUBE.dimension_columns),
        "partition_columns": list(CUBE.partition_columns),
        "index_columns": list(CUBE.index_columns),
    }
    conditions = {
        "all": (None, None),
        "station": (["station", "==", 3], kf.C("station") == 3),
        "hot": (["temp", ">", 50.0], kf.C("temp") > 50.0),
    }
    queries = [
        {"id": qid, "cube": spec, "conditions": [js] if js else None}
        for qid, (js, _) in conditions.items()
    ]
    results = run_kartothek(file_store.url.removeprefix("file://"), queries, tmp_path)
    for qid, (_, cond) in conditions.items():
        (frame,) = kf.query_cube(CUBE, file_store, conditions=cond)
        (theirs_file,) = results[qid]
        theirs = pd.read_parquet(theirs_file)
        assert len(frame) > 0
        pd.testing.assert_frame_equal(
            frame.reset_index(drop=True)[sorted(frame.columns)],
            theirs[sorted(theirs.columns)],
            check_dtype=False,
        )
