"""The stats command: files, partitions, rows and bytes per dataset."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import click

from kartoframe.cli._common import console, emit_json, get_ctx, human_bytes, json_option
from kartoframe.cli._tables import KIND_OPTION, table
from kartoframe.cli._targets import Kind, Target, resolve

if TYPE_CHECKING:
    from kartoframe.api.read import DatasetMetadata
    from kartoframe.storage.store import Store


# -- sizes and rows ----------------------------------------------------------------------


def dataset_numbers(
    store: Store, md: DatasetMetadata, *, rows: bool, progress: bool
) -> dict[str, int | None]:
    """Files, physical partitions, rows and bytes of a dataset.

    Rows and bytes come from kartoframe's per-file statistics where the dataset has them,
    otherwise from the Parquet footers (rows) and the store (bytes).
    """
    import kartoframe as kf
    from kartoframe.progress import ProgressBar
    from kartoframe.storage.parquet import read_footer

    labels = list(md.partitions)
    known: dict[str, tuple[int, int]] = {}
    try:
        stats = kf.dataset_statistics(md.uuid, store, columns=[])
        for lb, r, b, has in zip(
            stats["label"], stats["rows"], stats["bytes"], stats["has_statistics"]
        ):
            if bool(has):
                known[lb] = (int(r), int(b))
    except kf.CorruptMetadataError:
        known = {}
    todo = [lb for lb in labels if lb not in known]

    with ProgressBar(
        f"reading footers of {md.uuid}", len(todo), enabled=progress and len(todo) > 1, unit="files"
    ) as bar:

        def _one(label: str) -> tuple[str, tuple[int, int]]:
            key = md.partitions[label]
            n = read_footer(store, key).num_rows if rows else -1
            size = store.size(key)
            bar.advance()
            return label, (n, size)

        with ThreadPoolExecutor(max_workers=16) as pool:
            known.update(dict(pool.map(_one, todo)))
    physical = {lb.rsplit("/", 1)[0] for lb in labels if "/" in lb}
    return {
        "files": len(labels),
        "partitions": len(physical) if md.partition_keys else min(1, len(labels)),
        "rows": sum(known[lb][0] for lb in labels) if rows else None,
        "bytes": sum(known[lb][1] for lb in labels),
    }


# -- stats ---------------------------------------------------------------------------------


def target_stats(target: Target, progress: bool) -> dict[str, dict[str, int | None]]:
    """Per dataset: files, partitions, rows, bytes."""
    import kartoframe as kf
    from kartoframe.progress import ProgressBar

    if not target.is_cube:
        return {
            target.name: dataset_numbers(
                target.store, target.dataset(), rows=True, progress=progress
            )
        }
    assert target.cube is not None
    with ProgressBar(f"collecting statistics of {target.name}", None, enabled=progress):
        raw = kf.collect_stats(target.cube, target.store)
    return {
        ds_id: {
            "files": s["files"],
            "partitions": s["partitions"],
            "rows": s["rows"],
            "bytes": s["blobsize"],
        }
        for ds_id, s in raw.items()
    }


@click.command("stats")
@click.argument("name")
@KIND_OPTION
@json_option
def stats_command(name: str, kind: Kind) -> None:
    r"""Count files, partitions, rows and bytes of a dataset or of each dataset of a cube.

    Rows come from kartoframe's per-file statistics when the dataset has them, otherwise
    from the Parquet footers (one ranged read per file); the last line is the total.

    \b
    Examples:
      kartoframe ./data stats sales
      kartoframe ./data stats geo --json
    """
    ctx = get_ctx()
    target = resolve(ctx.store(), name, kind)
    per = target_stats(target, ctx.progress)
    total = {
        k: sum((v[k] or 0) for v in per.values()) for k in ("files", "partitions", "rows", "bytes")
    }
    if ctx.json:
        emit_json({"kind": target.kind, "name": name, "datasets": per, "total": total})
        return
    rows = [
        [
            ds,
            f"{s['files']:,}",
            f"{s['partitions']:,}",
            f"{s['rows'] or 0:,}",
            human_bytes(s["bytes"]),
        ]
        for ds, s in per.items()
    ]
    rows.append(
        [
            "total",
            f"{total['files']:,}",
            f"{total['partitions']:,}",
            f"{total['rows']:,}",
            human_bytes(total["bytes"]),
        ]
    )
    console().print(table(["dataset", "files", "partitions", "rows", "bytes"], rows))
