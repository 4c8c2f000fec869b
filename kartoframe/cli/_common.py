"""Shared pieces of the command line: context, exit codes, output, confirmation."""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import datetime as dt
import decimal
import json
import logging
import math
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import IO, Any, TypeVar

import click

from kartoframe.errors import (
    CommitConflictError,
    DatasetExistsError,
    DatasetNotFoundError,
    FormatError,
    InvalidInputError,
    InvalidTypeError,
    SchemaError,
    StorageError,
)

F = TypeVar("F", bound=Callable[..., Any])

#: Exit codes (also listed in ``kartoframe --help`` and docs/cli.md).
EXIT_OK = 0
EXIT_ERROR = 1
EXIT_BAD_INPUT = 2
EXIT_NOT_FOUND = 3
EXIT_CONFLICT = 4
EXIT_INTERRUPTED = 130

#: Environment variable holding storage options as a JSON object.
ENV_STORAGE_OPTIONS = "KARTOFRAME_STORAGE_OPTIONS"


class CliError(Exception):
    """An error the command line reports with a message and an exit code."""

    exit_code = EXIT_ERROR


class NotFound(CliError):
    """The named dataset, cube or store does not exist."""

    exit_code = EXIT_NOT_FOUND


class BadInput(CliError):
    """An argument is invalid (also: a destructive command without ``--yes``)."""

    exit_code = EXIT_BAD_INPUT


class Conflict(CliError):
    """The target exists or changed concurrently."""

    exit_code = EXIT_CONFLICT


def exit_code_for(exc: BaseException) -> int:
    """The exit code of an error raised while running a command."""
    if isinstance(exc, CliError):
        return exc.exit_code
    if isinstance(exc, FormatError):  # corruption (a missing data file included)
        return EXIT_ERROR
    if isinstance(exc, DatasetNotFoundError | FileNotFoundError):
        return EXIT_NOT_FOUND
    if isinstance(exc, DatasetExistsError | CommitConflictError | FileExistsError):
        return EXIT_CONFLICT
    if isinstance(exc, InvalidInputError | InvalidTypeError | SchemaError):
        return EXIT_BAD_INPUT
    if isinstance(exc, click.ClickException):
        return exc.exit_code
    return EXIT_ERROR


def error_kind(exc: BaseException) -> str:
    """A short name for the class of error (in ``--json`` error reports)."""
    if isinstance(exc, FormatError):
        return "corrupt"
    if isinstance(exc, StorageError):
        return "storage"
    return {
        EXIT_NOT_FOUND: "not_found",
        EXIT_BAD_INPUT: "bad_input",
        EXIT_CONFLICT: "conflict",
    }.get(exit_code_for(exc), "error")


# -- storage options -------------------------------------------------------------------


def parse_option_value(text: str) -> Any:
    """A storage option value: JSON if it parses (``true``, ``3``, ``{...}``), else text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_storage_options(pairs: tuple[str, ...], json_text: str | None) -> dict[str, Any]:
    """Merge ``--storage-options JSON`` (or its environment variable) and ``KEY=VALUE`` pairs.

    Raises
    ------
    BadInput
        Malformed JSON or a pair without ``=``.
    """
    options: dict[str, Any] = {}
    if json_text:
        try:
            loaded = json.loads(json_text)
        except ValueError as e:
            raise BadInput(f"Storage options are not valid JSON: {e}") from None
        if not isinstance(loaded, dict):
            raise BadInput("Storage options must be a JSON object.")
        options.update(loaded)
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise BadInput(f"Storage option {pair!r} must look like KEY=VALUE.")
        options[key.strip()] = parse_option_value(value)
    return options


# -- context -----------------------------------------------------------------------------


@dataclasses.dataclass
class Ctx:
    """What the group options set up for every command."""

    store_url: str
    storage_options: dict[str, Any]
    json: bool = False
    progress: bool = True
    debug: bool = False
    _store: Any = None

    def store(self) -> Any:
        """The :class:`kartoframe.Store` of ``STORE_URL`` (created once)."""
        if self._store is None:
            from kartoframe.storage.store import Store

            self._store = Store(self.store_url, **self.storage_options)
            if self._store.is_local and not os.path.isdir(self._store.url[len("file://") :]):
                raise NotFound(f"Store folder {self._store.url[len('file://') :]} does not exist.")
        return self._store

    def store_label(self) -> str:
        """The store URL safe to print (passwords hidden)."""
        return str(self.store().display_url)


def get_ctx() -> Ctx:
    """The :class:`Ctx` of the running command."""
    obj = click.get_current_context().find_object(Ctx)
    assert obj is not None
    return obj


def json_option(f: F) -> F:
    """Add ``--json`` to a command (same as the group option)."""

    def _set(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
        if value:
            c = ctx.find_object(Ctx)
            if c is not None:
                c.json = True
        return value

    return click.option(
        "--json",
        "json_flag",
        is_flag=True,
        expose_value=False,
        callback=_set,
        help="Print machine-readable JSON instead of tables.",
    )(f)


# -- output ----------------------------------------------------------------------------


def json_value(value: Any) -> Any:
    """Make a value JSON-serialisable (numpy scalars, dates, bytes, NaN, sets...)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if not isinstance(value, Mapping | list | tuple | set | frozenset | bytes) and _is_na(value):
        return None  # NaT, pd.NA, numpy NaN
    if isinstance(value, Mapping):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_value(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted(json_value(v) for v in value)
    if isinstance(value, bytes):
        try:
            text = value.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None and text.isprintable():
            return text
        return "base64:" + base64.b64encode(value).decode("ascii")
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return json_value(dataclasses.asdict(value))
    if getattr(value, "ndim", 0):  # numpy arrays (list cells)
        return json_value(value.tolist())
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item) and type(value).__module__ == "numpy":
        return json_value(item())
    isoformat = getattr(value, "isoformat", None)  # pandas Timestamp / Timedelta
    if callable(isoformat):
        if _is_na(value):
            return None
        return isoformat()
    if _is_na(value):
        return None
    return str(value)


def _is_na(value: Any) -> bool:
    pd = sys.modules.get("pandas")
    if pd is None:
        return False
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def emit_json(obj: Any, file: IO[str] | None = None) -> None:
    """Print ``obj`` as indented JSON (on standard output by default)."""
    click.echo(json.dumps(json_value(obj), indent=2, ensure_ascii=False), file=file)


def console(stderr: bool = False) -> Any:
    """A rich console on standard output (or error); wide when not a terminal."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() else 200
    return Console(file=stream, width=width, soft_wrap=False, highlight=False)


def console_on(file: IO[str]) -> Any:
    """A rich console writing plain text (no colour, 200 columns) into ``file``."""
    from rich.console import Console

    return Console(
        file=file,
        width=200,
        soft_wrap=False,
        highlight=False,
        color_system=None,
        force_terminal=False,
    )


def plural(n: int, word: str) -> str:
    """``plural(1, "file")`` -> ``"1 file"``, ``plural(1200, "file")`` -> ``"1,200 files"``."""
    return f"{n:,} {word}" + ("" if n == 1 else "s")


@contextlib.contextmanager
def working(message: str) -> Iterator[None]:
    """Show ``message`` with a spinner and the elapsed time on standard error while a long
    step runs (storage retries included), only on a terminal and without ``--no-progress``.

    Nothing is written to a pipe, so ``--json`` output stays parseable; nothing either
    outside a running command (helpers called from Python).
    """
    from kartoframe.progress import ProgressBar

    running = click.get_current_context(silent=True)
    ctx = None if running is None else running.find_object(Ctx)
    with ProgressBar(message, None, enabled=ctx is not None and ctx.progress) as bar:
        if not bar.active:
            yield
            return
        # object-store clients retry quietly (debug records only): say so next to the message
        notes = _RetryNotes(bar, message)
        loggers = [logging.getLogger(name) for name in _RETRY_LOGGERS]
        levels = [logger.level for logger in loggers]
        for logger in loggers:
            logger.addHandler(notes)
            if logger.getEffectiveLevel() > logging.DEBUG:
                logger.setLevel(logging.DEBUG)
        try:
            yield
        finally:
            for logger, level in zip(loggers, levels):
                logger.removeHandler(notes)
                logger.setLevel(level)


#: Loggers whose debug records tell that a storage request is retried (s3fs, botocore).
_RETRY_LOGGERS = ("s3fs", "botocore.retryhandler", "botocore.retries.standard")


class _RetryNotes(logging.Handler):
    """Turns the storage clients' retry debug records into the bar's description."""

    def __init__(self, bar: Any, message: str) -> None:
        super().__init__(logging.DEBUG)
        self.bar = bar
        self.message = message
        self.retries = 0

    def emit(self, record: logging.LogRecord) -> None:
        if not str(record.msg).startswith(("Retry needed", "Retryable error", "Client error")):
            return
        self.retries += 1
        # drawn at once: the error may follow the last retry before the next tick
        self.bar.update(description=f"{self.message} (storage retry {self.retries})", refresh=True)


def info(message: str) -> None:
    """A status message on standard error (not in ``--json`` mode)."""
    if not get_ctx().json:
        click.echo(message, err=True)


def human_bytes(n: int | None) -> str:
    """``1536`` -> ``"1.5 KiB"``."""
    if n is None:
        return "-"
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{int(size)} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


# -- confirmation ----------------------------------------------------------------------


def confirm(question: str, yes: bool) -> None:
    """Ask before a destructive step, unless ``--yes``.

    Without a terminal on standard input nobody can answer: the command is refused
    (exit code 2) instead of guessing.

    Raises
    ------
    BadInput
        No ``--yes`` and standard input is not a terminal.
    click.Abort
        The user answered no.
    """
    if yes:
        return
    if not sys.stdin.isatty():
        raise BadInput(f"{question} Refusing without --yes (standard input is not a terminal).")
    if not click.confirm(question, default=False, err=True):
        raise click.Abort()
