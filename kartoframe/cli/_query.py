"""The query command: datasets (predicates) and cubes (conditions), four output formats."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click

from kartoframe.cli._common import BadInput, console, emit_json, get_ctx, json_option, json_value
from kartoframe.cli._tables import KIND_OPTION
from kartoframe.cli._targets import Kind, Target, expand_columns, parse_where, resolve, split_list

if TYPE_CHECKING:
    import pandas as pd

#: Rows a terminal table shows when no --limit is given.
TABLE_ROWS = 100

Groups = list[tuple[str | None, "pd.DataFrame"]]


def _take(groups: Groups, limit: int | None) -> Groups:
    """The first ``limit`` rows over all groups (at least one group, for the columns)."""
    if limit is None or not groups:
        return groups
    out: Groups = []
    left = limit
    for label, df in groups:
        if left <= 0:
            break
        part = df.iloc[:left]
        left -= len(part)
        out.append((label, part))
    return out or [(groups[0][0], groups[0][1].iloc[:0])]


def _group_label(df: pd.DataFrame, columns: Sequence[str]) -> str:
    return ", ".join(f"{c}={df[c].iloc[0]}" for c in columns)


def query_dataset(
    target: Target,
    where: Sequence[str],
    columns: list[str] | None,
    partition_by: list[str] | None,
    limit: int | None,
    progress: bool,
) -> Groups:
    """Read the matching rows of a dataset, reading no more files than ``limit`` needs."""
    import pyarrow as pa

    import kartoframe as kf
    from kartoframe.api.read import plan_read
    from kartoframe.execution.kernel import iter_plan_batches, to_frame
    from kartoframe.plan.conditions import Conjunction
    from kartoframe.progress import ProgressBar

    md = target.dataset()
    conditions = parse_where(where, {f.name: f.type for f in md.schema})
    predicates = Conjunction(conditions).to_predicates() if conditions else None
    cols = expand_columns(columns, md.schema.names) if columns is not None else None
    if partition_by:
        read_cols = None if cols is None else cols + [p for p in partition_by if p not in cols]
        frames = kf.read_dataset_as_dataframes(
            target.name,
            target.store,
            columns=read_cols,
            predicates=predicates,
            dispatch_by=partition_by,
        )
        groups: Groups = [(_group_label(f, partition_by), f) for f in frames if len(f)]
        return _take(groups, limit) if groups else [(None, frames[0] if frames else _empty())]
    plan, st = plan_read(target.name, target.store, columns=cols, predicates=predicates)
    n_files = sum(len(t.files) for t in plan.tasks)
    tables = []
    rows = 0
    with ProgressBar(
        f"reading {target.name}", n_files, enabled=progress and n_files > 1, unit="files"
    ) as bar:
        for table, n in iter_plan_batches(plan, st):
            tables.append(table)
            rows += table.num_rows
            bar.advance(n)
            if limit is not None and rows >= limit:
                break
    result = pa.concat_tables(tables)
    if limit is not None:
        result = result.slice(0, limit)
    return [(None, to_frame(plan, result))]


def _empty() -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame()


def query_cube(
    target: Target,
    where: Sequence[str],
    columns: list[str] | None,
    partition_by: list[str] | None,
    limit: int | None,
    datasets: Sequence[str],
    dimension_columns: list[str] | None,
    progress: bool,
) -> Groups:
    """Run a cube query (the kartothek semantics of :func:`kartoframe.query_cube`)."""
    import kartoframe as kf
    from kartoframe.progress import ProgressBar

    assert target.cube is not None
    types = target.column_types()
    conditions = parse_where(where, types)
    payload = expand_columns(columns, types) if columns is not None else None
    with ProgressBar(f"querying cube {target.name}", None, enabled=progress):
        frames = kf.query_cube(
            target.cube,
            target.store,
            conditions=conditions or None,
            datasets=list(datasets) or None,
            dimension_columns=dimension_columns,
            partition_by=partition_by,
            payload_columns=payload,
        )
    if not frames:
        return [(None, _empty())]
    groups: Groups = [(_group_label(f, partition_by) if partition_by else None, f) for f in frames]
    return _take(groups, limit)


# -- output --------------------------------------------------------------------------------


def _cell(value: Any) -> str:
    v = json_value(value)
    if v is None:
        return "<NA>"
    if isinstance(v, list | dict):
        return json.dumps(v, ensure_ascii=False)
    return str(v)


def _print_tables(groups: Groups, limit: int | None) -> None:
    from rich.table import Table
    from rich.text import Text

    out = console()
    total = sum(len(df) for _, df in groups)
    budget = TABLE_ROWS if limit is None else None
    shown = 0
    for label, df in groups:
        if budget is not None and shown >= budget:
            break
        part = df if budget is None else df.iloc[: budget - shown]
        shown += len(part)
        t = Table(title=None if label is None else Text(label), title_justify="left")
        if df.shape[1] == 0:
            out.print("(no columns)")
            continue
        for c in df.columns:
            t.add_column(Text(str(c)), overflow="fold")
        for row in part.itertuples(index=False, name=None):
            t.add_row(*(Text(_cell(v)) for v in row))
        out.print(t)
    if total == 0:
        click.echo("(no rows)", err=True)
    elif budget is not None and total > shown:
        click.echo(
            f"(showing the first {shown:,} of {total:,} rows; use --limit or --format csv)",
            err=True,
        )
    else:
        click.echo(f"({total:,} row{'' if total == 1 else 's'})", err=True)


def _concat(groups: Groups) -> pd.DataFrame:
    import pandas as pd

    frames = [df for _, df in groups]
    if len(frames) == 1:
        return frames[0]
    return pd.concat(frames, ignore_index=True)


def write_result(groups: Groups, fmt: str, output: str | None, limit: int | None) -> None:
    """Print or save the query result in the chosen format."""
    if fmt == "table" and output is None:
        _print_tables(groups, limit)
        return
    df = _concat(groups)
    if fmt in ("csv", "table"):
        text = df.to_csv(index=False)
        if output is None:
            click.echo(text, nl=False)
        else:
            with open(output, "w", encoding="utf-8", newline="") as f:
                f.write(text)
    elif fmt == "json":
        records = [dict(zip(map(str, df.columns), row)) for row in df.itertuples(index=False)]
        if output is None:
            emit_json(records)
        else:
            with open(output, "w", encoding="utf-8") as f:
                emit_json(records, file=f)
    else:  # parquet
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pandas(df, preserve_index=False)
        if output is not None:
            pq.write_table(table, output)
        else:
            if sys.stdout.isatty():
                raise BadInput("Parquet is binary: pass --output FILE or redirect the output.")
            sink = pa.BufferOutputStream()
            pq.write_table(table, sink)
            sys.stdout.buffer.write(sink.getvalue().to_pybytes())
            sys.stdout.buffer.flush()
    if output is not None:
        rows = len(df)
        click.echo(f"Wrote {rows:,} rows to {output}.", err=True)


@click.command("query")
@click.argument("name")
@click.option(
    "-w",
    "--where",
    multiple=True,
    metavar="CONDITION",
    help="Row condition, e.g. 'x > 1', \"country in (DE, FR)\", 'day >= 2024-01-31'; "
    "repeat it or join with 'and'. Values are read with the column's type.",
)
@click.option(
    "-c",
    "--columns",
    metavar="A,B",
    help="Columns to return (globs allowed). For a cube: payload columns (dimension and "
    "partition columns are always returned).",
)
@click.option(
    "--partition-by",
    metavar="P",
    help="Indexed column(s): one group per value (partition keys or secondary indices).",
)
@click.option("-n", "--limit", type=click.IntRange(min=0), help="Return at most N rows.")
@click.option(
    "-f",
    "--format",
    "fmt",
    type=click.Choice(["table", "csv", "json", "parquet"]),
    default="table",
    show_default=True,
    help="Output format (--json is the same as --format json).",
)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write to FILE.")
@click.option(
    "--dataset",
    "datasets",
    multiple=True,
    metavar="ID",
    help="Cube only: query these datasets (repeatable; the seed is always included).",
)
@click.option(
    "--dimension-columns",
    metavar="A,B",
    help="Cube only: an ordered subset of the dimension columns (projects the cube).",
)
@KIND_OPTION
@json_option
def query_command(
    name: str,
    where: tuple[str, ...],
    columns: str | None,
    partition_by: str | None,
    limit: int | None,
    fmt: str,
    output: str | None,
    datasets: tuple[str, ...],
    dimension_columns: str | None,
    kind: Kind,
) -> None:
    r"""Read the rows of a dataset or a cube that match conditions.

    Partitions, secondary indices and statistics prune the files read; for a cube the
    seed defines the cells and the other datasets are joined (see docs/cubes.md). Tables
    on a terminal show the first 100 rows unless --limit is given; csv, json and parquet
    write everything.

    \b
    Examples:
      kartoframe ./data query sales --where "country == DE" --columns day,units
      kartoframe ./data query sales -w "units > 5 and day >= 2024-01-02" -n 10
      kartoframe ./data query sales -w "country in (DE, FR)" --format csv > out.csv
      kartoframe ./data query geo --where "COUNTRY_CODE == DE" --partition-by YEAR
      kartoframe ./data query geo -c SALES --format parquet --output geo.parquet
    """
    ctx = get_ctx()
    if ctx.json:
        fmt = "json"
    target = resolve(ctx.store(), name, kind)
    cols = split_list(columns)
    pby = split_list(partition_by) or None
    progress = ctx.progress
    if target.is_cube:
        groups = query_cube(
            target,
            where,
            cols,
            pby,
            limit,
            datasets,
            split_list(dimension_columns),
            progress,
        )
    else:
        if datasets or dimension_columns:
            raise BadInput("--dataset and --dimension-columns only apply to cubes.")
        groups = query_dataset(target, where, cols, pby, limit, progress)
    write_result(groups, fmt, output, limit)
