"""``kartoframe.spark.optimize_dataset``: the Spark engine of ``optimize`` on a real local
SparkSession and real Parquet files (one Spark task per rewrite unit, one commit)."""

from __future__ import annotations

import pathlib
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import kartoframe as kf
import kartoframe.spark as kfs
from kartoframe.format.clustering import sort_table

COUNTRIES = ["DE", "FR", "IT"]
APPENDS = 4
ROWS = 30  # per append and country


def _make(store: str, uuid: str, seed: int = 0) -> None:
    """APPENDS appends of ROWS rows per country: APPENDS small files per partition.

    ``(x, y)`` is unique per row, so a sort by them has no ties.
    """
    rng = np.random.default_rng(seed)
    pairs = rng.permutation(50 * 50)[: APPENDS * ROWS * len(COUNTRIES)]
    for a in range(APPENDS):
        n = ROWS * len(COUNTRIES)
        chunk = pairs[a * n : (a + 1) * n]
        df = pd.DataFrame(
            {
                "country": np.repeat(COUNTRIES, ROWS),
                "id": np.arange(a * n, (a + 1) * n),
                "x": (chunk // 50).astype("int64"),
                "y": (chunk % 50).astype("int64"),
                "s": [f"v{i % 7}" for i in range(n)],
            }
        )
        kf.update_dataset_from_dataframes(
            [df],
            store=store,
            dataset_uuid=uuid,
            partition_on=["country"],
            secondary_indices=["s"],
        )


def _rows(store: str, uuid: str) -> pd.DataFrame:
    df = kf.read_table(uuid, store)
    return df.sort_values("id").reset_index(drop=True)


def _hashes(store: str, uuid: str) -> dict[Any, int]:
    hashes: dict[Any, int] = kf.hash_dataset(store, uuid, group_key=["country"]).compute().to_dict()
    return hashes


def _data_files(root: pathlib.Path, uuid: str) -> set[str]:
    return {str(p.relative_to(root)) for p in (root / uuid / "table").rglob("*.parquet")}


def _header(store: str, uuid: str) -> Any:
    return kf.read_dataset_metadata(uuid, store)


def _new_file_tables(root: pathlib.Path, uuid: str, before: set[str]) -> list[pa.Table]:
    return [pq.read_table(root / f) for f in sorted(_data_files(root, uuid) - before)]


@pytest.fixture
def dataset(tmp_path: pathlib.Path) -> tuple[str, pathlib.Path]:
    _make(str(tmp_path), "ds")
    return str(tmp_path), tmp_path


def test_compacts_sorts_and_keeps_the_content(spark: Any, dataset: Any) -> None:
    store, root = dataset
    rows, hashes = _rows(store, "ds"), _hashes(store, "ds")
    before = _data_files(root, "ds")
    assert len(before) == APPENDS * len(COUNTRIES)

    result = kfs.optimize_dataset(spark, "ds", store, sort_by=["x"])

    assert (result.files_removed, result.files_added) == (len(before), len(COUNTRIES))
    assert result.partitions_optimized == tuple(f"country={c}" for c in COUNTRIES)
    assert not result.dry_run and result.bytes_added > 0
    assert len(_header(store, "ds").partitions) == len(COUNTRIES)
    pd.testing.assert_frame_equal(_rows(store, "ds"), rows)  # the same rows (a multiset)
    assert _hashes(store, "ds") == hashes
    new = _new_file_tables(root, "ds", before)
    assert len(new) == len(COUNTRIES)
    # every file of the job starts with its id: a failed job finds its attempts' files
    names = [f.rsplit("/", 1)[1] for f in _data_files(root, "ds") - before]
    assert len({n[:16] for n in names}) == 1 and len({n[16:] for n in names}) == len(names)
    for table in new:  # sorted inside each new file
        x = table.column("x").to_numpy()
        assert table.num_rows == APPENDS * ROWS and (np.diff(x) >= 0).all()
    # the secondary index was rebuilt for the new files
    hit = kf.read_table("ds", store, predicates=[[("s", "==", "v3")]])
    assert sorted(hit["id"]) == sorted(rows.loc[rows["s"] == "v3", "id"])

    # incremental: nothing changed since, nothing to do, no commit
    version = kf.dataset_history("ds", store)[0].version
    again = kfs.optimize_dataset(spark, "ds", store, sort_by=["x"])
    assert (again.files_removed, again.files_added, again.partitions_optimized) == (0, 0, ())
    assert [s.reason for s in again.partitions_skipped] == ["already optimized"] * 3
    assert kf.dataset_history("ds", store)[0].version == version
    assert len(_data_files(root, "ds")) == len(before) + len(COUNTRIES)  # old ones kept


def test_spark_and_eager_engines_give_the_same_result(spark: Any, tmp_path: Any) -> None:
    store = str(tmp_path)
    _make(store, "eager")
    _make(store, "spark")
    options: dict[str, Any] = {"sort_by": ["x", "y"], "sort_method": "zorder"}

    eager = kf.optimize_dataset("eager", store, **options)
    before = _data_files(tmp_path, "spark")
    on_spark = kfs.optimize_dataset(spark, "spark", store, **options)

    for field in (
        "files_removed",
        "files_added",
        "bytes_removed",
        "partitions_optimized",
        "partitions_skipped",
        "version",
        "dry_run",
    ):
        assert getattr(on_spark, field) == getattr(eager, field), field
    assert on_spark.files_added == len(COUNTRIES)
    pd.testing.assert_frame_equal(_rows(store, "spark"), _rows(store, "eager"))
    # z-order inside each new file: the partition's rows in z-order of (x, y)
    before_rows = pa.Table.from_pandas(_rows(store, "eager"), preserve_index=False)
    for table in _new_file_tables(tmp_path, "spark", before):
        ids = set(table.column("id").to_pylist())
        mask = pa.array([i in ids for i in before_rows.column("id").to_pylist()])
        expected = sort_table(before_rows.filter(mask), ["x", "y"], "zorder")
        assert table.select(["x", "y"]).equals(expected.select(["x", "y"]))
        linear = sort_table(before_rows.filter(mask), ["x", "y"], "linear")
        assert not table.select(["x", "y"]).equals(linear.select(["x", "y"]))


def test_a_failing_unit_leaves_the_dataset_as_it_was(spark: Any, dataset: Any) -> None:
    store, root = dataset
    victim = sorted(f for f in _data_files(root, "ds") if "country=FR" in f)[0]
    (root / victim).unlink()  # the FR unit's read fails; DE and IT are rewritten first
    files = _data_files(root, "ds")
    header = (root / "ds.by-dataset-metadata.json").read_bytes()

    with pytest.raises(kf.errors.MissingDataFileError, match="is missing"):
        kfs.optimize_dataset(spark, "ds", store)

    assert (root / "ds.by-dataset-metadata.json").read_bytes() == header
    assert _data_files(root, "ds") == files  # the other units' new files are deleted


def test_dry_runs_and_recorded_transactions_run_no_spark_job(spark: Any, dataset: Any) -> None:
    store, root = dataset
    files = _data_files(root, "ds")
    # ``spark=None``: the driver must return before it touches a session
    planned = kfs.optimize_dataset(None, "ds", store, dry_run=True)
    assert planned.dry_run and (planned.files_removed, planned.files_added) == (12, 3)
    assert _data_files(root, "ds") == files

    done = kfs.optimize_dataset(spark, "ds", store, app_id="nightly", app_version=7)
    assert done.files_added == 3
    _make(store, "ds", seed=1)  # new small files: there would be work again
    files, version = _data_files(root, "ds"), kf.dataset_history("ds", store)[0].version
    retried = kfs.optimize_dataset(None, "ds", store, app_id="nightly", app_version=7)
    assert (retried.files_removed, retried.files_added) == (0, 0)
    assert _data_files(root, "ds") == files
    assert kf.dataset_history("ds", store)[0].version == version
    assert len(_header(store, "ds").partitions) == 3 + 12


def test_refusals_before_any_job(spark: Any, tmp_path: Any) -> None:
    with pytest.raises(kf.errors.InvalidInputError, match="memory"):
        kfs.optimize_dataset(spark, "ds", "memory://spark-optimize")
    _make(str(tmp_path), "ds")
    with pytest.raises(kf.errors.InvalidInputError, match="partition keys"):
        kfs.optimize_dataset(spark, "ds", str(tmp_path), sort_by=["country"])
    with pytest.raises(kf.errors.DatasetNotFoundError):
        kfs.optimize_dataset(spark, "nope", str(tmp_path))
