"""A large write hands its files' low-cardinality strings to the Parquet writer still
encoded (:func:`kartoframe.format.file_rows.encoded_file_rows`): the same files, read
back as strings, as when each file's strings were decoded first."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from parquet_files import footer_parts
from spies import record_results

import kartoframe as kf
import kartoframe.execution.chunks as chunks
from kartoframe.format.file_rows import EncodedFileRows
from kartoframe.plan.partition_plan import PARALLEL_PLAN_ROWS

ROWS = 40_000  # above the size whose gather source dictionary-encodes strings


def _frame(rows: int = ROWS) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    channel = np.array(["store", "web", "app", "phone", "ü€"], dtype=object)[
        rng.integers(0, 5, rows)
    ]
    channel[rng.random(rows) < 0.05] = None
    return pd.DataFrame(
        {
            "p": np.array(["x", "y", "z"])[rng.integers(0, 3, rows)],
            "channel": pd.array(channel, dtype="str"),
            "name": pd.array([f"n{i}" for i in rng.integers(0, 10**6, rows)], dtype="str"),
            "v": rng.random(rows),
            "t": pd.date_range("2024-01-01", periods=rows, freq="s"),
        }
    )


def _files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix().split("/")[-2]: p.read_bytes()
        for p in root.rglob("*.parquet")
        if "/table/" in p.as_posix()
    }


def _write(root: Path, df: pd.DataFrame, **kw) -> None:
    kf.store_dataframes_as_dataset(
        store=str(root),
        dataset_uuid="ds",
        dfs=[df],
        partition_on=["p"],
        secondary_indices=["channel"],
        **kw,
    )


@pytest.mark.parametrize("rows", [ROWS, PARALLEL_PLAN_ROWS + 1])
def test_the_files_are_those_of_the_decoded_strings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rows: int
) -> None:
    df = _frame(rows)
    calls = record_results(monkeypatch, EncodedFileRows, "rows")
    _write(tmp_path / "encoded", df)
    assert len(calls) == 3 and all(c is not None for c in calls)  # the path was taken
    monkeypatch.setattr(chunks, "encoded_file_rows", lambda *a, **k: None)
    _write(tmp_path / "decoded", df)
    ours, theirs = _files(tmp_path / "encoded"), _files(tmp_path / "decoded")
    assert sorted(ours) == sorted(theirs) == ["p=x", "p=y", "p=z"]
    for part in ours:
        assert footer_parts(ours[part]) == footer_parts(theirs[part])
        schema = pq.read_schema(io.BytesIO(ours[part]))
        assert schema.field("channel").type == pa.string()
    back = kf.read_table("ds", str(tmp_path / "encoded"))
    want = df.sort_values(["p", "t"]).reset_index(drop=True)
    got = back.sort_values(["p", "t"]).reset_index(drop=True)[want.columns]
    pd.testing.assert_frame_equal(got, want, check_dtype=False)
    # the statistics and the index were computed as before
    assert (
        kf.read_table("ds", str(tmp_path / "encoded"), predicates=[[("channel", "==", "ü€")]])[
            "channel"
        ]
        .eq("ü€")
        .sum()
        == (df["channel"] == "ü€").sum()
    )


def test_sorted_files_are_decoded_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[object] = []
    monkeypatch.setattr(chunks, "encoded_file_rows", lambda *a, **k: calls.append(a))
    df = _frame()
    _write(tmp_path, df, sort_partitions_by=["channel"])
    assert calls == []
    back = kf.read_table("ds", str(tmp_path), predicates=[[("p", "==", "x")]])
    assert back["channel"].dropna().is_monotonic_increasing


def test_nanoseconds_the_files_cannot_hold_are_refused_and_nothing_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file that takes the encoded-strings path and holds a timestamp that is not a
    whole microsecond goes down the plain path, which refuses it with the usual error."""
    calls = record_results(monkeypatch, EncodedFileRows, "rows")
    df = _frame()
    # the last row only: the rows that decide the chunk's encoding come first, and pass
    df["t"] = df["t"].astype("datetime64[ns]")
    df.loc[len(df) - 1, "t"] += pd.Timedelta(nanoseconds=1)
    with pytest.raises(kf.SchemaError, match="not whole"):
        _write(tmp_path, df)
    assert None in calls  # the path was asked for that file, and declined it
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []  # no file left behind
