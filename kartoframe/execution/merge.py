"""Running a row-level merge: plan the candidates, rewrite the files with matches, insert,
commit once.

:func:`load_merge` loads the dataset, checks the options and the source, and finds the
candidate files (:func:`kartoframe.plan.merge.candidate_files`: the merge's predicates
through the read planner, then the source keys against partitions and statistics).
:func:`merge_one` is the per-file work every engine runs: it reads one candidate with
the read kernel, merges the source into it (:func:`kartoframe.plan.merge.merge_file`;
memory holds the source and that file) and writes its new content as one file of its
partition. :func:`finish_merge` writes the inserted rows and publishes one commit that
removes exactly the rewritten files (each replacement in its predecessor's place): a
concurrent append (even into a rewritten partition) still lands; a concurrent commit
that removed or replaced a rewritten file makes it fail with ``CommitConflictError``.
:func:`run_merge` is the eager engine.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from kartoframe.execution.chunks import delete_files, write_chunk
from kartoframe.execution.kernel import read_file_parts
from kartoframe.execution.read_plan import plan_loaded_read
from kartoframe.execution.write import already_recorded, commit_write, only_removed_files
from kartoframe.format import changes
from kartoframe.format.arrow_memory import release_unused_memory
from kartoframe.format.commit_args import NO_COMMIT_OPTIONS, CommitOptions
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.header_stamp import header_version
from kartoframe.plan.file_part import FilePart
from kartoframe.plan.merge import (
    FileMerge,
    MergeOptions,
    MergeResult,
    candidate_files,
    merge_file,
    not_matched_rows,
    partition_group,
    prepare_source,
    source_groups,
)
from kartoframe.plan.predicates import Predicate, to_expression
from kartoframe.plan.query import bound
from kartoframe.plan.write import ChunkResult, new_file_uuid
from kartoframe.storage.parquet import write_table
from kartoframe.storage.resolve import bloom_columns_of, load_dataset, statistics_rows
from kartoframe.storage.store import Store

__all__ = [
    "FileOutcome",
    "MergePlan",
    "finish_merge",
    "load_merge",
    "merge_one",
    "run_merge",
    "settled_merge",
    "skip_merge",
]


@dataclasses.dataclass(frozen=True)
class MergePlan:
    """A merge, planned: the base version, the checked source and the candidate files."""

    uuid: str
    base: LoadedDataset
    source: pa.Table
    options: MergeOptions
    candidates: tuple[FilePart, ...]
    predicate: Predicate | None
    #: the source rows each partition's files can match (:func:`source_groups`)
    groups: Mapping[tuple[Any, ...], np.ndarray]

    @property
    def partition_keys(self) -> list[str]:
        """The dataset's partition keys."""
        return list(self.base.metadata.partition_keys)


def load_merge(
    store: Store,
    dataset_uuid: str,
    source: pa.Table,
    options: MergeOptions,
    *,
    predicates: object = None,
    loaded: LoadedDataset | None = None,
) -> MergePlan:
    """Load the current version of the dataset (unless ``loaded`` is it, just loaded)
    and plan a merge of ``source`` into it.
    """
    if loaded is None:
        loaded = load_dataset(store, dataset_uuid)
    prepared = prepare_source(source, loaded.schema, options)
    release_unused_memory()  # the key check's hash tables
    predicate = bound(predicates, loaded.schema)
    scan, _, loaded = plan_loaded_read(
        store, loaded, predicates=predicate, dask=False, consistent_integers=False
    )
    files = [f for t in scan.tasks for f in t.files]
    md = loaded.metadata
    groups = source_groups(prepared, options, md.partition_keys)
    # the statistics of the files in the source's partitions only: their row groups are
    # all that is decoded (a commit that adds files never reads the others either)
    in_groups = {f.label for f in files if partition_group(f, options, md.partition_keys) in groups}
    found = candidate_files(
        files,
        md.partition_keys,
        prepared,
        options,
        loaded.schema,
        statistics_rows(store, loaded, in_groups) if in_groups else None,
        md.partitions,
        groups,
    )
    release_unused_memory()  # the statistics' row groups
    return MergePlan(md.uuid, loaded, prepared, options, tuple(found), predicate, groups)


def _in_scope(table: pa.Table, predicate: Predicate | None) -> np.ndarray | None:
    """Which rows of a file the merge's predicates select (None: all)."""
    expr = to_expression(predicate)
    if expr is None:
        return None
    pos = "__kartoframe_scope__"
    kept = table.append_column(pos, pa.array(np.arange(table.num_rows))).filter(expr)
    mask = np.zeros(table.num_rows, dtype=bool)
    mask[np.asarray(kept.column(pos).to_numpy(), dtype=np.int64)] = True
    return mask


@dataclasses.dataclass(frozen=True)
class FileOutcome:
    """What merging into one candidate file did: the counts and source rows of its
    :class:`~kartoframe.plan.merge.FileMerge` (without the rows) and the file written in
    its place (None: unchanged, or every row deleted), and the change file of its rows.
    """

    part: FilePart
    merge: FileMerge
    chunk: ChunkResult | None
    #: the change file of the file's updated and deleted rows (None: none written)
    change_file: str | None = None


def _write(store: Store, plan: MergePlan, table: pa.Table, file_prefix: str = "") -> ChunkResult:
    """Write rows of the dataset (partition columns included) with the chunk kernel, in
    files whose names start with ``file_prefix``.
    """
    md = plan.base.metadata
    return write_chunk(
        store,
        plan.uuid,
        table,
        file_uuid=new_file_uuid(file_prefix),
        table_name=md.table_name,
        partition_on=plan.partition_keys,
        index_columns=sorted(set(md.indices) | set(md.embedded_indices)),
        bloom_filter_columns=bloom_columns_of(plan.base),
        origin=f"merge into {plan.uuid}",
    )


def _write_changes(store: Store, plan: MergePlan, rows: pa.Table, file_prefix: str = "") -> str:
    """Write rows of the change feed as a new change file of the dataset; return its key."""
    key = changes.change_file_key(plan.uuid, new_file_uuid(file_prefix))
    write_table(store, key, rows, row_group_size=changes.ROW_GROUP_ROWS)
    release_unused_memory()  # the writer's pages
    return key


def merge_one(
    store: Store, plan: MergePlan, part: FilePart, *, dry_run: bool, file_prefix: str = ""
) -> FileOutcome:
    """The per-file work every engine runs: read one candidate file with the read kernel,
    merge the source into it and (unless ``dry_run``) write its new content as one file
    of its partition (named starting with ``file_prefix``). Memory holds the source and
    this file.
    """
    table = read_file_parts(store, [part], plan.base.schema, plan.partition_keys)
    release_unused_memory()  # the read's buffers (pages, decompression)
    scope = _in_scope(table, plan.predicate)
    # only the source rows of the file's partition can match: a small join
    rows = plan.groups.get(partition_group(part, plan.options, plan.partition_keys))
    if rows is None:
        rows = np.zeros(0, dtype=np.int64)
    source = plan.source.take(pa.array(rows, type=pa.int64()))
    merged = merge_file(table, source, plan.options, plan.partition_keys, in_scope=scope)
    del table, source
    release_unused_memory()  # the join's and the read's pages, before the writes
    merged = dataclasses.replace(merged, matched=rows[merged.matched], moved=rows[merged.moved])
    chunk = feed = None
    if merged.changed and not dry_run:
        if merged.changes is not None:
            feed = _write_changes(store, plan, merged.changes, file_prefix)
        if merged.table is not None:
            try:
                chunk = _write(store, plan, merged.table, file_prefix)  # one partition: one file
            except BaseException:
                delete_files(store, [feed] if feed else [])
                raise
    return FileOutcome(part, dataclasses.replace(merged, table=None, changes=None), chunk, feed)


def _result(
    plan: MergePlan,
    outcomes: Sequence[FileOutcome],
    unmatched: np.ndarray,
    *,
    inserted: int,
    files_added: int,
    version: int | None,
    dry_run: bool,
) -> MergeResult:
    merges = [o.merge for o in outcomes]
    changed = sum(m.changed for m in merges)
    return MergeResult(
        source_rows=plan.source.num_rows,
        rows_matched=sum(len(m.matched) for m in merges),
        rows_updated=sum(m.updated for m in merges),
        rows_deleted=sum(m.deleted for m in merges),
        rows_inserted=inserted,
        rows_not_matched=len(unmatched),
        candidate_partitions=len({p.partition_values for p in plan.candidates}),
        candidate_files=len(plan.candidates),
        files_rewritten=changed,
        files_removed=0 if dry_run else changed,
        files_added=files_added,
        version=version,
        dry_run=dry_run,
        candidates=tuple(p.label for p in plan.candidates),
    )


def _inserts(plan: MergePlan, outcomes: Sequence[FileOutcome], unmatched: np.ndarray) -> pa.Table:
    """The source rows to insert: updated rows that move to another partition (a source
    row once per target row it updates) and the ``unmatched`` ones (if inserted).
    """
    rows = [o.merge.moved for o in outcomes]
    if plan.options.when_not_matched == "insert":
        rows.append(unmatched)
    picked = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
    return plan.source.take(pa.array(picked, type=pa.int64()))


def skip_merge(store: Store, plan: MergePlan, commit: CommitOptions) -> MergeResult | None:
    """The result when the dataset already records the application transaction of
    ``commit`` (a retried step writes nothing); None: run the merge.
    """
    if already_recorded(store, plan.uuid, commit):
        unmatched = not_matched_rows(plan.source, [])
        return _result(plan, [], unmatched, inserted=0, files_added=0, version=None, dry_run=False)
    return None


def settled_merge(
    store: Store, plan: MergePlan, commit: CommitOptions, *, dry_run: bool
) -> MergeResult | None:
    """The result when no candidate needs a task of the dask or Spark engine: a dry run
    (it only counts: run here, by :func:`run_merge`) or a retried step
    (:func:`skip_merge`). None: run the plan's tasks.
    """
    if dry_run:
        return run_merge(store, plan, commit=commit, dry_run=True)
    return skip_merge(store, plan, commit)


def finish_merge(
    store: Store,
    plan: MergePlan,
    outcomes: Sequence[FileOutcome | BaseException],
    *,
    commit: CommitOptions = NO_COMMIT_OPTIONS,
    dry_run: bool = False,
) -> MergeResult:
    """Write the inserted rows and publish one commit (every engine's last step).

    ``outcomes`` are :func:`merge_one`'s, one per candidate; if one is an exception, the
    files the others wrote are deleted and it is raised. The commit removes exactly the
    rewritten files and adds their replacements (each in its predecessor's place) and the
    inserts; a failure removes every file written and commits nothing.
    """
    done = [o for o in outcomes if isinstance(o, FileOutcome)]
    written = [o.chunk for o in done if o.chunk is not None]
    feeds = [o.change_file for o in done if o.change_file is not None]
    failed = [o for o in outcomes if not isinstance(o, FileOutcome)]
    if failed:
        delete_files(store, [*(p.key for c in written for p in c.partitions), *feeds])
        raise failed[0]
    unmatched = not_matched_rows(plan.source, [o.merge.matched for o in done])
    inserts = _inserts(plan, done, unmatched)
    changed = [o for o in done if o.merge.changed]
    if dry_run or (not changed and not inserts.num_rows):
        n = inserts.num_rows if dry_run else 0
        return _result(
            plan, done, unmatched, inserted=n, files_added=0, version=None, dry_run=dry_run
        )
    chunks = list(written)
    placed = {p.label: o.part.label for o in done if o.chunk for p in o.chunk.partitions}
    md = plan.base.metadata
    try:
        if inserts.num_rows:
            chunks.append(_write(store, plan, inserts))
            release_unused_memory()
        if plan.options.when_not_matched == "insert" and len(unmatched):
            moved = any(len(o.merge.moved) for o in done)
            new = plan.source.take(pa.array(unmatched, type=pa.int64())) if moved else inserts
            feeds.append(_write_changes(store, plan, changes.labelled(new, "insert")))
        header = commit_write(
            store,
            plan.uuid,
            chunks,
            base=plan.base,
            remove_labels=[o.part.label for o in changed],
            storage_format=md.storage_format,
            table_name=md.table_name,
            schema_evolution=plan.options.schema_evolution,
            commit=commit,
            operation="MERGE",
            operation_parameters={
                "on": list(plan.options.on),
                "when_matched": plan.options.when_matched,
                "when_not_matched": plan.options.when_not_matched,
                "when_not_matched_by_source": plan.options.when_not_matched_by_source,
                "candidate_files": len(plan.candidates),
                "files_rewritten": len(changed),
            },
            remove_scope=only_removed_files,
            placed=placed,
            change_files=feeds,
        )
    except BaseException:
        delete_files(store, [*(p.key for c in chunks for p in c.partitions), *feeds])
        raise
    return _result(
        plan,
        done,
        unmatched,
        inserted=inserts.num_rows,
        files_added=sum(len(c.partitions) for c in chunks),
        version=header_version(header),
        dry_run=False,
    )


def run_merge(
    store: Store,
    plan: MergePlan,
    *,
    commit: CommitOptions = NO_COMMIT_OPTIONS,
    dry_run: bool = False,
) -> MergeResult:
    """The eager engine: merge into each candidate in turn, then insert and commit once.

    A failure removes every file written; nothing is committed. A dry run reads the
    candidates and counts, and writes nothing.
    """
    if not dry_run:
        skipped = skip_merge(store, plan, commit)
        if skipped is not None:
            return skipped
    outcomes: list[FileOutcome | BaseException] = []
    for part in plan.candidates:
        try:
            outcomes.append(merge_one(store, plan, part, dry_run=dry_run))
            release_unused_memory()  # this file's rows, before the next one's
        except BaseException as e:
            outcomes.append(e)
            break
    return finish_merge(store, plan, outcomes, commit=commit, dry_run=dry_run)
