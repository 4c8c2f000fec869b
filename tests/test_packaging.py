"""The built wheel installs and works outside the checkout (docs/getting-started.md).

kartoframe is installed from a checkout or from a wheel built with ``python -m build``; this
builds the wheel from a copy of the packaging inputs, installs it with ``--no-deps`` into a
fresh virtual environment (the dependencies come from the test environment's site-packages
through a ``.pth`` file, so nothing is downloaded), and uses it from an empty folder: the
package imports from the new environment (not the checkout), ships ``py.typed`` and its
data files, and the ``kartoframe`` command works.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import venv

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
#: What the build reads: the project metadata, setuptools' command options, the README (long
#: description), the package.
INPUTS = ["pyproject.toml", "setup.cfg", "README.md", "kartoframe"]


def _run(*args: object, cwd: pathlib.Path, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, f"{args} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


@pytest.mark.slow
def test_wheel_installs_into_a_fresh_environment(tmp_path: pathlib.Path) -> None:
    pytest.importorskip("build")
    src = tmp_path / "src"
    src.mkdir()
    for name in INPUTS:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif path.exists():
            shutil.copy2(path, src / name)
    dist = tmp_path / "dist"
    _run(sys.executable, "-m", "build", "--wheel", "--outdir", dist, src, cwd=tmp_path)
    (wheel,) = dist.glob("kartoframe-*.whl")
    assert wheel.name.endswith("-py311-none-any.whl")  # setup.cfg's [bdist_wheel] python_tag

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    purelib = pathlib.Path(
        _run(
            python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=tmp_path
        ).strip()
    )
    # dependencies (pandas, pyarrow, ...) from the test environment, after the new one's own
    (purelib / "zz_test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run(
        sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index",
        "--quiet", wheel, cwd=tmp_path,
    )  # fmt: skip

    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    check = textwrap.dedent(
        """
        import importlib.metadata, pathlib, sys
        import pandas as pd
        import kartoframe as kf

        here = pathlib.Path(kf.__file__).parent
        assert here.is_relative_to(pathlib.Path(sys.prefix)), here
        assert (here / "py.typed").is_file()
        assert (here / "spark-log4j2.properties").is_file()
        assert importlib.metadata.version("kartoframe") == kf.__version__
        df = pd.DataFrame({"country": ["DE", "FR", "DE"], "units": [5, 7, 9]})
        kf.store_dataframes_as_dataset("./data", "sales", [df], partition_on=["country"])
        print(len(kf.read_table("sales", "./data")), here)
        """
    )
    out = _run(python, "-c", check, cwd=work, env=env)
    assert out.startswith("3 ") and str(env_dir) in out
    listing = _run(env_dir / "bin" / "kartoframe", "./data", "ls", cwd=work, env=env)
    assert "sales" in listing
