"""The ``merge`` command: upsert the rows of a Parquet file into a dataset."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from kartoframe.cli._common import BadInput, emit_json, get_ctx, json_option, plural, working
from kartoframe.cli._targets import resolve, split_list
from kartoframe.format.naming import label_directory

if TYPE_CHECKING:
    from kartoframe.plan.merge import MergeResult

__all__ = ["merge_command", "merge_lines"]


def merge_lines(uuid: str, result: MergeResult) -> list[str]:
    """The human summary of a merge: counts, then (dry run) the candidate partitions and
    files.
    """
    counts = (
        f"{plural(result.source_rows, 'source row')}: {result.rows_matched:,} matched, "
        f"{result.rows_not_matched:,} not matched"
    )
    found = (
        f"{plural(result.candidate_files, 'candidate file')} in "
        f"{plural(result.candidate_partitions, 'partition')}"
    )
    if result.dry_run:
        lines = [
            f"Would merge into {uuid}: {counts}; {found}.",
            f"Would update {result.rows_updated:,}, delete {result.rows_deleted:,} and insert "
            f"{result.rows_inserted:,} rows, rewriting {plural(result.files_rewritten, 'file')}.",
        ]
        by_partition: dict[str, list[str]] = {}
        for label in result.candidates:
            by_partition.setdefault(label_directory(label) or "(no partition keys)", []).append(
                label
            )
        for partition, labels in by_partition.items():
            lines.append(f"  {partition}: {plural(len(labels), 'file')}")
            lines += [f"    {label}" for label in labels]
        return lines
    if result.version is None:
        return [f"Nothing merged into {uuid}: {counts}; {found}; no row to change."]
    return [
        f"Merged into {uuid}: {counts}; {found}.",
        f"Updated {result.rows_updated:,}, deleted {result.rows_deleted:,} and inserted "
        f"{result.rows_inserted:,} rows; {plural(result.files_rewritten, 'file')} rewritten, "
        f"{plural(result.files_added, 'file')} added; version {result.version}.",
    ]


#: ``(option, choices (the first is the default), help)`` of what happens to rows
_WHEN: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("--when-matched", ("update", "delete", "ignore"), "a dataset row a source row matches."),
    ("--when-not-matched", ("insert", "ignore"), "a source row that matches nothing."),
    (
        "--when-not-matched-by-source",
        ("ignore", "delete"),
        "a dataset row (selected by --where) that no source row matches.",
    ),
)


def _when_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The ``--when-*`` options of :data:`_WHEN`, in order."""
    for flag, choices, what in reversed(_WHEN):
        command = click.option(
            flag,
            type=click.Choice(list(choices)),
            default=choices[0],
            show_default=True,
            help=f"What happens to {what}",
        )(command)
    return command


@click.command("merge")
@click.argument("name")
@click.argument("source", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--on",
    "on",
    multiple=True,
    required=True,
    metavar="COL[,COL]",
    help="Key column(s) matching source and dataset rows (repeatable or comma-separated).",
)
@_when_options
@click.option(
    "-w",
    "--where",
    multiple=True,
    metavar="CONDITION",
    help="Merge only into the dataset rows matching this condition (the language of "
    "query --where); repeated options are and-ed.",
)
@click.option("--add-columns", is_flag=True, help="Let the source add nullable columns.")
@click.option(
    "--dry-run",
    is_flag=True,
    help="Print the candidate partitions and files and the counts of matched and not "
    "matched rows; write nothing.",
)
@json_option
def merge_command(
    name: str,
    source: str,
    on: tuple[str, ...],
    when_matched: str,
    when_not_matched: str,
    when_not_matched_by_source: str,
    where: tuple[str, ...],
    add_columns: bool,
    dry_run: bool,
) -> None:
    r"""Upsert the rows of a Parquet file into a dataset (Delta's MERGE).

    Source rows are matched to dataset rows on the --on columns: matched rows are updated
    (or deleted, or left), the others inserted. Only files that can hold a source key are
    read, and only files with a matched row are rewritten, in one commit. Two source rows
    with the same key are an error; keys with a null never match.

    \b
    Examples:
      kartoframe ./data merge orders changes.parquet --on day,id --dry-run
      kartoframe ./data merge orders changes.parquet --on id --when-matched delete
      kartoframe ./data merge orders day3.parquet --on id --where "day == 3" \
          --when-not-matched-by-source delete
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    import kartoframe as kf
    from kartoframe.cli._where import parse_predicates

    ctx = get_ctx()
    keys = [c for item in on for c in split_list(item) or []]
    if not keys:
        raise BadInput("--on must name at least one key column.")
    target = resolve(ctx.store(), name)
    if target.is_cube:
        raise BadInput(f"{name!r} is a cube: merge into one of its datasets (PREFIX++ID).")
    try:
        table = pq.read_table(source)
    except (OSError, pa.ArrowException) as e:
        raise BadInput(f"Cannot read {source!r} as Parquet: {e}") from e
    predicates = parse_predicates(where, target.column_types()) if where else None
    with working(f"merging into {name}"):
        result = kf.merge_dataset(
            table,
            target.store,
            name,
            on=keys,
            when_matched=when_matched,
            when_not_matched=when_not_matched,
            when_not_matched_by_source=when_not_matched_by_source,
            predicates=predicates,
            schema_evolution="add_columns" if add_columns else None,
            dry_run=dry_run,
        )
    if ctx.json:
        emit_json(result.to_dict())
    else:
        click.echo("\n".join(merge_lines(name, result)))
