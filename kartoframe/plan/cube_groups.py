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


_LABEL = "__kf_label__"
_ORDER = "__kf_order__"


def _labels_col(ds_id: str) -> str:
    return f"__kf_labels__{ds_id}"


def _dataset_frame(
    cube: Cube,
    query: ReadQuery,
    loaded: LoadedDataset,
    intention: QueryIntention,
    indices: Mapping[str, pa.Table],
) -> tuple[pd.DataFrame, list[str], PruneStats]:
    """Surviving partitions of a dataset, keyed by cube partition and local partition-by.

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
    rows: dict[str, list[Any]] = {c: [] for c in from_keys}
    rows[_LABEL] = []
    for lb in kept:
        values = partition_values(lb, pk, loaded.schema) if positions else ()
        rows[_LABEL].append(lb)
        for c, i in zip(from_keys, positions):
            rows[c].append(values[i])
    frame = pd.DataFrame(rows, columns=[_LABEL, *from_keys])
    for c in pb_from_index:
        idx = indices[c]
        values = idx.column(0).to_pylist()
        pairs_v: list[Any] = []
        pairs_l: list[str] = []
        for v, lbs in zip(values, idx.column(1).to_pylist()):
            for lb in lbs:
                pairs_v.append(v)
                pairs_l.append(lb)
        exploded = pd.DataFrame({_LABEL: pairs_l, c: pd.Series(pairs_v, dtype=object)})
        frame = frame.merge(exploded, on=_LABEL, how="inner")
    order = {lb: i for i, lb in enumerate(labels)}
    frame[_ORDER] = frame[_LABEL].map(order)
    group_cols = key_cols + [c for c in local_pb if c not in key_cols]
    return frame, group_cols, stats


def _aggregate(frame: pd.DataFrame, group_cols: list[str], ds_id: str) -> pd.DataFrame:
    """One row per distinct ``group_cols`` tuple with the list of its labels (commit order)."""
    frame = frame.sort_values(_ORDER, kind="stable")
    name = _labels_col(ds_id)
    labels = frame[_LABEL].tolist()
    if not group_cols:
        return pd.DataFrame({name: [labels] if labels else []})
    grouped: dict[tuple[Any, ...], list[str]] = {}
    for key, lb in zip(zip(*(frame[c].tolist() for c in group_cols)), labels):
        grouped.setdefault(key, []).append(lb)
    cols: dict[str, pd.Series] = {
        c: pd.Series([k[i] for k in grouped], dtype=object) for i, c in enumerate(group_cols)
    }
    cols[name] = pd.Series(list(grouped.values()), dtype=object)
    return pd.DataFrame(cols)


def _merge(left: pd.DataFrame, right: pd.DataFrame, how: Literal["inner", "left"]) -> pd.DataFrame:
    common = [c for c in left.columns if c in right.columns]
    if common:
        return left.merge(right, on=common, how=how, sort=False)
    if how == "inner" or len(right):
        return left.merge(right, how="cross")
    out = left.copy()
    for c in right.columns:
        out[c] = None
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
    aligned: pd.DataFrame | None = None
    stats: dict[str, PruneStats] = {}
    for read in reads:
        loaded = datasets[read.dataset_id]
        indices = all_indices(loaded)
        frame, group_cols, stats[read.dataset_id] = _dataset_frame(
            cube, queries[read.dataset_id], loaded, intention, indices
        )
        agg = _aggregate(frame, group_cols, read.dataset_id)
        if aligned is None:
            aligned = agg
        else:
            aligned = _merge(aligned, agg, "inner" if read.role == "inner" else "left")
    assert aligned is not None
    pby = list(intention.partition_by) or list(cube.partition_columns)
    if aligned.empty:
        return (), stats
    keys = list(zip(*(aligned[c].tolist() for c in pby)))
    label_lists = {r.dataset_id: aligned[_labels_col(r.dataset_id)].tolist() for r in reads}
    rows_of: dict[tuple[Any, ...], list[int]] = {}
    for row, key in enumerate(keys):
        if not any(_is_missing(v) for v in key):
            rows_of.setdefault(key, []).append(row)
    parts: dict[str, dict[str, FilePart]] = {r.dataset_id: {} for r in reads}
    groups: list[QueryGroup] = []
    for key in sorted(rows_of, key=_sort_key):
        files: dict[str, tuple[FilePart, ...]] = {}
        for read in reads:
            seen: dict[str, None] = {}
            for row in rows_of[key]:
                lbs = label_lists[read.dataset_id][row]
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
