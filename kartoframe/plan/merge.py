"""Row-level merge (upsert) planning: pure functions over Arrow tables.

A merge matches the rows of a *source* table to the rows of a dataset (the *target*) on
the key columns ``on``, as Delta's ``MERGE``:

* ``when_matched``: ``"update"`` replaces the matched target row by the source row (every
  column), ``"delete"`` removes it, ``"ignore"`` leaves it;
* ``when_not_matched``: ``"insert"`` appends the source rows no target row matched,
  ``"ignore"`` drops them;
* ``when_not_matched_by_source``: ``"delete"`` removes the target rows (in the scope of
  the merge's predicates) no source row matched, ``"ignore"`` keeps them.

Keys: two source rows with the same key are an error that names the key; a key with a
null never matches (such source rows are "not matched"). An updated row whose partition
values change moves: it is removed from its file and written into its new partition.

Finding the target rows costs what the source touches: source keys select the candidate
partitions (when partition keys are part of ``on``), then per-file statistics (min/max,
value lists, bloom filters) of the key columns drop the files that cannot hold one of
the keys (:func:`candidate_files`). Only files with a matched (or deleted) row are
rewritten (:func:`merge_file`); all others stay as they are.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kartoframe.errors import (
    ColumnNotFoundError,
    DuplicateKeyError,
    InvalidInputError,
    InvalidTypeError,
    SchemaError,
)
from kartoframe.format import changes
from kartoframe.format.schema import SchemaEvolution
from kartoframe.plan.file_part import FilePart
from kartoframe.plan.partition_plan import value_codes
from kartoframe.plan.predicates import bind
from kartoframe.plan.skipping import skip_by_statistics

__all__ = [
    "FileMerge",
    "MergeOptions",
    "MergeResult",
    "candidate_files",
    "merge_file",
    "merge_options",
    "not_matched_rows",
    "partition_group",
    "prepare_source",
    "source_groups",
]

WhenMatched = Literal["update", "delete", "ignore"]
WhenNotMatched = Literal["insert", "ignore"]
WhenNotMatchedBySource = Literal["ignore", "delete"]
_CHOICES: dict[str, tuple[str, ...]] = {
    "when_matched": ("update", "delete", "ignore"),
    "when_not_matched": ("insert", "ignore"),
    "when_not_matched_by_source": ("ignore", "delete"),
}


@dataclasses.dataclass(frozen=True, slots=True)
class MergeOptions:
    """The checked options of a merge."""

    on: tuple[str, ...]
    when_matched: WhenMatched = "update"
    when_not_matched: WhenNotMatched = "insert"
    when_not_matched_by_source: WhenNotMatchedBySource = "ignore"
    schema_evolution: SchemaEvolution = "none"


def merge_options(
    schema: pa.Schema,
    *,
    on: str | Sequence[str],
    when_matched: str = "update",
    when_not_matched: str = "insert",
    when_not_matched_by_source: str = "ignore",
    schema_evolution: str | None = None,
) -> MergeOptions:
    """Check the options of a merge against the dataset ``schema``.

    Raises
    ------
    InvalidInputError
        ``on`` is empty or repeats a column, or a ``when_*`` value is unknown.
    ColumnNotFoundError
        A key column is not a column of the dataset.
    """
    keys = [on] if isinstance(on, str) else list(on) if on is not None else []
    if not keys or not all(isinstance(c, str) for c in keys):
        raise InvalidInputError("on must name at least one key column (a str or a list of str).")
    if len(set(keys)) != len(keys):
        raise InvalidInputError(f"on repeats a column: {keys}.")
    missing = [c for c in keys if c not in schema.names]
    if missing:
        raise ColumnNotFoundError(
            f"Merge key columns not found in the dataset: {missing} (columns: {schema.names})."
        )
    given = {
        "when_matched": when_matched,
        "when_not_matched": when_not_matched,
        "when_not_matched_by_source": when_not_matched_by_source,
    }
    for name, value in given.items():
        if value not in _CHOICES[name]:
            raise InvalidInputError(f"{name} must be one of {list(_CHOICES[name])}, not {value!r}.")
    evolution = "none" if schema_evolution is None else schema_evolution
    if evolution not in ("none", "add_columns"):
        raise InvalidInputError(
            f"schema_evolution must be None, 'none' or 'add_columns', not {schema_evolution!r}."
        )
    return MergeOptions(
        tuple(keys),
        when_matched,  # type: ignore[arg-type]
        when_not_matched,  # type: ignore[arg-type]
        when_not_matched_by_source,  # type: ignore[arg-type]
        evolution,  # type: ignore[arg-type]
    )


def prepare_source(source: pa.Table, schema: pa.Schema, options: MergeOptions) -> pa.Table:
    """The source with the dataset's columns and types, in the dataset's order (columns
    it adds, allowed by ``schema_evolution="add_columns"``, last).

    Raises
    ------
    ColumnNotFoundError
        The source lacks a column of the dataset (an update replaces whole rows).
    SchemaError
        The source adds columns without ``schema_evolution="add_columns"``, or a column
        cannot be cast to the dataset's type.
    DuplicateKeyError
        Two source rows share a key (none of whose columns is null).
    """
    if not isinstance(source, pa.Table):
        raise InvalidTypeError(f"source must be a pyarrow Table, got {type(source).__name__}.")
    missing = [c for c in schema.names if c not in source.column_names]
    if missing:
        raise ColumnNotFoundError(
            f"The merge source lacks columns of the dataset: {missing}. A merge writes "
            "whole rows; add the columns (with their current values) to the source."
        )
    extra = [c for c in source.column_names if c not in schema.names]
    if extra and options.schema_evolution != "add_columns":
        raise SchemaError(
            f"The merge source has columns the dataset does not: {extra}. Pass "
            "schema_evolution='add_columns' to add them."
        )
    columns = []
    for field in schema:
        col = source.column(field.name)
        if not col.type.equals(field.type):
            try:
                col = col.cast(field.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                raise SchemaError(
                    f"Merge source column {field.name!r} ({col.type}) cannot be cast to the "
                    f"dataset's type {field.type}: {e}"
                ) from e
        columns.append(col)
    fields = list(schema) + [source.schema.field(c) for c in extra]
    table = pa.Table.from_arrays(
        columns + [source.column(c) for c in extra],
        schema=pa.schema(fields, metadata=schema.metadata),
    )
    _check_unique_keys(table, options.on)
    return table


def _key_mask(table: pa.Table, on: Sequence[str]) -> np.ndarray:
    """Rows whose key has no null (null keys never match)."""
    mask = np.ones(table.num_rows, dtype=bool)
    for c in on:
        col = table.column(c)
        if col.null_count:
            mask &= ~np.asarray(col.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        if pa.types.is_floating(col.type):
            nan = pc.fill_null(pc.is_nan(col), False)
            mask &= ~np.asarray(nan.to_numpy(zero_copy_only=False), dtype=bool)
    return mask


def _integer_keys(keyed: pa.Table) -> list[np.ndarray] | None:
    """The key columns as integer arrays (integers, dates, timestamps), else None."""
    out = []
    for col in keyed.columns:
        t = col.type
        if pa.types.is_integer(t) or pa.types.is_date(t) or pa.types.is_timestamp(t):
            out.append(np.asarray(col.to_numpy()))
        else:
            return None
    return out


def _has_duplicate(keys: list[np.ndarray]) -> bool:
    """Whether two rows share all ``keys`` (sorted, adjacent rows compared: a few bytes
    per row, where a hash aggregation builds tables several times the keys' size).
    """
    order = np.lexsort(keys[::-1])
    same = np.ones(len(order) - 1, dtype=bool)
    for k in keys:
        s = k[order]
        same &= s[1:] == s[:-1]
    return bool(same.any())


def _check_unique_keys(table: pa.Table, on: Sequence[str]) -> None:
    keyed = table.select(list(on)).filter(pa.array(_key_mask(table, on)))
    if keyed.num_rows < 2:
        return
    ints = _integer_keys(keyed)
    if ints is not None and not _has_duplicate(ints):
        return
    counts = keyed.group_by(list(on), use_threads=False).aggregate([([], "count_all")])
    dup = pc.filter(counts, pc.greater(counts["count_all"], 1))
    if dup.num_rows:
        first = {c: dup.column(c)[0].as_py() for c in on}
        raise DuplicateKeyError(
            f"The merge source has {dup.num_rows} key(s) on more than one row, e.g. "
            f"{first} ({dup['count_all'][0].as_py()} rows). A target row can be matched by "
            "one source row only; drop the duplicates first."
        )


def source_groups(
    source: pa.Table, options: MergeOptions, partition_keys: Sequence[str]
) -> dict[tuple[Any, ...], np.ndarray]:
    """The source rows that can match, grouped by the values of the partition keys among
    ``on`` (one group ``()`` if there are none): the rows a file of a partition can match.

    Rows with a null in their key are in no group (they never match).
    """
    rows = np.flatnonzero(_key_mask(source, options.on))
    keys = [k for k in partition_keys if k in options.on]
    if not keys or not len(rows):
        return {(): rows} if len(rows) else {}
    sub = source.select(keys).take(pa.array(rows, type=pa.int64()))
    codes, _ = value_codes(sub, keys)
    order = np.argsort(codes, kind="stable")
    _, starts = np.unique(codes[order], return_index=True)
    ends = np.append(starts[1:], len(order))
    groups: dict[tuple[Any, ...], np.ndarray] = {}
    for lo, hi in zip(starts, ends, strict=True):
        first = int(order[lo])
        values = tuple(sub.column(k)[first].as_py() for k in keys)
        groups[values] = rows[order[lo:hi]]
    return groups


def partition_group(
    part: FilePart, options: MergeOptions, partition_keys: Sequence[str]
) -> tuple[Any, ...]:
    """The :func:`source_groups` key of a file: its values of the partition keys in ``on``."""
    return tuple(
        v for k, v in zip(partition_keys, part.partition_values, strict=True) if k in options.on
    )


def candidate_files(
    files: Sequence[FilePart],
    partition_keys: Sequence[str],
    source: pa.Table,
    options: MergeOptions,
    schema: pa.Schema,
    statistics: pa.Table | None,
    partitions: Mapping[str, str],
    groups: Mapping[tuple[Any, ...], np.ndarray],
) -> list[FilePart]:
    """The files (of ``files``, the merge's scope) that may hold a row a source key
    matches, in order. With ``when_not_matched_by_source="delete"`` every file in scope.

    ``groups`` are the :func:`source_groups`: partition keys among ``on`` select the
    partitions the source's keys are in; the statistics of the other key columns then
    drop files per partition, testing only the keys of that partition.
    """
    if options.when_not_matched_by_source == "delete":
        return list(files)
    if not groups or not files:
        return []
    others = [c for c in options.on if c not in partition_keys]
    by_group: dict[tuple[Any, ...], list[FilePart]] = {}
    for f in files:
        by_group.setdefault(partition_group(f, options, partition_keys), []).append(f)
    kept: set[str] = set()
    for values, group in by_group.items():
        hit = groups.get(values)
        if hit is None:
            continue
        labels = [f.label for f in group]
        if others and statistics is not None:
            part = source.select(others).take(pa.array(hit, type=pa.int64()))
            literals = [(c, "in", pc.unique(part.column(c)).to_pylist()) for c in others]
            labels = skip_by_statistics(bind([literals], schema), labels, partitions, statistics)
        kept.update(labels)
    return [f for f in files if f.label in kept]


@dataclasses.dataclass(frozen=True, slots=True)
class FileMerge:
    """What merging the source into one target file gives.

    ``table`` is the file's new content (None: no row is left), valid only if
    ``changed``. ``matched`` are the source rows (indices) that matched a row of the file;
    ``moved`` those of them that update a row into another partition (written with the
    inserts). ``changes`` are the file's rows of the change feed (updates as pre- and
    postimage pairs, then deletes; :mod:`kartoframe.format.changes`), None if none.
    """

    changed: bool
    table: pa.Table | None
    matched: np.ndarray
    moved: np.ndarray
    updated: int
    deleted: int
    changes: pa.Table | None = None


def merge_file(
    target: pa.Table,
    source: pa.Table,
    options: MergeOptions,
    partition_keys: Sequence[str],
    *,
    in_scope: np.ndarray | None = None,
) -> FileMerge:
    """Merge ``source`` into the rows of one file (``target``: its rows with the dataset
    columns, partition columns included; ``in_scope``: which of them the merge's
    predicates select, default all).

    Matched rows are updated in place (row order is kept) or deleted; rows of the file
    that no source row matches are deleted with ``when_not_matched_by_source="delete"``.
    """
    n = target.num_rows
    scope = np.ones(n, dtype=bool) if in_scope is None else np.asarray(in_scope, dtype=bool)
    t_pos, s_idx = _match(target, source, options.on, scope)
    matched_rows = np.zeros(n, dtype=bool)
    matched_rows[t_pos] = True
    deleted = np.zeros(n, dtype=bool)
    if options.when_not_matched_by_source == "delete":
        deleted |= scope & ~matched_rows
    none = np.zeros(0, dtype=np.int64)
    updated = 0
    moved = none
    replace_pos, replace_src = none, none
    if options.when_matched == "delete":
        deleted |= matched_rows
    elif options.when_matched == "update" and len(t_pos):
        same = _same_partition(target, source, t_pos, s_idx, partition_keys)
        replace_pos, replace_src = t_pos[same], s_idx[same]
        moved = s_idx[~same]
        deleted[t_pos[~same]] = True
        updated = len(t_pos)
    changed = bool(deleted.any() or len(replace_pos))
    n_deleted = int(deleted.sum()) - len(moved)
    if not changed:
        return FileMerge(False, None, s_idx, moved, 0, 0)
    replaced = np.zeros(n, dtype=bool)
    replaced[replace_pos] = True
    keep = np.flatnonzero(~deleted & ~replaced)
    out = _assemble(target, source, keep, replace_pos, replace_src)
    feed = _feed(target, source, t_pos if updated else none, s_idx if updated else none, deleted)
    return FileMerge(
        True, out if out.num_rows else None, s_idx, moved, updated, n_deleted, changes=feed
    )


def _feed(
    target: pa.Table, source: pa.Table, t_pos: np.ndarray, s_idx: np.ndarray, deleted: np.ndarray
) -> pa.Table | None:
    """The change feed rows of one file: each updated target row (``t_pos``, also those
    that move partition) with the source row that replaces it (``s_idx``), then the
    deleted rows that are no update.
    """
    only_deleted = deleted.copy()
    only_deleted[t_pos] = False
    parts = []
    if len(t_pos):
        pre = target.take(pa.array(t_pos, type=pa.int64()))
        parts.append(changes.pairs(pre, source.take(pa.array(s_idx, type=pa.int64()))))
    if only_deleted.any():
        gone = target.take(pa.array(np.flatnonzero(only_deleted), type=pa.int64()))
        parts.append(changes.labelled(gone, "delete"))
    if not parts:
        return None
    return pa.concat_tables(parts, promote_options="permissive") if len(parts) > 1 else parts[0]


def _match(
    target: pa.Table, source: pa.Table, on: Sequence[str], scope: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(target positions, source indices)`` of the matching pairs, in target order (null
    keys and rows out of scope never match).

    The source's keys are unique (:func:`prepare_source`), so each target row matches at
    most one source row: a lookup, not a join. Each key column is coded by the source's
    distinct values (``index_in``, on the calling thread), the codes are combined into
    one ``int64`` per row, and the target's codes are found by a binary search in the
    sorted source codes. A hash join (Acero) took several times the keys' size in
    allocator pages that stay mapped until the pool is trimmed.
    """
    t_ok = np.flatnonzero(scope & _key_mask(target, on))
    s_ok = np.flatnonzero(_key_mask(source, on))
    none = np.zeros(0, dtype=np.int64)
    if not len(t_ok) or not len(s_ok):
        return none, none
    t_keys = target.select(list(on)).take(pa.array(t_ok, type=pa.int64()))
    s_keys = source.select(list(on)).take(pa.array(s_ok, type=pa.int64()))
    t_code = np.zeros(len(t_ok), dtype=np.int64)
    s_code = np.zeros(len(s_ok), dtype=np.int64)
    found = np.ones(len(t_ok), dtype=bool)
    for c in on:
        values = pc.unique(s_keys.column(c))
        s_col = np.asarray(pc.index_in(s_keys.column(c), value_set=values).to_numpy())
        t_in = pc.index_in(t_keys.column(c), value_set=values)
        found &= np.asarray(t_in.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        t_col = np.asarray(pc.fill_null(t_in, 0).to_numpy())
        # both codes stay below len(s_ok) * len(values) <= 2**62: renumber by the
        # source's distinct combined codes after each column
        s_code = s_code * len(values) + s_col
        t_code = t_code * len(values) + t_col
        distinct, s_code = np.unique(s_code, return_inverse=True)
        at = np.minimum(np.searchsorted(distinct, t_code), len(distinct) - 1)
        found &= distinct[at] == t_code
        t_code = at
    order = np.argsort(s_code, kind="stable")  # source keys are unique: codes are 0..n-1
    t_pos = t_ok[found]
    return t_pos, s_ok[order[t_code[found]]]


def _same_partition(
    target: pa.Table,
    source: pa.Table,
    t_pos: np.ndarray,
    s_idx: np.ndarray,
    partition_keys: Sequence[str],
) -> np.ndarray:
    """For each matched pair, whether the source row stays in the target row's partition."""
    same = np.ones(len(t_pos), dtype=bool)
    for k in partition_keys:
        old = target.column(k).take(pa.array(t_pos))
        new = source.column(k).take(pa.array(s_idx))
        eq = pc.fill_null(pc.equal(old, new), False)
        same &= np.asarray(eq.to_numpy(zero_copy_only=False), dtype=bool)
    return same


def _assemble(
    target: pa.Table,
    source: pa.Table,
    keep: np.ndarray,
    replace_pos: np.ndarray,
    replace_src: np.ndarray,
) -> pa.Table:
    """The kept target rows and the replacing source rows, in the target's row order."""
    kept = target.take(pa.array(keep, type=pa.int64()))
    if not len(replace_pos):
        return kept
    new = source.take(pa.array(replace_src, type=pa.int64()))
    both = pa.concat_tables([kept, new], promote_options="permissive")
    order = np.argsort(np.concatenate([keep, replace_pos]), kind="stable")
    return both.take(pa.array(order, type=pa.int64()))


def not_matched_rows(source: pa.Table, matched: Sequence[np.ndarray]) -> np.ndarray:
    """Indices of the source rows no target row matched (null keys included)."""
    hit = np.zeros(source.num_rows, dtype=bool)
    for m in matched:
        hit[m] = True
    return np.flatnonzero(~hit)


@dataclasses.dataclass(frozen=True, slots=True)
class MergeResult:
    """What a merge did (or, with ``dry_run``, would do).

    Attributes
    ----------
    source_rows
        Rows of the source.
    rows_matched, rows_updated, rows_deleted, rows_inserted
        Target rows matched by a source row; updated; deleted (matched with
        ``when_matched="delete"`` or unmatched with ``when_not_matched_by_source="delete"``);
        source rows inserted (not matched, and updated rows that moved partition).
    rows_not_matched
        Source rows no target row matched.
    candidate_partitions, candidate_files
        The partitions and files the keys could not rule out (read to find matches).
    files_rewritten
        Candidate files that held a matched or deleted row (removed; their other rows
        written again).
    files_removed, files_added
        Data files the commit removed and added.
    version
        The committed log version (None: nothing committed).
    dry_run
        Whether this only planned.
    candidates
        Labels of the candidate files.
    """

    source_rows: int
    rows_matched: int
    rows_updated: int
    rows_deleted: int
    rows_inserted: int
    rows_not_matched: int
    candidate_partitions: int
    candidate_files: int
    files_rewritten: int
    files_removed: int
    files_added: int
    version: int | None
    dry_run: bool
    candidates: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The result as plain JSON-able values (the CLI's ``--json``)."""
        out = dataclasses.asdict(self)
        out["candidates"] = list(self.candidates)
        return out
