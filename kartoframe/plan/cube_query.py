"""Cube query planning: loaded metadata and indices -> :class:`CubeQueryPlan` (pure).

Three steps, each a pure function of the previous one's result:

1. :func:`determine_intention` validates the user's request against the datasets'
   schemas and index columns (unknown columns, non-indexed ``partition_by``, literal types,
   sets instead of sequences) and splits the conditions per dataset.
2. :func:`required_indices` names the secondary indices the plan needs (only those of
   columns used by conditions or ``partition_by``) and :func:`required_statistics` the
   datasets whose per-file statistics could skip files; the storage layer loads them.
3. :func:`plan_query` prunes every dataset's partitions by partition keys and indices,
   then skips files by their statistics (:func:`kartoframe.plan.skipping.skip_by_statistics`
   with the dataset's row filter), aligns the datasets' partitions (seed, then inner joins
   with restrictive datasets, then left joins) and cuts the result into
   :class:`QueryGroup` values (one per ``partition_by`` value, or per cube partition when
   there is none).

Engines only execute the plan (:mod:`kartoframe.execution.cube_join`); no data file is
opened during planning.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import pandas as pd
import pyarrow as pa

from kartoframe.errors import ColumnNotFoundError, InvalidInputError
from kartoframe.format.cube import Cube, dataset_columns, payload_subset, str_tuple
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.index import index_from_embedded
from kartoframe.plan import predicates as preds
from kartoframe.plan.conditions import Conjunction, check_condition_types
from kartoframe.plan.integers import nullable_integer_columns
from kartoframe.plan.pruning import PruneStats, partition_values, prune
from kartoframe.plan.scan import FilePart, needs_statistics
from kartoframe.plan.skipping import skip_by_statistics

__all__ = [
    "CubeQueryPlan",
    "DatasetRead",
    "QueryGroup",
    "QueryIntention",
    "determine_intention",
    "plan_query",
    "relevant_datasets",
    "required_indices",
    "required_statistics",
]

Role = Literal["seed", "inner", "left"]


@dataclasses.dataclass(frozen=True, slots=True)
class QueryIntention:
    """The validated request.

    Attributes
    ----------
    dimension_columns
        Query dimension columns (a strict subset of the cube's means projection).
    partition_by
        Columns forming one result frame per distinct value (may be empty).
    conditions
        All conditions.
    conditions_pre
        Per dataset: conditions on its indexed columns (used for partition pruning).
    conditions_post
        Per dataset: conditions on its columns that are not cube partition columns
        (evaluated on rows while loading).
    output_columns
        Returned columns, alphabetical; always includes the cube partition columns.
    """

    dimension_columns: tuple[str, ...]
    partition_by: tuple[str, ...]
    conditions: Conjunction
    conditions_pre: Mapping[str, Conjunction]
    conditions_post: Mapping[str, Conjunction]
    output_columns: tuple[str, ...]


def _missing(what: str, missing: Iterable[str]) -> None:
    cols = sorted(missing)
    if cols:
        raise ColumnNotFoundError(f"{what}: {', '.join(cols)}")


def determine_intention(
    cube: Cube,
    schemas: Mapping[str, pa.Schema],
    indexed_columns: Mapping[str, set[str]],
    *,
    conditions: object = None,
    dimension_columns: object = None,
    partition_by: object = None,
    payload_columns: object = None,
) -> QueryIntention:
    """Validate a query against the datasets (schemas and indexed columns).

    Parameters
    ----------
    cube
        The cube spec.
    schemas
        Dataset id -> dataset schema of every queried dataset.
    indexed_columns
        Dataset id -> partition keys and secondary-index columns.
    conditions, dimension_columns, partition_by, payload_columns
        As in :func:`kartoframe.query_cube`.

    Raises
    ------
    ColumnNotFoundError
        Unknown dimension, partition-by, condition or payload columns.
    InvalidInputError
        Empty dimension columns, non-indexed ``partition_by`` columns.
    InvalidTypeError
        Sets where order matters; literal values of the wrong type.
    """
    available: set[str] = set()
    for schema in schemas.values():
        available |= dataset_columns(schema)
    if dimension_columns is None:
        dims = cube.dimension_columns
    else:
        dims = str_tuple(dimension_columns, "dimension_columns")
        _missing(
            "Following dimension columns were requested but are missing from the cube",
            set(dims) - set(cube.dimension_columns),
        )
        if not dims:
            raise InvalidInputError("Dimension columns cannot be empty.")
    pby = str_tuple(partition_by, "partition_by")
    _missing(
        "Following partition-by columns were requested but are missing from the cube",
        set(pby) - available,
    )
    all_indexed: set[str] = set()
    for cols in indexed_columns.values():
        all_indexed |= set(cols)
    not_indexed = sorted(set(pby) - all_indexed)
    if not_indexed:
        raise InvalidInputError(
            "Following partition-by columns are not indexed and cannot be used: "
            + ", ".join(not_indexed)
        )
    seed_indexed = indexed_columns.get(cube.seed_dataset, set())
    dims_not_in_seed = sorted(
        c for c in pby if c in cube.dimension_columns and c not in seed_indexed
    )
    if dims_not_in_seed:
        raise InvalidInputError(
            "Following partition-by columns are dimension columns without an index in the "
            f"seed dataset and cannot be used: {', '.join(dims_not_in_seed)}"
        )
    conj = Conjunction(conditions)
    _missing(
        "Following condition columns are required but are missing from the cube",
        conj.columns - available,
    )
    check_condition_types(conj, schemas)
    split = conj.split_by_column()
    pre: dict[str, Conjunction] = {}
    post: dict[str, Conjunction] = {}
    for ds_id, schema in schemas.items():
        cols = dataset_columns(schema)
        sub_pre = [split[c] for c in sorted(split) if c in indexed_columns.get(ds_id, set())]
        if sub_pre:
            pre[ds_id] = Conjunction(sub_pre)
        post_cols = (cols & conj.columns) - set(cube.partition_columns)
        sub_post = [split[c] for c in sorted(split) if c in post_cols]
        if sub_post:
            post[ds_id] = Conjunction(sub_post)
    if payload_columns is None:
        payload = available
    else:
        payload = set(str_tuple(payload_columns, "payload_columns", ordered=False))
        _missing("Cannot find the following requested payload columns", payload - available)
    output = tuple(sorted(set(pby) | set(dims) | payload | set(cube.partition_columns)))
    return QueryIntention(dims, pby, conj, pre, post, output)


def required_indices(
    intention: QueryIntention, datasets: Mapping[str, LoadedDataset]
) -> dict[str, set[str]]:
    """Secondary indices to load per dataset: columns of conditions and ``partition_by``."""
    wanted = set(intention.partition_by)
    for conj in (*intention.conditions_pre.values(), *intention.conditions_post.values()):
        wanted |= conj.columns
    out: dict[str, set[str]] = {}
    for ds_id, loaded in datasets.items():
        md = loaded.metadata
        secondary = set(md.indices) | set(md.embedded_indices)
        need = (wanted & secondary) - set(md.partition_keys)
        if need:
            out[ds_id] = need
    return out


def required_statistics(
    intention: QueryIntention, datasets: Mapping[str, LoadedDataset]
) -> set[str]:
    """Datasets whose per-file statistics the plan can use (the resolver loads them).

    A dataset's files are skipped by its row filter (its post-conditions), so its
    statistics are only worth loading when that filter has a literal that neither a
    partition key nor an exact ``==``/``in`` on an indexed column already answers (as
    :func:`kartoframe.plan.scan.needs_statistics` decides for dataset reads).
    """
    out: set[str] = set()
    for ds_id, loaded in datasets.items():
        post = intention.conditions_post.get(ds_id)
        if post is not None and needs_statistics(loaded, post.to_predicates()):
            out.add(ds_id)
    return out


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class DatasetRead:
    """How one dataset takes part in the query.

    Attributes
    ----------
    dataset_id, uuid, table_name, schema, partition_keys
        The dataset.
    role
        ``"seed"``, ``"inner"`` (restrictive: inner join) or ``"left"`` (left join).
    load_columns
        Data columns to load (sorted; partition columns are materialised from keys).
    join_columns
        Columns the dataset is joined to the seed on: its dimension columns in the query,
        then its partition keys that are cube partition columns.
    dedupe_columns
        Cell key for the keep-last de-duplication: ``join_columns`` plus this dataset's
        ``partition_by`` columns that are not already in them (groups filter rows by
        their ``partition_by`` value before keeping the last row, as kartothek does).
    predicate
        Row filter (the dataset's post-conditions), bound to its schema.
    projected
        The dataset has dimension columns outside the query dimensions (seed only).
    label_order
        Position of every partition label in the header (commit order).
    nullable_integers
        Integer columns every frame reads as pandas nullable integers, decided for all
        groups at once (see :mod:`kartoframe.plan.integers`; set by
        ``plan_query(consistent_integers=True)``).
    """

    dataset_id: str
    uuid: str
    table_name: str
    schema: pa.Schema
    partition_keys: tuple[str, ...]
    role: Role
    load_columns: tuple[str, ...]
    join_columns: tuple[str, ...]
    dedupe_columns: tuple[str, ...]
    predicate: preds.Predicate | None
    projected: bool
    label_order: Mapping[str, int] = dataclasses.field(default_factory=dict)
    nullable_integers: tuple[str, ...] = ()

    @property
    def scan_columns(self) -> tuple[str, ...]:
        """Columns the scan must produce (load, join and de-duplication columns)."""
        return tuple(dict.fromkeys([*self.load_columns, *self.join_columns, *self.dedupe_columns]))

    @property
    def cube_partition_keys(self) -> tuple[str, ...]:
        """Partition keys that are join columns (cube partition columns)."""
        return tuple(c for c in self.join_columns if c in self.partition_keys)


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class QueryGroup:
    """One unit of work: one result frame (before dropping empty ones).

    Attributes
    ----------
    key
        ``(column, value)`` of the ``partition_by`` columns for this group (empty if the
        query has no ``partition_by``).
    files
        Dataset id -> files to read, in commit (header) order.
    extra
        Dataset id -> additional row-filter literals (``partition_by`` values on columns
        that are not cube partition columns).
    """

    key: tuple[tuple[str, Any], ...]
    files: Mapping[str, tuple[FilePart, ...]]
    extra: Mapping[str, tuple[preds.Literal, ...]]

    def needs_dedupe(self, read: DatasetRead) -> bool:
        """Whether this group can hold several rows per cell of ``read``'s dataset.

        True for a projected dataset or when two files share the cube partition values
        (appends). Files written by cube writes hold unique cells, so otherwise the
        keep-last step can be skipped.
        """
        if read.projected:
            return True
        positions = [read.partition_keys.index(c) for c in read.cube_partition_keys]
        seen: set[tuple[Any, ...]] = set()
        for f in self.files.get(read.dataset_id, ()):
            k = tuple(f.partition_values[i] for i in positions)
            if k in seen:
                return True
            seen.add(k)
        return False


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class CubeQueryPlan:
    """A planned cube query; engines run it group by group (or merged).

    Attributes
    ----------
    cube, intention
        What was asked.
    reads
        Participating datasets in join order: seed, restrictive (inner), others (left).
    groups
        Groups sorted by ``partition_by`` key (by cube partition when no ``partition_by``).
    prune_stats
        Dataset id -> files kept by each pruning stage of that dataset (partition keys,
        secondary indices, per-file statistics), before the datasets are aligned;
        :meth:`file_counts` gives the files the query finally reads.
    """

    cube: Cube
    intention: QueryIntention
    reads: tuple[DatasetRead, ...]
    groups: tuple[QueryGroup, ...]
    prune_stats: Mapping[str, PruneStats] = dataclasses.field(default_factory=dict)

    @property
    def output_columns(self) -> tuple[str, ...]:
        """Result columns in order."""
        return self.intention.output_columns

    @property
    def sort_columns(self) -> tuple[str, ...]:
        """Result rows are sorted by these: query dimensions, then cube partitions."""
        return tuple(self.intention.dimension_columns) + tuple(self.cube.partition_columns)

    def read(self, dataset_id: str) -> DatasetRead:
        """The :class:`DatasetRead` of a dataset id."""
        for r in self.reads:
            if r.dataset_id == dataset_id:
                return r
        raise KeyError(dataset_id)

    def file_counts(self) -> dict[str, int]:
        """Dataset id -> number of distinct data files the query reads (all groups)."""
        out: dict[str, int] = {}
        for r in self.reads:
            labels = {f.label for g in self.groups for f in g.files.get(r.dataset_id, ())}
            out[r.dataset_id] = len(labels)
        return out

    def merged(self) -> QueryGroup:
        """All groups as one (files de-duplicated, commit order kept, no extra filters).

        Running the merged group and splitting the result by the ``partition_by``
        columns gives the same frames as running every group: rows of a group are those
        whose ``partition_by`` values equal the group key, and the keep-last key includes
        the ``partition_by`` payload columns.
        """
        files: dict[str, tuple[FilePart, ...]] = {}
        for r in self.reads:
            seen: dict[str, FilePart] = {}
            for g in self.groups:
                for f in g.files.get(r.dataset_id, ()):
                    seen.setdefault(f.label, f)
            order = r.label_order
            files[r.dataset_id] = tuple(sorted(seen.values(), key=lambda f: order[f.label]))
        return QueryGroup((), files, {})

    def coalesced(self, max_groups: int) -> tuple[QueryGroup, ...]:
        """Without ``partition_by``: merge neighbouring groups into at most ``max_groups``."""
        if self.intention.partition_by or len(self.groups) <= max_groups:
            return self.groups
        size = -(-len(self.groups) // max(1, max_groups))
        out = []
        for start in range(0, len(self.groups), size):
            chunk = self.groups[start : start + size]
            sub = dataclasses.replace(self, groups=chunk)
            out.append(sub.merged())
        return tuple(out)


def _indices(loaded: LoadedDataset) -> dict[str, pa.Table]:
    out = dict(loaded.indices)
    for col, emb in loaded.metadata.embedded_indices.items():
        if col not in out and col in loaded.schema.names:
            out[col] = index_from_embedded(col, loaded.schema.field(col).type, emb)
    return out


def _bind(conj: Conjunction | None, schema: pa.Schema) -> preds.Predicate | None:
    if conj is None:
        return None
    return preds.bind(conj.to_predicates(), schema)


def plan_query(
    cube: Cube,
    datasets: Mapping[str, LoadedDataset],
    intention: QueryIntention,
    consistent_integers: bool = False,
) -> CubeQueryPlan:
    """Plan a cube query from loaded datasets (indices of :func:`required_indices` loaded).

    ``consistent_integers`` decides which integer columns every group's frame returns as
    pandas nullable integers (from the loaded statistics' null counts of all the groups'
    files), for engines that run the groups separately (dask); the merged eager run has one
    frame, whose own nulls decide.

    Raises
    ------
    InvalidInputError
        A dataset would have to be projected while keeping payload columns.
    """
    pby = intention.partition_by
    cube_dims, cube_parts = set(cube.dimension_columns), set(cube.partition_columns)

    restrictive: set[str] = set()
    for ds_id, loaded in datasets.items():
        if ds_id == cube.seed_dataset:
            continue
        mask = set(pby)
        for table in (intention.conditions_pre, intention.conditions_post):
            if ds_id in table:
                mask |= table[ds_id].columns
        mask -= cube_dims | cube_parts
        if mask & dataset_columns(loaded.schema):
            restrictive.add(ds_id)

    reads: list[DatasetRead] = []
    for ds_id in _join_order(cube, datasets, restrictive):
        loaded = datasets[ds_id]
        read = _dataset_read(cube, ds_id, loaded, intention, restrictive)
        if read is not None:
            reads.append(read)
    groups, stats = _regroup(cube, datasets, intention, reads)
    if consistent_integers:
        reads = [_with_nullable_integers(r, datasets[r.dataset_id], groups) for r in reads]
    return CubeQueryPlan(cube, intention, tuple(reads), groups, stats)


def _with_nullable_integers(
    read: DatasetRead, loaded: LoadedDataset, groups: Sequence[QueryGroup]
) -> DatasetRead:
    files = list({f.label: f for g in groups for f in g.files.get(read.dataset_id, ())}.values())
    nullable = nullable_integer_columns(
        read.schema, read.scan_columns, files, read.partition_keys, loaded.statistics
    )
    return dataclasses.replace(read, nullable_integers=nullable)


def _join_order(
    cube: Cube, datasets: Mapping[str, LoadedDataset], restrictive: set[str]
) -> list[str]:
    others = sorted(d for d in datasets if d != cube.seed_dataset)
    return (
        [cube.seed_dataset]
        + [d for d in others if d in restrictive]
        + [d for d in others if d not in restrictive]
    )


def _columns_to_load(
    cube: Cube, ds_id: str, schema: pa.Schema, intention: QueryIntention
) -> tuple[set[str], bool] | None:
    """Columns a dataset contributes (None: it is not loaded) and whether it is projected."""
    is_seed = ds_id == cube.seed_dataset
    cols = dataset_columns(schema)
    dims_q = intention.dimension_columns
    dimensionality = cols & set(cube.dimension_columns)
    post = intention.conditions_post.get(ds_id)
    mask = (
        set(intention.output_columns) | set(dims_q) | (post.columns if post is not None else set())
    )
    if not is_seed:
        mask -= set(cube.partition_columns)
    candidates = cols & mask
    payload = payload_subset(candidates, cube)
    if not (is_seed or payload):
        return None
    projected = not dimensionality <= set(dims_q)
    if projected and payload:
        raise InvalidInputError(
            f'Cannot project dataset "{ds_id}" with dimensionality '
            f"[{', '.join(sorted(dimensionality))}] to [{', '.join(sorted(dims_q))}] while "
            f"keeping the following payload intact: {', '.join(sorted(payload))}"
        )
    return candidates, projected


def relevant_datasets(
    cube: Cube, schemas: Mapping[str, pa.Schema], intention: QueryIntention
) -> set[str]:
    """Datasets that take part in the query: the seed and those contributing payload.

    Raises
    ------
    InvalidInputError
        A dataset would have to be projected while keeping payload columns.
    """
    return {
        ds_id
        for ds_id in sorted(schemas)
        if _columns_to_load(cube, ds_id, schemas[ds_id], intention) is not None
    }


def _dataset_read(
    cube: Cube,
    ds_id: str,
    loaded: LoadedDataset,
    intention: QueryIntention,
    restrictive: set[str],
) -> DatasetRead | None:
    found = _columns_to_load(cube, ds_id, loaded.schema, intention)
    if found is None:
        return None
    candidates, projected = found
    cols = dataset_columns(loaded.schema)
    dims_q = intention.dimension_columns
    post = intention.conditions_post.get(ds_id)
    pk = tuple(loaded.metadata.partition_keys)
    join = tuple(c for c in dims_q if c in cols) + tuple(
        c for c in cube.partition_columns if c in pk
    )
    # rows of a group are filtered by its partition_by values before the keep-last step
    # (kartothek's order): those columns are part of the cell key unless already in it
    pby_payload = tuple(
        c
        for c in intention.partition_by
        if c in cols and c not in cube.partition_columns and c not in join
    )
    is_seed = ds_id == cube.seed_dataset
    role: Role = "seed" if is_seed else ("inner" if ds_id in restrictive else "left")
    return DatasetRead(
        dataset_id=ds_id,
        uuid=loaded.uuid,
        table_name=loaded.metadata.table_name,
        schema=loaded.schema,
        partition_keys=pk,
        role=role,
        load_columns=tuple(sorted(candidates)),
        join_columns=join,
        dedupe_columns=join + pby_payload,
        predicate=_bind(post, loaded.schema),
        projected=projected,
        label_order={lb: i for i, lb in enumerate(loaded.metadata.partitions)},
    )


_LABEL = "__kf_label__"
_ORDER = "__kf_order__"


def _labels_col(ds_id: str) -> str:
    return f"__kf_labels__{ds_id}"


def _dataset_frame(
    cube: Cube,
    read: DatasetRead,
    loaded: LoadedDataset,
    intention: QueryIntention,
    indices: Mapping[str, pa.Table],
) -> tuple[pd.DataFrame, list[str], PruneStats]:
    """Surviving partitions of a dataset, keyed by cube partition and local partition-by.

    Partitions are pruned by partition keys and indices with the conditions on the
    dataset's columns, then by the per-file statistics (if loaded) with the dataset's row
    filter ``read.predicate``: a skipped file holds no row passing that filter, so the
    dataset's scan (filter, then keep-last) returns the same rows without it.
    """
    md = loaded.metadata
    labels = list(md.partitions)
    cols = dataset_columns(loaded.schema)
    conj = intention.conditions.restrict(cols)
    if len(conj):
        kept, stats = prune(
            preds.bind(conj.to_predicates(), loaded.schema),
            labels,
            md.partition_keys,
            loaded.schema,
            indices,
        )
    else:
        kept, stats = labels, PruneStats(len(labels), len(labels), len(labels))
    if loaded.statistics is not None and read.predicate is not None:
        kept = skip_by_statistics(
            read.predicate, kept, md.partitions, loaded.statistics, md.partition_keys
        )
        stats = dataclasses.replace(stats, after_statistics=len(kept))
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


def _regroup(
    cube: Cube,
    datasets: Mapping[str, LoadedDataset],
    intention: QueryIntention,
    reads: Sequence[DatasetRead],
) -> tuple[tuple[QueryGroup, ...], dict[str, PruneStats]]:
    aligned: pd.DataFrame | None = None
    stats: dict[str, PruneStats] = {}
    for read in reads:
        loaded = datasets[read.dataset_id]
        indices = _indices(loaded)
        frame, group_cols, stats[read.dataset_id] = _dataset_frame(
            cube, read, loaded, intention, indices
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
    from kartoframe.format.values import normalize_literal

    if hasattr(value, "item") and not isinstance(value, pd.Timestamp):
        value = value.item()
    return normalize_literal(col, schema.field(col).type, value)
