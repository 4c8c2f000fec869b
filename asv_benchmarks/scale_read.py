"""Large reads with default arguments, the first read of a fresh process included.

The scale issue's "large reads" goal: a full read of a sales table (10 columns, a date
and two low-cardinality strings, 20 partitions) at 10M and 30M rows, with each system's
default arguments, is at least as fast as deltalake's, *first read in a process
included*. ``compare.py`` times warm reads (an untimed warm-up round first); this script
times what a user's job pays: a fresh Python process imports the system (not timed),
then reads the table twice (both timed: the first read, then a warm one).

Each system reads the files it wrote itself (``systems.sales_dataset``, cached under
``--data-dir``). The processes alternate between systems, ``--repeat`` times each, and
run with the default allocator settings (no ``compare.py`` hygiene variables: a user's
process has none). Ratios are kartoframe's median over each peer's.

Run it with::

    .venv/bin/python asv_benchmarks/scale_read.py --data-dir bench-data --repeat 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import systems  # noqa: E402

#: the goal: kartoframe's first read at most this many times deltalake's
GOAL = 1.0


def worker(system: str, root: Path) -> dict[str, Any]:
    """Import ``system``, then time two full reads of ``root`` in this fresh process."""
    systems.use_checkout_kartoframe()
    adapter = systems.SYSTEMS[system]()
    if system == "kartoframe":
        import kartoframe  # noqa: F401
    elif system == "deltalake":
        import deltalake  # noqa: F401
    elif system == "plateau":
        import plateau.api.dataset  # noqa: F401
    import pandas  # noqa: F401
    import pyarrow.dataset  # noqa: F401

    times = []
    rows = revenue = None
    for _ in range(2):
        t0 = time.perf_counter()
        df = adapter.read_full(root)
        times.append(time.perf_counter() - t0)
        rows, revenue = len(df), systems.frame_revenue(df)
        del df
    return {"system": system, "first": times[0], "warm": times[1], "rows": rows, "revenue": revenue}


def _run_worker(system: str, root: Path) -> dict[str, Any]:
    from compare import HYGIENE_ENV  # a user's process has none of these variables

    argv = [Path(__file__).resolve(), "--worker", system, root]
    found = systems.json_worker(argv, what=f"{system} worker", drop_env=HYGIENE_ENV)
    return dict(found)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", default="10000000,30000000", help="comma-separated row counts")
    p.add_argument("--partitions", type=int, default=20)
    p.add_argument("--repeat", type=int, default=5, help="fresh processes per system and size")
    p.add_argument("--systems", default="kartoframe,deltalake,pyarrow,plateau")
    p.add_argument("--data-dir", type=Path, default=HERE.parent / "bench-data")
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--worker", nargs=2, metavar=("SYSTEM", "ROOT"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        systems.finish_worker(worker(args.worker[0], Path(args.worker[1])))

    names = [s for s in args.systems.split(",") if s]
    print(f"kartoframe loaded from: {systems.use_checkout_kartoframe()}")
    results: dict[str, Any] = {}
    failed = False
    for rows in [int(r) for r in args.rows.split(",")]:
        spec = systems.SalesSpec(rows=rows, partitions=args.partitions)
        expected = systems.expected_stats(spec, args.data_dir)
        roots = {s: systems.sales_dataset(s, spec, args.data_dir) for s in names}
        runs: dict[str, list[dict[str, Any]]] = {s: [] for s in names}
        for rep in range(args.repeat):
            order = names if rep % 2 == 0 else names[::-1]
            for s in order:
                r = _run_worker(s, roots[s])
                wrong = r["rows"] != expected["rows"] or abs(
                    r["revenue"] - expected["revenue_sum"]
                ) > 1e-6 * abs(expected["revenue_sum"])
                if wrong:
                    raise RuntimeError(
                        f"{s} at {rows:,} rows: wrong result: {r['rows']} rows, "
                        f"revenue {r['revenue']}"
                    )
                runs[s].append(r)
                print(
                    f"  {rows:>11,} rows  rep {rep + 1}/{args.repeat}  {s:<11} "
                    f"first {r['first']:.3f}s  warm {r['warm']:.3f}s",
                    flush=True,
                )
        med = {
            s: {k: statistics.median(x[k] for x in runs[s]) for k in ("first", "warm")}
            for s in names
        }
        results[str(rows)] = {"median": med, "runs": runs}
        print(
            f"\n== {rows:,} rows, {args.partitions} partitions: medians of {args.repeat} "
            "fresh processes"
        )
        print(f"   {'system':<12}{'first read':>12}{'warm read':>12}{'kf first / this':>18}")
        for s in names:
            ratio = med["kartoframe"]["first"] / med[s]["first"] if "kartoframe" in med else None
            print(
                f"   {s:<12}{med[s]['first']:>11.3f}s{med[s]['warm']:>11.3f}s"
                f"{'' if ratio is None else f'{ratio:>17.3f}x'}"
            )
        if "kartoframe" in med and "deltalake" in med:
            ratio = med["kartoframe"]["first"] / med["deltalake"]["first"]
            ok = ratio <= GOAL
            failed |= not ok
            print(
                f"   goal: first read <= {GOAL}x deltalake's: {ratio:.3f}x "
                f"{'PASS' if ok else 'FAIL'}\n"
            )
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
