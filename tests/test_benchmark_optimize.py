"""asv_benchmarks/optimize_compare.py: the small-files scenario at a tiny size, end to end
(real kartoframe and deltalake tables, a real subprocess for the memory lines)."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("deltalake")

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "asv_benchmarks" / "optimize_compare.py"

SCENARIOS = ["optimize", "optimize-again", "cluster", "read-full", "read-selective"]
TABLES = ["kf before", "kf sort_by id", "kf zorder id,ts", "dl before", "dl z_order id"]


@pytest.mark.slow
def test_tiny_run_prints_every_line_and_saves_them(tmp_path: pathlib.Path) -> None:
    out = tmp_path / "optimize.json"
    args = ["--days", "10", "--rows-per-day", "300", "--partitions", "3", "--repeat", "1"]
    args += ["--warmup", "0", "--no-hygiene", "--json", str(out)]
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=240
    )
    text = proc.stdout
    # exit status 1 means "a target not met", which a tiny table may well be
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "ERROR" not in text and "WRONG" not in text, text

    data = json.loads(out.read_text())
    assert [s["name"] for s in data["scenarios"]] == SCENARIOS
    for scenario in data["scenarios"]:
        for m in scenario["measurements"]:
            assert m["status"] == "ok", (scenario["name"], m)
            assert len(m["times"]) == 1
    targets = {t["check"]: t for t in data["targets"]}
    assert len(targets) == len(data["targets"]) == 22
    for check, row in targets.items():
        assert f"   {check}" in text, check
        if not check.startswith(("peak memory", "Arrow pool")):  # tiny: may not grow RSS
            assert row["ratio"] is not None and row["ratio"] > 0, row
    # 10 days x 3 partitions = 30 small files; every clustered table keeps one per partition
    counts = data["report"]["row_groups"]["counts"]
    for table in TABLES:
        assert table in text
    assert counts["kartoframe-before"]["files"] == 30
    assert counts["kartoframe-before"]["row_groups_read"] == 30  # ids are uniform: no skipping
    assert counts["kartoframe-sort"]["files_kept"] == 3
    assert targets["2nd optimize: kartoframe 1st / 2nd"]["value"] is not None
    assert data["report"]["second_optimize_files"]["kartoframe-compact"] == {
        "removed": 0,
        "added": 0,
    }
    memory = data["report"]["memory"]
    for variant in ("kartoframe-compact", "kartoframe-sort", "deltalake-compact"):
        assert memory[variant]["removed"] == 30, memory[variant]
        # Linux batches RSS counters per thread (up to 64 pages each before they are summed),
        # so the high-water mark read after a tiny optimize can sit a few pages under the
        # RSS read before it (seen: 64 KiB under); more than 1 MiB under is a broken probe
        assert memory[variant]["rss_peak"] >= memory[variant]["rss_after_imports"] - 2**20
    assert "row groups read = " in text and "peak memory = " in text
    assert text.count("CPU time (all threads), median") == 6  # compact x 2, cluster x 4


def test_generator_is_deterministic_and_fills_every_partition() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_optimize_compare", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look the module up
    try:
        spec.loader.exec_module(mod)
        size = mod.Spec(days=2, rows_per_day=500, partitions=20, seed=3)
        a, b = mod.day_table(size, 1), mod.day_table(size, 1)
        assert a.equals(b)
        assert not a.equals(mod.day_table(size, 0))
        assert set(a["region"].to_pylist()) == set(size.regions())
        assert a.num_rows == 500
    finally:
        del sys.modules[spec.name]
