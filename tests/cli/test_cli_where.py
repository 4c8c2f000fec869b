"""The ``--where`` language: DNF predicates of the dataset API, typed values, clear errors."""

from __future__ import annotations

import datetime as dt
import json

import pandas as pd
import pyarrow as pa
import pytest
from cli_helpers import WHERE_TYPES

import kartoframe as kf
from kartoframe.cli import main
from kartoframe.cli._common import EXIT_BAD_INPUT, BadInput
from kartoframe.cli._where import GRAMMAR, parse_predicates, to_cube_conditions
from kartoframe.plan.conditions import C

TYPES = {
    **WHERE_TYPES,
    "ts": pa.timestamp("us", tz="Europe/Berlin"),
    "naive": pa.timestamp("ns"),
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("units == None", [[("units", "==", None)]]),
        ("units == null", [[("units", "==", None)]]),
        ("units is null", [[("units", "==", None)]]),
        ("units IS NOT NULL", [[("units", "!=", None)]]),
        ("units != NULL", [[("units", "!=", None)]]),
        ("country == 'null'", [[("country", "==", "null")]]),  # quoted: the string
        ("units > 3 or units < 1", [[("units", ">", 3)], [("units", "<", 1)]]),
        ("units > 3 || units < 1", [[("units", ">", 3)], [("units", "<", 1)]]),
        ("country not in (DE, 'FR')", [[("country", "not in", ["DE", "FR"])]]),
        ("units in (1, null)", [[("units", "in", [1, None])]]),
        ("units is distinct from 3", [[("units", "is distinct from", 3)]]),
        ("units is not distinct from 3", [[("units", "==", 3)]]),
        ("units is distinct from null", [[("units", "!=", None)]]),
        ("units <> 2", [[("units", "!=", 2)]]),
        ("country = New York", [[("country", "==", "New York")]]),
        ("country == 'it''s'", [[("country", "==", "it's")]]),
        (
            "flag == true and (units > 3 or price <= 1.5)",
            [
                [("flag", "==", True), ("units", ">", 3)],
                [("flag", "==", True), ("price", "<=", 1.5)],
            ],
        ),
        (
            "units == 1 or units == 2 and day >= 2024-01-02",
            [[("units", "==", 1)], [("units", "==", 2), ("day", ">=", dt.date(2024, 1, 2))]],
        ),
        ("(units == 1)", [[("units", "==", 1)]]),
    ],
)
def test_where_texts_become_dnf_predicates(text, expected) -> None:
    assert parse_predicates([text], TYPES) == expected


def test_several_where_options_are_anded() -> None:
    got = parse_predicates(["units > 3 or units < 1", "flag == false"], TYPES)
    assert got == [
        [("units", ">", 3), ("flag", "==", False)],
        [("units", "<", 1), ("flag", "==", False)],
    ]
    assert parse_predicates([], TYPES) is None


def test_timestamps_follow_the_column_time_zone() -> None:
    [[(_, _, naive_literal)]] = parse_predicates(["ts >= 2024-01-03"], TYPES)
    assert naive_literal == pd.Timestamp("2024-01-03", tz="Europe/Berlin")
    [[(_, _, offset)]] = parse_predicates(["ts < '2024-01-03T00:00:00+00:00'"], TYPES)
    assert offset == pd.Timestamp("2024-01-03 01:00", tz="Europe/Berlin")
    [[(_, _, spaced)]] = parse_predicates(["naive == 2024-01-03 10:30"], TYPES)
    assert spaced == pd.Timestamp("2024-01-03 10:30")
    with pytest.raises(BadInput, match="without a time zone"):
        parse_predicates(["naive == 2024-01-03T10:30+01:00"], TYPES)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("units > 3 or", ["found the end", "CONDITION  :="]),
        ("units >", ["expected a value", "CONDITION  :="]),
        ("units in ()", ["expected a value", "CONDITION  :="]),
        ("units in (1,,2)", ["expected a value"]),
        ("and", ["expected a column name"]),
        ("", ["empty"]),
        ("units is maybe", ["'null', 'not null' or 'distinct from'"]),
        ("country == 'open", ["never closed"]),
        ("units 3", ["expected an operator"]),
        ("(units > 3", ["expected ')'"]),
        ("units > 3 units < 4", ["expected 'and', 'or' or the end"]),
    ],
)
def test_parse_errors_show_the_grammar(text, words) -> None:
    with pytest.raises(BadInput) as info:
        parse_predicates([text], TYPES)
    message = str(info.value)
    for word in words:
        assert word in message, message
    assert GRAMMAR in message


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("units > many", ["'many'", "int64", "units"]),
        ("colour == red", ['"colour"', "columns: country"]),
        ("units > null", ["is null"]),
        ("units == 1.5", ["'1.5'", "int64"]),
        ("day >= yesterday", ["date32"]),
    ],
)
def test_value_and_column_errors(text, words) -> None:
    with pytest.raises(BadInput) as info:
        parse_predicates([text], TYPES)
    for word in words:
        assert word in str(info.value), str(info.value)


def test_cube_conditions_take_one_group_without_nulls() -> None:
    preds = parse_predicates(["country in (DE, FR) and units >= 2"], TYPES)
    assert to_cube_conditions(preds) == [C("country").isin(["DE", "FR"]), C("units") >= 2]
    for text, word in [
        ("units > 3 or units < 1", "no 'or'"),
        ("units is null", "null"),
        ("country not in (DE)", "'not in'"),
        ("units is distinct from 2", "'is distinct from'"),
    ]:
        with pytest.raises(BadInput, match=word):
            to_cube_conditions(parse_predicates([text], TYPES))


@pytest.fixture(scope="module")
def nulls_store(tmp_path_factory) -> str:
    root = str(tmp_path_factory.mktemp("where") / "store")
    df = pd.DataFrame(
        {
            "a": pd.array([1, 2, 3, None, 5], dtype="Int64"),
            "name": ["x", "y", None, "z", "x"],
            "ts": pd.to_datetime(
                ["2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04", "2024-01-05"]
            ).tz_localize("Europe/Berlin"),
        }
    )
    kf.store_dataframes_as_dataset(store=root, dataset_uuid="t", dfs=[df.iloc[:2], df.iloc[2:]])
    return root


@pytest.mark.parametrize(
    ("where", "expected_a"),
    [
        (["a == None"], [None]),
        (["a is not null", "a > 3 or a < 2"], [1, 5]),
        (["a > 3 or a < 2"], [1, 5]),
        (["name not in (x, z)"], [2]),
        (["name is distinct from x"], [2, 3, None]),
        (["ts >= 2024-01-04 and ts < 2024-01-05"], [None]),
        (["(a == 1 or a == 3) and name is null"], [3]),
    ],
)
def test_query_rows(nulls_store, capsys, where, expected_a) -> None:
    args = [nulls_store, "query", "t", "--json"]
    for w in where:
        args += ["--where", w]
    assert main(args) == 0, capsys.readouterr().err
    rows = json.loads(capsys.readouterr().out)
    assert [r["a"] for r in rows] == expected_a


def test_query_parse_error_is_bad_input_with_the_grammar(nulls_store, capsys) -> None:
    assert main([nulls_store, "query", "t", "--where", "a > 3 or"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "Cannot parse --where 'a > 3 or'" in err and "COMPARISON :=" in err
    assert main([nulls_store, "query", "t", "--where", "ts > soon"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "'soon'" in err and "timestamp[" in err and "Timestamp(" not in err
