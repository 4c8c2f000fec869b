"""The write front's rules as a pure function: a request resolved against a base, no store."""

from __future__ import annotations

import inspect

import pyarrow as pa
import pytest

import kartoframe as kf
from kartoframe.format.commit_args import CommitOptions
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.header import DatasetHeader
from kartoframe.plan.write_request import WriteRequest, resolve_metadata, resolve_write

SCHEMA = pa.schema([("p", pa.int64()), ("k", pa.int64()), ("v", pa.string())])


def base(fmt: str = "msgpack", table: str = "table") -> LoadedDataset:
    header = DatasetHeader(
        uuid="ds",
        partitions={"p=1/a": "ds/table/p=1/a.parquet"},
        table_name=table,
        partition_keys=("p",),
        indices={"k": "ds/indices/k/x.by-dataset-index.parquet"},
        storage_format=fmt,  # type: ignore[arg-type]
    )
    return LoadedDataset(header, SCHEMA)


def test_resolve_takes_no_store() -> None:
    assert list(inspect.signature(resolve_write).parameters) == ["request", "base", "exists"]


def test_store_refuses_an_existing_dataset_unless_overwrite() -> None:
    request = WriteRequest("ds", "store", ("p",), ("k",))
    with pytest.raises(kf.DatasetExistsError):
        resolve_write(request, None, exists=True)
    target = resolve_write(request, None, exists=False)
    assert (target.base, target.partition_on, target.index_columns) == (None, ["p"], ["k"])
    assert target.expect_absent and not target.create_or_update
    over = resolve_write(WriteRequest("ds", "store", overwrite=True), base(), exists=True)
    assert over.base is None and not over.expect_absent, "an overwrite has no base"


def test_update_takes_the_layout_of_the_dataset() -> None:
    target = resolve_write(
        WriteRequest("ds", "update", None, ("v",), storage_format="json"), base()
    )
    assert target.partition_on == ["p"]
    assert target.table_name == "table"
    assert target.storage_format == "msgpack", "an existing dataset keeps its format"
    assert target.secondary_indices == ["v"]
    assert target.index_columns == ["k", "v"], "every existing index is maintained"
    assert not target.expect_absent and target.create_or_update


def test_update_of_a_missing_dataset_creates_it() -> None:
    target = resolve_write(WriteRequest("ds", "update", ("p",), ("k", "k")), None)
    assert target.partition_on == ["p"] and target.index_columns == ["k"]
    assert target.expect_absent and target.create_or_update


@pytest.mark.parametrize("verb", ["update", "append"])
def test_incompatible_partition_keys(verb: str) -> None:
    with pytest.raises(kf.InvalidInputError, match="Incompatible set of partition keys"):
        resolve_write(WriteRequest("ds", verb, ("k",)), base())  # type: ignore[arg-type]


def test_table_name_must_match() -> None:
    with pytest.raises(kf.InvalidInputError, match="differs from the dataset's table"):
        resolve_write(WriteRequest("ds", "update", table_name="other"), base(table="mine"))
    target = resolve_write(WriteRequest("ds", "update"), base(table="mine"))
    assert target.table_name == "mine"


def test_append_writes_the_listed_indices_and_requested_ones() -> None:
    target = resolve_write(WriteRequest("ds", "append", None, ("v",), ""), base(table="mine"))
    assert (target.table_name, target.index_columns) == ("mine", ["k", "v"])


def test_commit_options_are_one_value() -> None:
    commit = CommitOptions.of("job", 3, {"run": 1})
    request = WriteRequest("ds", "store", commit=commit)
    assert resolve_write(request, None).request.commit == commit
    with pytest.raises(kf.InvalidInputError):
        CommitOptions.of("job", None)
    assert not commit.recorded_in(None)


def test_metadata_is_resolved_without_io() -> None:
    assert resolve_metadata(None, {"a": 1}) is None
    assert resolve_metadata(lambda old: {**old, "b": 2}, {"a": 1}) == {"a": 1, "b": 2}
    with pytest.raises(kf.InvalidTypeError):
        resolve_metadata({1: "x"}, {})  # type: ignore[dict-item]
