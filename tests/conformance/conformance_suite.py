"""The engine-agnostic conformance suite, written once as abstract test classes.

Each ``*Suite`` class uses an ``engine`` fixture (a :class:`conformance_engines.Engine`) and
the ``store`` fixture (a local folder and ``memory://``); the read-only suites use
``ref_store``, which holds the reference datasets written once per session. Binding modules
(``test_conformance_<engine>.py``) subclass them and provide ``engine``. Class names do not
start with ``Test``, so this module is not collected on its own.

Reads are checked against pandas computed on the input frames; writes are checked by reading
back with the eager reader (the reference implementation inside kartoframe) and by looking at
the stored metadata.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import pandas as pd
import pytest

import kartoframe as kf
from kartoframe.format import naming

# --------------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------------


def sales(n: int = 12, offset: int = 0) -> pd.DataFrame:
    """Partition key ``country``, index ``product``, payload with nulls in ``note``/``price``."""
    i = np.arange(offset, offset + n)
    return pd.DataFrame(
        {
            "country": np.array(["DE", "FR", "IT"])[i % 3],
            "product": (i % 4).astype("int64"),
            "units": i.astype("int64"),
            "price": np.where(i % 5 == 0, np.nan, i * 1.5),
            "note": pd.array([None if j % 4 == 1 else f"n{j % 3}" for j in i], dtype="str"),
            "day": [dt.date(2024, 1, 1 + int(j % 28)) for j in i],
        }
    )


def all_types() -> pd.DataFrame:
    """One column per supported kind, nulls included."""
    return pd.DataFrame(
        {
            "s": pd.array(["a", None, "c"], dtype="str"),
            "sp": pd.array(["a", None, "c"], dtype="string"),
            "i8": np.array([1, 2, 3], dtype="int8"),
            "i": pd.array([1, None, 3], dtype="Int64"),
            "u": np.array([1, 2, 3], dtype="uint32"),
            "b": pd.array([True, None, False], dtype="boolean"),
            "bb": [True, False, True],
            "f": [1.0, np.nan, 3.0],
            "f32": np.array([1.5, 2.5, np.nan], dtype="float32"),
            "ns": pd.to_datetime(["2020-01-01", None, "2020-01-03"]).as_unit("ns"),
            "tz": pd.to_datetime(["2020-01-01", None, "2020-01-03"]).tz_localize("Asia/Tokyo"),
            "d": [dt.date(2020, 1, 1), None, dt.date(2020, 1, 3)],
            "bytes": [b"x", None, b"\x00\xff"],
            "l": [[1, 2], None, []],
        }
    )


def all_types_read_back() -> pd.DataFrame:
    """:func:`all_types` as read: narrow numbers widen to the Kartothek types."""
    return all_types().astype({"i8": "int64", "u": "uint64", "f32": "float64"})


def header_bytes(store: kf.Store, uuid: str) -> bytes | None:
    for fmt in ("json", "msgpack"):
        data = store.get_or_none(naming.header_key(uuid, fmt))
        if data is not None:
            return data
    return None


def data_keys(store: kf.Store, uuid: str) -> list[str]:
    return sorted(k for k in store.iter_keys(uuid + "/") if k.endswith(".parquet"))


def canonical(df: pd.DataFrame, by: str = "units") -> pd.DataFrame:
    return df.sort_values(by, kind="stable").reset_index(drop=True)


def assert_same_rows(got: pd.DataFrame, expected: pd.DataFrame, by: str = "units") -> None:
    """Same rows and dtypes, ignoring row order (file order is engine-independent anyway)."""
    pd.testing.assert_frame_equal(
        canonical(got[list(expected.columns)], by), canonical(expected, by)
    )


def reference_frames() -> list[pd.DataFrame]:
    """The three chunks of the reference dataset ``ds``."""
    return [sales(12), sales(12, offset=12), sales(6, offset=24)]


def write_reference(store: kf.Store, uuid: str = "ds", **kw: Any) -> list[pd.DataFrame]:
    """Write :func:`reference_frames` with the eager writer; return the chunks."""
    dfs = reference_frames()
    options: dict[str, Any] = {"partition_on": ["country"], "secondary_indices": ["product"]}
    options.update(kw)
    kf.store_dataframes_as_dataset(store=store, dataset_uuid=uuid, dfs=dfs, **options)
    return dfs


def stored_columns(df: pd.DataFrame, partition_on: list[str]) -> list[str]:
    """Column order of a read: partition keys first, then the rest alphabetically."""
    return list(partition_on) + sorted(c for c in df.columns if c not in partition_on)


# --------------------------------------------------------------------------------------------
# reads
# --------------------------------------------------------------------------------------------


class ReadSuite:
    """Reading datasets written by the eager writer."""

    def test_full_read(self, engine, ref_store) -> None:
        dfs = reference_frames()
        got = engine.read_table("ds", ref_store)
        expected = pd.concat(dfs, ignore_index=True)
        assert list(got.columns) == stored_columns(expected, ["country"])
        assert_same_rows(got, expected)

    def test_all_types_round_trip(self, engine, ref_store) -> None:
        df = all_types()
        got = engine.read_table("types", ref_store)
        pd.testing.assert_frame_equal(got[df.columns], all_types_read_back())

    def test_one_partition_per_file(self, engine, ref_store) -> None:
        frames = engine.read_partitions("ds", ref_store)
        files = kf.read_dataset_metadata("ds", ref_store).partitions
        assert len(frames) == len(files) == 9  # 3 chunks x 3 countries
        assert all(f["country"].nunique() == 1 for f in frames)
        assert sum(len(f) for f in frames) == 30

    def test_column_projection_keeps_requested_order(self, engine, ref_store) -> None:
        dfs = reference_frames()
        got = engine.read_table("ds", ref_store, columns=["units", "country", "note"])
        assert list(got.columns) == ["units", "country", "note"]
        assert_same_rows(got, pd.concat(dfs, ignore_index=True)[["units", "country", "note"]])

    def test_projection_of_partition_column_only(self, engine, ref_store) -> None:
        got = engine.read_table("ds", ref_store, columns=["country"])
        assert list(got.columns) == ["country"]
        assert got["country"].value_counts().to_dict() == {"DE": 10, "FR": 10, "IT": 10}

    def test_unknown_column_raises(self, engine, ref_store) -> None:
        with pytest.raises(kf.ColumnNotFoundError):
            engine.read_table("ds", ref_store, columns=["nope"])

    def test_missing_dataset_raises(self, engine, ref_store) -> None:
        with pytest.raises(kf.DatasetNotFoundError):
            engine.read_table("nope", ref_store)

    def test_categoricals(self, engine, ref_store) -> None:
        dfs = reference_frames()
        cats = ["country", "product", "note"]
        for frame in engine.read_partitions("ds", ref_store, categoricals=cats):
            for col in cats:
                assert isinstance(frame[col].dtype, pd.CategoricalDtype), col
        got = engine.read_table("ds", ref_store, categoricals=cats)
        expected = pd.concat(dfs, ignore_index=True)
        assert_same_rows(
            got.astype({"country": "str", "product": "int64", "note": "str"}), expected
        )

    def test_dates_as_object(self, engine, ref_store) -> None:
        as_object = engine.read_table("ds", ref_store, columns=["day"])
        assert isinstance(as_object["day"].iloc[0], dt.date)
        as_datetime = engine.read_table("ds", ref_store, columns=["day"], dates_as_object=False)
        assert as_datetime["day"].dtype.kind == "M"

    def test_pandas3_str_dtype_survives(self, engine, ref_store) -> None:
        got = engine.read_table("ds", ref_store, columns=["country", "note"])
        assert got["country"].dtype == pd.Series(["x"]).dtype
        assert got["note"].dtype == pd.Series(["x"]).dtype


# --------------------------------------------------------------------------------------------
# predicates
# --------------------------------------------------------------------------------------------

PREDICATE_CASES: list[tuple[str, Any, Any]] = [
    ("partition ==", [[("country", "==", "FR")]], lambda d: d["country"] == "FR"),
    (
        "partition in",
        [[("country", "in", ["FR", "IT"])]],
        lambda d: d["country"].isin(["FR", "IT"]),
    ),
    ("index ==", [[("product", "==", 2)]], lambda d: d["product"] == 2),
    ("index in", [[("product", "in", [0, 3])]], lambda d: d["product"].isin([0, 3])),
    ("row <", [[("units", "<", 7)]], lambda d: d["units"] < 7),
    (
        "and",
        [[("country", "==", "DE"), ("product", ">=", 1), ("units", "<=", 20)]],
        lambda d: (d["country"] == "DE") & (d["product"] >= 1) & (d["units"] <= 20),
    ),
    (
        "or",
        [[("country", "==", "DE"), ("product", "==", 0)], [("units", ">", 25)]],
        lambda d: ((d["country"] == "DE") & (d["product"] == 0)) | (d["units"] > 25),
    ),
    ("date", [[("day", ">=", dt.date(2024, 1, 20))]], lambda d: d["day"] >= dt.date(2024, 1, 20)),
    # null semantics (docs/predicates.md)
    ("== None", [[("note", "==", None)]], lambda d: d["note"].isna()),
    ("!= None", [[("note", "!=", None)]], lambda d: d["note"].notna()),
    (
        "!= value drops nulls",
        [[("note", "!=", "n0")]],
        lambda d: d["note"].notna() & (d["note"] != "n0"),
    ),
    ("float == NaN is null", [[("price", "==", np.nan)]], lambda d: d["price"].isna()),
    ("> drops NaN", [[("price", ">", 10.0)]], lambda d: d["price"] > 10.0),
    ("in without null", [[("note", "in", ["n1"])]], lambda d: d["note"] == "n1"),
    (
        "in with null",
        [[("note", "in", ["n1", None])]],
        lambda d: (d["note"] == "n1") | d["note"].isna(),
    ),
    ("not in", [[("note", "not in", ["n1"])]], lambda d: d["note"].notna() & (d["note"] != "n1")),
    (
        "is distinct from",
        [[("note", "is distinct from", "n1")]],
        lambda d: d["note"].isna() | (d["note"] != "n1"),
    ),
    ("in []", [[("product", "in", [])]], lambda d: d["product"] != d["product"]),
]


class PredicateSuite:
    """Predicates prune and filter identically on every engine, nulls included."""

    @pytest.mark.parametrize(
        ("predicates", "mask"),
        [pytest.param(p, m, id=name) for name, p, m in PREDICATE_CASES],
    )
    def test_predicates_match_pandas(self, engine, ref_store, predicates, mask) -> None:
        dfs = reference_frames()
        full = pd.concat(dfs, ignore_index=True)
        expected = full[mask(full).fillna(False).astype(bool)]
        got = engine.read_table("ds", ref_store, predicates=predicates)
        if expected.empty:
            assert len(got) == 0
            return
        assert sorted(got["units"]) == sorted(expected["units"])
        assert_same_rows(got, expected.reset_index(drop=True))

    def test_index_pruning_skips_files(self, engine, ref_store) -> None:
        frames = engine.read_partitions("ds", ref_store, predicates=[[("product", "==", 2)]])
        plain = engine.read_partitions("ds", ref_store)
        assert 0 < len(frames) < len(plain)
        assert all((f["product"] == 2).all() for f in frames)

    def test_empty_result_is_typed(self, engine, ref_store) -> None:
        got = engine.read_table("ds", ref_store, predicates=[[("country", "==", "XX")]])
        assert len(got) == 0
        frames = engine.read_partitions("ds", ref_store, predicates=[[("units", ">", 10_000)]])
        assert all(len(f) == 0 for f in frames)
        if engine.typed_empty:
            assert list(got.columns) == stored_columns(sales(), ["country"])
            assert got["units"].dtype == np.int64
            assert got["country"].dtype == pd.Series(["x"]).dtype

    def test_empty_result_with_projection(self, engine, ref_store) -> None:
        got = engine.read_table(
            "ds", ref_store, columns=["units"], predicates=[[("product", "==", 99)]]
        )
        assert len(got) == 0
        if engine.typed_empty:
            assert list(got.columns) == ["units"]

    def test_predicate_errors(self, engine, ref_store) -> None:
        with pytest.raises(kf.ColumnNotFoundError):
            engine.read_table("ds", ref_store, predicates=[[("nope", "==", 1)]])
        with pytest.raises(kf.InvalidTypeError):
            engine.read_table("ds", ref_store, predicates=[[("units", "==", "1")]])
        with pytest.raises(kf.InvalidPredicateError):
            engine.read_table("ds", ref_store, predicates=[[("units", "~", 1)]])
        with pytest.raises(kf.InvalidPredicateError):
            engine.read_table("ds", ref_store, predicates=[[("units", "<", None)]])


# --------------------------------------------------------------------------------------------
# dispatch
# --------------------------------------------------------------------------------------------


class DispatchSuite:
    """``dispatch_by``: one frame per distinct value combination of indexed columns."""

    def test_dispatch_by_partition_key(self, engine, ref_store) -> None:
        frames = engine.read_partitions("ds", ref_store, dispatch_by=["country"])
        assert [f["country"].unique().tolist() for f in frames] == [["DE"], ["FR"], ["IT"]]
        assert [len(f) for f in frames] == [10, 10, 10]

    def test_dispatch_by_secondary_index(self, engine, ref_store) -> None:
        dfs = reference_frames()
        frames = engine.read_partitions("ds", ref_store, dispatch_by=["product"])
        # dask keeps the (here empty) trailing partition of rows whose product is null
        frames = [f for f in frames if len(f)]
        assert [f["product"].unique().tolist() for f in frames] == [[0], [1], [2], [3]]
        full = pd.concat(dfs, ignore_index=True)
        assert [len(f) for f in frames] == full["product"].value_counts().sort_index().tolist()

    def test_dispatch_by_two_columns_with_predicate(self, engine, ref_store) -> None:
        dfs = reference_frames()
        frames = engine.read_partitions(
            "ds", ref_store, dispatch_by=["country", "product"], predicates=[[("units", ">=", 6)]]
        )
        full = pd.concat(dfs, ignore_index=True)
        full = full[full["units"] >= 6]
        groups = full.groupby(["country", "product"]).size()
        keys = [(f["country"].iloc[0], int(f["product"].iloc[0])) for f in frames if len(f)]
        assert keys == list(groups.index)
        assert [len(f) for f in frames if len(f)] == groups.tolist()

    def test_dispatch_by_nothing_is_one_frame(self, engine, ref_store) -> None:
        frames = engine.read_partitions("ds", ref_store, dispatch_by=[])
        assert len(frames) == 1 and len(frames[0]) == 30

    def test_dispatch_by_unindexed_column_raises(self, engine, ref_store) -> None:
        with pytest.raises(kf.InvalidInputError, match="must be indexed"):
            engine.read_partitions("ds", ref_store, dispatch_by=["units"])

    def test_dispatch_by_index_keeps_null_rows(self, engine, store) -> None:
        df = pd.DataFrame({"k": pd.array(["a", None, "b"], dtype="str"), "units": [1, 2, 3]})
        kf.store_dataframes_as_dataset(
            store=store, dataset_uuid="nulls", dfs=[df], secondary_indices=["k"]
        )
        frames = engine.read_partitions("nulls", store, dispatch_by=["k"])
        assert sum(len(f) for f in frames) == 3
        non_empty = [f for f in frames if len(f)]
        # one group per value, the null group last
        assert [f["k"].isna().all() for f in non_empty] == [False, False, True]


# --------------------------------------------------------------------------------------------
# writes
# --------------------------------------------------------------------------------------------


class WriteSuite:
    """Writing new datasets with the engine, checked with the eager reader."""

    def test_round_trip_with_partitions_and_index(self, engine, store) -> None:
        dfs = [sales(12), sales(12, offset=12)]
        engine.store(store, "w", dfs, partition_on=["country"], secondary_indices=["product"])
        md = kf.read_dataset_metadata("w", store)
        assert md.partition_keys == ["country"] and md.secondary_indices == ["product"]
        assert len(md.partitions) == 6  # one file per input frame and country
        assert_same_rows(kf.read_table("w", store), pd.concat(dfs, ignore_index=True))
        index = md.load_index("product")
        labels = {lb for lbs in index["partition"] for lb in lbs}
        assert labels == set(md.partitions)
        pruned = kf.read_table("w", store, predicates=[[("product", "==", 3)]])
        assert sorted(pruned["units"]) == [3, 7, 11, 15, 19, 23]

    def test_all_types_write_round_trip(self, engine, store) -> None:
        # (named apart from ReadSuite.test_all_types_round_trip, which shadowed it in the
        # bindings' method resolution order, so it never ran)
        df = all_types()
        engine.store(store, "types", [df])
        got = kf.read_table("types", store)
        pd.testing.assert_frame_equal(got[df.columns], all_types_read_back())

    def test_without_partition_on(self, engine, store) -> None:
        dfs = [sales(5), sales(5, offset=5)]
        engine.store(store, "plain", dfs)
        md = kf.read_dataset_metadata("plain", store)
        assert md.partition_keys == [] and len(md.partitions) == 2
        assert_same_rows(kf.read_table("plain", store), pd.concat(dfs, ignore_index=True))

    def test_metadata_format_table_and_sorting(self, engine, store) -> None:
        df = sales(12).sample(frac=1.0, random_state=1)
        engine.store(
            store,
            "opts",
            [df],
            metadata={"owner": "me"},
            metadata_storage_format="msgpack",
            table_name="facts",
            sort_partitions_by=["units"],
        )
        assert store.exists("opts.by-dataset-metadata.msgpack.zstd")
        md = kf.read_dataset_metadata("opts", store)
        assert md.table_name == "facts" and md.metadata["owner"] == "me"
        assert "creation_time" in md.metadata
        frames = kf.read_dataset_as_dataframes("opts", store)
        assert frames[0]["units"].is_monotonic_increasing

    def test_existing_dataset_needs_overwrite(self, engine, store) -> None:
        engine.store(store, "w", [sales(6)])
        with pytest.raises(kf.DatasetExistsError):
            engine.store(store, "w", [sales(3)])
        engine.store(store, "w", [sales(3, offset=100)], overwrite=True)
        assert sorted(kf.read_table("w", store)["units"]) == [100, 101, 102]

    def test_incompatible_chunks_write_nothing(self, engine, store) -> None:
        bad = sales(6).assign(units=[str(i) for i in range(6)])
        with pytest.raises(kf.SchemaError, match="units"):
            engine.store(store, "w", [sales(6), bad], partition_on=["country"])
        assert header_bytes(store, "w") is None
        assert data_keys(store, "w") == []

    def test_null_partition_value_writes_nothing(self, engine, store) -> None:
        df = sales(6).assign(country=pd.array(["DE", None] * 3, dtype="str"))
        with pytest.raises(kf.NullPartitionValueError):
            engine.store(store, "w", [sales(6), df], partition_on=["country"])
        assert header_bytes(store, "w") is None
        assert data_keys(store, "w") == []

    def test_invalid_columns(self, engine, store) -> None:
        with pytest.raises(kf.ColumnNotFoundError):
            engine.store(store, "w", [sales(3)], partition_on=["nope"])
        with pytest.raises(kf.InvalidInputError, match="partition columns"):
            engine.store(
                store, "w", [sales(3)], partition_on=["country"], secondary_indices=["country"]
            )
        assert header_bytes(store, "w") is None

    def test_frames_adding_columns_need_schema_evolution(self, engine, store) -> None:
        dfs = [sales(6), sales(6, offset=6).assign(extra=1.5)]
        with pytest.raises(kf.SchemaError, match="extra"):
            engine.store(store, "w", dfs, partition_on=["country"])
        assert header_bytes(store, "w") is None and data_keys(store, "w") == []
        engine.store(store, "w", dfs, partition_on=["country"], schema_evolution="add_columns")
        got = kf.read_table("w", store).sort_values("units")
        assert got["extra"].isna().tolist() == [True] * 6 + [False] * 6

    def test_empty_frames_give_an_empty_typed_dataset(self, engine, store) -> None:
        engine.store(store, "empty", [sales(6).iloc[:0]], partition_on=["country"])
        got = kf.read_table("empty", store)
        assert got.empty and list(got.columns) == stored_columns(sales(), ["country"])
        assert got["units"].dtype == np.int64


# --------------------------------------------------------------------------------------------
# updates and deletes
# --------------------------------------------------------------------------------------------


class UpdateSuite:
    """Updates: add, delete by scope, both at once; failures change nothing."""

    def test_add_partitions_maintains_index(self, engine, store) -> None:
        dfs = write_reference(store)
        new = sales(6, offset=100)
        engine.update(store, "ds", [new])
        assert_same_rows(kf.read_table("ds", store), pd.concat([*dfs, new], ignore_index=True))
        got = kf.read_table("ds", store, predicates=[[("product", "==", 0)]])
        everything = pd.concat([*dfs, new])
        assert sorted(got["units"]) == sorted(everything.loc[everything["product"] == 0, "units"])

    def test_delete_scope_only(self, engine, store) -> None:
        write_reference(store)
        engine.update(store, "ds", [], delete_scope=[{"country": "FR"}, {"country": "IT"}])
        got = kf.read_table("ds", store)
        assert set(got["country"]) == {"DE"} and len(got) == 10

    def test_delete_scope_on_secondary_index(self, engine, store) -> None:
        dfs = [sales(4), sales(4, offset=4)]
        kf.store_dataframes_as_dataset(
            store=store, dataset_uuid="ds", dfs=dfs, secondary_indices=["product"]
        )
        # product 3 appears in both files: both go
        engine.update(store, "ds", [], delete_scope=[{"product": 3}])
        assert kf.read_table("ds", store).empty

    def test_delete_and_add_in_one_commit(self, engine, store) -> None:
        write_reference(store)
        engine.update(
            store, "ds", [sales(3, offset=200)], delete_scope=[{"country": "DE"}], metadata={"n": 1}
        )
        got = kf.read_table("ds", store)
        assert sorted(got.loc[got["country"] == "DE", "units"]) == [201]
        assert len(got) == 23
        assert kf.read_dataset_metadata("ds", store).metadata["n"] == 1

    def test_update_creates_missing_dataset(self, engine, store) -> None:
        engine.update(store, "fresh", [sales(6)], partition_on=["country"])
        md = kf.read_dataset_metadata("fresh", store)
        assert md.partition_keys == ["country"]
        assert_same_rows(kf.read_table("fresh", store), sales(6))

    def test_incompatible_update_changes_nothing(self, engine, store) -> None:
        write_reference(store)
        before, keys = header_bytes(store, "ds"), data_keys(store, "ds")
        bad = sales(3).assign(price="x")
        with pytest.raises(kf.SchemaError, match="price"):
            engine.update(store, "ds", [sales(3, offset=50), bad])
        assert header_bytes(store, "ds") == before
        assert data_keys(store, "ds") == keys

    def test_partition_key_mismatch_raises(self, engine, store) -> None:
        write_reference(store)
        before = header_bytes(store, "ds")
        with pytest.raises(kf.InvalidInputError, match="partition keys"):
            engine.update(store, "ds", [sales(3)], partition_on=["product"])
        assert header_bytes(store, "ds") == before

    def test_delete_scope_on_unindexed_column_is_refused(self, engine, store) -> None:
        write_reference(store)
        before = header_bytes(store, "ds")
        with pytest.raises(kf.InvalidInputError, match="neither partition keys nor indexed"):
            engine.update(store, "ds", [], delete_scope=[{"units": 1}])
        assert header_bytes(store, "ds") == before

    def test_new_index_on_existing_data_is_refused(self, engine, store) -> None:
        write_reference(store)
        before = header_bytes(store, "ds")
        with pytest.raises(kf.InvalidInputError, match="not indexed yet"):
            engine.update(store, "ds", [sales(3)], secondary_indices=["units"])
        assert header_bytes(store, "ds") == before

    def test_update_adding_a_column_with_schema_evolution(self, engine, store) -> None:
        dfs = write_reference(store)
        new = sales(3, offset=300).assign(extra=pd.array([1, None, 3], dtype="Int64"))
        before = header_bytes(store, "ds")
        with pytest.raises(kf.SchemaError, match="extra"):
            engine.update(store, "ds", [new])
        assert header_bytes(store, "ds") == before
        engine.update(store, "ds", [new], schema_evolution="add_columns")
        got = kf.read_table("ds", store)
        assert len(got) == sum(len(d) for d in dfs) + 3
        added = got[got["units"] >= 300].sort_values("units")
        assert added["extra"].tolist() == [1, pd.NA, 3]
        assert got.loc[got["units"] < 300, "extra"].isna().all()
        with pytest.raises(kf.SchemaError):
            engine.update(
                store,
                "ds",
                [sales(3, offset=400).drop(columns=["note"]).assign(extra=1)],
                schema_evolution="add_columns",
            )

    def test_nothing_to_do_raises(self, engine, store) -> None:
        write_reference(store)
        with pytest.raises(kf.EmptyInputError):
            engine.update(store, "ds", [])


class DeleteSuite:
    """Deleting a dataset, then reading it through the engine."""

    def test_deleted_dataset_is_gone(self, engine, store) -> None:
        write_reference(store)
        write_reference(store, uuid="other")
        kf.delete_dataset("ds", store)
        with pytest.raises(kf.DatasetNotFoundError):
            engine.read_table("ds", store)
        assert list(store.iter_keys("ds/")) == []
        assert len(engine.read_table("other", store)) == 30

    def test_deleting_every_partition_leaves_an_empty_typed_dataset(self, engine, store) -> None:
        write_reference(store)
        engine.update(store, "ds", [], delete_scope=[{}])
        got = engine.read_table("ds", store)
        assert len(got) == 0
        if engine.typed_empty:
            assert list(got.columns) == stored_columns(sales(), ["country"])
