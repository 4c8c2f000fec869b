"""kf.check_dataset / kf.check_cube: clean datasets pass, each corruption is one precise finding.

Every corruption is made on purpose through the store (delete, truncate, replace, hand
edits of index, statistics, log and header files) on a local folder and memory://, and
once on the S3 server.
"""

from __future__ import annotations

import io
import json
import pathlib
import time

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import kartoframe as kf
from kartoframe.format import naming, txlog
from kartoframe.format.index import index_from_bytes, index_to_bytes
from kartoframe.format.statistics import statistics_from_bytes, statistics_to_bytes
from kartoframe.storage import log
from kartoframe.storage.resolve import statistics_ref

DF = pd.DataFrame({"p": [1, 2, 3], "x": [10, 20, 30], "v": [1.0, 2.0, 3.0]})


def _make(store: kf.Store, uuid: str = "ds") -> None:
    """Version 0: partitions p=1..3 (index on x); version 1 appends p=4."""
    kf.store_dataframes_as_dataset(store, uuid, [DF], partition_on=["p"], secondary_indices=["x"])
    kf.update_dataset_from_dataframes([DF.assign(p=4, x=40)], store, uuid)


def _header(store: kf.Store, uuid: str = "ds") -> kf.DatasetMetadata:
    return kf.read_dataset_metadata(uuid, store)


def _label(store: kf.Store, p: int, uuid: str = "ds") -> tuple[str, str]:
    md = log.read_stored_header(store, uuid)
    assert md is not None
    label = next(lb for lb in md[0].partitions if lb.startswith(f"p={p}/"))
    return label, md[0].partitions[label]


def _parquet(table: pa.Table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


def _only(report: kf.CheckReport) -> kf.Finding:
    assert len(report.findings) == 1, report.findings
    return report.findings[0]


# ---------------------------------------------------------------------------- clean
def test_clean_dataset_passes(store: kf.Store) -> None:
    _make(store)
    report = kf.check_dataset("ds", store)
    assert report.ok and report.findings == () and report.files_checked == 4
    assert report.kind == "dataset" and report.datasets == ("ds",)
    deep = kf.check_dataset("ds", store, deep=True)
    assert deep.ok and deep.findings == () and deep.deep
    assert kf.check_dataset("ds", store).to_dict()["ok"] is True


def test_clean_msgpack_dataset_with_many_versions_passes(store: kf.Store) -> None:
    kf.store_dataframes_as_dataset(
        store, "m", [DF], partition_on=["p"], metadata_storage_format="msgpack"
    )
    for i in range(11):  # past the first checkpoint at version 10
        kf.update_dataset_from_dataframes([DF.assign(p=10 + i)], store, "m")
    assert kf.check_dataset("m", store).findings == ()


def test_deep_check_of_indices_with_nan_nulls_times_and_dates(memory_store: kf.Store) -> None:
    df = pd.DataFrame(
        {
            "p": [1, 1, 2],
            "f": [float("nan"), 1.5, float("nan")],
            "t": pd.to_datetime(
                ["2024-01-01 00:00:00.000001", "2024-01-02", None], format="ISO8601"
            ),
            "s": ["a", None, "b"],
            "d": pd.to_datetime(["2024-01-01", "2024-01-02", "2024-01-03"]).date,
        }
    )
    df = df.assign(tz=df.t.dt.tz_localize("Europe/Berlin"))
    kf.store_dataframes_as_dataset(
        memory_store, "ds", [df], partition_on=["p"], secondary_indices=["f", "t", "tz", "s", "d"]
    )
    assert kf.check_dataset("ds", memory_store, deep=True).findings == ()


def test_clean_cube_passes(store: kf.Store) -> None:
    cube = kf.Cube(dimension_columns=["x"], partition_columns=["p"], uuid_prefix="c")
    kf.build_cube({"seed": DF, "extra": DF[["x", "p"]].assign(w=1)}, cube, store)
    report = kf.check_cube(cube, store, deep=True)
    assert report.ok and report.findings == (), report.findings
    assert report.kind == "cube" and report.datasets == ("c++extra", "c++seed")
    assert report.files_checked == 6
    assert kf.check_cube("c", store).findings == ()  # by prefix


def test_missing_dataset_raises(store: kf.Store) -> None:
    with pytest.raises(kf.DatasetNotFoundError):
        kf.check_dataset("nope", store)
    with pytest.raises(kf.DatasetNotFoundError):
        kf.check_cube("nope", store)
    with pytest.raises(kf.InvalidTypeError):
        kf.check_dataset("ds", store, deep="yes")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- data files
def test_deleted_data_file(store: kf.Store) -> None:
    _make(store)
    label, key = _label(store, 2)
    store.delete(key)
    report = kf.check_dataset("ds", store)
    f = _only(report)
    assert not report.ok
    assert (f.severity, f.kind, f.key, f.partition, f.dataset) == (
        "error",
        "data_file_missing",
        key,
        label,
        "ds",
    )
    assert key in f.message


def test_truncated_data_file(store: kf.Store) -> None:
    _make(store)
    label, key = _label(store, 1)
    data = store.get(key)
    store.put(key, data[: len(data) // 2])
    f = _only(kf.check_dataset("ds", store))
    assert (f.kind, f.key, f.partition) == ("data_file_unreadable", key, label)


def test_data_file_with_incompatible_schema(store: kf.Store) -> None:
    _make(store)
    label, key = _label(store, 3)
    store.put(key, _parquet(pa.table({"v": ["three"], "x": [30]})))  # same rows, v a string
    f = _only(kf.check_dataset("ds", store))
    assert (f.severity, f.kind, f.key, f.partition) == ("error", "data_file_schema", key, label)
    assert "'v' is string in the file, double in the stored schema" in f.message


def test_data_file_with_extra_column_is_a_warning(store: kf.Store) -> None:
    _make(store)
    label, key = _label(store, 3)
    store.put(key, _parquet(pa.table({"v": [3.0], "x": pa.array([30], pa.int8()), "zz": [1]})))
    f = _only(report := kf.check_dataset("ds", store))
    assert report.ok  # int8 reads as int64; an unknown column is skipped by readers
    assert (f.severity, f.kind, f.partition) == ("warning", "data_file_extra_columns", label)


def test_deep_finds_values_missing_from_the_index(store: kf.Store) -> None:
    _make(store)
    label, key = _label(store, 3)
    store.put(key, _parquet(pa.table({"v": [3.0], "x": [31]})))  # index lists 30 for p=3
    assert kf.check_dataset("ds", store).ok  # footers and counts agree
    report = kf.check_dataset("ds", store, deep=True)
    assert report.kinds() == ["index_value_missing", "index_value_extra"]
    missing = report.findings[0]
    assert (missing.partition, missing.key) == (label, _header(store).indices["x"])
    assert "31" in missing.message


# ---------------------------------------------------------------------------- indices
def test_index_naming_a_partition_that_no_longer_exists(store: kf.Store) -> None:
    _make(store)
    ikey = _header(store).indices["x"]
    idx = index_from_bytes(store.get(ikey), "x")
    gone = "p=9/0123456789abcdef0123456789abcdef"
    extra = pa.table({"x": pa.array([90], pa.int64()), "partition": [[gone]]})
    store.put(ikey, index_to_bytes(pa.concat_tables([idx, extra.cast(idx.schema)])))
    f = _only(kf.check_dataset("ds", store))
    assert (f.kind, f.key, f.partition) == ("index_unknown_partition", ikey, gone)


def test_missing_index_file(store: kf.Store) -> None:
    _make(store)
    ikey = _header(store).indices["x"]
    store.delete(ikey)
    f = _only(kf.check_dataset("ds", store))
    assert (f.kind, f.key) == ("index_file_missing", ikey)


# ---------------------------------------------------------------------------- statistics
def _stats_key(store: kf.Store) -> str:
    found = log.read_stored_header(store, "ds")
    assert found is not None
    ref = statistics_ref(found[0])
    assert ref is not None and ref.key is not None
    return ref.key


def test_statistics_row_for_a_missing_file(store: kf.Store) -> None:
    """In a single statistics file (no deltas) every row must describe a listed file;
    with deltas, rows of removed files are expected and never used."""
    _make(store)
    kf.build_dataset_statistics(store, "ds", rebuild=True)  # one file (v1 appended a delta)
    skey = _stats_key(store)
    stats = statistics_from_bytes(store.get(skey))
    assert stats is not None
    row = stats.slice(0, 1).to_pylist()[0]
    gone = "p=9/0123456789abcdef0123456789abcdef"
    row.update(label=gone, key=f"ds/table/{gone}.parquet")
    stats = pa.concat_tables([stats, pa.Table.from_pylist([row], schema=stats.schema)])
    store.put(skey, statistics_to_bytes(stats))
    f = _only(kf.check_dataset("ds", store))
    assert (f.kind, f.key, f.partition) == ("statistics_unknown_partition", skey, gone)


def test_statistics_row_count_differs_from_footer(store: kf.Store) -> None:
    _make(store)
    skey = _stats_key(store)
    stats = statistics_from_bytes(store.get(skey))
    assert stats is not None
    rows = stats.column("rows").to_pylist()
    rows[0] = 99
    stats = stats.set_column(stats.column_names.index("rows"), "rows", pa.array(rows, pa.int64()))
    store.put(skey, statistics_to_bytes(stats))
    f = _only(kf.check_dataset("ds", store))
    assert (f.kind, f.partition) == ("statistics_rows_mismatch", stats.column("label")[0].as_py())
    assert "99 rows" in f.message


# ---------------------------------------------------------------------------- the log
def test_log_entry_edited_by_hand(store: kf.Store) -> None:
    _make(store)
    key = txlog.entry_key("ds", 1)
    doc = json.loads(store.get(key))
    doc["header"]["metadata"]["owner"] = "someone else"
    store.put(key, json.dumps(doc).encode())
    f = _only(kf.check_dataset("ds", store))
    assert (f.severity, f.kind, f.key) == ("error", "log_digest_mismatch", key)


def test_missing_log_entry(store: kf.Store) -> None:
    _make(store)
    kf.update_dataset_from_dataframes([DF.assign(p=5)], store, "ds")
    store.delete(txlog.entry_key("ds", 1))
    report = kf.check_dataset("ds", store)
    assert report.kinds()[0] == "log_entry_missing"
    assert report.findings[0].key == txlog.entry_key("ds", 1)


def test_header_lagging_the_log_is_a_warning(store: kf.Store) -> None:
    _make(store)
    old = log.state_at(store, "ds", 0)
    assert old.header_bytes is not None
    store.put(naming.header_key("ds", "json"), old.header_bytes)  # a writer stopped early
    report = kf.check_dataset("ds", store)
    f = _only(report)
    assert report.ok
    assert (f.severity, f.kind, f.key) == (
        "warning",
        "header_lags_log",
        "ds.by-dataset-metadata.json",
    )


def test_header_missing_with_a_committed_log_is_a_warning(store: kf.Store) -> None:
    _make(store)
    hkey = naming.header_key("ds", "json")
    store.delete(hkey)  # a create stopped between its log entry and its header
    f = _only(report := kf.check_dataset("ds", store))
    assert report.ok and (f.severity, f.kind, f.key) == ("warning", "header_missing", hkey)


def test_header_edited_by_hand(store: kf.Store) -> None:
    _make(store)
    hkey = naming.header_key("ds", "json")
    doc = json.loads(store.get(hkey))
    doc["metadata"]["owner"] = "someone else"
    store.put(hkey, json.dumps(doc).encode())
    f = _only(kf.check_dataset("ds", store))
    assert (f.kind, f.key) == ("header_mismatch", hkey)


def test_header_rewritten_by_another_program_is_a_warning(store: kf.Store) -> None:
    _make(store)
    hkey = naming.header_key("ds", "json")
    doc = json.loads(store.get(hkey))
    del doc["kartoframe"]["log"]  # plateau drops kartoframe's records when it rewrites
    store.put(hkey, json.dumps(doc).encode())
    f = _only(report := kf.check_dataset("ds", store))
    assert report.ok and (f.severity, f.kind, f.key) == ("warning", "header_external", hkey)
    kf.update_dataset_from_dataframes([DF.assign(p=7)], store, "ds")  # adopts it: EXTERNAL
    assert kf.check_dataset("ds", store).findings == ()


def test_vacuumed_log_replays_from_its_checkpoint(store: kf.Store) -> None:
    _make(store)
    for p in (5, 6):
        kf.update_dataset_from_dataframes([DF.assign(p=p)], store, "ds")
    kf.store_dataframes_as_dataset(store, "ds", [DF], partition_on=["p"], overwrite=True)
    kf.update_dataset_from_dataframes([DF.assign(p=8)], store, "ds")
    kf.vacuum_dataset("ds", store, retention_hours=0, force=True)
    versions, checkpoints = log.list_log(store, "ds")
    assert versions[0] > 0 and versions[0] in checkpoints
    assert kf.check_dataset("ds", store).findings == ()
    store.delete(txlog.checkpoint_key("ds", versions[0]))
    entry = log.read_entry(store, "ds", versions[0])
    assert entry is not None and not entry.reset  # the append after the overwrite
    f = kf.check_dataset("ds", store).findings[0]
    assert (f.kind, f.key) == ("log_checkpoint_missing", txlog.entry_key("ds", versions[0]))


@pytest.mark.parametrize("writer", ["plateau-4.6.2", "kartothek-5.3"])
def test_golden_datasets_of_the_reference_implementations_pass(writer: str) -> None:
    root = pathlib.Path(__file__).parent.parent / "data" / "golden" / writer
    store = kf.Store(f"file://{root / 'store'}")
    for entry in json.loads((root / "manifest.json").read_text())["datasets"]:
        report = kf.check_dataset(entry["uuid"], store, deep=True)
        assert report.findings == (), (entry["uuid"], report.findings)


def _garbage_index(store: kf.Store) -> str:
    key = _header(store).indices["x"]
    store.put(key, b"PAR1 not an index PAR1")
    return key


def _garbage_statistics(store: kf.Store) -> str:
    key = _stats_key(store)
    store.put(key, b"not parquet")
    return key


def _garbage(key: str):  # type: ignore[no-untyped-def]
    def corrupt(store: kf.Store) -> str:
        store.put(key, b"{not json")
        return key

    return corrupt


def _no_schema(store: kf.Store) -> str:
    key = naming.common_metadata_key("ds", "table")
    store.delete(key)
    return key


@pytest.mark.parametrize(
    ("corrupt", "kind"),
    [
        (_garbage("ds.by-dataset-metadata.json"), "header_unreadable"),
        (_garbage(txlog.entry_key("ds", 0)), "log_entry_unreadable"),
        (_garbage(txlog.entry_key("ds", 1)), "log_entry_unreadable"),
        (_garbage_index, "index_file_unreadable"),
        (_garbage_statistics, "statistics_file_unreadable"),
        (_no_schema, "schema_unreadable"),
    ],
    ids=["header", "entry0", "entry1", "index", "statistics", "schema"],
)
def test_undecodable_metadata_files(memory_store: kf.Store, corrupt, kind: str) -> None:  # type: ignore[no-untyped-def]
    _make(memory_store)
    key = corrupt(memory_store)
    f = _only(kf.check_dataset("ds", memory_store))
    assert (f.severity, f.kind, f.key) == ("error", kind, key)


def test_deep_decodes_every_data_page(store: kf.Store) -> None:
    _make(store)
    label, key = _label(store, 1)
    data = bytearray(store.get(key))
    for i in range(4, 40):  # the first data page; the footer stays intact
        data[i] ^= 0xFF
    store.put(key, bytes(data))
    assert kf.check_dataset("ds", store).findings == ()  # footers only
    f = _only(kf.check_dataset("ds", store, deep=True))
    assert (f.kind, f.key, f.partition) == ("data_file_corrupt", key, label)


# ---------------------------------------------------------------------------- cubes
def test_cube_reports_the_dataset_of_each_finding(store: kf.Store) -> None:
    cube = kf.Cube(dimension_columns=["x"], partition_columns=["p"], uuid_prefix="c")
    kf.build_cube({"seed": DF, "extra": DF[["x", "p"]].assign(w=1)}, cube, store)
    label, key = _label(store, 2, "c++extra")
    store.delete(key)
    f = _only(report := kf.check_cube(cube, store))
    assert not report.ok
    assert (f.kind, f.dataset, f.key, f.partition) == ("data_file_missing", "c++extra", key, label)


def test_cube_without_seed_breaks_the_rules(store: kf.Store) -> None:
    cube = kf.Cube(dimension_columns=["x"], partition_columns=["p"], uuid_prefix="c")
    kf.build_cube({"seed": DF, "extra": DF[["x", "p"]].assign(w=1)}, cube, store)
    kf.delete_dataset("c++seed", store)
    f = _only(kf.check_cube(cube, store))
    assert f.kind == "cube_rules" and "Seed" in f.message


@pytest.mark.parametrize("row_group_size", [None, 1])
def test_footer_read_from_the_tail(store: kf.Store, row_group_size: int | None) -> None:
    from kartoframe.storage.probe import FOOTER_GUESS, read_footer_tail

    table = pa.table({"a": range(3000), "b": [str(i) for i in range(3000)]})
    buf = io.BytesIO()
    pq.write_table(table, buf, row_group_size=row_group_size)
    data = buf.getvalue()
    footer = int.from_bytes(data[-8:-4], "little")
    assert (footer > FOOTER_GUESS) == (row_group_size == 1)  # 3,000 row groups: a 2nd read
    store.put("x/f.parquet", data)
    md = read_footer_tail(store, "x/f.parquet")
    assert (md.num_rows, md.num_row_groups) == (3000, 1 if row_group_size is None else 3000)
    assert md.schema.to_arrow_schema() == table.schema


# ---------------------------------------------------------------------------- S3, scale
def test_on_the_s3_server(s3_store: kf.Store) -> None:
    _make(s3_store)
    assert kf.check_dataset("ds", s3_store, deep=True).findings == ()
    label, key = _label(s3_store, 2)
    s3_store.delete(key)
    ikey = _header(s3_store).indices["x"]
    idx = index_from_bytes(s3_store.get(ikey), "x")
    s3_store.put(ikey, index_to_bytes(idx.slice(0, 1)))  # drops values: fine without deep
    f = _only(kf.check_dataset("ds", s3_store))
    assert (f.kind, f.key, f.partition) == ("data_file_missing", key, label)


@pytest.mark.slow
def test_a_thousand_files_check_quickly(tmp_path) -> None:
    store = kf.Store(f"file://{tmp_path}/store")
    df = pd.DataFrame({"p": range(1000), "v": range(1000)})
    kf.store_dataframes_as_dataset(store, "big", [df], partition_on=["p"])
    start = time.perf_counter()
    report = kf.check_dataset("big", store)
    took = time.perf_counter() - start
    assert report.ok and report.files_checked == 1000
    assert took < 30, took  # a generous bound for a shared machine; ~1 s measured
