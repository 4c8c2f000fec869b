"""Format fidelity: what plateau (and kartoframe) wrote reads back with the same dtypes.

Integers never silently become floats, implicit datasets whose schema has ``null``
columns read, ``CsvSerializer`` datasets read and write, and ``categoricals=`` keeps the
declared categories and their order.
"""

from __future__ import annotations

import pandas as pd
import pytest

import kartoframe as kf

plateau = pytest.importorskip("plateau.api.dataset")

pytestmark = [
    pytest.mark.interop,
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]

BIG = 2**60 + 1  # not representable as float64


def _ints(values: pd.Series) -> list[int | None]:
    return [None if pd.isna(v) else int(v) for v in values]


# -- integers with nulls -------------------------------------------------------------------
def test_plateau_nullable_integers_stay_integers(tmp_path) -> None:
    url = str(tmp_path / "store")
    df = pd.DataFrame(
        {
            "p": [1, 1, 2, 2],
            "x": pd.array([1, None, BIG, -BIG], dtype="Int64"),
            "u": pd.array([None, 7, 8, 9], dtype="UInt8"),
        }
    )
    plateau.store_dataframes_as_dataset(
        store=f"hfs://{url}", dataset_uuid="ds", dfs=[df], partition_on=["p"]
    )
    theirs = plateau.read_table("ds", f"hfs://{url}")
    ours = kf.read_table("ds", url)
    assert ours["x"].dtype == theirs["x"].dtype == pd.Int64Dtype()
    assert _ints(ours["x"]) == _ints(theirs["x"]) == [1, None, BIG, -BIG]
    assert str(ours["u"].dtype) == "UInt64"  # Kartothek's type system stores uint64
    assert _ints(ours["u"]) == [None, 7, 8, 9]
    # one partition at a time, too
    frames = kf.read_dataset_as_dataframes("ds", url)
    assert [_ints(f["x"]) for f in frames] == [[1, None], [BIG, -BIG]]
    assert str(frames[0]["x"].dtype) == "Int64"


def test_pyarrow_integers_with_nulls_stay_integers(tmp_path) -> None:
    url = str(tmp_path / "store")
    df = pd.DataFrame({"p": [1, 1, 2], "y": pd.array([1, None, 2**31 - 1], dtype="int32[pyarrow]")})
    kf.store_dataframes_as_dataset(url, "ds", [df], partition_on=["p"])
    ours = kf.read_table("ds", url)
    theirs = plateau.read_table("ds", f"hfs://{url}")
    assert str(ours["y"].dtype) == str(theirs["y"].dtype) == "int64[pyarrow]"
    assert _ints(ours["y"]) == [1, None, 2**31 - 1]


def test_added_integer_column_is_nullable_in_old_files(tmp_path) -> None:
    """Files written before a column was added hold nulls for it: still integers."""
    url = str(tmp_path / "store")
    kf.store_dataframes_as_dataset(
        url, "ds", [pd.DataFrame({"p": [1], "a": [1]})], partition_on=["p"]
    )
    more = pd.DataFrame({"p": [2], "a": [2], "b": [BIG]})
    kf.update_dataset_from_dataframes([more], url, "ds", schema_evolution="add_columns")
    got = kf.read_table("ds", url).sort_values("p")
    assert got["b"].dtype == pd.Int64Dtype()
    assert _ints(got["b"]) == [None, BIG]
    assert got["a"].dtype == "int64"  # no nulls: the numpy dtype, as stored


# -- implicit datasets (header without partitions) ----------------------------------------
@pytest.mark.parametrize("writer", ["plateau", "kartoframe"])
def test_implicit_dataset_with_null_schema_columns(tmp_path, writer: str) -> None:
    """The schema comes from an empty frame (its object column is typed ``null``); the
    files written later by ``write_single_partition`` hold strings; nothing committed."""
    url = str(tmp_path / "store")
    empty = pd.DataFrame(
        {"p": pd.Series([], dtype="int64"), "q": pd.Series([], dtype=object), "x": []}
    )
    df = pd.DataFrame({"p": [1, 1, 2], "q": ["a", None, "c"], "x": [1.0, 2.0, 3.0]})
    if writer == "plateau":
        from plateau.io.eager import create_empty_dataset_header, write_single_partition

        store = f"hfs://{url}"
        schema = plateau.make_meta(empty, origin="empty")
        create_empty_dataset_header(store, "ds", schema=schema, partition_on=["p"])
        write_single_partition(store, "ds", data=df, partition_on=["p"])
    else:
        kf.create_empty_dataset_header(url, "ds", schema=empty, partition_on=["p"])
        kf.write_single_partition(url, "ds", data=df, partition_on=["p"])
    assert not kf.read_dataset_metadata("ds", url).explicit_partitions
    got = kf.read_table("ds", url).sort_values("x", ignore_index=True)
    assert got["q"].tolist()[::2] == ["a", "c"] and pd.isna(got["q"][1])
    assert kf.read_dataset_metadata("ds", url).schema.field("q").type == "string"
    assert len(kf.read_table("ds", url, predicates=[[("q", "==", "c")]])) == 1
    if writer == "plateau":
        theirs = plateau.read_table("ds", f"hfs://{url}").sort_values("x", ignore_index=True)
        assert theirs["q"].tolist()[::2] == got["q"].tolist()[::2]
    # the first commit makes the dataset explicit and stores the completed schema
    kf.update_dataset_from_dataframes([df.assign(p=3)], url, "ds")
    md = kf.read_dataset_metadata("ds", url)
    assert md.explicit_partitions and md.schema.field("q").type == "string"
    assert kf.read_table("ds", url)["q"].dropna().tolist() == ["a", "c", "a", "c"]
    assert len(plateau.read_table("ds", f"hfs://{url}")) == 6


# -- categoricals ---------------------------------------------------------------------------
@pytest.mark.parametrize("writer", ["plateau", "kartoframe"])
def test_categoricals_keep_the_declared_categories(tmp_path, writer: str) -> None:
    url = str(tmp_path / "store")
    declared = ["c", "b", "a", "z"]  # not sorted, "z" unused
    df = pd.DataFrame(
        {
            "p": [1, 1, 2, 2],
            "c": pd.Categorical(["b", "a", "c", "b"], categories=declared, ordered=True),
            "s": ["y", "x", "y", "w"],
        }
    )
    if writer == "plateau":
        plateau.store_dataframes_as_dataset(
            store=f"hfs://{url}", dataset_uuid="ds", dfs=[df], partition_on=["p"]
        )
    else:
        kf.store_dataframes_as_dataset(url, "ds", [df], partition_on=["p"])
    cats = ["c", "s"]
    theirs = plateau.read_table("ds", f"hfs://{url}", categoricals=cats)
    ours = kf.read_table("ds", url, categoricals=cats)
    assert list(ours["c"].cat.categories) == list(theirs["c"].cat.categories) == declared
    assert ours["c"].cat.ordered == theirs["c"].cat.ordered  # (plateau: unordered)
    # a column stored without dictionary has no declared categories: the same set
    assert set(ours["s"].cat.categories) == set(theirs["s"].cat.categories)
    assert ours["c"].tolist() == df["c"].tolist()
    frames = kf.read_dataset_as_dataframes("ds", url, categoricals=["c"])
    theirs_frames = plateau.read_dataset_as_dataframes("ds", f"hfs://{url}", categoricals=["c"])
    assert [list(f["c"].cat.categories) for f in frames] == [declared, declared]
    assert [list(f["c"].cat.categories) for f in theirs_frames] == [declared, declared]
    # predicates on the column still apply
    sel = kf.read_table("ds", url, categoricals=["c"], predicates=[[("c", "in", ["b", "z"])]])
    assert sel["c"].tolist() == ["b", "b"] and list(sel["c"].cat.categories) == declared
