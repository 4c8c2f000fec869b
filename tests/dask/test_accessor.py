"""The ``.karto`` accessors and the lazy dask import."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import dask
import dask.dataframe as dd
import pandas as pd
import pytest
from dask_helpers import canonical, sales

import kartoframe as kf

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_python(code: str) -> str:
    """Run ``code`` in a fresh interpreter (the repository first on sys.path)."""
    env = {**os.environ, "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run(
        [sys.executable, "-W", "error", "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_pandas_accessor_writes_and_updates(store) -> None:
    df = sales(12)
    result = df.karto.to_dataset(
        store, "ds", partition_on=["country"], secondary_indices=["product"]
    )
    assert result.uuid == "ds"
    assert kf.read_dataset_metadata("ds", store).secondary_indices == ["product"]
    sales(3, 100).karto.update_dataset(store, "ds", delete_scope=[{"country": "DE"}])
    got = kf.read_table("ds", store)
    assert len(got) == 12 - 4 + 3
    with pytest.raises(kf.DatasetExistsError):
        df.karto.to_dataset(store, "ds")
    with pytest.raises(kf.InvalidInputError, match="accessor"):
        df.karto.to_dataset(store, "x", dfs=[df])
    with pytest.raises(TypeError):
        df.karto.to_dataset(store, "x", no_such_option=True)


def test_dask_accessor_computes_or_stays_lazy(store) -> None:
    with dask.config.set({"dataframe.convert-string": False}):
        ddf = dd.from_pandas(sales(12), npartitions=3)
    assert ddf.karto.to_dataset(store, "ds", partition_on=["country"], shuffle=True).uuid == "ds"
    assert len(kf.read_dataset_metadata("ds", store).partitions) == 3
    job = ddf.karto.update_dataset(store, "ds", compute=False)
    assert len(kf.read_table("ds", store)) == 12  # nothing happened yet
    job.compute()
    got = kf.read_table("ds", store)
    assert len(got) == 24
    expected = pd.concat([sales(12), sales(12)], ignore_index=True)
    assert canonical(got).equals(canonical(expected[got.columns]))


def test_to_cube_builds_a_cube(store) -> None:
    if not hasattr(kf, "Cube"):
        pytest.skip("no cube support in this build")
    seed = pd.DataFrame({"x": [1, 2, 3], "p": [0, 0, 1], "v": [1.0, 2.0, 3.0]})
    cube = kf.Cube(["x"], ["p"], uuid_prefix="acc")
    built = seed.karto.to_cube(cube, store)
    assert sorted(built) == ["seed"]
    with dask.config.set({"dataframe.convert-string": False}):
        ddf = dd.from_pandas(seed.assign(x=[4, 5, 6]), npartitions=2)
    cube2 = kf.Cube(["x"], ["p"], uuid_prefix="acc2")
    lazy = ddf.karto.to_cube(cube2, store, compute=False)
    assert sorted(lazy.compute()) == ["seed"]
    got = kf.query_cube(cube2, store)
    assert sorted(pd.concat(got)["x"]) == [4, 5, 6]


def test_to_cube_without_cube_support_says_so(monkeypatch) -> None:
    import kartoframe.api.accessor as accessor

    monkeypatch.setitem(sys.modules, "kartoframe.api.cube_write", None)
    with pytest.raises(NotImplementedError, match="no cube support"):
        accessor.KartoAccessor(sales(3)).to_cube(object(), "memory://x")


def test_accessor_registered_whatever_the_import_order() -> None:
    out = run_python(
        """
        import sys
        import kartoframe, pandas as pd
        assert "dask" not in sys.modules, "import kartoframe imported dask"
        assert hasattr(pd.DataFrame, "karto")
        import dask.dataframe as dd
        print(hasattr(dd.DataFrame, "karto"))
        """
    )
    assert out.strip() == "True"
    out = run_python(
        """
        import dask.dataframe as dd
        import kartoframe
        print(hasattr(dd.DataFrame, "karto"))
        """
    )
    assert out.strip() == "True"
    # kartoframe's own dask read is what first imports dask.dataframe (the dask engine
    # module was half-initialised when the hook ran, and .karto was silently never added)
    out = run_python(
        """
        import tempfile
        import pandas as pd
        import kartoframe as kf
        d = tempfile.mkdtemp()
        kf.store_dataframes_as_dataset(f"file://{d}", "ds", [pd.DataFrame({"x": [1, 2]})])
        ddf = kf.read_dataset_as_ddf("ds", f"file://{d}")
        print(hasattr(ddf, "karto"), type(ddf.karto).__name__)
        """
    )
    assert out.strip() == "True DaskKartoAccessor"
    # an availability check (find_spec, no import) before the real import
    out = run_python(
        """
        import importlib.util
        import kartoframe
        assert importlib.util.find_spec("dask.dataframe") is not None
        import dask.dataframe as dd
        print(hasattr(dd.DataFrame, "karto"))
        """
    )
    assert out.strip() == "True"


def test_import_kartoframe_without_dask() -> None:
    out = run_python(
        """
        import sys
        for name in ("dask", "dask.dataframe", "distributed"):
            sys.modules[name] = None  # any import of them raises ImportError
        import pandas as pd
        import kartoframe as kf
        pd.DataFrame({"a": [1]}).karto.to_dataset("memory://nodask", "ds")
        print(len(kf.read_table("ds", "memory://nodask")))
        for call in (
            lambda: kf.read_dataset_as_ddf("ds", "memory://nodask"),
            lambda: kf.store_dataset_from_ddf(None, "memory://nodask", "x"),
            lambda: kf.hash_dataset("memory://nodask", "ds"),
            lambda: kf.collect_dataset_metadata("memory://nodask", "ds"),
        ):
            try:
                call()
            except kf.MissingDependencyError as e:
                assert isinstance(e, ImportError)
                print(e)
        """
    )
    lines = out.strip().splitlines()
    assert lines[0] == "1"
    assert len(lines) == 5
    assert all("pip install 'kartoframe[dask]'" in line for line in lines[1:])
