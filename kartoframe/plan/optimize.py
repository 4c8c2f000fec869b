"""Planning ``optimize``: which files of which partitions are rewritten into which (pure).

``optimize_dataset`` compacts the small files of each partition (the files sharing one set
of partition values) into files near a target size and, with ``sort_by``, sorts their rows
so that statistics become tight. :func:`plan_optimize` decides, from the header, the file
sizes and the record of earlier runs (:mod:`kartoframe.format.optimized`), which files
are rewritten; it is incremental: a partition optimized since its last change is skipped.

The rules, per partition:

- A file is a *candidate* if it is smaller than ``target_file_size``, or, with
  ``sort_by``, if it is not recorded as written by ``optimize`` in the same order.
- Files are taken in commit order (the header's order), and a unit only ever holds
  files that are consecutive in that order: its rows are concatenated in that order,
  sorted stably, and the new files take the place of the last file they replace. So a
  reader that lets later commits win for equal keys (the keep-last overlay of a cube's
  appends) sees the same winners after an optimize, also when appends land meanwhile.
- Without ``sort_by``, consecutive candidates are packed into bins of at most
  ``target_file_size`` bytes; each bin of two or more files is rewritten as one file. A
  partition with fewer than ``min_files`` candidates is skipped.
- With ``sort_by``, the files from the partition's first to its last candidate form one
  unit (sorted together) written as ``ceil(bytes / target_file_size)`` files. The
  partition is skipped if it has fewer than ``min_files`` candidates and every
  candidate is already in that order.

Sizes are the data files' sizes in bytes (from the statistics, or the store).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from kartoframe.errors import InvalidInputError, InvalidTypeError
from kartoframe.format.clustering import (
    SORT_METHODS,
    ZORDER_MAX_COLUMNS,
    SortMethod,
    order_record,
)
from kartoframe.format.naming import label_directory
from kartoframe.plan.arguments import check_int
from kartoframe.plan.file_part import FilePart
from kartoframe.plan.predicates import Predicate

__all__ = [
    "DEFAULT_ROW_GROUP_SIZE",
    "DEFAULT_TARGET_FILE_SIZE",
    "OptimizeOptions",
    "OptimizePlan",
    "OptimizeResult",
    "RewriteUnit",
    "SkippedPartition",
    "check_partition_predicate",
    "optimize_options",
    "plan_optimize",
]

#: Default size of a compacted file: 128 MiB (Delta Lake's and Spark's usual target).
DEFAULT_TARGET_FILE_SIZE = 128 * 1024 * 1024
#: Default rows per row group of a compacted file (small enough to skip row groups).
DEFAULT_ROW_GROUP_SIZE = 65_536


@dataclasses.dataclass(frozen=True, slots=True)
class OptimizeOptions:
    """The validated options of one ``optimize`` run."""

    target_file_size: int = DEFAULT_TARGET_FILE_SIZE
    sort_by: tuple[str, ...] = ()
    sort_method: SortMethod = "linear"
    min_files: int = 2
    row_group_size: int = DEFAULT_ROW_GROUP_SIZE

    @property
    def order(self) -> tuple[str, ...]:
        """The order the new files are recorded with (``()``: compacted, not sorted)."""
        return order_record(self.sort_by, self.sort_method)


def _positive_int(value: object, name: str) -> int:
    return check_int(value, name, 1)


def optimize_options(
    schema: pa.Schema,
    partition_keys: Sequence[str],
    *,
    target_file_size: object = DEFAULT_TARGET_FILE_SIZE,
    sort_by: object = None,
    sort_method: object = "linear",
    min_files: object = 2,
    row_group_size: object = DEFAULT_ROW_GROUP_SIZE,
) -> OptimizeOptions:
    """Check the options of ``optimize`` against the dataset schema.

    Raises
    ------
    InvalidTypeError, InvalidInputError
        An option of the wrong type or value; a ``sort_by`` column that is missing or a
        partition key (constant inside a partition); a z-order of more than four columns.
    """
    if isinstance(sort_by, str):
        sort_by = [sort_by]
    if sort_by is None:
        cols: tuple[str, ...] = ()
    elif isinstance(sort_by, list | tuple) and all(isinstance(c, str) for c in sort_by):
        cols = tuple(sort_by)
    else:
        raise InvalidTypeError("sort_by must be a column name or a list of column names.")
    if len(set(cols)) != len(cols):
        raise InvalidInputError(f"sort_by names a column twice: {list(cols)}.")
    missing = [c for c in cols if c not in schema.names]
    if missing:
        raise InvalidInputError(f"sort_by columns {missing} are not in the dataset schema.")
    keys = [c for c in cols if c in partition_keys]
    if keys:
        raise InvalidInputError(
            f"sort_by columns {keys} are partition keys (constant inside a partition)."
        )
    if sort_method not in SORT_METHODS:
        raise InvalidInputError(
            f"sort_method must be one of {list(SORT_METHODS)}, got {sort_method!r}."
        )
    if sort_method == "zorder" and not cols:
        raise InvalidInputError("sort_method='zorder' needs the sort_by columns to interleave.")
    if sort_method == "zorder" and len(cols) > ZORDER_MAX_COLUMNS:
        raise InvalidInputError(
            f"A z-order takes at most {ZORDER_MAX_COLUMNS} columns, got {list(cols)}."
        )
    return OptimizeOptions(
        target_file_size=_positive_int(target_file_size, "target_file_size"),
        sort_by=cols,
        sort_method=sort_method,  # type: ignore[arg-type]
        min_files=_positive_int(min_files, "min_files"),
        row_group_size=_positive_int(row_group_size, "row_group_size"),
    )


def check_partition_predicate(predicate: Predicate | None, partition_keys: Sequence[str]) -> None:
    """``optimize`` selects whole partitions: its predicates may use partition keys only.

    Raises
    ------
    InvalidInputError
        A predicate on another column.
    """
    if predicate is None:
        return
    other = sorted(predicate.columns - set(partition_keys))
    if other:
        raise InvalidInputError(
            f"optimize selects whole partitions: predicates may only use the partition "
            f"keys {list(partition_keys)}, got {other}."
        )


@dataclasses.dataclass(frozen=True, slots=True)
class RewriteUnit:
    """Files of one partition read together and written as ``output_files`` new files.

    ``files`` are consecutive in commit order; the new files take the place of the last.
    """

    partition: str
    files: tuple[FilePart, ...]
    bytes: int
    output_files: int


@dataclasses.dataclass(frozen=True, slots=True)
class SkippedPartition:
    """A selected partition ``optimize`` leaves as it is, and why."""

    partition: str
    files: int
    reason: str


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class OptimizePlan:
    """A planned ``optimize``: the units to rewrite and what a writer needs to know.

    Everything here is small and picklable (dask tasks and Spark executors receive it).
    """

    uuid: str
    table_name: str
    schema: pa.Schema
    partition_keys: tuple[str, ...]
    index_columns: tuple[str, ...]
    bloom_filter_columns: tuple[str, ...]
    options: OptimizeOptions
    units: tuple[RewriteUnit, ...]
    skipped: tuple[SkippedPartition, ...]
    #: the version the plan was made on
    version: int | None = None

    @property
    def labels(self) -> frozenset[str]:
        """Labels of every file the plan rewrites (removed by its commit)."""
        return frozenset(f.label for u in self.units for f in u.files)

    @property
    def bytes(self) -> int:
        """Bytes of the files the plan rewrites."""
        return sum(u.bytes for u in self.units)


def plan_optimize(
    *,
    uuid: str,
    table_name: str,
    schema: pa.Schema,
    partition_keys: Sequence[str],
    index_columns: Sequence[str],
    bloom_filter_columns: Sequence[str],
    files: Sequence[FilePart],
    sizes: Mapping[str, int],
    positions: Mapping[str, int],
    recorded: Mapping[str, tuple[str, ...]],
    options: OptimizeOptions,
    version: int | None = None,
) -> OptimizePlan:
    """Plan which of ``files`` (the selected files) are rewritten (see the module rules).

    ``sizes`` maps every label of ``files`` to its data file's size in bytes,
    ``positions`` to its place in the header's (commit) order; ``recorded`` is the
    header's record of files written by earlier runs.
    """
    by_partition: dict[str, list[FilePart]] = {}
    for f in files:
        by_partition.setdefault(label_directory(f.label), []).append(f)
    order = options.order
    target = options.target_file_size
    units: list[RewriteUnit] = []
    skipped: list[SkippedPartition] = []
    for partition in sorted(by_partition):
        group = sorted(by_partition[partition], key=lambda f: positions[f.label])
        unordered = {f.label for f in group if order and recorded.get(f.label) != order}
        small = [sizes[f.label] < target or f.label in unordered for f in group]
        picked = [i for i, is_small in enumerate(small) if is_small]
        if not picked:
            skipped.append(SkippedPartition(partition, len(group), "no file below the target"))
            continue
        if order:
            if len(picked) < options.min_files and not unordered:
                skipped.append(SkippedPartition(partition, len(group), "already optimized"))
                continue
            run = group[picked[0] : picked[-1] + 1]  # contiguous in commit order
            total = sum(sizes[f.label] for f in run)
            units.append(
                RewriteUnit(partition, tuple(run), total, max(1, math.ceil(total / target)))
            )
            continue
        if len(picked) < options.min_files:
            reason = f"fewer than min_files={options.min_files} files below the target"
            skipped.append(SkippedPartition(partition, len(group), reason))
            continue
        bins = _pack(group, small, sizes, target)
        if not bins:
            reason = "no two consecutive files below the target fit into one file"
            skipped.append(SkippedPartition(partition, len(group), reason))
        for b in bins:
            units.append(RewriteUnit(partition, tuple(b), sum(sizes[f.label] for f in b), 1))
    return OptimizePlan(
        uuid,
        table_name,
        schema,
        tuple(partition_keys),
        tuple(index_columns),
        tuple(bloom_filter_columns),
        options,
        tuple(units),
        tuple(skipped),
        version,
    )


def _pack(
    group: Sequence[FilePart], small: Sequence[bool], sizes: Mapping[str, int], target: int
) -> list[list[FilePart]]:
    """Greedy bins of consecutive small files of at most ``target`` bytes, in commit order
    (a file that is not small ends a bin); bins of one file are dropped.
    """
    bins: list[list[FilePart]] = []
    current: list[FilePart] = []
    used = 0
    for f, is_small in zip(group, small, strict=True):
        size = sizes[f.label]
        if current and (not is_small or used + size > target):
            bins.append(current)
            current, used = [], 0
        if not is_small:
            continue
        current.append(f)
        used += size
    if current:
        bins.append(current)
    return [b for b in bins if len(b) > 1]


@dataclasses.dataclass(frozen=True, slots=True)
class OptimizeResult:
    """What an ``optimize`` did (or, with ``dry_run``, would do).

    Attributes
    ----------
    dataset_uuid
        The dataset.
    version
        The version the commit created (the planned-on version for a dry run or when
        nothing was rewritten; None for a dataset without a transaction log).
    files_removed, files_added
        Data files the commit removed and added.
    bytes_removed, bytes_added
        Their total sizes (``bytes_added`` is 0 for a dry run).
    partitions_optimized
        Partition directories that were rewritten.
    partitions_skipped
        ``(partition, files, reason)`` of each selected partition left as it was.
    dry_run
        Whether nothing was written.
    """

    dataset_uuid: str
    version: int | None
    files_removed: int
    files_added: int
    bytes_removed: int
    bytes_added: int
    partitions_optimized: tuple[str, ...]
    partitions_skipped: tuple[SkippedPartition, ...]
    dry_run: bool

    def to_dict(self) -> dict[str, Any]:
        """The result as plain JSON-able values (the CLI's ``--json``)."""
        out = dataclasses.asdict(self)
        out["partitions_optimized"] = list(self.partitions_optimized)
        out["partitions_skipped"] = [dataclasses.asdict(s) for s in self.partitions_skipped]
        return out

    @classmethod
    def planned(cls, plan: OptimizePlan, *, dry_run: bool) -> OptimizeResult:
        """The result of a plan that is not (or not yet) executed."""
        return cls(
            plan.uuid,
            plan.version,
            len(plan.labels),
            sum(u.output_files for u in plan.units) if dry_run else 0,
            plan.bytes,
            0,
            tuple(sorted({u.partition for u in plan.units})),
            plan.skipped,
            dry_run,
        )
