"""Table maintenance: compact small files and cluster rows (``optimize``), datasets and cubes."""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

from kartoframe.errors import InvalidTypeError
from kartoframe.execution.huge_pages import huge_pages_off
from kartoframe.execution.optimize import run_optimize
from kartoframe.format.cube import Cube
from kartoframe.front.args import StoreInput, ensure_store
from kartoframe.front.docs import fill
from kartoframe.front.optimize import prepared_optimize
from kartoframe.plan.optimize import (
    DEFAULT_ROW_GROUP_SIZE,
    DEFAULT_TARGET_FILE_SIZE,
    OptimizeResult,
)
from kartoframe.plan.predicates import predicate_columns
from kartoframe.progress import track
from kartoframe.storage.cube_members import load_cube_datasets

__all__ = ["OptimizeResult", "optimize_cube", "optimize_dataset"]


@huge_pages_off()
@fill
def optimize_dataset(
    dataset_uuid: str | None = None,
    store: StoreInput | None = None,
    *,
    target_file_size: int = DEFAULT_TARGET_FILE_SIZE,
    sort_by: str | Sequence[str] | None = None,
    sort_method: str = "linear",
    predicates: object = None,
    min_files: int = 2,
    row_group_size: int = DEFAULT_ROW_GROUP_SIZE,
    dry_run: bool = False,
    app_id: str | None = None,
    app_version: int | None = None,
    commit_info: Mapping[str, Any] | None = None,
    progress: bool = False,
) -> OptimizeResult:
    """Compact the small files of each partition and cluster their rows (Delta's OPTIMIZE).

    For every selected partition (the files sharing one set of partition values), files
    smaller than ``target_file_size`` are read and rewritten as files near that size;
    with ``sort_by`` the rows of each partition's rewritten files are sorted first, so
    that their per-file and per-row-group statistics become tight. Statistics, bloom
    filters and secondary indices are rebuilt for the new files. One commit removes
    exactly the files read and adds the new ones: the content of the dataset is the
    same row for row (see :func:`kartoframe.hash_dataset`), earlier versions stay
    readable until :func:`kartoframe.garbage_collect_dataset` removes their files after
    its retention window.

    The run is **incremental**: the header records which files ``optimize`` wrote and in
    which order, and a partition with no new file since it was optimized (with the same
    ``sort_by``) is skipped. A daily optimize costs what changed that day.

    Concurrency: the commit conflicts only with a concurrent commit that removed or
    replaced one of the files it read; appends running at the same time (also into
    the same partitions) land, and the optimize commits on top of them.

    Memory: a partition's files stream through a row group at a time (sorted ones
    through runs spilled to the local disk). While the call runs, the process's new
    memory comes in 4 KiB pages, not transparent huge pages (Linux; the flag is restored
    afterwards; ``KARTOFRAME_KEEP_HUGE_PAGES=1`` leaves it alone): with them, RSS grew by
    2.1-2.2x the largest partition on the benchmark, without them 1.4-1.5x, in the same
    time.

    $params_dataset
    target_file_size
        Size of the files written, in bytes (default 128 MiB); files at or above it
        are left alone unless they must be sorted.
    sort_by
        Columns to sort the rows of each rewritten partition by (not partition keys).
        A partition whose files are not yet in this order is rewritten.
    sort_method
        ``"linear"`` (default): sort by the columns in turn. ``"zorder"``: a z-order
        curve over 1–4 columns, so that a range on any of them skips row groups.
    predicates
        Select the partitions to optimize (DNF, as in :func:`kartoframe.read_table`),
        on partition keys only: optimize rewrites whole partitions.
    min_files
        Least number of small files a partition needs to be compacted (default 2).
        Without ``sort_by``, a file is never rewritten alone.
    row_group_size
        Rows per row group of the new files (default 65,536: small enough for
        row-group skipping).
    dry_run
        Plan only: return what would be rewritten, write nothing.
    $txn
    progress
        Show a progress bar over the rewritten partitions (on a terminal).

    Returns
    -------
    OptimizeResult
        Files and bytes removed and added, the partitions optimized and those skipped
        (with the reason), the new version.

    Raises
    ------
    DatasetNotFoundError
        The dataset does not exist.
    InvalidInputError
        An invalid option (``sort_by`` on a partition key or a missing column, a
        predicate on a non-partition column, ...).
    CommitConflictError
        A concurrent commit removed or replaced a file this run rewrote (nothing of
        this run remains; run it again).

    Examples
    --------
    >>> import pandas as pd, kartoframe as kf
    >>> store = "memory://optimize-example"
    >>> for day in range(3):
    ...     df = pd.DataFrame({"country": ["DE", "FR"], "day": [day, day], "units": [1, 2]})
    ...     _ = kf.update_dataset_from_dataframes([df], store=store, dataset_uuid="sales",
    ...                                           partition_on=["country"])
    >>> len(kf.read_dataset_metadata("sales", store).partitions)
    6
    >>> result = kf.optimize_dataset("sales", store, sort_by=["day"])
    >>> result.files_removed, result.files_added
    (6, 2)
    >>> kf.optimize_dataset("sales", store, sort_by=["day"]).files_removed  # incremental
    0
    """
    st, plan, base, commit = prepared_optimize(dataset_uuid, store, locals())
    units = track(plan.units, f"optimizing {plan.uuid}", enabled=progress, unit="parts")
    return run_optimize(st, plan, base, commit=commit, units=units, dry_run=dry_run)


#: the keyword-only arguments of :func:`optimize_dataset` and their defaults
_KEYWORDS: dict[str, Any] = {
    name: p.default
    for name, p in inspect.signature(optimize_dataset).parameters.items()
    if p.kind is inspect.Parameter.KEYWORD_ONLY
}


def optimize_arguments(options: Mapping[str, Any], *, delayed: bool = False) -> dict[str, Any]:
    """The keywords of :func:`optimize_dataset` with its defaults (``progress`` only if not
    ``delayed``), unknown ones refused.
    """
    defaults = {k: v for k, v in _KEYWORDS.items() if not (delayed and k == "progress")}
    unknown = sorted(set(options) - set(defaults))
    if unknown:
        raise InvalidTypeError(f"Unexpected keyword arguments: {unknown}.")
    return {**defaults, **options}


@huge_pages_off()
def optimize_cube(
    cube: Cube,
    store: StoreInput,
    *,
    datasets: str | Sequence[str] | None = None,
    sort_by: str | Sequence[str] | None = None,
    **options: Any,
) -> dict[str, OptimizeResult]:
    """Optimize every dataset of a cube (or ``datasets``), the seed first.

    Each dataset is compacted as by :func:`optimize_dataset`, in its own commit, and by
    default sorted by the cube's dimension columns it holds, in the cube's order (the
    order cube queries and statistics profit from). The datasets keep their partition
    keys, indices and schema, so kartothek and plateau still query the cube.

    Parameters
    ----------
    cube
        The cube.
    store
        Store URL, :class:`kartoframe.Store` or factory.
    datasets
        Dataset ids to optimize (default: every dataset of the cube). With
        ``predicates``, datasets lacking one of their columns are left out (they have
        no such partitions); every dataset is planned before the first one commits.
    sort_by
        Columns to sort by in every dataset that holds them (default: the dimension
        columns; ``[]``: compact only).
    **options
        The other keywords of :func:`optimize_dataset` (``predicates`` on the cube's
        partition columns, ``target_file_size``, ``dry_run``, ...).

    Returns
    -------
    dict
        Dataset id -> :class:`OptimizeResult`, the seed first (datasets left out by
        ``predicates`` are absent).

    Examples
    --------
    >>> import pandas as pd, kartoframe as kf
    >>> cube = kf.Cube(dimension_columns=["city", "day"], partition_columns=["country"],
    ...                uuid_prefix="weather")
    >>> store = "memory://optimize-cube-example"
    >>> df = pd.DataFrame({"country": ["DE", "DE"], "city": ["Berlin", "Bonn"],
    ...                    "day": [2, 1], "temp": [3.0, 4.0]})
    >>> _ = kf.build_cube(data=df, cube=cube, store=store)
    >>> _ = kf.append_to_cube(data=df.assign(day=[3, 4]), cube=cube, store=store)
    >>> {k: r.files_added for k, r in kf.optimize_cube(cube, store).items()}
    {'seed': 1}
    """
    if not isinstance(cube, Cube):
        raise InvalidTypeError(f"cube must be a kartoframe.Cube, got {type(cube).__name__}.")
    st = ensure_store(store)
    args = optimize_arguments(options)
    loaded = load_cube_datasets(st, cube.uuid_prefix, datasets)
    if isinstance(sort_by, str):
        sort_by = [sort_by]
    wanted = list(cube.dimension_columns if sort_by is None else sort_by)
    ids = sorted(loaded, key=lambda i: (i != cube.seed_dataset, i))
    selecting = predicate_columns(args["predicates"])
    # plan every dataset before any commit: a bad option fails before anything changes
    plans = {}
    for ds_id in ids:
        schema = loaded[ds_id].schema
        if not selecting <= set(schema.names):
            continue  # the selection does not apply to this dataset
        keys = loaded[ds_id].metadata.partition_keys
        cols = [c for c in wanted if c in schema.names and c not in keys]
        ds_args = {**args, "sort_by": cols or None}
        plans[ds_id] = prepared_optimize(cube.ktk_dataset_uuid(ds_id), st, ds_args, loaded[ds_id])
    results: dict[str, OptimizeResult] = {}
    for ds_id, (ds_store, plan, base, commit) in plans.items():
        units = track(plan.units, f"optimizing {plan.uuid}", enabled=args["progress"])
        results[ds_id] = run_optimize(
            ds_store, plan, base, commit=commit, units=units, dry_run=args["dry_run"]
        )
    return results
