"""Helpers shared by the golden-fixture generators (plateau venv and kartothek venv).

Only pandas/pyarrow APIs available in both pandas 1.5/pyarrow 10 and pandas 3/pyarrow 26.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import shutil
import sys
import uuid as uuid_mod
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "data" / "golden"

EXPECTED_CONVENTIONS = {
    "expected_files": (
        "Plain pyarrow parquet, no pandas metadata. One row per logical row (index reset), "
        "partition columns included, helper columns such as __index_level_0__ excluded. Column "
        "order and arrow types are exactly those of the dataset's _common_metadata (partition keys "
        "first in partition_keys order, then the other columns alphabetically; normalized types). "
        "Row order is NOT meaningful: sort both sides by sort_columns."
    ),
    "compare": (
        "got = reader result as an arrow table (or "
        "pa.Table.from_pandas(df, preserve_index=False)); "
        "got = got.select(expected.column_names).cast(expected.schema); sort both by sort_columns; "
        "assert got.equals(expected). Float NaN written by pandas is stored as null."
    ),
    "metadata": "user metadata of the header, without creation_time",
}


def pin_hash_seed() -> None:
    """Re-exec with PYTHONHASHSEED=0: the writers iterate over sets, pinning makes output stable."""
    if os.environ.get("PYTHONHASHSEED") != "0":
        os.environ["PYTHONHASHSEED"] = "0"
        os.execv(sys.executable, [sys.executable, *sys.argv])


def install_deterministic_hooks(uuid_module: Any, time_module: Any, *, tz_aware: bool) -> None:
    """Patch the writer's own test hooks (``core.uuid`` / ``core._time``) for stable keys."""
    rng = random.Random(20240101)
    clock = [dt.datetime(2024, 1, 1, 12, 0, 0, tzinfo=dt.UTC)]

    def fake_uuid() -> uuid_mod.UUID:
        return uuid_mod.UUID(int=rng.getrandbits(128), version=4)

    def fake_utcnow() -> dt.datetime:
        clock[0] += dt.timedelta(seconds=1, microseconds=1)
        return clock[0] if tz_aware else clock[0].replace(tzinfo=None)

    uuid_module._uuid_hook_object = fake_uuid
    time_module.datetime_utcnow = fake_utcnow
    time_module.datetime_now = lambda: fake_utcnow().replace(tzinfo=None)


def reset_dir(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)


def to_expected_table(df: pd.DataFrame, schema: pa.Schema) -> pa.Table:
    """Logical frame -> arrow table with exactly the given schema (no metadata)."""
    df = df.reset_index(drop=True)
    mismatch = set(schema.names) ^ {str(c) for c in df.columns}
    if mismatch:
        raise AssertionError(f"frame and schema disagree on columns {sorted(mismatch)}")
    arrays = []
    for field in schema:
        col = df[field.name]
        if isinstance(col.dtype, pd.CategoricalDtype):
            col = col.astype(object).where(col.notna(), None)
        arrays.append(pa.Array.from_pandas(col).cast(field.type, safe=True))
    return pa.Table.from_arrays(arrays, schema=schema.remove_metadata())


def sort_table(table: pa.Table, sort_columns: list[str]) -> pa.Table:
    if not sort_columns or table.num_rows == 0:
        return table
    return table.sort_by([(c, "ascending") for c in sort_columns])


def scalar_columns(schema: pa.Schema) -> list[str]:
    """Columns usable as sort keys (everything but nested types)."""
    return [f.name for f in schema if not pa.types.is_nested(f.type)]


def read_header(store_dir: Path, uuid: str) -> tuple[str, dict[str, Any]]:
    """(format, header dict); JSON wins over msgpack like in both reference readers."""
    js = store_dir / f"{uuid}.by-dataset-metadata.json"
    mp = store_dir / f"{uuid}.by-dataset-metadata.msgpack.zstd"
    if js.exists():
        fmt = "json+stale-msgpack" if mp.exists() else "json"
        return fmt, json.loads(js.read_text())
    import msgpack
    import zstandard

    raw = zstandard.ZstdDecompressor().decompress(mp.read_bytes())
    return "msgpack.zstd", msgpack.unpackb(raw, raw=False)


class GoldenRecorder:
    """Write expected files and collect manifest entries for one writer's store."""

    def __init__(
        self,
        out: Path,
        writer: str,
        read_back: Callable[[str, str], pd.DataFrame],
        read_back_key: str,
    ) -> None:
        self.out = out
        self.store_dir = out / "store"
        self.expected_dir = out / "expected"
        self.writer = writer
        self.read_back = read_back
        self.read_back_key = read_back_key
        self.entries: list[dict[str, Any]] = []

    @property
    def store_url(self) -> str:
        return f"hfs://{self.store_dir}"

    def reset(self) -> None:
        reset_dir(self.store_dir)
        reset_dir(self.expected_dir)

    def _compare_read_back(
        self, uuid: str, table_name: str, expected: pa.Table, sort_columns: list[str]
    ) -> str | dict[str, str]:
        """'matches', 'error: ...' or {column: description} for the writer's own reader."""
        try:
            got_df = self.read_back(uuid, table_name)
        except Exception as exc:
            return f"error: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
        got_df = got_df.reset_index(drop=True)
        if sorted(map(str, got_df.columns)) != sorted(expected.column_names):
            return {"columns": f"reader returns columns {list(got_df.columns)}"}
        try:
            got = to_expected_table(got_df, expected.schema)
        except Exception as exc:
            return f"error converting result: {type(exc).__name__}: {exc}"
        if got.num_rows != expected.num_rows:
            return {"rows": f"reader returns {got.num_rows} rows, expected {expected.num_rows}"}
        got, exp = sort_table(got, sort_columns), sort_table(expected, sort_columns)
        diffs: dict[str, str] = {}
        for name in exp.column_names:
            if not got.column(name).equals(exp.column(name)):
                pairs = zip(exp.column(name).to_pylist(), got.column(name).to_pylist(), strict=True)
                bad = [(e, g) for e, g in pairs if e != g][:3]
                diffs[name] = "expected -> read back: " + ", ".join(
                    f"{e!r} -> {g!r}" for e, g in bad
                )
        return diffs or "matches"

    def record(
        self,
        uuid: str,
        expected_df: pd.DataFrame,
        *,
        input_df: pd.DataFrame | None = None,
        table_name: str = "table",
        sort_columns: list[str] | None = None,
        quirks: tuple[str, ...] = (),
        notes: str = "",
        extra: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        schema = pq.read_schema(self.store_dir / uuid / table_name / "_common_metadata")
        expected = to_expected_table(expected_df, schema)
        if sort_columns is None:
            sort_columns = ["rid"] if "rid" in schema.names else scalar_columns(schema)
        path = self.expected_dir / f"{uuid}.parquet"
        pq.write_table(expected, path, compression="zstd")
        fmt, header = read_header(self.store_dir, uuid)
        user_meta = {k: v for k, v in header.get("metadata", {}).items() if k != "creation_time"}
        data_keys = (
            [f["files"][table_name] for f in header["partitions"].values()]
            if "partitions" in header
            else sorted(
                str(k.relative_to(self.store_dir))
                for k in (self.store_dir / uuid / table_name).rglob("*.parquet")
            )
        )
        with_index_col = sum(
            "__index_level_0__" in pq.read_schema(self.store_dir / k).names for k in data_keys
        )
        quirks = tuple(q for q in quirks if q != "index_level_0")
        if with_index_col:
            quirks = (*quirks, "index_level_0")
        dtypes_src = input_df if input_df is not None else expected_df
        entry: dict[str, Any] = {
            "uuid": uuid,
            "writer": self.writer,
            "header_format": fmt,
            "explicit_partitions": "partitions" in header,
            "num_partitions": len(header["partitions"]) if "partitions" in header else None,
            "partition_keys": header.get("partition_keys", []),
            "secondary_indices": sorted(header.get("indices", {})),
            "table_name": table_name,
            "expected": str(path.relative_to(self.out)),
            "num_rows": expected.num_rows,
            "data_files": len(data_keys),
            "data_files_with___index_level_0__": with_index_col,
            "columns": expected.column_names,
            "sort_columns": list(sort_columns),
            "metadata": user_meta,
            "input_dtypes": {str(c): str(t) for c, t in dtypes_src.dtypes.items()},
            "quirks": list(quirks),
            "notes": notes,
            self.read_back_key: self._compare_read_back(
                uuid, table_name, expected, list(sort_columns)
            ),
        }
        if extra:
            entry.update(extra)
        self.entries.append(entry)
        print(f"  {uuid}: {expected.num_rows} rows, read-back: {entry[self.read_back_key]}")
        return entry

    def write_manifest(self, versions: dict[str, str], **extra: Any) -> None:
        manifest = {
            "writer": self.writer,
            "versions": versions,
            "store": "store",
            "conventions": {
                **EXPECTED_CONVENTIONS,
                self.read_back_key: (
                    f"result of comparing {self.writer}'s own read_table with the expected content "
                    "at generation time: 'matches', an error, or the differing columns (documents "
                    "the reference's bugs)"
                ),
            },
            **extra,
            "datasets": self.entries,
        }
        text = json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
        (self.out / "manifest.json").write_text(text)
