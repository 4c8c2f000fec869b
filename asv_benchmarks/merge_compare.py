#!/usr/bin/env python
"""Row-level upserts: kartoframe's ``merge_dataset`` against deltalake's ``merge``.

The scenario of issue 17: a target of ``--rows`` rows (20,000,000) partitioned by ``day``
over ``--days`` days (365), with a bloom filter on ``id`` (kartoframe's statistics; deltalake
has none); a source of ``--source-rows`` rows (200,000): 1 % of them update existing ids
spread over 10 days, the rest are new ids for a new day. Columns: ``day`` (date, the
partition key), ``id`` (int64, unique), ``value`` (float64), ``kind`` (string, 8 values).
Seeded and deterministic.

Both systems merge on ``(day, id)``, updating every column of a matched row and inserting
the others: kartoframe ``merge_dataset(on=["day", "id"])``, deltalake
``merge(predicate="t.day = s.day AND t.id = s.id").when_matched_update_all()
.when_not_matched_insert_all()``. The third line is the hand-written kartothek way:
read the touched partitions, replace the rows in pandas, and write them back with
``update_dataset_from_dataframes(delete_scope=...)``.

Every timed merge starts from a fresh copy of the base table (untimed); the systems
alternate (``compare.py``'s harness: a warm-up round, a quiescent process before every
call, medians). The tables are built once (``--data-dir`` keeps them).

Examples
--------
Full run (builds 2 x 20M rows first, a few minutes)::

    .venv/bin/python asv_benchmarks/merge_compare.py --data-dir bench-data/merge

Small smoke run::

    .venv/bin/python asv_benchmarks/merge_compare.py --rows 400000 --days 40 --repeat 1
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA_VERSION = 2  # 2: statistics files in row groups (merge reads only its candidates)
UUID = "events"
FIRST_DAY = dt.date(2025, 1, 1)
#: goals of issue 17 (ratio = kartoframe time / other time)
GOAL_VS_DELTALAKE = 0.2
GOAL_VS_HANDWRITTEN = 2.0
#: reading one merge commit's change feed, as a share of a full read of the dataset
GOAL_CHANGES_VS_FULL_READ = 0.1


@dataclass(frozen=True)
class Spec:
    rows: int = 20_000_000
    days: int = 365
    source_rows: int = 200_000
    update_share: float = 0.01
    update_days: int = 10
    seed: int = 0

    @property
    def key(self) -> str:
        return (
            f"merge-r{self.rows}-d{self.days}-s{self.source_rows}-u{self.update_share}"
            f"-ud{self.update_days}-seed{self.seed}-v{DATA_VERSION}"
        )


def target_table(spec: Spec) -> Any:
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(spec.seed)
    day = np.sort(rng.integers(0, spec.days, spec.rows))
    ids = rng.permutation(spec.rows).astype("int64")
    kinds = np.array([f"k{i}" for i in range(8)], dtype=object)
    return pa.table(
        {
            "day": pa.array(np.datetime64(FIRST_DAY, "D") + day.astype("timedelta64[D]")),
            "id": ids,
            "value": rng.normal(size=spec.rows),
            "kind": pa.array(kinds[rng.integers(0, 8, spec.rows)]),
        }
    )


def source_table(spec: Spec, target: Any) -> Any:
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    rng = np.random.default_rng(spec.seed + 1)
    n_upd = int(spec.source_rows * spec.update_share)
    first = FIRST_DAY
    days = rng.choice(spec.days, spec.update_days, replace=False)
    chosen = pa.array(np.datetime64(first, "D") + np.sort(days).astype("timedelta64[D]"))
    pool = target.filter(pc.is_in(target["day"], value_set=chosen))
    upd = pool.take(pa.array(rng.choice(pool.num_rows, n_upd, replace=False)))
    n_new = spec.source_rows - n_upd
    new_day = np.datetime64(first, "D") + spec.days
    new = pa.table(
        {
            "day": pa.array(np.full(n_new, new_day)),
            "id": np.arange(spec.rows, spec.rows + n_new, dtype="int64"),
            "value": rng.normal(size=n_new),
            "kind": pa.array(np.full(n_new, "new", dtype=object)),
        }
    )
    upd = upd.set_column(2, "value", pa.array(rng.normal(size=n_upd)))
    return pa.concat_tables([upd.cast(new.schema), new])


def build(spec: Spec, root: Path, log: Any) -> dict[str, Any]:
    """The base tables of both systems and the source (cached under ``root``)."""
    import pyarrow.parquet as pq

    stamp = root / "stamp.json"
    if stamp.exists():
        return dict(json.loads(stamp.read_text()))
    shutil.rmtree(root, ignore_errors=True)
    (root / "base").mkdir(parents=True)
    t0 = time.perf_counter()
    target = target_table(spec)
    source = source_table(spec, target)
    pq.write_table(source, root / "source.parquet")
    import kartoframe as kf

    kf_path = root / "base" / "kartoframe"
    kf.store_dataframes_as_dataset(
        store=str(kf_path), dataset_uuid=UUID, dfs=[target.to_pandas()], partition_on=["day"]
    )
    kf.build_dataset_statistics(str(kf_path), UUID, bloom_filter_columns=["id"])
    log(f"   kartoframe base: {time.perf_counter() - t0:.1f}s")
    from deltalake import write_deltalake

    t1 = time.perf_counter()
    write_deltalake(str(root / "base" / "deltalake"), target, partition_by=["day"])
    log(f"   deltalake base: {time.perf_counter() - t1:.1f}s")
    info = {
        "spec": asdict(spec),
        "target_rows": target.num_rows,
        "source_rows": source.num_rows,
        "updates": int(spec.source_rows * spec.update_share),
        "build_seconds": time.perf_counter() - t0,
    }
    stamp.write_text(json.dumps(info))
    return info


def copy_table(src: Path, dst: Path) -> None:
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)


def merge_kartoframe(path: Path, source: Any) -> dict[str, Any]:
    import kartoframe as kf

    r = kf.merge_dataset(source, str(path), UUID, on=["day", "id"])
    return {
        "updated": r.rows_updated,
        "inserted": r.rows_inserted,
        "candidate_files": r.candidate_files,
        "files_rewritten": r.files_rewritten,
    }


def merge_deltalake(path: Path, source: Any) -> dict[str, Any]:
    from deltalake import DeltaTable

    m = (
        DeltaTable(str(path))
        .merge(
            source=source,
            predicate="t.day = s.day AND t.id = s.id",
            source_alias="s",
            target_alias="t",
        )
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    return {
        "updated": int(m["num_target_rows_updated"]),
        "inserted": int(m["num_target_rows_inserted"]),
    }


def merge_handwritten(path: Path, source: Any) -> dict[str, Any]:
    """kartothek's way: read the touched partitions, replace rows, write them back."""
    import pandas as pd

    import kartoframe as kf

    src = source.to_pandas()
    days = sorted(set(src["day"]))
    old = kf.read_table(UUID, str(path), predicates=[[("day", "in", days)]], dates_as_object=True)
    keys = pd.MultiIndex.from_frame(src[["day", "id"]])
    kept = old[~pd.MultiIndex.from_frame(old[["day", "id"]]).isin(keys)]
    new = pd.concat([kept, src], ignore_index=True)
    kf.update_dataset_from_dataframes(
        [new], store=str(path), dataset_uuid=UUID, delete_scope=[{"day": d} for d in days]
    )
    return {"updated": len(old) - len(kept), "inserted": len(src) - (len(old) - len(kept))}


def changes_vs_full_read(base: Path, work: Path, source: Any, repeat: int) -> dict[str, Any]:
    """Merge once into a copy of the kartoframe target, then time reading that commit's
    change feed and a full read of the dataset (medians of ``repeat`` alternating runs).
    """
    import kartoframe as kf

    copy_table(base, work)
    version = kf.merge_dataset(source, str(work), UUID, on=["day", "id"]).version
    feed_t, full_t = [], []
    rows = 0
    for _ in range(repeat + 1):  # the first round warms up
        t0 = time.perf_counter()
        feed = kf.read_changes(UUID, str(work), start_version=version, end_version=version)
        feed_t.append(time.perf_counter() - t0)
        rows = len(feed.rows)
        del feed
        t0 = time.perf_counter()
        full = kf.read_table(UUID, str(work))
        full_t.append(time.perf_counter() - t0)
        del full
    shutil.rmtree(work, ignore_errors=True)
    return {
        "feed_rows": rows,
        "feed_s": statistics.median(feed_t[1:]),
        "full_read_s": statistics.median(full_t[1:]),
    }


def memory_worker(base: Path, work: Path, source_path: Path) -> dict[str, Any]:
    """One kartoframe merge in this (fresh) process: its peak RSS growth (``VmHWM`` reset
    after the imports, a warm-up merge of a tiny table and reading the source) against the
    Arrow size of the source plus the files it rewrote.
    """
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    import kartoframe as kf

    sys.path.insert(0, str(HERE))
    import systems

    with tempfile.TemporaryDirectory() as tmp:  # warm-up: code, pools, caches
        df = pd.DataFrame({"day": [1, 2], "id": [1, 2], "value": [1.0, 2.0]})
        kf.store_dataframes_as_dataset(store=tmp, dataset_uuid="w", dfs=[df], partition_on=["day"])
        kf.merge_dataset(df.assign(value=3.0), tmp, "w", on=["day", "id"])
    source = pq.read_table(source_path)
    copy_table(base, work)
    header = kf.read_dataset_metadata(UUID, str(work)).partitions
    rss0, _ = systems.reset_peak_rss()
    r = kf.merge_dataset(source, str(work), UUID, on=["day", "id"])
    growth = systems.proc_status("VmHWM") - rss0
    rewritten = [header[lb] for lb in r.candidates]
    files = sum(pq.read_table(base / k).nbytes for k in rewritten)
    largest = max((pq.read_table(base / k).nbytes for k in rewritten), default=0)
    return {
        "rss_growth": growth,
        "source_nbytes": source.nbytes,
        "rewritten_nbytes": files,
        "largest_rewritten_nbytes": largest,
        "candidate_files": r.candidate_files,
        "pool": pa.default_memory_pool().backend_name,
    }


SYSTEMS = {
    "kartoframe": ("kartoframe", "kf merge_dataset", merge_kartoframe),
    "deltalake": ("deltalake", "deltalake merge", merge_deltalake),
    "handwritten": ("kartoframe", "kf delete_scope+append", merge_handwritten),
}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--rows", type=int, default=20_000_000)
    p.add_argument("--days", type=int, default=365)
    p.add_argument("--source-rows", type=int, default=200_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--data-dir", type=Path, default=None)
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("-v", "--verbose", action="store_true")
    p.add_argument("--memory-worker", nargs=3, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.memory_worker:
        sys.path.insert(0, str(HERE))
        import systems as sysmod

        sysmod.use_checkout_kartoframe()
        base, work, src = (Path(a) for a in args.memory_worker)
        sysmod.finish_worker(memory_worker(base, work, src))
    sys.path.insert(0, str(HERE))
    import compare
    import systems as sysmod

    sysmod.use_checkout_kartoframe()
    import pyarrow.parquet as pq

    spec = Spec(rows=args.rows, days=args.days, source_rows=args.source_rows, seed=args.seed)
    tmp = Path(tempfile.mkdtemp(prefix="kf-merge-bench-")) if args.data_dir is None else None
    data_dir = (args.data_dir or tmp).resolve()  # type: ignore[union-attr]
    root = data_dir / spec.key
    print(
        f"merge comparison | {spec} | data: {root} | repeat {args.repeat} "
        f"(+{args.warmup} warm-up) | {os.cpu_count()} CPUs | load {compare._loadavg()}",
        flush=True,
    )
    h = compare.Harness(
        argparse.Namespace(
            data_dir=data_dir,
            systems=["kartoframe", "deltalake"],
            warmup=args.warmup,
            repeat=args.repeat,
            verbose=args.verbose,
        )
    )
    try:
        info = build(spec, root, h.log)
        source = pq.read_table(root / "source.parquet")
        expect = {"updated": info["updates"], "inserted": info["source_rows"] - info["updates"]}
        ops: dict[str, Any] = {}
        details: dict[str, Any] = {}
        for name, (system, _, fn) in SYSTEMS.items():
            work = root / "work" / name

            def check(r: dict[str, Any], name: str = name) -> str | None:
                details[name] = r
                got = {k: r[k] for k in expect}
                return None if got == expect else f"wrong result {got}, expected {expect}"

            ops[name] = compare.Op(
                run=lambda fn=fn, work=work: fn(work, source),
                check=check,
                before=lambda system=system, work=work: copy_table(root / "base" / system, work),
            )
        labels = {k: v[1] for k, v in SYSTEMS.items()}
        with compare._quiet_warnings():
            res = h.run_alternating(
                "merge",
                "upsert (merge) into the target",
                asdict(spec),
                spec.source_rows,
                ops,
                labels,
            )
    finally:
        shutil.rmtree(root / "work", ignore_errors=True)
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    med = {k: statistics.median(m.times) for k, m in res.measurements.items() if m.times}
    print("\n== medians")
    for k, t in med.items():
        print(f"   {labels[k]:<28}{t:8.3f}s")
    rows = []
    if "kartoframe" in med and "deltalake" in med:
        r = med["kartoframe"] / med["deltalake"]
        rows.append(("kf / deltalake", r, GOAL_VS_DELTALAKE))
    if "kartoframe" in med and "handwritten" in med:
        r = med["kartoframe"] / med["handwritten"]
        rows.append(("kf / delete_scope+append", r, GOAL_VS_HANDWRITTEN))
    print("\n== targets (time ratio, lower is better)")
    for what, r, goal in rows:
        print(f"   {what:<28}{r:8.3f}x  goal <= {goal}x  {'met' if r <= goal else 'NOT met'}")
    if "kartoframe" in details:
        d = details["kartoframe"]
        print(
            f"\n   kartoframe read {d['candidate_files']} candidate files of "
            f"{spec.days} and rewrote {d['files_rewritten']}"
        )
    cdf = changes_vs_full_read(
        root / "base" / "kartoframe", root / "work" / "changes", source, args.repeat
    )
    details["changes"] = cdf
    share = cdf["feed_s"] / cdf["full_read_s"]
    print(
        f"\n== change feed of the merge commit: {cdf['feed_rows']} rows in "
        f"{cdf['feed_s']:.3f}s; full read {cdf['full_read_s']:.3f}s; ratio {share:.3f}x  "
        f"goal < {GOAL_CHANGES_VS_FULL_READ}x  "
        f"{'met' if share < GOAL_CHANGES_VS_FULL_READ else 'NOT met'}"
    )
    rows.append(("change feed / full read", share, GOAL_CHANGES_VS_FULL_READ))
    if args.data_dir is not None:  # the peak memory of a kartoframe merge, in a subprocess
        work = root / "work" / "memory"
        argv = [Path(__file__).resolve(), "--memory-worker", root / "base" / "kartoframe"]
        argv += [work, root / "source.parquet"]
        failure = "memory worker failed: it printed no result"
        try:
            mem = sysmod.json_worker(argv, what="memory worker")
        except RuntimeError as exc:  # its message ends with the worker's stderr
            mem, failure = None, str(exc)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        if mem is not None:
            details["memory"] = mem
            ref = mem["source_nbytes"] + mem["rewritten_nbytes"]
            ratio = mem["rss_growth"] / ref
            print(
                f"\n== peak RSS of a kartoframe merge ({mem['pool']} pool): "
                f"{mem['rss_growth'] / 2**20:.0f} MiB = {ratio:.2f}x (source "
                f"{mem['source_nbytes'] / 2**20:.1f} MiB + rewritten files "
                f"{mem['rewritten_nbytes'] / 2**20:.1f} MiB in Arrow)  goal <= 2x  "
                f"{'met' if ratio <= 2 else 'NOT met'}"
            )
            rows.append(("peak RSS / (source + rewritten)", ratio, 2.0))
        else:
            print(failure)
    if args.json:
        args.json.write_text(
            json.dumps({"spec": asdict(spec), "medians": med, "details": details}, indent=1)
        )
    return 0 if all(r <= goal for _, r, goal in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
