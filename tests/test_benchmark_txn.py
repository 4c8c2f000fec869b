"""The commit-throughput goal of issue 15 in ``asv_benchmarks/txn_compare.py``: the ratio
kartoframe / deltalake flips at the goal, a commit that did not land fails the goal, and a
tiny run of real concurrent writer processes (both systems, local folder) checks that
exactly the appends that returned landed."""

from __future__ import annotations

import importlib.util
import json
import pathlib
from types import ModuleType
from typing import Any

import pytest
from bench_runs import BENCH, run_benchmark


@pytest.fixture(scope="module")
def txn() -> ModuleType:
    spec = importlib.util.spec_from_file_location("txn_compare", BENCH / "txn_compare.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _row(system: str, writers: int, throughput: float, failed: int = 0) -> dict[str, Any]:
    return {"system": system, "writers": writers, "throughput_per_s": throughput, "failed": failed}


def test_throughput_goal_flips_at_the_goal(txn: ModuleType) -> None:
    assert txn.THROUGHPUT_GOAL == 1.0  # issue 15: no worse than deltalake
    rows = [
        _row("kartoframe", 4, 10.0),
        _row("deltalake", 4, 10.0),
        _row("kartoframe", 8, 9.9),
        _row("deltalake", 8, 10.0),
        _row("kartoframe", 1, 50.0),  # no deltalake row at 1 writer: no ratio
    ]
    ratios = txn.throughput_ratios(rows)
    assert [(r["system"], r["writers"], r["met"]) for r in ratios] == [
        ("kartoframe", 4, True),
        ("kartoframe", 8, False),
    ]
    assert ratios[1]["ratio"] == pytest.approx(0.99)


def test_a_commit_that_did_not_land_misses_the_goal(txn: ModuleType) -> None:
    rows = [_row("kartoframe", 4, 30.0, failed=1), _row("deltalake", 4, 10.0, failed=3)]
    (ratio,) = txn.throughput_ratios(rows)
    assert ratio["ratio"] == pytest.approx(3.0) and not ratio["met"]


@pytest.mark.slow
def test_tiny_run_checks_every_append(tmp_path: pathlib.Path) -> None:
    out = tmp_path / "txn.json"
    args = ["--backends", "local", "--writers", "2", "--commits", "2", "--no-requests"]
    # a lost or phantom append fails the script's check: a crash, and no JSON
    proc = run_benchmark("txn_compare.py", *args, "--json", str(out))
    data = json.loads(out.read_text())
    rows = data["concurrent_appends"]["local"]
    assert [(r["system"], r["writers"], r["commits"]) for r in rows] == [
        ("kartoframe", 2, 4),
        ("kartoframe-noindex", 2, 4),
        ("deltalake", 2, 4),
    ]
    assert all(r["failed"] == 0 for r in rows if r["system"] != "deltalake")
    assert all(r["throughput_per_s"] > 0 for r in rows)
    ratios = data["throughput_ratios"]["local"]
    assert [r["system"] for r in ratios] == ["kartoframe", "kartoframe-noindex"]
    assert "throughput kartoframe / deltalake, writers=2" in proc.stdout
    missed = [r for r in ratios if not r["met"]]
    assert proc.returncode == (1 if missed else 0), proc.stdout
