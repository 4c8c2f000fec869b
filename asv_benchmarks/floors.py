"""Where the time of issue 19's unmet lines goes: each one split into its parts, beside
the peer's, in one process.

The lines are compare.py's (same data, same calls): the write with index, statistics and
header against pyarrow's ``write_dataset``; the full read and the 3-column range read
against ``pyarrow.dataset``; the equality read through the index against plateau. For
each, the parts kartoframe shares with the peer (the same Arrow decoder or encoder on
the same bytes) are timed apart from the work only kartoframe does (statistics, index,
commit, the casts its format asks for), and the equality read's kept files are read the
cheapest way pyarrow offers, one ``ParquetFile.read`` each (on one thread, and split
over threads as kartoframe's scan splits them), as the floor of any reader of them.
Rounds alternate the variants; medians after one warm-up round. The write's variants
also print their CPU time (user and system, all threads) and the cores they kept busy:
on two cores a write cannot take less than half its CPU time.

    .venv/bin/python asv_benchmarks/floors.py                 # all four lines
    .venv/bin/python asv_benchmarks/floors.py --only write,read --repeat 7
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import systems  # noqa: E402

systems.use_checkout_kartoframe()

import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
import pyarrow.dataset as ds  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

import kartoframe as kf  # noqa: E402
import kartoframe.api.read as api_read  # noqa: E402
import kartoframe.storage.local_scan as kf_local_scan  # noqa: E402
from kartoframe.execution.chunks import write_chunk  # noqa: E402

LINES = ("write", "read", "range", "equality")


class Stages:
    """Times of ``read_table``'s scan and pandas conversion (the rest is planning)."""

    def __init__(self) -> None:
        self.last: dict[str, float] = {}
        scan, frame = api_read.read_plan_table, api_read.to_frame

        def timed_scan(*a: Any, **k: Any) -> Any:
            t = time.perf_counter()
            out = scan(*a, **k)
            self.last["scan"] = time.perf_counter() - t
            return out

        def timed_frame(*a: Any, **k: Any) -> Any:
            t = time.perf_counter()
            out = frame(*a, **k)
            self.last["to pandas"] = time.perf_counter() - t
            return out

        api_read.read_plan_table = timed_scan  # type: ignore[assignment]
        api_read.to_frame = timed_frame  # type: ignore[assignment]

    def read(self, fn: Callable[[], Any]) -> dict[str, float]:
        self.last = {}
        t = time.perf_counter()
        fn()
        total = time.perf_counter() - t
        parts = dict(self.last)
        parts["planning and the rest"] = total - sum(parts.values())
        parts["total"] = total
        return parts


def _rounds(variants: dict[str, Callable[[], dict[str, float]]], repeat: int) -> None:
    """Run the variants alternately (one warm-up round) and print the median parts."""
    times: dict[str, list[dict[str, float]]] = {k: [] for k in variants}
    for r in range(repeat + 1):
        for name, fn in variants.items():
            parts = fn()
            if r:
                times[name].append(parts)
    ref = statistics.median(p["total"] for p in times[list(variants)[-1]])
    for name, runs in times.items():
        keys = list(runs[0])
        med = {k: statistics.median(p[k] for p in runs) for k in keys}
        detail = ", ".join(
            f"{k} {med[k]:.2f}" if k == "cores" else f"{k} {med[k] * 1000:.1f} ms"
            for k in keys
            if k != "total"
        )
        print(f"  {name:44s} {med['total'] * 1000:8.1f} ms  {med['total'] / ref:6.3f}x  {detail}")


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _total(fn: Callable[[], Any]) -> dict[str, float]:
    """Wall time, CPU time (user and system, all threads) and cores busy of ``fn()``."""
    c, t = _cpu(), time.perf_counter()
    fn()
    wall, cpu = time.perf_counter() - t, _cpu() - c
    return {"cpu": cpu, "cores": cpu / wall, "total": wall}


def _pyarrow_read(
    root: Path, columns: list[str] | None = None, filter: pc.Expression | None = None
) -> dict[str, float]:
    """compare.py's pyarrow.dataset read of ``root`` (hive folders), timed in its parts."""
    t0 = time.perf_counter()
    dataset = ds.dataset(str(root), format="parquet", partitioning="hive")
    t1 = time.perf_counter()
    table = dataset.to_table(columns=columns, filter=filter)
    t2 = time.perf_counter()
    table.to_pandas()
    t3 = time.perf_counter()
    return {"discovery": t1 - t0, "scan": t2 - t1, "to pandas": t3 - t2, "total": t3 - t0}


def line_write(data_dir: Path, spec: Any, repeat: int) -> None:
    df = spec.table(data_dir)
    po = systems.PARTITION_ON
    tmp = Path(tempfile.mkdtemp(dir=data_dir))
    n = iter(range(10**6))

    def fresh() -> str:
        return str(tmp / f"w{next(n)}")

    def chunk(index: bool, stats: bool) -> Callable[[], dict[str, float]]:
        idx = (systems.INDEX,) if index else ()
        return lambda: _total(
            lambda: write_chunk(
                kf.Store(f"file://{fresh()}"),
                "sales",
                df,
                partition_on=po,
                index_columns=idx,
                statistics=stats,
            )
        )

    def pyarrow() -> None:
        systems.PyArrowDataset().write(df, Path(fresh()))

    print(f"write: {len(df):,} rows, {spec.partitions} partitions (ratio: to pyarrow)")
    try:
        _rounds(
            {
                "kartoframe store_dataframes_as_dataset": lambda: _total(
                    lambda: systems.Kartoframe().write(df, Path(fresh()))
                ),
                "kartoframe files only (no stats, index, commit)": chunk(False, False),
                "kartoframe files + statistics": chunk(False, True),
                "kartoframe files + index pairs": chunk(True, False),
                "kartoframe files + statistics + index pairs": chunk(True, True),
                "pyarrow write_dataset": lambda: _total(pyarrow),
            },
            repeat,
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def line_read(data_dir: Path, spec: Any, repeat: int, stages: Stages) -> None:
    kroot = systems.sales_dataset("kartoframe", spec, data_dir)
    proot = systems.sales_dataset("pyarrow", spec, data_dir)
    ktable = kroot / systems.UUID / "table"

    print(f"full read: {spec.rows:,} rows (ratio: to pyarrow.dataset on its own files)")
    _rounds(
        {
            "kartoframe read_table": lambda: stages.read(
                lambda: kf.read_table(systems.UUID, str(kroot))
            ),
            # the same folders (key=value, as Kartothek lays them out), read as pyarrow reads
            # its own: the file types (int32, int16, µs) kept, no cast
            "pyarrow.dataset on kartoframe's files": lambda: _pyarrow_read(ktable),
            "pyarrow.dataset (hive, its own files)": lambda: _pyarrow_read(proot),
        },
        repeat,
    )


def line_range(data_dir: Path, spec: Any, repeat: int, stages: Stages) -> None:
    import compare

    exp = compare.range_expectation(systems, spec, data_dir)
    q = compare.RangeQuery(exp["month"], exp["price_lo"], exp["price_hi"])
    kroot = systems.sales_dataset("kartoframe", spec, data_dir)
    proot = systems.sales_dataset("pyarrow", spec, data_dir)
    cols = list(compare.RANGE_COLUMNS)
    expr = (
        (pc.field("month") >= q.month)
        & (pc.field("price") >= q.price_lo)
        & (pc.field("price") < q.price_hi)
    )

    print(f"range read: {exp['rows']:,} of {spec.rows:,} rows (ratio: to pyarrow.dataset)")
    _rounds(
        {
            "kartoframe read_table": lambda: stages.read(
                lambda: kf.read_table(
                    systems.UUID, str(kroot), columns=cols, predicates=q.predicates()
                )
            ),
            # the same bytes kartoframe scans, read as pyarrow reads its own (no casts)
            "pyarrow.dataset on kartoframe's files": lambda: _pyarrow_read(
                kroot / systems.UUID / "table", cols, expr
            ),
            "pyarrow.dataset": lambda: _pyarrow_read(proot, cols, expr),
        },
        repeat,
    )


def line_equality(data_dir: Path, spec: Any, repeat: int, stages: Stages) -> None:
    from kartoframe.api.read import plan_read

    exp = systems.expected_stats(spec, data_dir)
    pid = int(exp["pruned_product_id"])
    predicates = [[(systems.INDEX, "==", pid)]]
    kroot = systems.sales_dataset("kartoframe", spec, data_dir)
    proot = systems.sales_dataset("plateau", spec, data_dir)
    plan, store = plan_read(systems.UUID, str(kroot), predicates=predicates)
    paths = [store.path(f.key) for t in plan.tasks for f in t.files]

    def files_read(part: Sequence[str] = paths) -> None:
        for p in part:
            pq.ParquetFile(p, pre_buffer=False).read(use_threads=False)

    threads = kf_local_scan.READ_THREADS
    step = -(-len(paths) // threads)
    halves = [paths[i : i + step] for i in range(0, len(paths), step)]

    def files_read_threads() -> None:
        # as kartoframe's scan splits them: consecutive runs, one thread each
        with ThreadPoolExecutor(len(halves)) as pool:
            list(pool.map(files_read, halves))

    print(
        f"equality read: product_id == {pid}, {len(paths)} of {spec.partitions:,} files "
        "(ratio: to plateau)"
    )
    plateau = systems.Plateau()
    _rounds(
        {
            "kartoframe read_table": lambda: stages.read(
                lambda: kf.read_table(systems.UUID, str(kroot), predicates=predicates)
            ),
            f"ParquetFile.read of the {len(paths)} files alone": lambda: _total(files_read),
            f"the same on {len(halves)} threads": lambda: _total(files_read_threads),
            "plateau read_table": lambda: _total(lambda: plateau.read_pruned(proot, pid)),
        },
        repeat,
    )


def _hygiene(argv: Sequence[str]) -> None:
    """Re-execute with compare.py's allocator settings (they are read at start-up)."""
    import compare

    missing = {k: v for k, v in compare.HYGIENE_ENV.items() if k not in os.environ}
    if missing and not os.environ.get("_KARTOFRAME_FLOORS_REEXEC"):
        env = {**os.environ, **missing, "_KARTOFRAME_FLOORS_REEXEC": "1"}
        sys.stdout.flush()
        os.execve(sys.executable, [sys.executable, str(Path(__file__).resolve()), *argv], env)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    _hygiene(argv)
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", default=",".join(LINES), help=f"out of {','.join(LINES)}")
    p.add_argument("--repeat", type=int, default=5, help="timed rounds [5]")
    p.add_argument("--data-dir", type=Path, default=systems.REPO / "bench-data")
    a = p.parse_args(argv)
    only = [x for x in a.only.split(",") if x]
    unknown = set(only) - set(LINES)
    if unknown:
        p.error(f"unknown lines: {sorted(unknown)}")
    sales = systems.SalesSpec(5_000_000, 200, 0, 50_000)
    pruned = systems.SalesSpec(1_000_000, 10_000, 0)
    stages = Stages()
    print(f"kartoframe {kf.__version__} from {Path(kf.__file__).parent}, pyarrow {pa.__version__}")
    for line in only:
        if line == "write":
            line_write(a.data_dir, sales, a.repeat)
        elif line == "read":
            line_read(a.data_dir, sales, a.repeat, stages)
        elif line == "range":
            line_range(a.data_dir, sales, a.repeat, stages)
        else:
            line_equality(a.data_dir, pruned, a.repeat, stages)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
