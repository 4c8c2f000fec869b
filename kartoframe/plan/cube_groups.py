"""Cube query groups: prune every dataset, align their partitions, cut into groups (pure).

Every dataset is pruned like a dataset read (:func:`kartoframe.plan.scan.select_files`);
its surviving partitions are keyed by cube partition (and the query's ``partition_by``
values), the datasets aligned (seed, then inner joins with the restrictive datasets,
then left joins) and the result cut into :class:`~kartoframe.plan.cube_query.QueryGroup`
values: one per ``partition_by`` value, or per cube partition when there is none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import pandas as pd
import pyarrow as pa

from kartoframe.format.cube import Cube, dataset_columns
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.values import normalize_literal
from kartoframe.plan import predicates as preds
from kartoframe.plan.cube_intention import QueryIntention
from kartoframe.plan.cube_plan import DatasetRead, QueryGroup
from kartoframe.plan.pruning import PruneStats, partition_values
from kartoframe.plan.query import ReadQuery
from kartoframe.plan.scan import FilePart, all_indices, select_files

__all__ = ["regroup"]


#: One aligned row: column -> value, with each dataset's labels under its labels column.
_Row = dict[str, Any]


def _labels_col(ds_id: str) -> str:
    return f"__kf_labels__{ds_id}"


def _as_pandas_values(values: list[Any]) -> list[Any]:
    """``values`` as a pandas column returns them (``tolist``): the value types group
    keys have always had (datetimes become ``Timestamp``, numpy scalars Python ones).
    """
    return pd.Series(values).tolist() if values else []


def _dataset_rows(
    cube: Cube,
    query: ReadQuery,
    loaded: LoadedDataset,
    intention: QueryIntention,
    indices: Mapping[str, pa.Table],
    ds_id: str,
) -> tuple[list[_Row], list[str], PruneStats]:
    """The surviving partitions of a dataset, one row per distinct tuple of its cube
    partition and local partition-by values, with the list of its labels (commit order).

    Partitions are pruned (:func:`kartoframe.plan.scan.select_files`, the pruning of dataset
    reads) by partition keys and indices with the conditions on the dataset's columns
    (``query.prune_predicate``), then by the per-file statistics (if loaded) with the
    dataset's row filter ``query.predicate``: a skipped file holds no row passing that
    filter, so the dataset's scan (filter, then keep-last) returns the same rows without it.
    """
    md = loaded.metadata
    labels = list(md.partitions)
    kept, stats = select_files(loaded, query, indices, labels)
    pk = list(md.partition_keys)
    key_cols = [c for c in cube.partition_columns if c in pk]
    local_pb = [c for c in intention.partition_by if c in pk or c in indices]
    pb_from_keys = [c for c in local_pb if c in pk and c not in key_cols]
    pb_from_index = [c for c in local_pb if c not in pk]
    from_keys = key_cols + pb_from_keys
    positions = [pk.index(c) for c in from_keys]
    order = {lb: i for i, lb in enumerate(labels)}
    kept = sorted(kept, key=order.__getitem__)  # commit order
    parsed = [partition_values(lb, pk, loaded.schema) for lb in kept] if positions else []
    columns = {
        c: _as_pandas_values([values[i] for values in parsed])
        for c, i in zip(from_keys, positions, strict=True)
    }
    # (key values from the labels, label) pairs; an index column multiplies each label
    # by the values it holds there (a label it does not list drops out)
    pairs = [(tuple(columns[c][row] for c in from_keys), lb) for row, lb in enumerate(kept)]
    for c in pb_from_index:
        idx = indices[c]
        by_label: dict[str, list[Any]] = {}
        for v, lbs in zip(idx.column(0).to_pylist(), idx.column(1).to_pylist()):
            for lb in lbs:
                by_label.setdefault(lb, []).append(v)
        pairs = [((*key, v), lb) for key, lb in pairs for v in by_label.get(lb, ())]
    group_cols = key_cols + [c for c in local_pb if c not in key_cols]
    names = from_keys + pb_from_index
    at = [names.index(c) for c in group_cols]
    grouped: dict[tuple[Any, ...], list[str]] = {}
    for key, lb in pairs:
        grouped.setdefault(tuple(key[i] for i in at), []).append(lb)
    name = _labels_col(ds_id)
    rows = [{**dict(zip(group_cols, key, strict=True)), name: lbs} for key, lbs in grouped.items()]
    return rows, group_cols, stats


def _join_key(row: _Row, columns: Sequence[str]) -> tuple[Any, ...] | None:
    """The values of ``columns`` in ``row`` as a join key; None when one is missing
    (it matches nothing).
    """
    key = tuple(row.get(c) for c in columns)
    return None if any(_is_missing(v) for v in key) else key


def _join(
    left: list[_Row],
    left_cols: list[str],
    right: list[_Row],
    right_cols: list[str],
    how: Literal["inner", "left"],
) -> list[_Row]:
    """Join aligned rows with a dataset's rows on their common columns (every pair of
    rows when there is none); a left join keeps an unmatched row with None for the
    dataset's columns.
    """
    common = [c for c in left_cols if c in right_cols]
    added = [c for c in right_cols if c not in common]
    matches: dict[tuple[Any, ...] | None, list[_Row]] = {}
    for r in right:
        key = _join_key(r, common)  # () for every row when there is no common column
        if key is not None:
            matches.setdefault(key, []).append(r)
    missing = dict.fromkeys(added)
    out: list[_Row] = []
    for row in left:
        found = matches.get(_join_key(row, common))
        if found:
            out.extend({**row, **{c: r[c] for c in added}} for r in found)
        elif how == "left":
            out.append({**row, **missing})
    return out


def regroup(
    cube: Cube,
    datasets: Mapping[str, LoadedDataset],
    intention: QueryIntention,
    queries: Mapping[str, ReadQuery],
    reads: Sequence[DatasetRead],
) -> tuple[tuple[QueryGroup, ...], dict[str, PruneStats]]:
    """Prune every dataset, align their partitions (seed, then inner joins with the
    restrictive datasets, then left joins) and cut the result into query groups.
    """
    aligned: list[_Row] = []
    aligned_cols: list[str] = []
    stats: dict[str, PruneStats] = {}
    for n, read in enumerate(reads):
        loaded = datasets[read.dataset_id]
        rows, group_cols, stats[read.dataset_id] = _dataset_rows(
            cube, queries[read.dataset_id], loaded, intention, all_indices(loaded), read.dataset_id
        )
        cols = [*group_cols, _labels_col(read.dataset_id)]
        if n == 0:
            aligned = rows
        else:
            how: Literal["inner", "left"] = "inner" if read.role == "inner" else "left"
            aligned = _join(aligned, aligned_cols, rows, cols, how)
        aligned_cols += [c for c in cols if c not in aligned_cols]
    pby = list(intention.partition_by) or list(cube.partition_columns)
    if not aligned:
        return (), stats
    rows_of: dict[tuple[Any, ...], list[_Row]] = {}
    for row in aligned:
        key = tuple(row[c] for c in pby)
        if not any(_is_missing(v) for v in key):
            rows_of.setdefault(key, []).append(row)
    parts: dict[str, dict[str, FilePart]] = {r.dataset_id: {} for r in reads}
    groups: list[QueryGroup] = []
    for key in sorted(rows_of, key=_sort_key):
        files: dict[str, tuple[FilePart, ...]] = {}
        for read in reads:
            seen: dict[str, None] = {}
            for row in rows_of[key]:
                lbs = row.get(_labels_col(read.dataset_id))
                if isinstance(lbs, list):
                    seen.update(dict.fromkeys(lbs))
            loaded = datasets[read.dataset_id]
            cache = parts[read.dataset_id]
            out = []
            for lb in sorted(seen, key=read.label_order.__getitem__):
                fp = cache.get(lb)
                if fp is None:
                    fp = cache[lb] = _file_part(loaded, lb)
                out.append(fp)
            files[read.dataset_id] = tuple(out)
        extra = _group_literals(cube, intention, reads, pby, key)
        gkey = tuple(zip(intention.partition_by, key)) if intention.partition_by else ()
        groups.append(QueryGroup(gkey, files, extra))
    return tuple(groups), stats


def _is_missing(value: Any) -> bool:
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, float) and value != value


def _sort_key(key: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple((type(v).__name__, v) for v in key)


def _file_part(loaded: LoadedDataset, label: str) -> FilePart:
    md = loaded.metadata
    values = partition_values(label, md.partition_keys, loaded.schema)
    return FilePart(label, md.partitions[label], values)


def _group_literals(
    cube: Cube,
    intention: QueryIntention,
    reads: Sequence[DatasetRead],
    pby: Sequence[str],
    values: Sequence[Any],
) -> dict[str, tuple[preds.Literal, ...]]:
    if not intention.partition_by:
        return {}
    out: dict[str, tuple[preds.Literal, ...]] = {}
    for read in reads:
        cols = dataset_columns(read.schema)
        lits = tuple(
            preds.Literal(
                col, "==", _literal_value(read.schema, col, v), read.schema.field(col).type
            )
            for col, v in zip(pby, values)
            if col not in cube.partition_columns and col in cols
        )
        if lits:
            out[read.dataset_id] = lits
    return out


def _literal_value(schema: pa.Schema, col: str, value: Any) -> Any:
    if hasattr(value, "item") and not isinstance(value, pd.Timestamp):
        value = value.item()
    return normalize_literal(col, schema.field(col).type, value)
