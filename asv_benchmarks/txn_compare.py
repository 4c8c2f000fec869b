#!/usr/bin/env python
"""Commit protocol benchmark: concurrent appends, and store requests per read and commit.

Two parts, on local disk and on an S3-compatible server (moto's ``ThreadedMotoServer`` on
127.0.0.1, started here):

1. **Concurrent appends.** 1, 2 and 4 writer *processes* (spawned, released together by a
   barrier) each commit ``--commits`` appends of a small frame (3 rows, one partition) to one
   dataset with a secondary index. Reported: per-commit latency (median, p95) of the whole
   ``update_dataset_from_dataframes`` call (data file + commit), and the throughput (all commits
   / wall time from release to the last commit). Every run is checked: the dataset ends with
   exactly all rows, and the log has one version per commit.

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

    .venv/bin/python asv_benchmarks/txn_compare.py                # ~1-2 min
    .venv/bin/python asv_benchmarks/txn_compare.py --commits 10 --json txn.json
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


def writer(spec: dict[str, Any], wid: int, commits: int, barrier: Any, out: Any) -> None:
    """One writer process: wait for the others, then commit ``commits`` appends."""
    import kartoframe as kf

    store = _store(spec)
    kf.read_dataset_metadata("ds", store)  # warm the connection and the imports
    barrier.wait()
    latencies = []
    for k in range(commits):
        t0 = time.perf_counter()
        kf.update_dataset_from_dataframes([_frame(wid, k)], store=store, dataset_uuid="ds")
        latencies.append(time.perf_counter() - t0)
    out.put((wid, latencies, time.perf_counter()))


def seed(spec: dict[str, Any]) -> None:
    import kartoframe as kf

    kf.store_dataframes_as_dataset(
        _store(spec), "ds", [_frame(-1, 0)], partition_on=["p"], secondary_indices=["wid"]
    )


def check(spec: dict[str, Any], writers: int, commits: int) -> None:
    import kartoframe as kf

    store = _store(spec)
    df = kf.read_table("ds", store)
    assert len(df) == 3 * (1 + writers * commits), "lost or phantom rows"
    pairs = Counter(zip(df["wid"], df["k"], strict=True))
    assert all(n == 3 for n in pairs.values()) and len(pairs) == 1 + writers * commits
    history = kf.dataset_history("ds", store)
    assert [r.version for r in history] == list(range(writers * commits, -1, -1))


def concurrent_appends(spec: dict[str, Any], writers: int, commits: int) -> dict[str, Any]:
    seed(spec)
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(writers + 1)
    out = ctx.Queue()
    procs = [
        ctx.Process(target=writer, args=(spec, wid, commits, barrier, out))
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
    wall = max(end for _, _, end in results) - t0
    lat = sorted(x for _, ls, _ in results for x in ls)
    check(spec, writers, commits)
    return {
        "writers": writers,
        "commits": writers * commits,
        "latency_median_ms": 1000 * statistics.median(lat),
        "latency_p95_ms": 1000 * lat[min(len(lat) - 1, int(0.95 * len(lat)))],
        "throughput_per_s": writers * commits / wall,
    }


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
    seed(spec)
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
    ap.add_argument("--writers", default="1,2,4")
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
    results: dict[str, Any] = {"concurrent_appends": {}, "requests": {}}
    n_bucket = 0

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
        for backend in args.backends.split(","):
            rows = []
            for w in (int(x) for x in args.writers.split(",")):
                row = concurrent_appends(new_spec(backend), w, args.commits)
                rows.append(row)
                print(
                    f"{backend:6s} writers={w}: {row['commits']:3d} commits, median "
                    f"{row['latency_median_ms']:6.1f} ms, p95 {row['latency_p95_ms']:6.1f} ms, "
                    f"{row['throughput_per_s']:5.1f} commits/s",
                    flush=True,
                )
            results["concurrent_appends"][backend] = rows
        for backend in ("s3", "memory"):
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


if __name__ == "__main__":
    main()
