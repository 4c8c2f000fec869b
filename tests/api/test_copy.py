"""copy_dataset: within a store under a new name, and across stores."""

from __future__ import annotations

import pandas as pd
import pytest

import kartoframe as kf


def _write(store, uuid="DE", **kwargs) -> pd.DataFrame:
    df = pd.DataFrame(
        {"country": ["DE", "FR", "DE"], "product": [1, 2, 3], "units": [5.0, 7.0, 9.0]}
    )
    kf.store_dataframes_as_dataset(
        store=store,
        dataset_uuid=uuid,
        dfs=[df],
        partition_on=["country"],
        secondary_indices=["product"],
        **kwargs,
    )
    return df


def _keys(store, uuid) -> list[str]:
    md = kf.read_dataset_metadata(uuid, store)
    return [*md.partitions.values(), *md.indices.values()]


def test_rename_within_a_store_only_renames_the_leading_uuid(store) -> None:
    # the uuid "DE" is also a partition value: kartothek replaced it there too
    _write(store, "DE")
    result = kf.copy_dataset("DE", store, "sales")
    assert list(result) == ["sales"]
    keys = _keys(store, "sales")
    assert all(k.startswith("sales/") for k in keys)
    assert any("country=DE" in k for k in keys)
    for k in keys:
        assert store.exists(k)
    pd.testing.assert_frame_equal(kf.read_table("sales", store), kf.read_table("DE", store))
    # the index is usable on the copy, and the source is untouched
    got = kf.read_table("sales", store, predicates=[[("product", "==", 3)]])
    assert got["units"].tolist() == [9.0]
    assert kf.read_dataset_metadata("DE", store).secondary_indices == ["product"]


def test_copy_to_another_store_and_overwrite(tmp_path, memory_store) -> None:
    target = kf.Store(f"file://{tmp_path}/target")
    _write(memory_store, "sales", metadata_storage_format="msgpack", metadata={"a": 1})
    kf.copy_dataset("sales", memory_store, target_store=target)
    md = kf.read_dataset_metadata("sales", target)
    assert md.metadata_storage_format == "msgpack" and md.metadata["a"] == 1
    pd.testing.assert_frame_equal(
        kf.read_table("sales", target), kf.read_table("sales", memory_store)
    )
    with pytest.raises(kf.DatasetExistsError):
        kf.copy_dataset("sales", memory_store, target_store=target)
    kf.store_dataframes_as_dataset(
        store=memory_store,
        dataset_uuid="sales",
        dfs=[pd.DataFrame({"country": ["IT"], "product": [9], "units": [1.0]})],
        partition_on=["country"],
        overwrite=True,
    )
    kf.copy_dataset("sales", memory_store, target_store=target, overwrite=True)
    assert kf.read_table("sales", target)["product"].tolist() == [9]


def test_statistics_are_kept_only_under_the_same_name(memory_store, tmp_path) -> None:
    _write(memory_store, "sales")
    assert kf.dataset_statistics("sales", memory_store)["has_statistics"].all()
    other = kf.Store(f"file://{tmp_path}/other")
    kf.copy_dataset("sales", memory_store, target_store=other)
    assert kf.dataset_statistics("sales", other)["has_statistics"].all()
    kf.copy_dataset("sales", memory_store, "renamed")
    assert not kf.dataset_statistics("renamed", memory_store)["has_statistics"].any()
    got = kf.read_table("renamed", memory_store, predicates=[[("units", ">", 6.0)]])
    assert sorted(got["units"]) == [7.0, 9.0]


def test_errors(memory_store) -> None:
    _write(memory_store, "sales")
    with pytest.raises(kf.InvalidInputError, match="onto itself"):
        kf.copy_dataset("sales", memory_store)
    with pytest.raises(kf.DatasetNotFoundError):
        kf.copy_dataset("nope", memory_store, "other")
    with pytest.raises(kf.InvalidUUIDError):
        kf.copy_dataset("sales", memory_store, "bad/name")
    with pytest.raises(kf.InvalidInputError):
        kf.copy_dataset("sales", memory_store, "x", overwrite="yes")  # type: ignore[arg-type]
    assert len(kf.read_dataset_metadata("sales", memory_store).partitions) == 2


@pytest.mark.interop
def test_plateau_reads_a_copy(tmp_path, memory_store) -> None:
    from plateau.api.dataset import read_table as plateau_read_table

    df = _write(memory_store, "sales")
    kf.copy_dataset("sales", memory_store, "copied", target_store=f"file://{tmp_path}")
    got = plateau_read_table("copied", f"hfs://{tmp_path}")
    assert sorted(got["product"]) == sorted(df["product"])
