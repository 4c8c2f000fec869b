#!/usr/bin/env python
"""Table maintenance: kartoframe's ``optimize_dataset`` against deltalake's ``optimize``.

The small-files scenario of issue 16: ``--days`` daily appends (365) of ``--rows-per-day``
rows (10,000) into a dataset partitioned by ``region`` (``--partitions``, 20 values, every
value every day, sizes skewed 1/sqrt(rank)): 7,300 small files. The same data goes to
kartoframe (``update_dataset_from_dataframes`` per day) and to deltalake (``write_deltalake``
``mode="append"``, ``partition_by=["region"]`` per day). Columns: ``region`` (str, the
partition key), ``ts`` (timestamp[us, UTC], within the day of the append), ``id`` (int64,
uniform in [0, 10,000,000): the clustering column), ``value`` (float64), ``kind`` (str, 5
values). Seeded and deterministic (``--seed``).

Both tables are built once per run (a temporary folder; with ``--data-dir`` they are cached
there), and every measured optimize starts from a fresh copy (untimed). Everything runs in
one process with ``compare.py``'s harness (alternating systems, one untimed warm-up round,
``gc.collect()`` and a quiescent process before every call, medians, a load-average
warning), except the peak-memory runs, which each run in a subprocess of their own.

Scenarios (``--only``):

``optimize``
    kartoframe ``optimize_dataset`` (no sort) vs deltalake ``optimize.compact()``, then a
    second optimize right after on the result (incremental: kartoframe should do nothing).
``cluster``
    kartoframe ``sort_by=["id"]`` (linear) and ``sort_by=["id", "ts"], sort_method="zorder"``
    vs deltalake ``optimize.z_order(["id"])`` and ``z_order(["id", "ts"])``.
``read``
    full read into pandas before and after compaction; a selective read (``id`` in a
    0.1 % range) before and after clustering, with the row groups each one reads.
``memory``
    peak memory of each optimize in a subprocess (``ru_maxrss`` growth over the process
    after its imports) against the Arrow size of the largest partition.

deltalake writes its optimized files with ``max_row_group_size`` = kartoframe's row-group
size (65,536 rows), so the row-group counts compare like with like.

Examples
--------
Full run (builds 2 x 365 appends first, about 2 minutes; the whole run about 15 minutes on
2 cores)::

    .venv/bin/python asv_benchmarks/optimize_compare.py --repeat 3

Small smoke run::

    .venv/bin/python asv_benchmarks/optimize_compare.py --days 30 --repeat 1

``compare.py --only optimize`` runs the same scenarios inside the peer comparison.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DATA_VERSION = 1
UUID = "events"
PARTITION = "region"
SORT_COLUMN = "id"
ZORDER_COLUMNS = ("id", "ts")
ID_RANGE = 10_000_000
#: the selective read: ``id`` in [lo, lo + 0.1 % of the range)
SELECTIVE_LO, SELECTIVE_HI = 5_000_000, 5_010_000
#: kartoframe's default row-group size of optimized files; deltalake gets the same
ROW_GROUP_SIZE = 65_536
SCENARIOS: tuple[str, ...] = ("optimize", "cluster", "read", "memory")
SYSTEM_NAMES: tuple[str, ...] = ("kartoframe", "deltalake")
ROW_GROUP_METHOD = (
    "row groups read = row groups of the files the system keeps (kartoframe: the files of "
    "plan_read's ScanPlan tasks, after partition/index/statistics pruning; deltalake: the "
    "add actions whose min/max statistics of id overlap the range) whose Parquet footer "
    "min/max of id overlap the range (pyarrow.parquet.read_metadata)"
)
MEMORY_METHOD = (
    "peak memory = peak RSS (VmHWM, reset by clear_refs) of a fresh subprocess during the "
    "optimize, minus its RSS before it (after the imports and a warm-up optimize of a tiny "
    "table; default allocator settings, so freed memory leaves RSS); pyarrow's memory-pool "
    "max_memory alongside (kartoframe)"
)


# --------------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Spec:
    """Size of the small-files scenario."""

    days: int = 365
    rows_per_day: int = 10_000
    partitions: int = 20
    seed: int = 0

    @property
    def key(self) -> str:
        """Cache folder name of this size."""
        return (
            f"small-files-d{self.days}-n{self.rows_per_day}-p{self.partitions}"
            f"-s{self.seed}-v{DATA_VERSION}"
        )

    def regions(self) -> list[str]:
        """The partition values."""
        return [f"r{i:02d}" for i in range(self.partitions)]


def day_table(spec: Spec, day: int) -> Any:
    """The rows appended on ``day`` (a pyarrow Table; the same on every call)."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng([spec.seed, day])
    n, k = spec.rows_per_day, spec.partitions
    weights = 1.0 / np.sqrt(np.arange(1, k + 1))
    region = rng.choice(k, n, p=weights / weights.sum())
    region[: min(k, n)] = np.arange(min(k, n))  # every partition gets a file every day
    day0 = 1_735_689_600_000_000 + day * 86_400_000_000  # 2025-01-01 UTC, microseconds
    ts = day0 + np.sort(rng.integers(0, 86_400_000_000, n))
    return pa.table(
        {
            PARTITION: pa.array(np.array(spec.regions())[region]),
            "ts": pa.array(ts, type=pa.timestamp("us", tz="UTC")),
            "id": pa.array(rng.integers(0, ID_RANGE, n)),
            "value": pa.array(rng.random(n)),
            "kind": pa.array(np.array(["a", "b", "c", "d", "e"])[rng.integers(0, 5, n)]),
        }
    )


def expected(spec: Spec) -> dict[str, Any]:
    """Row count, value sum, selective-read rows and the largest partition's Arrow size."""
    import pyarrow.compute as pc

    rows, total, selective = 0, 0.0, 0
    nbytes: dict[str, int] = {}
    part_rows: dict[str, int] = {}
    for day in range(spec.days):
        t = day_table(spec, day)
        rows += t.num_rows
        total += float(pc.sum(t["value"]).as_py())
        ids = t["id"]
        keep = pc.and_(pc.greater_equal(ids, SELECTIVE_LO), pc.less(ids, SELECTIVE_HI))
        selective += int(pc.sum(pc.cast(keep, "int64")).as_py() or 0)
        for region in spec.regions():
            part = t.filter(pc.equal(t[PARTITION], region))
            nbytes[region] = nbytes.get(region, 0) + part.nbytes
            part_rows[region] = part_rows.get(region, 0) + part.num_rows
    largest = max(nbytes, key=nbytes.__getitem__)
    return {
        "rows": rows,
        "value_sum": total,
        "selective_rows": selective,
        "files": spec.days * spec.partitions,
        "largest_partition": largest,
        "largest_partition_rows": part_rows[largest],
        "largest_partition_nbytes": nbytes[largest],
    }


def build(spec: Spec, root: Path, log: Callable[[str], None]) -> dict[str, Any]:
    """Write (once per ``root``) both tables under ``root/base``; return the build stamp."""
    import deltalake

    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    import systems

    systems.use_checkout_kartoframe()
    import kartoframe as kf

    stamp_path = root / "stamp.json"
    versions = {
        "kartoframe": systems.kartoframe_fingerprint(),
        "deltalake": deltalake.__version__,
    }
    if stamp_path.exists():
        stamp = json.loads(stamp_path.read_text())
        if stamp.get("versions") == versions and stamp.get("spec") == asdict(spec):
            log(f"   tables cached in {root}")
            return dict(stamp)
    shutil.rmtree(root, ignore_errors=True)
    (root / "base").mkdir(parents=True)
    kf_root, dl_root = root / "base" / "kartoframe", root / "base" / "deltalake"
    seconds = {"kartoframe": 0.0, "deltalake": 0.0}
    t_start = time.perf_counter()
    for day in range(spec.days):
        table = day_table(spec, day)
        frame = table.to_pandas()
        t0 = time.perf_counter()
        kf.update_dataset_from_dataframes(
            [frame], store=str(kf_root), dataset_uuid=UUID, partition_on=[PARTITION]
        )
        t1 = time.perf_counter()
        deltalake.write_deltalake(str(dl_root), table, partition_by=[PARTITION], mode="append")
        seconds["kartoframe"] += t1 - t0
        seconds["deltalake"] += time.perf_counter() - t1
        if (day + 1) % 73 == 0 or day + 1 == spec.days:
            log(f"   built day {day + 1}/{spec.days} ({time.perf_counter() - t_start:.0f}s)")
    stamp = {
        "spec": asdict(spec),
        "versions": versions,
        "append_seconds": seconds,
        "expected": expected(spec),
    }
    stamp_path.write_text(json.dumps(stamp, indent=1))
    return stamp


def _append(system: str, root: Path, tables: Sequence[Any]) -> None:
    """Append ``tables`` one by one to ``system``'s table at ``root`` (as :func:`build`)."""
    for table in tables:
        if system == "kartoframe":
            import kartoframe as kf

            kf.update_dataset_from_dataframes(
                [table.to_pandas()], store=str(root), dataset_uuid=UUID, partition_on=[PARTITION]
            )
        else:
            from deltalake import write_deltalake

            write_deltalake(str(root), table, partition_by=[PARTITION], mode="append")


def copy_table(src: Path, dst: Path) -> None:
    """Replace ``dst`` by a full copy of ``src`` (data files included)."""
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)


# --------------------------------------------------------------------------------------------
# the operations
# --------------------------------------------------------------------------------------------


def _writer_properties() -> Any:
    from deltalake import WriterProperties

    return WriterProperties(max_row_group_size=ROW_GROUP_SIZE)


#: variant -> (system, label, what it runs); labels: kf = kartoframe, dl = deltalake
VARIANTS: dict[str, tuple[str, str, str]] = {
    "kartoframe-compact": ("kartoframe", "kf compact", "optimize_dataset()"),
    "kartoframe-sort": ("kartoframe", "kf sort_by id", 'sort_by=["id"]'),
    "kartoframe-zorder": ("kartoframe", "kf zorder id,ts", 'sort_by=["id", "ts"], zorder'),
    "deltalake-compact": ("deltalake", "dl compact", "optimize.compact()"),
    "deltalake-zorder1": ("deltalake", "dl z_order id", 'optimize.z_order(["id"])'),
    "deltalake-zorder2": ("deltalake", "dl z_order id,ts", 'optimize.z_order(["id", "ts"])'),
}
#: the tables of the full read and of the selective read ("<system>-before": as appended)
FULL_READS = ("kartoframe-before", "kartoframe-compact", "deltalake-before", "deltalake-compact")
SELECTIVE_READS = (
    "kartoframe-before",
    "kartoframe-sort",
    "kartoframe-zorder",
    "deltalake-before",
    "deltalake-zorder1",
    "deltalake-zorder2",
)


def run_variant(variant: str, path: Path) -> dict[str, Any]:
    """Run one optimize on the table at ``path``; return files removed/added."""
    system = VARIANTS[variant][0]
    if system == "kartoframe":
        import kartoframe as kf

        kwargs: dict[str, Any] = {}
        if variant == "kartoframe-sort":
            kwargs = {"sort_by": [SORT_COLUMN]}
        elif variant == "kartoframe-zorder":
            kwargs = {"sort_by": list(ZORDER_COLUMNS), "sort_method": "zorder"}
        r = kf.optimize_dataset(UUID, str(path), **kwargs)
        return {"removed": r.files_removed, "added": r.files_added}
    from deltalake import DeltaTable

    opt = DeltaTable(str(path)).optimize
    wp = _writer_properties()
    if variant == "deltalake-compact":
        m = opt.compact(writer_properties=wp)
    else:
        cols = [SORT_COLUMN] if variant == "deltalake-zorder1" else list(ZORDER_COLUMNS)
        m = opt.z_order(cols, writer_properties=wp)
    return {"removed": int(m["numFilesRemoved"]), "added": int(m["numFilesAdded"])}


def read_full(system: str, path: Path) -> Any:
    """The whole table into pandas."""
    if system == "kartoframe":
        import kartoframe as kf

        return kf.read_table(UUID, str(path))
    from deltalake import DeltaTable

    return DeltaTable(str(path)).to_pandas()


def read_selective(system: str, path: Path) -> Any:
    """The rows with ``id`` in the selective range, into pandas."""
    if system == "kartoframe":
        import kartoframe as kf

        pred = [[(SORT_COLUMN, ">=", SELECTIVE_LO), (SORT_COLUMN, "<", SELECTIVE_HI)]]
        return kf.read_table(UUID, str(path), predicates=pred)
    from deltalake import DeltaTable

    return DeltaTable(str(path)).to_pandas(
        filters=[(SORT_COLUMN, ">=", SELECTIVE_LO), (SORT_COLUMN, "<", SELECTIVE_HI)]
    )


def _overlapping_row_groups(path: Path) -> tuple[int, int]:
    """(row groups of the file, those whose id min/max overlap the selective range)."""
    import pyarrow.parquet as pq

    md = pq.read_metadata(path)
    names = [md.schema.column(i).path for i in range(md.num_columns)]
    col = names.index(SORT_COLUMN)
    hit = 0
    for i in range(md.num_row_groups):
        st = md.row_group(i).column(col).statistics
        if st is None or not st.has_min_max or (st.max >= SELECTIVE_LO and st.min < SELECTIVE_HI):
            hit += 1
    return md.num_row_groups, hit


def row_groups_read(system: str, path: Path) -> dict[str, int]:
    """Files kept by the system's file skipping; row groups in them and those overlapping."""
    if system == "kartoframe":
        from kartoframe.api.read import plan_read

        pred = [[(SORT_COLUMN, ">=", SELECTIVE_LO), (SORT_COLUMN, "<", SELECTIVE_HI)]]
        plan, _ = plan_read(UUID, str(path), predicates=pred)
        files = [path / f.key for t in plan.tasks for f in t.files]
        total_files = plan.stats.total
    else:
        import pyarrow as pa
        from deltalake import DeltaTable

        adds = pa.table(DeltaTable(str(path)).get_add_actions(flatten=True)).to_pydict()
        total_files = len(adds["path"])
        files = [
            path / unquote(p)
            for p, lo, hi in zip(adds["path"], adds["min.id"], adds["max.id"], strict=True)
            if lo is None or hi is None or (hi >= SELECTIVE_LO and lo < SELECTIVE_HI)
        ]
    groups = [_overlapping_row_groups(f) for f in files]
    return {
        "files": total_files,
        "files_kept": len(files),
        "row_groups_in_kept_files": sum(g[0] for g in groups),
        "row_groups_read": sum(g[1] for g in groups),
    }


def check_frame(df: Any, rows: int, value_sum: float | None) -> str | None:
    """A wrong row count or value sum, or None."""
    if len(df) != rows:
        return f"wrong result: {len(df):,} rows, expected {rows:,}"
    if value_sum is not None:
        got = float(df["value"].sum())
        if abs(got - value_sum) > 1e-9 * max(1.0, abs(value_sum)):
            return f"wrong result: value sum {got!r}, expected {value_sum!r}"
    return None


# --------------------------------------------------------------------------------------------
# memory (subprocess)
# --------------------------------------------------------------------------------------------


def memory_worker(variant: str, path: Path) -> dict[str, Any]:
    """Run one optimize in this (fresh) process; report its memory high-water marks.

    ``ru_maxrss`` is not used: Linux carries the parent's high-water mark across ``exec``.
    The peak is ``VmHWM``, reset after the imports and a warm-up optimize of a tiny table
    (``clear_refs``), minus ``VmRSS`` then.
    """
    import pyarrow as pa

    sys.path.insert(0, str(HERE))
    import systems

    systems.use_checkout_kartoframe()
    import deltalake  # noqa: F401  (both systems imported: the same baseline)

    import kartoframe  # noqa: F401

    # warm-up on a tiny table: code pages, thread pools and caches are not the data's memory
    with tempfile.TemporaryDirectory() as tmp:
        tiny = Spec(days=3, rows_per_day=300, partitions=3)
        _append(VARIANTS[variant][0], Path(tmp), [day_table(tiny, d) for d in range(tiny.days)])
        run_variant(variant, Path(tmp))
    gc.collect()
    pool = pa.default_memory_pool()
    pool_before = pool.max_memory()
    base, reset = systems.reset_peak_rss()
    t0 = time.perf_counter()
    files = run_variant(variant, path)
    seconds = time.perf_counter() - t0
    peak = systems.proc_status("VmHWM")
    return {
        "variant": variant,
        "rss_after_imports": base,
        "rss_peak": peak,
        "rss_growth": peak - base,
        "hwm_reset": reset,
        "pool_backend": pool.backend_name,
        "pool_max_before": pool_before,
        "pool_max": pool.max_memory(),
        "seconds": seconds,
        **files,
    }


def measure_memory(variant: str, base: Path, work: Path, hygiene: Sequence[str]) -> dict[str, Any]:
    """Copy the base table and run :func:`memory_worker` on it in a subprocess.

    The subprocess runs without the ``hygiene`` allocator variables (freed memory goes back
    to the kernel, so its RSS follows what is live rather than what was ever allocated).
    """
    sys.path.insert(0, str(HERE))
    import systems

    copy_table(base, work)
    argv = [Path(__file__).resolve(), "--memory-worker", variant, work]
    try:
        return dict(systems.json_worker(argv, what="memory worker", drop_env=hygiene))
    finally:
        shutil.rmtree(work, ignore_errors=True)


# --------------------------------------------------------------------------------------------
# scenarios (on compare.py's harness)
# --------------------------------------------------------------------------------------------


class Runner:
    """The scenarios of this module on a ``compare.Harness`` (same timing rules)."""

    def __init__(self, harness: Any, spec: Spec, root: Path, systems: Sequence[str]) -> None:
        #: the harness's own module: its Op and Measurement classes (``compare`` may run as
        #: ``__main__``, a module other than the one ``import compare`` gives)
        self.cm = sys.modules[type(harness).__module__]
        self.h = harness
        self.spec = spec
        self.root = root
        self.systems = [s for s in SYSTEM_NAMES if s in systems]
        self.stamp = build(spec, root, harness.log)
        self.exp: dict[str, Any] = self.stamp["expected"]
        self.ready: set[str] = set()
        self.second: dict[str, list[float]] = {}
        #: process CPU time (all threads) of every optimize call, warm-up included
        self.cpu: dict[str, list[float]] = {}
        self.report: dict[str, Any] = {
            "spec": asdict(spec),
            "expected": self.exp,
            "append_seconds": self.stamp["append_seconds"],
        }
        self.names: list[str] = []  # scenario results this runner added

    def base(self, system: str) -> Path:
        """The freshly appended table of ``system`` (never modified)."""
        return self.root / "base" / system

    def work(self, variant: str) -> Path:
        """Where ``variant`` is optimized."""
        return self.root / "work" / variant

    def variants(self, names: Sequence[str]) -> list[str]:
        """The variants of the selected systems."""
        return [v for v in names if VARIANTS[v][0] in self.systems]

    def ensure(self, variant: str) -> Path:
        """The optimized table of ``variant`` (optimized now, untimed, if not yet)."""
        path = self.work(variant)
        if variant not in self.ready:
            copy_table(self.base(VARIANTS[variant][0]), path)
            run_variant(variant, path)
            self.ready.add(variant)
        return path

    def _run(self, name: str, title: str, rows: int | None, ops: dict[str, Any]) -> Any:
        labels = {k: VARIANTS[k][1] if k in VARIANTS else _read_label(k) for k in ops}
        res = self.h.run_alternating(name, title, {**asdict(self.spec)}, rows, ops, labels)
        self.names.append(name)
        return res

    def _optimize_ops(self, variants: Sequence[str], again: bool) -> dict[str, Any]:
        ops: dict[str, Any] = {}
        files = self.exp["files"]
        for v in variants:
            path, base = self.work(v), self.base(VARIANTS[v][0])
            self.second[v] = []

            def before(base: Path = base, path: Path = path, v: str = v) -> None:
                self.ready.discard(v)
                copy_table(base, path)

            def check(r: dict[str, Any]) -> str | None:
                if r["removed"] != files:
                    return f"wrong result: removed {r['removed']:,} files, expected {files:,}"
                return None

            def after(path: Path = path, v: str = v) -> None:
                self.ready.add(v)
                if again:
                    gc.collect()
                    self.cm._settle()
                    t0 = time.perf_counter()
                    r = run_variant(v, path)
                    self.second[v].append(time.perf_counter() - t0)
                    self.report.setdefault("second_optimize_files", {})[v] = r

            ops[v] = self.cm.Op(
                run=lambda v=v, path=path: self._cpu_timed(v, path),
                check=check,
                before=before,
                after=after,
            )
        return ops

    def _cpu_timed(self, variant: str, path: Path) -> dict[str, Any]:
        c0 = time.process_time()
        out = run_variant(variant, path)
        self.cpu.setdefault(variant, []).append(time.process_time() - c0)
        return out

    def _log_cpu(self, res: Any) -> None:
        """Median CPU time of the timed rounds (robust to a busy machine), into ``extra``."""
        for v, m in res.measurements.items():
            cpu = self.cpu.get(v, [])[self.h.args.warmup :]
            if m.usable and cpu:
                m.extra["cpu_median_s"] = statistics.median(cpu)
                self.h.log(
                    f"   {m.label}: CPU time (all threads), median {statistics.median(cpu):.3f}s"
                )

    def scenario_optimize(self) -> None:
        """Compaction without sorting, then a second optimize right after."""
        s, variants = self.spec, self.variants(["kartoframe-compact", "deltalake-compact"])
        res = self._run(
            "optimize",
            f"optimize (compact, no sort): {self.exp['files']:,} small files, "
            f"{self.exp['rows']:,} rows, {s.partitions} partitions",
            self.exp["rows"],
            self._optimize_ops(variants, again=True),
        )
        self._log_cpu(res)
        meas = {}
        for v in variants:
            first = res.measurements[v]
            m = self.cm.Measurement(system=v, label=f"{VARIANTS[v][1]} 2nd")
            m.times = self.second[v][self.h.args.warmup :] if first.usable else []
            m.status, m.message = (first.status, first.message) if not m.times else ("ok", "")
            m.extra["files"] = self.report.get("second_optimize_files", {}).get(v)
            meas[v] = m
        again = self.cm.ScenarioResult(
            "optimize-again",
            "second optimize right after the first (incremental)",
            {**asdict(s)},
            None,
            meas,
            loadavg=self.cm._loadavg(),
        )
        self.h.results.append(again)
        self.names.append("optimize-again")
        self.h.log(f"\n== {again.title}")
        self.h.print_scenario(again)
        for m in meas.values():
            self.h.log(f"   {m.label}: files removed/added {m.extra['files']}")

    def scenario_cluster(self) -> None:
        """Compaction with clustering (linear sort, z-order)."""
        variants = self.variants(
            ["kartoframe-sort", "kartoframe-zorder", "deltalake-zorder1", "deltalake-zorder2"]
        )
        res = self._run(
            "cluster",
            f"optimize with clustering: {self.exp['files']:,} small files",
            self.exp["rows"],
            self._optimize_ops(variants, again=False),
        )
        self._log_cpu(res)

    def _read_ops(
        self,
        keys: Sequence[str],
        fn: Callable[[str, Path], Any],
        rows: int,
        value_sum: float | None,
    ) -> dict[str, Any]:
        ops: dict[str, Any] = {}
        for key in keys:
            system = key.split("-")[0]
            try:
                path = self.base(system) if key.endswith("-before") else self.ensure(key)
            except Exception as exc:
                ops[key] = self.h._skipped(system, exc, _read_label(key))
                continue
            ops[key] = self.cm.Op(
                run=lambda system=system, path=path: fn(system, path),
                check=lambda df: check_frame(df, rows, value_sum),
            )
        return ops

    def scenario_read(self) -> None:
        """Full and selective reads before and after optimize; row groups read."""
        e = self.exp
        keys = [k for k in FULL_READS if k.split("-")[0] in self.systems]
        self._run(
            "read-full",
            f"full read into pandas before / after compaction: {e['rows']:,} rows",
            e["rows"],
            self._read_ops(keys, read_full, e["rows"], e["value_sum"]),
        )
        keys = [k for k in SELECTIVE_READS if k.split("-")[0] in self.systems]
        self._run(
            "read-selective",
            f"selective read ({SELECTIVE_LO:,} <= id < {SELECTIVE_HI:,}: "
            f"{e['selective_rows']:,} rows) before / after clustering",
            None,
            self._read_ops(keys, read_selective, e["selective_rows"], None),
        )
        counts: dict[str, dict[str, int]] = {}
        self.h.log(f"\n== row groups read by the selective read\n   method: {ROW_GROUP_METHOD}")
        self.h.log(f"   {'table':<32}{'files':>8}{'kept':>8}{'RGs in kept':>13}{'RGs read':>10}")
        for key in keys:
            system = key.split("-")[0]
            path = self.base(system) if key.endswith("-before") else self.ensure(key)
            c = counts[key] = row_groups_read(system, path)
            self.h.log(
                f"   {_read_label(key):<32}{c['files']:>8,}{c['files_kept']:>8,}"
                f"{c['row_groups_in_kept_files']:>13,}{c['row_groups_read']:>10,}"
            )
        self.report["row_groups"] = {"method": ROW_GROUP_METHOD, "counts": counts}

    def scenario_memory(self) -> None:
        """Peak memory of each optimize, each in its own subprocess."""
        e = self.exp
        largest = e["largest_partition_nbytes"]
        self.h.log(
            f"\n== peak memory of optimize (largest partition {e['largest_partition']}: "
            f"{e['largest_partition_rows']:,} rows, {largest / 2**20:.1f} MiB in Arrow)"
            f"\n   method: {MEMORY_METHOD}"
        )
        self.h.log(f"   {'optimize':<28}{'RSS growth':>12}{'x largest':>11}{'arrow pool max':>16}")
        out: dict[str, Any] = {"method": MEMORY_METHOD, "largest_partition_nbytes": largest}
        for v in self.variants(
            ["kartoframe-compact", "kartoframe-sort", "deltalake-compact", "deltalake-zorder1"]
        ):
            base = self.base(VARIANTS[v][0])
            try:
                r = measure_memory(
                    v, base, self.root / "work" / f"memory-{v}", list(self.cm.HYGIENE_ENV)
                )
            except Exception as exc:
                self.h.log(f"   {VARIANTS[v][1]}: ERROR {exc}")
                out[v] = {"error": str(exc)}
                continue
            r["ratio_to_largest_partition"] = r["rss_growth"] / largest
            out[v] = r
            pool = f"{r['pool_max'] / 2**20:14.1f}MiB" if v.startswith("kartoframe") else ""
            self.h.log(
                f"   {VARIANTS[v][1]:<28}{r['rss_growth'] / 2**20:9.1f}MiB"
                f"{r['ratio_to_largest_partition']:10.2f}x{pool}"
            )
        self.report["memory"] = out

    def run(self, only: Sequence[str]) -> list[dict[str, Any]]:
        """Run the selected scenarios; print and return the target lines."""
        for name in SCENARIOS:
            if name in only:
                getattr(self, f"scenario_{name}")()
        targets = evaluate_targets(self.h.results, self.report)
        print_targets(targets, self.h.log)
        self.report["targets"] = targets
        mine = [r for r in self.h.results if r.name in self.names]
        if mine:
            mine[0].params["optimize_report"] = self.report
        return targets


def _read_label(key: str) -> str:
    if key.endswith("-before"):
        return {"kartoframe": "kf", "deltalake": "dl"}[key.split("-")[0]] + " before"
    return VARIANTS[key][1]


# --------------------------------------------------------------------------------------------
# targets
# --------------------------------------------------------------------------------------------


#: (line, value, reference, target, target text). Sources: ``(scenario, key)`` a median
#: time, ``("cpu", scenario, key)`` its median CPU time, ``("rg", key)`` row groups read,
#: ``("mem", variant)`` RSS growth, ``("pool", variant)`` Arrow pool peak, ``("largest",)``
#: the largest partition's Arrow size. Times and row groups: ratio = reference / value (> 1:
#: kartoframe, or the optimized table, is faster / reads fewer); memory: value / reference.
TARGETS: tuple[tuple[str, tuple[str, ...], tuple[str, ...], float | None, str], ...] = (
    ("optimize time: deltalake compact / kartoframe", ("optimize", "kartoframe-compact"),
     ("optimize", "deltalake-compact"), 1.0, "> 1x (faster)"),
    ("optimize CPU time: deltalake compact / kartoframe", ("cpu", "optimize", "kartoframe-compact"),
     ("cpu", "optimize", "deltalake-compact"), None, ""),
    ("2nd optimize: kartoframe 1st / 2nd", ("optimize-again", "kartoframe-compact"),
     ("optimize", "kartoframe-compact"), 20.0, ">= 20x (~zero)"),
    ("2nd optimize: deltalake / kartoframe", ("optimize-again", "kartoframe-compact"),
     ("optimize-again", "deltalake-compact"), None, ""),
    ("sort_by optimize: deltalake z_order id / kf", ("cluster", "kartoframe-sort"),
     ("cluster", "deltalake-zorder1"), None, ""),
    ("zorder optimize: deltalake z_order id,ts / kf", ("cluster", "kartoframe-zorder"),
     ("cluster", "deltalake-zorder2"), None, ""),
    ("full read: kartoframe before / after", ("read-full", "kartoframe-compact"),
     ("read-full", "kartoframe-before"), 3.0, ">= 3x"),
    ("full read: deltalake before / after", ("read-full", "deltalake-compact"),
     ("read-full", "deltalake-before"), None, ""),
    ("full read after: deltalake / kartoframe", ("read-full", "kartoframe-compact"),
     ("read-full", "deltalake-compact"), None, ""),
    ("selective RGs: kartoframe before / sort_by", ("rg", "kartoframe-sort"),
     ("rg", "kartoframe-before"), 5.0, ">= 5x fewer"),
    ("selective RGs: kartoframe before / zorder", ("rg", "kartoframe-zorder"),
     ("rg", "kartoframe-before"), None, ""),
    ("selective RGs: deltalake before / z_order id", ("rg", "deltalake-zorder1"),
     ("rg", "deltalake-before"), None, ""),
    ("selective RGs: deltalake before / z_order id,ts", ("rg", "deltalake-zorder2"),
     ("rg", "deltalake-before"), None, ""),
    ("selective read: kartoframe before / sort_by", ("read-selective", "kartoframe-sort"),
     ("read-selective", "kartoframe-before"), None, ""),
    ("selective read: dl z_order id / kf sort_by", ("read-selective", "kartoframe-sort"),
     ("read-selective", "deltalake-zorder1"), None, ""),
    ("selective read: dl z_order id,ts / kf zorder", ("read-selective", "kartoframe-zorder"),
     ("read-selective", "deltalake-zorder2"), None, ""),
    ("peak memory: kf compact / largest partition", ("mem", "kartoframe-compact"),
     ("largest",), 2.0, "<= 2x"),
    ("peak memory: kf sort_by / largest partition", ("mem", "kartoframe-sort"),
     ("largest",), 2.0, "<= 2x"),
    ("Arrow pool peak: kf compact / largest partition", ("pool", "kartoframe-compact"),
     ("largest",), 2.0, "<= 2x"),
    ("Arrow pool peak: kf sort_by / largest partition", ("pool", "kartoframe-sort"),
     ("largest",), 2.0, "<= 2x"),
    ("peak memory: dl compact / largest partition", ("mem", "deltalake-compact"),
     ("largest",), None, ""),
    ("peak memory: dl z_order id / largest partition", ("mem", "deltalake-zorder1"),
     ("largest",), None, ""),
)  # fmt: skip


def _source(results: Sequence[Any], report: dict[str, Any], src: tuple[str, ...]) -> float | None:
    """The number a target line names (see :data:`TARGETS`), or None if not measured."""
    if src[0] == "rg":
        c = report.get("row_groups", {}).get("counts", {}).get(src[1])
        return float(c["row_groups_read"]) if c else None
    mem = report.get("memory", {})
    if src[0] in ("mem", "pool"):
        field = "rss_growth" if src[0] == "mem" else "pool_max"
        return float(mem[src[1]][field]) if field in mem.get(src[1], {}) else None
    if src[0] == "largest":
        return float(mem["largest_partition_nbytes"]) if mem else None
    cpu = src[0] == "cpu"
    scenario, key = src[-2:]
    for r in results:
        if r.name == scenario:
            m = r.measurements.get(key)
            if m is None or not m.usable:
                return None
            value = m.extra.get("cpu_median_s") if cpu else m.median
            return None if value is None else float(value)
    return None


def evaluate_targets(results: Sequence[Any], report: dict[str, Any]) -> list[dict[str, Any]]:
    """Every line of :data:`TARGETS` with its values, ratio and status."""
    out = []
    for check, vsrc, rsrc, target, text in TARGETS:
        memory = vsrc[0] in ("mem", "pool")
        value, ref = _source(results, report, vsrc), _source(results, report, rsrc)
        row: dict[str, Any] = {
            "check": check,
            "value": value,
            "reference": ref,
            "unit": "B" if memory else "RGs" if vsrc[0] == "rg" else "s",
            "ratio": None,
            "target_value": target,
            "target": text or "none",
            "higher_is_better": not memory,
            "status": "n.a." if target is None else "not measured",
        }
        if value is not None and ref is not None and value > 0 and ref > 0:
            row["ratio"] = value / ref if memory else ref / value
            if target is not None:
                ok = row["ratio"] <= target if memory else row["ratio"] >= target
                row["status"] = "met" if ok else "NOT MET"
        out.append(row)
    return out


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "s":
        return f"{value:.3f}s"
    if unit == "B":
        return f"{value / 2**20:.1f}MiB"
    return f"{value:,.0f}"


def print_targets(rows: Sequence[dict[str, Any]], log: Callable[[str], None] = print) -> None:
    """Print the target table."""
    log(
        "\n== optimize: targets (kf = kartoframe, dl = deltalake; ratio = reference / value, "
        "memory: value / reference)"
    )
    log(f"   {'line':<48}{'value':>11}{'reference':>11}{'ratio':>9}  {'target':<15}status")
    for r in rows:
        ratio = f"{r['ratio']:.2f}x" if r["ratio"] is not None else "-"
        log(
            f"   {r['check']:<48}{_fmt(r['value'], r['unit']):>11}"
            f"{_fmt(r['reference'], r['unit']):>11}{ratio:>9}  {r['target']:<15}{r['status']}"
        )


# --------------------------------------------------------------------------------------------
# entry points
# --------------------------------------------------------------------------------------------


def run_in_compare(harness: Any) -> None:
    """``compare.py --only optimize``: every scenario of this module (365 days; quick: 60)."""
    a = harness.args
    spec = Spec(days=60 if a.quick else 365, seed=a.seed)
    root = harness.data_dir / "optimize" / spec.key
    try:
        Runner(harness, spec, root, a.systems).run(SCENARIOS)
    finally:
        shutil.rmtree(root / "work", ignore_errors=True)


def _csv(allowed: Sequence[str]) -> Callable[[str], list[str]]:
    def parse(text: str) -> list[str]:
        items = [t.strip() for t in text.split(",") if t.strip()]
        bad = [t for t in items if t not in allowed]
        if bad:
            raise argparse.ArgumentTypeError(f"unknown {bad}; choose from {', '.join(allowed)}")
        return items

    return parse


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """Command-line options."""
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--days", type=int, default=365, help="daily appends [365]")
    p.add_argument("--rows-per-day", type=int, default=10_000, help="rows per append [10,000]")
    p.add_argument("--partitions", type=int, default=20, help="values of region [20]")
    p.add_argument("--seed", type=int, default=0, help="data generator seed [0]")
    p.add_argument("--repeat", type=int, default=3, help="timed rounds per scenario [3]")
    p.add_argument("--warmup", type=int, default=1, help="untimed rounds first [1]")
    p.add_argument(
        "--only",
        type=_csv(SCENARIOS),
        default=list(SCENARIOS),
        help=f"comma-separated scenarios out of {','.join(SCENARIOS)}",
    )
    p.add_argument(
        "--systems",
        type=_csv(SYSTEM_NAMES),
        default=list(SYSTEM_NAMES),
        help="comma-separated systems out of kartoframe,deltalake",
    )
    p.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="build (and keep) the tables here [a temporary folder, removed]",
    )
    p.add_argument("--json", type=Path, default=None, help="save the results to this file")
    p.add_argument("--no-hygiene", action="store_true", help="do not re-exec with malloc env")
    p.add_argument("-v", "--verbose", action="store_true", help="print tracebacks of errors")
    p.add_argument("--memory-worker", nargs=2, metavar=("VARIANT", "PATH"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.repeat < 1 or args.warmup < 0:
        p.error("--repeat must be >= 1 and --warmup >= 0")
    if args.data_dir is not None:
        args.data_dir = args.data_dir.resolve()
    return args


def _ensure_hygiene(hygiene: dict[str, str], argv: Sequence[str]) -> None:
    """Re-execute this script with compare.py's allocator settings unless they are set."""
    missing = [k for k in hygiene if k not in os.environ]
    if not missing:
        return
    if os.environ.get("_KF_OPTIMIZE_REEXEC"):
        print(f"warning: could not set {missing} by re-executing; timings may be noisy")
        return
    env = {**os.environ, **{k: hygiene[k] for k in missing}, "_KF_OPTIMIZE_REEXEC": "1"}
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable, str(Path(__file__).resolve()), *argv], env)


def _git_head() -> str:
    """The checkout's commit, with ``+dirty`` when kartoframe/ has uncommitted changes."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "kartoframe"], cwd=REPO, capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        return "?"
    return head + ("+dirty" if dirty else "")


def main(argv: Sequence[str] | None = None) -> int:
    """Build the tables, run the scenarios, print the tables; 1 if a target is not met."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    if args.memory_worker:
        variant, path = args.memory_worker
        sys.path.insert(0, str(HERE))
        import systems

        systems.finish_worker(memory_worker(variant, Path(path)))
    sys.path.insert(0, str(HERE))
    import compare

    if not args.no_hygiene:
        _ensure_hygiene(compare.HYGIENE_ENV, argv)
    spec = Spec(args.days, args.rows_per_day, args.partitions, args.seed)
    tmp = None
    if args.data_dir is None:
        tmp = Path(tempfile.mkdtemp(prefix="kf-optimize-bench-"))
        data_dir = tmp
    else:
        data_dir = args.data_dir
    root = data_dir / spec.key
    load = compare._loadavg()
    started = time.time()
    if compare._busy(load):
        print(f"WARNING: load average {load:.1f} before starting: the machine is busy")
    env = {k: os.environ.get(k) for k in compare.HYGIENE_ENV}
    print(
        f"optimize comparison | kartoframe at {_git_head()} | {spec} | data: {root} | "
        f"repeat {args.repeat} (+{args.warmup} warm-up) | {os.cpu_count()} CPUs | {env}",
        flush=True,
    )
    h = compare.Harness(
        argparse.Namespace(
            data_dir=data_dir,
            systems=args.systems,
            warmup=args.warmup,
            repeat=args.repeat,
            verbose=args.verbose,
        )
    )
    try:
        with compare._quiet_warnings():
            runner = Runner(h, spec, root, args.systems)
            targets = runner.run(args.only)
    finally:
        shutil.rmtree(root / "work", ignore_errors=True)
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    busy = [r.name for r in h.results if compare._busy(r.loadavg)]
    if busy:
        print(f"\nWARNING: the machine was busy during {', '.join(busy)}: re-run those when idle.")
    elapsed = time.time() - started
    print(f"\ntotal {elapsed:.0f}s", flush=True)
    if args.json:
        payload = {
            "meta": {
                "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
                "elapsed_s": elapsed,
                "argv": argv,
                "versions": compare._versions(),
                "cpu_count": os.cpu_count(),
                "platform": platform.platform(),
                "env": env,
                "loadavg_before": load,
                "git": _git_head(),
            },
            "scenarios": [
                {**asdict(r), "measurements": [asdict(m) for m in r.measurements.values()]}
                for r in h.results
            ],
            "report": runner.report,
            "targets": targets,
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(payload, indent=1, default=str))
        print(f"results saved to {args.json}")
    return 0 if all(t["status"] in ("met", "n.a.") for t in targets) else 1


if __name__ == "__main__":
    sys.exit(main())
