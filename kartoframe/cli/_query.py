"""The query command: datasets (predicates) and cubes (conditions), four output formats."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, Any

import click

from kartoframe.cli._common import (
    BadInput,
    console,
    console_on,
    emit_json,
    get_ctx,
    json_option,
    json_value,
)
from kartoframe.cli._tables import KIND_OPTION, datasets_option
from kartoframe.cli._targets import Kind, Target, expand_columns, parse_where, resolve, split_list

if TYPE_CHECKING:
    import pandas as pd

#: Rows a terminal table shows when no --limit is given.
TABLE_ROWS = 100

Groups = list[tuple[str | None, "pd.DataFrame"]]


@dataclasses.dataclass(frozen=True)
class QueryRequest:
    """What the ``query`` command asks of a dataset or a cube, as typed (``--where``
    clauses, ``--columns``, ``--partition-by``, ``--limit``, progress bars).
    """

    where: Sequence[str] = ()
    columns: list[str] | None = None
    partition_by: list[str] | None = None
    limit: int | None = None
    progress: bool = False


@dataclasses.dataclass
class QueryResult:
    """The groups a query returned, and how much it read to get them."""

    groups: Groups
    #: Data files read, and files the plan would read in full (datasets only).
    files_read: int | None = None
    files_planned: int | None = None
    #: Reading stopped at the row budget: more rows match than were returned.
    more: bool = False

    @property
    def rows(self) -> int:
        """Rows over all groups."""
        return sum(len(df) for _, df in self.groups)


def _limit_groups(groups: Groups, limit: int | None) -> Groups:
    """At most ``limit`` rows of each group."""
    if limit is None:
        return groups
    return [(label, df.iloc[:limit]) for label, df in groups]


def _group_label(df: pd.DataFrame, columns: Sequence[str]) -> str:
    return ", ".join(f"{c}={df[c].iloc[0]}" for c in columns)


def query_dataset(target: Target, q: QueryRequest, budget: int | None = None) -> QueryResult:
    """Read the matching rows of a dataset, streaming, and stop once enough are found.

    ``q.limit`` caps the rows (of each group with ``q.partition_by``); ``budget`` caps the
    rows over all groups (a terminal table shows that many): reading stops once
    ``budget + 1`` rows are found, and ``more`` tells the caller there are more.
    """
    import pyarrow as pa

    from kartoframe.api.read import plan_read
    from kartoframe.cli._where import parse_predicates
    from kartoframe.execution.kernel import iter_plan_batches, to_frame
    from kartoframe.progress import ProgressBar

    md = target.dataset()
    predicates = parse_predicates(q.where, {f.name: f.type for f in md.schema})
    cols = expand_columns(q.columns, md.schema.names) if q.columns is not None else None
    if q.partition_by:
        return _query_groups(target, q, cols, predicates, q.partition_by, budget)
    limit = q.limit
    stop = limit if limit is not None else None if budget is None else budget + 1
    # one frame: its own nulls decide the integer dtypes (no statistics to load for that)
    plan, st = plan_read(
        target.name, target.store, columns=cols, predicates=predicates, consistent_integers=False
    )
    n_files = sum(len(t.files) for t in plan.tasks)
    tables = []
    rows = 0
    read = 0
    with ProgressBar(
        f"reading {target.name}", n_files, enabled=q.progress and n_files > 1, unit="files"
    ) as bar:
        for table, n in iter_plan_batches(plan, st):
            tables.append(table)
            rows += table.num_rows
            read += n
            bar.advance(n)
            if stop is not None and rows >= stop:
                break
    result = pa.concat_tables(tables)
    more = limit is None and budget is not None and result.num_rows > budget
    keep = limit if limit is not None else budget if more else None
    if keep is not None:
        result = result.slice(0, keep)
    return QueryResult([(None, to_frame(plan, result))], read, n_files, more)


def _query_groups(
    target: Target,
    q: QueryRequest,
    cols: list[str] | None,
    predicates: list[list[tuple[str, str, Any]]] | None,
    partition_by: list[str],
    budget: int | None,
) -> QueryResult:
    """One group per value of ``partition_by``, read one at a time, ``q.limit`` rows each."""
    import kartoframe as kf
    from kartoframe.progress import ProgressBar

    read_cols = None if cols is None else cols + [p for p in partition_by if p not in cols]
    groups: Groups = []
    shown = 0
    more = False
    first = None
    limit = q.limit
    with ProgressBar(f"reading {target.name}", None, enabled=q.progress):
        for frame in kf.read_dataset_as_dataframes__iterator(
            target.name,
            target.store,
            columns=read_cols,
            predicates=predicates,
            dispatch_by=partition_by,
        ):
            if first is None:
                first = frame.iloc[:0]
            if not len(frame):
                continue
            if budget is not None and limit is None and shown >= budget:
                more = True
                break
            part = frame if limit is None else frame.iloc[:limit]
            groups.append((_group_label(part, partition_by), part))
            shown += len(part)
    if not groups:
        groups = [(None, first if first is not None else _empty())]
    return QueryResult(groups, more=more)


def _empty() -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame()


def query_cube(
    target: Target,
    q: QueryRequest,
    datasets: Sequence[str] = (),
    dimension_columns: list[str] | None = None,
) -> QueryResult:
    """Run a cube query (the kartothek semantics of :func:`kartoframe.query_cube`).

    The seed takes part whether or not ``datasets`` names it (it defines the cells).
    """
    from kartoframe.execution.cube_join import run_merged
    from kartoframe.front.cube_query import plan_cube_query
    from kartoframe.progress import ProgressBar

    assert target.cube is not None
    types = target.column_types()
    conditions = parse_where(q.where, types)
    payload = expand_columns(q.columns, types) if q.columns is not None else None
    partition_by = q.partition_by
    selected = list(dict.fromkeys(datasets))
    if selected and target.cube.seed_dataset not in selected:
        selected.insert(0, target.cube.seed_dataset)
    with ProgressBar(f"querying cube {target.name}", None, enabled=q.progress):
        # kf.query_cube on the headers the target loaded: they are not loaded again
        plan, st = plan_cube_query(
            target.cube,
            target.store,
            conditions=conditions or None,
            datasets=selected or None,
            dimension_columns=dimension_columns,
            partition_by=partition_by,
            payload_columns=payload,
            loaded=target.datasets,
        )
        frames = run_merged(plan, st)
    if not frames:
        return QueryResult([(None, _empty())])
    groups: Groups = [(_group_label(f, partition_by) if partition_by else None, f) for f in frames]
    return QueryResult(_limit_groups(groups, q.limit))


# -- output --------------------------------------------------------------------------------


def _cell(value: Any) -> str:
    v = json_value(value)
    if v is None:
        return "<NA>"
    if isinstance(v, list | dict):
        return json.dumps(v, ensure_ascii=False)
    return str(v)


def _rows(n: int) -> str:
    return f"{n:,} row" + ("" if n == 1 else "s")


def _print_tables(result: QueryResult, limit: int | None, file: IO[str] | None = None) -> None:
    """Rich tables of the groups: the first :data:`TABLE_ROWS` rows on standard output
    without ``--limit``, every row into ``file``.
    """
    from rich.table import Table
    from rich.text import Text

    groups = result.groups
    out = console() if file is None else console_on(file)
    total = result.rows
    budget = TABLE_ROWS if limit is None and file is None else None
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
    if file is not None:
        return
    if total == 0:
        click.echo("(no rows)", err=True)
    elif result.more:
        click.echo(
            f"(showing the first {shown:,} rows; more match: use --limit N, or --format csv "
            "for all)",
            err=True,
        )
    elif budget is not None and total > shown:
        click.echo(
            f"(showing the first {shown:,} of {total:,} rows; use --limit N, or --format csv "
            "for all)",
            err=True,
        )
    else:
        click.echo(f"({_rows(total)})", err=True)


def _concat(groups: Groups) -> pd.DataFrame:
    import pandas as pd

    frames = [df for _, df in groups]
    if len(frames) == 1:
        return frames[0]
    return pd.concat(frames, ignore_index=True)


def write_result(result: QueryResult, fmt: str, output: str | None, limit: int | None) -> None:
    """Print or save the query result in the chosen format.

    ``table`` into a file writes the tables as they are printed (every row, no colour).
    """
    groups = result.groups
    if fmt == "table":
        if output is None:
            _print_tables(result, limit)
            return
        with open(output, "w", encoding="utf-8") as f:
            _print_tables(result, limit, f)
        click.echo(f"Wrote {_rows(result.rows)} to {output}.", err=True)
        return
    df = _concat(groups)
    if fmt == "csv":
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
        click.echo(f"Wrote {_rows(len(df))} to {output}.", err=True)


@click.command("query")
@click.argument("name")
@click.option(
    "-w",
    "--where",
    multiple=True,
    metavar="CONDITION",
    help="Row condition, e.g. 'x > 1 or y is null', \"country not in (DE, FR)\", "
    "'day >= 2024-01-31 and flag == true'; repeated options are and-ed. Values are read "
    "with the column's type; a condition that does not parse shows the grammar.",
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
@datasets_option("Cube only: query these datasets (repeatable; the seed is always included).")
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

    Partitions, secondary indices and statistics prune the files read, and reading stops
    once --limit rows are found; with --partition-by, --limit applies to each group. For a
    cube the seed defines the cells and the other datasets are joined (docs/cubes.md). A table
    shows the first 100 rows unless --limit is given; csv, json, parquet and a table
    written with --output hold every row.

    \b
    Examples:
      kartoframe ./data query sales --where "country == DE" --columns day,units
      kartoframe ./data query sales -w "units > 5 and day >= 2024-01-02" -n 10
      kartoframe ./data query sales -w "country == IT or units is null"
      kartoframe ./data query sales -w "country in (DE, FR)" --format csv > out.csv
      kartoframe ./data query geo --where "COUNTRY_CODE == DE" --partition-by YEAR
      kartoframe ./data query geo -c SALES --format parquet --output geo.parquet
    """
    ctx = get_ctx()
    if ctx.json:
        fmt = "json"
    target = resolve(ctx.store(), name, kind)
    q = QueryRequest(
        where, split_list(columns), split_list(partition_by) or None, limit, ctx.progress
    )
    if target.is_cube:
        result = query_cube(target, q, datasets, split_list(dimension_columns))
    else:
        if datasets or dimension_columns:
            raise BadInput("--dataset and --dimension-columns only apply to cubes.")
        # a terminal table shows TABLE_ROWS rows: read no more than that (and one to tell)
        budget = TABLE_ROWS if fmt == "table" and output is None and limit is None else None
        result = query_dataset(target, q, budget)
    write_result(result, fmt, output, limit)
