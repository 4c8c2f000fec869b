"""``asv_benchmarks/scale_write.py --only distributed``: a tiny run writes with kartoframe and
``to_parquet`` on fresh ``LocalCluster``s of worker processes and reports each worker's peak
(a cluster test: it starts two clusters of processes)."""

from __future__ import annotations

import json
import pathlib

from bench_runs import run_benchmark


def test_tiny_distributed_run_reports_the_largest_workers_peak(tmp_path: pathlib.Path) -> None:
    out = tmp_path / "scale_write.json"
    proc = run_benchmark(
        "scale_write.py",
        *("--only", "distributed", "--rows", "20000", "--repeat", "1"),
        *("--data-dir", str(tmp_path / "data"), "--json", str(out)),
    )
    (result,) = json.loads(out.read_text()).values()
    assert sorted(result["runs"]) == ["kartoframe", "to_parquet"]
    for (run,) in result["runs"].values():
        assert run["seconds"] > 0 and run["input_bytes"] > 0 and run["written_bytes"] > 0
        peaks = run["worker_peaks_over_imports"]
        assert len(peaks) == 2 and run["peak_over_imports"] == max(peaks) > 0
    (goal,) = result["goals"]
    assert proc.returncode == (0 if goal["met"] else 1), proc.stdout
    assert "goal: largest worker's peak RSS <= 1.25x dask to_parquet's (20,000 rows, " in (
        proc.stdout
    )
    assert not list((tmp_path / "data").glob("kf-scale-write-*"))
