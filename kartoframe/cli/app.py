"""The ``kartoframe`` console script: the click group, its options and the error handling."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence

import click

from kartoframe.cli._changes import changes_command
from kartoframe.cli._check import EXIT_PROBLEMS, check_command
from kartoframe.cli._common import (
    ENV_STORAGE_OPTIONS,
    EXIT_BAD_INPUT,
    EXIT_CONFLICT,
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_NOT_FOUND,
    EXIT_OK,
    Ctx,
    emit_json,
    error_kind,
    exit_code_for,
    parse_storage_options,
)
from kartoframe.cli._history import history_command, vacuum_command
from kartoframe.cli._inspect import info_command, ls_command, schema_command
from kartoframe.cli._maintain import (
    cleanup_command,
    copy_command,
    delete_command,
    gc_command,
    index_command,
)
from kartoframe.cli._merge import merge_command
from kartoframe.cli._optimize import optimize_command
from kartoframe.cli._query import query_command
from kartoframe.cli._stats import stats_command

__all__ = ["cli", "main"]

EPILOG = f"""\b
Exit codes:
  {EXIT_OK}  success
  {EXIT_ERROR}  error (storage failure, corrupt metadata, aborted)
  {EXIT_BAD_INPUT}  bad input (usage, invalid names or conditions, missing --yes)
  {EXIT_NOT_FOUND}  not found (dataset, cube or store)
  {EXIT_CONFLICT}  conflict (target exists, concurrent change)
  {EXIT_PROBLEMS}  check found problems

\b
Examples:
  kartoframe ./data ls
  kartoframe ./data info sales
  kartoframe ./data query sales --where "country == DE" --limit 5
  kartoframe s3://bucket/warehouse --storage-option anon=true ls --json
  KARTOFRAME_STORAGE_OPTIONS='{{"client_kwargs": {{"endpoint_url": "http://127.0.0.1:9000"}}}}' \\
    kartoframe s3://bucket/warehouse stats sales
"""


#: A line holding only ``\b`` as two characters: what a raw docstring (``r"""``) makes
#: of click's "do not rewrap the next paragraph" marker, which is the control character.
_LITERAL_NO_WRAP = re.compile(r"^([ \t]*)\\b[ \t]*$", re.M)


def _no_wrap_markers(text: str | None) -> str | None:
    r"""Turn literal ``\b`` lines into click's marker (else it is printed and rewrapped)."""
    return None if text is None else _LITERAL_NO_WRAP.sub("\\1\b", text)


class _Group(click.Group):
    r"""Commands listed in the order they were added (inspection first), not sorted.

    Every added command's help and epilog keep their example blocks unwrapped: a raw
    docstring's literal ``\b`` lines become click's marker.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        cmd.help = _no_wrap_markers(cmd.help)
        cmd.epilog = _no_wrap_markers(cmd.epilog)
        super().add_command(cmd, name)


@click.group(
    cls=_Group,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog=EPILOG,
)
@click.argument("store_url", metavar="STORE_URL")
@click.option(
    "--storage-option",
    "storage_option",
    multiple=True,
    metavar="KEY=VALUE",
    help="fsspec storage option (repeatable); VALUE is read as JSON when it parses, e.g. "
    'anon=true or client_kwargs=\'{"endpoint_url": "http://127.0.0.1:9000"}\'.',
)
@click.option(
    "--storage-options",
    "storage_options_json",
    metavar="JSON",
    envvar=ENV_STORAGE_OPTIONS,
    show_envvar=True,
    help="All storage options as one JSON object (KEY=VALUE options override it).",
)
@click.option(
    "--progress/--no-progress",
    default=True,
    show_default=True,
    help="Progress bars on standard error (only drawn on a terminal).",
)
@click.option("--debug", is_flag=True, help="Show the traceback of errors.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output.")
@click.version_option(package_name="kartoframe", prog_name="kartoframe")
@click.pass_context
def cli(
    ctx: click.Context,
    store_url: str,
    storage_option: tuple[str, ...],
    storage_options_json: str | None,
    progress: bool,
    debug: bool,
    as_json: bool,
) -> None:
    r"""Inspect and maintain kartoframe / Kartothek datasets and cubes in a store.

    STORE_URL is a local folder (a path or file:///abs/dir) or any fsspec URL
    (s3://bucket/prefix, gs://..., abfs://..., memory://name). Credentials come from the
    usual environment (AWS_* variables, ~/.aws, ...) or from --storage-option.

    NAME arguments are dataset uuids or cube prefixes; a dataset of a cube is
    PREFIX++ID. Every command takes --json (machine-readable output) and -h/--help.
    """
    ctx.obj = Ctx(
        store_url=store_url,
        storage_options=parse_storage_options(storage_option, storage_options_json),
        json=as_json,
        progress=progress,
        debug=debug,
    )


for _command in (
    ls_command,
    info_command,
    stats_command,
    schema_command,
    history_command,
    check_command,
    query_command,
    index_command,
    optimize_command,
    merge_command,
    changes_command,
    gc_command,
    vacuum_command,
    copy_command,
    delete_command,
    cleanup_command,
):
    cli.add_command(_command)


def _report(exc: BaseException, as_json: bool, debug: bool) -> int:
    code = exit_code_for(exc)
    message = exc.format_message() if isinstance(exc, click.ClickException) else str(exc)
    if debug:
        import traceback

        traceback.print_exception(exc, file=sys.stderr)
    if as_json:
        emit_json(
            {
                "error": {
                    "kind": error_kind(exc),
                    "type": type(exc).__name__,
                    "message": message,
                    "exit_code": code,
                }
            },
            file=sys.stderr,
        )
    elif isinstance(exc, click.UsageError):
        exc.show()
    else:
        click.echo(f"Error: {message}", err=True)
    return code


#: Group options taking a value, and group flags (for :func:`_hoist_group_options`).
_GROUP_VALUE_OPTIONS = ("--storage-option", "--storage-options")
_GROUP_FLAGS = ("--json", "--debug", "--progress", "--no-progress")


def _hoist_group_options(args: list[str]) -> list[str]:
    """Move group options written between STORE_URL and COMMAND in front of STORE_URL.

    ``kartoframe s3://b/p --storage-option anon=true ls`` then means the same as
    ``kartoframe --storage-option anon=true s3://b/p ls`` (click alone would take
    ``--storage-option`` for the command name).
    """
    i = 0
    while i < len(args):  # skip group options before STORE_URL
        a = args[i]
        if a == "--":
            return args
        if a in _GROUP_VALUE_OPTIONS:
            i += 2
        elif a.startswith("-"):
            i += 1
        else:
            break
    store_at = i
    moved: list[str] = []
    j = store_at + 1
    while j < len(args):
        a = args[j]
        name = a.split("=", 1)[0]
        if name in _GROUP_VALUE_OPTIONS:
            width = 1 if "=" in a else 2
            moved += args[j : j + width]
            j += width
        elif a in _GROUP_FLAGS:
            moved.append(a)
            j += 1
        else:
            break
    if not moved or store_at >= len(args):
        return args
    return args[:store_at] + moved + [args[store_at]] + args[j:]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code (the console script's entry point).

    Parameters
    ----------
    argv
        Arguments without the program name (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        0 success, 1 error, 2 bad input, 3 not found, 4 conflict, 5 check found
        problems, 130 interrupted.
    """
    args = _hoist_group_options(list(sys.argv[1:] if argv is None else argv))
    as_json = "--json" in args
    debug = "--debug" in args
    try:
        result = cli.main(args=args, prog_name="kartoframe", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        return EXIT_ERROR
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return _broken_pipe()
    except Exception as exc:
        return _report(exc, as_json, debug)
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        return _broken_pipe()
    return int(result) if isinstance(result, int) else EXIT_OK


def _broken_pipe() -> int:
    """The reader of standard output went away (``| head``): not an error of ours."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return EXIT_OK
