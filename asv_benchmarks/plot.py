#!/usr/bin/env python
"""Turn the JSON of ``compare.py --json`` into PNG charts for docs/benchmarks.md.

Writes one chart per scenario (median time per system, whiskers from the fastest to the
slowest timed round, throughput in the labels when the scenario has a row count) and one
chart of every kartoframe-vs-peer ratio line with its target::

    .venv/bin/python asv_benchmarks/compare.py         # -> bench-results/compare.json
    .venv/bin/python asv_benchmarks/plot.py            # reads it, writes docs/_static/
    .venv/bin/python asv_benchmarks/plot.py --markdown # image links too

Systems that were skipped, failed or gave a wrong result have no bar; the chart names them
with their status. The charts state the machine (CPU count, platform) and the date of the
run from the JSON's ``meta`` block.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE.parent / "docs" / "_static"
#: compare.py's default results file (git-ignored folder).
DEFAULT_RESULTS = HERE.parent / "bench-results" / "compare.json"
PREFIX = "benchmarks"

#: One colour per system, kartoframe first (colour-blind safe, Okabe-Ito).
COLOURS = {
    "kartoframe": "#0072B2",
    "plateau": "#E69F00",
    "deltalake": "#009E73",
    "pyarrow": "#CC79A7",
}
OTHER_COLOUR = "#999999"
STATUS_COLOURS = {"PASS": "#009E73", "FAIL": "#D55E00", "n.a.": "#999999"}


def load(path: Path) -> dict[str, Any]:
    """Read and sanity-check a ``compare.py --json`` file."""
    data = json.loads(path.read_text())
    if not isinstance(data, dict) or not isinstance(data.get("scenarios"), list):
        raise ValueError(f"{path} is not the JSON of compare.py --json (no 'scenarios' list).")
    return data


def _machine(meta: dict[str, Any]) -> str:
    parts = []
    if meta.get("started"):
        parts.append(str(meta["started"])[:10])
    if meta.get("cpu_count"):
        parts.append(f"{meta['cpu_count']} CPUs")
    if meta.get("platform"):
        parts.append(str(meta["platform"]).split("-with-")[0])
    versions = meta.get("versions") or {}
    if versions:
        parts.append(", ".join(f"{k} {v}" for k, v in sorted(versions.items())))
    return " | ".join(parts)


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_scenario(scenario: dict[str, Any], meta: dict[str, Any], out: Path) -> Path | None:
    """One horizontal bar chart: median time per system (lower is better)."""
    plt = _pyplot()
    measurements = scenario.get("measurements") or []
    usable = [m for m in measurements if m.get("status") == "ok" and m.get("times")]
    if not usable:
        return None
    rows = scenario.get("rows")
    labels, medians, lows, highs, colours = [], [], [], [], []
    for m in usable:
        times = [float(t) for t in m["times"]]
        med = statistics.median(times)
        label = m.get("label") or m["system"]
        if rows:
            label += f"\n{rows / med / 1e6:,.1f} Mrows/s"
        labels.append(label)
        medians.append(med)
        lows.append(med - min(times))
        highs.append(max(times) - med)
        colours.append(COLOURS.get(m["system"], OTHER_COLOUR))
    missing = [
        f"{m.get('label') or m['system']}: {m.get('status')}"
        for m in measurements
        if m not in usable
    ]
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.75 * len(usable)), dpi=100)
    y = list(range(len(usable)))[::-1]
    ax.barh(y, medians, xerr=[lows, highs], color=colours, capsize=4, height=0.6)
    ax.set_yticks(y, labels)
    ax.set_xlabel("median time [s] (lower is better; whiskers: fastest to slowest round)")
    for yi, med in zip(y, medians):
        ax.annotate(
            f"{med:.3g} s", (med, yi), xytext=(4, 6), textcoords="offset points", fontsize=8
        )
    ax.set_xlim(0, max(m + h for m, h in zip(medians, highs)) * 1.25)
    title = scenario.get("title") or scenario.get("name", "")
    ax.set_title(title, fontsize=11, loc="left")
    foot = _machine(meta)
    if missing:
        foot = "not shown: " + "; ".join(missing) + ("\n" + foot if foot else "")
    if foot:
        fig.text(0.01, 0.01, foot, fontsize=6.5, color="#555555", va="bottom")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout(rect=(0, 0.06 if foot else 0, 1, 1))
    path = out / f"{PREFIX}-{scenario.get('name', 'scenario')}.png"
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)
    return path


def plot_checks(checks: Sequence[dict[str, Any]], meta: dict[str, Any], out: Path) -> Path | None:
    """All ratio lines: speed-up of kartoframe over each peer (log scale), with targets."""
    plt = _pyplot()
    lines = [c for c in checks if c.get("speedup") is not None]
    if not lines:
        return None
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.45 * len(lines)), dpi=100)
    y = list(range(len(lines)))[::-1]
    values = [float(c["speedup"]) for c in lines]
    colours = [STATUS_COLOURS.get(str(c.get("status")), OTHER_COLOUR) for c in lines]
    # bars grow from 1x (parity): right = kartoframe faster, left = slower
    ax.barh(y, [v - 1.0 for v in values], color=colours, height=0.6, left=1.0)
    ax.set_xscale("log")
    from matplotlib.ticker import FuncFormatter

    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
    ax.axvline(1.0, color="black", linewidth=0.8)
    for yi, c, v in zip(y, lines, values):
        target = c.get("target_speedup")
        if target is not None:
            ax.plot([float(target)] * 2, [yi - 0.35, yi + 0.35], color="black", linewidth=2)
        ax.annotate(
            f"{v:.2f}x", (max(v, 1.0), yi), xytext=(4, -3), textcoords="offset points", fontsize=8
        )
    ax.set_yticks(y, [str(c.get("check", "")) for c in lines], fontsize=8)
    ax.set_xlabel("speed-up = peer median time / kartoframe median time (log; > 1: faster)")
    ax.set_title("kartoframe vs peers (black tick: target)", fontsize=11, loc="left")
    ax.set_xlim(min([*values, 0.5]) / 1.5, max([*values, 2.0]) * 2.5)
    foot = _machine(meta)
    if foot:
        fig.text(0.01, 0.01, foot, fontsize=6.5, color="#555555", va="bottom")
    ax.grid(axis="x", which="both", alpha=0.3)
    fig.tight_layout(rect=(0, 0.05 if foot else 0, 1, 1))
    path = out / f"{PREFIX}-speedups.png"
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)
    return path


def plot_all(data: dict[str, Any], out: Path) -> list[Path]:
    """Write every chart of a results file into ``out``; return the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    meta = data.get("meta") or {}
    written: list[Path] = []
    checks = plot_checks(data.get("checks") or [], meta, out)
    if checks is not None:
        written.append(checks)
    for scenario in data["scenarios"]:
        path = plot_scenario(scenario, meta, out)
        if path is not None:
            written.append(path)
    return written


def markdown(paths: Sequence[Path], docs: Path) -> str:
    """Image links for benchmarks.md (paths relative to the docs folder)."""
    lines = []
    for p in paths:
        rel = p.resolve().relative_to(docs.resolve()) if p.is_absolute() else p
        lines.append(f"![{p.stem}]({rel.as_posix()})")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``plot.py [RESULTS.json] [--out DIR] [--markdown]``."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument(
        "results",
        type=Path,
        nargs="?",
        default=DEFAULT_RESULTS,
        help=f"JSON written by compare.py [{DEFAULT_RESULTS}]",
    )
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"folder [{DEFAULT_OUT}]")
    p.add_argument("--markdown", action="store_true", help="also print image links")
    args = p.parse_args(argv)
    try:
        data = load(args.results)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    paths = plot_all(data, args.out)
    for path in paths:
        print(path)
    if args.markdown:
        docs = args.out.parent if args.out.name == "_static" else args.out
        print(markdown([p.resolve() for p in paths], docs.resolve()))
    if not paths:
        print("nothing to plot: no scenario has a usable measurement", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
