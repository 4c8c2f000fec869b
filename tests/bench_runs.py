"""Running a benchmark script of ``asv_benchmarks/`` end to end in the tests (tiny sizes)."""

from __future__ import annotations

import pathlib
import subprocess
import sys

BENCH = pathlib.Path(__file__).resolve().parent.parent / "asv_benchmarks"


def run_benchmark(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``asv_benchmarks/<script>`` with ``args``; it must end with status 0 (every goal
    met) or 1 (a goal missed, which timings of a tiny run may well be), not with a crash.
    """
    proc = subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]  # status 1 from a crash
    return proc
