"""Data skipping with per-file statistics (10,000 partitions clustered on ``id``/``ts``).

``params`` compares the dataset with statistics and its twin without (same files, header
without the statistics reference; built by ``stats_compare.build``, cached under
``bench-data/asv``). ``stats_compare.py`` runs the same scenarios as a report with ratios.
"""

from __future__ import annotations

import shutil
import time
from typing import ClassVar

import numpy as np
import pandas as pd
import stats_compare

from . import DATA_DIR

PARTITIONS = 10_000
ROWS_PER_FILE = 100
UUIDS = {"with": stats_compare.WITH, "without": stats_compare.WITHOUT}
_LO = (PARTITIONS // 3) * ROWS_PER_FILE
_HI = _LO + (PARTITIONS // 200) * ROWS_PER_FILE  # 0.5 % of the files
SELECTIVE = [[("id", ">=", _LO), ("id", "<", _HI)]]
NON_SELECTIVE = [[("value", ">=", 0.0)]]


def _root() -> str:
    return str(stats_compare.build(DATA_DIR / "stats", PARTITIONS, ROWS_PER_FILE, lambda _: None))


class _Base:
    timer = time.perf_counter
    timeout = 900.0  # includes building the cached datasets on the first run
    number = 1
    params: ClassVar[list[str]] = ["with", "without"]
    param_names: ClassVar[list[str]] = ["statistics"]

    def setup(self, which: str) -> None:
        import kartoframe as kf

        self.kf = kf
        self.root = _root()
        self.uuid = UUIDS[which]


class SelectiveRead(_Base):
    """``read_table`` with a 0.5 %-selective range on the clustered ``id`` column."""

    def time_read_selective(self, which: str) -> None:
        self.kf.read_table(self.uuid, self.root, predicates=SELECTIVE)


class NonSelectiveRead(_Base):
    """``read_table`` with a predicate the statistics cannot prune (every file is read)."""

    def time_read_non_selective(self, which: str) -> None:
        self.kf.read_table(self.uuid, self.root, predicates=NON_SELECTIVE)


class Planning(_Base):
    """``plan_read`` alone: header, statistics file (if any) and skipping."""

    def time_plan_selective(self, which: str) -> None:
        from kartoframe.api.read import plan_read

        plan_read(self.uuid, self.root, predicates=SELECTIVE)

    def time_plan_non_selective(self, which: str) -> None:
        from kartoframe.api.read import plan_read

        plan_read(self.uuid, self.root, predicates=NON_SELECTIVE)


class WriteOverhead:
    """``write_chunk`` of 500k rows into 200 files, with and without statistics."""

    timer = time.perf_counter
    number = 1
    params: ClassVar[list[bool]] = [True, False]
    param_names: ClassVar[list[str]] = ["statistics"]

    def setup(self, statistics: bool) -> None:
        import kartoframe as kf

        rng = np.random.default_rng(0)
        n = 500_000
        self.df = pd.DataFrame(
            {
                "p": rng.integers(0, 200, n),
                "id": np.arange(n),
                "value": rng.random(n),
                "name": pd.array([f"n{v}" for v in rng.integers(0, 10**6, n)], dtype="str"),
                "category": pd.array(rng.choice(["a", "b", "c"], n), dtype="str"),
            }
        )
        self.target = DATA_DIR / "tmp-stats-write"
        shutil.rmtree(self.target, ignore_errors=True)
        self.store = kf.Store(str(self.target))

    def teardown(self, statistics: bool) -> None:
        shutil.rmtree(self.target, ignore_errors=True)

    def time_write_chunk(self, statistics: bool) -> None:
        from kartoframe.execution.write import write_chunk

        write_chunk(self.store, "w", self.df, partition_on=["p"], statistics=statistics)
