"""``rows_of``: the statistics row describing each file of a read, found in Arrow."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from kartoframe.format.statistics_rows import rows_of


def _stats(labels: list[str], keys: list[str | None]) -> pa.Table:
    return pa.table({"label": pa.array(labels, pa.string()), "key": pa.array(keys, pa.string())})


def test_rows_are_found_by_label_and_checked_by_key() -> None:
    stats = _stats(["a", "b", "c"], ["ka", "kb", None])
    assert rows_of(stats, ["c", "b", "x", "a", "b"], ["kc", "kb", "kx", "ka", "old"]) == [
        None,  # the row has no key
        1,
        None,  # not described
        0,
        None,  # described for another data file
    ]
    assert rows_of(stats, [], []) == []
    assert rows_of(stats.slice(0, 0), ["a"], ["ka"]) == [None]
    chunked = pa.concat_tables([stats.slice(0, 1), stats.slice(1)])
    assert rows_of(chunked, ["b", "a"], ["kb", "ka"]) == [1, 0]


NAMES = st.text(alphabet="abcü/=", min_size=1, max_size=4)


@given(
    described=st.dictionaries(NAMES, NAMES, max_size=12),
    files=st.lists(st.tuples(NAMES, NAMES), max_size=12),
)
def test_equals_a_lookup_in_python(described: dict[str, str], files: list[tuple[str, str]]) -> None:
    stats = _stats(list(described), list(described.values()))
    row = {lb: i for i, lb in enumerate(described)}
    expected = [row[lb] if lb in described and described[lb] == key else None for lb, key in files]
    assert rows_of(stats, [lb for lb, _ in files], [k for _, k in files]) == expected
