"""Planning ``optimize`` (pure): candidates, bins, incremental skipping, option checks,
and the row orders of :mod:`kartoframe.format.clustering`."""

from __future__ import annotations

import itertools

import hypothesis.strategies as st
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given

from kartoframe.errors import InvalidInputError, InvalidTypeError
from kartoframe.format.clustering import sort_table, zorder_indices
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.fold import RecordOptimized, SetSchema, fold
from kartoframe.format.header import DatasetHeader, kartoframe_section
from kartoframe.format.optimized import optimized_labels
from kartoframe.plan.file_part import FilePart
from kartoframe.plan.optimize import (
    OptimizeOptions,
    OptimizeResult,
    check_partition_predicate,
    optimize_options,
    plan_optimize,
)
from kartoframe.plan.predicates import bind

SCHEMA = pa.schema([("p", pa.int64()), ("x", pa.float64()), ("k", pa.int64())])
MB = 1024 * 1024


def _files(spec: dict[str, list[int]]) -> tuple[list[FilePart], dict[str, int]]:
    """``{partition dir: [sizes in MB]}`` -> file parts and their sizes."""
    files, sizes = [], {}
    for part, mbs in spec.items():
        for i, mb in enumerate(mbs):
            label = f"{part}/f{i:03d}" if part else f"f{i:03d}"
            files.append(FilePart(label, f"ds/table/{label}.parquet", (int(part[2:]),)))
            sizes[label] = mb * MB
    return files, sizes


def _plan(spec, options=None, recorded=None, positions=None):
    files, sizes = _files(spec)
    return plan_optimize(
        uuid="ds",
        table_name="table",
        schema=SCHEMA,
        partition_keys=("p",),
        index_columns=(),
        bloom_filter_columns=(),
        files=files,
        sizes=sizes,
        positions=positions or {f.label: i for i, f in enumerate(files)},
        recorded=recorded or {},
        options=options or OptimizeOptions(target_file_size=10 * MB),
    )


def test_small_files_are_packed_into_bins_below_the_target() -> None:
    plan = _plan({"p=1": [3, 3, 3, 3, 3], "p=2": [20, 1]})
    # p=1: 3+3+3 <= 10, then 3+3; p=2: the 20 MB file is at the target, one small file alone
    assert [[f.label for f in u.files] for u in plan.units] == [
        ["p=1/f000", "p=1/f001", "p=1/f002"],
        ["p=1/f003", "p=1/f004"],
    ]
    assert [u.output_files for u in plan.units] == [1, 1]
    assert [(s.partition, s.files) for s in plan.skipped] == [("p=2", 2)]
    assert "min_files" in plan.skipped[0].reason
    assert plan.bytes == 15 * MB
    assert plan.labels == {f"p=1/f00{i}" for i in range(5)}


def test_a_partition_of_large_files_is_left_alone() -> None:
    plan = _plan({"p=1": [12, 30]})
    assert plan.units == ()
    assert plan.skipped[0].reason == "no file below the target"


def test_bins_of_one_file_are_never_rewritten_without_sort() -> None:
    # 6 + 6 > 10: every bin holds one file, nothing to merge
    plan = _plan({"p=1": [6, 6, 6]})
    assert plan.units == ()
    assert "fit into one file" in plan.skipped[0].reason


def test_sort_by_makes_one_unit_per_partition_split_by_the_target() -> None:
    opts = OptimizeOptions(target_file_size=10 * MB, sort_by=("k",))
    plan = _plan({"p=1": [4] * 6, "p=2": [1]}, opts)
    # sorting needs every candidate of the partition in one unit: 24 MB -> 3 files;
    # the single unsorted file of p=2 is rewritten sorted
    assert [(u.partition, len(u.files), u.output_files) for u in plan.units] == [
        ("p=1", 6, 3),
        ("p=2", 1, 1),
    ]


def test_sorted_large_files_count_only_when_not_in_the_requested_order() -> None:
    opts = OptimizeOptions(target_file_size=10 * MB, sort_by=("k",))
    order = ("linear", "k")
    recorded = {"p=1/f000": order, "p=1/f001": ("linear", "x")}
    plan = _plan({"p=1": [30, 30]}, opts, recorded)
    # f000 is large and in order: kept; f001 is in another order: rewritten
    assert [[f.label for f in u.files] for u in plan.units] == [["p=1/f001"]]


def test_a_partition_optimized_in_the_same_order_is_skipped() -> None:
    opts = OptimizeOptions(target_file_size=10 * MB, sort_by=("k",))
    order = opts.order
    plan = _plan({"p=1": [2], "p=2": [2, 1]}, opts, {"p=1/f000": order, "p=2/f000": order})
    # p=1 unchanged since its optimize: skipped; p=2 got a new file: both rewritten
    assert [(s.partition, s.reason) for s in plan.skipped] == [("p=1", "already optimized")]
    assert [[f.label for f in u.files] for u in plan.units] == [["p=2/f000", "p=2/f001"]]
    # another order (or z-order) is new work
    z = OptimizeOptions(target_file_size=10 * MB, sort_by=("k",), sort_method="zorder")
    assert len(_plan({"p=1": [2]}, z, {"p=1/f000": order}).units) == 1


def test_min_files() -> None:
    opts = OptimizeOptions(target_file_size=10 * MB, min_files=4)
    assert _plan({"p=1": [1, 1, 1]}, opts).units == ()
    assert len(_plan({"p=1": [1, 1, 1, 1]}, opts).units) == 1


def test_dry_run_result_counts_the_plan() -> None:
    plan = _plan({"p=1": [3, 3], "p=2": [1, 1, 1]})
    result = OptimizeResult.planned(plan, dry_run=True)
    assert (result.files_removed, result.files_added, result.bytes_removed) == (5, 2, 9 * MB)
    assert result.partitions_optimized == ("p=1", "p=2")
    d = result.to_dict()
    assert d["dry_run"] is True and d["partitions_skipped"] == []


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"sort_by": ["p"]}, InvalidInputError, "partition keys"),
        ({"sort_by": ["nope"]}, InvalidInputError, "not in the dataset schema"),
        ({"sort_by": ["k", "k"]}, InvalidInputError, "twice"),
        ({"sort_by": 3}, InvalidTypeError, "sort_by"),
        ({"sort_method": "hilbert", "sort_by": ["k"]}, InvalidInputError, "sort_method"),
        ({"sort_method": "zorder"}, InvalidInputError, "needs the sort_by columns"),
        ({"target_file_size": 0}, InvalidInputError, "target_file_size"),
        ({"target_file_size": 1.5}, InvalidTypeError, "target_file_size"),
        ({"min_files": True}, InvalidTypeError, "min_files"),
        ({"row_group_size": -1}, InvalidInputError, "row_group_size"),
    ],
)
def test_invalid_options(kwargs, error, match) -> None:
    with pytest.raises(error, match=match):
        optimize_options(SCHEMA, ("p",), **kwargs)


def test_zorder_takes_at_most_four_columns() -> None:
    schema = pa.schema([(c, pa.int64()) for c in "pabcde"])
    optimize_options(schema, ("p",), sort_by=list("abcd"), sort_method="zorder")
    with pytest.raises(InvalidInputError, match="at most 4"):
        optimize_options(schema, ("p",), sort_by=list("abcde"), sort_method="zorder")


def test_predicates_on_partition_keys_only() -> None:
    check_partition_predicate(bind([[("p", "==", 1)]], SCHEMA), ("p",))
    with pytest.raises(InvalidInputError, match=r"only use the partition keys \['p'\]"):
        check_partition_predicate(bind([[("p", "==", 1), ("k", ">", 3)]], SCHEMA), ("p",))


# ------------------------------------------------------------------- the header record
def _loaded(section: dict) -> LoadedDataset:
    header = DatasetHeader(
        uuid="ds",
        partitions={"p=1/a": "ds/table/p=1/a.parquet", "p=1/b": "ds/table/p=1/b.parquet"},
        table_name="table",
        partition_keys=("p",),
        extra={"kartoframe": section},
    )
    return LoadedDataset(header, SCHEMA)


def test_the_fold_records_optimized_files_and_forgets_removed_ones() -> None:
    from kartoframe.format.fold import AddPartitions, RemovePartitions

    base = _loaded({"optimized": {"p=1/a": ["linear", "k"]}})
    header = fold(
        base,
        [
            RemovePartitions(frozenset({"p=1/a", "p=1/b"})),
            AddPartitions({"p=1/c": "ds/table/p=1/c.parquet"}),
            SetSchema(SCHEMA),
            RecordOptimized({"p=1/c": ("zorder", "k", "x")}),
        ],
        now="2026-01-01T00:00:00+00:00",
    )
    assert optimized_labels(kartoframe_section(header)) == {"p=1/c": ("zorder", "k", "x")}
    # a later commit removing the file drops its record; the map goes when empty
    later = fold(
        LoadedDataset(header, SCHEMA),
        [RemovePartitions(frozenset({"p=1/c"})), SetSchema(SCHEMA)],
        now="2026-01-02T00:00:00+00:00",
    )
    assert "optimized" not in kartoframe_section(later)


def test_a_malformed_record_counts_as_not_optimized() -> None:
    section = {"optimized": {"a": ["linear", 3], "b": "linear", "c": ["linear", "k"]}}
    assert optimized_labels(section) == {"c": ("linear", "k")}
    assert optimized_labels({"optimized": ["a"]}) == {}


# ------------------------------------------------------------------------- row orders
@given(
    st.lists(
        st.tuples(st.one_of(st.none(), st.integers(-5, 5)), st.sampled_from("abc")),
        max_size=60,
    )
)
def test_sorting_is_a_permutation_of_the_rows(rows) -> None:
    table = pa.table({"a": [r[0] for r in rows], "b": [r[1] for r in rows]}, SCHEMA_AB)
    for method in ("linear", "zorder"):
        out = sort_table(table, ["a", "b"], method)  # type: ignore[arg-type]
        assert sorted(map(_key, zip(*out.to_pydict().values(), strict=True))) == sorted(
            map(_key, rows)
        )


SCHEMA_AB = pa.schema([("a", pa.int64()), ("b", pa.string())])


def _key(row):
    return tuple((v is None, v) for v in row)


def test_linear_order_puts_nulls_last() -> None:
    table = pa.table({"a": [3, None, 1, 2]})
    assert sort_table(table, ["a"], "linear").column("a").to_pylist() == [1, 2, 3, None]


def test_zorder_of_a_grid_is_the_morton_curve() -> None:
    """On a 4x4 grid of distinct ranks the z-order visits the 2x2 quadrants in turn."""
    xs, ys = zip(*itertools.product(range(4), range(4)), strict=True)
    table = pa.table({"x": list(xs), "y": list(ys)})
    order = zorder_indices(table, ["x", "y"])
    visited = [(xs[i], ys[i]) for i in order]
    assert visited[:4] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert visited[4:8] == [(0, 2), (0, 3), (1, 2), (1, 3)]
    # each quadrant of 4 is contiguous: a range on either column touches few runs
    quadrants = [(x // 2, y // 2) for x, y in visited]
    assert quadrants == [q for q in dict.fromkeys(quadrants) for _ in range(4)]


def test_zorder_clusters_both_columns_better_than_a_linear_sort() -> None:
    """Row groups of 1/16 of the rows: a range on the second column hits fewer of them."""
    rng = np.random.default_rng(7)
    table = pa.table({"x": rng.integers(0, 1000, 16_000), "y": rng.integers(0, 1000, 16_000)})

    def groups_hit(t: pa.Table) -> int:
        y = t.column("y").to_numpy().reshape(16, -1)
        return int(((y.min(axis=1) <= 100) & (y.max(axis=1) >= 0)).sum())

    linear = groups_hit(sort_table(table, ["x", "y"], "linear"))
    zorder = groups_hit(sort_table(table, ["x", "y"], "zorder"))
    assert linear == 16  # sorted by x first, every group spans all y
    assert zorder <= 8


def test_units_hold_consecutive_files_in_commit_order() -> None:
    """A large file between small ones ends a bin; a sorted unit spans it."""
    plan = _plan({"p=1": [1, 30, 1, 1]})
    assert [[f.label for f in u.files] for u in plan.units] == [["p=1/f002", "p=1/f003"]]
    opts = OptimizeOptions(target_file_size=10 * MB, sort_by=("k",))
    recorded = {"p=1/f001": opts.order}
    sorted_plan = _plan({"p=1": [1, 30, 1, 1]}, opts, recorded)
    assert [len(u.files) for u in sorted_plan.units] == [4]


def test_commit_order_not_label_order_decides() -> None:
    positions = {"p=1/f002": 0, "p=1/f000": 1, "p=1/f001": 2}
    plan = _plan({"p=1": [1, 1, 1]}, positions=positions)
    assert [f.label for f in plan.units[0].files] == ["p=1/f002", "p=1/f000", "p=1/f001"]


def test_placed_partitions_take_the_place_of_their_anchor() -> None:
    from kartoframe.format.fold import AddPartitions, PlacePartitions, RemovePartitions

    parts = {lb: f"ds/table/{lb}.parquet" for lb in ["p=1/a", "p=2/b", "p=1/c", "p=1/d"]}
    base = LoadedDataset(
        DatasetHeader(
            uuid="ds", partitions=parts, table_name="table", partition_keys=("p",), extra={}
        ),
        SCHEMA,
    )
    header = fold(
        base,
        [
            RemovePartitions(frozenset({"p=1/a", "p=1/c"})),
            AddPartitions({"p=1/n1": "k1", "p=1/n2": "k2", "p=3/e": "k3"}),
            SetSchema(SCHEMA),
            PlacePartitions({"p=1/n1": "p=1/c", "p=1/n2": "p=1/c"}),
        ],
        now="2026-01-01T00:00:00+00:00",
    )
    # n1, n2 replace a and c at c's place: before d (committed later), after b
    assert list(header.partitions) == ["p=2/b", "p=1/n1", "p=1/n2", "p=1/d", "p=3/e"]
