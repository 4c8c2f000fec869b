"""Running a row-level merge: plan the candidates, rewrite the files with matches, insert,
commit once.

:func:`load_merge` loads the dataset, checks the options and the source, and finds the
candidate files (:func:`kartoframe.plan.merge.candidate_files`: the merge's predicates
through the read planner, then the source keys against partitions and statistics).
:func:`merge_candidates` reads the candidates one at a time with the read kernel and
merges the source into each (:func:`kartoframe.plan.merge.merge_file`); memory holds the
source and one file. :func:`run_merge` writes the changed files (as their partition,
each in the place of the file it replaces) and the inserted rows with the chunk kernel,
and publishes one commit that removes exactly the rewritten files: a concurrent append
(even into a rewritten partition) still lands; a concurrent commit that removed or
replaced a rewritten file makes it fail with ``CommitConflictError``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from kartoframe.execution.chunks import delete_files, write_chunk
from kartoframe.execution.kernel import read_file_parts
from kartoframe.execution.optimize import header_version
from kartoframe.execution.read_plan import plan_loaded_read
from kartoframe.execution.write import already_recorded, commit_write
from kartoframe.format.commit_args import NO_COMMIT_OPTIONS, CommitOptions
from kartoframe.format.dataset import LoadedDataset
from kartoframe.plan.file_part import FilePart
from kartoframe.plan.merge import (
    FileMerge,
    MergeOptions,
    MergeResult,
    candidate_files,
    merge_file,
    not_matched_rows,
    prepare_source,
)
from kartoframe.plan.predicates import Predicate, to_expression
from kartoframe.plan.query import bound
from kartoframe.plan.write import ChunkResult
from kartoframe.storage.resolve import bloom_columns_of, load_dataset
from kartoframe.storage.side_files import base_statistics
from kartoframe.storage.store import Store

__all__ = ["MergePlan", "load_merge", "merge_candidates", "run_merge"]


@dataclasses.dataclass(frozen=True)
class MergePlan:
    """A merge, planned: the base version, the checked source and the candidate files."""

    uuid: str
    base: LoadedDataset
    source: pa.Table
    options: MergeOptions
    candidates: tuple[FilePart, ...]
    predicate: Predicate | None

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
    predicate = bound(predicates, loaded.schema)
    scan, _, loaded = plan_loaded_read(
        store, loaded, predicates=predicate, dask=False, consistent_integers=False
    )
    files = [f for t in scan.tasks for f in t.files]
    md = loaded.metadata
    stats = base_statistics(store, loaded) if files else None
    found = candidate_files(
        files, md.partition_keys, prepared, options, loaded.schema, stats, md.partitions
    )
    return MergePlan(md.uuid, loaded, prepared, options, tuple(found), predicate)


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


def merge_candidates(store: Store, plan: MergePlan) -> list[tuple[FilePart, FileMerge]]:
    """Read each candidate file (one at a time) and merge the source into it."""
    out = []
    schema, pk = plan.base.schema, plan.partition_keys
    for part in plan.candidates:
        table = read_file_parts(store, [part], schema, pk)
        scope = _in_scope(table, plan.predicate)
        out.append((part, merge_file(table, plan.source, plan.options, pk, in_scope=scope)))
    return out


def _result(
    plan: MergePlan,
    merged: Sequence[tuple[FilePart, FileMerge]],
    *,
    inserted: int,
    files_added: int,
    version: int | None,
    dry_run: bool,
) -> MergeResult:
    matched = sum(len(m.matched) for _, m in merged)
    changed = [p for p, m in merged if m.changed]
    unmatched = len(not_matched_rows(plan.source, [m.matched for _, m in merged]))
    return MergeResult(
        source_rows=plan.source.num_rows,
        rows_matched=matched,
        rows_updated=sum(m.updated for _, m in merged),
        rows_deleted=sum(m.deleted for _, m in merged),
        rows_inserted=inserted,
        rows_not_matched=unmatched,
        candidate_partitions=len({p.partition_values for p in plan.candidates}),
        candidate_files=len(plan.candidates),
        files_rewritten=len(changed),
        files_removed=0 if dry_run else len(changed),
        files_added=files_added,
        version=version,
        dry_run=dry_run,
        candidates=tuple(p.label for p in plan.candidates),
    )


def _inserts(plan: MergePlan, merged: Sequence[tuple[FilePart, FileMerge]]) -> pa.Table:
    """The source rows to insert: updated rows that move to another partition (a source
    row once per target row it updates) and the not-matched ones (if inserted).
    """
    rows = [m.moved for _, m in merged]
    if plan.options.when_not_matched == "insert":
        rows.append(not_matched_rows(plan.source, [m.matched for _, m in merged]))
    picked = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
    return plan.source.take(pa.array(picked, type=pa.int64()))


def run_merge(
    store: Store,
    plan: MergePlan,
    *,
    commit: CommitOptions = NO_COMMIT_OPTIONS,
    dry_run: bool = False,
) -> MergeResult:
    """The eager engine: merge into the candidates, write, commit once.

    A failure removes every file written; nothing is committed. A dry run reads the
    candidates and counts, and writes nothing.
    """
    if not dry_run and already_recorded(store, plan.uuid, commit):
        return _result(plan, [], inserted=0, files_added=0, version=None, dry_run=False)
    merged = merge_candidates(store, plan)
    inserts = _inserts(plan, merged)
    if dry_run:
        return _result(plan, merged, inserted=inserts.num_rows, files_added=0, version=None,
                       dry_run=True)  # fmt: skip
    changed = [(p, m) for p, m in merged if m.changed]
    if not changed and not inserts.num_rows:
        return _result(plan, merged, inserted=0, files_added=0, version=None, dry_run=False)
    md = plan.base.metadata
    pk = plan.partition_keys

    def _write(table: pa.Table) -> ChunkResult:
        return write_chunk(
            store,
            plan.uuid,
            table,
            table_name=md.table_name,
            partition_on=pk,
            index_columns=sorted(set(md.indices) | set(md.embedded_indices)),
            bloom_filter_columns=bloom_columns_of(plan.base),
            origin=f"merge into {plan.uuid}",
        )

    chunks: list[ChunkResult] = []
    placed: dict[str, str] = {}
    try:
        for part, m in changed:
            if m.table is None:
                continue  # every row of the file is deleted
            chunk = _write(m.table)  # one partition: one file, nothing regrouped
            chunks.append(chunk)
            placed.update({p.label: part.label for p in chunk.partitions})
        if inserts.num_rows:
            chunks.append(_write(inserts))
        header = commit_write(
            store,
            plan.uuid,
            chunks,
            base=plan.base,
            remove_labels=[p.label for p, _ in changed],
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
            remove_scope=_only_removed_files,
            placed=placed,
        )
    except BaseException:
        delete_files(store, (p.key for c in chunks for p in c.partitions))
        raise
    added = sum(len(c.partitions) for c in chunks)
    return _result(
        plan,
        merged,
        inserted=inserts.num_rows,
        files_added=added,
        version=header_version(header),
        dry_run=False,
    )


def _only_removed_files(_: LoadedDataset) -> set[str]:
    """The delete scope of a merge: nothing beyond the files it rewrote (concurrent
    appends, even into the same partitions, are not a conflict).
    """
    return set()
