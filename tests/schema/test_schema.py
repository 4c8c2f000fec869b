"""Schema from metadata, datasets defined before data, and recorded schema evolution."""

from __future__ import annotations

import datetime as dt
import decimal

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import kartoframe as kf
from kartoframe.api.read import plan_read

plateau = pytest.importorskip("plateau.api.dataset")


def frame(n: int = 4, start: int = 0) -> pd.DataFrame:
    x = np.arange(start, start + n)
    return pd.DataFrame({"p": x % 2, "a": x, "b": [f"b{v}" for v in x]})


def test_read_dataset_schema_from_metadata_only(store) -> None:
    df = pd.DataFrame(
        {
            "day": [dt.date(2024, 1, 1), dt.date(2024, 1, 2)],
            "flag": [True, False],
            "at": pd.to_datetime(["2024-01-01 10:00", "2024-01-01 11:00"])
            .tz_localize("Europe/Berlin")
            .as_unit("ns"),
            "n": np.array([1, 2], dtype="int8"),
            "s": ["x", "y"],
        }
    )
    kf.store_dataframes_as_dataset(
        store=store, dataset_uuid="ds", dfs=[df], partition_on=["day", "flag"]
    )
    keys = list(kf.read_dataset_metadata("ds", store).partitions.values())
    store.delete_many(keys)  # no data file is needed
    schema = kf.read_dataset_schema("ds", store)
    assert schema.names == ["day", "flag", "at", "n", "s"]
    assert schema.field("day").type == pa.date32()
    assert schema.field("flag").type == pa.bool_()
    assert schema.field("at").type == pa.timestamp("us", tz="Europe/Berlin")  # µs on disk
    assert schema.field("n").type == pa.int64()
    with pytest.raises(kf.DatasetNotFoundError):
        kf.read_dataset_schema("nope", store)


@pytest.mark.parametrize("as_frame", [False, True])
def test_empty_dataset_defines_the_schema(store, as_frame: bool) -> None:
    schema = pa.schema(
        [
            ("p", pa.int64()),
            ("a", pa.int64()),
            ("b", pa.string()),
            ("t", pa.timestamp("us", tz="UTC")),
        ]
    )
    example = pd.DataFrame(
        {
            "p": [1],
            "a": [2],
            "b": ["x"],
            "t": pd.to_datetime(["2024-01-01"]).tz_localize("UTC").as_unit("us"),
        }
    )
    kf.create_empty_dataset_header(
        store, "ds", schema=example if as_frame else schema, partition_on=["p"]
    )
    got = kf.read_dataset_schema("ds", store)
    assert [(f.name, f.type) for f in got] == [(f.name, f.type) for f in schema]
    assert [e.change for e in kf.schema_history("ds", store)] == ["create"]
    before = sorted(store.iter_keys("ds/"))
    with pytest.raises(kf.SchemaError, match="'a'"):
        kf.update_dataset_from_dataframes(
            [example.assign(a="not an int")], store=store, dataset_uuid="ds"
        )
    with pytest.raises(kf.SchemaError, match="'t'"):
        kf.update_dataset_from_dataframes(
            [example.drop(columns="t")], store=store, dataset_uuid="ds"
        )
    assert sorted(store.iter_keys("ds/")) == before  # refused before any file is written
    kf.update_dataset_from_dataframes([example], store=store, dataset_uuid="ds")
    assert kf.read_table("ds", store)["a"].tolist() == [2]
    assert kf.dataset_statistics("ds", store)["has_statistics"].all()


def test_add_columns_needs_opt_in_and_is_recorded(store) -> None:
    kf.store_dataframes_as_dataset(
        store=store, dataset_uuid="ds", dfs=[frame()], partition_on=["p"], secondary_indices=["b"]
    )
    wider = frame(4, 10).assign(
        c=np.arange(4, dtype="int32"),
        d=pd.array(["u", None, "w", "x"], dtype="str"),
        e=pd.date_range("2024-01-01", periods=4, tz="Asia/Tokyo").as_unit("us"),
    )
    before = sorted(store.iter_keys("ds/"))
    with pytest.raises(kf.SchemaError, match="not in reference"):
        kf.update_dataset_from_dataframes([wider], store=store, dataset_uuid="ds")
    assert sorted(store.iter_keys("ds/")) == before
    kf.update_dataset_from_dataframes(
        [wider], store=store, dataset_uuid="ds", schema_evolution="add_columns"
    )
    schema = kf.read_dataset_schema("ds", store)
    assert schema.names == ["p", "a", "b", "c", "d", "e"]
    assert schema.field("e").type == pa.timestamp("us", tz="Asia/Tokyo")
    got = kf.read_table("ds", store).sort_values("a").reset_index(drop=True)
    old, new = got[got.a < 10], got[got.a >= 10]
    assert old[["c", "d", "e"]].isna().all().all()  # typed nulls for older files
    assert new["c"].tolist() == [0, 1, 2, 3]
    assert str(got["e"].dtype) == "datetime64[us, Asia/Tokyo]"
    assert new["d"].tolist()[::2] == ["u", "w"]
    events = kf.schema_history("ds", store)
    assert [(e.version, e.change) for e in events] == [(1, "create"), (2, "add_columns")]
    assert events[1].added == {"c": "int64", "d": "string", "e": "timestamp[us, tz=Asia/Tokyo]"}
    # predicates on the new column: older files have no statistics for it (kept)
    pred = [[("c", "==", None)]]
    assert sorted(kf.read_table("ds", store, predicates=pred)["a"]) == [0, 1, 2, 3]
    plan, _ = plan_read("ds", store, predicates=[[("c", ">", 2)]])
    st = kf.dataset_statistics("ds", store)
    assert st.loc[st["a.min"] < 10, "c.min"].isna().all()
    assert plan.stats.after_statistics == 3  # 2 old files (unknown) + the one with c=3
    assert kf.read_table("ds", store, predicates=[[("c", ">", 2)]])["a"].tolist() == [13]
    # an index built before the evolution is maintained
    assert kf.read_table("ds", store, predicates=[[("b", "==", "b11")]])["c"].tolist() == [1]


@pytest.mark.interop
def test_plateau_reads_after_evolution(tmp_path) -> None:
    url = f"{tmp_path}/store"
    kf.store_dataframes_as_dataset(store=url, dataset_uuid="ds", dfs=[frame()], partition_on=["p"])
    kf.update_dataset_from_dataframes(
        [frame(4, 10).assign(c=np.arange(4.0))],
        store=url,
        dataset_uuid="ds",
        schema_evolution="add_columns",
    )
    got = plateau.read_table("ds", f"hfs://{url}").sort_values("a").reset_index(drop=True)
    assert got["a"].tolist() == [0, 1, 2, 3, 10, 11, 12, 13]
    assert got["c"].isna().tolist() == [True] * 4 + [False] * 4
    sel = plateau.read_table("ds", f"hfs://{url}", columns=["a"], predicates=[[("a", ">", 11)]])
    assert sorted(sel["a"].tolist()) == [12, 13]
    # documented plateau limitation: it cannot project an added column from older files
    with pytest.raises(ValueError, match="Columns cannot be found"):
        plateau.read_table("ds", f"hfs://{url}", columns=["a", "c"])


def test_incompatible_changes_are_refused_with_a_diff(store) -> None:
    kf.store_dataframes_as_dataset(
        store=store, dataset_uuid="ds", dfs=[frame().assign(u=np.arange(4, dtype="uint64"))]
    )
    base = frame().assign(u=np.arange(4, dtype="uint64"))
    cases = [
        (base.assign(a=base.a.astype(str)), "'a': int64 in the stored schema, string"),
        (base.drop(columns="b"), "dropping a column"),
        (base.assign(u=np.arange(4, dtype="int64")), "signed/unsigned"),
    ]
    for df, message in cases:
        with pytest.raises(kf.SchemaError, match=message) as info:
            kf.update_dataset_from_dataframes(
                [df.assign(extra=1)], store=store, dataset_uuid="ds", schema_evolution="add_columns"
            )
        assert "schema_evolution='add_columns'" in str(info.value)
    with pytest.raises(kf.InvalidInputError, match="schema_evolution"):
        kf.update_dataset_from_dataframes(
            [base], store=store, dataset_uuid="ds", schema_evolution="anything"
        )
    assert len(kf.schema_history("ds", store)) == 1


def test_decimal_widening(store) -> None:
    def dec(values: list[str], precision: int) -> pd.DataFrame:
        arr = pa.array([decimal.Decimal(v) for v in values], pa.decimal128(precision, 2))
        return pd.DataFrame(
            {"k": range(len(values)), "v": pd.Series(arr, dtype=pd.ArrowDtype(arr.type))}
        )

    kf.store_dataframes_as_dataset(store=store, dataset_uuid="ds", dfs=[dec(["1.25"], 5)])
    with pytest.raises(kf.SchemaError):
        kf.update_dataset_from_dataframes(
            [dec(["12345678.90"], 10)], store=store, dataset_uuid="ds"
        )
    kf.update_dataset_from_dataframes(
        [dec(["12345678.90"], 10)], store=store, dataset_uuid="ds", schema_evolution="add_columns"
    )
    assert kf.read_dataset_schema("ds", store).field("v").type == pa.decimal128(10, 2)
    # narrower data fits the widened column without another change
    kf.update_dataset_from_dataframes(
        [dec(["2.50"], 4)], store=store, dataset_uuid="ds", schema_evolution="add_columns"
    )
    events = kf.schema_history("ds", store)
    assert [e.change for e in events] == ["create", "add_columns"]
    assert events[1].widened == {"v": ("decimal128(5, 2)", "decimal128(10, 2)")}
    got = kf.read_table("ds", store, predicates=[[("v", ">", decimal.Decimal("2.00"))]])
    assert sorted(str(v) for v in got["v"]) == ["12345678.90", "2.50"]


def test_new_datasets_may_add_columns_across_frames(store) -> None:
    frames = [frame(2), frame(2, 2).assign(c=[1.5, 2.5])]
    with pytest.raises(kf.SchemaError):
        kf.store_dataframes_as_dataset(store=store, dataset_uuid="ds", dfs=frames)
    kf.store_dataframes_as_dataset(
        store=store, dataset_uuid="ds", dfs=frames, schema_evolution="add_columns"
    )
    got = kf.read_table("ds", store).sort_values("a")
    assert got["c"].isna().tolist() == [True, True, False, False]
    # one update whose frames add a column only in some of them
    kf.update_dataset_from_dataframes(
        [frame(1, 10).assign(c=0.5), frame(1, 11).assign(c=1.0, z="new")],
        store=store,
        dataset_uuid="ds",
        schema_evolution="add_columns",
    )
    assert kf.read_table("ds", store, predicates=[[("z", "==", "new")]])["a"].tolist() == [11]
    assert [e.version for e in kf.schema_history("ds", store)] == [1, 2]
