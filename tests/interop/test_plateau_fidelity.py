"""Format fidelity: what plateau (and kartoframe) wrote reads back with the same dtypes.

Integers never silently become floats, implicit datasets whose schema has ``null``
columns read, ``CsvSerializer`` datasets read and write, and ``categoricals=`` keeps the
declared categories and their order.
"""

from __future__ import annotations

import gzip

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


def test_declared_nullable_integers_stay_nullable_without_nulls(tmp_path) -> None:
    """The pandas metadata says Int64: every frame gets it, with or without nulls."""
    url = str(tmp_path / "store")
    df = pd.DataFrame({"p": [1, 2, 2], "x": pd.array([1, 2, None], dtype="Int64")})
    kf.store_dataframes_as_dataset(url, "ds", [df], partition_on=["p"])
    frames = kf.read_dataset_as_dataframes("ds", url)
    assert [str(f["x"].dtype) for f in frames] == ["Int64", "Int64"]
    assert str(kf.read_table("ds", url, predicates=[[("p", "==", 1)]])["x"].dtype) == "Int64"


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
@pytest.mark.parametrize("writer", ["plateau", "plateau-csv", "kartoframe"])
def test_implicit_dataset_with_null_schema_columns(tmp_path, writer: str) -> None:
    """The schema comes from an empty frame (its object column is typed ``null``); the
    files written later by ``write_single_partition`` hold strings; nothing committed."""
    url = str(tmp_path / "store")
    empty = pd.DataFrame(
        {"p": pd.Series([], dtype="int64"), "q": pd.Series([], dtype=object), "x": []}
    )
    df = pd.DataFrame({"p": [1, 1, 2], "q": ["a", None, "c"], "x": [1.0, 2.0, 3.0]})
    if writer.startswith("plateau"):
        from plateau.io.eager import create_empty_dataset_header, write_single_partition
        from plateau.serialization import CsvSerializer, ParquetSerializer

        store = f"hfs://{url}"
        schema = plateau.make_meta(empty, origin="empty")
        create_empty_dataset_header(store, "ds", schema=schema, partition_on=["p"])
        ser = CsvSerializer() if writer == "plateau-csv" else ParquetSerializer()
        write_single_partition(store, "ds", data=df, partition_on=["p"], df_serializer=ser)
    else:
        kf.create_empty_dataset_header(url, "ds", schema=empty, partition_on=["p"])
        kf.write_single_partition(url, "ds", data=df, partition_on=["p"])
    assert not kf.read_dataset_metadata("ds", url).explicit_partitions
    got = kf.read_table("ds", url).sort_values("x", ignore_index=True)
    assert got["q"].tolist()[::2] == ["a", "c"] and pd.isna(got["q"][1])
    assert kf.read_dataset_metadata("ds", url).schema.field("q").type == "string"
    assert len(kf.read_table("ds", url, predicates=[[("q", "==", "c")]])) == 1
    if writer == "plateau":  # (plateau's listing finds .parquet files only: not its CSV)
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


# -- CSV data files (CsvSerializer) ----------------------------------------------------------
def _csv_frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "p": [1, 1, 2],
            "q": ["a;b", 'x"y\nz', None],
            "x": [1.5, 2.0, None],
            "i": [1, 2, BIG],
            "t": pd.to_datetime(
                ["2020-01-01", "2020-01-02 03:04:05.5", "2021-01-01"], format="ISO8601"
            ).as_unit("us"),
            "b": [True, False, True],
        }
    )


@pytest.mark.parametrize("compress", [True, False])
def test_kartoframe_reads_plateau_csv_datasets(tmp_path, compress: bool) -> None:
    from plateau.serialization import CsvSerializer

    url = str(tmp_path / "store")
    df = _csv_frame()
    plateau.store_dataframes_as_dataset(
        store=f"hfs://{url}",
        dataset_uuid="ds",
        dfs=[df],
        partition_on=["p"],
        df_serializer=CsvSerializer(compress=compress),
        secondary_indices=["i"],
    )
    suffix = ".csv.gz" if compress else ".csv"
    assert all(k.endswith(suffix) for k in kf.read_dataset_metadata("ds", url).partitions.values())
    got = kf.read_table("ds", url)
    # typed by the dataset schema (plateau's own reader returns the timestamps as strings)
    pd.testing.assert_frame_equal(got[df.columns], df, check_dtype=False)
    assert got["t"].dtype.kind == "M" and got["i"].dtype == "int64"
    assert kf.read_table("ds", url, predicates=[[("i", "==", BIG)]])["p"].tolist() == [2]
    assert kf.read_table("ds", url, columns=["x"], predicates=[[("b", "==", False)]])[
        "x"
    ].tolist() == [2.0]
    assert len(kf.read_dataset_as_ddf("ds", url).compute(scheduler="sync")) == 3
    # check_dataset parses CSV files in place of Parquet footers (deep: the index's values)
    assert kf.check_dataset("ds", url, deep=True).findings == ()
    stats = kf.collect_dataset_metadata(url, "ds").compute()  # (plateau's fails on CSV)
    assert sorted(stats["number_rows_total"]) == [1, 2] and set(stats["number_row_groups"]) == {1}
    # a Parquet update: the dataset holds both formats, read in one go
    kf.update_dataset_from_dataframes([df.assign(p=3)], url, "ds")
    both = kf.read_table("ds", url)
    assert sorted(both["p"]) == [1, 1, 2, 3, 3, 3]
    assert both.loc[both["p"] == 3, "i"].tolist() == [1, 2, BIG]


@pytest.mark.parametrize("compress", [True, False])
def test_plateau_reads_kartoframe_csv_datasets(tmp_path, compress: bool) -> None:
    url = str(tmp_path / "store")
    df = _csv_frame()
    kf.store_dataframes_as_dataset(
        url, "ds", [df], partition_on=["p"], df_serializer=kf.CsvSerializer(compress=compress)
    )
    kf.update_dataset_from_dataframes(
        [df.assign(p=5)], url, "ds", df_serializer=kf.CsvSerializer(compress=compress)
    )
    suffix = ".csv.gz" if compress else ".csv"
    keys = kf.read_dataset_metadata("ds", url).partitions.values()
    assert len(keys) == 3 and all(k.endswith(suffix) for k in keys)
    theirs = plateau.read_table("ds", f"hfs://{url}").sort_values(["p", "x"], ignore_index=True)
    ours = kf.read_table("ds", url).sort_values(["p", "x"], ignore_index=True)
    for c in ["p", "x", "i", "b"]:
        pd.testing.assert_series_equal(theirs[c], ours[c], check_dtype=False)
    assert theirs["q"].dropna().tolist() == ours["q"].dropna().tolist() == ["a;b", 'x"y\nz'] * 2
    assert pd.to_datetime(theirs["t"], format="ISO8601").tolist() == ours["t"].tolist()
    assert kf.check_dataset("ds", url).findings == ()
    first = sorted(keys)[0]
    broken = b"x;i\n1.0;2;3\n"  # a row with more fields than the header
    kf.Store(url).put(first, gzip.compress(broken) if compress else broken)
    (finding,) = kf.check_dataset("ds", url).findings
    assert finding.kind == "data_file_unreadable" and "readable CSV file" in finding.message
    with pytest.raises(kf.CorruptDataError, match="cannot be read as CSV"):
        kf.read_table("ds", url)


def test_csv_serializer_arguments(tmp_path) -> None:
    url = str(tmp_path / "store")
    with pytest.raises(kf.InvalidTypeError, match="compress"):
        kf.CsvSerializer(compress="yes")  # type: ignore[arg-type]
    nested = pd.DataFrame({"p": [1], "l": [[1, 2]]})
    with pytest.raises(kf.SchemaError, match="CsvSerializer cannot store"):
        kf.store_dataframes_as_dataset(url, "ds", [nested], df_serializer=kf.CsvSerializer())
    assert not kf.Store(url).exists("ds.by-dataset-metadata.json")
    assert list(kf.Store(url).iter_keys()) == []  # nothing left behind
    from kartoframe.front.args import serializer_arg  # what the Spark writes check

    with pytest.raises(kf.InvalidInputError, match="Spark writes Parquet only"):
        serializer_arg(kf.CsvSerializer())


def test_dask_and_delayed_writes_take_the_csv_serializer(tmp_path) -> None:
    import dask
    import dask.dataframe as dd

    url = str(tmp_path / "store")
    df = _csv_frame()
    ddf = dd.from_pandas(df, npartitions=2)
    with dask.config.set(scheduler="sync"):
        kf.store_dataset_from_ddf(
            ddf, url, "ds", partition_on=["p"], df_serializer=kf.CsvSerializer()
        ).compute()
        kf.store_delayed_as_dataset(
            [dask.delayed(df.assign(p=7))], url, "ds2", df_serializer=kf.CsvSerializer()
        ).compute()
    for uuid in ("ds", "ds2"):
        keys = kf.read_dataset_metadata(uuid, url).partitions.values()
        assert keys and all(k.endswith(".csv.gz") for k in keys)
        got = kf.read_table(uuid, url).sort_values("x", ignore_index=True)
        assert got["i"].tolist() == [1, 2, BIG]
    assert len(plateau.read_table("ds", f"hfs://{url}")) == 3
