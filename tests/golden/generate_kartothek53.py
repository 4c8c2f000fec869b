# ruff: noqa: E501  (long fixture descriptions and literal rows)
"""Generate golden datasets and cubes written by kartothek 5.3.0.

Run inside the kartothek venv::

    bash tests/golden/make_kartothek53_env.sh
    .venv-kartothek53/bin/python tests/golden/generate_kartothek53.py

Writes, replacing whatever was there (``tests/data/golden/kartothek-5.3/``):

* ``store/``                 -- the ``hfs://`` store kartothek wrote (plain datasets + cubes)
* ``expected/<uuid>.parquet`` -- true logical content of every plain dataset AND of every
  cube member dataset (``<prefix>++<id>``: all rows of all its files, i.e. including rows
  that an append overlays at cube-query level), same conventions as the plateau fixtures
* ``expected/queries/<cube>__<n>[.<k>].parquet`` -- kartothek ``query_cube`` results
* ``queries.json``           -- the queries in the neutral JSON form of kartothek53_query.py
* ``manifest.json``

Label uuids and timestamps are made deterministic through kartothek's own test hooks.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _golden_common import (  # noqa: E402
    GOLDEN,
    GoldenRecorder,
    install_deterministic_hooks,
    pin_hash_seed,
)

pin_hash_seed()

import datetime as dt  # noqa: E402
import json  # noqa: E402
import warnings  # noqa: E402
from typing import Any  # noqa: E402

import dask  # noqa: E402
import kartothek  # noqa: E402
import kartothek.core._time  # noqa: E402
import kartothek.core.uuid  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pyarrow as pa  # noqa: E402
from kartothek.core.cube.conditions import C  # noqa: E402
from kartothek.core.cube.cube import Cube  # noqa: E402
from kartothek.io.eager import (  # noqa: E402
    read_table,
    store_dataframes_as_dataset,
    update_dataset_from_dataframes,
)
from kartothek.io.eager_cube import (  # noqa: E402
    append_to_cube,
    build_cube,
    extend_cube,
    remove_partitions,
)
from kartothek53_query import get_store, run_query, write_results  # noqa: E402

install_deterministic_hooks(kartothek.core.uuid, kartothek.core._time, tz_aware=False)
# kartothek 5.3 on pandas 1.5 / pyarrow 10 emits Future/Deprecation warnings on every call
warnings.filterwarnings("ignore", category=FutureWarning)
warnings.filterwarnings("ignore", category=DeprecationWarning)


def _kartothek_read(uuid: str, table_name: str) -> pd.DataFrame:
    return read_table(dataset_uuid=uuid, store=STORE, table=table_name, dates_as_object=True)


REC = GoldenRecorder(
    GOLDEN / "kartothek-5.3", "kartothek 5.3.0", _kartothek_read, "kartothek_read_table"
)
STORE: Any = None  # set in main() once the directory exists
QUERIES: list[dict[str, Any]] = []
BERLIN = "Europe/Berlin"


def ts(values: list[str | None], tz: str | None = None) -> pd.Series:
    out = pd.Series(pd.to_datetime(values)).astype("datetime64[ns]")
    return out.dt.tz_localize(tz) if tz is not None else out


def concat(dfs: list[pd.DataFrame]) -> pd.DataFrame:
    return pd.concat(dfs, ignore_index=True)


# --------------------------------------------------------------------------------------
# plain datasets
# --------------------------------------------------------------------------------------
def gen_dtypes() -> None:
    df = pd.DataFrame(
        {
            "rid": np.arange(5, dtype="int64"),
            "bool": np.array([True, False, True, False, True]),
            "bool_na": pd.array([True, None, False, None, True], dtype="boolean"),
            "i8": np.array([-128, -1, 0, 1, 127], dtype="int8"),
            "i64": np.array([-(2**63), -1, 0, 1, 2**63 - 1], dtype="int64"),
            "u16": np.array([0, 1, 2, 65534, 65535], dtype="uint16"),
            "u64": np.array([0, 1, 2, 2**64 - 2, 2**64 - 1], dtype="uint64"),
            "int_na": pd.array([1, None, -7, None, 2**40], dtype="Int64"),
            "f32": np.array([1.5, np.nan, -0.25, np.inf, 3.0], dtype="float32"),
            "f64": np.array([1.5, np.nan, -1e300, -np.inf, 1 / 3], dtype="float64"),
            "str_obj": ["a", None, "", "Grüße €", "row4"],
            "str_pd": pd.array(["x", None, "", "ü", "y"], dtype="string"),
            "cat": pd.Categorical(["lo", None, "hi", "lo", "mid"]),
            "date": [
                dt.date(2020, 1, 1),
                None,
                dt.date(1970, 1, 1),
                dt.date(1999, 12, 31),
                dt.date(2038, 1, 19),
            ],
            "ts": ts(
                [
                    "2020-01-01 00:00:00",
                    None,
                    "2021-06-30 13:14:15.123456",
                    "1969-12-31 23:59:59",
                    "2262-04-11",
                ]
            ),
            "ts_tz": ts(
                [
                    "2020-01-01 00:00:00",
                    None,
                    "2021-06-30 13:14:15.5",
                    "2020-03-29 03:00:00",
                    "2020-10-25 01:30:00",
                ],
                BERLIN,
            ),
            "bytes": [b"\x00\x01", None, b"", b"\xff\xfe", "ü".encode()],
            "list_int": [[1, 2], None, [], [-3], [4, None]],
            "list_str": [["a", "b"], None, [], ["ü"], ["x", None]],
        }
    )
    store_dataframes_as_dataset(
        store=STORE, dataset_uuid="kt_dtypes", dfs=[df], metadata={"owner": "golden"}
    )
    REC.record(
        "kt_dtypes",
        df,
        notes=(
            "Unpartitioned; pandas 1.5.3 dtypes incl. nulls. kartothek writes object strings as "
            "'string' (not large_string as plateau/pandas 3 does) in _common_metadata and data files."
        ),
    )


def gen_partition_int() -> None:
    a = pd.DataFrame(
        {
            "p": [1, 1, 2, -5],
            "rid": [0, 1, 2, 3],
            "k": ["a", "b", "a", None],
            "v": [0.5, 1.5, 2.5, 3.5],
        }
    )
    b = pd.DataFrame({"p": [1, 0], "rid": [4, 5], "k": ["c", "a"], "v": [4.5, None]})
    store_dataframes_as_dataset(
        store=STORE,
        dataset_uuid="kt_partition_int",
        dfs=[a, b],
        partition_on=["p"],
        secondary_indices=["k"],
    )
    REC.record(
        "kt_partition_int",
        concat([a, b]),
        notes="int64 partition column + secondary index on string column k (index column type 'string'; null not indexed).",
    )


def gen_partition_str() -> None:
    values = ["a b", "50%", "k=v", "ü€", "", "plain"]
    df = pd.DataFrame({"s": values, "rid": range(len(values)), "v": range(len(values))})
    store_dataframes_as_dataset(
        store=STORE, dataset_uuid="kt_partition_str", dfs=[df], partition_on=["s"]
    )
    REC.record(
        "kt_partition_str",
        df,
        notes="string partition values needing quoting: %20, %25, %3D, UTF-8, empty string ('s=').",
    )


def gen_partition_date() -> None:
    df = pd.DataFrame(
        {
            "d": [dt.date(2020, 1, 1), dt.date(1999, 12, 31), dt.date(2020, 1, 1)],
            "rid": [0, 1, 2],
            "n": np.array([10, 20, 30], dtype="int64"),
        }
    )
    store_dataframes_as_dataset(
        store=STORE,
        dataset_uuid="kt_partition_date",
        dfs=[df],
        partition_on=["d"],
        secondary_indices=["n"],
    )
    REC.record(
        "kt_partition_date",
        df,
        notes="date partition column (d=2020-01-01) + int64 secondary index on n.",
    )


def gen_msgpack() -> None:
    df = pd.DataFrame({"p": [1, 2, 1], "rid": [0, 1, 2], "k": ["a", "b", "a"]})
    store_dataframes_as_dataset(
        store=STORE,
        dataset_uuid="kt_msgpack",
        dfs=[df],
        partition_on=["p"],
        secondary_indices=["k"],
        metadata_storage_format="msgpack",
        metadata={"format": "msgpack"},
    )
    REC.record("kt_msgpack", df, notes="msgpack.zstd header (kartothek 5.3).")


def gen_updated() -> None:
    a = pd.DataFrame({"p": [1, 2, 3], "rid": [0, 1, 2], "k": ["a", "b", "c"]})
    store_dataframes_as_dataset(
        store=STORE,
        dataset_uuid="kt_updated",
        dfs=[a],
        partition_on=["p"],
        secondary_indices=["k"],
        metadata={"version": 1},
    )
    b = pd.DataFrame({"p": [2], "rid": [10], "k": ["b2"]})
    update_dataset_from_dataframes(
        [b],
        store=STORE,
        dataset_uuid="kt_updated",
        delete_scope=[{"p": 2}],
        metadata={"version": 2},
        partition_on=["p"],
    )
    REC.record(
        "kt_updated",
        concat([a[a["p"] != 2], b]),
        input_df=a,
        quirks=("stale_files", "stale_index_files"),
        notes="update with delete_scope=[{'p': 2}] replacing p=2, plus metadata {'version': 2}; old files stay in the store.",
    )


# --------------------------------------------------------------------------------------
# cubes
# --------------------------------------------------------------------------------------
def cube_json(cube: Cube) -> dict[str, Any]:
    return {
        "uuid_prefix": cube.uuid_prefix,
        "dimension_columns": list(cube.dimension_columns),
        "partition_columns": list(cube.partition_columns),
        "index_columns": sorted(cube.index_columns),
        "seed_dataset": cube.seed_dataset,
        "suppress_index_on": sorted(cube.suppress_index_on),
    }


def add_query(cube: Cube, description: str, **kw: Any) -> None:
    n = sum(q["cube"]["uuid_prefix"] == cube.uuid_prefix for q in QUERIES)
    QUERIES.append(
        {
            "id": f"{cube.uuid_prefix}__{n}",
            "description": description,
            "cube": cube_json(cube),
            "conditions": kw.get("conditions", []),
            "dimension_columns": kw.get("dimension_columns"),
            "partition_by": kw.get("partition_by"),
            "payload_columns": kw.get("payload_columns"),
            "datasets": kw.get("datasets"),
            "notes": kw.get("notes", ""),
        }
    )


def record_cube_members(
    cube: Cube, contents: dict[str, pd.DataFrame], notes: dict[str, str]
) -> None:
    for ds_id, df in contents.items():
        REC.record(
            cube.ktk_dataset_uuid(ds_id),
            df,
            notes=notes.get(ds_id, ""),
            extra={"cube": cube.uuid_prefix, "ktk_cube_dataset_id": ds_id},
        )


def gen_cube_geo() -> None:
    cube = Cube(
        dimension_columns=["x", "y"],
        partition_columns=["p"],
        uuid_prefix="geo",
        index_columns=["i"],
    )
    cells = [(x, y) for x in range(6) for y in range(3)]
    seed = pd.DataFrame(
        {
            "x": [c[0] for c in cells],
            "y": [c[1] for c in cells],
            "p": [c[0] // 2 for c in cells],
            "i": [(c[0] + c[1]) % 3 for c in cells],
            "v1": [float(c[0] * 10 + c[1]) for c in cells],
        }
    )
    enrich_cells = [(x, y) for x in range(4) for y in range(2)] + [(0, 7)]  # (0, 7) not in seed
    enrich = pd.DataFrame(
        {
            "x": [c[0] for c in enrich_cells],
            "y": [c[1] for c in enrich_cells],
            "p": [c[0] // 2 for c in enrich_cells],
            "v2": [c[0] + c[1] / 10 for c in enrich_cells],
        }
    )
    build_cube(
        data={"seed": seed, "enrich": enrich},
        cube=cube,
        store=STORE,
        metadata={"seed": {"source": "golden"}},
    )
    lowdim = pd.DataFrame({"x": [0, 1, 2, 3, 5], "v3": ["x0", "x1", "x2", "x3", "x5"]})
    extend_cube(data={"lowdim": lowdim}, cube=cube, store=STORE, partition_on={"lowdim": []})
    # drop physical partition p=2 from seed and enrich (lowdim has no partition keys: left alone)
    remove_partitions(
        cube=cube, store=STORE, conditions=C("p") == 2, ktk_cube_dataset_ids=["seed", "enrich"]
    )
    seed = seed[seed["p"] != 2]
    # append: overlay cells (2, 0) and (1, 1), add new cell (3, 3) in p=1 and a new partition p=3
    seed_app = pd.DataFrame(
        {"x": [2, 3, 6], "y": [0, 3, 0], "p": [1, 1, 3], "i": [2, 0, 0], "v1": [-20.0, 33.0, 60.0]}
    )
    enrich_app = pd.DataFrame({"x": [1, 6], "y": [1, 0], "p": [0, 3], "v2": [-1.1, 6.0]})
    lowdim_app = pd.DataFrame({"x": [0, 6], "v3": ["x0-new", "x6"]})
    append_to_cube(
        data={"seed": seed_app, "enrich": enrich_app, "lowdim": lowdim_app},
        cube=cube,
        store=STORE,
        metadata={"seed": {"appended": True}},
    )
    record_cube_members(
        cube,
        {
            "seed": concat([seed, seed_app]),
            "enrich": concat([enrich, enrich_app]),
            "lowdim": concat([lowdim, lowdim_app]),
        },
        {
            "seed": "cube geo seed (p=2 removed, then appended: overlays (2,0) in p=1, new (3,3), new partition p=3). "
            "As a plain dataset cell (2,0) appears twice (old and new file).",
            "enrich": "cube geo enrich: partial coverage, cell (0,7) not in seed; p=2 had no rows; append overlays (1,1).",
            "lowdim": "cube geo lowdim: dimension x only, partition_on=[] (no cube partition column); append overlays x=0.",
        },
    )
    add_query(cube, "full cube")
    add_query(
        cube,
        "condition on enrich payload (enrich becomes restrictive: inner join)",
        conditions=[["v2", ">", 1.0]],
        notes=(
            "kartothek quirk: conditions are applied while loading, BEFORE the keep-last overlay "
            "de-duplication. Cell (1,1) was overlaid by append_to_cube (v2 1.1 -> -1.1), yet it is "
            "returned with the stale v2=1.1 because the newer row is filtered out first and the older "
            "one survives. A reader that de-duplicates first returns no row for (1,1)."
        ),
    )
    add_query(cube, "partition_by physical partition column", partition_by=["p"])
    add_query(
        cube,
        "projection to dimension x; only x-dimensional payload",
        dimension_columns=["x"],
        payload_columns=["v3"],
    )
    add_query(cube, "payload subset", payload_columns=["v1", "v3"])
    add_query(cube, "condition on index column", conditions=[["i", "==", 1]])
    add_query(
        cube,
        "partition + dimension condition, datasets subset",
        conditions=[["p", "==", 0], ["x", ">=", 1]],
        datasets=["seed", "enrich"],
    )
    add_query(
        cube, "isin + in_interval", conditions=[["y", "in", [0, 2]], ["x", "in_interval", [1, 4]]]
    )
    add_query(cube, "condition on low-dimensional dataset payload", conditions=[["v3", "!=", "x1"]])
    add_query(cube, "partition_by index column (non-physical)", partition_by=["i"])
    add_query(cube, "empty result", conditions=[["v1", ">", 1e6]])
    add_query(cube, "dimension columns reordered (sort order y, x)", dimension_columns=["y", "x"])


def gen_cube_events() -> None:
    cube = Cube(
        dimension_columns=["id"],
        partition_columns=["day", "region"],
        uuid_prefix="events",
        seed_dataset="source",
        index_columns=["kind"],
        suppress_index_on=["id"],
    )
    days = [dt.date(2021, 1, 1), dt.date(2021, 1, 2)]
    source = pd.DataFrame(
        {
            "id": np.arange(8, dtype="int64"),
            "day": [days[i % 2] for i in range(8)],
            "region": ["eu" if i < 4 else "us west" for i in range(8)],
            "kind": ["a", "b", "a", "c", "b", "a", "c", "b"],
            "amount": np.arange(8) * 1.25,
        }
    )
    labels = pd.DataFrame(
        {
            "id": np.array([0, 1, 2, 5, 7], dtype="int64"),
            "day": [days[0], days[1], days[0], days[1], days[1]],
            "label": ["zero", "one", "two", "five", "seven"],
        }
    )
    build_cube(
        data={"source": source, "labels": labels},
        cube=cube,
        store=STORE,
        partition_on={"labels": ["day"]},
    )
    record_cube_members(
        cube,
        {"source": source, "labels": labels},
        {
            "source": "cube events seed 'source': two partition columns (date, string with space), index on kind, "
            "no index on dimension id (suppress_index_on).",
            "labels": "cube events 'labels': partitioned on day only (subset of the cube partition columns).",
        },
    )
    date_note = (
        "kartothek returns date columns of cube queries as datetime64 (stored here as timestamp[us]), "
        "not as date32 like the schema: compare after casting"
    )
    add_query(cube, "full cube", notes=date_note)
    add_query(cube, "condition on date partition column", conditions=[["day", "==", "2021-01-02"]])
    add_query(
        cube,
        "isin on string partition + payload range",
        conditions=[["region", "in", ["eu"]], ["amount", ">=", 2.5]],
    )
    add_query(cube, "partition_by region", partition_by=["region"])
    add_query(
        cube,
        "payload subset + condition on index column",
        payload_columns=["label"],
        conditions=[["kind", "==", "b"]],
    )
    add_query(
        cube,
        "in_interval on dates",
        conditions=[["day", "in_interval", ["2021-01-01", "2021-01-02"]]],
    )
    add_query(cube, "seed dataset only", datasets=["source"])


def run_queries() -> None:
    out = REC.expected_dir / "queries"
    for q in QUERIES:
        dfs = run_query(STORE, q)
        q["result_files"] = [
            f"expected/queries/{name}" for name in write_results(dfs, out, q["id"])
        ]
        q["result_rows"] = [len(df) for df in dfs]
        print(f"  {q['id']}: {q['description']}: {q['result_rows']}")
    doc = {
        "generated_by": "kartothek 5.3.0 query_cube (tests/golden/kartothek53_query.py)",
        "conventions": (
            "Each query is in the neutral JSON form read by tests/golden/kartothek53_query.py. "
            "result_files (relative to this file) hold kartothek's result frames in order (one per "
            "returned frame; [] = empty result). Row order and column order ARE meaningful "
            "(kartothek sorts rows by the query dimension columns then the cube partition columns, "
            "columns alphabetically). dtypes are kartothek's best effort (ints with missing values "
            "become float64 after left joins, dates as date32, strings as string): compare values, "
            "casting the reader's result to the expected schema."
        ),
        "queries": QUERIES,
    }
    (REC.out / "queries.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")


def main() -> int:
    global STORE
    REC.reset()
    STORE = get_store(REC.store_dir)
    print(f"kartothek {kartothek.__version__}, pandas {pd.__version__}, pyarrow {pa.__version__}")
    for gen in (
        gen_dtypes,
        gen_partition_int,
        gen_partition_str,
        gen_partition_date,
        gen_msgpack,
        gen_updated,
    ):
        gen()
    gen_cube_geo()
    gen_cube_events()
    run_queries()
    REC.write_manifest(
        {
            "kartothek": kartothek.__version__,
            "pandas": pd.__version__,
            "pyarrow": pa.__version__,
            "numpy": np.__version__,
            "dask": dask.__version__,
            "python": sys.version.split()[0],
        },
        queries="queries.json",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
