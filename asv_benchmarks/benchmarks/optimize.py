"""Table maintenance: ``optimize_dataset`` on a small version of the small-files scenario.

60 daily appends of 2,000 rows into a dataset partitioned by 5 regions (300 small files),
built once by ``optimize_compare.build`` (cached under ``bench-data/asv/optimize``; it also
writes the deltalake twin, which only ``optimize_compare.py`` times). ``setup`` re-runs
before every timed call (asv_runner) and copies the appended table afresh, so every call
optimizes the same 300 files. ``optimize_compare.py`` runs the full size (365 x 10,000 rows,
20 regions) against deltalake, with the targets.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import ClassVar

import optimize_compare as oc

from . import DATA_DIR

SPEC = oc.Spec(days=60, rows_per_day=2_000, partitions=5)
#: parameter -> the keywords of ``optimize_dataset``
MODES: dict[str, dict[str, object]] = {
    "compact": {},
    "sort_by": {"sort_by": [oc.SORT_COLUMN]},
    "zorder": {"sort_by": list(oc.ZORDER_COLUMNS), "sort_method": "zorder"},
}
SELECTIVE = [[(oc.SORT_COLUMN, ">=", oc.SELECTIVE_LO), (oc.SORT_COLUMN, "<", oc.SELECTIVE_HI)]]


def _base() -> Path:
    """The appended kartoframe table (built once)."""
    root = DATA_DIR / "optimize" / SPEC.key
    oc.build(SPEC, root, lambda _: None)
    return root / "base" / "kartoframe"


class _Fresh:
    """A fresh copy of the appended table before every call."""

    timer = time.perf_counter
    number = 1
    warmup_time = 0.0
    timeout = 600.0  # includes building the cached tables on the first run
    work = DATA_DIR / "tmp-optimize"

    def setup(self, *_: object) -> None:
        import kartoframe as kf

        self.kf = kf
        oc.copy_table(_base(), self.work)
        self.store = str(self.work)

    def teardown(self, *_: object) -> None:
        shutil.rmtree(self.work, ignore_errors=True)


class Optimize(_Fresh):
    """``optimize_dataset`` of 300 small files: compaction, linear sort, z-order."""

    params: ClassVar[list[str]] = list(MODES)
    param_names: ClassVar[list[str]] = ["mode"]

    def time_optimize(self, mode: str) -> None:
        self.kf.optimize_dataset(oc.UUID, self.store, **MODES[mode])  # type: ignore[arg-type]

    def peakmem_optimize(self, mode: str) -> None:
        self.kf.optimize_dataset(oc.UUID, self.store, **MODES[mode])  # type: ignore[arg-type]


class OptimizeAgain(_Fresh):
    """A second ``optimize_dataset`` right after the first: incremental, nothing to do."""

    def setup(self, *_: object) -> None:
        super().setup()
        self.kf.optimize_dataset(oc.UUID, self.store)

    def time_optimize_again(self) -> None:
        self.kf.optimize_dataset(oc.UUID, self.store)


class ReadAfterOptimize(_Fresh):
    """Full and selective reads of the appended table and of its optimized copy."""

    params: ClassVar[list[str]] = ["appended", "compact", "sort_by"]
    param_names: ClassVar[list[str]] = ["table"]

    def setup(self, *params: object) -> None:
        super().setup()
        table = str(params[0])
        if table != "appended":
            self.kf.optimize_dataset(oc.UUID, self.store, **MODES[table])  # type: ignore[arg-type]
        self.kf.read_table(oc.UUID, self.store)  # page cache and imports, untimed

    def time_read_full(self, table: str) -> None:
        self.kf.read_table(oc.UUID, self.store)

    def time_read_selective(self, table: str) -> None:
        self.kf.read_table(oc.UUID, self.store, predicates=SELECTIVE)
