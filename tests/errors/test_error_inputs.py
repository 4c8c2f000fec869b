"""Bad input: one test per error case of the foundation issue (section 6).

Each test checks the exact error class, that it is also the builtin a Python user would
catch (``FileNotFoundError``, ``FileExistsError``, ``ValueError``, ``TypeError``), that
it is a ``KartoframeError``, that the message names the dataset / column / key, and that
nothing was written.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest
from error_helpers import check

import kartoframe as kf
from kartoframe.format import naming


def _df(n: int = 4) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "p": [i % 2 for i in range(n)],
            "v": list(range(n)),
            "s": [f"s{i}" for i in range(n)],
            "f": [i / 2 for i in range(n)],
            "d": [dt.date(2020, 1, 1 + i) for i in range(n)],
            "b": [i % 3 == 0 for i in range(n)],
        }
    )


@pytest.fixture
def dataset(store: kf.Store) -> tuple[kf.Store, bytes, pd.DataFrame, list[str]]:
    """A dataset ``ds`` (partitioned on p, indexed on v): (store, header, content, keys)."""
    kf.store_dataframes_as_dataset(
        store, "ds", [_df()], partition_on=["p"], secondary_indices=["v"]
    )
    return (
        store,
        store.get(naming.header_key("ds", "json")),
        kf.read_table("ds", store),
        list(store.iter_keys()),
    )


def assert_unchanged(dataset: tuple[kf.Store, bytes, pd.DataFrame, list[str]]) -> None:
    store, header, content, keys = dataset
    assert store.get(naming.header_key("ds", "json")) == header
    pd.testing.assert_frame_equal(kf.read_table("ds", store), content)
    assert list(store.iter_keys()) == keys


# -- missing dataset ---------------------------------------------------------------------
MISSING_CALLS: dict[str, Callable[[kf.Store], Any]] = {
    "read_table": lambda s: kf.read_table("nope", s),
    "read_dataset_as_dataframes": lambda s: kf.read_dataset_as_dataframes("nope", s),
    "read_iterator": lambda s: list(kf.read_dataset_as_dataframes__iterator("nope", s)),
    "read_dataset_metadata": lambda s: kf.read_dataset_metadata("nope", s),
    "delete_dataset": lambda s: kf.delete_dataset("nope", s),
    "garbage_collect_dataset": lambda s: kf.garbage_collect_dataset("nope", s),
    "build_dataset_indices": lambda s: kf.build_dataset_indices(s, "nope", ["v"]),
    "commit_dataset": lambda s: kf.commit_dataset(s, "nope", metadata={"a": 1}),
    "write_single_partition": lambda s: kf.write_single_partition(s, "nope", _df()),
}


@pytest.mark.parametrize("call", MISSING_CALLS.values(), ids=MISSING_CALLS.keys())
def test_missing_dataset(store: kf.Store, call: Callable[[kf.Store], Any]) -> None:
    with pytest.raises(kf.DatasetNotFoundError) as info:
        call(store)
    check(info, kf.DatasetNotFoundError, FileNotFoundError, "'nope'", "does not exist")
    assert info.value.dataset_uuid == "nope"
    assert list(store.iter_keys()) == []


# -- existing dataset without overwrite ------------------------------------------------------
EXISTING_CALLS: dict[str, Callable[[kf.Store], Any]] = {
    "store_dataframes_as_dataset": lambda s: kf.store_dataframes_as_dataset(s, "ds", [_df(2)]),
    "store_dataframes_as_dataset__iter": lambda s: kf.store_dataframes_as_dataset__iter(
        iter([_df(2)]), s, "ds"
    ),
    "create_empty_dataset_header": lambda s: kf.create_empty_dataset_header(s, "ds", _df(0)),
}


@pytest.mark.parametrize("call", EXISTING_CALLS.values(), ids=EXISTING_CALLS.keys())
def test_existing_dataset_without_overwrite(dataset: Any, call: Callable[[kf.Store], Any]) -> None:
    with pytest.raises(kf.DatasetExistsError) as info:
        call(dataset[0])
    check(info, kf.DatasetExistsError, FileExistsError, "'ds'", "overwrite")
    assert_unchanged(dataset)


# -- invalid uuid ------------------------------------------------------------------------------
BAD_UUIDS = ["a/b", "../x", "x.y", "", "a b", "ü", "a\x00b", "a\\b", "ds.by-dataset-metadata"]
UUID_CALLS: dict[str, Callable[[kf.Store, str], Any]] = {
    "read_table": lambda s, u: kf.read_table(u, s),
    "store": lambda s, u: kf.store_dataframes_as_dataset(s, u, [_df()]),
    "update": lambda s, u: kf.update_dataset_from_dataframes([_df()], store=s, dataset_uuid=u),
    "delete": lambda s, u: kf.delete_dataset(u, s),
    "gc": lambda s, u: kf.garbage_collect_dataset(u, s),
}


@pytest.mark.parametrize("bad", BAD_UUIDS, ids=repr)
@pytest.mark.parametrize("call", UUID_CALLS.values(), ids=UUID_CALLS.keys())
def test_invalid_uuid(store: kf.Store, call: Callable[[kf.Store, str], Any], bad: str) -> None:
    with pytest.raises(kf.InvalidUUIDError) as info:
        call(store, bad)
    check(info, kf.InvalidUUIDError, ValueError, repr(bad))
    assert list(store.iter_keys()) == []


def test_invalid_table_name(store: kf.Store) -> None:
    with pytest.raises(kf.InvalidUUIDError) as info:
        kf.store_dataframes_as_dataset(store, "ds", [_df()], table_name="../t")
    check(info, kf.InvalidUUIDError, ValueError, "'../t'", "table_name")
    assert list(store.iter_keys()) == []


# -- schema conflict ---------------------------------------------------------------------------
def test_schema_conflict_between_frames(store: kf.Store) -> None:
    frames = [_df(), _df().assign(v=lambda d: d["v"].astype(str))]
    with pytest.raises(kf.SchemaError) as info:
        kf.store_dataframes_as_dataset(store, "ds", frames, partition_on=["p"])
    check(info, kf.SchemaError, ValueError, "'ds'", "column 'v'", "input frame 1")
    assert list(store.iter_keys()) == []


def test_schema_conflict_with_the_stored_schema(dataset: Any) -> None:
    with pytest.raises(kf.SchemaError) as info:
        kf.update_dataset_from_dataframes(
            [_df().assign(f=lambda d: d["f"].astype(str))], store=dataset[0], dataset_uuid="ds"
        )
    check(info, kf.SchemaError, ValueError, "'ds'", "column 'f'", "stored schema")
    assert_unchanged(dataset)


# -- nulls in partition_on ---------------------------------------------------------------------
@pytest.mark.parametrize("values", [[1.0, None, 2.0], ["a", None, "b"], [pd.NaT] * 3], ids=repr)
def test_nulls_in_partition_column(store: kf.Store, values: list[Any]) -> None:
    df = pd.DataFrame({"part": values, "v": [1, 2, 3]})
    with pytest.raises(kf.NullPartitionValueError) as info:
        kf.store_dataframes_as_dataset(store, "ds", [df], partition_on=["part"])
    check(info, kf.NullPartitionValueError, ValueError, "'part'", "null")
    assert list(store.iter_keys()) == []


def test_nulls_in_partition_column_on_update(dataset: Any) -> None:
    df = _df().assign(p=pd.array([0, None, 0, 1], dtype="Int64"))  # same type, with a null
    with pytest.raises(kf.NullPartitionValueError) as info:
        kf.update_dataset_from_dataframes([df], store=dataset[0], dataset_uuid="ds")
    check(info, kf.NullPartitionValueError, ValueError, "'p'")
    assert_unchanged(dataset)


# -- unknown columns -----------------------------------------------------------------------------
def test_unknown_column_in_columns(dataset: Any) -> None:
    with pytest.raises(kf.ColumnNotFoundError) as info:
        kf.read_table("ds", dataset[0], columns=["v", "nope"])
    check(info, kf.ColumnNotFoundError, ValueError, "'nope'")


@pytest.mark.parametrize(
    "predicates", [[[("nope", "==", 1)]], [[("v", "==", 1)], [("p", "==", 0), ("nope", ">", 2)]]]
)
def test_unknown_column_in_predicates(dataset: Any, predicates: Any) -> None:
    with pytest.raises(kf.ColumnNotFoundError) as info:
        kf.read_table("ds", dataset[0], predicates=predicates)
    check(info, kf.ColumnNotFoundError, ValueError, "'nope'")


@pytest.mark.parametrize("argument", ["partition_on", "secondary_indices"])
def test_unknown_column_in_write_arguments(store: kf.Store, argument: str) -> None:
    with pytest.raises(kf.ColumnNotFoundError) as info:
        kf.store_dataframes_as_dataset(store, "ds", [_df()], **{argument: ["nope"]})
    check(info, kf.ColumnNotFoundError, ValueError, "'nope'", argument)
    assert list(store.iter_keys()) == []


# -- wrong literal types -----------------------------------------------------------------------
@pytest.mark.parametrize(
    "column,op,value",
    [
        ("v", "==", "a"),
        ("p", "==", "0"),  # partition key: pruning must not coerce either
        ("s", "<", 3),
        ("f", ">=", "1.5"),
        ("d", "==", 20200101),
        ("b", "==", "yes"),
        ("v", "in", [1, "a"]),
    ],
)
def test_wrong_literal_type(dataset: Any, column: str, op: str, value: Any) -> None:
    with pytest.raises(kf.InvalidTypeError) as info:
        kf.read_table("ds", dataset[0], predicates=[[(column, op, value)]])
    check(info, kf.InvalidTypeError, TypeError, f"column {column!r}")


# -- wrong argument types ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "call,fragment",
    [
        (lambda s: kf.store_dataframes_as_dataset(s, "new", _df()), "dfs"),
        (lambda s: kf.store_dataframes_as_dataset(s, "new", [_df()], metadata=5), "metadata"),
        (
            lambda s: kf.store_dataframes_as_dataset(s, "new", [_df()], partition_on=5),
            "partition_on",
        ),
        (lambda s: kf.store_dataframes_as_dataset(s, "new", [{"v": 1}]), "DataFrame"),
        (lambda s: kf.read_table("ds", 5), "store"),
        (lambda s: kf.read_table("ds", lambda: 5), "store factory"),
        (lambda s: kf.read_table("ds", s, predicates=[[("v", "==", 1)]], columns=[1]), "columns"),
    ],
    ids=["dfs", "metadata", "partition_on", "frame", "store", "factory", "columns"],
)
def test_wrong_argument_type(dataset: Any, call: Callable[[kf.Store], Any], fragment: str) -> None:
    with pytest.raises(kf.InvalidTypeError) as info:
        call(dataset[0])
    check(info, kf.InvalidTypeError, TypeError, fragment)
    assert_unchanged(dataset)


# -- empty input -------------------------------------------------------------------------------
EMPTY_CALLS: dict[str, Callable[[kf.Store], Any]] = {
    "store []": lambda s: kf.store_dataframes_as_dataset(s, "ds", []),
    "store__iter empty": lambda s: kf.store_dataframes_as_dataset__iter(iter([]), s, "ds"),
    "store__iter Nones": lambda s: kf.store_dataframes_as_dataset__iter(iter([None]), s, "ds"),
    "update [] (new dataset)": lambda s: kf.update_dataset_from_dataframes([], s, "ds"),
    "commit nothing": lambda s: kf.commit_dataset(s, "ds"),
}


@pytest.mark.parametrize("call", EMPTY_CALLS.values(), ids=EMPTY_CALLS.keys())
def test_empty_input(store: kf.Store, call: Callable[[kf.Store], Any]) -> None:
    with pytest.raises(kf.EmptyInputError) as info:
        call(store)
    check(info, kf.EmptyInputError, ValueError)
    assert list(store.iter_keys()) == []


def test_empty_update_of_an_existing_dataset(dataset: Any) -> None:
    with pytest.raises(kf.EmptyInputError) as info:
        kf.update_dataset_from_dataframes([], store=dataset[0], dataset_uuid="ds")
    check(info, kf.EmptyInputError, ValueError, "Nothing to update")
    assert_unchanged(dataset)
