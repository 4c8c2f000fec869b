"""In-process tests of the command line's parsers (conditions, options, JSON values)."""

from __future__ import annotations

import datetime as dt
import json

import numpy as np
import pandas as pd
import pytest
from cli_helpers import WHERE_TYPES

import kartoframe as kf
from kartoframe.cli._common import (
    BadInput,
    exit_code_for,
    json_value,
    parse_storage_options,
)
from kartoframe.cli._targets import expand_columns, parse_where, split_list
from kartoframe.cli.app import _hoist_group_options
from kartoframe.plan.conditions import C

TYPES = WHERE_TYPES


def test_where_is_typed_by_the_columns() -> None:
    got = parse_where(
        ["units > 4 and day >= 2024-01-02", "flag == true & price <= 1.5", "country = DE"],
        TYPES,
    )
    assert got == [
        C("units") > 4,
        C("day") >= dt.date(2024, 1, 2),
        C("flag") == True,  # noqa: E712
        C("price") <= 1.5,
        C("country") == "DE",
    ]


def test_where_in_lists_and_quotes() -> None:
    got = parse_where(["country in (DE, 'FR, north', \"IT\")", "units IN (1,2)"], TYPES)
    assert got == [C("country").isin(["DE", "FR, north", "IT"]), C("units").isin([1, 2])]
    # "and" inside quotes does not split
    assert parse_where(["country == 'rock and roll'"], TYPES) == [C("country") == "rock and roll"]


@pytest.mark.parametrize(
    "text",
    ["units > many", "colour == red", "units >", "units in ()", "units in (1,,2)", "and"],
)
def test_where_errors_are_bad_input(text) -> None:
    with pytest.raises((kf.InvalidInputError, BadInput)) as info:
        parse_where([text], TYPES)
    assert exit_code_for(info.value) == 2


def test_columns() -> None:
    assert split_list(" a, b,,c ") == ["a", "b", "c"]
    assert split_list(None) is None
    available = ["price_eur", "price_usd", "units"]
    assert expand_columns(["units", "price_*"], available) == ["units", "price_eur", "price_usd"]
    assert expand_columns(["missing"], available) == ["missing"]  # reported by the library
    with pytest.raises(BadInput):
        expand_columns(["x*"], available)


def test_storage_options() -> None:
    opts = parse_storage_options(
        ("anon=true", 'client_kwargs={"endpoint_url": "http://h:1"}', "key=abc", "n=3"),
        '{"secret": "s", "anon": false}',
    )
    assert opts == {
        "secret": "s",
        "anon": True,
        "client_kwargs": {"endpoint_url": "http://h:1"},
        "key": "abc",
        "n": 3,
    }
    with pytest.raises(BadInput):
        parse_storage_options(("novalue",), None)
    with pytest.raises(BadInput):
        parse_storage_options((), "[1]")


def test_group_options_move_before_the_store_url() -> None:
    assert _hoist_group_options(["s3://b", "--storage-option", "a=1", "--json", "ls", "-l"]) == [
        "--storage-option",
        "a=1",
        "--json",
        "s3://b",
        "ls",
        "-l",
    ]
    unchanged = ["--debug", "./x", "query", "s", "--json", "--where", "--json"]
    assert _hoist_group_options(unchanged) == unchanged
    assert _hoist_group_options(["--help"]) == ["--help"]


def test_json_values() -> None:
    values = [
        pd.NaT,
        pd.NA,
        np.nan,
        float("inf"),
        np.int64(3),
        np.array([1, 2]),
        b"\x00\x01",
        b"ab",
        dt.date(2020, 1, 1),
        pd.Timestamp("2020-01-01 10:00", tz="UTC"),
        {"a": np.float32(1.5)},
        {2, 1},
    ]
    got = json_value(values)
    json.dumps(got)
    assert got == [
        None,
        None,
        None,
        None,
        3,
        [1, 2],
        "base64:AAE=",
        "ab",
        "2020-01-01",
        "2020-01-01T10:00:00+00:00",
        {"a": 1.5},
        [1, 2],
    ]


def test_exit_codes_of_library_errors() -> None:
    assert exit_code_for(kf.DatasetNotFoundError("x")) == 3
    assert exit_code_for(kf.DatasetExistsError("x")) == 4
    assert exit_code_for(kf.CommitConflictError("x")) == 4
    assert exit_code_for(kf.ColumnNotFoundError("x")) == 2
    assert exit_code_for(kf.SchemaError("x")) == 2
    assert exit_code_for(kf.StorageError("x")) == 1
    assert exit_code_for(kf.CorruptMetadataError("x")) == 1
