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


# -- tests/ mirrors the package where tests are unit tests ---------------------------------

#: The package layers (``kartoframe/<layer>/``); each has a folder of unit tests of the same
#: name under ``tests/``.
LAYERS = ("format", "plan", "storage", "execution", "api", "cli")

#: Folders under ``tests/`` that are not unit-test mirrors: feature and integration suites
#: (they cut across layers) and data.
FEATURE_SUITES = {
    "cluster": "a Spark standalone cluster and dask process clusters (`make test-cluster`)",
    "conformance": "every engine against one suite",
    "cube": "cubes end to end, on every engine",
    "dask": "the dask and iterator engines end to end",
    "data": "golden fixtures (no tests)",
    "errors": "error behaviour across the public API",
    "golden": "scripts that generate the golden fixtures (no tests)",
    "interop": "plateau and kartothek reading and writing our data",
    "schema": "schemas and evolution end to end",
    "spark": "the Spark engine end to end (needs a SparkSession)",
    "statistics": "statistics across every write and read path",
    "transactions": "concurrency, crashes and the commit protocol",
}


def _test_folders() -> list[str]:
    skip = {"__pycache__"}
    return sorted(p.name for p in (ROOT / "tests").iterdir() if p.is_dir() and p.name not in skip)


def test_every_package_layer_has_a_mirror_folder_with_tests() -> None:
    for layer in LAYERS:
        assert (ROOT / "kartoframe" / layer / "__init__.py").is_file(), layer
        folder = ROOT / "tests" / layer
        assert folder.is_dir(), f"tests/{layer}/ (unit tests of kartoframe/{layer}/) is missing"
        assert sorted(folder.glob("test_*.py")), f"tests/{layer}/ holds no test module"


def test_every_tests_folder_mirrors_a_package_folder_or_is_a_feature_suite() -> None:
    for name in _test_folders():
        if name in FEATURE_SUITES:
            assert name not in LAYERS
            continue
        assert name in LAYERS, (
            f"tests/{name}/ is neither the mirror of a package layer {LAYERS} nor a listed "
            "feature suite (FEATURE_SUITES)"
        )
        assert (ROOT / "kartoframe" / name).is_dir(), f"tests/{name}/ mirrors no package folder"


def test_test_module_names_are_unique() -> None:
    """No ``__init__.py`` under tests/: pytest imports test modules by their base name
    (rootdir-based "prepend" import mode), so two modules of one name cannot both run."""
    assert not list((ROOT / "tests").rglob("__init__.py"))
    tests = ROOT / "tests"
    names = [p.name for p in tests.rglob("test_*.py") if p.relative_to(tests).parts[0] != "data"]
    assert sorted(n for n in set(names) if names.count(n) > 1) == []
