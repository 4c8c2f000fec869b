"""The ``check`` command: verify a dataset or cube after an incident."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from kartoframe.cli._common import EXIT_OK, console, emit_json, get_ctx, json_option
from kartoframe.cli._tables import KIND_OPTION, table
from kartoframe.cli._targets import Kind, resolve

if TYPE_CHECKING:
    from kartoframe.format.check import CheckReport

__all__ = ["EXIT_PROBLEMS", "check_command"]

#: Exit code of ``check`` when it found at least one error (warnings alone exit with 0).
EXIT_PROBLEMS = 5


@click.command("check")
@click.argument("name")
@click.option(
    "--deep",
    is_flag=True,
    help="Also decode every data page and compare each secondary index with the values "
    "of its files (reads all data).",
)
@KIND_OPTION
@json_option
def check_command(name: str, deep: bool, kind: Kind) -> int:
    r"""Check that a dataset's (or each cube dataset's) files agree with each other.

    Every data file must exist and open as Parquet with a schema the stored schema can
    read (footers only, read concurrently); indices and statistics must name only the
    partitions and files the header lists; the transaction log must replay, digests
    verified, to its checkpoints and the stored header. Nothing is changed.

    Exit code 0 when no error is found (warnings, such as a header lagging the log, are
    listed but allowed), 5 when at least one error is found.

    \b
    Examples:
      kartoframe ./data check sales
      kartoframe ./data check sales --deep
      kartoframe ./data check geo --json
    """
    import kartoframe as kf

    ctx = get_ctx()
    store = ctx.store()
    target = resolve(store, name, kind, load=False)
    if target.is_cube:
        report = kf.check_cube(name, store, deep=deep)
    else:
        report = kf.check_dataset(name, store, deep=deep)
    if ctx.json:
        emit_json(report.to_dict())
    else:
        _print(report)
    return EXIT_OK if report.ok else EXIT_PROBLEMS


def _print(report: CheckReport) -> None:
    out = console()
    what = f"{report.kind} {report.target}"
    if report.kind == "cube":
        what += f" ({len(report.datasets)} datasets)"
    files = f"{report.files_checked:,} data file{'s' if report.files_checked != 1 else ''}"
    if report.findings:
        cube = report.kind == "cube"
        columns = ["severity", "kind", *(["dataset"] if cube else []), "partition", "key"]
        rows = [
            [
                f.severity,
                f.kind,
                *([f.dataset] if cube else []),
                f.partition or "",
                f.key or "",
            ]
            for f in report.findings
        ]
        out.print(table(columns, rows))
        for i, f in enumerate(report.findings, 1):
            out.print(f"{i}. {f.message}", markup=False)
    errors, warnings = len(report.errors), len(report.warnings)
    summary = f"{errors} error{'s' if errors != 1 else ''}, {warnings} warning" + (
        "s" if warnings != 1 else ""
    )
    deep = ", deep" if report.deep else ""
    verdict = "OK" if report.ok else "PROBLEMS"
    out.print(f"{verdict}: {what}: {summary} ({files} checked{deep}).", markup=False)
