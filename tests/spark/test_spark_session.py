"""``kartoframe.spark.local_session`` and the early check of the Python workers' interpreter.

A local Spark session whose Python workers run an interpreter without kartoframe (the
README example in a virtual environment that is not activated) must fail with one clear
:class:`~kartoframe.errors.SparkPythonWorkerError` before any job runs, not with a Java
stack trace ending in ``ModuleNotFoundError``.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap

import pandas as pd
import pytest

import kartoframe as kf
import kartoframe.spark as kfs
from kartoframe.errors import InvalidInputError, SparkPythonWorkerError
from kartoframe.execution import spark_engine

NO_KARTOFRAME_PYTHON = "/usr/bin/python3"


def _without_kartoframe(python: str, cwd: pathlib.Path) -> bool:
    if not os.access(python, os.X_OK):
        return False
    probe = subprocess.run([python, "-c", "import kartoframe"], cwd=cwd, capture_output=True)
    return probe.returncode != 0


def test_worker_python_of_the_driver_needs_no_probe() -> None:
    assert spark_engine._worker_python_problem(sys.executable) is None
    sibling = os.path.join(os.path.dirname(sys.executable), "python3")
    if os.path.exists(sibling):  # same environment's bin folder: python3 next to python
        assert spark_engine._worker_python_problem(sibling) is None


def test_worker_python_elsewhere_is_probed(tmp_path: pathlib.Path) -> None:
    wrapper = tmp_path / "bin" / "python-wrapper"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    wrapper.chmod(0o755)
    assert spark_engine._worker_python_problem(str(wrapper)) is None
    assert "not an executable" in (spark_engine._worker_python_problem("no-such-python-x") or "")


def test_worker_python_without_kartoframe_is_named(tmp_path: pathlib.Path, monkeypatch) -> None:
    if not _without_kartoframe(NO_KARTOFRAME_PYTHON, tmp_path):
        pytest.skip(f"needs {NO_KARTOFRAME_PYTHON} without kartoframe")
    monkeypatch.chdir(tmp_path)
    problem = spark_engine._worker_python_problem(NO_KARTOFRAME_PYTHON)
    assert problem is not None
    assert "cannot import kartoframe" in problem and "ModuleNotFoundError" in problem


def test_local_session_settings(spark) -> None:
    session = kfs.local_session("kartoframe-tests", cores=2)
    assert session is spark  # getOrCreate: the running session
    assert os.environ["PYSPARK_PYTHON"] == sys.executable
    assert spark.sparkContext.pythonExec == sys.executable
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    assert spark.conf.get("spark.sql.execution.arrow.pyspark.enabled") == "true"
    assert spark.conf.get("spark.sql.shuffle.partitions") == "2"
    assert spark.sparkContext.master == "local[2]"
    spark_engine.check_python_workers(spark)  # passes, and is cached for this context
    assert spark_engine._WORKERS_OK[spark.sparkContext] == sys.executable


def test_check_raises_before_the_job(spark, tmp_path: pathlib.Path, monkeypatch) -> None:
    """The check follows ``sc.pythonExec``; a changed interpreter is checked again."""
    if not _without_kartoframe(NO_KARTOFRAME_PYTHON, tmp_path):
        pytest.skip(f"needs {NO_KARTOFRAME_PYTHON} without kartoframe")
    monkeypatch.chdir(tmp_path)
    cube = kf.Cube(dimension_columns=("x",), partition_columns=("p",), uuid_prefix="c")
    kf.build_cube(data=pd.DataFrame({"x": [1, 2], "p": [0, 1]}), cube=cube, store="./cube")
    spark_engine.check_python_workers(spark)
    monkeypatch.setattr(spark.sparkContext, "pythonExec", NO_KARTOFRAME_PYTHON)
    with pytest.raises(SparkPythonWorkerError, match="local_session") as info:
        kfs.store_dataset_from_sdf(spark.range(3), str(tmp_path / "s"), "ds")
    assert NO_KARTOFRAME_PYTHON in str(info.value)
    assert not (tmp_path / "s").exists()
    with pytest.raises(SparkPythonWorkerError):
        kfs.query_cube_sdf(spark, cube, "./cube")


@pytest.mark.parametrize("cores", [0, -1, 1.5, True])
def test_local_session_rejects_bad_cores(cores: object) -> None:
    pytest.importorskip("pyspark")
    with pytest.raises(InvalidInputError, match="cores"):
        kfs.local_session(cores=cores)  # type: ignore[arg-type]


SCRIPT = textwrap.dedent(
    """
    import sys
    import pandas as pd
    from pyspark.sql import SparkSession
    import kartoframe as kf
    import kartoframe.spark as kfs

    spark = (SparkSession.builder.master("local[1]")
             .config("spark.ui.enabled", "false")
             .config("spark.pyspark.python", sys.executable)   # not used by local workers
             .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
             .getOrCreate())
    store = kf.Store("./data")
    df = pd.DataFrame({"country": ["DE", "FR"], "units": [5, 7]})
    kf.store_dataframes_as_dataset(store, "units", [df], partition_on=["country"])
    sdf = kfs.read_dataset_as_sdf(spark, "units", store)      # native reader: no workers
    print("columns", sdf.columns)
    for attempt in range(2):                                  # the second one is cached
        try:
            kfs.store_dataset_from_sdf(sdf, store, "copy", partition_on=["country"])
        except kf.SparkPythonWorkerError as e:
            print("ERROR", attempt, e)
    try:
        kfs.read_dataset_as_sdf(spark, "units", store, reader="arrow")
    except kf.SparkPythonWorkerError:
        print("ERROR read")
    spark.stop()
    """
)


@pytest.mark.spark
@pytest.mark.slow
def test_wrong_worker_python_raises_clear_error(tmp_path: pathlib.Path) -> None:
    pytest.importorskip("pyspark")
    if not _without_kartoframe(NO_KARTOFRAME_PYTHON, tmp_path):
        pytest.skip(f"needs {NO_KARTOFRAME_PYTHON} without kartoframe")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK")}
    env["PYSPARK_PYTHON"] = NO_KARTOFRAME_PYTHON
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    env["PYTHONWARNINGS"] = "ignore"
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "columns ['country', 'units']" in out
    assert out.count("ERROR ") == 3, out
    line = next(ln for ln in out.splitlines() if ln.startswith("ERROR 0"))
    assert NO_KARTOFRAME_PYTHON in line and "No module named" in line
    assert "kartoframe.spark.local_session()" in line and "PYSPARK_PYTHON" in line
    assert "spark.pyspark.python" in line
    assert "Py4JJavaError" not in proc.stderr and "at org.apache.spark" not in proc.stderr
    assert not (tmp_path / "data" / "copy").exists()
