"""asv_benchmarks/plot.py turns compare.py's JSON into PNG charts (synthetic results)."""

from __future__ import annotations

import importlib.util
import json
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).parent.parent
SCRIPT = ROOT / "asv_benchmarks" / "plot.py"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _module():
    spec = importlib.util.spec_from_file_location("bench_plot", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _measurement(system, times, status="ok", message=""):
    return {
        "system": system,
        "label": {"pyarrow": "pyarrow.dataset"}.get(system, system),
        "status": status,
        "message": message,
        "times": times,
        "extra": {},
    }


RESULTS = {
    "meta": {
        "started": "2026-11-20T10:00:00+0000",
        "cpu_count": 2,
        "platform": "Linux-6.1-x86_64-with-glibc2.36",
        "versions": {"kartoframe": "0.1.0", "plateau": "4.6.2"},
    },
    "scenarios": [
        {
            "name": "read",
            "title": "full read, 500,000 rows",
            "params": {"rows": 500_000},
            "rows": 500_000,
            "measurements": [
                _measurement("kartoframe", [0.10, 0.12, 0.11]),
                _measurement("plateau", [0.50, 0.55, 0.52]),
                _measurement("deltalake", [], "skipped", "not installed"),
                _measurement("pyarrow", [0.09, 0.10, 0.11]),
            ],
            "loadavg": 0.5,
        },
        {
            "name": "header-json",
            "title": "header open (JSON)",
            "params": {},
            "rows": None,
            "measurements": [
                _measurement("kartoframe", [0.02, 0.03]),
                _measurement("plateau", [0.2, 0.25], "wrong", "0 partitions"),
            ],
            "loadavg": None,
        },
        {
            "name": "graph",
            "title": "nothing usable",
            "params": {},
            "rows": None,
            "measurements": [_measurement("kartoframe", [], "error", "boom")],
        },
    ],
    "checks": [
        {
            "check": "full read throughput vs pyarrow.dataset",
            "scenario": "read",
            "peer": "pyarrow",
            "target_speedup": 0.85,
            "target": ">= 0.85x",
            "kartoframe_s": 0.11,
            "peer_s": 0.10,
            "speedup": 0.909,
            "status": "PASS",
            "reason": "",
        },
        {
            "check": "full read throughput vs plateau",
            "scenario": "read",
            "peer": "plateau",
            "target_speedup": 3.0,
            "target": ">= 3x",
            "kartoframe_s": 0.11,
            "peer_s": 0.52,
            "speedup": 4.7,
            "status": "PASS",
            "reason": "",
        },
        {
            "check": "full read throughput vs deltalake",
            "scenario": "read",
            "peer": "deltalake",
            "target_speedup": None,
            "target": "none",
            "kartoframe_s": None,
            "peer_s": None,
            "speedup": None,
            "status": "n.a.",
            "reason": "deltalake skipped",
        },
    ],
}


def _png_size(path: pathlib.Path) -> tuple[int, int]:
    from PIL import Image

    with Image.open(path) as im:
        return im.size


def test_plots_every_usable_scenario_and_the_ratios(tmp_path) -> None:
    plot = _module()
    written = plot.plot_all(json.loads(json.dumps(RESULTS)), tmp_path / "static")
    names = sorted(p.name for p in written)
    # "graph" has no usable measurement: no chart
    assert names == ["benchmarks-header-json.png", "benchmarks-read.png", "benchmarks-speedups.png"]
    for p in written:
        data = p.read_bytes()
        assert data.startswith(PNG_MAGIC)
        width, height = _png_size(p)
        assert width >= 600 and height >= 150
    # three usable systems make a taller chart than one
    assert (
        _png_size(tmp_path / "static" / "benchmarks-read.png")[1]
        > _png_size(tmp_path / "static" / "benchmarks-header-json.png")[1]
    )


def test_markdown_links_are_relative_to_docs(tmp_path) -> None:
    plot = _module()
    docs = tmp_path / "docs"
    written = plot.plot_all(RESULTS, docs / "_static")
    text = plot.markdown(written, docs)
    assert "![benchmarks-read](_static/benchmarks-read.png)" in text.splitlines()


def test_command_line(tmp_path) -> None:
    results = tmp_path / "results.json"
    results.write_text(json.dumps(RESULTS))
    out = tmp_path / "docs" / "_static"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), str(results), "--out", str(out), "--markdown"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "![benchmarks-speedups](_static/benchmarks-speedups.png)" in proc.stdout
    assert (out / "benchmarks-read.png").exists()


def test_rejects_other_json(tmp_path) -> None:
    plot = _module()
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"results": []}))
    with pytest.raises(ValueError, match="scenarios"):
        plot.load(bad)
    assert plot.main([str(bad), "--out", str(tmp_path)]) == 2
