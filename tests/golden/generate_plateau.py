# ruff: noqa: E501  (long fixture descriptions and literal rows)
"""Generate golden datasets written by plateau 4.6.2 (the reference implementation).

Run with the project venv (plateau 4.6.2, pandas 3, pyarrow 26)::

    .venv/bin/python tests/golden/generate_plateau.py

Writes, replacing whatever was there:

* ``tests/data/golden/plateau-4.6.2/store/``     -- the ``hfs://`` store plateau wrote
* ``tests/data/golden/plateau-4.6.2/expected/``  -- ``<uuid>.parquet``: the TRUE logical
  content of each dataset (what the user wrote, after updates/deletes), written with
  plain pyarrow, NOT plateau's (partly buggy) read-back
* ``tests/data/golden/plateau-4.6.2/manifest.json``

Expected-file convention: one row per logical row, index reset, partition columns
included; column order and arrow types exactly those of the dataset's
``_common_metadata`` (partition keys first, then the other columns alphabetically;
normalized types: int64/uint64/float64, large_string/string, timestamp[us(, tz)],
date32, list<int64>, ...); no pandas metadata. Every non-empty dataset has a unique
``rid`` (int64) column, so comparisons sort both sides by the manifest's
``sort_columns`` first.

Label uuids and timestamps (``creation_time``, index file names) are made
deterministic by patching plateau's own test hooks (``plateau.core.uuid`` and
``plateau.core._time``), so regenerating gives byte-identical headers.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _golden_common import (
    GOLDEN,
    GoldenRecorder,
    install_deterministic_hooks,
    pin_hash_seed,
)

pin_hash_seed()

import datetime as dt  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import plateau  # noqa: E402
import plateau.core._time  # noqa: E402
import plateau.core.uuid  # noqa: E402
import pyarrow as pa  # noqa: E402
from plateau.api.dataset import (  # noqa: E402
    create_empty_dataset_header,
    read_table,
    store_dataframes_as_dataset,
    update_dataset_from_dataframes,
    write_single_partition,
)

install_deterministic_hooks(plateau.core.uuid, plateau.core._time, tz_aware=True)


def _plateau_read(uuid: str, table_name: str) -> pd.DataFrame:
    return read_table(dataset_uuid=uuid, store=REC.store_url)


REC = GoldenRecorder(GOLDEN / "plateau-4.6.2", "plateau 4.6.2", _plateau_read, "plateau_read_table")
STORE_URL = REC.store_url
record = REC.record


def store(uuid: str, dfs: list[pd.DataFrame], **kwargs: Any) -> None:
    store_dataframes_as_dataset(store=STORE_URL, dataset_uuid=uuid, dfs=dfs, **kwargs)


def ts(values: list[str | None], tz: str | None = None) -> pd.Series:
    """Timestamps from ISO strings as datetime64[ns] (tz-localized if tz is given)."""
    out = pd.Series(pd.to_datetime(values, format="ISO8601")).astype("datetime64[ns]")
    if tz is not None:
        out = out.dt.tz_localize(tz, ambiguous=True, nonexistent="raise")
    return out


def concat(dfs: list[pd.DataFrame]) -> pd.DataFrame:
    return pd.concat(dfs, ignore_index=True)


# --------------------------------------------------------------------------------------
# datasets
# --------------------------------------------------------------------------------------
BERLIN = "Europe/Berlin"


def all_types_frame(rid0: int, n: int = 5) -> pd.DataFrame:
    """Every supported dtype; nullable columns carry a null in row 1 (and 3)."""
    assert n == 5
    r = np.arange(rid0, rid0 + n)
    return pd.DataFrame(
        {
            "rid": r.astype("int64"),
            "bool": np.array([True, False, True, False, True]),
            "bool_na": pd.array([True, None, False, None, True], dtype="boolean"),
            "i8": np.array([-128, -1, 0, 1, 127], dtype="int8"),
            "i16": np.array([-32768, -1, 0, 1, 32767], dtype="int16"),
            "i32": np.array([-(2**31), -1, 0, 1, 2**31 - 1], dtype="int32"),
            "i64": np.array([-(2**63), -1, 0, 1, 2**63 - 1], dtype="int64"),
            "u8": np.array([0, 1, 2, 254, 255], dtype="uint8"),
            "u16": np.array([0, 1, 2, 65534, 65535], dtype="uint16"),
            "u32": np.array([0, 1, 2, 2**32 - 2, 2**32 - 1], dtype="uint32"),
            "u64": np.array([0, 1, 2, 2**64 - 2, 2**64 - 1], dtype="uint64"),
            "int_na": pd.array([rid0, None, -7, None, 2**40], dtype="Int64"),
            "f32": np.array([1.5, np.nan, -0.25, np.inf, 3.0], dtype="float32"),
            "f64": np.array([1.5, np.nan, -1e300, -np.inf, 1 / 3], dtype="float64"),
            "str_obj": pd.Series(["a", None, "", "Grüße €", f"row{rid0}"]),  # pandas 3 `str`
            "str_pd": pd.Series(["x", None, "", "ü", "y"], dtype="string"),
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
                    "2020-10-25 02:30:00",
                ],
                BERLIN,
            ),
            "bytes": [b"\x00\x01", None, b"", b"\xff\xfe", "ü".encode()],
            "list_int": [[1, 2], None, [], [-3], [4, None]],
            "list_str": [["a", "b"], None, [], ["ü"], ["x", None]],
        }
    )


def gen_dtypes() -> None:
    dfs = [all_types_frame(0), all_types_frame(5)]
    store("dtypes_plain", dfs, metadata={"owner": "golden"})
    record(
        "dtypes_plain",
        concat(dfs),
        notes=(
            "Unpartitioned, two input frames -> two files. Data files keep the un-normalized input "
            "types (int8, uint8, float, dictionary, string vs large_string, Int64 pandas metadata); "
            "_common_metadata holds the normalized ones. Nulls in every nullable column (row 1 of "
            "each frame and inside lists). ts includes 1969 and 2262-04-11 (near the ns limit); "
            "ts_tz includes DST edges. 'bool' (numpy bool) cannot hold nulls; 'bool_na' is the "
            "pandas nullable boolean dtype."
        ),
    )


def gen_partition_int() -> None:
    a = pd.DataFrame({"p": [1, 1, 2, -5], "rid": [0, 1, 2, 3], "v": [0.5, 1.5, 2.5, 3.5]})
    b = pd.DataFrame({"p": [1, 0], "rid": [4, 5], "v": [4.5, None]})
    store("partition_int", [a, b], partition_on=["p"])
    record(
        "partition_int",
        concat([a, b]),
        notes="int64 partition column incl. negative and 0; two input frames both hit p=1 -> two files in p=1.",
    )


STRING_VALUES = [
    "a b",
    "50%",
    "k=v",
    "ü€",
    "",
    "plain",
    "a+b&c?#",
    "it's",
    "tab\tx",
    "~.-_",
    "semi;colon,comma",
]


def gen_partition_string() -> None:
    n = len(STRING_VALUES)
    df = pd.DataFrame({"s": STRING_VALUES, "rid": range(n), "v": range(100, 100 + n)})
    store("partition_string", [df], partition_on=["s"])
    record(
        "partition_string",
        df,
        notes=(
            "String partition values that need URL quoting: space (%20), '%' (%25), '=' (%3D), "
            "non-ASCII (UTF-8 percent-encoded), the empty string (key component 's='), and "
            "+&?#'\\t;, ; '~.-_' stay unquoted (urlquote PYTHON_3_7_QUOTING)."
        ),
    )


def gen_partition_date() -> None:
    df = pd.DataFrame(
        {
            "d": [
                dt.date(2020, 1, 1),
                dt.date(1999, 12, 31),
                dt.date(2020, 1, 1),
                dt.date(1970, 1, 1),
            ],
            "rid": [0, 1, 2, 3],
            "v": ["a", "b", "c", "d"],
        }
    )
    store("partition_date", [df], partition_on=["d"])
    record(
        "partition_date",
        df,
        notes="date (object of datetime.date) partition column -> date32[day]; key d=2020-01-01.",
    )


def gen_partition_datetime() -> None:
    df = pd.DataFrame(
        {
            "t": ts(
                [
                    "2020-01-01 00:00:00",
                    "2021-06-30 13:14:15.5",
                    "2020-01-01 00:00:00",
                    "2021-06-30 13:14:15.000001",
                ]
            ),
            "rid": [0, 1, 2, 3],
            "v": [1, 2, 3, 4],
        }
    )
    store("partition_datetime", [df], partition_on=["t"])
    record(
        "partition_datetime",
        df,
        notes=(
            "naive datetime64 partition column -> timestamp[us]; key components are str(pd.Timestamp) "
            "quoted: t=2020-01-01%2000%3A00%3A00, t=2021-06-30%2013%3A14%3A15.500000 (6 fraction digits only "
            "when non-zero). The files carry __index_level_0__ (drop it)."
        ),
    )


def gen_partition_bool() -> None:
    df = pd.DataFrame(
        {
            "flag": [True, False, False, True, False],
            "rid": range(5),
            "v": ["t0", "f1", "f2", "t3", "f4"],
        }
    )
    store("quirk_bool_partition", [df], partition_on=["flag"])
    record(
        "quirk_bool_partition",
        df,
        quirks=("bool_partition_reads_true",),
        notes=(
            "bool partition column, keys flag=True / flag=False. plateau bug: it rebuilds the column with "
            "numpy.bool_('False') == True, so read_table returns True for every row (index pruning is "
            "correct). A correct reader returns False for the flag=False rows."
        ),
    )


def gen_partition_float() -> None:
    df = pd.DataFrame({"f": [1.5, -0.25, 2.0, 1.5, 1e-7], "rid": range(5), "v": [0, 1, 2, 3, 4]})
    store("partition_float", [df], partition_on=["f"])
    record(
        "partition_float",
        df,
        notes="float64 partition column; keys are str(float): f=1.5, f=-0.25, f=2.0, f=1e-07.",
    )


def gen_two_level() -> None:
    a = pd.DataFrame(
        {
            "p": [1, 1, 2, 2, 1],
            "s": ["x", "y y", "x", "x", "x"],
            "rid": range(5),
            "v": np.arange(5.0),
        }
    )
    b = pd.DataFrame({"p": [2, 3], "s": ["ü", "x"], "rid": [5, 6], "v": [5.0, 6.0]})
    store("partition_two_level", [a, b], partition_on=["p", "s"], metadata={"levels": 2})
    record(
        "partition_two_level",
        concat([a, b]),
        notes="partition_on=['p','s'] (int64, string) -> keys table/p=1/s=y%20y/<label>.parquet.",
    )


def gen_msgpack() -> None:
    df = pd.DataFrame(
        {"p": [1, 2, 1], "rid": [0, 1, 2], "k": ["a", "b", "a"], "v": [0.1, 0.2, 0.3]}
    )
    store(
        "header_msgpack",
        [df],
        partition_on=["p"],
        secondary_indices=["k"],
        metadata_storage_format="msgpack",
        metadata={"format": "msgpack"},
    )
    record(
        "header_msgpack",
        df,
        notes="Header is <uuid>.by-dataset-metadata.msgpack.zstd (zstd frame around msgpack of the same dict); "
        "no JSON header exists.",
    )


def gen_msgpack_updated() -> None:
    a = pd.DataFrame({"p": [1, 2], "rid": [0, 1], "v": ["a", "b"]})
    store(
        "quirk_msgpack_updated",
        [a],
        partition_on=["p"],
        metadata_storage_format="msgpack",
        metadata={"step": 1},
    )
    b = pd.DataFrame({"p": [3], "rid": [2], "v": ["c"]})
    update_dataset_from_dataframes(
        [b], store=STORE_URL, dataset_uuid="quirk_msgpack_updated", metadata={"step": 2}
    )
    record(
        "quirk_msgpack_updated",
        concat([a, b]),
        quirks=("msgpack_update_writes_json",),
        notes=(
            "Created with a msgpack.zstd header, then updated: plateau writes the update as a NEW JSON header "
            "and leaves the old msgpack header in place (stale: it lacks the p=3 partition and has step=1). "
            "Readers try JSON first, so the JSON header is authoritative; expected content is that of the JSON "
            "header (3 rows)."
        ),
    )


def gen_secondary_indices() -> None:
    a = pd.DataFrame(
        {
            "p": [1, 1, 1, 2],
            "rid": [0, 1, 2, 3],
            "k_str": ["a", None, "b", "a"],
            "k_int": np.array([10, 20, 10, -1], dtype="int64"),
            "k_uint": np.array([0, 1, 255, 1], dtype="uint8"),
            "k_date": [dt.date(2020, 1, 1), dt.date(2020, 1, 2), None, dt.date(2020, 1, 1)],
            "k_ts": ts(["2020-01-01 10:00", None, "2020-01-01 10:00", "2021-01-01 00:00:00.5"]),
            "v": [0.0, 1.0, 2.0, 3.0],
        }
    )
    b = pd.DataFrame(
        {
            "p": [2, 3],
            "rid": [4, 5],
            "k_str": ["c", "ü x"],
            "k_int": np.array([20, 30], dtype="int64"),
            "k_uint": np.array([7, 0], dtype="uint8"),
            "k_date": [dt.date(1999, 12, 31), dt.date(2020, 1, 2)],
            "k_ts": ts(["2020-01-01 10:00", "1999-12-31 23:59:59"]),
            "v": [4.0, 5.0],
        }
    )
    cols = ["k_str", "k_int", "k_uint", "k_date", "k_ts"]
    store("secondary_indices", [a, b], partition_on=["p"], secondary_indices=cols)
    record(
        "secondary_indices",
        concat([a, b]),
        notes=(
            "Secondary indices on string (large_string), int64, uint (uint8 input -> uint64 index), date "
            "(date32) and timestamp (timestamp[ns] in the index file, timestamp[us] in the schema). Nulls "
            "in k_str/k_date/k_ts are NOT indexed (plateau drops them). Index values map to labels of "
            "both input frames."
        ),
    )


def gen_updated() -> None:
    a = pd.DataFrame(
        {"p": [1, 2, 3, 2], "rid": [0, 1, 2, 3], "k": ["a", "b", "c", "d"], "v": [0, 1, 2, 3]}
    )
    store(
        "updated",
        [a],
        partition_on=["p"],
        secondary_indices=["k"],
        metadata={"owner": "golden", "version": 1},
    )
    b = pd.DataFrame({"p": [2, 1], "rid": [10, 11], "k": ["b2", "a"], "v": [10, 11]})
    update_dataset_from_dataframes(
        [b],
        store=STORE_URL,
        dataset_uuid="updated",
        delete_scope=[{"p": 2}],
        metadata={"version": 2, "note": "p=2 replaced"},
        partition_on=["p"],
        secondary_indices=["k"],
    )
    update_dataset_from_dataframes(
        [],
        store=STORE_URL,
        dataset_uuid="updated",
        delete_scope=[{"p": 3}],
        metadata={"version": 3},
    )
    keep = a[~a["p"].isin([2, 3])]
    record(
        "updated",
        concat([keep, b]),
        input_df=a,
        quirks=("stale_files", "stale_index_files"),
        notes=(
            "Created with p in {1,2,3} and an index on k; update 1: delete_scope=[{'p': 2}] + new rows for "
            "p=2 and p=1 + metadata {'version': 2, 'note': ...}; update 2: delete-only delete_scope=[{'p': 3}] "
            "+ metadata {'version': 3}. The deleted partitions' data files and the superseded index files "
            "stay in the store (no garbage collection) but are not referenced by the header: readers must "
            "only use files listed in the header. Expected metadata: creation_time kept from the first "
            "write, other keys merged with last-write-wins."
        ),
    )


def gen_empty() -> None:
    df = pd.DataFrame(
        {
            "rid": pd.Series([], dtype="int64"),
            "s": pd.Series([], dtype="str"),
            "f": pd.Series([], dtype="float32"),
            "d": pd.Series([], dtype="datetime64[ns]"),
        }
    )
    store("empty_unpartitioned", [df])
    record(
        "empty_unpartitioned",
        df,
        notes="Empty frame, no partition_on: one partition with a 0-row parquet file.",
    )
    dfp = pd.DataFrame(
        {
            "p": pd.Series([], dtype="int64"),
            "rid": pd.Series([], dtype="int64"),
            "s": pd.Series([], dtype="str"),
        }
    )
    store("empty_partitioned", [dfp], partition_on=["p"])
    record(
        "empty_partitioned",
        dfp,
        notes="Empty frame with partition_on=['p']: 'partitions': {} (no data file), but partition_keys and "
        "_common_metadata are written. A reader returns an empty frame typed from _common_metadata.",
    )


def gen_implicit() -> None:
    schema_df = pd.DataFrame(
        {
            "p": pd.Series([], dtype="int64"),
            "rid": pd.Series([], dtype="int64"),
            "v": pd.Series([], dtype="str"),
        }
    )
    create_empty_dataset_header(
        store=STORE_URL,
        dataset_uuid="implicit",
        schema=schema_df,
        partition_on=["p"],
        metadata={"kind": "implicit"},
    )
    a = pd.DataFrame({"p": [1, 2, 1], "rid": [0, 1, 2], "v": ["a", "b", "c"]})
    b = pd.DataFrame({"p": [2], "rid": [3], "v": ["d"]})
    for part in (a, b):
        write_single_partition(
            store=STORE_URL, dataset_uuid="implicit", data=part, partition_on=["p"]
        )
    record(
        "implicit",
        concat([a, b]),
        quirks=("implicit_partitions",),
        notes=(
            "create_empty_dataset_header + two write_single_partition calls, never committed: the header has "
            "NO 'partitions' key. Readers must list <uuid>/table/ and take every *.parquet key (all with the "
            "same hive depth) as a partition."
        ),
    )


def gen_table_name() -> None:
    df = pd.DataFrame({"p": ["x", "y", "x"], "rid": [0, 1, 2], "v": [1.0, 2.0, 3.0]})
    store("table_name_core", [df], partition_on=["p"], table_name="core")
    record(
        "table_name_core",
        df,
        table_name="core",
        notes="table_name='core': keys table_name_core/core/p=x/<label>.parquet, files: {'core': ...}, "
        "schema at table_name_core/core/_common_metadata.",
    )


def gen_index_level() -> None:
    df = pd.DataFrame({"p": [1, 2, 1, 2, 1, 2], "rid": range(6), "v": list("abcdef")})
    store("quirk_index_level_0", [df], partition_on=["p"])
    record(
        "quirk_index_level_0",
        df,
        notes=(
            "Each partition is cut from non-contiguous rows (p alternates), so pyarrow stores the pandas "
            "index as a physical column __index_level_0__ (listed in the file's pandas metadata "
            "index_columns, absent from _common_metadata). Readers must drop it; expected content has no "
            "such column."
        ),
    )


def gen_slash() -> None:
    df = pd.DataFrame(
        {"s": ["a b/c", "x/y/z", "plain", "a b/c"], "rid": [0, 1, 2, 3], "v": [0, 1, 2, 3]}
    )
    store("quirk_slash_partition", [df], partition_on=["s"])
    record(
        "quirk_slash_partition",
        df,
        quirks=("slash_unescaped",),
        notes=(
            "plateau bug: '/' inside a string partition value is not percent-encoded, so 'a b/c' becomes the "
            "key table/s=a%20b/c/<label>.parquet (and 'x/y/z' two extra levels). plateau's reader skips key "
            "components without '=' and returns the truncated values 'a b' and 'x'. The exact value IS "
            "recoverable from the key layout: '=' inside values is always encoded (%3D), so a path component "
            "between the table and the file name that has no '=' can only be the continuation of the previous "
            "value after a literal '/'. A correct reader therefore returns 'a b/c' and 'x/y/z' (expected file). "
            "Note the partitions have different key depths."
        ),
        extra={"plateau_values": {"a b/c": "a b", "x/y/z": "x"}, "exact_value_recoverable": True},
    )


def gen_tz_partition() -> None:
    df = pd.DataFrame(
        {
            "t": ts(["2021-01-01 10:00", "2021-07-01 10:00", "2021-01-01 10:00"], BERLIN),
            "rid": [0, 1, 2],
            "v": [1, 2, 3],
        }
    )
    store("quirk_tz_partition", [df], partition_on=["t"])
    record(
        "quirk_tz_partition",
        df,
        quirks=("tz_partition_unreadable",),
        notes=(
            "tz-aware (Europe/Berlin) timestamp partition column: keys t=2021-01-01%2010%3A00%3A00%2B01%3A00 "
            "and ...%2B02%3A00 (str(pd.Timestamp) with UTC offset), schema timestamp[us, tz=Europe/Berlin]. "
            "plateau writes it but cannot read it back (RuntimeError: Unexpected object encountered). A "
            "correct reader parses the offset and returns the instants in Europe/Berlin."
        ),
    )


def main() -> int:
    REC.reset()
    print(f"plateau {plateau.__version__}, pandas {pd.__version__}, pyarrow {pa.__version__}")
    for gen in (
        gen_dtypes,
        gen_partition_int,
        gen_partition_string,
        gen_partition_date,
        gen_partition_datetime,
        gen_partition_bool,
        gen_partition_float,
        gen_two_level,
        gen_msgpack,
        gen_msgpack_updated,
        gen_secondary_indices,
        gen_updated,
        gen_empty,
        gen_implicit,
        gen_table_name,
        gen_index_level,
        gen_slash,
        gen_tz_partition,
    ):
        gen()
    REC.write_manifest(
        {
            "plateau": plateau.__version__,
            "pandas": pd.__version__,
            "pyarrow": pa.__version__,
            "numpy": np.__version__,
            "python": sys.version.split()[0],
        }
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
