"""The header fold is pure: changes are values, folded into the header without any I/O."""

from __future__ import annotations

import inspect

import pandas as pd
import pyarrow as pa
import pytest

import kartoframe as kf
from kartoframe.execution.write import commit_write, write_chunk
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.fold import (
    AddPartitions,
    CreateDataset,
    RemovePartitions,
    SetExplicitPartitions,
    SetIndices,
    SetMetadata,
    SetSchema,
    SetStatistics,
    fold,
    recorded_schema,
)
from kartoframe.format.header import kartoframe_section
from kartoframe.format.schema import SchemaChange
from kartoframe.format.statistics import StatisticsRef
from kartoframe.plan.commit_plan import (
    CommitShape,
    header_changes,
    index_tables,
    plan_commit,
    statistics_step,
)
from kartoframe.plan.write import ChunkResult, WrittenPartition
from kartoframe.storage.resolve import load_dataset, statistics_ref

SCHEMA = pa.schema([("p", pa.int64()), ("v", pa.int64())])
NOW = "2026-01-01T00:00:00+00:00"


def test_the_pure_pieces_take_no_store() -> None:
    for fn in (fold, plan_commit, index_tables, statistics_step, header_changes):
        params = inspect.signature(fn).parameters
        assert "store" not in params and "st" not in params, fn.__name__


def created() -> LoadedDataset:
    header = fold(
        None,
        [
            CreateDataset("ds", "table", ("p",), "json"),
            AddPartitions({"p=1/a": "ds/table/p=1/a.parquet", "p=2/b": "ds/table/p=2/b.parquet"}),
            SetIndices({}),
            SetSchema(SCHEMA),
            SetMetadata({"owner": "me"}),
        ],
        now=NOW,
    )
    return LoadedDataset(header, SCHEMA)


def test_a_sequence_of_changes() -> None:
    first = created().metadata
    assert first.partition_keys == ("p",) and first.explicit_partitions
    assert dict(first.metadata) == {"creation_time": NOW, "owner": "me"}
    section = kartoframe_section(first)
    assert section["schema_version"] == 1
    assert [e["change"] for e in section["schema_history"]] == ["create"]
    assert recorded_schema(section) == SCHEMA

    wider = SCHEMA.append(pa.field("w", pa.float64()))
    later = "2026-02-01T00:00:00+00:00"
    ref = StatisticsRef("ds/_kartoframe/statistics/x.parquet", partitions=2)
    second = fold(
        created(),
        [
            RemovePartitions(frozenset({"p=1/a", "p=9/unknown"})),
            AddPartitions({"p=3/c": "ds/table/p=3/c.parquet"}),
            SetIndices({"v": "ds/indices/v/x.by-dataset-index.parquet"}),
            SetSchema(wider, SchemaChange(added=(("w", pa.float64()),))),
            SetMetadata({"creation_time": "ignored", "owner": "you"}),
            SetStatistics(ref),
        ],
        now=later,
    )
    assert dict(second.partitions) == {
        "p=2/b": "ds/table/p=2/b.parquet",
        "p=3/c": "ds/table/p=3/c.parquet",
    }
    assert dict(second.indices) == {"v": "ds/indices/v/x.by-dataset-index.parquet"}
    assert dict(second.metadata) == {"creation_time": NOW, "owner": "you"}
    section = kartoframe_section(second)
    assert section["schema_version"] == 2
    assert section["schema_history"][-1]["added"] == {"w": "double"}
    assert statistics_ref(second) == ref
    third = fold(
        LoadedDataset(second, wider),
        [SetSchema(wider), SetStatistics(None), SetExplicitPartitions(False)],
        now=later,
    )
    assert "statistics" not in kartoframe_section(third)
    assert not third.explicit_partitions
    assert dict(third.partitions) == dict(second.partitions)


def test_conflicts_and_missing_pieces() -> None:
    with pytest.raises(kf.CommitConflictError):
        fold(created(), [AddPartitions({"p=1/a": "k"}), SetSchema(SCHEMA)], now=NOW)
    with pytest.raises(kf.InvalidInputError):
        fold(None, [SetSchema(SCHEMA)], now=NOW)
    with pytest.raises(kf.InvalidInputError):
        fold(created(), [SetMetadata({})], now=NOW)


def test_plan_commit_validates_without_io() -> None:
    part = WrittenPartition("p=3/c", "ds/table/p=3/c.parquet", 1, 10, {})
    chunk = ChunkResult((part,), SCHEMA, "frame")
    with pytest.raises(kf.InvalidInputError, match="Incompatible set of partition keys"):
        plan_commit("ds", [chunk], created(), CommitShape(partition_on=("v",)))
    with pytest.raises(kf.InvalidInputError, match="not indexed yet"):
        plan_commit("ds", [chunk], created(), CommitShape(secondary_indices=("v",)))
    dup = WrittenPartition("p=1/a", "ds/table/p=1/a.parquet", 1, 10, {})
    with pytest.raises(kf.CommitConflictError):
        plan_commit("ds", [ChunkResult((dup,), SCHEMA, "frame")], created(), CommitShape())
    plan = plan_commit("ds", [chunk], created(), CommitShape(remove_labels=frozenset({"p=1/a"})))
    assert set(plan.partitions) == {"p=2/b", "p=3/c"} and plan.removed == {"p=1/a"}
    assert not plan.schema_changed and plan.load_indices == ()


def test_the_fold_rebuilds_the_committed_header(memory_store: kf.Store) -> None:
    """commit_write's header is the fold of the planned changes (side-file keys as written)."""
    df = pd.DataFrame({"p": [1, 1, 2], "v": [1, 2, 3]})
    chunk = write_chunk(memory_store, "ds", df, partition_on=["p"], index_columns=["v"])
    shape = CommitShape(partition_on=("p",), secondary_indices=("v",), metadata={"a": 1})
    commit_write(
        memory_store,
        "ds",
        [chunk],
        base=None,
        partition_on=["p"],
        secondary_indices=["v"],
        metadata={"a": 1},
        expect_absent=True,
    )
    committed = load_dataset(memory_store, "ds").metadata
    plan = plan_commit("ds", [chunk], None, shape)
    now = committed.metadata["creation_time"]
    again = fold(None, header_changes(plan, committed.indices, statistics_ref(committed)), now=now)
    for field in ("partitions", "indices", "metadata", "partition_keys", "table_name"):
        assert getattr(again, field) == getattr(committed, field), field
    mine, theirs = kartoframe_section(again), kartoframe_section(committed)
    for key in ("schema", "schema_version", "statistics"):
        assert mine[key] == theirs[key], key
