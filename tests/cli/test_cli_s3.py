"""The installed ``kartoframe`` console script against an S3-compatible server (moto)."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest
from cli_helpers import SALES, fill_store, run, run_many

import kartoframe as kf
from kartoframe.cli._common import EXIT_CONFLICT, EXIT_NOT_FOUND

pytestmark = pytest.mark.s3


def _endpoint_option(endpoint: str) -> list[str]:
    return ["--storage-option", f'client_kwargs={{"endpoint_url": "{endpoint}"}}']


def test_s3_store(s3_server, s3_store, tmp_path) -> None:
    fill_store(s3_store)
    url = s3_store.url
    opt = _endpoint_option(s3_server)
    env = {
        "KARTOFRAME_STORAGE_OPTIONS": json.dumps(
            {"client_kwargs": {"endpoint_url": s3_server}, "key": "testing", "secret": "testing"}
        )
    }
    local = tmp_path / "local"
    local.mkdir()
    # options after STORE_URL, before it, and from the environment; a copy S3 -> local folder
    ls, info, stats, query, from_env, copied = run_many(
        [
            [url, *opt, "ls", "--json"],
            [*opt, url, "info", "sales", "--json"],
            [url, *opt, "stats", "geo", "--json"],
            [url, *opt, "query", "sales", "-w", "country == FR", "-f", "csv"],
            [url, "query", "geo", "-w", "COUNTRY_CODE == FR", "--json"],
            [url, *opt, "copy", "sales", "--to", str(local)],
        ],
        envs=[None, None, None, None, env, None],
    )
    for r in (ls, info, stats, query, from_env, copied):
        assert r.returncode == 0, str(r)
    assert [c["name"] for c in ls.json()["cubes"]] == ["geo"]
    assert info.json()["store"] == url and info.json()["files"] == 5
    assert stats.json()["total"]["rows"] == 5
    got = pd.read_csv(io.StringIO(query.stdout))
    assert sorted(got["units"]) == sorted(SALES[SALES.country == "FR"]["units"])
    assert from_env.json() == [{"COUNTRY_CODE": "FR", "POP": 68, "SALES": 20.0, "YEAR": 2024}]
    pd.testing.assert_frame_equal(
        kf.read_table("sales", str(local)), kf.read_table("sales", s3_store)
    )

    again = run(url, *opt, "copy", "sales", "--to", str(local))
    assert again.returncode == EXIT_CONFLICT, str(again)

    deleted = run(url, *opt, "delete", "sales", "--yes")
    assert deleted.returncode == 0, str(deleted)
    missing = run(url, *opt, "info", "sales")
    assert missing.returncode == EXIT_NOT_FOUND, str(missing)
    assert not [k for k in s3_store.iter_keys("sales/") if k.endswith(".parquet")]
