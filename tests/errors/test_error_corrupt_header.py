"""Corrupt, truncated, ill-typed, unsupported and hostile headers (and index files).

A valid dataset is written, then its header is replaced by bad bytes. Reading must raise
the documented error naming the header file (and, for ill-typed values, the JSON/msgpack
key), and a write on top of it must refuse without touching the bad header.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgpack
import orjson
import pandas as pd
import pytest
import zstandard

import kartoframe as kf
import kartoframe.format.header as header_module
from kartoframe.format import naming

JSON_KEY = naming.header_key("ds", "json")
MSGPACK_KEY = naming.header_key("ds", "msgpack")


def _df() -> pd.DataFrame:
    return pd.DataFrame({"p": [1, 1, 2], "v": [10, 20, 30]})


@pytest.fixture
def doc(store: kf.Store) -> dict[str, Any]:
    """Write dataset ``ds`` (json header); return its header as a dict."""
    kf.store_dataframes_as_dataset(
        store, "ds", [_df()], partition_on=["p"], secondary_indices=["v"]
    )
    return orjson.loads(store.get(JSON_KEY))  # type: ignore[no-any-return]


def _msgpack(obj: Any, **kwargs: Any) -> bytes:
    return zstandard.ZstdCompressor(**kwargs).compress(msgpack.packb(obj, use_bin_type=True))


def _read_fails(
    store: kf.Store, cls: type[BaseException], *fragments: str
) -> pytest.ExceptionInfo[BaseException]:
    """Reading (header-level and full) raises exactly ``cls`` naming ``fragments``."""
    info: pytest.ExceptionInfo[BaseException]
    for read in (
        lambda: kf.read_table("ds", store),
        lambda: kf.read_dataset_metadata("ds", store),
    ):
        with pytest.raises(cls) as info:
            read()
        assert type(info.value) is cls, f"{type(info.value).__name__}: {info.value}"
        assert isinstance(info.value, ValueError) and isinstance(info.value, kf.KartoframeError)
        for fragment in fragments:
            assert fragment in str(info.value), f"{fragment!r} not in {str(info.value)!r}"
    return info


def _writes_refuse(store: kf.Store, key: str) -> None:
    """Writing on top of a bad header refuses and leaves the bad bytes alone."""
    bad = store.get(key)
    with pytest.raises(kf.KartoframeError):
        kf.update_dataset_from_dataframes([_df()], store=store, dataset_uuid="ds")
    with pytest.raises(kf.DatasetExistsError):
        kf.store_dataframes_as_dataset(store, "ds", [_df()])
    assert store.get(key) == bad


# -- undecodable bytes -------------------------------------------------------------------------
@pytest.mark.parametrize("cut", [0, 1, 0.5, -1], ids=["empty", "1 byte", "half", "last byte"])
def test_truncated_json(store: kf.Store, doc: dict[str, Any], cut: float) -> None:
    data = store.get(JSON_KEY)
    end = int(len(data) * cut) if isinstance(cut, float) else cut
    store.put(JSON_KEY, data[:end])
    _read_fails(store, kf.CorruptMetadataError, "'ds'", repr(JSON_KEY))
    _writes_refuse(store, JSON_KEY)


@pytest.mark.parametrize("garbage", [b"\xff\xfe\x00", b"{'a': 1}", b"null", b"[]", b'"text"'])
def test_json_that_is_not_a_header(store: kf.Store, doc: dict[str, Any], garbage: bytes) -> None:
    store.put(JSON_KEY, garbage)
    _read_fails(store, kf.CorruptMetadataError, "'ds'", repr(JSON_KEY))


@pytest.fixture
def msgpack_store(store: kf.Store) -> kf.Store:
    kf.store_dataframes_as_dataset(store, "ds", [_df()], metadata_storage_format="msgpack")
    return store


@pytest.mark.parametrize("cut", [1, 0.5, -1], ids=["1 byte", "half", "last byte"])
def test_truncated_zstd(msgpack_store: kf.Store, cut: float) -> None:
    data = msgpack_store.get(MSGPACK_KEY)
    end = int(len(data) * cut) if isinstance(cut, float) else cut
    msgpack_store.put(MSGPACK_KEY, data[:end])
    _read_fails(msgpack_store, kf.CorruptMetadataError, "'ds'", repr(MSGPACK_KEY))
    _writes_refuse(msgpack_store, MSGPACK_KEY)


def test_truncated_msgpack_inside_valid_zstd(msgpack_store: kf.Store) -> None:
    raw = zstandard.ZstdDecompressor().decompress(msgpack_store.get(MSGPACK_KEY))
    msgpack_store.put(MSGPACK_KEY, zstandard.ZstdCompressor().compress(raw[: len(raw) // 2]))
    _read_fails(msgpack_store, kf.CorruptMetadataError, "msgpack", repr(MSGPACK_KEY))


def test_msgpack_with_unhashable_map_key(msgpack_store: kf.Store) -> None:
    # a map whose key is a map: {{1: 2}: 3}
    msgpack_store.put(MSGPACK_KEY, zstandard.ZstdCompressor().compress(b"\x81\x81\x01\x02\x03"))
    _read_fails(msgpack_store, kf.CorruptMetadataError, repr(MSGPACK_KEY))


# -- decompression bombs -------------------------------------------------------------------------
@pytest.mark.parametrize("declared_size", [True, False], ids=["size in frame", "streamed"])
def test_decompression_bomb(
    msgpack_store: kf.Store, monkeypatch: pytest.MonkeyPatch, declared_size: bool
) -> None:
    doc = msgpack.unpackb(zstandard.ZstdDecompressor().decompress(msgpack_store.get(MSGPACK_KEY)))
    doc["metadata"]["padding"] = "x" * (8 << 20)  # 8 MB that compress to a few hundred bytes
    if declared_size:
        bomb = _msgpack(doc, write_content_size=True)
    else:
        writer = zstandard.ZstdCompressor().compressobj()
        bomb = writer.compress(msgpack.packb(doc)) + writer.flush()
    assert len(bomb) < 4096
    monkeypatch.setattr(header_module, "MAX_HEADER_BYTES", 1 << 20)
    msgpack_store.put(MSGPACK_KEY, bomb)
    _read_fails(msgpack_store, kf.CorruptMetadataError, "'ds'", repr(MSGPACK_KEY))
    # below the limit the same kind of header is fine
    doc["metadata"]["padding"] = "x" * (512 << 10)
    msgpack_store.put(MSGPACK_KEY, _msgpack(doc, write_content_size=declared_size))
    assert kf.read_dataset_metadata("ds", msgpack_store).metadata["padding"] == "x" * (512 << 10)


# -- ill-typed keys ----------------------------------------------------------------------------
def _label(doc: dict[str, Any]) -> str:
    return next(iter(doc["partitions"]))


FILES = ("'partitions.", ".files'")
# mutation, fragments the message must contain (the quoted key path)
ILL_TYPED: dict[str, tuple[Callable[[dict[str, Any]], None], tuple[str, ...]]] = {
    "partition_keys: 5": (lambda d: d.update(partition_keys=5), ("'partition_keys'",)),
    "partition_keys: [1]": (lambda d: d.update(partition_keys=[1]), ("'partition_keys'",)),
    "partitions: []": (lambda d: d.update(partitions=[]), ("'partitions'",)),
    "partitions: 'x'": (lambda d: d.update(partitions="x"), ("'partitions'",)),
    "version '4'": (
        lambda d: d.update(dataset_metadata_version="4"),
        ("'dataset_metadata_version'",),
    ),
    "version 4.0": (
        lambda d: d.update(dataset_metadata_version=4.0),
        ("'dataset_metadata_version'",),
    ),
    "version true": (
        lambda d: d.update(dataset_metadata_version=True),
        ("'dataset_metadata_version'",),
    ),
    "no version": (lambda d: d.pop("dataset_metadata_version"), ("'dataset_metadata_version'",)),
    "dataset_uuid: 5": (lambda d: d.update(dataset_uuid=5), ("'dataset_uuid'",)),
    "dataset_uuid: other": (lambda d: d.update(dataset_uuid="other"), ("'dataset_uuid'",)),
    "metadata: []": (lambda d: d.update(metadata=[]), ("'metadata'",)),
    "indices: 5": (lambda d: d.update(indices=5), ("'indices'",)),
    "indices.v: 5": (lambda d: d["indices"].update(v=5), ("'indices.v'",)),
    "indices.v: {x: 5}": (lambda d: d["indices"].update(v={"1": 5}), ("'indices.v'",)),
    "indices.v: {x: 'ab'}": (lambda d: d["indices"].update(v={"1": "ab"}), ("'indices.v'",)),
    "files: 5": (lambda d: d["partitions"][_label(d)].update(files=5), FILES),
    "files: {}": (lambda d: d["partitions"][_label(d)].update(files={}), FILES),
    "files.table: 5": (lambda d: d["partitions"][_label(d)]["files"].update(table=5), FILES),
    "partition: []": (lambda d: d["partitions"].update({_label(d): []}), FILES),
}


@pytest.mark.parametrize("fmt", ["json", "msgpack"])
@pytest.mark.parametrize("case", ILL_TYPED.values(), ids=ILL_TYPED.keys())
def test_ill_typed_key(
    store: kf.Store,
    doc: dict[str, Any],
    case: tuple[Callable[[dict[str, Any]], None], tuple[str, ...]],
    fmt: str,
) -> None:
    mutate, fragments = case
    mutate(doc)
    key = JSON_KEY if fmt == "json" else MSGPACK_KEY
    if fmt == "msgpack":
        store.delete(JSON_KEY)
    store.put(key, orjson.dumps(doc) if fmt == "json" else _msgpack(doc))
    _read_fails(store, kf.CorruptMetadataError, "'ds'", repr(key), *fragments)
    _writes_refuse(store, key)


# -- unsupported versions --------------------------------------------------------------------------
@pytest.mark.parametrize("version", [3, 5, 0, -4, 40])
def test_unknown_metadata_version(store: kf.Store, doc: dict[str, Any], version: int) -> None:
    doc["dataset_metadata_version"] = version
    store.put(JSON_KEY, orjson.dumps(doc))
    _read_fails(store, kf.UnsupportedVersionError, "'ds'", f"version {version}", repr(JSON_KEY))
    _writes_refuse(store, JSON_KEY)


# -- keys pointing outside the dataset ----------------------------------------------------------
HOSTILE_KEYS = [
    "../other/x.parquet",
    "/abs/x.parquet",
    "/ds/table/x.parquet",
    "other/table/x.parquet",
    "ds/../other/x.parquet",
    "ds/table/../../other/x.parquet",
    "ds/table/..\\..\\x.parquet",
    "ds/table/x\x00.parquet",
    "ds//x.parquet",
    "ds/.",
    "ds/table/",
    "s3://bucket/ds/x.parquet",
    "file:///etc/passwd",
    "dsx/table/x.parquet",
]


@pytest.mark.parametrize("bad", HOSTILE_KEYS, ids=repr)
@pytest.mark.parametrize("where", ["partition", "index"])
def test_keys_outside_the_dataset(
    store: kf.Store, doc: dict[str, Any], bad: str, where: str
) -> None:
    if where == "partition":
        doc["partitions"][_label(doc)]["files"]["table"] = bad
    else:
        doc["indices"]["v"] = bad
    store.put(JSON_KEY, orjson.dumps(doc))
    with pytest.raises(kf.UnsafePathError) as info:
        kf.read_table("ds", store, predicates=[[("v", "==", 10)]])
    assert type(info.value) is kf.UnsafePathError
    assert isinstance(info.value, ValueError) and isinstance(info.value, kf.KartoframeError)
    assert repr(bad) in str(info.value) and repr(JSON_KEY) in str(info.value)
    _writes_refuse(store, JSON_KEY)


# -- a corrupt index file --------------------------------------------------------------------------
@pytest.mark.parametrize("garbage", [b"", b"PAR1", b"not parquet at all"], ids=repr)
def test_corrupt_index_file(store: kf.Store, doc: dict[str, Any], garbage: bytes) -> None:
    index_key = doc["indices"]["v"]
    store.put(index_key, garbage)
    with pytest.raises(kf.CorruptMetadataError) as info:
        kf.read_table("ds", store, predicates=[[("v", "==", 10)]])
    assert repr(index_key) in str(info.value)
    # reads that do not need the index still work
    assert len(kf.read_table("ds", store)) == 3


def test_missing_index_file(store: kf.Store, doc: dict[str, Any]) -> None:
    index_key = doc["indices"]["v"]
    store.delete(index_key)
    with pytest.raises(kf.CorruptMetadataError) as info:
        kf.read_table("ds", store, predicates=[[("v", "==", 10)]])
    assert repr(index_key) in str(info.value) and "missing" in str(info.value)
