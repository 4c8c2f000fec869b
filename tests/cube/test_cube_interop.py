"""Cubes move between kartothek 5.3, plateau 4.6.2 and kartoframe.

* Golden cubes written by kartothek 5.3 (``tests/data/golden/kartothek-5.3``) are discovered
  and queried by kartoframe (eager and dask) with kartothek's recorded results.
* A cube written by kartoframe is queried by kartothek 5.3 itself (in its own venv, through
  ``tests/golden/kartothek53_query.py``) with kartoframe's results, and its datasets are
  read by plateau.
"""

from __future__ import annotations

import datetime as dt
import json
import pathlib
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from kartothek53 import run_kartothek

import kartoframe as kf

ROOT = pathlib.Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "data" / "golden" / "kartothek-5.3"

pytestmark = pytest.mark.interop

QUERIES = json.loads((GOLDEN / "queries.json").read_text())["queries"]


def cube_from_json(spec: dict[str, Any]) -> kf.Cube:
    return kf.Cube(
        spec["dimension_columns"],
        spec["partition_columns"],
        spec["uuid_prefix"],
        seed_dataset=spec.get("seed_dataset", "seed"),
        index_columns=spec.get("index_columns") or (),
        suppress_index_on=spec.get("suppress_index_on") or (),
    )


def _value(v: Any, t: pa.DataType) -> Any:
    if v is None:
        return None
    if pa.types.is_date(t):
        return dt.date.fromisoformat(v)
    if pa.types.is_timestamp(t):
        return pd.Timestamp(v).to_pydatetime()
    if pa.types.is_floating(t):
        return float(v)
    return v


def conditions_from_json(conds: list[list[Any]] | None, types: dict[str, pa.DataType]) -> Any:
    out = []
    for col, op, v in conds or []:
        t = types[col]
        c = kf.C(col)
        if op == "in":
            out.append(c.isin([_value(x, t) for x in v]))
        elif op == "in_interval":
            out.append(c.in_interval(_value(v[0], t), _value(v[1], t)))
        else:
            v = _value(v, t)
            ops = {"==": c == v, "!=": c != v, "<": c < v, "<=": c <= v, ">": c > v, ">=": c >= v}
            out.append(ops[op])
    return out or None


def column_types(cube: kf.Cube, store: kf.Store) -> dict[str, pa.DataType]:
    types: dict[str, pa.DataType] = {}
    datasets = kf.discover_datasets(cube, store)
    for ds_id in sorted(datasets, key=lambda k: (k != cube.seed_dataset, k)):
        for f in datasets[ds_id].schema:
            types.setdefault(f.name, f.type)
    return types


def run_kf(query: dict[str, Any], store: kf.Store, *, dask: bool = False) -> list[pd.DataFrame]:
    cube = cube_from_json(query["cube"])
    kw = {
        "conditions": conditions_from_json(query.get("conditions"), column_types(cube, store)),
        "datasets": query.get("datasets"),
        "dimension_columns": query.get("dimension_columns"),
        "partition_by": query.get("partition_by"),
        "payload_columns": query.get("payload_columns"),
    }
    if not dask:
        return kf.query_cube(cube, store, **kw)
    ddf = kf.query_cube_dataframe(cube, store, **kw)
    parts = list(ddf.to_delayed())
    frames = [f for f in (p.compute(scheduler="sync") for p in parts) if len(f)]
    if not kw["partition_by"] and len(frames) > 1:
        sort = list(kw["dimension_columns"] or cube.dimension_columns)
        sort += list(cube.partition_columns)
        return [pd.concat(frames).sort_values(sort).reset_index(drop=True)]
    return [f.reset_index(drop=True) for f in frames]


def as_expected(df: pd.DataFrame, expected: pa.Table) -> pa.Table:
    """kartoframe's frame cast to the schema kartothek's result was stored with."""
    got = pa.Table.from_pandas(df, preserve_index=False)
    cols = []
    for f in expected.schema:
        col = got[f.name]
        if pa.types.is_date(col.type) and pa.types.is_timestamp(f.type):
            col = pc.cast(col, pa.timestamp("s")).cast(f.type)
        cols.append(col.cast(f.type))
    return pa.Table.from_arrays(cols, schema=expected.schema)


def assert_same_as_files(frames: list[pd.DataFrame], files: list[pathlib.Path]) -> None:
    assert len(frames) == len(files)
    for df, path in zip(frames, files):
        expected = pq.read_table(path).replace_schema_metadata(None)
        assert list(df.columns) == expected.column_names  # order is meaningful
        got = as_expected(df, expected)
        assert got.equals(expected), f"{path.name}:\n{got.to_pandas()}\n!=\n{expected.to_pandas()}"


@pytest.fixture(scope="module")
def golden_store() -> kf.Store:
    return kf.Store(f"file://{GOLDEN / 'store'}")


@pytest.mark.parametrize("query", QUERIES, ids=[q["id"] for q in QUERIES])
@pytest.mark.parametrize("dask", [False, True], ids=["eager", "dask"])
def test_golden_kartothek_query(query: dict[str, Any], dask: bool, golden_store) -> None:
    frames = run_kf(query, golden_store, dask=dask)
    assert_same_as_files(frames, [GOLDEN / f for f in query["result_files"]])


@pytest.mark.parametrize(
    ("prefix", "expected"),
    [
        ("geo", kf.Cube(["x", "y"], ["p"], "geo", index_columns=["i"])),
        (
            "events",
            kf.Cube(
                ["id"],
                ["day", "region"],
                "events",
                seed_dataset="source",
                index_columns=["kind"],
                suppress_index_on=["id"],
            ),
        ),
    ],
)
def test_discover_golden_cubes(prefix: str, expected: kf.Cube, golden_store) -> None:
    assert kf.discover_cube(prefix, golden_store) == expected
    datasets = kf.discover_datasets(expected, golden_store)
    assert all(d.metadata_storage_format == "json" for d in datasets.values())


def _interop_frames() -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(7)
    ids = np.arange(12, dtype="int64")
    days = [dt.date(2024, 1, 1), dt.date(2024, 1, 2)]
    seed = pd.DataFrame(
        {
            "id": np.repeat(ids, 2),
            "day": days * 12,
            "region": ["eu west", "us"] * 12,
            "kind": pd.Series(list("abc") * 8, dtype="str"),
            "amount": rng.integers(0, 100, 24),
        }
    )
    seed["day"] = seed["day"].astype(object)
    # the region is a partition column: make it a function of the cell
    seed["region"] = np.where(seed["id"] % 2 == 0, "eu west", "us")
    labels = seed.loc[seed["id"] % 3 != 0, ["id", "day", "kind"]].rename(columns={"kind": "label"})
    labels["label"] = labels["label"].str.upper()
    score = pd.DataFrame({"id": ids[::2], "score": rng.random(6)})
    return {"source": seed, "labels": labels, "score": score}


def _interop_queries(spec: dict[str, Any]) -> list[dict[str, Any]]:
    base = {"cube": spec, "conditions": [], "datasets": None, "dimension_columns": None}
    base.update({"partition_by": None, "payload_columns": None})
    return [
        {**base, "id": "full"},
        {**base, "id": "cond_payload", "conditions": [["amount", ">=", 50]]},
        {**base, "id": "cond_label", "conditions": [["label", "!=", "B"]]},
        {**base, "id": "by_region", "partition_by": ["region"]},
        {**base, "id": "by_kind", "partition_by": ["kind"]},
        {**base, "id": "day", "conditions": [["day", "==", "2024-01-02"]]},
        {
            **base,
            "id": "interval",
            "conditions": [["id", "in_interval", [2, 9]], ["region", "in", ["us"]]],
        },
        {**base, "id": "subset", "datasets": ["source", "score"], "payload_columns": ["score"]},
        {**base, "id": "empty", "conditions": [["amount", ">", 1000]]},
    ]


@pytest.fixture(scope="module")
def kartoframe_cube(tmp_path_factory) -> tuple[kf.Cube, kf.Store, pathlib.Path]:
    path = tmp_path_factory.mktemp("interop") / "store"
    store = kf.Store(f"file://{path}")
    cube = kf.Cube(["id"], ["day", "region"], "shop", seed_dataset="source", index_columns=["kind"])
    frames = _interop_frames()
    kf.build_cube(
        {"source": frames["source"], "labels": frames["labels"]},
        cube,
        store,
        partition_on={"labels": ["day"]},
        metadata={"source": {"owner": "interop"}},
    )
    kf.extend_cube({"score": frames["score"]}, cube, store, partition_on={"score": []})
    extra = frames["source"].iloc[:2].assign(amount=[-1, -2])
    kf.append_to_cube({"source": extra}, cube, store)
    return cube, store, path


def test_kartothek_queries_a_kartoframe_cube(kartoframe_cube, tmp_path) -> None:
    cube, store, path = kartoframe_cube
    spec = {
        "uuid_prefix": cube.uuid_prefix,
        "dimension_columns": list(cube.dimension_columns),
        "partition_columns": list(cube.partition_columns),
        "index_columns": list(cube.index_columns),
        "seed_dataset": cube.seed_dataset,
        "suppress_index_on": list(cube.suppress_index_on),
    }
    queries = _interop_queries(spec)
    results = run_kartothek(path, queries, tmp_path)
    for query in queries:
        files = results[query["id"]]
        frames = run_kf(query, store)
        assert_same_as_files(frames, files)
        assert len(frames) == len(files) and (query["id"] != "empty" or not frames)


def test_plateau_reads_kartoframe_cube_members(kartoframe_cube) -> None:
    plateau_eager = pytest.importorskip("plateau.io.eager")
    cube, store, path = kartoframe_cube
    for ds_id in ("source", "labels", "score"):
        uuid = cube.ktk_dataset_uuid(ds_id)
        ours = kf.read_table(uuid, store)
        theirs = plateau_eager.read_table(uuid, f"hfs://{path}")
        keys = list(ours.columns)
        a = ours.sort_values(keys).reset_index(drop=True)
        b = theirs[keys].sort_values(keys).reset_index(drop=True)
        pd.testing.assert_frame_equal(a, b, check_dtype=False)


def test_kartothek_agrees_conditions_see_rows_before_the_overlay(tmp_path) -> None:
    """kartothek 5.3 evaluates conditions before the keep-last overlay of appends.

    After ``append_to_cube`` corrects the enrich cell x=1 from v2=1.5 to v2=0.0, the
    query ``v2 > 1`` returns x=1 with the old v2=1.5 (and ``i2 < 5``, pruned by the
    secondary index of ``i2``, the old i2=1; ``partition_by=["i2"]`` puts x=1 in the groups
    of both i2=1 and i2=9): conditions are pushed into each file's
    load, then duplicates are dropped keeping the last surviving row
    (``kartothek/io_components/cube/query/_group.py``; kartothek-plateau-facts.md §3.2).
    kartoframe (eager and dask) gives the same frames; docs/cubes.md states the rule.
    """
    path = tmp_path / "store"
    store = kf.Store(f"file://{path}")
    cube = kf.Cube(["x"], ["p"], "ovl", index_columns=["i2"])
    seed = pd.DataFrame({"x": [0, 1, 2, 3], "p": [0, 0, 1, 1], "v1": [10, 11, 12, 13]})
    enrich = pd.DataFrame(
        {"x": [0, 1, 2, 3], "p": [0, 0, 1, 1], "v2": [0.5, 1.5, 2.5, 3.5], "i2": [0, 1, 2, 3]}
    )
    kf.build_cube({"seed": seed, "enrich": enrich}, cube, store)
    fix = pd.DataFrame({"x": [1], "p": [0], "v2": [0.0], "i2": [9]})
    kf.append_to_cube({"enrich": fix}, cube, store)
    spec = {"uuid_prefix": "ovl", "dimension_columns": ["x"], "partition_columns": ["p"]}
    spec["index_columns"] = ["i2"]
    base: dict[str, Any] = {"cube": spec, "datasets": None, "dimension_columns": None}
    base.update({"partition_by": None, "payload_columns": None})
    queries = [
        {**base, "id": "full", "conditions": []},
        {**base, "id": "v2_gt_1", "conditions": [["v2", ">", 1.0]]},
        {**base, "id": "i2_lt_5", "conditions": [["i2", "<", 5]]},
        {**base, "id": "by_i2", "conditions": [], "partition_by": ["i2"]},
    ]
    files = run_kartothek(path, queries, tmp_path)
    for dask in (False, True):
        frames = {q["id"]: run_kf(q, store, dask=dask) for q in queries}
        for q in queries:
            assert_same_as_files(frames[q["id"]], files[q["id"]])
        (full,) = frames["full"]
        assert full.loc[full.x == 1, ["v2", "i2"]].values.tolist() == [[0.0, 9]]
        (cond,) = frames["v2_gt_1"]
        assert list(zip(cond.x, cond.v2)) == [(1, 1.5), (2, 2.5), (3, 3.5)]
        (idx,) = frames["i2_lt_5"]
        assert list(zip(idx.x, idx.i2)) == [(0, 0), (1, 1), (2, 2), (3, 3)]
        # partition_by filters each group's rows by its value before the keep-last step:
        # x=1 is in the group of its old i2=1 and in that of its new i2=9
        assert [f.x.tolist() for f in frames["by_i2"]] == [[0], [1], [2], [3], [1]]
