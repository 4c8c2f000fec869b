"""Parts of a Parquet file's bytes, for tests that compare two writers' files."""

from __future__ import annotations

import io
from typing import Any

import pyarrow.parquet as pq


def footer_parts(raw: bytes) -> tuple[bytes, dict[bytes, bytes], list[dict[str, Any]]]:
    """The bytes before the footer, the footer's key-value pairs, and its row groups'
    metadata (statistics, encodings, sizes, offsets).
    """
    footer = int.from_bytes(raw[-8:-4], "little")
    md = pq.ParquetFile(io.BytesIO(raw)).metadata
    groups = [md.row_group(i).to_dict() for i in range(md.num_row_groups)]
    return raw[: len(raw) - 8 - footer], dict(md.metadata), groups
