"""The repository's top level: benchmark results stay out of git, setup.cfg holds only
what pyproject.toml cannot."""

from __future__ import annotations

import configparser
import importlib.util
import pathlib
import shutil
import subprocess
import sys
import tomllib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _script(name: str):
    path = ROOT / "asv_benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"bench_{name}_layout", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look the module up
    try:
        spec.loader.exec_module(mod)
    finally:
        del sys.modules[spec.name]
    return mod


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)


def test_benchmark_results_go_to_an_ignored_folder() -> None:
    compare = _script("compare")
    results = ROOT / "bench-results"
    assert compare.parse_args([]).json == results / "compare.json"
    assert compare.parse_args(["--quick"]).json == results / "compare-quick.json"
    assert compare.parse_args(["--no-json"]).json is None
    assert compare.parse_args(["--json", "x.json"]).json == pathlib.Path("x.json")
    assert results / "compare.json" == _script("plot").DEFAULT_RESULTS
    if shutil.which("git") is None or _git("rev-parse").returncode != 0:
        pytest.skip("not a git checkout")
    assert _git("check-ignore", "-q", "bench-results/compare.json").returncode == 0
    assert _git("ls-files", "bench-results.json", "bench-results").stdout == ""


def test_setup_cfg_holds_only_setuptools_command_options() -> None:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    assert cfg.sections() == ["bdist_wheel"]
    assert cfg["bdist_wheel"]["python_tag"] == "py311"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["requires-python"] == ">=3.11"  # the tag names the oldest Python
