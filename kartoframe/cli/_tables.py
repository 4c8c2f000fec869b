"""Rendering helpers shared by the commands: rich tables and the --kind and --dataset options."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

KIND_OPTION = click.option(
    "--kind",
    type=click.Choice(["auto", "dataset", "cube"]),
    default="auto",
    show_default=True,
    help="What NAME is, when a dataset and a cube prefix share it.",
)

_Command = TypeVar("_Command", bound=Callable[..., Any])


def datasets_option(help: str) -> Callable[[_Command], _Command]:
    """The repeatable ``--dataset ID`` option of a command on cubes (into ``datasets``)."""
    return click.option("--dataset", "datasets", multiple=True, metavar="ID", help=help)


def table(columns: Sequence[str], rows: Sequence[Sequence[Any]], title: str | None = None) -> Any:
    """A rich table with the given header and rows (cells converted with ``str``)."""
    from rich.table import Table
    from rich.text import Text

    t = Table(title=None if title is None else Text(title), title_justify="left")
    for c in columns:
        t.add_column(Text(c), overflow="fold")
    for r in rows:
        t.add_row(*(Text("" if v is None else str(v)) for v in r))
    return t


def key_values(pairs: Sequence[tuple[str, Any]]) -> Any:
    """A two-column table without header (``key  value``)."""
    from rich.table import Table
    from rich.text import Text

    t = Table(show_header=False, box=None, pad_edge=False)
    t.add_column(style="bold")
    t.add_column(overflow="fold")
    for k, v in pairs:
        t.add_row(Text(k), Text("" if v is None else str(v)))
    return t


def heading(text: str) -> Any:
    """A bold line of plain text (no rich markup is interpreted)."""
    from rich.text import Text

    return Text(text, style="bold")
