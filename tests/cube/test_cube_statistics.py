"""Cube queries skip data files by their per-file statistics (``docs/cubes.md``).

Every dataset a query reads is pruned by partition keys, secondary indices and then by
its statistics, using the dataset's own row filter. The results must be exactly those of
the same query without statistics (the statistics reference removed from the headers)
and of the pandas oracle of ``cube_reference``; the plans must read fewer files, and the
files they leave out are deleted before running the query, which proves no engine opens
them.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest
from cube_engines import Dask
from cube_reference import assert_results_equal, reference_query
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kartoframe as kf
from kartoframe import C
from kartoframe.execution.cube_join import load_group
from kartoframe.front.cube_query import plan_cube_query
from kartoframe.plan.cube_query import CubeQueryPlan
from kartoframe.storage.resolve import load_dataset, statistics_ref

Literal = tuple[str, str, Any]

# x is a dimension without a secondary index; i is an index column
CUBE = kf.Cube(["x", "y"], ["p"], "stats", suppress_index_on=["x"], index_columns=["i"])
TZ = "Europe/Berlin"
N = 600
PER_PARTITION = 30  # 20 seed partitions, rows clustered on x, v, s and t


def _store(name: str) -> kf.Store:
    return kf.Store(f"memory://cube-stats-{name}-{uuid.uuid4().hex}")


def condition(col: str, op: str, value: Any) -> Any:
    """The :class:`kartoframe.Condition` of a ``cube_reference`` literal."""
    c = C(col)
    if op == "in":
        return c.isin(value)
    if op == "in_interval":
        return c.in_interval(*value)
    ops: dict[str, Callable[[Any], Any]] = {
        "==": c.__eq__,
        "!=": c.__ne__,
        "<": c.__lt__,
        "<=": c.__le__,
        ">": c.__gt__,
        ">=": c.__ge__,
    }
    return ops[op](value)


def conditions_of(literals: list[Literal]) -> Any:
    return [condition(*lit) for lit in literals] or None


def header_key(cube: kf.Cube, ds_id: str) -> str:
    return f"{cube.ktk_dataset_uuid(ds_id)}.by-dataset-metadata.json"


def drop_statistics(store: kf.Store, cube: kf.Cube, ds_id: str, *, plateau: bool = False) -> None:
    """Remove the statistics reference from a dataset's header.

    ``plateau=True`` drops kartoframe's whole header map, as plateau and kartothek do when
    they rewrite a header.
    """
    key = header_key(cube, ds_id)
    raw = json.loads(store.get(key))
    if plateau:
        raw.pop("kartoframe")
    else:
        assert raw["kartoframe"].pop("statistics", None) is not None
    store.put(key, json.dumps(raw).encode())
    assert statistics_ref(load_dataset(store, cube.ktk_dataset_uuid(ds_id)).metadata) is None


def unread_files(plan: CubeQueryPlan, store: kf.Store) -> list[str]:
    """Data files of the queried datasets that the plan does not read."""
    out = []
    for read in plan.reads:
        read_labels = {f.label for g in plan.groups for f in g.files.get(read.dataset_id, ())}
        md = load_dataset(store, read.uuid).metadata
        out += [key for lb, key in md.partitions.items() if lb not in read_labels]
    return out


# -- a cube clustered on non-indexed columns ----------------------------------------------


def clustered_frames() -> dict[str, list[pd.DataFrame]]:
    x = np.arange(N)
    v = x * 0.5
    v[x % 17 == 0] = np.nan
    seed = pd.DataFrame(
        {
            "x": x,
            "y": x % 2,
            "p": x // PER_PARTITION,
            "i": x % 3,
            "v": v,
            "s": pd.array([None if k % 11 == 0 else f"s{k:04d}" for k in x], dtype="str"),
            "t": pd.Series(pd.date_range("2024-03-30", periods=N, freq="h", tz=TZ).as_unit("us")),
        }
    )
    enrich = pd.DataFrame(
        {
            "x": x[::2],
            "y": x[::2] % 2,
            "p": x[::2] // PER_PARTITION,
            "w": pd.array([None if k % 13 == 0 else int(k) for k in x[::2]], dtype="Int64"),
        }
    )
    return {"seed": [seed], "enrich": [enrich]}


PKEYS = {"seed": ["p"], "enrich": ["p"]}


def build(store: kf.Store, written: dict[str, list[pd.DataFrame]]) -> kf.Store:
    kf.build_cube({k: v[0] for k, v in written.items()}, CUBE, store)
    for ds_id, frames in written.items():
        for df in frames[1:]:
            kf.append_to_cube({ds_id: df}, CUBE, store)
    return store


@pytest.fixture(scope="module")
def clustered() -> dict[str, list[pd.DataFrame]]:
    return clustered_frames()


@pytest.fixture
def stores(clustered) -> tuple[kf.Store, kf.Store]:
    """(with statistics, the same cube with the statistics references removed)."""
    with_stats = build(_store("with"), clustered)
    without = build(_store("without"), clustered)
    for ds_id in ("seed", "enrich"):
        drop_statistics(without, CUBE, ds_id)
    return with_stats, without


T0 = pd.Timestamp("2024-03-30", tz=TZ)
CASES: list[list[Literal]] = [
    [("v", ">=", 280.0)],  # seed payload, NaN in the files
    [("x", "<", 45)],  # a dimension without index: seed and enrich
    [("x", "in_interval", (300, 330)), ("i", "==", 1)],
    [("s", "in", ["s0005", "s0599"])],  # strings, nulls in the files
    [("s", ">", "s0575")],
    [("t", "<", pd.Timestamp("2024-03-31 01:00:00.0000005", tz="UTC"))],  # tz-aware, ns
    [("w", "in_interval", (100, 130))],  # enrich payload: restrictive dataset
    [("v", ">", 100.0), ("w", "<", 230)],  # one condition per dataset
    [("v", "==", 1000.0)],  # no file can match
]


@pytest.mark.parametrize("literals", CASES, ids=[str(c) for c in CASES])
def test_clustered_condition_reads_fewer_files(stores, clustered, literals) -> None:
    with_stats, without = stores
    conds = conditions_of(literals)
    expected = reference_query(CUBE, clustered, PKEYS, literals)
    plain = kf.query_cube(CUBE, without, conditions=conds)
    assert_results_equal(plain, expected)

    plan, _ = plan_cube_query(CUBE, with_stats, conditions=conds)
    base, _ = plan_cube_query(CUBE, without, conditions=conds)
    for stats in base.prune_stats.values():
        assert stats.after_statistics == stats.after_indices  # no statistics: no skipping
    skipped = {d: s.after_indices - s.after_statistics for d, s in plan.prune_stats.items()}
    assert any(skipped.values()), plan.prune_stats
    counts, base_counts = plan.file_counts(), base.file_counts()
    assert sum(counts.values()) < sum(base_counts.values())
    assert all(counts[d] <= base_counts[d] for d in base_counts)

    # the files the plan leaves out are gone: neither engine may open them
    gone = unread_files(plan, with_stats)
    assert gone
    with_stats.delete_many(gone)
    got = kf.query_cube(CUBE, with_stats, conditions=conds)
    assert len(got) == len(plain)
    for g, p in zip(got, plain):
        pd.testing.assert_frame_equal(g, p)
    assert_results_equal(Dask().query(CUBE, with_stats, conditions=conds), expected)


def test_dask_partitions_follow_the_skipped_groups(stores, clustered) -> None:
    with_stats, without = stores
    literals: list[Literal] = [("t", ">=", T0 + pd.Timedelta(hours=N - 75))]
    conds = conditions_of(literals)
    base = kf.query_cube_dataframe(CUBE, without, conditions=conds, partition_by=["p"])
    plan, _ = plan_cube_query(CUBE, with_stats, conditions=conds, partition_by=["p"])
    with_stats.delete_many(unread_files(plan, with_stats))
    ddf = kf.query_cube_dataframe(CUBE, with_stats, conditions=conds, partition_by=["p"])
    assert base.npartitions == N // PER_PARTITION
    assert ddf.npartitions == len(plan.groups) == 3  # the last 75 hours: 3 partitions
    got = [p for p in (d.compute(scheduler="sync") for d in ddf.to_delayed()) if len(p)]
    expected = reference_query(CUBE, clustered, PKEYS, literals, partition_by=["p"])
    assert_results_equal([g.reset_index(drop=True) for g in got], expected)
    assert_results_equal(
        kf.query_cube(CUBE, with_stats, conditions=conds, partition_by=["p"]), expected
    )


def test_payload_condition_only_skips_its_own_dataset(stores, clustered) -> None:
    with_stats, _ = stores
    plan, _ = plan_cube_query(CUBE, with_stats, conditions=C("v") >= 285.0)
    assert plan.prune_stats["seed"].after_statistics == 1
    enrich = plan.prune_stats["enrich"]  # left-joined: not filtered by v, never skipped
    assert enrich.after_statistics == enrich.total == N // PER_PARTITION
    assert plan.file_counts() == {"seed": 1, "enrich": 1}  # aligned with the seed
    got = kf.query_cube(CUBE, with_stats, conditions=C("v") >= 285.0)
    assert_results_equal(got, reference_query(CUBE, clustered, PKEYS, [("v", ">=", 285.0)]))
    assert got[0].x.tolist() == [k for k in range(570, 600) if k % 17]  # NaN never matches
    assert got[0].w.notna().sum() == 12  # even x except 578 (NaN v), 572 and 598 (null w)

    plan, _ = plan_cube_query(CUBE, with_stats, conditions=C("w") == 42)
    seed = plan.prune_stats["seed"]
    assert seed.after_statistics == seed.total  # the seed has no column w
    assert plan.prune_stats["enrich"].after_statistics == 1
    assert plan.file_counts() == {"seed": 1, "enrich": 1}  # inner join keeps p=1 only
    (df,) = kf.query_cube(CUBE, with_stats, conditions=C("w") == 42)
    assert df.x.tolist() == [42]


def test_appends_keep_the_overlay_semantics(clustered) -> None:
    """Conditions apply before the keep-last overlay, with or without skipped files."""
    newer = clustered["seed"][0].iloc[:10].assign(v=lambda d: d.x + 1000.0)
    written = {"seed": [*clustered["seed"], newer], "enrich": clustered["enrich"]}
    with_stats, without = build(_store("ov"), written), build(_store("ov-plain"), written)
    for ds_id in ("seed", "enrich"):
        drop_statistics(without, CUBE, ds_id)
    for literals in ([("v", "<", 20.0)], [("v", ">=", 1000.0)], [("v", ">", 4.0)]):
        conds = conditions_of(literals)
        expected = reference_query(CUBE, written, PKEYS, literals)
        assert_results_equal(kf.query_cube(CUBE, without, conditions=conds), expected)
        assert_results_equal(kf.query_cube(CUBE, with_stats, conditions=conds), expected)
    # v < 20 only matches the older rows: the newer file of p=0 is skipped, and the older
    # values come back (kartothek's order: filter, then keep-last)
    plan, _ = plan_cube_query(CUBE, with_stats, conditions=C("v") < 20.0)
    assert plan.file_counts()["seed"] == 2  # the first file of p=0 and p=1
    (df,) = kf.query_cube(CUBE, with_stats, conditions=C("v") < 20.0)
    assert df.set_index("x").v.loc[1:9].tolist() == [k * 0.5 for k in range(1, 10)]
    plan, _ = plan_cube_query(CUBE, with_stats, conditions=C("v") >= 1000.0)
    assert plan.file_counts()["seed"] == 1  # only the appended file
    assert plan.groups[0].needs_dedupe(plan.read("seed")) is False


def test_datasets_without_statistics_query_as_before(clustered) -> None:
    store = build(_store("partial"), clustered)
    literals: list[Literal] = [("x", ">=", 560)]
    conds = conditions_of(literals)
    expected = reference_query(CUBE, clustered, PKEYS, literals)

    drop_statistics(store, CUBE, "seed")  # statistics for enrich only
    plan, _ = plan_cube_query(CUBE, store, conditions=conds)
    assert plan.prune_stats["seed"].after_statistics == N // PER_PARTITION
    assert plan.prune_stats["enrich"].after_statistics == 2
    assert_results_equal(kf.query_cube(CUBE, store, conditions=conds), expected)
    assert_results_equal(Dask().query(CUBE, store, conditions=conds), expected)

    drop_statistics(store, CUBE, "enrich", plateau=True)  # as plateau rewrites headers
    plan, _ = plan_cube_query(CUBE, store, conditions=conds)
    assert all(s.after_statistics == s.total for s in plan.prune_stats.values())
    assert_results_equal(kf.query_cube(CUBE, store, conditions=conds), expected)
    assert_results_equal(Dask().query(CUBE, store, conditions=conds), expected)


def test_statistics_are_loaded_only_when_conditions_can_use_them(clustered) -> None:
    store = build(_store("lazy"), clustered)
    ref = statistics_ref(load_dataset(store, CUBE.ktk_dataset_uuid("seed")).metadata)
    assert ref is not None and ref.key is not None
    store.delete(ref.key)  # a broken reference: loading the seed's statistics fails
    # partition keys, exact conditions on indexed columns and enrich-only conditions never
    # load the seed's statistics
    for conds in (None, C("p") == 3, C("i") == 1, C("i").isin([0, 2]) & (C("p") <= 1), C("w") > 5):
        assert kf.query_cube(CUBE, store, conditions=conds)
    for conds in (C("v") > 1.0, C("x") < 3, C("i") >= 1, C("s") == "s0001"):
        with pytest.raises(kf.CorruptMetadataError, match="build_dataset_statistics"):
            kf.query_cube(CUBE, store, conditions=conds)
    kf.build_dataset_statistics(store, CUBE.ktk_dataset_uuid("seed"))
    (df,) = kf.query_cube(CUBE, store, conditions=C("x") < 3)
    assert df.x.tolist() == [0, 1, 2]


@pytest.mark.spark
def test_spark_cube_query_skips_the_same_files(spark, tmp_path, clustered) -> None:
    """``query_cube_sdf`` plans with ``plan_cube_query``: it never opens skipped files."""
    kfs = pytest.importorskip("kartoframe.spark")
    store = build(kf.Store(f"file://{tmp_path}/store"), clustered)
    literals: list[Literal] = [("v", ">", 100.0), ("w", "<", 230)]
    conds = conditions_of(literals)
    plan, _ = plan_cube_query(CUBE, store, conditions=conds)
    assert plan.file_counts() == {"seed": 2, "enrich": 2}
    store.delete_many(unread_files(plan, store))
    got = kfs.query_cube_sdf(spark, CUBE, store, conditions=conds).toArrow()
    (want,) = reference_query(CUBE, clustered, PKEYS, literals)
    # the inner join with enrich: even x, not 204 (NaN v) nor 208 (null w)
    expected_x = [k for k in range(202, 230, 2) if k not in (204, 208)]
    assert got["x"].to_pylist() == want.x.tolist() == expected_x
    assert got["w"].to_pylist() == want.w.tolist() == expected_x


# -- property: statistics never drop a matching row ----------------------------------------

PROP_CUBE = kf.Cube(["x", "y"], ["p"], "stprop", suppress_index_on=["x"], index_columns=["i"])
LONG = "q" * 70  # string statistics are truncated after 64 bytes
STRS = st.sampled_from(["a", "b", "", "ü/x", LONG + "a", LONG + "b", "q" * 64])
DATES = st.sampled_from([dt.date(2020, 1, d) for d in (1, 2, 3, 4)])
TS = [pd.Timestamp("2021-03-28 00:59:59", tz="UTC") + pd.Timedelta(seconds=s) for s in (0, 1, 3600)]
TS_LITERALS = st.sampled_from(
    [t.tz_convert(TZ) for t in TS] + [TS[0] + pd.Timedelta(nanoseconds=ns) for ns in (-1, 500)]
)
VALUES: dict[str, st.SearchStrategy[Any]] = {
    "x": st.integers(0, 11),
    "i": st.integers(0, 2),
    "f": st.sampled_from([-1.5, 0.0, 1.0, 2.5]),
    "n": st.integers(-3, 3),
    "s": STRS,
    "d": DATES,
    "t": TS_LITERALS,
    "w": st.integers(-3, 3),
}
OPS = ["==", "!=", "<", "<=", ">", ">=", "in", "in_interval"]


@st.composite
def prop_cubes(draw: st.DrawFn) -> dict[str, list[pd.DataFrame]]:
    def nullable(strategy: st.SearchStrategy[Any], n: int) -> list[Any]:
        return draw(st.lists(st.one_of(st.none(), strategy), min_size=n, max_size=n))

    def seed_rows(xs: list[int]) -> pd.DataFrame:
        n = len(xs)
        ts = nullable(st.sampled_from(TS), n)
        df = pd.DataFrame(
            {
                "x": xs,
                "y": 0,
                "p": [x // 4 for x in xs],
                "i": draw(st.lists(VALUES["i"], min_size=n, max_size=n)),
                "f": pd.array(
                    [np.nan if v is None else v for v in nullable(VALUES["f"], n)],
                    dtype="float64",
                ),
                "n": pd.array(nullable(VALUES["n"], n), dtype="Int64"),
                "s": pd.array(nullable(STRS, n), dtype="str"),
                "d": pd.Series(nullable(DATES, n), dtype=object),
                "t": pd.Series(
                    pd.to_datetime(ts, utc=True).tz_convert(TZ).as_unit("us")
                    if n
                    else pd.DatetimeIndex([], dtype=f"datetime64[us, {TZ}]")
                ),
            }
        )
        return df

    def cells(min_size: int) -> list[int]:
        return sorted(
            draw(st.lists(st.integers(0, 11), min_size=min_size, max_size=8, unique=True))
        )

    written = {"seed": [seed_rows(cells(1))]}
    enrich_x = cells(0)
    if enrich_x:
        written["enrich"] = [
            pd.DataFrame(
                {
                    "x": enrich_x,
                    "y": 0,
                    "p": [x // 4 for x in enrich_x],
                    "w": pd.array(nullable(VALUES["w"], len(enrich_x)), dtype="Int64"),
                }
            )
        ]
    for _ in range(draw(st.integers(0, 2))):  # appends overlay cells in new files
        written["seed"].append(seed_rows(cells(1)))
    return written


@st.composite
def prop_literals(draw: st.DrawFn, columns: list[str]) -> list[Literal]:
    out = []
    for _ in range(draw(st.integers(1, 2))):
        col = draw(st.sampled_from(columns))
        op = draw(st.sampled_from(OPS))
        values = VALUES[col]
        if op == "in":
            value: Any = draw(st.lists(values, min_size=1, max_size=3))
        elif op == "in_interval":
            value = (draw(st.one_of(st.none(), values)), draw(st.one_of(st.none(), values)))
        else:
            value = draw(values)
        out.append((col, op, value))
    return out


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), written=prop_cubes())
def test_statistics_never_drop_a_matching_row(data, written) -> None:
    store = _store("prop")
    pkeys = {"seed": ["p"], "enrich": ["p"]}
    kf.build_cube({k: v[0] for k, v in written.items()}, PROP_CUBE, store)
    for df in written["seed"][1:]:
        kf.append_to_cube({"seed": df}, PROP_CUBE, store)
    columns = sorted(set(VALUES) - ({"w"} if "enrich" not in written else set()))
    queries = [data.draw(prop_literals(columns)) for _ in range(3)]
    kw_of = [{"partition_by": data.draw(st.sampled_from([None, ["p"]]))} for _ in queries]
    with_stats = [
        (
            plan_cube_query(PROP_CUBE, store, conditions=conditions_of(q), **kw)[0],
            kf.query_cube(PROP_CUBE, store, conditions=conditions_of(q), **kw),
        )
        for q, kw in zip(queries, kw_of)
    ]
    for ds_id in written:
        drop_statistics(store, PROP_CUBE, ds_id)
    for q, kw, (plan, got) in zip(queries, kw_of, with_stats):
        plain = kf.query_cube(PROP_CUBE, store, conditions=conditions_of(q), **kw)
        assert len(got) == len(plain), q
        for g, p in zip(got, plain):
            pd.testing.assert_frame_equal(g, p)
        expected = reference_query(PROP_CUBE, written, pkeys, q, **kw)
        assert_results_equal(got, expected)
        # the per-group execution of the dask and Spark engines, with statistics
        groups = [f for f in (load_group(plan, g, store) for g in plan.groups) if len(f)]
        if not kw["partition_by"] and groups:
            groups = [
                pd.concat(groups, ignore_index=True)
                .sort_values(list(plan.sort_columns), kind="stable")
                .reset_index(drop=True)
            ]
        assert_results_equal(groups, expected)
        for stats in plan.prune_stats.values():
            assert stats.after_statistics <= stats.after_indices
