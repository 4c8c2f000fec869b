"""The ``optimize`` command: compact small files and cluster rows, of a dataset or a cube.

``--target-size`` takes a number of bytes or a size with a unit (:func:`parse_size`);
``--where`` selects partitions (partition keys only) in the language of ``query``.
"""

from __future__ import annotations

import decimal
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import click

from kartoframe.cli._common import (
    BadInput,
    emit_json,
    get_ctx,
    human_bytes,
    json_option,
    plural,
    working,
)
from kartoframe.cli._tables import KIND_OPTION, datasets_option
from kartoframe.cli._targets import Kind, Target, resolve, split_list
from kartoframe.plan.optimize import DEFAULT_TARGET_FILE_SIZE
from kartoframe.plan.predicates import predicate_columns

if TYPE_CHECKING:
    from kartoframe.plan.optimize import OptimizeResult

__all__ = ["SIZE_UNITS", "optimize_command", "parse_size", "summary_lines"]

_KIB = 1024
#: The units of ``--target-size`` (case-insensitive), as in GNU ``dd``/``du``: a bare
#: letter and ``KiB``... are powers of 1024, ``KB``... powers of 1000.
SIZE_UNITS: dict[str, int] = {
    "": 1,
    "b": 1,
    **{p: _KIB**n for n, p in enumerate("kmgt", 1)},
    **{f"{p}ib": _KIB**n for n, p in enumerate("kmgt", 1)},
    **{f"{p}b": 1000**n for n, p in enumerate("kmgt", 1)},
}
#: ``--target-size``'s default, the library's (128 MiB), as shown in ``--help``.
_DEFAULT_SIZE = f"{DEFAULT_TARGET_FILE_SIZE // _KIB**2}MiB"
_SIZE = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)", re.IGNORECASE)


def parse_size(text: str) -> int:
    """A size in bytes from ``"134217728"``, ``"128MiB"``, ``"128MB"``, ``"1G"``, ``"1.5 g"``.

    Units (case-insensitive): none or ``B`` bytes; ``K``, ``M``, ``G``, ``T`` and ``KiB``,
    ``MiB``, ``GiB``, ``TiB`` powers of 1024; ``KB``, ``MB``, ``GB``, ``TB`` powers of
    1000. A fraction is rounded down to whole bytes.

    Raises
    ------
    ValueError
        Not a number with one of those units, or less than one byte.

    Examples
    --------
    >>> parse_size("128MiB"), parse_size("128MB"), parse_size("1g"), parse_size("0.5K")
    (134217728, 128000000, 1073741824, 512)
    """
    match = _SIZE.fullmatch(text.strip())
    unit = match.group(2).lower() if match else None
    if match is None or unit not in SIZE_UNITS:
        raise ValueError(
            f"{text!r} is not a size: give bytes (134217728) or a number with a unit: "
            "K, M, G, T or KiB, MiB, GiB, TiB (powers of 1024), KB, MB, GB, TB (powers of 1000)"
        )
    size = int(decimal.Decimal(match.group(1)) * SIZE_UNITS[unit])
    if size < 1:
        raise ValueError(f"{text!r} is less than one byte")
    return size


def _size_option(ctx: click.Context, param: click.Parameter, value: str) -> int:
    """The callback of ``--target-size``: a bad size is a usage error (exit code 2)."""
    try:
        return parse_size(value)
    except ValueError as e:
        raise click.BadParameter(f"{e}.", ctx, param) from None


# -- output ------------------------------------------------------------------------------------


def _reasons(result: OptimizeResult) -> str:
    """``already optimized (2), no file below the target (1)``: skipped partitions by reason."""
    counts = Counter(s.reason for s in result.partitions_skipped)
    return ", ".join(f"{reason} ({n:,})" for reason, n in counts.most_common())


def summary_lines(result: OptimizeResult) -> list[str]:
    """The human summary of one dataset's result (one or two lines).

    ``Optimized UUID: N partitions, A files (size) → B files (size); version V.``
    (``Would optimize ...`` for a dry run, whose new sizes are not known), then
    ``Skipped N partitions: reason (count), ...`` (``Would skip`` for a dry run); or
    ``Nothing to optimize in UUID.`` and the skipped partitions' reasons.
    """
    uuid = result.dataset_uuid
    skipped = len(result.partitions_skipped)
    verb = "Would skip" if result.dry_run else "Skipped"
    why = f"{verb} {plural(skipped, 'partition')}: {_reasons(result)}."
    if not result.files_removed:
        if not skipped:
            return [f"Nothing to optimize in {uuid}: no partition selected."]
        return [f"Nothing to optimize in {uuid}.", why]
    parts = plural(len(result.partitions_optimized), "partition")
    before = f"{plural(result.files_removed, 'file')} ({human_bytes(result.bytes_removed)})"
    if result.dry_run:
        line = f"Would optimize {uuid}: {parts}, {before} → {plural(result.files_added, 'file')}."
    else:
        after = f"{plural(result.files_added, 'file')} ({human_bytes(result.bytes_added)})"
        version = "" if result.version is None else f"; version {result.version}"
        line = f"Optimized {uuid}: {parts}, {before} → {after}{version}."
    return [line, why] if skipped else [line]


# -- the command -------------------------------------------------------------------------------


def _cube_selection(
    target: Target,
    datasets: Sequence[str],
    sort_by: list[str] | None,
    where_columns: set[str],
) -> tuple[list[str], dict[str, str]]:
    """Ids of the cube datasets to optimize, and ``{id: why}`` of those --where leaves out.

    A dataset without a column --where names has no such partitions: it is left out.

    Raises
    ------
    BadInput
        An unknown ``--dataset``; a ``--sort-by`` column no selected dataset can sort by;
        no selected dataset holding every --where column.
    """
    unknown = [d for d in datasets if d not in target.datasets]
    if unknown:
        raise BadInput(f"Cube {target.name!r} has no dataset {', '.join(unknown)}.")
    ids = sorted(set(datasets)) if datasets else sorted(target.datasets)
    if sort_by:
        sortable = {
            c
            for d in ids
            for c in target.datasets[d].schema.names
            if c not in target.datasets[d].partition_keys
        }
        missing = [c for c in sort_by if c not in sortable]
        if missing:
            raise BadInput(
                f"No dataset of cube {target.name!r} has a non-partition column {missing} "
                "to sort by."
            )
    left_out = {
        d: f"it has no column {', '.join(sorted(where_columns - set(md.schema.names)))}"
        for d, md in target.datasets.items()
        if d in ids and not where_columns <= set(md.schema.names)
    }
    kept = [d for d in ids if d not in left_out]
    if not kept:
        raise BadInput(
            f"No dataset of cube {target.name!r} has every --where column "
            f"({', '.join(sorted(where_columns))}): optimize one dataset (PREFIX++ID) at a time."
        )
    return kept, left_out


def _print(results: Mapping[str, OptimizeResult], left_out: Mapping[str, str]) -> None:
    """The summary lines of each result, then the datasets --where left out."""
    lines = [line for r in results.values() for line in summary_lines(r)]
    lines += [f"Left out {uuid}: {why}." for uuid, why in left_out.items()]
    click.echo("\n".join(lines))


@click.command("optimize")
@click.argument("name")
@click.option(
    "--target-size",
    default=_DEFAULT_SIZE,
    show_default=True,
    callback=_size_option,
    metavar="SIZE",
    help="Size of the files written: bytes, or a number with a unit (K, M, G, T and KiB, "
    "MiB, GiB, TiB: powers of 1024; KB, MB, GB, TB: powers of 1000). Files at or above it "
    "are only rewritten to be sorted.",
)
@click.option(
    "--sort-by",
    metavar="COL[,COL]",
    help="Sort the rows of each rewritten partition by these columns (not partition keys). "
    "Default: none for a dataset, the dimension columns for a cube.",
)
@click.option(
    "--zorder",
    is_flag=True,
    help="Interleave the sort columns (1-4) in a z-order curve instead of sorting by them "
    "in turn, so that a range on any of them skips row groups.",
)
@click.option("--no-sort", is_flag=True, help="Cube only: compact without sorting.")
@click.option(
    "--min-files",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="Least number of small files a partition needs to be compacted (a partition not "
    "yet in the --sort-by order is rewritten anyway).",
)
@click.option(
    "-w",
    "--where",
    multiple=True,
    metavar="CONDITION",
    help="Optimize only the partitions matching this condition on partition keys, e.g. "
    "'country in (DE, FR)' (the language of query --where); repeated options are and-ed.",
)
@datasets_option("Cube only: optimize only these datasets (repeatable).")
@click.option("--dry-run", is_flag=True, help="Only report what would be rewritten.")
@KIND_OPTION
@json_option
def optimize_command(
    name: str,
    target_size: int,
    sort_by: str | None,
    zorder: bool,
    no_sort: bool,
    min_files: int,
    where: tuple[str, ...],
    datasets: tuple[str, ...],
    dry_run: bool,
    kind: Kind,
) -> None:
    r"""Compact the small files of each partition and sort their rows (Delta's OPTIMIZE).

    In every selected partition, files smaller than --target-size are rewritten into
    files near that size, their rows sorted by --sort-by (for a cube: by its dimension
    columns), and statistics, bloom filters and indices rebuilt. One commit per dataset
    replaces exactly the files read: the content stays the same, appends running at the
    same time still land, and earlier versions stay readable until gc or vacuum removes
    their files. Partitions optimized since their last change are skipped, so running
    it daily costs what changed that day. --dry-run writes nothing.

    \b
    Examples:
      kartoframe ./data optimize sales --dry-run
      kartoframe ./data optimize sales --target-size 64MiB --sort-by day,product
      kartoframe ./data optimize sales --sort-by day,units --zorder --where "country == DE"
      kartoframe ./data optimize geo --json
    """
    import kartoframe as kf
    from kartoframe.cli._where import parse_predicates

    ctx = get_ctx()
    columns = split_list(sort_by)
    if sort_by is not None and not columns:
        raise BadInput("--sort-by must name at least one column.")
    if no_sort and (columns or zorder):
        raise BadInput("--no-sort cannot be combined with --sort-by or --zorder.")
    target = resolve(ctx.store(), name, kind, load=False)
    if not target.is_cube:
        if datasets or no_sort:
            raise BadInput("--dataset and --no-sort only apply to cubes.")
        if zorder and not columns:
            raise BadInput("--zorder needs --sort-by: the 1-4 columns to interleave.")
    if target.is_cube or where:  # the schemas: --where types, cube datasets
        target = resolve(ctx.store(), name, target.kind)
    predicates = parse_predicates(where, target.column_types()) if where else None
    options: dict[str, Any] = {
        "target_file_size": target_size,
        "sort_method": "zorder" if zorder else "linear",
        "min_files": min_files,
        "predicates": predicates,
        "dry_run": dry_run,
        "progress": ctx.progress,
    }
    if not target.is_cube:
        with working(f"optimizing {name}"):
            result = kf.optimize_dataset(name, target.store, sort_by=columns, **options)
        if ctx.json:
            emit_json(result.to_dict())
        else:
            _print({name: result}, {})
        return
    assert target.cube is not None
    cube = target.cube
    ids, left_out = _cube_selection(target, datasets, columns, predicate_columns(predicates))
    with working(f"optimizing cube {name}"):
        results = kf.optimize_cube(
            cube, target.store, datasets=ids, sort_by=[] if no_sort else columns, **options
        )
    if ctx.json:
        emit_json({ds_id: r.to_dict() for ds_id, r in results.items()})
        return
    why = {
        cube.ktk_dataset_uuid(d): f"--where selects no partition of it ({reason})"
        for d, reason in left_out.items()
    }
    _print({cube.ktk_dataset_uuid(d): r for d, r in results.items()}, why)
