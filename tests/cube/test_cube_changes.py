"""``kf.read_cube_changes``: the cells the seed or an enrichment dataset changed, with
the dataset that changed them, and a per-dataset cursor (real stores, real files)."""

from __future__ import annotations

import pandas as pd
import pytest

import kartoframe as kf
from kartoframe import C
from kartoframe.errors import InvalidInputError, InvalidTypeError


def _cells(rows: pd.DataFrame, dataset: str, kind: str) -> list[tuple[int, int]]:
    sel = rows[(rows["_dataset"] == dataset) & (rows["_change_type"] == kind)]
    return sorted(zip(sel["x"].astype(int), sel["y"].astype(int), strict=True))


def test_cells_changed_by_the_seed_and_by_an_enrichment(cube, store, seed_df, enrich_df):
    kf.build_cube({"seed": seed_df, "enrich": enrich_df}, cube, store)
    rows, cursor = kf.read_cube_changes(cube, store, start_version=0)
    assert cursor == {"seed": 1, "enrich": 1}
    assert list(rows.columns[:3]) == ["x", "y", "p"]
    assert list(rows.columns[-4:]) == [
        "_dataset",
        "_change_type",
        "_commit_version",
        "_commit_timestamp",
    ]
    assert list(rows["_dataset"].drop_duplicates()) == ["seed", "enrich"]  # seed first
    assert len(_cells(rows, "seed", "insert")) == 6
    assert len(_cells(rows, "enrich", "insert")) == 4
    # enrichment rows carry their payload, not the seed's
    enrich = rows[rows["_dataset"] == "enrich"]
    assert enrich["v1"].isna().all() and enrich["v2"].notna().all()

    # an update of the enrichment's partition p=0 changes only enrichment cells
    new = pd.DataFrame({"x": [0], "y": [0], "p": [0], "v2": [99]})
    kf.update_cube(
        {"enrich": new}, cube, store, remove_conditions=C("p") == 0, ktk_cube_dataset_ids=["enrich"]
    )
    rows, cursor2 = kf.read_cube_changes(cube, store, start_version=cursor)
    assert cursor2 == {"seed": 1, "enrich": 2}
    assert set(rows["_dataset"]) == {"enrich"}
    assert _cells(rows, "enrich", "delete") == [(0, 0), (1, 1)]
    assert _cells(rows, "enrich", "insert") == [(0, 0)]
    assert rows.loc[rows["_change_type"] == "insert", "v2"].tolist() == [99]

    # an append to the seed: seed cells only
    kf.append_to_cube(
        pd.DataFrame({"x": [7], "y": [7], "p": [3], "i": [1], "v1": [7.0]}), cube, store
    )
    rows, cursor3 = kf.read_cube_changes(cube, store, start_version=cursor2)
    assert cursor3 == {"seed": 2, "enrich": 2}
    assert _cells(rows, "seed", "insert") == [(7, 7)]
    nothing, same = kf.read_cube_changes(cube, store, start_version=cursor3)
    assert nothing.empty and same == cursor3


def test_a_dataset_the_cursor_does_not_name_starts_at_zero(cube, store, seed_df, low_df):
    kf.build_cube(seed_df, cube, store)
    _, cursor = kf.read_cube_changes(cube, store, start_version=0)
    kf.extend_cube({"low": low_df}, cube, store, partition_on={"low": []})
    rows, after = kf.read_cube_changes(cube, store, start_version=cursor)
    assert after == {"seed": 1, "low": 1}
    assert set(rows["_dataset"]) == {"low"} and len(rows) == 3
    only, _ = kf.read_cube_changes(cube, store, start_version=0, datasets=["low"])
    assert set(only["_dataset"]) == {"low"}


def test_bad_cursors(cube, store, seed_df):
    kf.build_cube(seed_df, cube, store)
    with pytest.raises(InvalidInputError, match="does not have"):
        kf.read_cube_changes(cube, store, start_version={"nope": 0})
    with pytest.raises(InvalidTypeError):
        kf.read_cube_changes(cube, store, start_version="0")  # type: ignore[arg-type]
