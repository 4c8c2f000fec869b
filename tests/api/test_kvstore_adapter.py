"""simplekv/minimalkv key-value stores (and factories returning them) as kartoframe stores."""

from __future__ import annotations

import pathlib
import uuid
import warnings
from functools import partial

import fsspec
import pandas as pd
import pytest
from fsspec.implementations.dirfs import DirFileSystem
from minimalkv import get_store_from_url
from minimalkv._mixins import ExtendedKeyspaceMixin
from minimalkv.fsspecstore import FSSpecStore

import kartoframe as kf
from kartoframe.storage import kvstore
from kartoframe.storage.store_arg import ensure_store


class HFSSpecStore(ExtendedKeyspaceMixin, FSSpecStore):  # type: ignore[misc]
    """minimalkv's fsspec store with the extended keyspace (as its hs3:// stores have)."""


def _remote_kv(folder: pathlib.Path) -> HFSSpecStore:
    """A real minimalkv store that is neither a FilesystemStore nor process memory."""
    fs = DirFileSystem(str(folder), fsspec.filesystem("file", auto_mkdir=True))
    return HFSSpecStore(prefix="", custom_fs=fs)


# minimalkv's own deprecation of its create_store, raised inside get_store_from_url("hfs://")
pytestmark = pytest.mark.filterwarnings("ignore:.*create_store will be removed:DeprecationWarning")

DF = pd.DataFrame({"p": [1, 1, 2], "x": [10, 20, 30], "s": ["a", "b", "c"]})


@pytest.fixture(autouse=True)
def _warned_already(monkeypatch: pytest.MonkeyPatch) -> None:
    """The once-per-process warning counts as given; tests of the warning reset it."""
    monkeypatch.setattr(kvstore, "_warned", True)
    monkeypatch.delenv("KARTOFRAME_ALLOW_UNSAFE_COMMITS", raising=False)


def test_hfs_factory_maps_to_local_folder_store(tmp_path: object) -> None:
    factory = partial(get_store_from_url, f"hfs://{tmp_path}")
    st = ensure_store(factory)
    assert st.is_local and st.url == f"file://{tmp_path}"
    assert st.supports_conditional_put
    with warnings.catch_warnings():
        # a folder gets the real thing: no warning
        warnings.simplefilter("error", kvstore.KVStoreWarning)
        kf.store_dataframes_as_dataset(factory, "ds", [DF], partition_on=["p"])
    # the same keys plateau would use: plateau reads it through its own store
    import plateau.api.dataset as pl

    out = pl.read_table("ds", factory, predicates=[[("p", "==", 2)]])
    assert out["x"].tolist() == [30]


def test_memory_kvstore_round_trip_and_single_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kvstore, "_warned", False)
    kv = get_store_from_url("hmemory://")
    with pytest.warns(kvstore.KVStoreWarning, match="kartoframe.Store"):
        kf.store_dataframes_as_dataset(
            lambda: kv, "ds", [DF], partition_on=["p"], secondary_indices=["x"]
        )
    with warnings.catch_warnings():
        warnings.simplefilter("error", kvstore.KVStoreWarning)  # once per process
        out = kf.read_table("ds", kv, predicates=[[("x", "==", 20)]])
        assert out["s"].tolist() == ["b"]
        kf.update_dataset_from_dataframes([DF], kv, "ds", delete_scope=[{"p": 1}])
        assert sorted(kf.read_table("ds", kv)["x"]) == [10, 20, 30, 30]
        kf.garbage_collect_dataset("ds", kv)
        kf.delete_dataset("ds", kv)
    assert list(kv.keys()) == []


def test_memory_kvstore_create_is_exclusive() -> None:
    st = kvstore.store_from_kvstore(get_store_from_url("hmemory://"))
    assert st.supports_conditional_put
    assert st.put_if_absent("a/b", b"1")
    assert not st.put_if_absent("a/b", b"2")
    assert st.get("a/b") == b"1"
    assert list(st.iter_keys("a/")) == ["a/b"]
    assert list(st.iter_prefixes("a")) == ["a/"]
    assert st.get_range("a/b", 0, 1) == b"1" and st.size("a/b") == 1
    with pytest.raises(FileNotFoundError):
        st.get("missing")


def test_other_kvstore_commit_needs_single_writer(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    monkeypatch.setattr(kvstore, "_warned", False)
    kv = _remote_kv(tmp_path)
    with pytest.warns(kvstore.KVStoreWarning, match="KARTOFRAME_ALLOW_UNSAFE_COMMITS"):
        st = ensure_store(kv)
    assert not st.supports_conditional_put
    with pytest.raises(kf.StorageError, match="KARTOFRAME_ALLOW_UNSAFE_COMMITS"):
        kf.store_dataframes_as_dataset(kv, "ds", [DF], partition_on=["p"])
    assert list(kv.iter_keys()) == []  # the refused write left nothing behind


def test_other_kvstore_with_unsafe_env_or_single_writer(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    kv = _remote_kv(tmp_path)
    monkeypatch.setenv("KARTOFRAME_ALLOW_UNSAFE_COMMITS", "1")
    kf.store_dataframes_as_dataset(kv, "ds", [DF], partition_on=["p"])
    assert sorted(kf.read_table("ds", kv)["x"]) == [10, 20, 30]
    monkeypatch.delenv("KARTOFRAME_ALLOW_UNSAFE_COMMITS")
    single = kvstore.store_from_kvstore(kv, single_writer=True)
    assert single.supports_conditional_put
    kf.update_dataset_from_dataframes([DF], single, "ds")
    assert len(kf.read_table("ds", kv)) == 6


def test_kvstore_refusing_keys_and_bad_factories() -> None:
    plain = get_store_from_url("memory://")  # minimalkv's DictStore refuses "/" in keys
    st = ensure_store(plain)
    with pytest.raises(kf.InvalidInputError, match="refused the key") as info:
        st.put("a/b", b"x")
    assert isinstance(info.value.__cause__, ValueError)
    with pytest.raises(kf.InvalidTypeError, match="key-value store"):
        ensure_store(lambda: 42)
    with pytest.raises(kf.InvalidTypeError, match="not a key-value store"):
        kvstore.store_from_kvstore(object())


@pytest.mark.s3
@pytest.mark.interop
def test_minimalkv_s3_store_single_writer(s3_server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """plateau's hs3:// store object (minimalkv HBoto3Store) on the S3 server, both ways."""
    import boto3
    import plateau.api.dataset as pl
    from minimalkv._hstores import HBoto3Store

    resource = boto3.resource(
        "s3",
        endpoint_url=s3_server,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )
    bucket = resource.create_bucket(Bucket=f"kv-{uuid.uuid4().hex[:20]}")
    kv = HBoto3Store(bucket, object_prefix="data")
    factory = partial(lambda: kv)
    with pytest.raises(kf.StorageError, match="KARTOFRAME_ALLOW_UNSAFE_COMMITS"):
        kf.store_dataframes_as_dataset(factory, "ds", [DF], partition_on=["p"])
    single = kvstore.store_from_kvstore(kv, single_writer=True)
    kf.store_dataframes_as_dataset(single, "ds", [DF], partition_on=["p"], secondary_indices=["x"])
    assert kf.read_table("ds", factory, predicates=[[("x", "==", 30)]])["s"].tolist() == ["c"]
    # plateau reads what kartoframe wrote through the same store, and the other way round
    assert sorted(pl.read_table("ds", factory)["x"]) == [10, 20, 30]
    pl.store_dataframes_as_dataset(store=factory, dataset_uuid="pl", dfs=[DF], partition_on=["p"])
    kf.update_dataset_from_dataframes([DF], single, "pl", delete_scope=[{"p": 1}])
    assert sorted(pl.read_table("pl", factory)["x"]) == [10, 20, 30, 30]
