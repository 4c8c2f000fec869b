"""The bounded-memory goals of issue 15 in ``asv_benchmarks/scale_write.py``: the goal lines
flip at their thresholds, and a tiny run writes with every system in fresh processes and
reports what it measured."""

from __future__ import annotations

import importlib.util
import json
import pathlib
import sys
from types import ModuleType
from typing import Any

import pytest
from bench_runs import BENCH, run_benchmark


@pytest.fixture(scope="module")
def scale_write() -> ModuleType:
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location("scale_write", BENCH / "scale_write.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _med(seconds: float, peak: float, input_bytes: float = 100.0) -> dict[str, float]:
    return {
        "seconds": seconds,
        "rss_growth": peak / 2,
        "peak_over_imports": peak,
        "input_bytes": input_bytes,
    }


def test_memory_goal_flips_at_a_peak_of_twice_the_input(scale_write: ModuleType) -> None:
    assert scale_write.MEMORY_GOAL == 2.0
    (ok,) = scale_write.goal_lines("rows", {"kartoframe": _med(1.0, 200.0)}, 10)
    (bad,) = scale_write.goal_lines("rows", {"kartoframe": _med(1.0, 201.0)}, 10)
    assert (ok["met"], bad["met"]) == (True, False)
    assert bad["value"] == pytest.approx(2.01)


def test_partition_goal_is_against_deltalake(scale_write: ModuleType) -> None:
    assert scale_write.PARTITION_GOAL == 1.0
    kf, dl = _med(2.0, 1.0), _med(2.0, 1.0)
    (ok,) = scale_write.goal_lines("partitions", {"kartoframe": kf, "deltalake": dl}, 10)
    slower = {"kartoframe": _med(2.1, 1.0), "deltalake": dl}
    (bad,) = scale_write.goal_lines("partitions", slower, 10)
    assert (ok["met"], bad["met"]) == (True, False)
    assert bad["value"] == pytest.approx(1.05)
    # without deltalake (or kartoframe) there is nothing to compare
    assert scale_write.goal_lines("partitions", {"kartoframe": kf}, 10) == []
    assert scale_write.goal_lines("rows", {"deltalake": dl}, 10) == []


def test_the_frame_has_the_partitions_asked_for(scale_write: ModuleType) -> None:
    df = scale_write.many_partitions_frame(7)
    assert len(df) == 7 * scale_write.ROWS_PER_PARTITION
    assert df["part"].nunique() == 7 and list(df.columns) == ["part", "x", "y"]


def _tiny_run(tmp_path: pathlib.Path, *args: str) -> tuple[Any, dict[str, Any]]:
    """Run scale_write.py once per system with ``args``; its process and JSON results."""
    out = tmp_path / "scale_write.json"
    extra = ["--repeat", "1", "--data-dir", str(tmp_path / "data"), "--json", str(out)]
    proc = run_benchmark("scale_write.py", *args, *extra)
    return proc, json.loads(out.read_text())


@pytest.mark.slow
def test_tiny_run_writes_with_every_system(tmp_path: pathlib.Path) -> None:
    proc, data = _tiny_run(tmp_path, "--rows", "20000", "--partitions", "30")
    assert sorted(data) == ["partitions-30", "rows-20000"]
    for result in data.values():
        assert sorted(result["runs"]) == ["deltalake", "kartoframe", "pyarrow"]
        for (run,) in result["runs"].values():
            assert run["seconds"] > 0 and run["input_bytes"] > 0 and run["written_bytes"] > 0
            # the peak counts the input, which was loaded after the baseline
            assert run["peak_over_imports"] >= run["rss_growth"]
        assert len(result["goals"]) == 1
    missed = [g for r in data.values() for g in r["goals"] if not g["met"]]
    assert proc.returncode == (1 if missed else 0), proc.stdout
    assert "goal: peak RSS (input included) <= 2.0x the input" in proc.stdout
    # nothing of the runs is left under the data directory but the cached input table
    assert not list((tmp_path / "data").glob("kf-scale-write-*"))


@pytest.mark.slow
def test_tiny_run_writes_where_asked(tmp_path: pathlib.Path) -> None:
    """``--write-dir``: the timed writes go to another folder (tmpfs, say), and leave it
    as they found it."""
    elsewhere = tmp_path / "elsewhere"
    _, data = _tiny_run(
        tmp_path, "--only", "partitions", "--partitions", "30", "--write-dir", str(elsewhere)
    )
    (result,) = data.values()
    assert result["write_dir"] == str(elsewhere)
    for (run,) in result["runs"].values():
        assert run["seconds"] > 0 and run["written_bytes"] > 0
    assert elsewhere.is_dir() and not list(elsewhere.iterdir())


def test_dask_goal_is_against_to_parquet(scale_write: ModuleType) -> None:
    assert scale_write.DASK_GOAL == 1.25
    pq = _med(2.0, 400.0)
    (ok,) = scale_write.goal_lines("dask", {"kartoframe": _med(9.0, 500.0), "to_parquet": pq}, 10)
    (bad,) = scale_write.goal_lines("dask", {"kartoframe": _med(1.0, 504.0), "to_parquet": pq}, 10)
    assert (ok["met"], bad["met"]) == (True, False)
    assert bad["value"] == pytest.approx(1.26)
    assert scale_write.goal_lines("dask", {"kartoframe": pq}, 10) == []


def test_the_lazy_frame_makes_its_partitions_on_demand(scale_write: ModuleType) -> None:
    ddf = scale_write.lazy_sales_frame(2_000, 500)
    assert ddf.npartitions == 4
    first, last = (ddf.partitions[i].compute() for i in (0, 3))
    assert len(first) == len(last) == 500
    assert not first["revenue"].equals(last["revenue"])  # one seed per partition
    assert list(first.columns) == list(ddf._meta.columns)


def test_the_distributed_goal_is_the_largest_workers_peak_against_to_parquet(
    scale_write: ModuleType,
) -> None:
    pq = _med(2.0, 400.0)
    (ok,) = scale_write.goal_lines(
        "distributed", {"kartoframe": _med(9.0, 500.0), "to_parquet": pq}, 10
    )
    (bad,) = scale_write.goal_lines(
        "distributed", {"kartoframe": _med(1.0, 504.0), "to_parquet": pq}, 10
    )
    assert (ok["met"], bad["met"]) == (True, False)
    assert ok["goal"] == (
        "largest worker's peak RSS <= 1.25x dask to_parquet's (10 rows, 2-worker LocalCluster)"
    )


@pytest.mark.slow
def test_tiny_dask_run_writes_with_kartoframe_and_to_parquet(tmp_path: pathlib.Path) -> None:
    """The threaded scheduler; the ``distributed`` mode's tiny run is a cluster test
    (tests/cluster/test_cluster_scale_write.py)."""
    proc, data = _tiny_run(tmp_path, "--only", "dask", "--rows", "20000")
    (result,) = data.values()
    assert sorted(result["runs"]) == ["kartoframe", "to_parquet"]
    for (run,) in result["runs"].values():
        assert run["seconds"] > 0 and run["input_bytes"] > 0 and run["written_bytes"] > 0
    assert len(result["goals"]) == 1
    assert proc.returncode == (0 if result["goals"][0]["met"] else 1), proc.stdout
    assert "goal: peak RSS <= 1.25x dask to_parquet's (20,000 rows)" in proc.stdout
    assert not list((tmp_path / "data").glob("kf-scale-write-*"))
