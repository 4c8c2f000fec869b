"""Header decoding: the typed fast path and the untyped, step-by-step path agree."""

from __future__ import annotations

from typing import Any

import msgpack
import orjson
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from kartoframe.errors import KartoframeError
from kartoframe.format import header as header_mod
from kartoframe.format.header import decode_header, metadata_from_dict


def _encode(doc: Any, fmt: str) -> bytes:
    if fmt == "json":
        return orjson.dumps(doc)
    return zstandard.ZstdCompressor().compress(msgpack.packb(doc, use_bin_type=True))


def _untyped(data: bytes, fmt: str) -> Any:
    """What decode_header does without the typed path."""
    if fmt == "json":
        raw = orjson.loads(data)
    else:
        doc = zstandard.ZstdDecompressor().decompress(data, max_output_size=1 << 30)
        raw = msgpack.unpackb(doc, raw=False, strict_map_key=False)
    return metadata_from_dict(raw, "ds", fmt)  # type: ignore[arg-type]


def _outcome(fn: Any) -> tuple[str, Any]:
    try:
        h = fn()
    except KartoframeError as e:
        return "error", type(e).__name__
    return "ok", (dict(h.partitions), h.table_name, h.to_dict(), h.partition_keys)


COMPONENTS = st.sampled_from(
    ["table", "a=1", "b=x%2Fy", "f.parquet", ".hidden", "..x", ".", "..", "", "a\\b", "a\x00"]
)
KEYS = st.one_of(
    st.lists(COMPONENTS, min_size=1, max_size=4).map(lambda c: "ds/" + "/".join(c)),
    st.sampled_from(["other/x.parquet", "/abs/x", "s3://b/ds/x", "ds.x", "ds/a\nb"]),
    st.integers(0, 3),
)
FILES = st.one_of(
    st.dictionaries(st.sampled_from(["table", "core"]), KEYS, min_size=0, max_size=2),
    st.just([]),
    st.just("ds/x"),
)
PART = st.one_of(
    st.fixed_dictionaries({"files": FILES}),
    st.fixed_dictionaries({"files": FILES, "extra": st.integers(-9, 9)}),
    st.just({}),
    st.just(None),
)


@settings(max_examples=300, deadline=None)
@given(
    parts=st.one_of(st.dictionaries(st.text(max_size=6), PART, max_size=5), st.none(), st.just([])),
    fmt=st.sampled_from(["json", "msgpack"]),
    extra=st.dictionaries(st.sampled_from(["zz", "kartoframe"]), st.integers(-9, 9), max_size=2),
)
def test_typed_and_untyped_paths_agree(parts: Any, fmt: str, extra: dict[str, Any]) -> None:
    doc: dict[str, Any] = {"dataset_metadata_version": 4, "dataset_uuid": "ds"}
    doc["metadata"] = {"creation_time": "2024-01-01T00:00:00"}
    doc["partitions"] = parts
    doc["partition_keys"] = []
    doc.update(extra)
    data = _encode(doc, fmt)
    assert _outcome(lambda: decode_header(data, "ds", fmt)) == _outcome(  # type: ignore[arg-type]
        lambda: _untyped(data, fmt)
    )


@pytest.mark.parametrize("fmt", ["json", "msgpack"])
def test_well_formed_header_takes_the_typed_path(fmt: str) -> None:
    doc = {
        "dataset_metadata_version": 4,
        "dataset_uuid": "ds",
        "metadata": {"creation_time": "2024-01-01"},
        "partitions": {
            f"p={i}/f": {"files": {"core": f"ds/core/p={i}/f.parquet"}} for i in range(5)
        },
        "partition_keys": ["p"],
        "zz": [1, {"a": None}],
    }
    data = _encode(doc, fmt)
    typed = header_mod._decode_typed(  # the fast path accepts it ...
        data if fmt == "json" else zstandard.ZstdDecompressor().decompress(data), fmt, "ds"
    )
    assert typed is not None
    rest, (partitions, table) = typed
    assert table == "core" and list(partitions) == [f"p={i}/f" for i in range(5)]
    assert list(rest) == ["dataset_metadata_version", "dataset_uuid", "metadata",
                          "partition_keys", "zz"]  # fmt: skip
    h = decode_header(data, "ds", fmt)  # type: ignore[arg-type]
    assert h.extra == {"zz": [1, {"a": None}]} and h.table_name == "core"
    assert h.to_dict() == doc


@pytest.mark.parametrize(
    "key", ["ds/a//b", "ds/a/./b", "ds/a/../b", "ds/a/..", "ds/a/", "ds/a\\b", "other/a"]
)
def test_unsafe_keys_fall_back_to_the_checked_path(key: str) -> None:
    doc = {
        "dataset_metadata_version": 4,
        "dataset_uuid": "ds",
        "partitions": {
            "ok": {"files": {"table": "ds/table/ok.parquet"}},
            "bad": {"files": {"table": key}},
        },
    }
    data = orjson.dumps(doc)
    assert header_mod._decode_typed(data, "json", "ds") is None
    with pytest.raises(KartoframeError, match="ey"):
        decode_header(data, "ds", "json")
