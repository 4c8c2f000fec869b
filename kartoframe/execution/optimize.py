"""Running ``optimize``: load and plan once, rewrite units with the shared kernels, commit once.

:func:`load_optimize` loads the dataset, binds the partition predicates, finds the file
sizes (statistics, else the store) and plans (:func:`kartoframe.plan.optimize.plan_optimize`).
:func:`rewrite_unit` is the per-unit work every engine runs (eager in a loop, dask one task
per unit, Spark one executor task per unit): it reads the unit's files with the read kernel's
scan, sorts them (:mod:`kartoframe.format.clustering`) and writes them with the chunk
kernel's streaming writer (statistics, bloom filters and index values included); without a
sort the files stream through, a few at a time. :func:`commit_optimize` publishes one
commit that removes exactly the files read and adds the new ones; it conflicts only with a
concurrent commit that removed or replaced one of those files (concurrent appends land).
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

import pyarrow as pa

from kartoframe.errors import CorruptMetadataError, InvalidInputError
from kartoframe.execution.chunks import (
    ParquetSerializer,
    delete_files,
    split_rows,
    write_stream,
)
from kartoframe.execution.external_sort import (
    SortedRuns,
    spill_sorted_runs,
    spilled_with_distinct,
)
from kartoframe.execution.huge_pages import huge_pages_off
from kartoframe.execution.kernel import read_file_parts
from kartoframe.execution.read_plan import plan_loaded_read
from kartoframe.execution.write import already_recorded, commit_write, only_removed_files
from kartoframe.format.arrow_memory import release_unused_memory
from kartoframe.format.clustering import sorted_columns
from kartoframe.format.commit_args import NO_COMMIT_OPTIONS, CommitOptions
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.header import kartoframe_section
from kartoframe.format.header_stamp import header_version
from kartoframe.format.optimized import optimized_labels
from kartoframe.plan.file_part import FilePart
from kartoframe.plan.optimize import (
    OptimizePlan,
    OptimizeResult,
    RewriteUnit,
    check_partition_predicate,
    optimize_options,
    plan_optimize,
)
from kartoframe.plan.query import bound
from kartoframe.plan.write import ChunkResult, new_file_uuid
from kartoframe.storage.footer_stats import data_file_sizes
from kartoframe.storage.resolve import bloom_columns_of, load_dataset, statistics_base_columns
from kartoframe.storage.spill import SpillFolder
from kartoframe.storage.store import Store

__all__ = [
    "chunks_or_raise",
    "commit_optimize",
    "load_optimize",
    "optimize_result",
    "rewrite_unit",
    "run_optimize",
    "settled_without_work",
]


def _sizes(store: Store, loaded: LoadedDataset, labels: Iterable[str]) -> dict[str, int]:
    """Data file sizes by label: from the statistics' base columns where a row describes
    the current file (no bloom filter or other statistic is decoded), asked of the store
    for the others.
    """
    parts = loaded.metadata.partitions
    wanted = set(labels)
    sizes: dict[str, int] = {}
    try:
        tables = statistics_base_columns(store, loaded) or []
    except CorruptMetadataError:
        tables = []  # unreadable statistics: every size is asked of the store
    for table in tables:  # base first, then deltas: a later row of a label wins
        cols = table.select(["label", "key", "bytes"]).to_pydict()
        for label, key, size in zip(cols["label"], cols["key"], cols["bytes"], strict=True):
            if label in wanted and size is not None and parts.get(label) == key:
                sizes[label] = size
    missing = [lb for lb in wanted if lb not in sizes]
    asked = data_file_sizes(store, [parts[lb] for lb in missing])
    sizes.update({lb: asked[parts[lb]] for lb in missing})
    return sizes


def load_optimize(
    store: Store,
    dataset_uuid: str,
    *,
    predicates: object = None,
    loaded: LoadedDataset | None = None,
    **options: Any,
) -> tuple[OptimizePlan, LoadedDataset]:
    """Load the current version of a dataset (unless ``loaded`` is it, just loaded) and
    plan an ``optimize`` of it.

    ``options`` are the keywords of :func:`kartoframe.plan.optimize.optimize_options`.
    """
    if loaded is None:
        loaded = load_dataset(store, dataset_uuid)
    md = loaded.metadata
    opts = optimize_options(loaded.schema, md.partition_keys, **options)
    predicate = bound(predicates, loaded.schema)
    check_partition_predicate(predicate, md.partition_keys)
    scan, _, loaded = plan_loaded_read(
        store, loaded, predicates=predicate, dask=False, consistent_integers=False
    )
    files = [f for t in scan.tasks for f in t.files]
    # the statistics are not loaded whole: sizes come from their base columns, and the
    # commit reads the rows of the files it keeps (an optimize removes most of them)
    plan = plan_optimize(
        uuid=md.uuid,
        table_name=md.table_name,
        schema=loaded.schema,
        partition_keys=md.partition_keys,
        index_columns=sorted(set(md.indices) | set(md.embedded_indices)),
        bloom_filter_columns=bloom_columns_of(loaded),
        files=files,
        sizes=_sizes(store, loaded, (f.label for f in files)),
        positions={lb: i for i, lb in enumerate(md.partitions)},
        recorded=optimized_labels(kartoframe_section(md)),
        options=opts,
        version=header_version(md),
    )
    release_unused_memory()  # what loading and planning freed (statistics, footers)
    return plan, loaded


#: The files of an unsorted unit are read in batches of about this many bytes (on disk):
#: memory holds one batch and the row group being written, not the unit.
STREAM_BATCH_BYTES = 2 * 2**20
#: A sorted unit is read about this many bytes of files (on disk) at a time; each such
#: batch is sorted into a run spilled to the local disk, and the runs are merged into the
#: new files (:mod:`kartoframe.execution.external_sort`), so memory does not grow with the
#: unit. Measured with ``optimize_compare.py``'s memory worker against the old in-memory
#: sort, which held the unit and its sorted copy: on the 10x table (largest partition
#: 166 MiB in Arrow) RSS growth 2.59x -> 1.12x the partition in the same time; on the
#: standard table (16.6 MiB) 2.68x -> 1.7-2.1x. Runs of 2 MiB grew RSS more (more merge
#: rounds), so 4 MiB.
SORT_RUN_BYTES = 4 * 2**20


def _file_batches(unit: RewriteUnit, batch_bytes: int) -> list[Sequence[FilePart]]:
    """A unit's files in order, in batches of about ``batch_bytes`` (on disk)."""
    per_batch = max(1, batch_bytes * len(unit.files) // max(1, unit.bytes))
    return [unit.files[i : i + per_batch] for i in range(0, len(unit.files), per_batch)]


def _unit_batches(
    store: Store, plan: OptimizePlan, batches: Sequence[Sequence[FilePart]]
) -> Iterator[pa.Table]:
    """The rows of a unit's files (data columns), in order, a batch of files at a time."""
    for files in batches:
        yield read_file_parts(
            store, files, plan.schema, plan.partition_keys, partition_columns=False
        )


#: A z-order of a unit of at most this many bytes (on disk) is computed in memory (about
#: 3x the unit's Arrow size at the peak). A larger unit spills: it needs the distinct
#: values of its columns over the whole unit first and ranks every batch against them.
#: Measured with every unit spilled, against in memory: 10x table (largest partition 166
#: MiB in Arrow) RSS 340-358 MiB against 480 MiB, but 37-40 s against 25 s; standard
#: table 3.6 s against 2.6 s. So only units large enough to endanger a worker spill.
ZORDER_IN_MEMORY_BYTES = 128 * 2**20


def _sorted_in_memory(store: Store, plan: OptimizePlan, unit: RewriteUnit) -> pa.Table:
    """A unit's rows, read whole and sorted (one column at a time, each original column
    released once its sorted copy exists).
    """
    opts = plan.options
    holder = [
        read_file_parts(
            store, unit.files, plan.schema, plan.partition_keys, partition_columns=False
        )
    ]
    table = sorted_columns(holder, opts.sort_by, opts.sort_method)
    release_unused_memory()  # the scan's buffers: the writer does not grow beside them
    return table


def _sorted_externally(
    store: Store, plan: OptimizePlan, batches: Sequence[Sequence[FilePart]], spill: SpillFolder
) -> SortedRuns:
    """A unit's rows sorted a batch of files at a time into runs spilled to ``spill``."""
    opts = plan.options
    distinct = None
    source: Iterable[pa.Table] = _unit_batches(store, plan, batches)
    if opts.sort_method == "zorder":  # ranks over the whole unit: read it all first
        source, distinct = spilled_with_distinct(source, opts.sort_by, spill)
    return spill_sorted_runs(source, opts.sort_by, opts.sort_method, spill, distinct=distinct)


@huge_pages_off()
def rewrite_unit(
    store: Store, plan: OptimizePlan, unit: RewriteUnit, *, file_prefix: str = ""
) -> ChunkResult:
    """Read a unit's files, sort them, write them as ``unit.output_files`` new files.

    The new files hold the same rows (in the plan's order) with the dataset schema (and
    its pandas metadata); a failure removes the files this call wrote. ``file_prefix``
    starts the new files' uuids (a Spark job's id, so that it can find the files of
    attempts it abandoned). Without ``sort_by`` the files stream through: a few input
    files at a time are read and written out row group by row group. With it, a few
    files at a time are sorted into runs spilled to the local disk, then merged into the
    new files (:data:`SORT_RUN_BYTES`); a z-order of a unit of at most
    :data:`ZORDER_IN_MEMORY_BYTES` is sorted in memory. The process's new memory comes in
    small pages meanwhile (:func:`~kartoframe.execution.huge_pages.huge_pages_off`).
    """
    opts = plan.options
    origin = f"optimize of {unit.partition or 'the dataset'}"
    # a unit is one partition: its files are read without the partition columns and
    # written as that partition (nothing to group)
    write = functools.partial(
        write_stream,
        store,
        plan.uuid,
        partition_on=plan.partition_keys,
        partition_values=unit.files[0].partition_values,
        table_name=plan.table_name,
        index_columns=plan.index_columns,
        bloom_filter_columns=plan.bloom_filter_columns,
        serializer=ParquetSerializer(chunk_size=opts.row_group_size),
        metadata=plan.schema.metadata,
        origin=origin,
    )
    if not opts.sort_by:
        batches = _file_batches(unit, STREAM_BATCH_BYTES)
        out = write(_unit_batches(store, plan, batches), file_uuid=new_file_uuid(file_prefix))
        release_unused_memory()  # the next unit's rows do not grow the process beside these
        return ChunkResult(out.partitions, plan.schema, origin)
    results: list[ChunkResult] = []
    try:
        with SpillFolder(prefix="kartoframe-optimize-") as spill:
            ordered: Iterator[pa.Table]
            if opts.sort_method == "zorder" and unit.bytes <= ZORDER_IN_MEMORY_BYTES:
                table = _sorted_in_memory(store, plan, unit)
                rows, ordered = table.num_rows, iter([table])
                del table
            else:
                runs = _sorted_externally(store, plan, _file_batches(unit, SORT_RUN_BYTES), spill)
                rows, ordered = runs.rows, runs.merged()
            step = -(-rows // unit.output_files)
            for part in split_rows(ordered, max(1, step)):
                results.append(write(part, file_uuid=new_file_uuid(file_prefix)))
            del ordered
    except BaseException:
        delete_files(store, (p.key for c in results for p in c.partitions))
        raise
    release_unused_memory()  # the next unit's rows do not grow the process beside these
    parts = tuple(p for c in results for p in c.partitions)
    return ChunkResult(parts, plan.schema, origin)


def commit_optimize(
    store: Store,
    plan: OptimizePlan,
    base: LoadedDataset,
    chunks: Sequence[ChunkResult],
    commit: CommitOptions = NO_COMMIT_OPTIONS,
) -> OptimizeResult:
    """Publish one commit: remove the plan's files, add the chunks' files.

    ``chunks[i]`` is what :func:`rewrite_unit` wrote for ``plan.units[i]``; its files take
    the place of the unit's last file in the header's (commit) order.

    Raises
    ------
    CommitConflictError
        A concurrent commit removed or replaced a file the plan rewrote (the new files
        are deleted; the dataset stays as that commit left it).
    """
    if len(chunks) != len(plan.units):
        raise InvalidInputError(
            f"commit_optimize needs one chunk per unit: {len(chunks)} for {len(plan.units)}."
        )
    opts = plan.options
    placed = {
        p.label: unit.files[-1].label
        for unit, chunk in zip(plan.units, chunks, strict=True)
        for p in chunk.partitions
    }
    header = commit_write(
        store,
        plan.uuid,
        chunks,
        base=base,
        remove_labels=plan.labels,
        storage_format=base.metadata.storage_format,
        table_name=plan.table_name,
        commit=commit,
        operation="OPTIMIZE",
        operation_parameters={
            "target_file_size": opts.target_file_size,
            "sort_by": list(opts.sort_by),
            "sort_method": opts.sort_method,
            "min_files": opts.min_files,
            "partitions_optimized": len({u.partition for u in plan.units}),
            "partitions_skipped": len(plan.skipped),
        },
        remove_scope=only_removed_files,
        optimized={p.label: opts.order for c in chunks for p in c.partitions},
        placed=placed,
    )
    return optimize_result(plan, chunks, header_version(header))


def optimize_result(
    plan: OptimizePlan, chunks: Sequence[ChunkResult], version: int | None
) -> OptimizeResult:
    """The result of an executed plan (``chunks``: what its units wrote)."""
    added = [p for c in chunks for p in c.partitions]
    return dataclasses.replace(
        OptimizeResult.planned(plan, dry_run=False),
        version=version,
        files_added=len(added),
        bytes_added=sum(p.size for p in added),
    )


def settled_without_work(
    store: Store, plan: OptimizePlan, commit: CommitOptions, *, dry_run: bool
) -> OptimizeResult | None:
    """The result when no unit needs to run (every engine checks this first): a dry run,
    nothing to rewrite, or an application transaction the dataset already records (a
    retried step). None: run the plan.
    """
    if dry_run or not plan.units:
        return OptimizeResult.planned(plan, dry_run=dry_run)
    if already_recorded(store, plan.uuid, commit):
        return OptimizeResult.planned(dataclasses.replace(plan, units=()), dry_run=False)
    return None


def chunks_or_raise(
    store: Store, outcomes: Sequence[ChunkResult | BaseException]
) -> list[ChunkResult]:
    """The chunks of every unit (outcomes in unit order); if a unit failed, the files the
    others wrote are deleted and its exception is raised.
    """
    chunks = [o for o in outcomes if isinstance(o, ChunkResult)]
    failures = [o for o in outcomes if not isinstance(o, ChunkResult)]
    if failures:
        delete_files(store, [p.key for c in chunks for p in c.partitions])
        raise failures[0]
    return chunks


def run_optimize(
    store: Store,
    plan: OptimizePlan,
    base: LoadedDataset,
    *,
    commit: CommitOptions = NO_COMMIT_OPTIONS,
    units: Iterable[RewriteUnit] | None = None,
    dry_run: bool = False,
) -> OptimizeResult:
    """The eager engine: rewrite the units, then commit once.

    ``units`` iterates over ``plan.units`` in order (a progress bar's wrapper, say). Up
    to one unit per CPU (at most 4), of at most :data:`SHARED_UNIT_BYTES` each, are
    rewritten at a time, as long as their sizes add up
    to no more than the largest unit's: memory stays bounded by the largest unit while
    small units share the cores. A failure removes every file written; nothing is
    committed.
    """
    settled = settled_without_work(store, plan, commit, dry_run=dry_run)
    if settled is not None:
        return settled
    workers = min(4, os.cpu_count() or 1)
    todo = units if units is not None else plan.units
    chunks = _rewrite_within_budget(store, plan, todo, workers)
    return commit_optimize(store, plan, base, chunks, commit)


#: Units larger than this (bytes of files read) run alone: two large units at a time keep
#: the Arrow pool within the budget but grow the process by the allocator's per-thread
#: caches (10x scenario, 166 MiB partition: RSS growth 1.7x alone, 2.35x in pairs).
SHARED_UNIT_BYTES = 32 * 2**20


def _rewrite_within_budget(
    store: Store, plan: OptimizePlan, units: Iterable[RewriteUnit], workers: int
) -> list[ChunkResult]:
    """:func:`rewrite_unit` of every unit, in order, at most ``workers`` at a time and
    at most the largest unit's bytes in flight; on a failure the files of every unit
    that finished are deleted and the failure is raised.
    """
    budget = max((u.bytes for u in plan.units), default=0)
    done: dict[int, ChunkResult] = {}
    running: dict[Future[ChunkResult], tuple[int, int]] = {}

    def collect(futures: Iterable[Future[ChunkResult]]) -> None:
        for f in futures:
            i, _ = running.pop(f)
            done[i] = f.result()

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="kf-optimize") as pool:
        try:
            for i, unit in enumerate(units):
                while running and (
                    len(running) >= workers
                    or sum(b for _, b in running.values()) + unit.bytes > budget
                    or max(unit.bytes, *(b for _, b in running.values())) > SHARED_UNIT_BYTES
                ):
                    collect(wait(running, return_when=FIRST_COMPLETED).done)
                running[pool.submit(rewrite_unit, store, plan, unit)] = (i, unit.bytes)
            collect(wait(running).done)
        except BaseException:
            wait(running)  # the units still running finish (their files are deleted below)
            written = list(done.values())
            written += [f.result() for f in running if not f.cancelled() and not f.exception()]
            delete_files(store, (p.key for c in written for p in c.partitions))
            raise
    return [done[i] for i in sorted(done)]
