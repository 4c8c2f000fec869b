"""Commits on large datasets: what one small append costs as the dataset grows.

The scale issue's "commits whose cost grows with the change" measure. For each
``--partitions`` size and header format, the synthesised dataset of ``compare.py``'s
``header`` scenario (plateau writes 8 real partitions, its header is re-written listing N)
is copied to a scratch folder, then each system appends one 4-row file to an existing
partition, ``--appends`` times in a row:

- kartoframe: ``update_dataset_from_dataframes`` (its first append records plateau's header
  in the transaction log: a one-off, reported apart);
- plateau: ``update_dataset_from_dataframes`` (``--peer-appends`` times: each one reads
  and rewrites the whole header too).

Reported per size: the first append, then the median, min and max of the others (every
tenth version writes a checkpoint and every ninth append folds the statistics deltas:
the max shows them). The growth between sizes is the point: the header (decode, encode,
hash, write) is the floor both systems pay while plateau must see every commit.

After its appends, kartoframe reads versions 9 (rebuilt from the first entry, which
lists every partition, and 9 diffs), 10 (a checkpoint) and the newest (the checkpoint
and the diffs after it), opening and planning only (a partition predicate that selects
nothing).

Run it with::

    .venv/bin/python asv_benchmarks/commit_scale.py --data-dir bench-data
    .venv/bin/python asv_benchmarks/commit_scale.py --partitions 100000 --formats json --appends 5
"""

from __future__ import annotations

import argparse
import glob
import json
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
import systems

REPO = Path(__file__).resolve().parents[1]


def _frame(store: Path) -> pd.DataFrame:
    """4 rows of a real file of the dataset, with its partition values."""
    real = sorted(
        glob.glob(str(store / systems.UUID / "table" / "**" / "*.parquet"), recursive=True)
    )[0]
    df = pq.read_table(real).to_pandas().head(4)
    for k, v in re.findall(r"(country|month)=([^/]+)", real):
        df[k] = v
    return df


def _kartoframe(store: Path, df: pd.DataFrame) -> None:
    import kartoframe as kf

    kf.update_dataset_from_dataframes(
        [df.copy()],
        store=str(store),
        dataset_uuid=systems.UUID,
        partition_on=list(systems.PARTITION_ON),
    )


def _plateau(store: Path, df: pd.DataFrame) -> None:
    from plateau.api.dataset import update_dataset_from_dataframes

    update_dataset_from_dataframes(
        [df.copy()],
        store=systems._plateau_url(store),
        dataset_uuid=systems.UUID,
        partition_on=list(systems.PARTITION_ON),
    )


APPENDERS: dict[str, Callable[[Path, pd.DataFrame], None]] = {
    "kartoframe": _kartoframe,
    "plateau": _plateau,
}


#: A partition predicate that selects nothing: a read that opens and plans only.
NOTHING = [[("country", "==", "__none__")]]


def _time_travel(store: Path, versions: Sequence[int]) -> dict[str, float]:
    """Seconds of kartoframe reading each of ``versions`` (open and plan only)."""
    import kartoframe as kf

    out = {}
    for v in versions:
        t = time.perf_counter()
        kf.read_table(systems.UUID, str(store), predicates=NOTHING, version=v)
        out[f"version {v}"] = time.perf_counter() - t
    return out


def time_appends(
    source: Path, system: str, appends: int, scratch: Path
) -> tuple[list[float], dict[str, float]]:
    """Seconds of ``appends`` appends by ``system`` to a fresh copy of ``source``, and of
    kartoframe's reads of past versions afterwards (the one before the first checkpoint,
    the checkpoint's, the newest: as many of them as exist).
    """
    tmp = Path(tempfile.mkdtemp(dir=scratch))
    try:
        store = tmp / "store"
        shutil.copytree(source, store)
        df = _frame(store)
        out = []
        for _ in range(appends):
            t = time.perf_counter()
            APPENDERS[system](store, df)
            out.append(time.perf_counter() - t)
        travel: dict[str, float] = {}
        if system == "kartoframe":
            # version 0 records plateau's header; the appends are versions 1..appends
            travel = _time_travel(store, sorted({v for v in (9, 10, appends) if v <= appends}))
        return out, travel
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def summary(times: Sequence[float]) -> dict[str, float]:
    """First append, and median/min/max of the others."""
    rest = list(times[1:]) or list(times)
    return {
        "first": times[0],
        "median": statistics.median(rest),
        "min": min(rest),
        "max": max(rest),
    }


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--partitions", default="10000,100000,1000000", help="header sizes [10k,100k,1M]"
    )
    p.add_argument("--formats", default="json,msgpack", help="header formats [json,msgpack]")
    p.add_argument("--appends", type=int, default=12, help="kartoframe appends per size [12]")
    p.add_argument("--peer-appends", type=int, default=3, help="plateau appends per size [3]")
    p.add_argument("--systems", default="kartoframe,plateau")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data-dir", type=Path, default=REPO / "bench-data")
    p.add_argument("--json", type=Path, help="save the results to this JSON file")
    a = p.parse_args(argv)
    a.data_dir.mkdir(parents=True, exist_ok=True)
    results: list[dict[str, Any]] = []
    for fmt in a.formats.split(","):
        previous: float | None = None
        for n in (int(x) for x in a.partitions.split(",")):
            source = systems.header_dataset(
                "plateau", systems.HeaderSpec(n, fmt, a.seed), a.data_dir
            )
            line = [f"{fmt:8s} {n:>9,} partitions"]
            for system in a.systems.split(","):
                count = a.appends if system == "kartoframe" else a.peer_appends
                times, travel = time_appends(source, system, count, a.data_dir)
                s = summary(times)
                results.append(
                    {"format": fmt, "partitions": n, "system": system, **s, "time_travel": travel}
                )
                line.append(
                    f"{system}: first {s['first']:.3f} s, median {s['median']:.3f} s "
                    f"(min {s['min']:.3f}, max {s['max']:.3f})"
                )
                if travel:
                    line.append(
                        "reads of " + ", ".join(f"{k} {v:.3f} s" for k, v in travel.items())
                    )
                if system == "kartoframe":
                    if previous is not None:
                        line.append(f"growth x{s['median'] / previous:.1f}")
                    previous = s["median"]
            print(" | ".join(line), flush=True)
    if a.json is not None:
        a.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
