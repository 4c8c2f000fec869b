"""kartoframe end-to-end benchmarks: write, full read, pruned read, header open, dask.

Sizes are small so that ``asv run --python=same --quick`` finishes in a couple of minutes;
``compare.py`` runs the full sizes against the peers. Every ``setup`` builds (once, cached
under ``bench-data/asv``) the dataset it needs and raises ``NotImplementedError`` (asv
reports the benchmark as skipped) while the kartoframe function it times does not exist.

Read benchmarks use a kartoframe-written dataset; while kartoframe's writer is missing they
fall back to the same data written by plateau (the format is the same).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd
import systems

from . import DATA_DIR

UUID = systems.UUID

WRITE_SPEC = systems.SalesSpec(rows=500_000, partitions=200)
READ_SPEC = systems.SalesSpec(rows=1_000_000, partitions=200)
PRUNED_SPEC = systems.SalesSpec(rows=200_000, partitions=2_000)
DASK_SPEC = systems.SalesSpec(rows=500_000, partitions=400)
HEADER_PARTITIONS = 20_000
GRAPH_PARTITIONS = 5_000

_TABLES: dict[systems.SalesSpec, pd.DataFrame] = {}
_WARMED: set[tuple[Any, ...]] = set()


def _quiet(_: str) -> None:
    """Progress sink for dataset builders (asv captures output anyway)."""


def _require(*names: str) -> None:
    """Raise ``NotImplementedError`` (asv: skipped) if a kartoframe function is missing."""
    for name in names:
        try:
            systems.kf_function(name)
        except systems.Unavailable as exc:
            raise NotImplementedError(str(exc)) from exc


def _kf(name: str) -> Any:
    return systems.kf_function(name)


def _warm_once(key: tuple[Any, ...], fn: Callable[[], Any]) -> None:
    """Run ``fn`` once per process, untimed (imports, page cache: the files about to be read).

    asv re-runs ``setup`` before every timed call and ``--quick`` times a single cold call, so
    without this the first call would measure module imports and disk reads.
    """
    if key not in _WARMED:
        fn()
        _WARMED.add(key)


def _table(spec: systems.SalesSpec) -> pd.DataFrame:
    """The generated table, memoised per process (setup runs before every timed call)."""
    if spec not in _TABLES:
        _TABLES[spec] = spec.table(DATA_DIR)
    return _TABLES[spec]


def _sales_root(spec: systems.SalesSpec) -> Path:
    """kartoframe-written dataset of ``spec`` (plateau-written while the writer is missing)."""
    try:
        return systems.sales_dataset("kartoframe", spec, DATA_DIR, _quiet)
    except systems.Unavailable as kf_exc:
        try:
            return systems.sales_dataset("plateau", spec, DATA_DIR, _quiet)
        except systems.Unavailable as exc:
            raise NotImplementedError(f"{kf_exc}; fallback: {exc}") from exc


def _header_root(partitions: int, fmt: str) -> Path:
    """Synthesised ``partitions``-partition header (real files by kartoframe, else plateau)."""
    spec = systems.HeaderSpec(partitions, fmt)
    try:
        return systems.header_dataset("kartoframe", spec, DATA_DIR, _quiet)
    except systems.Unavailable as kf_exc:
        try:
            return systems.header_dataset("plateau", spec, DATA_DIR, _quiet)
        except systems.Unavailable as exc:
            raise NotImplementedError(f"{kf_exc}; fallback: {exc}") from exc


class _Base:
    timer = time.perf_counter
    timeout = 900.0  # includes building the cached dataset on the first run
    number = 1


class Write(_Base):
    """``store_dataframes_as_dataset``: 500k rows, 200 partitions, index on product_id."""

    def setup(self) -> None:
        _require("store_dataframes_as_dataset")
        self.df = _table(WRITE_SPEC)
        self.target = DATA_DIR / f"tmp-write-{os.getpid()}"
        _warm_once(("write",), self._fresh_write)
        self._fresh_target()

    def _fresh_target(self) -> None:
        shutil.rmtree(self.target, ignore_errors=True)
        self.target.mkdir(parents=True)

    def _fresh_write(self) -> None:
        self._fresh_target()
        self._write()

    def teardown(self) -> None:
        shutil.rmtree(self.target, ignore_errors=True)

    def _write(self) -> None:
        _kf("store_dataframes_as_dataset")(
            store=str(self.target),
            dataset_uuid=UUID,
            dfs=[self.df],
            partition_on=systems.PARTITION_ON,
            secondary_indices=[systems.INDEX],
        )

    def time_write(self) -> None:
        self._write()

    def peakmem_write(self) -> None:
        self._write()


class FullRead(_Base):
    """``read_table`` of 1M rows in 200 partitions into pandas."""

    def setup(self) -> None:
        _require("read_table")
        self.root = str(_sales_root(READ_SPEC))
        _warm_once(("read",), self.time_read_table)

    def time_read_table(self) -> None:
        _kf("read_table")(UUID, self.root)

    def peakmem_read_table(self) -> None:
        _kf("read_table")(UUID, self.root)


class PrunedRead(_Base):
    """``read_table`` with ``product_id == x`` (index-pruned) on 2,000 partitions."""

    def setup(self) -> None:
        _require("read_table")
        self.root = str(_sales_root(PRUNED_SPEC))
        pid = systems.expected_stats(PRUNED_SPEC, DATA_DIR)["pruned_product_id"]
        self.predicates = [[(systems.INDEX, "==", int(pid))]]
        _warm_once(("pruned",), self.time_read_table_pruned)

    def time_read_table_pruned(self) -> None:
        _kf("read_table")(UUID, self.root, predicates=self.predicates)

    def peakmem_read_table_pruned(self) -> None:
        _kf("read_table")(UUID, self.root, predicates=self.predicates)


class HeaderOpen(_Base):
    """``read_dataset_metadata`` of a 20,000-partition header (JSON and msgpack+zstd)."""

    params: ClassVar[list[str]] = ["json", "msgpack"]
    param_names: ClassVar[list[str]] = ["format"]

    def setup(self, fmt: str) -> None:
        _require("read_dataset_metadata")
        self.root = str(_header_root(HEADER_PARTITIONS, fmt))
        _warm_once(("header", fmt), lambda: self.time_read_dataset_metadata(fmt))

    def time_read_dataset_metadata(self, fmt: str) -> None:
        _kf("read_dataset_metadata")(UUID, self.root)

    def peakmem_read_dataset_metadata(self, fmt: str) -> None:
        _kf("read_dataset_metadata")(UUID, self.root)


class DaskCompute(_Base):
    """``read_dataset_as_ddf(...).compute()`` with the threaded scheduler, 400 partitions."""

    def setup(self) -> None:
        _require("read_dataset_as_ddf")
        self.root = str(_sales_root(DASK_SPEC))
        _warm_once(("dask",), self._compute)

    def _compute(self) -> None:
        _kf("read_dataset_as_ddf")(UUID, self.root).compute(scheduler="threads")

    def time_ddf_compute(self) -> None:
        self._compute()

    def peakmem_ddf_compute(self) -> None:
        self._compute()


class GraphBuild(_Base):
    """``read_dataset_as_ddf`` plus graph materialisation for 5,000 partitions."""

    def setup(self) -> None:
        _require("read_dataset_as_ddf")
        self.root = str(_header_root(GRAPH_PARTITIONS, "json"))
        _warm_once(("graph",), self.time_graph_build)

    def time_graph_build(self) -> None:
        ddf = _kf("read_dataset_as_ddf")(UUID, self.root)
        ddf.__dask_graph__()
