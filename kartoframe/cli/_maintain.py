"""Commands that change a store: index, gc, copy, delete, cleanup."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from kartoframe.cli._common import (
    BadInput,
    Conflict,
    confirm,
    emit_json,
    get_ctx,
    json_option,
    parse_storage_options,
)
from kartoframe.cli._tables import KIND_OPTION
from kartoframe.cli._targets import Kind, expand_columns, resolve, split_list

if TYPE_CHECKING:
    from kartoframe.storage.store import Store

YES_OPTION = click.option(
    "-y", "--yes", is_flag=True, help="Do not ask for confirmation (needed without a terminal)."
)
DRY_RUN_OPTION = click.option("--dry-run", is_flag=True, help="Only list what would be deleted.")


def _done(message: str, payload: dict[str, Any]) -> None:
    if get_ctx().json:
        emit_json(payload)
    else:
        click.echo(message)


def _files(n: int) -> str:
    return f"{n:,} file" + ("" if n == 1 else "s")


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


@click.command("gc")
@click.argument("name")
@DRY_RUN_OPTION
@YES_OPTION
@KIND_OPTION
@json_option
def gc_command(name: str, dry_run: bool, yes: bool, kind: Kind) -> None:
    r"""Delete the files of a dataset (or of each dataset of a cube) no header references.

    Such files are left by overwritten or deleted partitions and by failed writes. Do not
    run it while a write to the dataset is in progress: the files of that write are not
    referenced yet.

    \b
    Examples:
      kartoframe ./data gc sales --dry-run
      kartoframe ./data gc sales --yes
    """
    import kartoframe as kf
    from kartoframe.api.maintenance import unreferenced_keys

    ctx = get_ctx()
    target = resolve(ctx.store(), name, kind)
    uuids = [md.uuid for _, md in sorted(target.datasets.items())]
    garbage = {u: unreferenced_keys(target.store, u) for u in uuids}
    n = sum(len(v) for v in garbage.values())
    if dry_run or n == 0:
        keys = [k for v in garbage.values() for k in v]
        verb = "Would delete" if dry_run else "Nothing to delete:"
        text = f"{verb} {_files(n)}" + ("" if dry_run else " unreferenced.")
        _done("\n".join([*keys, text]) if dry_run else text, {"deleted": keys, "dry_run": True})
        return
    confirm(f"Delete {_files(n)} of {name!r} that no header references?", yes)
    deleted = [k for u in uuids for k in kf.garbage_collect_dataset(u, target.store)]
    _done(f"Deleted {_files(len(deleted))}.", {"deleted": deleted, "dry_run": False})


# -- delete --------------------------------------------------------------------------------


@click.command("delete")
@click.argument("name")
@click.option(
    "--dataset",
    "datasets",
    multiple=True,
    metavar="ID",
    help="Cube only: delete only these datasets (repeatable).",
)
@YES_OPTION
@KIND_OPTION
@json_option
def delete_command(name: str, datasets: tuple[str, ...], yes: bool, kind: Kind) -> None:
    r"""Delete a dataset or a cube (header first, then its files).

    Readers see the dataset disappear at once (when its header is deleted). Files that
    no header referenced are left for gc / cleanup.

    \b
    Examples:
      kartoframe ./data delete sales            # asks for confirmation
      kartoframe ./data delete sales --yes
      kartoframe ./data delete geo --dataset enrich --yes
    """
    import kartoframe as kf

    ctx = get_ctx()
    target = resolve(ctx.store(), name, kind)
    files = {ds_id: len(md.partitions) for ds_id, md in target.datasets.items()}
    if not target.is_cube:
        if datasets:
            raise BadInput("--dataset only applies to cubes.")
        confirm(f"Delete dataset {name!r} ({_files(files[name])}) from {ctx.store_label()}?", yes)
        kf.delete_dataset(name, target.store)
        _done(f"Deleted dataset {name}.", {"deleted": [name]})
        return
    assert target.cube is not None
    selected = sorted(datasets) if datasets else sorted(target.datasets)
    unknown = [d for d in selected if d not in target.datasets]
    if unknown:
        raise BadInput(f"Cube {name!r} has no dataset {', '.join(unknown)}.")
    n = sum(files[d] for d in selected)
    confirm(
        f"Delete {'datasets ' + ', '.join(selected) + ' of ' if datasets else ''}cube "
        f"{name!r} ({_files(n)}) from {ctx.store_label()}?",
        yes,
    )
    kf.delete_cube(target.cube, target.store, datasets=selected if datasets else None)
    uuids = [target.cube.ktk_dataset_uuid(d) for d in selected]
    _done(f"Deleted {', '.join(uuids)}.", {"deleted": uuids})


# -- cleanup -------------------------------------------------------------------------------


@click.command("cleanup")
@click.argument("cube")
@DRY_RUN_OPTION
@YES_OPTION
@json_option
def cleanup_command(cube: str, dry_run: bool, yes: bool) -> None:
    r"""Delete every file under CUBE++ that no dataset of the cube references.

    This also removes what deleted datasets left behind and files of failed writes. Do
    not run it while a write to the cube is in progress.

    \b
    Examples:
      kartoframe ./data cleanup geo --dry-run
      kartoframe ./data cleanup geo --yes
    """
    import kartoframe as kf

    ctx = get_ctx()
    target = resolve(ctx.store(), cube, "cube")
    assert target.cube is not None
    from kartoframe.api.cube_admin import cube_garbage

    garbage = cube_garbage(target.cube, target.store)
    if dry_run or not garbage:
        verb = "Would delete" if dry_run else "Nothing to delete:"
        text = f"{verb} {_files(len(garbage))}" + ("" if dry_run else " unreferenced.")
        _done(
            "\n".join([*garbage, text]) if dry_run else text, {"deleted": garbage, "dry_run": True}
        )
        return
    confirm(f"Delete {_files(len(garbage))} under {cube}++ that no dataset references?", yes)
    deleted = kf.cleanup_cube(target.cube, target.store)
    _done(f"Deleted {_files(len(deleted))}.", {"deleted": deleted, "dry_run": False})


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
