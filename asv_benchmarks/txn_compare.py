#!/usr/bin/env python
"""Commit protocol benchmark: concurrent appends, and store requests per read and commit.

Two parts, on local disk and on an S3-compatible server (moto's ``ThreadedMotoServer`` on
127.0.0.1, started here):

1. **Concurrent appends.** 1, 4 and 8 writer *processes* (spawned, released together by a
   barrier) each commit ``--commits`` appends of a small frame (3 rows, one partition) to one
   table, for each system:

   - kartoframe: ``update_dataset_from_dataframes`` into a dataset partitioned by ``p`` with a
     secondary index on ``wid`` (every commit also merges the index and the statistics);
   - kartoframe-noindex: the same without the index (a Delta table has none);
   - deltalake: ``write_deltalake(..., mode="append", partition_by=["p"])`` into a Delta table
     on the same store (delta-rs retries a commit that lost the race for its version; on S3
     it publishes log entries with conditional writes, which the server honours).

   Reported: per-commit latency (median, p95) of the whole call (data file + commit), the
   throughput (commits that landed / wall time from release to the last commit) and the
   commits that raised instead of landing (delta-rs gives up after 15 attempts), then the ratio
   kartoframe / deltalake throughput per store and writer count against the goal (>= 1.0: no
   worse than deltalake, and every kartoframe commit landed). Every run is checked: the table
   holds exactly the appends whose call returned, once each, and the log one version per
   commit.

2. **Requests.** A request-counting fsspec wrapper (``DirFileSystem`` with an empty prefix that
   counts every call) measures: opening the current version (``load_dataset``), a whole
   ``read_table``, an append commit (``commit_write`` after its data file is written), and the
   whole append call. On S3 the HTTP requests the moto server answered are counted too (its
   request log), since one fsspec call can be more than one HTTP request. On local disk
   kartoframe publishes with the operating system directly (temp file + ``os.link`` /
   ``os.replace``), so a filesystem wrapper does not see the writes; the memory store shows
   the call count instead (its put-if-absent is two calls: ``exists`` + write under a lock).

Examples
--------
::

    .venv/bin/python asv_benchmarks/txn_compare.py                # ~3-4 min
    .venv/bin/python asv_benchmarks/txn_compare.py --commits 10 --json txn.json
    .venv/bin/python asv_benchmarks/txn_compare.py --systems kartoframe --writers 1,2,4
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing as mp
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(REPO)]  # kartoframe from this checkout

os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")


def _frame(wid: int, k: int) -> Any:
    import pandas as pd

    return pd.DataFrame({"p": [k % 4] * 3, "wid": [wid] * 3, "k": [k] * 3, "v": [1.0, 2.0, 3.0]})


def _store(spec: dict[str, Any], filesystem: Any = None) -> Any:
    import kartoframe as kf

    return kf.Store(spec["url"], filesystem=filesystem, **spec["options"])


#: Throughput goal of the concurrent appends (issue 15): kartoframe / deltalake commits per
#: second, at every store and writer count, and every commit lands.
THROUGHPUT_GOAL = 1.0
#: ``kartoframe-noindex`` is the same append without the secondary index: a Delta table has
#: none, and each kartoframe commit with one also merges and rewrites the index file.
SYSTEMS = ("kartoframe", "kartoframe-noindex", "deltalake")


def _arrow_frame(wid: int, k: int) -> Any:
    """:func:`_frame` as the Arrow table deltalake writes."""
    import pyarrow as pa

    return pa.Table.from_pandas(_frame(wid, k), preserve_index=False)


def _delta(spec: dict[str, Any]) -> tuple[str, dict[str, str]]:
    """The Delta table's URI and delta-rs storage options, beside the kartoframe dataset."""
    url = spec["url"].rstrip("/") + "-delta"
    opts = spec["options"]
    if not url.startswith("s3://"):
        return url.removeprefix("file://"), {}
    return url, {
        "AWS_ENDPOINT_URL": opts["client_kwargs"]["endpoint_url"],
        "AWS_ACCESS_KEY_ID": opts["key"],
        "AWS_SECRET_ACCESS_KEY": opts["secret"],
        "AWS_REGION": "us-east-1",
        "AWS_ALLOW_HTTP": "true",
    }


def _appender(system: str, spec: dict[str, Any]) -> Any:
    """A function ``(wid, k) -> None`` that commits one append of :func:`_frame`."""
    if system == "deltalake":
        from deltalake import DeltaTable, write_deltalake

        uri, options = _delta(spec)
        DeltaTable(uri, storage_options=options)  # warm the connection and the imports

        def append_delta(wid: int, k: int) -> None:
            write_deltalake(
                uri,
                _arrow_frame(wid, k),
                mode="append",
                partition_by=["p"],
                storage_options=options,
            )

        return append_delta
    import kartoframe as kf

    store = _store(spec)
    kf.read_dataset_metadata("ds", store)  # warm the connection and the imports

    def append_kf(wid: int, k: int) -> None:
        kf.update_dataset_from_dataframes([_frame(wid, k)], store=store, dataset_uuid="ds")

    return append_kf


def writer(
    system: str, spec: dict[str, Any], wid: int, commits: int, barrier: Any, out: Any
) -> None:
    """One writer process: wait for the others, then commit ``commits`` appends.

    An append that raises is reported (its ``k`` and the error), not retried: it did not land.
    """
    append = _appender(system, spec)
    barrier.wait()
    latencies = []
    failed: dict[int, str] = {}
    for k in range(commits):
        t0 = time.perf_counter()
        try:
            append(wid, k)
        except Exception as exc:
            failed[k] = f"{type(exc).__name__}: {exc}"[:300]
        latencies.append(time.perf_counter() - t0)
    out.put((wid, latencies, time.perf_counter(), failed))


def seed(system: str, spec: dict[str, Any]) -> None:
    if system == "deltalake":
        from deltalake import write_deltalake

        uri, options = _delta(spec)
        write_deltalake(uri, _arrow_frame(-1, 0), partition_by=["p"], storage_options=options)
        return
    import kartoframe as kf

    indices = [] if system == "kartoframe-noindex" else ["wid"]
    kf.store_dataframes_as_dataset(
        _store(spec), "ds", [_frame(-1, 0)], partition_on=["p"], secondary_indices=indices
    )


def check(system: str, spec: dict[str, Any], landed: set[tuple[int, int]]) -> None:
    """Exactly the appends that returned landed, once each, one version per commit."""
    if system == "deltalake":
        from deltalake import DeltaTable

        uri, options = _delta(spec)
        dt = DeltaTable(uri, storage_options=options)
        df = dt.to_pandas()
        versions = dt.version()
    else:
        import kartoframe as kf

        store = _store(spec)
        df = kf.read_table("ds", store)
        versions = max(r.version for r in kf.dataset_history("ds", store))
    pairs = Counter(zip(df["wid"].tolist(), df["k"].tolist(), strict=True))
    want = landed | {(-1, 0)}
    assert set(pairs) == want, f"{system}: lost or phantom appends"
    assert all(n == 3 for n in pairs.values()), f"{system}: duplicated rows"
    assert versions == len(landed), f"{system}: {versions} versions for {len(landed)} commits"


def concurrent_appends(
    spec: dict[str, Any], writers: int, commits: int, system: str = "kartoframe"
) -> dict[str, Any]:
    seed(system, spec)
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(writers + 1)
    out = ctx.Queue()
    procs = [
        ctx.Process(target=writer, args=(system, spec, wid, commits, barrier, out))
        for wid in range(writers)
    ]
    for p in procs:
        p.start()
    barrier.wait()
    t0 = time.perf_counter()
    results = [out.get(timeout=600) for _ in procs]
    for p in procs:
        p.join()
        assert p.exitcode == 0
    wall = max(end for _, _, end, _ in results) - t0
    lat = sorted(x for _, ls, _, _ in results for x in ls)
    errors = [e for *_, failed in results for e in failed.values()]
    landed = {(w, k) for w, _, _, failed in results for k in range(commits) if k not in failed}
    check(system, spec, landed)
    return {
        "system": system,
        "writers": writers,
        "commits": writers * commits,
        "failed": len(errors),
        "first_error": errors[0] if errors else None,
        "latency_median_ms": 1000 * statistics.median(lat),
        "latency_p95_ms": 1000 * lat[min(len(lat) - 1, int(0.95 * len(lat)))],
        "throughput_per_s": len(landed) / wall,
    }


def throughput_ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """kartoframe / deltalake throughput (commits landed per second) for each writer count
    measured for both; a goal is met if the ratio is at least :data:`THROUGHPUT_GOAL` and
    every kartoframe commit landed.
    """
    by = {(r["system"], r["writers"]): r["throughput_per_s"] for r in rows}
    fails = {(r["system"], r["writers"]): r["failed"] for r in rows}
    out = []
    for (system, w), kf_tp in sorted(by.items(), key=lambda kv: kv[0][1]):
        if system != "deltalake" and ("deltalake", w) in by:
            ratio = kf_tp / by[("deltalake", w)]
            met = ratio >= THROUGHPUT_GOAL and fails[(system, w)] == 0
            out.append({"system": system, "writers": w, "ratio": ratio, "met": met})
    return out


# ------------------------------------------------------------------------------ requests
def counting_fs(fs: Any) -> Any:
    """An fsspec wrapper counting every call kartoframe's storage layer makes."""
    from fsspec.implementations.dirfs import DirFileSystem

    class Counting(DirFileSystem):
        cachable = False

        def __init__(self) -> None:
            super().__init__(path="", fo="", fs=fs)
            self.calls: Counter[str] = Counter()

    verbs = [
        "cat_file",
        "pipe_file",
        "open",
        "rm_file",
        "rm",
        "isfile",
        "exists",
        "info",
        "ls",
        "find",
        "size",
    ]
    for verb in verbs:
        base = getattr(DirFileSystem, verb)

        def make(base: Any, verb: str) -> Any:
            def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
                self.calls[verb] += 1
                return base(self, *args, **kwargs)

            return counted

        setattr(Counting, verb, make(base, verb))
    return Counting()


class HttpCounter(logging.Handler):
    """Counts the requests moto's HTTP server logs (werkzeug)."""

    def __init__(self) -> None:
        super().__init__()
        self.n = 0

    def emit(self, record: logging.LogRecord) -> None:
        if '"' in record.getMessage():
            self.n += 1


def requests(spec: dict[str, Any], http: HttpCounter | None) -> dict[str, Any]:
    import kartoframe as kf
    from kartoframe.execution.write import commit_write, write_chunk
    from kartoframe.storage.resolve import load_dataset

    base_store = _store(spec)
    seed("kartoframe", spec)
    for k in range(1, 4):  # some history
        kf.update_dataset_from_dataframes([_frame(0, k)], base_store, "ds")
    fs = counting_fs(base_store.fs)
    store = _store(spec, filesystem=fs)
    out: dict[str, Any] = {}

    def measure(name: str, fn: Any) -> Any:
        fs.calls.clear()
        before = http.n if http else 0
        result = fn()
        out[name] = {"fsspec_calls": sum(fs.calls.values()), "calls": dict(fs.calls)}
        if http:
            out[name]["http_requests"] = http.n - before
        return result

    measure("open current version", lambda: load_dataset(store, "ds"))
    measure("read_table (4 data files)", lambda: kf.read_table("ds", store))
    base = load_dataset(store, "ds")
    chunk = write_chunk(store, "ds", _frame(0, 11), partition_on=["p"], index_columns=["wid"])
    measure("append commit (1 index)", lambda: commit_write(store, "ds", [chunk], base=base))
    measure(
        "append, whole call (1 index)",
        lambda: kf.update_dataset_from_dataframes([_frame(0, 12)], store, "ds"),
    )
    noidx = "ds-noindex"
    kf.store_dataframes_as_dataset(base_store, noidx, [_frame(0, 0)], partition_on=["p"])
    base = load_dataset(store, noidx)
    chunk = write_chunk(store, noidx, _frame(0, 13), partition_on=["p"])
    measure("append commit (no index)", lambda: commit_write(store, noidx, [chunk], base=base))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commits", type=int, default=8, help="appends per writer")
    ap.add_argument("--writers", default="1,4,8")
    ap.add_argument("--systems", default=",".join(SYSTEMS), help="any of " + ",".join(SYSTEMS))
    ap.add_argument("--no-requests", action="store_true", help="skip the request counts")
    ap.add_argument("--backends", default="local,s3")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()

    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.INFO)
    http = HttpCounter()
    logging.getLogger("werkzeug").addHandler(http)
    logging.getLogger("werkzeug").propagate = False
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    tmp = Path(tempfile.mkdtemp(prefix="kf-txn-bench-"))
    results: dict[str, Any] = {"concurrent_appends": {}, "throughput_ratios": {}, "requests": {}}
    n_bucket = 0
    missed = 0

    def new_spec(backend: str) -> dict[str, Any]:
        nonlocal n_bucket
        n_bucket += 1
        if backend == "local":
            return {"url": f"file://{tmp}/run-{n_bucket}", "options": {}}
        if backend == "memory":
            return {"url": f"memory://kf-txn-bench-{n_bucket}", "options": {}}
        bucket = f"kf-txn-bench-{n_bucket}"
        client.create_bucket(Bucket=bucket)
        return {
            "url": f"s3://{bucket}/root",
            "options": {
                "key": "testing",
                "secret": "testing",
                "client_kwargs": {"endpoint_url": endpoint},
                "skip_instance_cache": True,
            },
        }

    try:
        systems = [x for x in args.systems.split(",") if x]
        unknown = set(systems) - set(SYSTEMS)
        if unknown:
            ap.error(f"unknown systems {sorted(unknown)}; choose from {SYSTEMS}")
        for backend in args.backends.split(","):
            rows = []
            for w in (int(x) for x in args.writers.split(",")):
                for system in systems:  # both systems back to back at each writer count
                    row = concurrent_appends(new_spec(backend), w, args.commits, system)
                    rows.append(row)
                    failed = f", {row['failed']} FAILED ({row['first_error']})"
                    print(
                        f"{backend:6s} {system:18s} writers={w}: {row['commits']:3d} commits, "
                        f"median {row['latency_median_ms']:6.1f} ms, "
                        f"p95 {row['latency_p95_ms']:6.1f} ms, "
                        f"{row['throughput_per_s']:5.1f} commits/s landed"
                        + (failed if row["failed"] else ""),
                        flush=True,
                    )
            results["concurrent_appends"][backend] = rows
            ratios = throughput_ratios(rows)
            results["throughput_ratios"][backend] = ratios
            for r in ratios:
                missed += not r["met"]
                print(
                    f"{backend:6s} throughput {r['system']} / deltalake, writers={r['writers']}: "
                    f"{r['ratio']:.2f}x (goal >= {THROUGHPUT_GOAL:.1f}: "
                    f"{'met' if r['met'] else 'MISSED'})",
                    flush=True,
                )
        for backend in () if args.no_requests else ("s3", "memory"):
            counted = requests(new_spec(backend), http if backend == "s3" else None)
            results["requests"][backend] = counted
            for name, c in counted.items():
                extra = f", {c['http_requests']} HTTP" if "http_requests" in c else ""
                print(f"{backend:6s} {name:30s} {c['fsspec_calls']:3d} calls{extra}  {c['calls']}")
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    if missed:
        sys.exit(f"{missed} throughput goal(s) missed")


if __name__ == "__main__":
    main()
