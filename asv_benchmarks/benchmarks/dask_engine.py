"""dask engine benchmarks: compute vs ``dd.read_parquet`` and plateau, graph build, writes.

The ``time_*`` benchmarks are parametrised by system so asv tracks each one; the
``track_*`` benchmarks measure the ratio the targets are about *inside one process*,
alternating the systems (A B A B ...) and taking medians, as ``compare.py`` does:

* ``DaskCompute.track_speedup_vs_read_parquet``: target >= 1.5
  (``read_dataset_as_ddf(...).compute()`` vs ``dd.read_parquet`` on the same rows).
* ``DaskGraphBuild.track_speedup_vs_plateau``: target >= 10 (20,000 partitions).
* ``IteratorMemory.track_peak_over_largest_partition``: peak Arrow memory of an iterator
  pass over the largest partition's size (measured in a fresh interpreter).

Sizes: 1M rows in 400 partitions for compute (``compare.py --only dask`` runs 5M rows),
a 20,000-partition synthesised header for the graph.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import systems

from . import DATA_DIR, SUITE_DIR

UUID = systems.UUID
COMPUTE_SPEC = systems.SalesSpec(rows=1_000_000, partitions=400)
WRITE_SPEC = systems.SalesSpec(rows=500_000, partitions=200)
GRAPH_PARTITIONS = 20_000
ROUNDS = 5


def _quiet(_: str) -> None:
    """Progress sink for dataset builders."""


def _kf(name: str) -> Any:
    try:
        return systems.kf_function(name)
    except systems.Unavailable as exc:
        raise NotImplementedError(str(exc)) from exc


def _threads() -> Any:
    import dask

    return dask.config.set(scheduler="threads")


def _alternate(ops: dict[str, Callable[[], Any]], rounds: int = ROUNDS) -> dict[str, float]:
    """Run ``ops`` alternately (one untimed warm-up round); median seconds per op."""
    times: dict[str, list[float]] = {name: [] for name in ops}
    for rnd in range(rounds + 1):
        for name, op in ops.items():
            t0 = time.perf_counter()
            op()
            if rnd:
                times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(ts) for name, ts in times.items()}


class _Base:
    timer = time.perf_counter
    timeout = 1800.0  # includes building the cached datasets on the first run
    number = 1


def _compute_ops() -> dict[str, Callable[[], Any]]:
    """``system -> compute()`` over the same 1M rows written by each system."""
    import dask.dataframe as dd

    kf_root = systems.sales_dataset("kartoframe", COMPUTE_SPEC, DATA_DIR, _quiet)
    pa_root = systems.sales_dataset("pyarrow", COMPUTE_SPEC, DATA_DIR, _quiet)
    ops: dict[str, Callable[[], Any]] = {
        "kartoframe": lambda: _kf("read_dataset_as_ddf")(UUID, str(kf_root)).compute(),
        "dd.read_parquet": lambda: dd.read_parquet(str(pa_root)).compute(),
    }
    try:
        pl_root = systems.sales_dataset("plateau", COMPUTE_SPEC, DATA_DIR, _quiet)
        plateau = systems.Plateau()
        ops["plateau"] = lambda: plateau.ddf(pl_root).compute()
    except (systems.Unavailable, ImportError):
        pass
    return ops


class DaskCompute(_Base):
    """``read_dataset_as_ddf(...).compute()`` (threads), 1M rows, 400 partitions, vs peers."""

    params: ClassVar[list[str]] = ["kartoframe", "dd.read_parquet", "plateau"]
    param_names: ClassVar[list[str]] = ["system"]

    def setup(self, system: str) -> None:
        _kf("read_dataset_as_ddf")
        ops = _compute_ops()
        if system not in ops:
            raise NotImplementedError(f"{system} is not available")
        self.op = ops[system]
        with _threads():
            self.op()  # warm-up: imports and page cache

    def time_compute(self, system: str) -> None:
        with _threads():
            self.op()


class DaskComputeRatio(_Base):
    """kartoframe's compute throughput over ``dd.read_parquet``'s (target >= 1.5)."""

    unit = "x"

    def setup(self) -> None:
        _kf("read_dataset_as_ddf")
        self.ops = _compute_ops()

    def track_speedup_vs_read_parquet(self) -> float:
        with _threads():
            med = _alternate({k: self.ops[k] for k in ("kartoframe", "dd.read_parquet")})
        return med["dd.read_parquet"] / med["kartoframe"]

    def track_speedup_vs_plateau(self) -> float:
        if "plateau" not in self.ops:
            raise NotImplementedError("plateau is not available")
        with _threads():
            med = _alternate({k: self.ops[k] for k in ("kartoframe", "plateau")})
        return med["plateau"] / med["kartoframe"]


def _graph_root() -> Path:
    spec = systems.HeaderSpec(GRAPH_PARTITIONS, "json")
    try:
        return systems.header_dataset("plateau", spec, DATA_DIR, _quiet)
    except systems.Unavailable:
        return systems.header_dataset("kartoframe", spec, DATA_DIR, _quiet)


def _graph_ops(root: Path) -> dict[str, Callable[[], Any]]:
    """``system -> build the ddf and materialise its graph`` for the same header."""

    def kartoframe() -> int:
        ddf = _kf("read_dataset_as_ddf")(UUID, str(root))
        return len(ddf.__dask_graph__())

    ops: dict[str, Callable[[], Any]] = {"kartoframe": kartoframe}
    try:
        plateau = systems.Plateau()
        plateau._api()

        def plateau_graph() -> int:
            return len(plateau.ddf(root).__dask_graph__())

        ops["plateau"] = plateau_graph
    except systems.Unavailable:
        pass
    return ops


class DaskGraphBuild(_Base):
    """``read_dataset_as_ddf`` + graph materialisation, 20,000 partitions, vs plateau."""

    params: ClassVar[list[str]] = ["kartoframe", "plateau"]
    param_names: ClassVar[list[str]] = ["system"]

    def setup(self, system: str) -> None:
        _kf("read_dataset_as_ddf")
        ops = _graph_ops(_graph_root())
        if system not in ops:
            raise NotImplementedError(f"{system} is not available")
        self.op = ops[system]
        assert self.op() == GRAPH_PARTITIONS

    def time_graph_build(self, system: str) -> None:
        self.op()


class DaskGraphRatio(_Base):
    """plateau's graph build time over kartoframe's (target >= 10)."""

    unit = "x"

    def setup(self) -> None:
        _kf("read_dataset_as_ddf")
        self.ops = _graph_ops(_graph_root())
        if "plateau" not in self.ops:
            raise NotImplementedError("plateau is not available")

    def track_speedup_vs_plateau(self) -> float:
        med = _alternate(self.ops, rounds=3)
        return med["plateau"] / med["kartoframe"]


class DaskWrite(_Base):
    """``store_dataset_from_ddf``: 500k rows from 8 dask partitions, partitioned + indexed."""

    params: ClassVar[list[bool]] = [False, True]
    param_names: ClassVar[list[str]] = ["shuffle"]

    def setup(self, shuffle: bool) -> None:
        import dask
        import dask.dataframe as dd

        _kf("store_dataset_from_ddf")
        df = WRITE_SPEC.table(DATA_DIR)
        with dask.config.set({"dataframe.convert-string": False}):
            self.ddf = dd.from_pandas(df, npartitions=8)
        self.target = DATA_DIR / f"tmp-dask-write-{os.getpid()}"

    def teardown(self, shuffle: bool) -> None:
        shutil.rmtree(self.target, ignore_errors=True)

    def time_store_dataset_from_ddf(self, shuffle: bool) -> None:
        shutil.rmtree(self.target, ignore_errors=True)
        self.target.mkdir(parents=True)
        job = _kf("store_dataset_from_ddf")(
            self.ddf,
            str(self.target),
            UUID,
            partition_on=systems.PARTITION_ON,
            secondary_indices=[systems.INDEX],
            shuffle=shuffle,
        )
        job.compute(scheduler="threads")


_MEMORY_SCRIPT = """
import gc, json, sys
import pyarrow as pa
sys.path.insert(0, sys.argv[2])
import systems
systems.use_checkout_kartoframe()
import kartoframe as kf
root = sys.argv[1]
kf.read_table(systems.UUID, root, columns=["revenue"], predicates=[[("revenue", "<", -1.0)]])
gc.collect()
largest = 0
for df in kf.read_dataset_as_dataframes__iterator(systems.UUID, root):
    largest = max(largest, int(df.memory_usage(deep=True).sum()))
    del df
print(json.dumps({"peak": pa.default_memory_pool().max_memory(), "largest": largest}))
"""


class IteratorMemory(_Base):
    """Peak memory of ``read_dataset_as_dataframes__iterator`` over 1M rows / 400 files."""

    unit = "x"

    def setup(self) -> None:
        _kf("read_dataset_as_dataframes__iterator")
        self.root = systems.sales_dataset("kartoframe", COMPUTE_SPEC, DATA_DIR, _quiet)

    def track_peak_over_largest_partition(self) -> float:
        out = subprocess.run(
            [sys.executable, "-c", _MEMORY_SCRIPT, str(self.root), str(SUITE_DIR)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        m = json.loads(out)
        return float(m["peak"]) / float(m["largest"])

    def peakmem_iterator_read(self) -> None:
        for df in _kf("read_dataset_as_dataframes__iterator")(UUID, str(self.root)):
            del df
