"""``asv_benchmarks/commit_scale.py`` (issue 15's commit measure) runs end to end at a tiny
size: both systems append to a copy of a synthesised plateau dataset, the copy is left
intact, and the report holds what it measured."""

from __future__ import annotations

import json
import pathlib

from bench_runs import run_benchmark


def test_commit_scale_appends_with_both_systems(tmp_path: pathlib.Path) -> None:
    out = tmp_path / "commit.json"
    proc = run_benchmark(
        "commit_scale.py",
        "--partitions", "2500,5000",
        "--formats", "json",
        "--appends", "11",
        "--peer-appends", "2",
        "--data-dir", str(tmp_path / "data"),
        "--json", str(out),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = json.loads(out.read_text())
    assert {(r["system"], r["partitions"]) for r in results} == {
        (s, n) for s in ("kartoframe", "plateau") for n in (2500, 5000)
    }
    for r in results:
        assert 0 < r["min"] <= r["median"] <= r["max"] and r["first"] > 0
        travel = r["time_travel"]
        if r["system"] == "kartoframe":  # before, at and after the first checkpoint
            assert sorted(travel) == ["version 10", "version 11", "version 9"]
            assert all(t > 0 for t in travel.values())
        else:
            assert travel == {}
    assert "growth x" in proc.stdout
    # the cached source dataset was appended to on copies only: still plateau's header
    sources = list((tmp_path / "data").glob("header-*/written-by-plateau"))
    assert len(sources) == 2
    for src in sources:
        assert not (src / "sales" / "_kartoframe").exists()
