"""Commands that change a store: index, gc, copy, delete, cleanup."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from kartoframe.cli._common import (
    BadInput,
    Conflict,
    confirm,
    emit_json,
    get_ctx,
    json_option,
    parse_storage_options,
    plural,
    working,
)
from kartoframe.cli._tables import KIND_OPTION, datasets_option
from kartoframe.cli._targets import Kind, expand_columns, resolve, split_list
from kartoframe.format.cube import SEPARATOR
from kartoframe.storage.retention import DEFAULT_RETENTION_HOURS, GRACE_HOURS

if TYPE_CHECKING:
    from kartoframe.storage.store import Store

F = TypeVar("F", bound=Callable[..., Any])

YES_OPTION = click.option(
    "-y", "--yes", is_flag=True, help="Do not ask for confirmation (needed without a terminal)."
)
DRY_RUN_OPTION = click.option("--dry-run", is_flag=True, help="Only list what would be deleted.")


def _grace_options(what: str) -> Callable[[F], F]:
    """``--grace-hours`` and ``--force`` (gc, cleanup); ``what`` a write must not run to."""
    grace = click.option(
        "--grace-hours",
        type=click.FloatRange(min=0),
        default=GRACE_HOURS,
        show_default=True,
        help="Keep files younger than H hours (writes in progress); below 1 needs --force.",
    )
    force = click.option(
        "--force",
        is_flag=True,
        help=f"Allow --grace-hours below 1: only when no write to the {what} is running.",
    )
    return lambda command: grace(force(command))


def _done(message: str, payload: dict[str, Any]) -> None:
    if get_ctx().json:
        emit_json(payload)
    else:
        click.echo(message)


# -- index ---------------------------------------------------------------------------------


@click.command("index")
@click.argument("name")
@click.argument("columns")
@KIND_OPTION
@json_option
def index_command(name: str, columns: str, kind: Kind) -> None:
    r"""Build secondary indices on COLUMNS (comma-separated, globs allowed).

    Every data file is read once (only the indexed columns). For a cube, each column is
    indexed in the datasets that hold it (partition columns are already indexed by
    their directories).

    \b
    Examples:
      kartoframe ./data index sales product_id
      kartoframe ./data index sales "product_*,store_id"
      kartoframe ./data index geo SALES
    """
    import kartoframe as kf

    ctx = get_ctx()
    target = resolve(ctx.store(), name, kind)
    patterns = split_list(columns) or []
    if not patterns:
        raise BadInput("COLUMNS must name at least one column.")
    done: dict[str, list[str]] = {}
    for _, md in sorted(target.datasets.items()):
        indexable = [c for c in md.schema.names if c not in md.partition_keys]
        if target.is_cube:
            wanted = _expand_soft(patterns, indexable)
            if not wanted:
                continue
        else:
            wanted = expand_columns(patterns, indexable)
        kf.build_dataset_indices(target.store, md.uuid, wanted, progress=ctx.progress)
        done[md.uuid] = wanted
    if target.is_cube:
        covered = {c for cols in done.values() for c in cols}
        missing = [p for p in patterns if p not in covered and not _is_glob(p)]
        if missing or not done:
            raise BadInput(
                f"No dataset of cube {name!r} has a non-partition column {missing or patterns}."
            )
    lines = "\n".join(f"Indexed {', '.join(cols)} in {uuid}." for uuid, cols in done.items())
    _done(lines, {"indexed": done})


def _is_glob(pattern: str) -> bool:
    return any(ch in pattern for ch in "*?[")


def _expand_soft(patterns: list[str], available: list[str]) -> list[str]:
    """Patterns matched against one dataset of a cube (no error for a missing column)."""
    import fnmatch

    out: list[str] = []
    for p in patterns:
        out += [c for c in available if fnmatch.fnmatchcase(c, p) and c not in out]
    return out


# -- gc ----------------------------------------------------------------------------------------


def report_deletion(keys: list[str], *, dry_run: bool) -> None:
    """What gc, vacuum and cleanup print: the keys (dry run) and one summary line.

    ``Nothing to delete.`` when there is nothing, dry run or not; ``Would delete N
    files.`` after the listed keys of a dry run; ``Deleted N files.`` otherwise. With
    ``--json``: ``{"deleted": [...], "dry_run": ...}``.
    """
    if get_ctx().json:
        emit_json({"deleted": keys, "dry_run": dry_run})
    elif not keys:
        click.echo("Nothing to delete.")
    elif dry_run:
        click.echo("\n".join([*keys, f"Would delete {plural(len(keys), 'file')}."]))
    else:
        click.echo(f"Deleted {plural(len(keys), 'file')}.")


@click.command("gc")
@click.argument("name")
@click.option(
    "--retention-hours",
    type=click.FloatRange(min=0),
    default=DEFAULT_RETENTION_HOURS,
    show_default=True,
    help="Keep the files a version current during the last H hours references "
    "(0: only what the current version references).",
)
@_grace_options("dataset")
@DRY_RUN_OPTION
@YES_OPTION
@KIND_OPTION
@json_option
def gc_command(
    name: str,
    retention_hours: float,
    grace_hours: float,
    force: bool,
    dry_run: bool,
    yes: bool,
    kind: Kind,
) -> None:
    r"""Delete the files of a dataset (or of each dataset of a cube) no version needs.

    Such files are left by overwritten or deleted partitions and by failed writes. Kept:
    files a version of the last --retention-hours references (readers of older
    versions) and files younger than --grace-hours (writes in progress), so gc is safe
    to run at any time. --dry-run lists exactly what the same command deletes.

    \b
    Examples:
      kartoframe ./data gc sales --dry-run
      kartoframe ./data gc sales --yes
      kartoframe ./data gc sales --retention-hours 0 --dry-run
    """
    import kartoframe as kf

    ctx = get_ctx()
    target = resolve(ctx.store(), name, kind)
    uuids = [md.uuid for _, md in sorted(target.datasets.items())]

    def collect(uuid: str, preview: bool) -> list[str]:
        # one library call computes both: the preview is what the action deletes
        try:
            return kf.garbage_collect_dataset(
                uuid,
                target.store,
                retention_hours,
                dry_run=preview,
                grace_hours=grace_hours,
                force=force,
            )
        except kf.InvalidInputError as e:
            if force or "force" not in str(e):
                raise
            raise BadInput(f"{e} (on the command line: --force)") from None

    with working(f"listing unreferenced files of {name}"):
        keys = [k for u in uuids for k in collect(u, True)]
    if dry_run or not keys:
        report_deletion(keys, dry_run=dry_run)
        return
    confirm(
        f"Delete {plural(len(keys), 'file')} of {name!r} that no version of the last "
        f"{retention_hours:g} hours references?",
        yes,
    )
    with working(f"deleting unreferenced files of {name}"):
        deleted = [k for u in uuids for k in collect(u, False)]
    report_deletion(deleted, dry_run=False)


# -- delete --------------------------------------------------------------------------------


@click.command("delete")
@click.argument("name")
@datasets_option(
    "Cube only: delete only these datasets (repeatable; the seed only with all others)."
)
@YES_OPTION
@KIND_OPTION
@json_option
def delete_command(name: str, datasets: tuple[str, ...], yes: bool, kind: Kind) -> None:
    r"""Delete a dataset or a cube (header first, then its files).

    Readers see the dataset disappear at once (when its header is deleted). Files that
    no header referenced are left for gc / cleanup. The seed of a cube defines its
    cells: it is deleted only with the whole cube. A cube whose seed is already gone is
    deleted with its remaining datasets.

    \b
    Examples:
      kartoframe ./data delete sales            # asks for confirmation
      kartoframe ./data delete sales --yes
      kartoframe ./data delete geo --dataset enrich --yes
    """
    import kartoframe as kf

    ctx = get_ctx()
    target = resolve(ctx.store(), name, kind, seedless_ok=True)
    files = {ds_id: len(md.partitions) for ds_id, md in target.datasets.items()}
    if not target.is_cube:
        if datasets:
            raise BadInput("--dataset only applies to cubes.")
        confirm(
            f"Delete dataset {name!r} ({plural(files[name], 'file')}) from {ctx.store_label()}?",
            yes,
        )
        with working(f"deleting {name}"):
            kf.delete_dataset(name, target.store)
        _done(f"Deleted dataset {name}.", {"deleted": [name]})
        return
    selected = sorted(set(datasets)) if datasets else sorted(target.datasets)
    unknown = [d for d in selected if d not in target.datasets]
    if unknown:
        raise BadInput(f"Cube {name!r} has no dataset {', '.join(unknown)}.")
    if target.cube is not None and datasets:
        seed = target.cube.seed_dataset
        others = sorted(set(target.datasets) - set(selected))
        if seed in selected and others:
            raise BadInput(
                f"Refusing to delete the seed dataset {seed!r} of cube {name!r} alone: the "
                f"seed defines the cube's cells, and {', '.join(others)} could no longer be "
                f"queried. Delete the whole cube (no --dataset), or the other datasets first."
            )
    n = sum(files[d] for d in selected)
    what = f"datasets {', '.join(selected)} of cube" if datasets else "cube"
    seedless = " (its seed dataset is gone)" if target.seedless else ""
    confirm(
        f"Delete {what} {name!r}{seedless} ({plural(n, 'file')}) from {ctx.store_label()}?",
        yes,
    )
    uuids = [f"{name}{SEPARATOR}{d}" for d in selected]
    with working(f"deleting {name}"):
        if target.cube is None:
            for uuid in uuids:
                kf.delete_dataset(uuid, target.store)
        else:
            kf.delete_cube(target.cube, target.store, datasets=selected if datasets else None)
    _done(f"Deleted {', '.join(uuids)}.", {"deleted": uuids})


# -- cleanup -------------------------------------------------------------------------------


@click.command("cleanup")
@click.argument("cube")
@_grace_options("cube")
@DRY_RUN_OPTION
@YES_OPTION
@json_option
def cleanup_command(cube: str, grace_hours: float, force: bool, dry_run: bool, yes: bool) -> None:
    r"""Delete the files under CUBE++ that no dataset of the cube needs.

    This removes what overwritten partitions, deleted datasets and failed writes left
    behind: only files with the names kartoframe's writes generate and older than
    --grace-hours (writes in progress are newer), so cleanup is safe to run at any time.
    Other files under the prefix are never touched. A cube whose seed dataset is gone
    cannot be used any more: its remaining datasets are deleted too. --dry-run lists
    exactly what the same command deletes.

    \b
    Examples:
      kartoframe ./data cleanup geo --dry-run
      kartoframe ./data cleanup geo --yes
    """
    import kartoframe as kf
    from kartoframe.storage.garbage import prefix_garbage
    from kartoframe.storage.retention import check_grace

    ctx = get_ctx()
    target = resolve(ctx.store(), cube, "cube", seedless_ok=True)
    st = target.store
    try:
        grace = check_grace(grace_hours, force=force, what="cleanup")
    except kf.InvalidInputError as e:
        raise BadInput(f"{e} (on the command line: --force)") from None
    seedless = [md.uuid for _, md in sorted(target.datasets.items())] if target.cube is None else []

    def collect(preview: bool) -> list[str]:
        # one library call computes both: the preview is what the action deletes
        removed: set[str] = set()
        for uuid in seedless:
            removed |= _dataset_files(st, uuid)
            if not preview:
                kf.delete_dataset(uuid, st)
        removed |= set(prefix_garbage(st, cube, grace, dry_run=preview))
        return sorted(removed)

    with working(f"listing unreferenced files under {cube}{SEPARATOR}"):
        garbage = collect(True)
    if dry_run or not garbage:
        report_deletion(garbage, dry_run=dry_run)
        return
    if seedless:
        question = (
            f"Cube {cube!r} has no seed dataset: delete its datasets "
            f"{', '.join(sorted(target.datasets))} and the files under {cube}{SEPARATOR} "
            f"no dataset needs ({plural(len(garbage), 'file')})?"
        )
    else:
        question = (
            f"Delete {plural(len(garbage), 'file')} under {cube}{SEPARATOR} that no dataset "
            "references?"
        )
    confirm(question, yes)
    with working(f"deleting unreferenced files under {cube}{SEPARATOR}"):
        deleted = collect(False)
    report_deletion(deleted, dry_run=False)


def _dataset_files(store: Store, uuid: str) -> set[str]:
    """The existing files :func:`kartoframe.delete_dataset` removes."""
    from kartoframe.errors import KartoframeError
    from kartoframe.format import txlog
    from kartoframe.storage.resolve import load_dataset
    from kartoframe.storage.retention import dataset_keys

    keys = set(dataset_keys(store, uuid))
    try:
        referenced = txlog.referenced_keys(load_dataset(store, uuid).metadata)
    except KartoframeError:  # corrupt: delete_dataset removes the generated names
        return keys
    return keys | {k for k in referenced - keys if store.exists(k)}


# -- copy ----------------------------------------------------------------------------------


def _target_store(to: str | None, pairs: tuple[str, ...], source: Store) -> Store:
    from kartoframe.storage.store import Store

    if to is None:
        return source
    options = parse_storage_options(pairs, None)
    probe = Store(to)
    if not pairs and probe.protocol == source.protocol:
        options = dict(source.storage_options)
    return Store(to, **options)


@click.command("copy")
@click.argument("name")
@click.option("--to", "to", metavar="STORE_URL", help="Target store (default: the same store).")
@click.option("--rename", metavar="NEW", help="Name of the copy (cube: the new prefix).")
@click.option(
    "--to-storage-option",
    "to_options",
    multiple=True,
    metavar="KEY=VALUE",
    help="Storage option of the target (default: the source's, for the same protocol).",
)
@click.option("--overwrite", is_flag=True, help="Replace an existing target (asks first).")
@YES_OPTION
@KIND_OPTION
@json_option
def copy_command(
    name: str,
    to: str | None,
    rename: str | None,
    to_options: tuple[str, ...],
    overwrite: bool,
    yes: bool,
    kind: Kind,
) -> None:
    r"""Copy a dataset or a cube to another store, or a dataset under a new name.

    Files are copied first, then each header is published, so readers of the target
    never see a partial copy. An existing target is an error (exit code 4) unless
    --overwrite is given.

    \b
    Examples:
      kartoframe ./data copy sales --to ./backup
      kartoframe ./data copy sales --rename sales_2024
      kartoframe ./data copy geo --to s3://bucket/cubes --to-storage-option anon=false
      kartoframe ./data copy sales --to ./backup --overwrite --yes
    """
    import kartoframe as kf
    from kartoframe.progress import ProgressBar

    ctx = get_ctx()
    src = ctx.store()
    target = resolve(src, name, kind)
    tgt = _target_store(to, to_options, src)
    new = rename or name
    if tgt == src and new == name:
        raise BadInput("Give --to STORE_URL or --rename NEW: the copy cannot replace itself.")
    if target.is_cube:
        assert target.cube is not None
        if to is None:
            raise BadInput("A cube can only be copied to another store (--to STORE_URL).")
        exists = bool(_cube_exists(tgt, new))
        _check_target(exists, f"cube {new!r}", tgt, overwrite, yes)
        with ProgressBar(f"copying cube {name}", None, enabled=ctx.progress):
            copied = kf.copy_cube(
                target.cube,
                src,
                tgt,
                overwrite=overwrite,
                renamed_cube_prefix=rename,
            )
        _done(
            f"Copied cube {name} ({', '.join(copied)}) to {tgt.display_url} as {new}.",
            {"copied": copied, "to": tgt.display_url},
        )
        return
    from kartoframe.storage.resolve import dataset_exists

    _check_target(dataset_exists(tgt, new), f"dataset {new!r}", tgt, overwrite, yes)
    kf.copy_dataset(name, src, new, tgt, overwrite=overwrite, progress=ctx.progress)
    where = "" if tgt == src else f" in {tgt.display_url}"
    _done(f"Copied dataset {name} to {new}{where}.", {"copied": {name: new}, "to": tgt.display_url})


def _cube_exists(store: Store, prefix: str) -> list[str]:
    from kartoframe.cli._targets import cube_dataset_ids

    return cube_dataset_ids(store, prefix)


def _check_target(exists: bool, what: str, store: Store, overwrite: bool, yes: bool) -> None:
    if not exists:
        return
    if not overwrite:
        raise Conflict(f"The target {what} exists in {store.display_url} (use --overwrite).")
    confirm(f"Replace {what} in {store.display_url}?", yes)
