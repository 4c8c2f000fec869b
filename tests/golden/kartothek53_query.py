"""Run kartothek 5.3 ``query_cube`` calls described in a neutral JSON form.

Run inside the kartothek venv (``bash tests/golden/make_kartothek53_env.sh``)::

    .venv-kartothek53/bin/python tests/golden/kartothek53_query.py \
        --store DIR --queries QUERIES.json --out OUTDIR [--strict]

``--store`` is a plain directory used as an ``hfs://`` store (the cube's datasets live
in it, possibly written by kartoframe). ``QUERIES.json`` is either a list of query
objects or ``{"queries": [...]}``; each query object looks like::

    {"id": "geo__0",                          # optional; default "q<position>"
     "cube": {"uuid_prefix": "geo", "dimension_columns": ["x", "y"],
              "partition_columns": ["p"], "index_columns": ["i"],
              "seed_dataset": "seed",          # optional, default "seed"
              "suppress_index_on": []},        # optional
     "conditions": [["v2", ">", 1.0], ["x", "in", [0, 1]],
                    ["x", "in_interval", [0, 3]]],   # AND-ed; [] / null = none
     "dimension_columns": null | [...],
     "partition_by": null | [...],
     "payload_columns": null | [...],
     "datasets": null | [...]}

Operators: ``==  !=  <  <=  >  >=``, ``in`` (value: list) and ``in_interval``
(value: ``[start, stop]``, start inclusive, stop exclusive, either may be null).
Values are JSON scalars converted to the column's arrow type (taken from the cube's
datasets' ``_common_metadata``): dates as ISO ``"YYYY-MM-DD"`` strings, timestamps as
ISO strings (with an offset for tz-aware columns), unsigned ints become ``numpy.uint64``.

For every query the result frames (one per returned frame, in kartothek's order) are
written as ``OUTDIR/<id>.parquet`` (exactly one frame) or ``OUTDIR/<id>.<k>.parquet``
(``k`` = 0, 1, ... when ``partition_by`` yields several), index reset, plain pyarrow
without pandas metadata. ``OUTDIR/results.json`` maps each id to
``{"result_files": [...]}`` or ``{"error": "<ExceptionType>: <message>"}``.
Exit status: 0, or 1 with ``--strict`` if any query raised.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import storefact
from kartothek.api.discover import discover_datasets_unchecked
from kartothek.core.cube.conditions import C, Conjunction
from kartothek.core.cube.cube import Cube
from kartothek.io.eager_cube import query_cube

# kartothek 5.3 on pandas 1.5 / pyarrow 10 emits Future/Deprecation warnings on every call
warnings.filterwarnings("ignore", category=FutureWarning)
warnings.filterwarnings("ignore", category=DeprecationWarning)

OPS = ("==", "!=", "<", "<=", ">", ">=", "in", "in_interval")


def get_store(directory: str | Path):
    """``hfs://`` store on an absolute directory."""
    path = Path(directory).resolve()
    return storefact.get_store_from_url(f"hfs://{path}")


def cube_from_json(spec: dict[str, Any]) -> Cube:
    """Build a :class:`Cube` from the neutral JSON description."""
    return Cube(
        uuid_prefix=spec["uuid_prefix"],
        dimension_columns=list(spec["dimension_columns"]),
        partition_columns=list(spec["partition_columns"]),
        index_columns=list(spec.get("index_columns") or []),
        seed_dataset=spec.get("seed_dataset", "seed"),
        suppress_index_on=list(spec.get("suppress_index_on") or []),
    )


def column_types(cube: Cube, store) -> dict[str, pa.DataType]:
    """Arrow type of every column of the cube (first dataset that has it wins)."""
    types: dict[str, pa.DataType] = {}
    datasets = discover_datasets_unchecked(cube.uuid_prefix, store)
    for ds_id in sorted(datasets, key=lambda k: (k != cube.seed_dataset, k)):
        schema = datasets[ds_id].table_meta["table"]
        for name in schema.names:
            field_type = schema.field(name).type
            if name not in types or pa.types.is_null(types[name]):
                types[name] = field_type
    return types


def convert_value(value: Any, arrow_type: pa.DataType | None) -> Any:
    """JSON scalar -> python/numpy value matching the column type."""
    if value is None or arrow_type is None:
        return value
    if pa.types.is_date(arrow_type):
        return dt.date.fromisoformat(value) if isinstance(value, str) else value
    if pa.types.is_timestamp(arrow_type):
        ts = pd.Timestamp(value)
        if arrow_type.tz is not None:
            ts = (
                ts.tz_localize(arrow_type.tz) if ts.tzinfo is None else ts.tz_convert(arrow_type.tz)
            )
            return ts
        return ts.to_datetime64().astype("datetime64[ns]")
    if pa.types.is_integer(arrow_type):
        return np.dtype(arrow_type.to_pandas_dtype()).type(value)
    if pa.types.is_floating(arrow_type):
        return float(value)
    return value


def conditions_from_json(
    conditions: list[list[Any]] | None, types: dict[str, pa.DataType]
) -> Conjunction | None:
    """``[[col, op, value], ...]`` -> kartothek :class:`Conjunction` (or ``None``)."""
    if not conditions:
        return None
    parts = []
    for col, op, value in conditions:
        if op not in OPS:
            raise ValueError(f"unknown operator {op!r}; expected one of {OPS}")
        t = types.get(col)
        if op == "in":
            parts.append(C(col).isin([convert_value(v, t) for v in value]))
        elif op == "in_interval":
            start, stop = value
            parts.append(C(col).in_interval(convert_value(start, t), convert_value(stop, t)))
        else:
            v = convert_value(value, t)
            parts.append(
                {
                    "==": C(col) == v,
                    "!=": C(col) != v,
                    "<": C(col) < v,
                    "<=": C(col) <= v,
                    ">": C(col) > v,
                    ">=": C(col) >= v,
                }[op]
            )
    return Conjunction(parts)


def run_query(store, query: dict[str, Any]) -> list[pd.DataFrame]:
    """Execute one neutral-JSON query with kartothek's eager ``query_cube``."""
    cube = cube_from_json(query["cube"])
    types = column_types(cube, store)
    return query_cube(
        cube=cube,
        store=store,
        conditions=conditions_from_json(query.get("conditions"), types),
        datasets=query.get("datasets"),
        dimension_columns=query.get("dimension_columns"),
        partition_by=query.get("partition_by"),
        payload_columns=query.get("payload_columns"),
    )


def frame_to_table(df: pd.DataFrame) -> pa.Table:
    """Result frame -> arrow table (index reset, no pandas metadata)."""
    table = pa.Table.from_pandas(df.reset_index(drop=True), preserve_index=False)
    return table.replace_schema_metadata(None)


def write_results(dfs: list[pd.DataFrame], out_dir: Path, stem: str) -> list[str]:
    """Write result frames; returns file names relative to ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    names = (
        [f"{stem}.parquet"] if len(dfs) == 1 else [f"{stem}.{k}.parquet" for k in range(len(dfs))]
    )
    for df, name in zip(dfs, names, strict=True):
        pq.write_table(frame_to_table(df), out_dir / name, compression="zstd")
    return names


def load_queries(path: str | Path) -> list[dict[str, Any]]:
    """Read a queries file: a list or ``{"queries": [...]}``."""
    data = json.loads(Path(path).read_text())
    return data["queries"] if isinstance(data, dict) else data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True, help="directory of the hfs:// store")
    parser.add_argument("--queries", required=True, help="queries JSON (neutral form)")
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--strict", action="store_true", help="exit 1 if any query raised")
    args = parser.parse_args(argv)

    store = get_store(args.store)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {}
    for pos, query in enumerate(load_queries(args.queries)):
        qid = query.get("id", f"q{pos}")
        try:
            dfs = run_query(store, query)
            results[qid] = {"result_files": write_results(dfs, out, qid)}
        except Exception as exc:
            results[qid] = {"error": f"{type(exc).__name__}: {exc}"}
            print(f"{qid}: {results[qid]['error']}", file=sys.stderr)
    (out / "results.json").write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    failed = [k for k, v in results.items() if "error" in v]
    print(f"{len(results) - len(failed)} queries ok, {len(failed)} failed -> {out}")
    return 1 if (failed and args.strict) else 0


if __name__ == "__main__":
    sys.exit(main())
