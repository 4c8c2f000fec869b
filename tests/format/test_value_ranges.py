"""Value ranges prove a row filter for every row only from exact, complete statistics."""

from __future__ import annotations

import datetime as dt

import pytest

from kartoframe.format.value_ranges import ValueRange, range_holds, ranges_hold

D1, D2, D3 = dt.date(2024, 1, 1), dt.date(2024, 1, 2), dt.date(2024, 1, 3)


@pytest.mark.parametrize(
    ("r", "stats", "holds"),
    [
        (ValueRange("a", 3, 3), (3, 3, 0), True),
        (ValueRange("a", 3, 3), (3, 4, 0), False),
        (ValueRange("a", 3, 3), (3, 3, 1), False),  # a null row fails ==
        (ValueRange("a", 3, 3), (3, 3, None), False),  # unknown null count
        (ValueRange("a", 3, 3), (None, None, 0), False),  # no min/max
        (ValueRange("a", low=2), (2, 9, 0), True),
        (ValueRange("a", low=2, low_inclusive=False), (2, 9, 0), False),
        (ValueRange("a", low=2, low_inclusive=False), (3, 9, 0), True),
        (ValueRange("a", high=9), (2, 9, 0), True),
        (ValueRange("a", high=9, high_inclusive=False), (2, 9, 0), False),
        (ValueRange("a", high=9, high_inclusive=False), (2, 8, 0), True),
        (ValueRange("a", low=D2), (D2, D3, 0), True),
        (ValueRange("a", low=D2), (D1, D3, 0), False),
        (ValueRange("a", 3, 3), (3.0, 3.0, 0), False),  # another kind of value
        (ValueRange("a", 3, 3), (True, True, 0), False),  # bool is not int here
        (ValueRange("a", 3, 3), ("3", "3", 0), False),
        (ValueRange("a", low=2), (5, 4, 0), False),  # min > max: not trusted
        (ValueRange("s", "x", "x", exact=True), ("x", "x", 0), True),
        (ValueRange("s", "x", "x", exact=True), ("x", "y", 0), False),
        (ValueRange("s", "x", "x", exact=True), (b"x", b"x", 0), False),
    ],
)
def test_range_holds(r: ValueRange, stats: tuple, holds: bool) -> None:
    assert range_holds(r, *stats) is holds


def test_ranges_hold_needs_one_conjunction_proven_in_every_row_group() -> None:
    a3 = ValueRange("a", 3, 3)
    b_pos = ValueRange("b", low=0, low_inclusive=False)
    groups = [{"a": (3, 3, 0), "b": (1, 5, 0)}, {"a": (3, 3, 0), "b": (0, 5, 0)}]
    assert ranges_hold([[a3]], {}, groups)
    assert not ranges_hold([[a3, b_pos]], {}, groups)  # b == 0 in the second group
    assert ranges_hold([[a3, b_pos], [a3]], {}, groups)  # OR: the second conjunction
    assert not ranges_hold([[ValueRange("c", 1, 1)]], {}, groups)  # no statistics of c
    assert not ranges_hold([], {}, groups)  # nothing to prove with
    assert ranges_hold([[a3]], {}, [])  # no row group: no row


def test_partition_values_prove_their_column() -> None:
    groups = [{"a": (3, 3, 0)}]
    p_k1 = ValueRange("p", "k1", "k1", exact=True)
    assert ranges_hold([[p_k1, ValueRange("a", 3, 3)]], {"p": "k1"}, groups)
    assert not ranges_hold([[p_k1]], {"p": "k2"}, groups)
    assert not ranges_hold([[ValueRange("q", low=0)]], {"q": None}, groups)  # null value
    assert ranges_hold([[ValueRange("q", low=D1)]], {"q": D2}, groups)
    assert not ranges_hold([[ValueRange("q", low=1)]], {"q": "2"}, groups)
