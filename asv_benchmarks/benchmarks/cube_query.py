"""kartoframe cube benchmarks: queries (eager and dask), planning, and a cube build.

The cube is the one of ``cube_compare.py`` at a smaller size (400,000 cells, 50
partitions): a seed with an index column, a 60 %-coverage enrich dataset and a
lower-dimensional dataset. It is built once (cached under ``bench-data/asv``).
``cube_compare.py`` runs the full size against kartothek 5.3.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pandas as pd

from . import DATA_DIR, SUITE_DIR

NX, NY = 8000, 50
CUBE_DIR = DATA_DIR / f"cube-{NX}x{NY}"


def _compare() -> Any:
    import sys

    if str(SUITE_DIR) not in sys.path:
        sys.path.insert(0, str(SUITE_DIR))
    import cube_compare

    return cube_compare


def _store() -> tuple[Any, Any]:
    import kartoframe as kf

    cc = _compare()
    inputs, store_dir = CUBE_DIR / "input", CUBE_DIR / "kartoframe-store"
    if not (inputs / "lowdim.parquet").exists():
        cc.generate(inputs, NX, NY)
    if not (store_dir / "bench++seed.by-dataset-metadata.json").exists():
        cc.kf_build(inputs, store_dir)
    return kf.Store(f"file://{store_dir}"), kf.Cube(uuid_prefix="bench", **cc.CUBE)


class CubeQuery:
    """Eager ``query_cube`` on the four query shapes of the kartothek comparison."""

    params: ClassVar[list[str]] = ["full", "enrich_condition", "projection", "index_partition_by"]
    param_names: ClassVar[list[str]] = ["query"]
    timeout = 300

    def setup(self, query: str) -> None:
        import kartoframe as kf

        self.store, self.cube = _store()
        spec = _compare().QUERIES[query][1]
        conds = [
            {"==": kf.C(c) == v, ">": kf.C(c) > v}[op] for c, op, v in spec.get("conditions", [])
        ]
        self.kw = {
            "conditions": conds or None,
            "dimension_columns": spec.get("dimension_columns"),
            "partition_by": spec.get("partition_by"),
            "payload_columns": spec.get("payload_columns"),
        }
        # warm (untimed): imports, page cache, dask's first graph
        kf.query_cube(self.cube, self.store, **self.kw)
        kf.query_cube_dataframe(self.cube, self.store, **self.kw).compute(scheduler="threads")

    def time_query_cube(self, query: str) -> None:
        import kartoframe as kf

        kf.query_cube(self.cube, self.store, **self.kw)

    def time_query_cube_dataframe(self, query: str) -> None:
        import kartoframe as kf

        kf.query_cube_dataframe(self.cube, self.store, **self.kw).compute(scheduler="threads")

    def time_plan(self, query: str) -> None:
        from kartoframe.front.cube_query import plan_cube_query

        plan_cube_query(self.cube, self.store, **self.kw)


class CubeBuild:
    """Eager ``build_cube`` of the seed and the enrich dataset (validation included)."""

    timeout = 300

    def setup(self) -> None:
        _store()
        inputs = CUBE_DIR / "input"
        self.seed = pd.read_parquet(inputs / "seed.parquet")
        self.enrich = pd.read_parquet(inputs / "enrich.parquet")
        self.n = 0

    def time_build_cube(self) -> None:
        import kartoframe as kf

        self.n += 1
        target = Path(CUBE_DIR / "build-target")
        store = kf.Store(f"file://{target}")
        cube = kf.Cube(uuid_prefix=f"b{self.n}", **_compare().CUBE)
        kf.build_cube({"seed": self.seed, "enrich": self.enrich}, cube, store)
        kf.delete_cube(cube, store)
