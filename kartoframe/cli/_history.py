"""The transaction-log commands: history and vacuum."""

from __future__ import annotations

from typing import Any

import click

from kartoframe.cli._common import (
    BadInput,
    confirm,
    console,
    emit_json,
    get_ctx,
    json_option,
    json_value,
    plural,
    working,
)
from kartoframe.cli._maintain import report_deletion
from kartoframe.cli._tables import KIND_OPTION, heading, table
from kartoframe.cli._targets import Kind, resolve


def _labels(labels: tuple[str, ...]) -> str:
    if not labels:
        return ""
    return f"{len(labels):,}"


@click.command("history")
@click.argument("name")
@click.option("-n", "--limit", type=click.IntRange(min=1), help="Only the newest N versions.")
@KIND_OPTION
@json_option
def history_command(name: str, limit: int | None, kind: Kind) -> None:
    r"""Show the versions of a dataset (or of each dataset of a cube), newest first.

    Each version is one commit in the dataset's transaction log: when, which operation,
    how many partitions it added and removed, who wrote it and the commit info the
    writer attached. Versions older than the last vacuum's window are gone.

    \b
    Examples:
      kartoframe ./data history sales
      kartoframe ./data history sales --limit 5 --json
      kartoframe ./data history geo
    """
    import kartoframe as kf

    ctx = get_ctx()
    target = resolve(ctx.store(), name, kind)
    records = {
        md.uuid: kf.dataset_history(md.uuid, target.store, limit=limit)
        for _, md in sorted(target.datasets.items())
    }
    if ctx.json:
        emit_json({"kind": target.kind, "name": name, "datasets": records})
        return
    out = console()
    for uuid, recs in records.items():
        if target.is_cube:
            out.print(heading(uuid))
        if not recs:
            out.print(f"No recorded versions of {uuid}.")
            continue
        rows: list[list[Any]] = []
        for r in recs:
            info = r.commit_info or {}
            if r.app_id:
                info = {**info, "app": f"{r.app_id}@{r.app_version}"}
            op = r.operation + (" (reverted)" if r.reverted else "")
            if r.reverts is not None:
                op += f" of {r.reverts}"
            rows.append(
                [
                    r.version,
                    json_value(r.timestamp),
                    op,
                    _labels(r.added),
                    _labels(r.removed),
                    r.writer,
                    ", ".join(f"{k}={json_value(v)}" for k, v in info.items()),
                ]
            )
        out.print(
            table(
                ["version", "timestamp", "operation", "added", "removed", "writer", "commit info"],
                rows,
            )
        )


@click.command("vacuum")
@click.argument("name")
@click.option(
    "--retention-hours",
    type=click.FloatRange(min=0),
    default=168.0,
    show_default=True,
    help="Keep every file a version of the last H hours needs.",
)
@click.option("--dry-run", is_flag=True, help="Only list what would be deleted.")
@click.option(
    "--force",
    is_flag=True,
    help="Allow a window below the safe minimum (24 h): only with no reader or writer running.",
)
@click.option(
    "-y", "--yes", is_flag=True, help="Do not ask for confirmation (needed without a terminal)."
)
@KIND_OPTION
@json_option
def vacuum_command(
    name: str, retention_hours: float, dry_run: bool, force: bool, yes: bool, kind: Kind
) -> None:
    r"""Delete files that no version inside the retention window needs.

    Removes data, index and statistics files of old versions, temp files of interrupted
    writes, and log entries older than the window. Versions older than the window can
    no longer be read afterwards. For a cube, every dataset is vacuumed.

    \b
    Examples:
      kartoframe ./data vacuum sales --dry-run
      kartoframe ./data vacuum sales --retention-hours 48 --yes
      kartoframe ./data vacuum geo --dry-run --json
    """
    import kartoframe as kf

    ctx = get_ctx()
    target = resolve(ctx.store(), name, kind)
    uuids = [md.uuid for _, md in sorted(target.datasets.items())]
    try:
        with working(f"listing what no version of {name} in the window needs"):
            planned = {
                u: kf.vacuum_dataset(u, target.store, retention_hours, dry_run=True, force=force)
                for u in uuids
            }
    except kf.InvalidInputError as e:
        if force or "force" not in str(e):
            raise
        raise BadInput(f"{e} (on the command line: --force)") from None
    keys = [k for v in planned.values() for k in v]
    if dry_run or not keys:
        report_deletion(keys, dry_run=dry_run)
        return
    confirm(
        f"Delete {plural(len(keys), 'file')} of {name!r} that no version of the last "
        f"{retention_hours:g} hours needs?",
        yes,
    )
    deleted: list[str] = []
    with working(f"vacuuming {name}"):
        for u in uuids:
            deleted += kf.vacuum_dataset(u, target.store, retention_hours, force=force)
    report_deletion(deleted, dry_run=False)
