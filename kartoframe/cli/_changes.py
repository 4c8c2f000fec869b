"""The ``changes`` command: the change data feed of a dataset, and the cursor to tail it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from kartoframe.cli._common import (
    BadInput,
    console,
    emit_json,
    get_ctx,
    json_option,
    plural,
    working,
)
from kartoframe.cli._query import _cell
from kartoframe.cli._tables import table
from kartoframe.cli._targets import expand_columns, resolve, split_list

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["changes_command", "changes_summary"]


def changes_summary(start: int, next_version: int, n_rows: int) -> str:
    """What a read of versions ``start`` to ``next_version - 1`` returned, in words."""
    if next_version <= start:
        return f"(no version from {start} on)"
    versions = (
        f"version {start}"
        if next_version - 1 == start
        else f"versions {start} to {next_version - 1}"
    )
    if n_rows == 0:
        return f"(no changed rows in {versions})"
    return f"({plural(n_rows, 'changed row')} in {versions})"


def _records(rows: pd.DataFrame) -> list[dict[str, Any]]:
    names = [str(c) for c in rows.columns]
    return [dict(zip(names, r)) for r in rows.itertuples(index=False, name=None)]


@click.command("changes")
@click.argument("name")
@click.option(
    "--from",
    "start",
    type=click.IntRange(min=0),
    required=True,
    metavar="V",
    help="The first version whose changes to show (the previous run's next version, to "
    "tail the dataset).",
)
@click.option(
    "--to",
    "end",
    type=click.IntRange(min=0),
    metavar="V",
    help="The last version (default: the current one).",
)
@click.option(
    "-c",
    "--columns",
    metavar="A,B",
    help="Dataset columns to show (globs allowed; default: all); _change_type, "
    "_commit_version and _commit_timestamp always follow.",
)
@click.option(
    "-w",
    "--where",
    multiple=True,
    metavar="CONDITION",
    help="Only changed rows matching this condition (the language of query --where); "
    "repeated options are and-ed.",
)
@json_option
def changes_command(
    name: str,
    start: int,
    end: int | None,
    columns: str | None,
    where: tuple[str, ...],
) -> None:
    r"""Show the rows that the commits --from V to --to V inserted, deleted and updated.

    Each row is a dataset row with _change_type (insert, delete, update_preimage,
    update_postimage), _commit_version and _commit_timestamp (UTC). Appends give inserts;
    replaced partitions and overwrites give deletes of the old rows and inserts of the
    new ones; merges record their updates (a preimage and a postimage row) and deletes
    exactly; compaction, index and metadata commits change no row. The last line is the
    next version: pass it as --from next time to see only newer changes. Versions that
    vacuum removed cannot be read (an error names the oldest readable one).

    \b
    Examples:
      kartoframe ./data changes orders --from 0
      kartoframe ./data changes orders --from 5 --to 7 --columns id,amount
      kartoframe ./data changes orders --from 5 --where "day == 2024-01-03" --json
    """
    import kartoframe as kf
    from kartoframe.cli._where import parse_predicates

    ctx = get_ctx()
    target = resolve(ctx.store(), name)
    if target.is_cube:
        raise BadInput(f"{name!r} is a cube: show the changes of one of its datasets (PREFIX++ID).")
    if end is not None and end < start - 1:
        raise BadInput(f"--to {end} is before --from {start}.")
    types = target.column_types()
    cols = split_list(columns)
    selected = expand_columns(cols, types) if cols else None
    predicates = parse_predicates(where, types) if where else None
    with working(f"reading the changes of {name}"):
        rows, next_version = kf.read_changes(
            name,
            target.store,
            start_version=start,
            end_version=end,
            columns=selected,
            predicates=predicates,
        )
    if ctx.json:
        emit_json({"rows": _records(rows), "next_version": next_version})
        return
    if len(rows):
        out = console()
        out.print(
            table(
                [str(c) for c in rows.columns],
                [[_cell(v) for v in r] for r in rows.itertuples(index=False, name=None)],
            )
        )
    click.echo(changes_summary(start, next_version, len(rows)), err=True)
    click.echo(f"next version: {next_version}")
