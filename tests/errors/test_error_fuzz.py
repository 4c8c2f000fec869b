"""Fuzzing the decoders of stored metadata: only ``KartoframeError`` may escape.

``decode_header`` (JSON and zstd-compressed msgpack) and ``index_from_bytes`` read bytes
written by anyone. Random bytes, bit-flipped and truncated valid files, and valid
documents with random values planted at random places must either decode or raise a
``KartoframeError``; a header that decodes never yields a file key outside its dataset.
"""

from __future__ import annotations

from typing import Any

import msgpack
import orjson
import pyarrow as pa
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kartoframe as kf
from kartoframe.format.header import DatasetHeader, decode_header, encode_header
from kartoframe.format.index import (
    build_index,
    index_from_bytes,
    index_to_bytes,
    index_value_pairs,
)
from kartoframe.format.naming import check_key_inside

FUZZ = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

VALID_DOC: dict[str, Any] = {
    "dataset_metadata_version": 4,
    "dataset_uuid": "ds",
    "indices": {
        "k": "ds/indices/k/2024-01-01T00%3A00%3A00.by-dataset-index.parquet",
        "e": {"1": ["p=1/a"], "2": ["p=2/b"]},
    },
    "metadata": {"creation_time": "2024-01-01T00:00:00", "x": [1, 2]},
    "partitions": {
        "p=1/a": {"files": {"table": "ds/table/p=1/a.parquet"}},
        "p=2/b": {"files": {"table": "ds/table/p=2/b.parquet"}},
    },
    "partition_keys": ["p"],
}


def _encode(doc: Any, fmt: str) -> bytes:
    if fmt == "json":
        return orjson.dumps(doc, option=orjson.OPT_NON_STR_KEYS)
    return zstandard.ZstdCompressor().compress(msgpack.packb(doc, use_bin_type=True))


def _decode(data: bytes, fmt: str) -> DatasetHeader | None:
    """Decode; a KartoframeError is fine, anything else escapes (and fails the test)."""
    try:
        md = decode_header(data, "ds", fmt)  # type: ignore[arg-type]
    except kf.KartoframeError:
        return None
    # whatever decodes must stay inside the dataset
    for key in [*md.partitions.values(), *md.indices.values()]:
        assert isinstance(key, str)
        check_key_inside(key, "ds")
    return md


def test_the_valid_documents_decode() -> None:
    """Guard: the seeds of the mutation strategies are valid."""
    for fmt in ("json", "msgpack"):
        md = _decode(_encode(VALID_DOC, fmt), fmt)
        assert md is not None and len(md.partitions) == 2
        assert _decode(encode_header(md), fmt) is not None


# -- headers: raw bytes --------------------------------------------------------------------
@FUZZ
@given(data=st.binary(max_size=300), fmt=st.sampled_from(["json", "msgpack"]))
def test_header_random_bytes(data: bytes, fmt: str) -> None:
    _decode(data, fmt)


@FUZZ
@given(payload=st.binary(max_size=300))
def test_header_random_msgpack_in_valid_zstd(payload: bytes) -> None:
    _decode(zstandard.ZstdCompressor().compress(payload), "msgpack")


@FUZZ
@given(
    fmt=st.sampled_from(["json", "msgpack"]),
    flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(1, 255)), max_size=4),
    cut=st.one_of(st.none(), st.integers(0, 10_000)),
)
def test_header_bit_flips_and_truncation(
    fmt: str, flips: list[tuple[int, int]], cut: int | None
) -> None:
    data = bytearray(_encode(VALID_DOC, fmt))
    if fmt == "msgpack":  # flip the msgpack inside the frame, not only the frame
        raw = bytearray(msgpack.packb(VALID_DOC, use_bin_type=True))
        for pos, mask in flips:
            raw[pos % len(raw)] ^= mask
        data = bytearray(zstandard.ZstdCompressor().compress(bytes(raw)))
    else:
        for pos, mask in flips:
            data[pos % len(data)] ^= mask
    if cut is not None:
        data = data[: cut % (len(data) + 1)]
    _decode(bytes(data), fmt)


# -- headers: valid encodings of ill-formed documents ------------------------------------------
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=12),
    st.sampled_from(
        ["ds/table/p=1/x.parquet", "../x.parquet", "/abs", "ds/..", "ds/.", "ds/a/", "ds\\x"]
    ),
)
_values = st.recursive(
    _scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.text(max_size=8), children, max_size=4),
    ),
    max_leaves=12,
)
_paths = st.sampled_from(
    [
        (),
        ("dataset_metadata_version",),
        ("dataset_uuid",),
        ("indices",),
        ("indices", "k"),
        ("indices", "e"),
        ("indices", "e", "1"),
        ("metadata",),
        ("partitions",),
        ("partitions", "p=1/a"),
        ("partitions", "p=1/a", "files"),
        ("partitions", "p=1/a", "files", "table"),
        ("partition_keys",),
        ("unknown_key",),
    ]
)


def _plant(doc: Any, path: tuple[str, ...], value: Any) -> Any:
    if not path:
        return value
    if not isinstance(doc, dict):
        return doc
    out = dict(doc)
    out[path[0]] = _plant(doc.get(path[0], {}), path[1:], value)
    return out


@FUZZ
@given(
    plants=st.lists(st.tuples(_paths, _values), min_size=1, max_size=3),
    fmt=st.sampled_from(["json", "msgpack"]),
)
def test_header_documents_with_planted_values(
    plants: list[tuple[tuple[str, ...], Any]], fmt: str
) -> None:
    doc: Any = VALID_DOC
    for path, value in plants:
        doc = _plant(doc, path, value)
    try:
        data = _encode(doc, fmt)
    except (TypeError, OverflowError, msgpack.PackException):
        return  # not encodable (e.g. NaN keys): cannot be stored either
    _decode(data, fmt)


@FUZZ
@given(
    label=st.text(max_size=20),
    key=st.one_of(
        st.text(max_size=30),
        st.text(alphabet="ds/.\\\x00:", max_size=20),
        st.text(max_size=20).map(lambda t: "ds/" + t),
    ),
)
def test_header_file_keys(label: str, key: str) -> None:
    """Any partition label and file key: refused, or inside the dataset."""
    doc = _plant(VALID_DOC, ("partitions",), {label: {"files": {"table": key}}})
    for fmt in ("json", "msgpack"):
        _decode(_encode(doc, fmt), fmt)


# -- index files ----------------------------------------------------------------------------------
def _valid_index() -> bytes:
    pairs = [
        index_value_pairs("c", pa.array([1, 2, 3, 2]), "p=1/a"),
        index_value_pairs("c", pa.array([3, 4]), "p=2/b"),
    ]
    return index_to_bytes(build_index("c", pa.int64(), pairs))


VALID_INDEX = _valid_index()


def _decode_index(data: bytes) -> None:
    try:
        table = index_from_bytes(data, "c", origin="'fuzz'")
    except kf.KartoframeError:
        return
    assert table.column_names == ["c", "partition"]


def test_the_valid_index_decodes() -> None:
    table = index_from_bytes(VALID_INDEX, "c")
    assert sorted(table["c"].to_pylist()) == [1, 2, 3, 4]


@FUZZ
@given(data=st.binary(max_size=400))
def test_index_random_bytes(data: bytes) -> None:
    _decode_index(data)


@FUZZ
@given(
    flips=st.lists(st.tuples(st.integers(0, 100_000), st.integers(1, 255)), min_size=1, max_size=6),
    cut=st.one_of(st.none(), st.integers(0, 100_000)),
)
def test_index_bit_flips_and_truncation(flips: list[tuple[int, int]], cut: int | None) -> None:
    data = bytearray(VALID_INDEX)
    for pos, mask in flips:
        data[pos % len(data)] ^= mask
    if cut is not None:
        data = data[: cut % (len(data) + 1)]
    _decode_index(bytes(data))


@pytest.mark.parametrize(
    "table",
    [
        pa.table({"x": [1]}),
        pa.table({"c": [1], "partition": [1]}),
        pa.table([pa.array([1]), pa.array([["a"]]), pa.array([2])], names=["c", "partition", "c"]),
    ],
    ids=["no columns", "partition not a list", "duplicate column"],
)
def test_index_with_the_wrong_layout(table: pa.Table) -> None:
    import io

    import pyarrow.parquet as pq

    sink = io.BytesIO()
    pq.write_table(table, sink)
    with pytest.raises(kf.CorruptMetadataError, match="'fuzz'"):
        index_from_bytes(sink.getvalue(), "c", origin="'fuzz'")
