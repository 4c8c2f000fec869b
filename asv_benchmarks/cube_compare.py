#!/usr/bin/env python
"""Compare kartoframe's cube queries with kartothek 5.3's ``query_cube`` on the same data.

kartothek 5.3 needs its own environment (pandas 1.5, pyarrow 10): its side runs in
``.venv-kartothek53`` (create it with ``bash tests/golden/make_kartothek53_env.sh``) as a
subprocess of this script (``--worker``), and each side times its queries in its own
process. Rounds alternate (kartothek, kartoframe, kartothek, kartoframe, ...); medians and
ratios are reported. Both processes run with the allocator settings of ``compare.py``.

The cube (generated once, cached under ``bench-data/cube``):

* ``seed``: dimensions ``x`` (16,000 values) x ``y`` (125 values) = 2,000,000 cells,
  partitioned by ``p`` = ``y`` (125 partitions), payload ``v1``, index column ``i`` =
  ``y // 5`` (each value in 5 partitions);
* ``enrich``: payload ``v2`` on a random 60 % of the cells, same partitioning;
* ``lowdim``: dimension ``x`` only, payload ``v3``, unpartitioned.

kartothek builds the cube (``build_cube`` + ``extend_cube``); both systems query that store,
so they read the same files. kartoframe's own build of the same data is queried too (column
"own files"). The build itself is timed too (line ``build``): in every round each side
builds the cube into new folders from the inputs already in memory, one untimed build and
``--build-repeat`` timed ones.

Each line is printed with its goal from issue 19 (ratio = kartoframe median time /
kartothek median time; see :data:`GOALS`), the worst round's ratio and PASS/FAIL; the
projection query's goal must hold in every round. The exit status is 1 when a goal fails
or the results differ, 2 when the kartothek environment is missing, else 0.

Examples
--------
::

    .venv/bin/python asv_benchmarks/cube_compare.py            # full run, ~2-3 min
    .venv/bin/python asv_benchmarks/cube_compare.py --quick    # smaller cube, 2 repeats
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
KTK_PYTHON = REPO / ".venv-kartothek53" / "bin" / "python"
DATA_VERSION = 1

#: name -> (description, query spec). Specs are neutral (both sides build their own calls).
QUERIES: dict[str, tuple[str, dict[str, Any]]] = {
    "full": ("full query (3 datasets)", {}),
    "enrich_condition": (
        "condition on an enrich payload column (v2 > 0.5)",
        {"conditions": [["v2", ">", 0.5]]},
    ),
    "projection": (
        "projection onto x (payload v3)",
        {"dimension_columns": ["x"], "payload_columns": ["v3"]},
    ),
    "index_partition_by": (
        "index condition i == 3, partition_by p (eager)",
        {"conditions": [["i", "==", 3]], "partition_by": ["p"]},
    ),
    "index_partition_by_dask": (
        "index condition i == 3, partition_by p (dask, computed)",
        {"conditions": [["i", "==", 3]], "partition_by": ["p"], "dask": True},
    ),
}

#: The build line: ``build_cube`` (seed + enrich) and ``extend_cube`` (lowdim) into a fresh
#: store, the inputs already in memory (``--build-repeat``; 0 leaves it out).
BUILD = "build"
BUILD_DESCRIPTION = "build_cube (seed, enrich) + extend_cube (lowdim) into a new store"

#: The goals of issue 19 against kartothek 5.3: query name -> (the issue's wording, largest
#: time ratio kartoframe / kartothek, held). A held goal must also hold in every round.
GOALS: dict[str, tuple[str, float, bool]] = {
    "full": ("full query", 0.15, False),
    "enrich_condition": ("restrictive query", 0.15, False),
    "projection": ("projection query", 0.15, True),
    "index_partition_by": ("index + partition_by query", 0.25, False),
    "index_partition_by_dask": ("dask query", 0.25, False),
    BUILD: ("cube build", 0.33, False),
}


def goal_text(goal: float | None, held: bool = False) -> str:
    """The goal in the issue's wording, e.g. ``<= 0.15x time, every round``."""
    if goal is None:
        return "none"
    text = f"{goal:g}"
    text = text if "." in text else f"{text}.0"
    return f"<= {text}x time" + (", every round" if held else "")


def evaluate_goals(runs: dict[str, list[dict[str, Any]]], names: list[str]) -> list[dict[str, Any]]:
    """Medians, ratios and goal status of every query in ``names`` (and the unmeasured goals).

    ``runs`` maps ``kartothek``, ``kartoframe`` and ``kartoframe_own`` to one entry per round
    (``{query: {"times": [...], "summary": {...}}}``). ``ratio`` = kartoframe median /
    kartothek median over all timed calls (kartoframe on kartothek's files), ``worst_ratio``
    = the largest ratio of the per-round medians (rounds paired in the order they ran).
    """
    out: list[dict[str, Any]] = []
    for name in names:
        sides = {k: v for k, v in runs.items() if v and name in v[0]}
        med = {
            k: statistics.median(t for r in v for t in r[name]["times"]) for k, v in sides.items()
        }
        per_round = [
            statistics.median(f[name]["times"]) / statistics.median(k[name]["times"])
            for k, f in zip(runs["kartothek"], runs["kartoframe"], strict=False)
        ]
        same: bool | None = None  # builds: checked through the queries on kartoframe's build
        if name != BUILD:
            ktk_summary = runs["kartothek"][0][name]["summary"]
            same = all(_same(ktk_summary, v[0][name]["summary"]) for k, v in sides.items())
        measure, goal, held = GOALS[name] if name in GOALS else (QUERIES[name][0], None, False)
        ratio = med["kartoframe"] / med["kartothek"]
        worst = max(per_round) if per_round else None
        status, reason = "n.a.", ""
        if same is False:
            status, reason = "FAIL", "results differ from kartothek's"
        elif goal is not None:
            met = ratio <= goal
            if held and worst is not None and worst > goal:
                met, reason = False, f"worst round {worst:.3f}x misses the goal"
            status = "PASS" if met else "FAIL"
        out.append(
            {
                "query": name,
                "measure": measure,
                "description": BUILD_DESCRIPTION if name == BUILD else QUERIES[name][0],
                "median_s": med,
                "ratio": ratio,
                "worst_ratio": worst,
                "speedup": med["kartothek"] / med["kartoframe"],
                "goal_ratio": goal,
                "held": held,
                "target": goal_text(goal, held),
                "same_result": same,
                "status": status,
                "reason": reason,
                "summary": runs["kartoframe"][0][name]["summary"],
            }
        )
    if BUILD not in names:
        measure, goal, held = GOALS[BUILD]
        out.append(
            {
                "query": BUILD,
                "measure": measure,
                "description": BUILD_DESCRIPTION,
                "median_s": None,
                "ratio": None,
                "worst_ratio": None,
                "speedup": None,
                "goal_ratio": goal,
                "held": held,
                "target": goal_text(goal, held),
                "same_result": None,
                "status": "n.a.",
                "reason": "not measured in this run (--build-repeat 0 or --only)",
                "summary": None,
            }
        )
    return out


SAME_TEXT = {True: "yes", False: "NO", None: "-"}


def print_goals(rows: list[dict[str, Any]]) -> None:
    """Print the comparison table (ratio = kartoframe median time / kartothek median time)."""
    print(
        f"{'query':<26}{'measure':<28}{'kartothek':>11}{'kartoframe':>12}{'ratio':>8}"
        f"{'worst':>8}{'speed-up':>10}{'own files':>11}  {'same':<6}{'target':<27}status"
    )
    for r in rows:
        med = r["median_s"]
        if med is None:
            cells = f"{'-':>11}{'-':>12}{'-':>8}{'-':>8}{'-':>10}{'-':>11}  {'-':<6}"
        else:
            worst = f"{r['worst_ratio']:.3f}x" if r["worst_ratio"] is not None else "-"
            own = f"{med['kartoframe_own']:.3f}s" if "kartoframe_own" in med else "-"
            cells = (
                f"{med['kartothek']:>10.3f}s{med['kartoframe']:>11.3f}s{r['ratio']:>7.3f}x"
                f"{worst:>8}{r['speedup']:>9.1f}x{own:>11}  "
                f"{SAME_TEXT[r['same_result']]:<6}"
            )
        reason = f"  ({r['reason']})" if r["reason"] else ""
        print(f"{r['query']:<26}{r['measure']:<28}{cells}{r['target']:<27}{r['status']}{reason}")


CUBE = {"dimension_columns": ["x", "y"], "partition_columns": ["p"], "index_columns": ["i"]}


# --------------------------------------------------------------------------------------------
# shared (runs in both environments: stdlib, numpy, pandas, pyarrow only)
# --------------------------------------------------------------------------------------------


def summarize(dfs: list[Any]) -> dict[str, Any]:
    """Rows per frame and rounded column sums: enough to see both sides return the same."""
    sums: dict[str, float] = {}
    for df in dfs:
        for c in df.columns:
            s = df[c]
            if str(s.dtype) not in ("object", "str", "string"):
                sums[c] = sums.get(c, 0.0) + float(s.astype("float64").sum())
    return {
        "frames": len(dfs),
        "rows": sum(len(d) for d in dfs),
        "columns": list(dfs[0].columns) if dfs else [],
        "sums": {k: round(v, 3) for k, v in sorted(sums.items())},
    }


def time_queries(run: Any, names: list[str], repeat: int) -> dict[str, Any]:
    """One warm-up call (its result summarised), then ``repeat`` timed calls per query."""
    out: dict[str, Any] = {}
    for name in names:
        spec = QUERIES[name][1]
        summary = summarize(run(spec))
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            run(spec)
            times.append(time.perf_counter() - t0)
        out[name] = {"times": times, "median": statistics.median(times), "summary": summary}
    return out


# --------------------------------------------------------------------------------------------
# kartothek worker (runs inside .venv-kartothek53)
# --------------------------------------------------------------------------------------------


def _ktk_imports() -> Any:
    import warnings

    warnings.filterwarnings("ignore")
    import storefact
    from kartothek.core.cube.conditions import C
    from kartothek.core.cube.cube import Cube

    return storefact, C, Cube


def _ktk_conditions(C: Any, spec: dict[str, Any]) -> Any:
    import numpy as np

    out = []
    for col, op, value in spec.get("conditions", []):
        v = np.int64(value) if isinstance(value, int) else value
        out.append({"==": C(col) == v, ">": C(col) > v}[op])
    return out or None


def read_inputs(data_dir: Path) -> dict[str, Any]:
    """The three input frames of the cube."""
    import pandas as pd

    return {n: pd.read_parquet(data_dir / f"{n}.parquet") for n in ("seed", "enrich", "lowdim")}


def timed_builds(build: Any, work_dir: Path, repeat: int) -> dict[str, Any]:
    """One untimed warm-up build, then ``repeat`` timed builds, each into a new folder."""
    import shutil

    times = []
    for i in range(1 + repeat):
        target = work_dir / f"build-{i}"
        shutil.rmtree(target, ignore_errors=True)
        t0 = time.perf_counter()
        build(target)
        dt = time.perf_counter() - t0
        shutil.rmtree(target, ignore_errors=True)
        if i:
            times.append(dt)
    return {BUILD: {"times": times, "median": statistics.median(times), "summary": None}}


def worker_build(data_dir: Path, store_dir: Path, frames: dict[str, Any] | None = None) -> None:
    """Build the cube with kartothek (eager build_cube + extend_cube)."""
    from kartothek.io.eager_cube import build_cube, extend_cube

    storefact, _, Cube = _ktk_imports()
    store = storefact.get_store_from_url(f"hfs://{store_dir}")
    cube = Cube(uuid_prefix="bench", **CUBE)
    frames = frames if frames is not None else read_inputs(data_dir)
    build_cube(data={"seed": frames["seed"], "enrich": frames["enrich"]}, cube=cube, store=store)
    extend_cube(
        data={"lowdim": frames["lowdim"]}, cube=cube, store=store, partition_on={"lowdim": []}
    )


def worker_query(store_dir: Path, names: list[str], repeat: int) -> dict[str, Any]:
    """Time kartothek's query_cube / query_cube_dataframe on a store."""
    from kartothek.io.dask.dataframe_cube import query_cube_dataframe
    from kartothek.io.eager_cube import query_cube

    storefact, C, Cube = _ktk_imports()
    store = storefact.get_store_from_url(f"hfs://{store_dir}")
    cube = Cube(uuid_prefix="bench", **CUBE)

    def run(spec: dict[str, Any]) -> list[Any]:
        kw = {
            "conditions": _ktk_conditions(C, spec),
            "dimension_columns": spec.get("dimension_columns"),
            "partition_by": spec.get("partition_by"),
            "payload_columns": spec.get("payload_columns"),
        }
        if spec.get("dask"):
            df = query_cube_dataframe(cube=cube, store=lambda: store, **kw).compute()
            return [df] if len(df) else []
        return query_cube(cube=cube, store=store, **kw)

    return time_queries(run, names, repeat)


# --------------------------------------------------------------------------------------------
# kartoframe side and orchestration (project venv)
# --------------------------------------------------------------------------------------------


def generate(data_dir: Path, nx: int, ny: int) -> None:
    """Write the three input frames as plain Parquet (deterministic)."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(42)
    x = np.tile(np.arange(nx, dtype="int64"), ny)
    y = np.repeat(np.arange(ny, dtype="int64"), nx)
    seed = pd.DataFrame({"x": x, "y": y, "p": y, "i": y // 5, "v1": rng.random(len(x))})
    mask = rng.random(len(x)) < 0.6
    enrich = pd.DataFrame(
        {"x": x[mask], "y": y[mask], "p": y[mask], "v2": rng.random(int(mask.sum()))}
    )
    lowdim = pd.DataFrame({"x": np.arange(nx, dtype="int64"), "v3": rng.random(nx)})
    data_dir.mkdir(parents=True, exist_ok=True)
    for name, df in (("seed", seed), ("enrich", enrich), ("lowdim", lowdim)):
        df.to_parquet(data_dir / f"{name}.parquet", index=False)


def _kartoframe() -> Any:
    """Import kartoframe from this checkout (whatever the script directory is)."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    import kartoframe

    return kartoframe


def kf_build(data_dir: Path, store_dir: Path, frames: dict[str, Any] | None = None) -> None:
    """Build the same cube with kartoframe."""
    kf = _kartoframe()
    store_dir.mkdir(parents=True, exist_ok=True)
    store = kf.Store(f"file://{store_dir}")
    cube = kf.Cube(uuid_prefix="bench", **CUBE)
    frames = frames if frames is not None else read_inputs(data_dir)
    kf.build_cube({"seed": frames["seed"], "enrich": frames["enrich"]}, cube, store)
    kf.extend_cube({"lowdim": frames["lowdim"]}, cube, store, partition_on={"lowdim": []})


def kf_query(store_dir: Path, names: list[str], repeat: int) -> dict[str, Any]:
    """Time kartoframe's query_cube / query_cube_dataframe on a store."""
    kf = _kartoframe()

    store = kf.Store(f"file://{store_dir}")
    cube = kf.Cube(uuid_prefix="bench", **CUBE)

    def run(spec: dict[str, Any]) -> list[Any]:
        conds = [
            {"==": kf.C(c) == v, ">": kf.C(c) > v}[op] for c, op, v in spec.get("conditions", [])
        ]
        kw = {
            "conditions": conds or None,
            "dimension_columns": spec.get("dimension_columns"),
            "partition_by": spec.get("partition_by"),
            "payload_columns": spec.get("payload_columns"),
        }
        if spec.get("dask"):
            df = kf.query_cube_dataframe(cube, store, **kw).compute()
            return [df] if len(df) else []
        return kf.query_cube(cube, store, **kw)

    return time_queries(run, names, repeat)


def _ktk_subprocess(args: list[str]) -> Any:
    sys.path.insert(0, str(HERE))
    import systems

    argv = [Path(__file__).resolve(), "--worker", *args]
    return systems.json_worker(argv, what="kartothek worker", python=KTK_PYTHON)


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    if (a["frames"], a["rows"], a["columns"]) != (b["frames"], b["rows"], b["columns"]):
        return False
    return all(
        abs(a["sums"].get(k, 0) - v) <= 1e-6 * max(1.0, abs(v)) for k, v in b["sums"].items()
    )


def _ensure_hygiene(argv: list[str]) -> None:
    """Re-execute this script with compare.py's allocator settings (see compare.py)."""
    sys.path.insert(0, str(HERE))
    from compare import HYGIENE_ENV

    missing = [k for k in HYGIENE_ENV if k not in os.environ]
    if not missing or os.environ.get("_KARTOFRAME_CUBE_BENCH_REEXEC"):
        return
    env = {**os.environ, **HYGIENE_ENV, "_KARTOFRAME_CUBE_BENCH_REEXEC": "1"}
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable, str(Path(__file__).resolve()), *argv], env)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", nargs="*", help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="small cube, 2 repeats")
    parser.add_argument("--repeat", type=int, default=5, help="timed calls per query and round")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds per system")
    parser.add_argument("--data-dir", type=Path, default=REPO / "bench-data" / "cube")
    parser.add_argument(
        "--build-repeat",
        type=int,
        default=None,
        help="timed builds per system and round, after one untimed [2; quick 1; 0: none]",
    )
    parser.add_argument("--only", default="", help="comma-separated query names (and build)")
    parser.add_argument("--json", type=Path, help="write the results as JSON")
    args = parser.parse_args(argv)

    if args.worker is not None:
        cmd, *rest = args.worker
        if cmd == "build":
            worker_build(Path(rest[0]), Path(rest[1]))
            print(json.dumps({"ok": True}))
        elif cmd == "build-timed":
            frames = read_inputs(Path(rest[0]))
            out = timed_builds(
                lambda d: worker_build(Path(rest[0]), d, frames), Path(rest[1]), int(rest[2])
            )
            print(json.dumps(out))
        else:
            names = rest[2].split(",")
            print(json.dumps(worker_query(Path(rest[0]), names, int(rest[1]))))
        return 0

    _ensure_hygiene(sys.argv[1:] if argv is None else argv)
    if not KTK_PYTHON.exists():
        print(
            f"kartothek venv missing ({KTK_PYTHON}); run bash tests/golden/make_kartothek53_env.sh"
        )
        return 2
    nx, ny = (2000, 25) if args.quick else (16000, 125)
    repeat = 2 if args.quick else args.repeat
    only = [n for n in args.only.split(",") if n]
    names = [n for n in QUERIES if not only or n in only]
    build_repeat = args.build_repeat if args.build_repeat is not None else (1 if args.quick else 2)
    if only and BUILD not in only:
        build_repeat = 0
    base = args.data_dir / f"v{DATA_VERSION}-{nx}x{ny}"
    inputs, ktk_store, kf_store = (
        base / "input",
        base / "kartothek-store",
        base / "kartoframe-store",
    )
    if not (inputs / "lowdim.parquet").exists():
        print(f"generating {nx * ny:,} cells -> {inputs}", flush=True)
        generate(inputs, nx, ny)
    if not (ktk_store / "bench++seed.by-dataset-metadata.json").exists():
        print("building the cube with kartothek 5.3 ...", flush=True)
        t0 = time.perf_counter()
        _ktk_subprocess(["build", str(inputs), str(ktk_store)])
        print(f"  {time.perf_counter() - t0:.1f} s", flush=True)
    if not (kf_store / "bench++seed.by-dataset-metadata.json").exists():
        print("building the cube with kartoframe ...", flush=True)
        t0 = time.perf_counter()
        kf_build(inputs, kf_store)
        print(f"  {time.perf_counter() - t0:.1f} s", flush=True)

    runs: dict[str, list[dict[str, Any]]] = {
        "kartothek": [],
        "kartoframe": [],
        "kartoframe_own": [],
    }
    for rnd in range(args.rounds):
        print(f"round {rnd + 1}/{args.rounds}: kartothek ...", flush=True)
        runs["kartothek"].append(
            _ktk_subprocess(["query", str(ktk_store), str(repeat), ",".join(names)])
        )
        print(f"round {rnd + 1}/{args.rounds}: kartoframe ...", flush=True)
        runs["kartoframe"].append(kf_query(ktk_store, names, repeat))
        runs["kartoframe_own"].append(kf_query(kf_store, names, repeat))
        if build_repeat > 0:
            print(f"round {rnd + 1}/{args.rounds}: builds, kartothek ...", flush=True)
            work = base / "build-work"
            ktk_builds = _ktk_subprocess(
                ["build-timed", str(inputs), str(work / "kartothek"), str(build_repeat)]
            )
            runs["kartothek"][-1].update(ktk_builds)
            print(f"round {rnd + 1}/{args.rounds}: builds, kartoframe ...", flush=True)
            frames = read_inputs(inputs)
            kf_builds = timed_builds(
                lambda d, frames=frames: kf_build(inputs, d, frames),
                work / "kartoframe",
                build_repeat,
            )
            del frames
            runs["kartoframe"][-1].update(kf_builds)

    rows = evaluate_goals(runs, [*names, BUILD] if build_repeat > 0 else names)
    report: dict[str, Any] = {
        "cells": nx * ny,
        "partitions": ny,
        "repeat": repeat,
        "queries": {r["query"]: r for r in rows if r["median_s"] is not None},
        "unmeasured_goals": {r["query"]: r for r in rows if r["median_s"] is None},
    }
    print()
    print_goals(rows)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    failed = [r["query"] for r in rows if r["status"] == "FAIL"]
    if failed:
        print(f"\nnot met or different results: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
