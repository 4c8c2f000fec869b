"""Read-only commands: ls, info, schema."""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

import click

from kartoframe.cli._common import (
    BadInput,
    console,
    emit_json,
    get_ctx,
    human_bytes,
    json_option,
    json_value,
    plural,
    working,
)
from kartoframe.cli._stats import dataset_numbers
from kartoframe.cli._tables import KIND_OPTION, heading, key_values, table
from kartoframe.cli._targets import Kind, resolve
from kartoframe.format import naming
from kartoframe.format.cube import SEPARATOR

if TYPE_CHECKING:
    from kartoframe.api.read import DatasetMetadata
    from kartoframe.format.cube import Cube
    from kartoframe.storage.store import Store

T = TypeVar("T")

# -- ls ------------------------------------------------------------------------------------


def list_store(store: Store) -> tuple[list[tuple[str, str]], dict[str, list[str]]]:
    """Plain datasets ``(uuid, header format)`` and cubes ``{prefix: [dataset ids]}``."""
    datasets: dict[str, str] = {}
    cubes: dict[str, list[str]] = {}
    for name in store.iter_prefixes(""):
        if name.endswith("/"):
            continue
        for fmt, suffix in naming.HEADER_SUFFIXES.items():
            if name.endswith(suffix) and len(name) > len(suffix):
                uuid = name[: -len(suffix)]
                if SEPARATOR in uuid:
                    prefix, ds_id = uuid.split(SEPARATOR, 1)
                    if ds_id not in cubes.setdefault(prefix, []):
                        cubes[prefix].append(ds_id)
                else:
                    datasets.setdefault(uuid, fmt)
    return sorted(datasets.items()), {k: sorted(v) for k, v in sorted(cubes.items())}


def _dataset_long(md: DatasetMetadata) -> dict[str, Any]:
    return {
        "files": len(md.partitions),
        "partition_keys": md.partition_keys,
        "secondary_indices": md.secondary_indices,
        "created": md.metadata.get("creation_time"),
    }


def _cube_long(cube: Cube) -> dict[str, Any]:
    return {
        "seed": cube.seed_dataset,
        "dimension_columns": list(cube.dimension_columns),
        "partition_columns": list(cube.partition_columns),
        "index_columns": list(cube.index_columns),
    }


def _long(
    load: Callable[[str, Store], T], fields: Callable[[T], dict[str, Any]], store: Store, name: str
) -> dict[str, Any]:
    """The ``--long`` fields of one listed dataset or cube (its error if it cannot load)."""
    import kartoframe as kf

    try:
        return fields(load(name, store))
    except kf.KartoframeError as e:
        return {"error": str(e)}


@click.command("ls")
@click.option("-l", "--long", "long_", is_flag=True, help="Load every header for details.")
@json_option
def ls_command(long_: bool) -> None:
    r"""List the datasets and cubes in the store.

    A cube is shown once, with the ids of its datasets (address one of them as
    PREFIX++ID). With --long every header is read to show partition keys, indices and
    cube dimensions.

    \b
    Examples:
      kartoframe ./data ls
      kartoframe s3://bucket/warehouse ls --long --json
    """
    ctx = get_ctx()
    st = ctx.store()
    with working(f"listing {ctx.store_label()}"):
        datasets, cubes = list_store(st)
    ds_rows: list[dict[str, Any]] = [
        {"name": u, "kind": "dataset", "metadata_format": f} for u, f in datasets
    ]
    cube_rows: list[dict[str, Any]] = [
        {"name": p, "kind": "cube", "datasets": ids} for p, ids in cubes.items()
    ]
    if long_:
        import kartoframe as kf

        with ThreadPoolExecutor(max_workers=8) as pool:
            ds_long = pool.map(
                partial(_long, kf.read_dataset_metadata, _dataset_long, st),
                [r["name"] for r in ds_rows],
            )
            cube_long = pool.map(
                partial(_long, kf.discover_cube, _cube_long, st), [r["name"] for r in cube_rows]
            )
            for r, extra in [*zip(ds_rows, ds_long), *zip(cube_rows, cube_long)]:
                r.update(extra)
    if ctx.json:
        emit_json({"store": ctx.store_label(), "datasets": ds_rows, "cubes": cube_rows})
        return
    out = console()
    if not ds_rows and not cube_rows:
        click.echo(f"No datasets or cubes in {ctx.store_label()}.")
        return
    rows: list[list[Any]] = []
    for r in ds_rows:
        detail = ""
        if long_:
            detail = r.get("error") or (
                f"{plural(r['files'], 'file')}; "
                f"partitioned by {', '.join(r['partition_keys']) or '-'}; "
                f"indices {', '.join(r['secondary_indices']) or '-'}"
            )
        rows.append([r["name"], "dataset", detail or f"{r['metadata_format']} header"])
    for r in cube_rows:
        detail = "datasets: " + ", ".join(r["datasets"])
        if long_:
            detail += "; " + (
                r.get("error")
                or f"seed {r['seed']}; dimensions {', '.join(r['dimension_columns'])}; "
                f"partitions {', '.join(r['partition_columns']) or '-'}"
            )
        rows.append([r["name"], "cube", detail])
    out.print(table(["name", "kind", "details"], rows))


# -- info ----------------------------------------------------------------------------------


def _column_roles(md: DatasetMetadata, cube: Cube | None) -> dict[str, list[str]]:
    roles: dict[str, list[str]] = {}
    for name in md.schema.names:
        r: list[str] = []
        if cube is not None:
            if name in cube.dimension_columns:
                r.append("dimension")
            if name in cube.partition_columns:
                r.append("partition")
            if not r:
                r.append("payload")
        if name in md.partition_keys and "partition" not in r:
            r.append("partition key")
        if name in md.secondary_indices:
            r.append("index")
        roles[name] = r
    return roles


def schema_rows(md: DatasetMetadata, cube: Cube | None = None) -> list[dict[str, Any]]:
    """One dict per column: name, type, nullable, roles."""
    roles = _column_roles(md, cube)
    return [
        {"name": f.name, "type": str(f.type), "nullable": f.nullable, "roles": roles[f.name]}
        for f in md.schema
    ]


def dataset_info(
    store: Store, md: DatasetMetadata, cube: Cube | None, progress: bool
) -> dict[str, Any]:
    """Everything ``info`` shows about one dataset."""
    numbers = dataset_numbers(store, md, rows=False, progress=progress)
    return {
        "uuid": md.uuid,
        "metadata_format": md.metadata_storage_format,
        "table": md.table_name,
        "partition_keys": md.partition_keys,
        "secondary_indices": md.secondary_indices,
        "files": numbers["files"],
        "partitions": numbers["partitions"],
        "bytes": numbers["bytes"],
        "explicit_partitions": md.explicit_partitions,
        "metadata": md.metadata,
        "schema": schema_rows(md, cube),
    }


def _print_dataset_info(out: Any, d: dict[str, Any], title: str) -> None:
    out.print(heading(title))
    out.print(
        key_values(
            [
                ("partition keys", ", ".join(d["partition_keys"]) or "-"),
                ("secondary indices", ", ".join(d["secondary_indices"]) or "-"),
                ("files", d["files"]),
                ("partitions", d["partitions"]),
                ("size", human_bytes(d["bytes"])),
                ("header", f"{d['metadata_format']}, table {d['table']!r}"),
            ]
        )
    )
    meta = json.dumps(json_value(d["metadata"]), sort_keys=True, ensure_ascii=False)
    from rich.text import Text

    line = Text("user metadata", style="bold")
    line.append("      " + meta, style="")
    out.print(line, soft_wrap=True)
    rows = [[c["name"], c["type"], ", ".join(c["roles"])] for c in d["schema"]]
    out.print(table(["column", "type", "role"], rows))


@click.command("info")
@click.argument("name")
@KIND_OPTION
@json_option
def info_command(name: str, kind: Kind) -> None:
    r"""Describe a dataset or a cube.

    For a dataset: partition keys, secondary indices, number of files and physical
    partitions, total size, user metadata and the schema with each column's type and
    role. For a cube: its dimension, partition and index columns, the seed, and the
    same for each of its datasets (with the cube role of each column).

    \b
    Examples:
      kartoframe ./data info sales
      kartoframe ./data info geo --json
      kartoframe ./data info geo++seed
    """
    ctx = get_ctx()
    target = resolve(ctx.store(), name, kind)
    st = target.store
    if not target.is_cube:
        d = {"kind": "dataset", "name": name, "store": ctx.store_label()}
        d.update(dataset_info(st, target.dataset(), None, ctx.progress))
        if ctx.json:
            emit_json(d)
        else:
            _print_dataset_info(console(), d, f"Dataset {name} in {ctx.store_label()}")
        return
    cube = target.cube
    assert cube is not None
    datasets = {
        ds_id: dataset_info(st, md, cube, ctx.progress)
        for ds_id, md in sorted(target.datasets.items())
    }
    c = {
        "kind": "cube",
        "name": name,
        "store": ctx.store_label(),
        "seed_dataset": cube.seed_dataset,
        "dimension_columns": list(cube.dimension_columns),
        "partition_columns": list(cube.partition_columns),
        "index_columns": list(cube.index_columns),
        "suppress_index_on": list(cube.suppress_index_on),
        "datasets": datasets,
    }
    if ctx.json:
        emit_json(c)
        return
    out = console()
    out.print(heading(f"Cube {name} in {ctx.store_label()}"))
    out.print(
        key_values(
            [
                ("dimension columns", ", ".join(c["dimension_columns"])),
                ("partition columns", ", ".join(c["partition_columns"]) or "-"),
                ("index columns", ", ".join(c["index_columns"]) or "-"),
                ("seed dataset", cube.seed_dataset),
                ("suppress index on", ", ".join(c["suppress_index_on"]) or "-"),
                ("datasets", ", ".join(datasets)),
            ]
        )
    )
    for ds_id, d in datasets.items():
        out.print()
        seed = " (seed)" if ds_id == cube.seed_dataset else ""
        _print_dataset_info(out, d, f"Dataset {ds_id}{seed}: {d['uuid']}")


# -- schema --------------------------------------------------------------------------------


@click.command("schema")
@click.argument("name")
@click.option(
    "--history", is_flag=True, help="Show the recorded schema changes of a dataset instead."
)
@KIND_OPTION
@json_option
def schema_command(name: str, history: bool, kind: Kind) -> None:
    r"""Show the schema: every column with its Arrow type and role.

    Read from metadata only (no data file is opened). For a cube, the columns of all its
    datasets with the dataset each comes from. With --history, the schema changes
    kartoframe recorded for a dataset (creation, added columns, widened types).

    \b
    Examples:
      kartoframe ./data schema sales
      kartoframe ./data schema sales --history
      kartoframe ./data schema geo --json
    """
    import kartoframe as kf

    ctx = get_ctx()
    target = resolve(ctx.store(), name, kind)
    if history:
        if target.is_cube:
            raise BadInput("--history works on datasets; name one as PREFIX++ID.")
        events = kf.schema_history(name, target.store)
        if ctx.json:
            emit_json({"name": name, "events": events})
            return
        if not events:
            click.echo(f"No schema changes recorded for {name}.")
            return
        rows = []
        for e in events:
            if e.change == "add_columns":
                what = "; ".join(
                    [f"+{c} {t}" for c, t in e.added.items()]
                    + [f"{c}: {a} -> {b}" for c, (a, b) in e.widened.items()]
                )
            else:
                what = ", ".join(f"{c} {t}" for c, t in e.columns.items())
            rows.append([e.version, e.timestamp, e.change, what])
        console().print(table(["schema version", "timestamp", "change", "columns"], rows))
        # the log's versions (`history`, version=) count commits from 0; these count schemas
        click.echo(
            "(schema versions count schema changes from 1; `history` shows the commit "
            "versions, from 0)",
            err=True,
        )
        return
    columns: list[dict[str, Any]] = []
    seen: dict[str, dict[str, Any]] = {}
    for ds_id, md in sorted(target.datasets.items()):
        for row in schema_rows(md, target.cube):
            if row["name"] in seen:
                first = seen[row["name"]]
                first["datasets"].append(ds_id)
                first["roles"] += [r for r in row["roles"] if r not in first["roles"]]
                continue
            if target.is_cube:
                row["datasets"] = [ds_id]
            seen[row["name"]] = row
            columns.append(row)
    if ctx.json:
        emit_json({"kind": target.kind, "name": name, "columns": columns})
        return
    header = ["column", "type", "nullable", "role"] + (["datasets"] if target.is_cube else [])
    rows2 = [
        [c["name"], c["type"], "yes" if c["nullable"] else "no", ", ".join(c["roles"])]
        + ([", ".join(c["datasets"])] if target.is_cube else [])
        for c in columns
    ]
    console().print(table(header, rows2))
