"""Join one cube query group: the join shared by the eager, dask and Spark engines.

For every dataset of the plan the group's files are read by the dataset read kernel
(:func:`kartoframe.execution.kernel.read_task_table`: **one** multi-file scan, columns
projected, post-conditions pushed into the scan), then:

1. keep-last de-duplication per cell: files are scanned in commit order, so rows of later
   appends overlay earlier ones. The seed is always sorted by its cell key (query dimension
   columns, then cube partition columns), which is also the result order; other datasets
   are de-duplicated when their cell keys repeat (appends, projection);
2. the seed is inner-joined with the restrictive datasets and left-joined with the others
   on the shared dimension columns and cube partition keys;
3. the output columns are selected (alphabetical) and converted to pandas once.

Keys are turned into one order-preserving ``int64`` code per row (integers, dates and
timestamps by offset, other types by rank in a dictionary), so sorting is one stable
``argsort`` and joins are a dense (or hashed) lookup; when a key space is too large, or
a dataset legitimately has several rows per join key, pandas ``merge`` is used instead.

Columns of left-joined datasets whose dtype cannot hold a missing value (integers,
booleans) become the nullable ``Int64``/``UInt64``/``boolean`` dtypes, so every group (and
the dask ``meta``) has the same dtypes whatever the join found.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from kartoframe.execution.kernel import read_task_table
from kartoframe.execution.read_memo import ReadMemo
from kartoframe.format.convert import column_records, records_to_frame
from kartoframe.format.schema import pandas_metadata
from kartoframe.plan.cube_plan import CubeQueryPlan, DatasetRead, QueryGroup
from kartoframe.plan.cube_write import duplicate_mask
from kartoframe.storage.store import Store

__all__ = [
    "dedupe_keep_last",
    "empty_result",
    "key_codes",
    "load_group",
    "run_merged",
    "split_by",
]

#: Largest code space (product of the key columns' value ranges) handled with int64 codes.
_MAX_KEY_SPACE = 1 << 62
#: Dense lookup tables up to this many slots (or 4x the rows involved, if larger).
_MAX_DENSE = 1 << 24


# -- keys ----------------------------------------------------------------------------------

_INT_LIKE = (
    pa.types.is_integer,
    pa.types.is_boolean,
    pa.types.is_date,
    pa.types.is_timestamp,
    pa.types.is_time,
    pa.types.is_duration,
)


def _int64(col: pa.ChunkedArray) -> pa.ChunkedArray | None:
    t = col.type
    try:
        if pa.types.is_boolean(t):
            return pc.cast(col, pa.int8()).cast(pa.int64())
        if pa.types.is_date32(t) or pa.types.is_time32(t):
            return col.cast(pa.int32()).cast(pa.int64())
        if pa.types.is_unsigned_integer(t) or pa.types.is_signed_integer(t):
            return col.cast(pa.int64())
        return col.cast(pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def _column_codes(parts: Sequence[pa.ChunkedArray]) -> tuple[list[np.ndarray], int] | None:
    """Order-preserving codes ``0 .. size-1`` of one key column over several tables."""
    t = parts[0].type
    ints = [_int64(p) for p in parts] if any(f(t) for f in _INT_LIKE) else None
    if ints is not None and all(i is not None for i in ints):
        lo, hi = None, None
        for i in ints:
            assert i is not None
            mm = pc.min_max(i)
            if mm["min"].is_valid:
                lo = mm["min"].as_py() if lo is None else min(lo, mm["min"].as_py())
                hi = mm["max"].as_py() if hi is None else max(hi, mm["max"].as_py())
        if lo is None or hi is None:
            return [np.zeros(len(p), dtype=np.int64) for p in parts], 1
        size = int(hi) - int(lo) + 2  # the last code stands for NULL
        if size >= _MAX_KEY_SPACE:
            return None
        out = []
        for i in ints:
            assert i is not None
            arr = pc.fill_null(i, hi + 1).to_numpy() if i.null_count else i.to_numpy()
            arr = np.asarray(arr, dtype=np.int64)
            out.append(arr - lo if lo else arr)
        return out, size
    combined = pa.chunked_array([c for p in parts for c in p.chunks], type=t)
    try:
        enc = pc.dictionary_encode(combined).combine_chunks()
    except pa.ArrowNotImplementedError:
        return None
    dictionary = enc.dictionary
    n = len(dictionary)
    rank = np.empty(n + 1, dtype=np.int64)
    rank[pc.sort_indices(dictionary).to_numpy()] = np.arange(n)
    rank[n] = n
    idx = pc.fill_null(enc.indices, n).to_numpy(zero_copy_only=False).astype(np.int64)
    codes = rank[idx]
    out, start = [], 0
    for p in parts:
        out.append(codes[start : start + len(p)])
        start += len(p)
    return out, n + 1


def key_codes(
    tables: Sequence[pa.Table], columns: Sequence[str]
) -> tuple[list[np.ndarray], int] | None:
    """One ``int64`` code per row and table for the key ``columns`` (lexicographic order).

    Codes are comparable across ``tables``. Returns ``(codes per table, key space size)``
    or None when the key space does not fit an ``int64``.
    """
    codes: list[np.ndarray] | None = None
    space = 1
    for n, c in enumerate(columns):
        found = _column_codes([t[c] for t in tables])
        if found is None:
            return None
        col_codes, size = found
        space *= size
        if space >= _MAX_KEY_SPACE:
            return None
        if codes is None:
            last = n == len(columns) - 1
            codes = [cc if last else np.array(cc, dtype=np.int64) for cc in col_codes]
        else:
            for k, cc in zip(codes, col_codes):
                k *= size
                k += cc
    if codes is None:
        codes = [np.zeros(t.num_rows, dtype=np.int64) for t in tables]
    return codes, space


def dedupe_keep_last(table: pa.Table, keys: Sequence[str], *, sort: bool = True) -> pa.Table:
    """Keep the last row of each key (rows in scan order = commit order).

    With ``sort`` the result is sorted by ``keys`` (stable); without, the kept rows stay in
    their order. NULL keys compare equal to each other.
    """
    if table.num_rows == 0 or not keys:
        return table
    found = key_codes([table], keys)
    if found is None:
        order = pc.sort_indices(table, sort_keys=[(k, "ascending") for k in keys])
        table = table.take(order)
        mask = duplicate_mask(table, keys)
        return table.filter(pa.array(~mask)) if mask.any() else table
    key = found[0][0]
    order = np.argsort(key, kind="stable")
    skey = key[order]
    last = np.ones(len(skey), dtype=bool)
    last[:-1] = skey[1:] != skey[:-1]
    if sort:
        keep = order if last.all() else order[last]
        if len(keep) == table.num_rows and np.array_equal(keep, np.arange(len(keep))):
            return table
        return table.take(pa.array(keep))
    if last.all():
        return table
    keep = np.sort(order[last])
    return table.take(pa.array(keep))


# -- joins ---------------------------------------------------------------------------------


def _dense_or_hash(lkey: np.ndarray, rkey: np.ndarray, space: int) -> np.ndarray | None:
    """Lookup of ``lkey`` in the unique ``rkey`` (-1 if absent); None if ``rkey`` repeats."""
    if space <= max(_MAX_DENSE, 4 * (len(lkey) + len(rkey))):
        lookup = np.full(space, -1, dtype=np.int64)
        pos = np.arange(len(rkey), dtype=np.int64)
        lookup[rkey] = pos
        if not np.array_equal(lookup[rkey], pos):
            return None
        out: np.ndarray = lookup[lkey]
        return out
    index = pd.Index(rkey)
    if not index.is_unique:
        return None
    return np.asarray(index.get_indexer(lkey), dtype=np.int64)


def _indexer(
    left: pa.Table, right: pa.Table, on: Sequence[str], check: Sequence[str] = ()
) -> np.ndarray | None:
    """Row of ``right`` matching each row of ``left`` (-1: none); None if not unique/fit.

    The lookup uses the ``on`` columns; the ``check`` columns (cube partition keys, usually
    determined by the dimensions) are then compared, which keeps the key space small
    enough for a dense lookup table. If ``on`` alone is not unique in ``right`` the lookup
    falls back to all columns.
    """
    if not on and not check:
        if right.num_rows == 1:
            return np.zeros(left.num_rows, dtype=np.int64)
        if right.num_rows == 0:
            return np.full(left.num_rows, -1, dtype=np.int64)
        return None
    if on and check:
        found = key_codes([left, right], on)
        if found is not None:
            (lkey, rkey), space = found
            idx = _dense_or_hash(lkey, rkey, space)
            if idx is not None:
                extra = key_codes([left, right], check)
                if extra is not None:
                    (lc, rc), _ = extra
                    if not len(rc):
                        return idx
                    same = rc[idx] == lc  # idx -1 reads the last row; masked below
                    same &= idx >= 0
                    out: np.ndarray = np.where(same, idx, -1)
                    return out
    found = key_codes([left, right], [*on, *check])
    if found is None:
        return None
    (lkey, rkey), space = found
    return _dense_or_hash(lkey, rkey, space)


def _to_frame(read: DatasetRead, table: pa.Table, columns: Sequence[str]) -> pd.DataFrame:
    """One dataset's ``columns`` as pandas, by its rules (see :func:`_frame_of`)."""
    return _frame_of([(read, table.select(list(columns)))], list(columns))


#: pandas dtypes of a left-joined dataset's columns: its unmatched rows hold NA
_NULLABLE_TYPES = (
    (pa.types.is_boolean, None, "boolean"),
    (pa.types.is_signed_integer, pa.int64(), "Int64"),
    (pa.types.is_unsigned_integer, pa.uint64(), "UInt64"),
)


def _frame_of(
    pieces: Sequence[tuple[DatasetRead, pa.Table]], output: Sequence[str]
) -> pd.DataFrame:
    """The joined columns (each dataset's table, aligned with the seed's rows) as one
    frame in ``output`` order, converted to pandas in one pass: every column by its
    dataset's pandas metadata, a left-joined dataset's integers and booleans as pandas
    nullable dtypes (its unmatched rows hold NA).
    """
    if not output:
        return pd.DataFrame(index=pd.RangeIndex(pieces[0][1].num_rows))
    columns: dict[str, pa.ChunkedArray] = {}
    records: dict[str, dict[str, Any]] = {}
    for read, table in pieces:
        own = column_records(table, read.schema, nullable_integers=read.nullable_integers)
        for name, col in zip(table.column_names, table.columns, strict=True):
            rec = own.get(name)
            if read.role == "left":
                for is_type, cast_to, numpy_type in _NULLABLE_TYPES:
                    if is_type(col.type):
                        col = col.cast(cast_to) if cast_to is not None else col
                        base = rec or {"name": name, "field_name": name, "metadata": None}
                        rec = {**base, "pandas_type": str(col.type), "numpy_type": numpy_type}
                        break
            columns[name] = col
            if rec is not None:
                records[name] = rec
    table = pa.Table.from_arrays([columns[c] for c in output], names=list(output))
    return records_to_frame(table, pandas_metadata(pieces[0][0].schema) or {}, records)


def _take(table: pa.Table, idx: np.ndarray) -> pa.Table:
    if len(idx) and idx.min() < 0:
        return table.take(pa.array(idx, mask=idx < 0))
    if len(idx) == table.num_rows and np.array_equal(idx, np.arange(len(idx))):
        return table
    return table.take(pa.array(idx))


def join_tables(plan: CubeQueryPlan, tables: dict[str, pa.Table]) -> pd.DataFrame:
    """Join the datasets' (de-duplicated) tables of one group and select the output."""
    seed_read = plan.reads[0]
    seed = tables[seed_read.dataset_id]
    output = list(plan.output_columns)
    taken: dict[str, pa.Table] = {}
    fallback: list[DatasetRead] = []
    indexers: dict[str, np.ndarray] = {}
    for read in plan.reads[1:]:
        right = tables[read.dataset_id]
        idx = None
        if read.dedupe_columns == read.join_columns:
            check = read.cube_partition_keys
            on = [c for c in read.join_columns if c not in check]
            idx = _indexer(seed, right, on, check)
            if idx is None and right.num_rows:
                # several rows per cell (e.g. a dataset written by another tool): keep last
                right = dedupe_keep_last(right, read.join_columns, sort=False)
                tables[read.dataset_id] = right
                idx = _indexer(seed, right, on, check)
        if idx is None:
            fallback.append(read)
            continue
        indexers[read.dataset_id] = idx
    inner = [r for r in plan.reads[1:] if r.role == "inner" and r.dataset_id in indexers]
    if inner:
        keep = np.ones(seed.num_rows, dtype=bool)
        for r in inner:
            keep &= indexers[r.dataset_id] >= 0
        if not keep.all():
            seed = seed.filter(pa.array(keep))
            indexers = {k: v[keep] for k, v in indexers.items()}
    for read in plan.reads[1:]:
        if read.dataset_id in indexers:
            cols = [
                c
                for c in tables[read.dataset_id].column_names
                if c in output and c not in seed.column_names
            ]
            taken[read.dataset_id] = _take(
                tables[read.dataset_id].select(cols), indexers[read.dataset_id]
            )
    seed_cols = [c for c in seed.column_names if c in output]
    pieces = [(seed_read, seed.select(seed_cols))]
    pieces += [(r, taken[r.dataset_id]) for r in plan.reads[1:] if r.dataset_id in taken]
    if not fallback and {c for _, t in pieces for c in t.column_names} >= set(output):
        return _frame_of(pieces, output)
    parts = [_to_frame(seed_read, seed, seed_cols)]
    for read in plan.reads[1:]:
        if read.dataset_id in taken:
            t = taken[read.dataset_id]
            parts.append(_to_frame(read, t, t.column_names))
    out = pd.concat(parts, axis=1) if len(parts) > 1 else parts[0]
    for read in fallback:
        right = _to_frame(read, tables[read.dataset_id], tables[read.dataset_id].column_names)
        on = list(read.join_columns)
        right = right[[c for c in right.columns if c in on or c not in out.columns]]
        how = "inner" if read.role == "inner" else "left"
        out = out.merge(right, on=on, how=how, sort=False) if on else out.merge(right, how="cross")
    return out.loc[:, output].reset_index(drop=True)


def _load_one(
    read: DatasetRead, group: QueryGroup, store: Store, memo: ReadMemo | None = None
) -> pa.Table:
    task = group.task(read.dataset_id)

    def load() -> pa.Table:
        # the dataset read kernel: the group's files of this dataset with its row filter
        table = read_task_table(read.scan, task, store)
        if read.role == "seed":
            return dedupe_keep_last(table, read.dedupe_columns, sort=True)
        if group.needs_dedupe(read):
            return dedupe_keep_last(table, read.dedupe_columns, sort=False)
        return table

    if memo is None or read.role == "seed" or read.cube_partition_keys:
        return load()
    return memo.get((read.dataset_id, task), load)


def load_group(
    plan: CubeQueryPlan,
    group: QueryGroup,
    store: Store,
    *,
    threads: bool = True,
    memo: ReadMemo | None = None,
) -> pd.DataFrame:
    """Run one group: scan, de-duplicate, join. The result may be empty.

    With ``threads`` the datasets are scanned concurrently (engines that already run
    groups in parallel pass False). With a ``memo`` (one per planned query), a dataset
    without the cube's partition columns, whose files are the same in every group, is
    read once for all the groups that share the memo.
    """
    reads = plan.reads
    if threads and len(reads) > 1:
        with ThreadPoolExecutor(max_workers=min(4, len(reads))) as pool:
            loaded = list(pool.map(lambda r: _load_one(r, group, store, memo), reads))
    else:
        loaded = [_load_one(reads[0], group, store, memo)]
        if loaded[0].num_rows:
            loaded += [_load_one(r, group, store, memo) for r in reads[1:]]
    if loaded[0].num_rows == 0:
        return empty_result(plan)
    return join_tables(plan, {r.dataset_id: t for r, t in zip(reads, loaded)})


def empty_result(plan: CubeQueryPlan) -> pd.DataFrame:
    """The zero-row result with the exact output dtypes (the dask ``meta``)."""
    tables = {}
    for read in plan.reads:
        schema = pa.schema(
            [read.schema.field(c) for c in read.scan_columns], metadata=read.schema.metadata
        )
        tables[read.dataset_id] = schema.empty_table()
    return join_tables(plan, tables)


def split_by(df: pd.DataFrame, columns: Sequence[str]) -> list[pd.DataFrame]:
    """One frame per distinct value of ``columns`` (sorted; rows with NULLs dropped)."""
    if df.empty:
        return []
    if not columns:
        return [df]
    out = []
    for _, sub in df.groupby(list(columns), sort=True, dropna=True):
        out.append(sub.reset_index(drop=True))
    return out


def run_merged(plan: CubeQueryPlan, store: Store) -> list[pd.DataFrame]:
    """Eager execution: every group at once (one scan per dataset), then split.

    Returns the non-empty result frames: one per ``partition_by`` value, or a single
    frame when the query has no ``partition_by``.
    """
    if not plan.groups:
        return []
    df = load_group(plan, plan.merged(), store)
    return split_by(df, plan.intention.partition_by)
