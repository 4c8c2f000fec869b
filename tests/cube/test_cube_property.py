"""Property test: random queries on random cubes equal a straightforward pandas oracle.

Each example builds a small cube (seed, a partial enrich dataset partitioned like the seed
or not at all, a lower-dimensional dataset, optional appends that overlay cells) and runs
a few random queries (conditions, projection, dimension order, payload subsets,
``partition_by``, dataset subsets). Results of the eager engine and of the per-group
execution the dask engine uses must equal ``cube_reference.reference_query``.
"""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import pandas as pd
import pytest
from cube_reference import ProjectionError, assert_results_equal, reference_query
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kartoframe as kf
from kartoframe import C
from kartoframe.execution.cube_join import load_group
from kartoframe.front.cube_query import plan_cube_query

CUBE = kf.Cube(["x", "y"], ["p"], "prop", index_columns=["i"])
COLUMN_VALUES: dict[str, Any] = {
    "x": st.integers(-1, 4),
    "y": st.integers(-1, 3),
    "p": st.integers(0, 2),
    "i": st.integers(0, 3),
    "v1": st.floats(-2, 2, allow_nan=False).map(lambda v: round(v, 1)),
    "v2": st.integers(-5, 5),
    "v3": st.sampled_from(["a", "b", "c", "d"]),
}
OPS = ["==", "!=", "<", "<=", ">", ">=", "in", "in_interval"]


@st.composite
def cubes(draw: st.DrawFn) -> dict[str, Any]:
    nx, ny = draw(st.integers(1, 4)), draw(st.integers(1, 3))
    grid = [(x, y) for x in range(nx) for y in range(ny)]
    seed_cells = draw(st.lists(st.sampled_from(grid), min_size=1, max_size=len(grid), unique=True))
    p_of: dict[tuple[int, int], int] = {c: draw(st.integers(0, 2)) for c in [*grid, (9, 9)]}

    def seed_rows(cells: list[tuple[int, int]]) -> pd.DataFrame:
        n = len(cells)
        v1 = draw(st.lists(st.one_of(st.none(), COLUMN_VALUES["v1"]), min_size=n, max_size=n))
        return pd.DataFrame(
            {
                "x": [c[0] for c in cells],
                "y": [c[1] for c in cells],
                "p": [p_of[c] for c in cells],
                "i": draw(st.lists(COLUMN_VALUES["i"], min_size=n, max_size=n)),
                "v1": pd.array(v1, dtype="float64"),
            }
        )

    enrich_cells = draw(st.lists(st.sampled_from([*grid, (9, 9)]), max_size=6, unique=True))
    enrich_partitioned = draw(st.booleans())

    def enrich_rows(cells: list[tuple[int, int]]) -> pd.DataFrame:
        n = len(cells)
        df = pd.DataFrame(
            {
                "x": [c[0] for c in cells],
                "y": [c[1] for c in cells],
                "v2": draw(st.lists(COLUMN_VALUES["v2"], min_size=n, max_size=n)),
            }
        )
        if enrich_partitioned:
            df["p"] = [p_of[c] for c in cells]
        return df

    xs = draw(st.lists(st.integers(0, nx), min_size=1, max_size=nx + 1, unique=True))
    low = pd.DataFrame(
        {"x": xs, "v3": draw(st.lists(COLUMN_VALUES["v3"], min_size=len(xs), max_size=len(xs)))}
    )
    written: dict[str, list[pd.DataFrame]] = {"seed": [seed_rows(seed_cells)], "low": [low]}
    if enrich_cells:
        written["enrich"] = [enrich_rows(enrich_cells)]
    for _ in range(draw(st.integers(0, 2))):
        target = draw(st.sampled_from(sorted(written)))
        if target == "seed":
            cells = draw(st.lists(st.sampled_from(grid), min_size=1, max_size=3, unique=True))
            written["seed"].append(seed_rows(cells))
        elif target == "enrich":
            cells = draw(st.lists(st.sampled_from(grid), min_size=1, max_size=3, unique=True))
            written["enrich"].append(enrich_rows(cells))
    pkeys = {"seed": ["p"], "low": [], "enrich": ["p"] if enrich_partitioned else []}
    return {"written": written, "pkeys": pkeys}


@st.composite
def queries(draw: st.DrawFn, datasets: list[str]) -> dict[str, Any]:
    literals = []
    for _ in range(draw(st.integers(0, 2))):
        col = draw(st.sampled_from(sorted(COLUMN_VALUES)))
        op = draw(st.sampled_from(OPS))
        values = COLUMN_VALUES[col]
        if op == "in":
            value: Any = draw(st.lists(values, min_size=1, max_size=3))
        elif op == "in_interval":
            value = (draw(st.one_of(st.none(), values)), draw(st.one_of(st.none(), values)))
        else:
            value = draw(values)
        literals.append((col, op, value))
    dims = draw(st.sampled_from([None, ["x"], ["y", "x"], ["y"]]))
    payload = draw(
        st.one_of(st.none(), st.lists(st.sampled_from(["i", "v1", "v2", "v3"]), unique=True))
    )
    pby = draw(st.sampled_from([None, ["p"], ["i"], ["x"]]))
    subset = draw(st.sampled_from([None, ["seed", "low"], sorted(datasets)]))
    return {
        "literals": literals,
        "dimension_columns": dims,
        "payload_columns": payload,
        "partition_by": pby,
        "datasets": subset,
    }


def _condition(col: str, op: str, value: Any) -> Any:
    c = C(col)
    if op == "in":
        return c.isin(value)
    if op == "in_interval":
        return c.in_interval(*value)
    return {"==": c == value, "!=": c != value, "<": c < value, "<=": c <= value}.get(
        op, c > value if op == ">" else c >= value
    )


def _usable(q: dict[str, Any], present: set[str]) -> bool:
    cols = set()
    for ds in q["datasets"] or present:
        cols |= {"seed": {"x", "y", "p", "i", "v1"}, "enrich": {"x", "y", "v2"}}.get(ds, set())
        cols |= {"x", "v3"} if ds == "low" else set()
    needed = {c for c, _, _ in q["literals"]} | set(q["payload_columns"] or [])
    return needed <= cols


def _build(store: kf.Store, written: dict[str, list[pd.DataFrame]], pkeys: dict) -> None:
    first = {k: v[0] for k, v in written.items() if k != "low"}
    kf.build_cube(first, CUBE, store, partition_on={"enrich": pkeys["enrich"]})
    kf.extend_cube({"low": written["low"][0]}, CUBE, store, partition_on={"low": []})
    for ds, frames in written.items():
        for df in frames[1:]:
            kf.append_to_cube({ds: df}, CUBE, store)


def _per_group(store: kf.Store, **kw: Any) -> list[pd.DataFrame]:
    plan, st_ = plan_cube_query(CUBE, store, **kw)
    frames = [f for f in (load_group(plan, g, st_) for g in plan.groups) if len(f)]
    if kw.get("partition_by") or len(frames) < 2:
        return frames
    out = pd.concat(frames, ignore_index=True)
    return [out.sort_values(list(plan.sort_columns), kind="stable").reset_index(drop=True)]


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data(), cube=cubes())
def test_random_queries_match_the_oracle(data: st.DataObject, cube: dict[str, Any]) -> None:
    store = kf.Store(f"memory://cube-prop-{uuid.uuid4().hex}")
    written, pkeys = cube["written"], cube["pkeys"]
    _build(store, written, pkeys)
    for _ in range(4):
        q = data.draw(queries(sorted(written)))
        if not _usable(q, set(written)):
            continue
        kw = {k: v for k, v in q.items() if k != "literals"}
        kw["conditions"] = [_condition(*lit) for lit in q["literals"]] or None
        try:
            expected = reference_query(
                CUBE,
                written,
                pkeys,
                conditions=q["literals"],
                **{k: v for k, v in kw.items() if k != "conditions"},
            )
        except ProjectionError:
            with pytest.raises(kf.InvalidInputError, match="Cannot project dataset"):
                kf.query_cube(CUBE, store, **kw)
            continue
        assert_results_equal(kf.query_cube(CUBE, store, **kw), expected)
        assert_results_equal(_per_group(store, **kw), expected)


@pytest.mark.slow
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), cube=cubes())
def test_random_queries_on_dask(data: st.DataObject, cube: dict[str, Any]) -> None:
    from cube_engines import Dask

    store = kf.Store(f"memory://cube-prop-{uuid.uuid4().hex}")
    written, pkeys = cube["written"], cube["pkeys"]
    _build(store, written, pkeys)
    engine = Dask()
    for _ in range(2):
        q = data.draw(queries(sorted(written)))
        if not _usable(q, set(written)):
            continue
        kw = {k: v for k, v in q.items() if k != "literals"}
        kw["conditions"] = [_condition(*lit) for lit in q["literals"]] or None
        try:
            expected = reference_query(
                CUBE,
                written,
                pkeys,
                conditions=q["literals"],
                **{k: v for k, v in kw.items() if k != "conditions"},
            )
        except ProjectionError:
            continue
        assert_results_equal(engine.query(CUBE, store, **kw), expected)


def test_oracle_sanity() -> None:
    """The oracle itself on a hand-checked case (lazy seed, left join, overlay)."""
    seed = pd.DataFrame({"x": [0, 1], "y": [0, 0], "p": [0, 0], "i": [1, 1], "v1": [1.0, 2.0]})
    enrich = pd.DataFrame({"x": [1, 5], "y": [0, 5], "p": [0, 1], "v2": [7, 8]})
    overlay = pd.DataFrame({"x": [1], "y": [0], "p": [0], "v2": [9]})
    low = pd.DataFrame({"x": [0], "v3": ["a"]})
    written = {"seed": [seed], "enrich": [enrich, overlay], "low": [low]}
    (out,) = reference_query(CUBE, written, {"seed": ["p"], "enrich": ["p"], "low": []})
    assert out.x.tolist() == [0, 1]
    assert out.v2.tolist()[1] == 9 and np.isnan(out.v2.tolist()[0])
    assert out.v3.tolist()[0] == "a" and pd.isna(out.v3.tolist()[1])
    (stale,) = reference_query(
        CUBE, written, {"seed": ["p"], "enrich": ["p"], "low": []}, conditions=[("v2", "==", 7)]
    )
    assert stale.x.tolist() == [1] and stale.v2.tolist() == [7]
