"""Writes at scale: peak memory of an eager write against its input, and the cost per partition.

The scale issue's "bounded memory" goals, each system in fresh processes with its default
arguments (the allocator variables of ``compare.py``'s hygiene removed: a user's process
has none):

``rows``
    The sales table of ``compare.py`` (10 columns, 20 partitions by country and month, or
    ``--rows-partitions``) at ``--rows`` rows, written by kartoframe
    (``store_dataframes_as_dataset`` with the secondary index on ``product_id``, as in
    ``compare.py``), deltalake (``write_deltalake(..., partition_by=...)``) and pyarrow
    (``pyarrow.dataset.write_dataset``, hive). The input
    DataFrame is loaded and a tiny write warms the system up; the allocators give back what
    loading freed, the RSS high-water mark is reset and the write timed. Reported: seconds,
    the RSS growth during the write, and the *peak*: the process's RSS high-water mark over
    its RSS after the imports (before the input was loaded), so it counts the input itself,
    against the input's in-memory size (``DataFrame.memory_usage(deep=True)``). Goal:
    kartoframe's peak <= 2x the input (the input plus at most one input's worth for the
    write). The growth alone under-counts where the write reuses pages the load freed.
``partitions``
    A frame of ``N`` partitions of 4 rows (an integer partition column, an int64 and a
    float64 column) written with ``partition_on`` / ``partition_by`` / hive partitioning, no
    index. Reported: milliseconds per partition. Goal: kartoframe's cost per partition no
    worse than deltalake's (ratio <= 1.0).

``dask``
    The sales table of ``compare.py`` (200 partitions by country and month) at ``--rows``
    rows, made lazily in dask partitions of :data:`DASK_CHUNK_ROWS` rows (``dd.from_map``,
    one seed each) and written with the threaded scheduler by kartoframe
    (``store_dataset_from_ddf``, ``partition_on`` and the secondary index on
    ``product_id``) and by dask's ``to_parquet`` (pyarrow, ``partition_on``): no input
    frame is ever whole in memory, so the peak is what the write itself holds. deltalake
    has no dask writer. Goal: kartoframe's peak (over the imports) <= :data:`DASK_GOAL`
    x ``to_parquet``'s, at every size: a flat peak, although the index is an output
    that grows with the rows (one entry per value and file).

``distributed``
    The ``dask`` mode's frame and writes on a ``distributed`` ``LocalCluster`` of
    :data:`CLUSTER_WORKERS` worker processes with one thread each (what a user's cluster
    does: every task's result is pickled to the worker that runs the next task, the commit
    runs on one of them). Reported: the largest worker's RSS high-water mark over its RSS
    after the imports, and the time. Goal: kartoframe's <= :data:`DASK_GOAL` x
    ``to_parquet``'s, at every size.

The processes alternate between systems, ``--repeat`` times each; the figures are medians.
The timed writes go under ``--data-dir`` unless ``--write-dir`` names another folder.
On the benchmark VM, creating a folder or a file in ``bench-data/`` costs the kernel's ext4
inode search 0.4-0.7 ms, and more after every run that deleted thousands of them
(``docs/benchmarks.md``), so the ``partitions`` line there measures the file system as
much as the writers; ``--write-dir /dev/shm`` (tmpfs) adds the same line without it.
The script prints the goal lines and exits 1 when one is missed.

Run it with::

    .venv/bin/python asv_benchmarks/scale_write.py --data-dir bench-data --repeat 3
    .venv/bin/python asv_benchmarks/scale_write.py --only partitions --partitions 100000 --repeat 1
    .venv/bin/python asv_benchmarks/scale_write.py --only partitions --write-dir /dev/shm
    .venv/bin/python asv_benchmarks/scale_write.py --only dask --rows 10000000,30000000,60000000
    .venv/bin/python asv_benchmarks/scale_write.py --only distributed --rows 30000000
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import systems  # noqa: E402

#: the goals: kartoframe's peak RSS (input included) over the input, and its time per partition over
#: deltalake's
MEMORY_GOAL = 2.0
PARTITION_GOAL = 1.0
SYSTEMS = ("kartoframe", "deltalake", "pyarrow")
DASK_SYSTEMS = ("kartoframe", "to_parquet")
ROWS_PER_PARTITION = 4
#: rows per dask partition of the ``dask`` mode, and its goal: kartoframe's peak over
#: ``to_parquet``'s
DASK_CHUNK_ROWS = 500_000
DASK_GOAL = 1.25
DASK_PARTITIONS = 200  # the sales table's default grid: 25 countries x 8 months
#: worker processes of the ``distributed`` mode's LocalCluster (one thread each)
CLUSTER_WORKERS = 2
#: the modes that write a lazy dask frame (input: one dask partition; peer: to_parquet)
DASK_MODES = ("dask", "distributed")


def lazy_sales_frame(rows: int, chunk_rows: int = DASK_CHUNK_ROWS) -> Any:
    """The sales table as a dask DataFrame of ``rows // chunk_rows`` lazily made partitions."""
    import dask.dataframe as dd
    import datagen

    n = max(1, rows // chunk_rows)
    size = min(rows, chunk_rows)
    meta = datagen.sales_table(size).head(0)
    return dd.from_map(datagen.sales_table, [size] * n, list(range(n)), meta=meta)


def _write_ddf(system: str, ddf: Any, root: Path, scheduler: str | None = "threads") -> None:
    """Write ``ddf`` partitioned by country and month (kartoframe: and the index); the
    scheduler None: the default one (a ``distributed`` client's, when there is one)."""
    import contextlib

    import dask

    with dask.config.set(scheduler=scheduler) if scheduler else contextlib.nullcontext():
        if system == "kartoframe":
            systems.kf_call(  # a Delayed, like plateau's: computed here
                "store_dataset_from_ddf",
                ddf,
                store=str(root),
                dataset_uuid="ds",
                partition_on=["country", "month"],
                secondary_indices=["product_id"],
            ).compute()
        else:
            ddf.to_parquet(str(root), partition_on=["country", "month"], write_index=False)


def many_partitions_frame(partitions: int) -> Any:
    """``partitions`` partitions (column ``part``) of :data:`ROWS_PER_PARTITION` rows."""
    import numpy as np
    import pandas as pd

    rows = partitions * ROWS_PER_PARTITION
    return pd.DataFrame(
        {
            "part": np.repeat(np.arange(partitions, dtype="int64"), ROWS_PER_PARTITION),
            "x": np.arange(rows, dtype="int64"),
            "y": np.random.default_rng(0).random(rows),
        }
    )


def _write_partitions(system: str, df: Any, root: Path) -> None:
    """Write ``df`` partitioned by ``part`` with ``system``'s defaults, no index."""
    import pyarrow as pa

    if system == "kartoframe":
        systems.kf_call("store_dataframes_as_dataset", str(root), "ds", [df], partition_on=["part"])
    elif system == "deltalake":
        from deltalake import write_deltalake

        write_deltalake(
            str(root), pa.Table.from_pandas(df, preserve_index=False), partition_by=["part"]
        )
    else:
        import pyarrow.dataset as ds

        ds.write_dataset(
            pa.Table.from_pandas(df, preserve_index=False),
            str(root),
            format="parquet",
            partitioning=["part"],
            partitioning_flavor="hive",
            max_partitions=1 << 22,
        )


def _imports(system: str, with_dask: bool) -> int:
    """The imports of a write's process (the libraries every system needs, the system, and
    dask for the dask modes); return the RSS after them, the baseline of its peak."""
    import pandas  # noqa: F401
    import pyarrow.dataset  # noqa: F401

    if system == "kartoframe":
        import kartoframe  # noqa: F401
    elif system == "deltalake":
        import deltalake  # noqa: F401
    if with_dask:
        import dask.dataframe  # noqa: F401
    return systems.proc_status("VmRSS")


def _reset_peak() -> tuple[int, bool]:
    """Give freed memory back, then reset the RSS high-water mark: ``(RSS, reset worked)``."""
    _give_back()
    return systems.reset_peak_rss()


def cluster_worker(
    system: str, size: int, data_dir: Path, write_dir: Path | None = None
) -> dict[str, Any]:
    """The ``distributed`` mode: one write on a fresh LocalCluster; the largest worker's
    peak over its RSS after the imports."""
    systems.use_checkout_kartoframe()
    import cloudpickle
    import datagen
    from dask.distributed import Client, LocalCluster

    # the workers cannot import this folder's modules: its functions travel by value
    cloudpickle.register_pickle_by_value(systems)

    one = datagen.sales_table(min(size, DASK_CHUNK_ROWS))  # the input: one dask partition
    input_bytes = int(one.memory_usage(deep=True).sum())
    del one
    tmp = Path(tempfile.mkdtemp(prefix="kf-scale-write-", dir=write_dir or data_dir))
    with (
        LocalCluster(
            n_workers=CLUSTER_WORKERS,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
        ) as cluster,
        Client(cluster) as client,
    ):
        try:
            after_imports = client.run(_imports, system, True)
            _write_ddf(system, lazy_sales_frame(1000, 500), tmp / "warm-up", None)
            base = {w: rss for w, (rss, _) in client.run(_reset_peak).items()}
            t0 = time.perf_counter()
            _write_ddf(system, lazy_sales_frame(size), tmp / "timed", None)
            seconds = time.perf_counter() - t0
            peaks = client.run(systems.proc_status, "VmHWM")
            written = _bytes_under(tmp / "timed")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    over = [peaks[w] - after_imports[w] for w in peaks]
    return _report(
        system,
        seconds,
        input_bytes,
        growth=max(peaks[w] - base[w] for w in peaks),
        over_imports=max(over),
        reset=True,
        written=written,
        worker_peaks_over_imports=sorted(over),
    )


def _bytes_under(root: Path) -> int:
    return sum(f.stat().st_size for f in root.rglob("*") if f.is_file())


def _report(
    system: str,
    seconds: float,
    input_bytes: int,
    *,
    growth: int,
    over_imports: int,
    reset: bool,
    written: int,
    **extra: Any,
) -> dict[str, Any]:
    """One write's figures, as the workers report them."""
    return {
        "system": system,
        "seconds": seconds,
        "input_bytes": input_bytes,
        "rss_growth": growth,
        "peak_over_imports": over_imports,
        "hwm_reset": reset,
        "written_bytes": written,
        **extra,
    }


def worker(
    mode: str,
    system: str,
    size: int,
    data_dir: Path,
    partitions: int = 20,
    write_dir: Path | None = None,
) -> dict[str, Any]:
    """Load the input, warm ``system`` up, then time one write and measure its peak RSS.

    The writes go to a temporary folder under ``write_dir`` (default: ``data_dir``).
    """
    if mode == "distributed":
        return cluster_worker(system, size, data_dir, write_dir)
    systems.use_checkout_kartoframe()
    before_input = _imports(system, mode == "dask")
    if mode == "dask":
        df = lazy_sales_frame(size)
        import datagen

        one = datagen.sales_table(min(size, DASK_CHUNK_ROWS))  # the input: one dask partition
        input_bytes = int(one.memory_usage(deep=True).sum())
        del one

        def write(frame: Any, root: Path) -> None:
            _write_ddf(system, frame, root)

    elif mode == "rows":
        adapter = systems.SYSTEMS[system]()
        df = systems.SalesSpec(rows=size, partitions=partitions).table(data_dir)

        def write(frame: Any, root: Path) -> None:
            adapter.write(frame, root)

    else:
        df = many_partitions_frame(size)

        def write(frame: Any, root: Path) -> None:
            _write_partitions(system, frame, root)

    if mode != "dask":
        input_bytes = int(df.memory_usage(deep=True).sum())
    tmp = Path(tempfile.mkdtemp(prefix="kf-scale-write-", dir=write_dir or data_dir))
    try:
        write(lazy_sales_frame(1000, 500) if mode == "dask" else df.head(1000), tmp / "warm-up")
        base, reset = _reset_peak()
        t0 = time.perf_counter()
        write(df, tmp / "timed")
        seconds = time.perf_counter() - t0
        peak = systems.proc_status("VmHWM")
        written = _bytes_under(tmp / "timed")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return _report(
        system,
        seconds,
        input_bytes,
        growth=peak - base,
        over_imports=peak - before_input,
        reset=reset,
        written=written,
    )


def _give_back() -> None:
    """Return freed memory to the kernel (Arrow's pool, then glibc's heap), so the write's
    peak is not hidden in pages the input's loading freed."""
    import contextlib
    import ctypes
    import gc

    import pyarrow as pa

    gc.collect()
    pa.default_memory_pool().release_unused()
    with contextlib.suppress(OSError):  # not glibc: nothing to trim
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def _run_worker(
    mode: str, system: str, size: int, data_dir: Path, partitions: int, write_dir: Path
) -> dict[str, Any]:
    from compare import HYGIENE_ENV  # a user's process has none of these variables

    argv = [Path(__file__).resolve(), "--worker", mode, system, size, data_dir, partitions]
    argv.append(write_dir)
    found = systems.json_worker(argv, what=f"{system} {mode} worker", drop_env=HYGIENE_ENV)
    return dict(found)


def _goal(text: str, ratio: float, limit: float) -> list[dict[str, Any]]:
    return [{"goal": text, "value": ratio, "met": ratio <= limit}]


def goal_lines(mode: str, med: dict[str, dict[str, float]], size: int) -> list[dict[str, Any]]:
    """The goal of ``mode`` from the medians per system (empty: a system not measured)."""
    kf = med.get("kartoframe")
    if kf is None:
        return []
    if mode == "rows":
        ratio = kf["peak_over_imports"] / kf["input_bytes"]
        return _goal(f"peak RSS (input included) <= {MEMORY_GOAL}x the input", ratio, MEMORY_GOAL)
    peer = "to_parquet" if mode in DASK_MODES else "deltalake"
    if peer not in med:
        return []
    if mode in DASK_MODES:
        ratio = kf["peak_over_imports"] / med[peer]["peak_over_imports"]
        what = "peak RSS" if mode == "dask" else "largest worker's peak RSS"
        where = "" if mode == "dask" else f", {CLUSTER_WORKERS}-worker LocalCluster"
        text = f"{what} <= {DASK_GOAL}x dask to_parquet's ({size:,} rows{where})"
        return _goal(text, ratio, DASK_GOAL)
    ratio = kf["seconds"] / med[peer]["seconds"]
    text = f"time per partition <= {PARTITION_GOAL}x deltalake's ({size:,} partitions)"
    return _goal(text, ratio, PARTITION_GOAL)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--only", default="rows,partitions", help="rows,partitions,dask,distributed")
    p.add_argument("--rows", default="10000000", help="comma-separated row counts (rows)")
    p.add_argument("--partitions", default="10000", help="comma-separated partition counts")
    p.add_argument(
        "--rows-partitions", type=int, default=20, help="partitions of the sales table (rows)"
    )
    p.add_argument("--repeat", type=int, default=3, help="fresh processes per system and size")
    p.add_argument(
        "--systems",
        default=None,
        help=f"default: {','.join(SYSTEMS)}; dask mode: {','.join(DASK_SYSTEMS)}",
    )
    p.add_argument("--data-dir", type=Path, default=HERE.parent / "bench-data")
    p.add_argument(
        "--write-dir",
        type=Path,
        default=None,
        help="where the timed writes go (default: --data-dir); e.g. /dev/shm to time the "
        "writers without the disk's file system",
    )
    p.add_argument("--json", type=Path, default=None)
    p.add_argument(
        "--worker",
        nargs=6,
        metavar=("MODE", "SYSTEM", "SIZE", "DIR", "PARTITIONS", "WRITE_DIR"),
        help=argparse.SUPPRESS,
    )
    args = p.parse_args(argv)
    if args.worker:
        mode, system, size, data_dir, parts, write_dir = args.worker
        found = worker(mode, system, int(size), Path(data_dir), int(parts), Path(write_dir))
        systems.finish_worker(found)

    chosen = [s for s in args.systems.split(",") if s] if args.systems else None
    modes = [m for m in args.only.split(",") if m]
    print(f"kartoframe loaded from: {systems.use_checkout_kartoframe()}")
    args.data_dir.mkdir(parents=True, exist_ok=True)
    write_dir = args.write_dir or args.data_dir
    write_dir.mkdir(parents=True, exist_ok=True)
    if args.write_dir is not None:
        print(f"writes go to: {write_dir}")
    results: dict[str, Any] = {}
    failed = False
    for mode in modes:
        sizes = args.partitions if mode == "partitions" else args.rows
        names = chosen or list(DASK_SYSTEMS if mode in DASK_MODES else SYSTEMS)
        for size in [int(x) for x in sizes.split(",")]:
            if mode == "rows":
                spec = systems.SalesSpec(rows=size, partitions=args.rows_partitions)
                spec.table(args.data_dir)  # generated and cached once, before the workers
            runs: dict[str, list[dict[str, Any]]] = {s: [] for s in names}
            for rep in range(args.repeat):
                for s in names if rep % 2 == 0 else names[::-1]:
                    r = _run_worker(mode, s, size, args.data_dir, args.rows_partitions, write_dir)
                    runs[s].append(r)
                    print(
                        f"  {mode:<10} {size:>11,}  rep {rep + 1}/{args.repeat}  {s:<11} "
                        f"{r['seconds']:8.3f}s  RSS +{r['rss_growth'] / 2**20:8.1f} MiB, "
                        f"peak {r['peak_over_imports'] / 2**20:8.1f} MiB "
                        f"(input {r['input_bytes'] / 2**20:.1f} MiB)"
                        + "".join(
                            f", workers {', '.join(f'{w / 2**20:.1f}' for w in ws)} MiB"
                            for ws in [r.get("worker_peaks_over_imports")]
                            if ws
                        ),
                        flush=True,
                    )
            keys = ("seconds", "rss_growth", "peak_over_imports", "input_bytes")
            med = {s: {k: statistics.median(x[k] for x in runs[s]) for k in keys} for s in names}
            goals = goal_lines(mode, med, size)
            parts = {
                "rows": args.rows_partitions,
                "dask": DASK_PARTITIONS,
                "distributed": DASK_PARTITIONS,
            }.get(mode, size)
            key = f"{mode}-{size}" + (f"-p{parts}" if mode == "rows" and parts != 20 else "")
            results[key] = {
                "write_dir": str(write_dir),
                "median": med,
                "runs": runs,
                "goals": goals,
            }
            what = {
                "rows": f"{size:,} rows, {parts:,} partitions",
                "dask": f"dask, {size:,} rows in partitions of {DASK_CHUNK_ROWS:,} rows, "
                f"{parts:,} partitions, input = one dask partition",
                "distributed": f"dask on a LocalCluster of {CLUSTER_WORKERS} worker processes, "
                f"{size:,} rows in partitions of {DASK_CHUNK_ROWS:,} rows, {parts:,} partitions, "
                "peak = the largest worker's",
            }.get(mode, f"{size:,} partitions")
            print(f"\n== write, {what}: medians of {args.repeat} fresh processes")
            print(
                f"   {'system':<12}{'seconds':>10}{'ms/partition':>14}{'RSS growth':>13}"
                f"{'peak':>13}{'/ input':>9}"
            )
            for s in names:
                m = med[s]
                per = 1000 * m["seconds"] / parts
                over = m["peak_over_imports"] / m["input_bytes"]
                print(
                    f"   {s:<12}{m['seconds']:>9.3f}s{per:>14.3f}"
                    f"{m['rss_growth'] / 2**20:>9.1f} MiB"
                    f"{m['peak_over_imports'] / 2**20:>9.1f} MiB{over:>8.2f}x"
                )
            for g in goals:
                failed |= not g["met"]
                print(f"   goal: {g['goal']}: {g['value']:.2f}x {'PASS' if g['met'] else 'FAIL'}")
            print()
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
