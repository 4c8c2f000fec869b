"""Every failure is a specific ``KartoframeError`` that says what and where (issue 12, §5).

Each test provokes one failure with real files (a local folder, ``memory://`` or the S3
server), asserts the exact error class, that it is a ``KartoframeError`` and the builtin a
Python user would catch, that the message names what failed, and that the original
exception is kept as ``__cause__``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from error_helpers import check

import kartoframe as kf
from kartoframe.format import naming


def _df() -> pd.DataFrame:
    return pd.DataFrame({"p": [1, 1, 2, 2], "v": [1, 2, 3, 4], "s": ["a", "b", "c", "d"]})


@pytest.fixture
def dataset(store: kf.Store) -> kf.Store:
    """A dataset ``ds`` partitioned on p (two files), indexed on v."""
    kf.store_dataframes_as_dataset(
        store, "ds", [_df()], partition_on=["p"], secondary_indices=["v"]
    )
    return store


def _data_keys(store: kf.Store) -> list[str]:
    return sorted(k for k in store.iter_keys("ds/table/") if k.endswith(".parquet"))


# -- integer literals beyond 64 bits ----------------------------------------------------------
OVERFLOW_CALLS: dict[str, Callable[[kf.Store], Any]] = {
    "read ==": lambda s: kf.read_table("ds", s, predicates=[[("v", "==", 2**63)]]),
    "read <": lambda s: kf.read_table("ds", s, predicates=[[("v", "<", -(2**63) - 1)]]),
    "read in": lambda s: kf.read_table("ds", s, predicates=[[("v", "in", [1, 2**64])]]),
    "read partition key": lambda s: kf.read_table("ds", s, predicates=[[("p", ">", 2**63)]]),
    "dask read": lambda s: kf.read_dataset_as_ddf(
        "ds", s, predicates=[[("s", "==", "a"), ("v", "==", 2**70)]]
    ),
    "delete_scope partition": lambda s: kf.update_dataset_from_dataframes(
        [_df()], s, "ds", partition_on=["p"], delete_scope=[{"p": 2**63}]
    ),
    "delete_scope index": lambda s: kf.update_dataset_from_dataframes(
        [_df()], s, "ds", partition_on=["p"], delete_scope=[{"v": 2**63}]
    ),
}


@pytest.mark.parametrize("call", OVERFLOW_CALLS.values(), ids=OVERFLOW_CALLS.keys())
def test_integer_literal_out_of_range(dataset: kf.Store, call: Callable[[kf.Store], Any]) -> None:
    header = dataset.get(naming.header_key("ds", "json"))
    with pytest.raises(kf.InvalidPredicateError) as info:
        call(dataset)
    e = check(
        info, kf.InvalidPredicateError, ValueError, "out of range", "int64", cause=OverflowError
    )
    assert "'v'" in str(e) or "'p'" in str(e)
    assert (
        str(2**63) in str(e)
        or str(2**64) in str(e)
        or str(2**70) in str(e)
        or str(-(2**63) - 1) in str(e)
    )
    assert dataset.get(naming.header_key("ds", "json")) == header


def test_integer_literal_in_range_still_works(dataset: kf.Store) -> None:
    got = kf.read_table(
        "ds", dataset, predicates=[[("v", "==", 2**63 - 1)], [("v", "==", -(2**63))]]
    )
    assert len(got) == 0
    assert len(kf.read_table("ds", dataset, predicates=[[("v", "in", [2, 3])]])) == 2


@pytest.mark.parametrize(
    "condition",
    [kf.C("v") == 2**63, kf.C("x") > 2**64, kf.C("p").isin([1, 2**63])],
    ids=["payload ==", "dimension >", "partition in"],
)
def test_cube_condition_out_of_range(tmp_path: Any, condition: Any) -> None:
    cube = kf.Cube(dimension_columns=("x",), partition_columns=("p",), uuid_prefix="c")
    kf.build_cube(
        {"seed": pd.DataFrame({"x": [1, 2, 3], "p": [1, 1, 2], "v": [1, 2, 3]})},
        cube,
        str(tmp_path),
    )
    with pytest.raises(kf.InvalidPredicateError) as info:
        kf.query_cube(cube, str(tmp_path), conditions=condition)
    check(info, kf.InvalidPredicateError, ValueError, "out of range", cause=OverflowError)


# -- corrupt and missing data files -----------------------------------------------------------
CORRUPTIONS: dict[str, Callable[[bytes], bytes]] = {
    "garbage": lambda b: b"not parquet at all" * 4,
    "empty": lambda b: b"",
    "pages": lambda b: b[:4] + bytes(x ^ 0x5A for x in b[4:200]) + b[200:],
    "footer": lambda b: b[:-12] + b"\xff" * 8 + b[-4:],
}
READS: dict[str, Callable[[kf.Store], Any]] = {
    "read_table": lambda s: kf.read_table("ds", s),
    "dask": lambda s: kf.read_dataset_as_ddf("ds", s).compute(),
    "iterator": lambda s: list(kf.read_dataset_as_dataframes__iterator("ds", s)),
}


@pytest.mark.parametrize("read", READS.values(), ids=READS.keys())
@pytest.mark.parametrize("corrupt", CORRUPTIONS.values(), ids=CORRUPTIONS.keys())
def test_corrupt_data_file(
    dataset: kf.Store, corrupt: Callable[[bytes], bytes], read: Callable[[kf.Store], Any]
) -> None:
    key = _data_keys(dataset)[1]  # partition p=2: the culprit is found among several files
    dataset.put(key, corrupt(dataset.get(key)))
    with pytest.raises(kf.CorruptDataError) as info:
        read(dataset)
    e = check(
        info, kf.CorruptDataError, ValueError, repr(key), "'p=2'", "'ds'", dataset.display_url
    )
    assert isinstance(e, kf.FormatError)
    assert isinstance(e.__cause__, pa.ArrowException | OSError), repr(e.__cause__)
    assert (e.dataset_uuid, e.partition, e.key) == ("ds", "p=2", key)  # type: ignore[attr-defined]


@pytest.mark.parametrize("read", READS.values(), ids=READS.keys())
def test_missing_data_file(dataset: kf.Store, read: Callable[[kf.Store], Any]) -> None:
    key = _data_keys(dataset)[1]
    dataset.delete(key)
    with pytest.raises(kf.MissingDataFileError) as info:
        read(dataset)
    e = check(
        info,
        kf.MissingDataFileError,
        FileNotFoundError,
        repr(key),
        "'p=2'",
        "'ds'",
        "missing",
        cause=FileNotFoundError,
    )
    assert not isinstance(e, kf.DatasetNotFoundError)
    assert isinstance(e, kf.CorruptDataError)
    assert (e.dataset_uuid, e.partition, e.key) == ("ds", "p=2", key)  # type: ignore[attr-defined]


def test_data_file_of_the_wrong_schema(dataset: kf.Store) -> None:
    key = _data_keys(dataset)[0]
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table({"v": ["x", "y"], "s": ["a", "b"]}), sink)
    dataset.put(key, sink.getvalue().to_pybytes())
    with pytest.raises(kf.CorruptDataError) as info:
        kf.read_table("ds", dataset)
    check(info, kf.CorruptDataError, ValueError, repr(key), "'p=1'", cause=pa.ArrowException)


def test_corrupt_data_error_pickles() -> None:
    import pickle

    e = kf.MissingDataFileError(
        "gone", dataset_uuid="ds", partition="p=1", key="ds/table/p=1/f.parquet"
    )
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is kf.MissingDataFileError and str(back) == "gone"
    assert (back.dataset_uuid, back.partition, back.key) == ("ds", "p=1", "ds/table/p=1/f.parquet")


def test_corrupt_data_file_on_s3(s3_store: kf.Store) -> None:
    kf.store_dataframes_as_dataset(s3_store, "ds", [_df()], partition_on=["p"])
    keys = _data_keys(s3_store)
    s3_store.put(keys[0], b"garbage")
    with pytest.raises(kf.CorruptDataError) as info:
        kf.read_table("ds", s3_store)
    check(info, kf.CorruptDataError, ValueError, repr(keys[0]), "'p=1'", cause=pa.ArrowException)
    s3_store.delete(keys[1])
    with pytest.raises(kf.MissingDataFileError) as missing:
        kf.read_table("ds", s3_store, predicates=[[("p", "==", 2)]])
    check(
        missing, kf.MissingDataFileError, FileNotFoundError, repr(keys[1]), cause=FileNotFoundError
    )


# -- index files of the wrong type -----------------------------------------------------------
@pytest.mark.parametrize(
    "values", [pa.array(["x", "y"]), pa.array([1.5, 2.5])], ids=["string", "double"]
)
def test_index_file_of_the_wrong_type(dataset: kf.Store, values: pa.Array) -> None:
    (key,) = list(dataset.iter_keys("ds/indices/"))
    sink = pa.BufferOutputStream()
    table = pa.table({"v": values, "partition": pa.array([["p=1/x"], ["p=2/y"]])})
    pq.write_table(table, sink)
    dataset.put(key, sink.getvalue().to_pybytes())
    with pytest.raises(kf.CorruptMetadataError) as info:
        kf.read_table("ds", dataset, predicates=[[("v", "==", 2)]])
    check(info, kf.CorruptMetadataError, ValueError, repr(key), "'ds'", "'v'", str(values.type))


# -- user metadata and application versions that cannot be stored ---------------------------
WRITES: dict[str, Callable[..., Any]] = {
    "store": lambda s, **kw: kf.store_dataframes_as_dataset(s, "new", [_df()], **kw),
    "update": lambda s, **kw: kf.update_dataset_from_dataframes([_df()], s, "ds", **kw),
    "dask": lambda s, **kw: kf.store_dataset_from_ddf(
        __import__("dask.dataframe").dataframe.from_pandas(_df(), npartitions=1), s, "new", **kw
    ).compute(),
}


@pytest.mark.parametrize("write", WRITES.values(), ids=WRITES.keys())
def test_metadata_that_cannot_be_encoded(dataset: kf.Store, write: Callable[..., Any]) -> None:
    keys = list(dataset.iter_keys())
    with pytest.raises(kf.InvalidTypeError) as info:
        write(dataset, metadata={"o": object()})
    check(info, kf.InvalidTypeError, TypeError, "metadata", "JSON", cause=TypeError)
    with pytest.raises(kf.InvalidTypeError):
        write(dataset, metadata={"n": 2**70})
    assert list(dataset.iter_keys()) == keys


@pytest.mark.parametrize("write", WRITES.values(), ids=WRITES.keys())
def test_app_version_beyond_64_bits(dataset: kf.Store, write: Callable[..., Any]) -> None:
    keys = list(dataset.iter_keys())
    with pytest.raises(kf.InvalidInputError) as info:
        write(dataset, app_id="job", app_version=2**70)
    check(info, kf.InvalidInputError, ValueError, "app_version", str(2**70), cause=TypeError)
    assert list(dataset.iter_keys()) == keys


def test_cube_metadata_that_cannot_be_encoded(tmp_path: Any) -> None:
    cube = kf.Cube(dimension_columns=("x",), partition_columns=("p",), uuid_prefix="c")
    with pytest.raises(kf.InvalidTypeError) as info:
        kf.build_cube(
            {"seed": pd.DataFrame({"x": [1], "p": [1]})},
            cube,
            str(tmp_path),
            metadata={"seed": {"o": object()}},
        )
    check(info, kf.InvalidTypeError, TypeError, "metadata of dataset seed", cause=TypeError)
    assert not any(tmp_path.iterdir())


# -- stores: missing bucket, missing credentials, unusable URLs ------------------------------
@pytest.mark.s3
def test_write_to_a_missing_bucket(s3_server: str) -> None:
    store = kf.Store(
        "s3://no-such-bucket/root",
        key="testing",
        secret="testing",
        client_kwargs={"endpoint_url": s3_server},
        skip_instance_cache=True,
    )
    with pytest.raises(kf.MissingBucketError) as info:
        store.put("a/b.txt", b"x")
    check(
        info,
        kf.MissingBucketError,
        OSError,
        "'no-such-bucket'",
        "does not exist",
        cause=FileNotFoundError,
    )
    assert not isinstance(info.value, FileNotFoundError)  # not "a missing key"
    with pytest.raises(kf.MissingBucketError) as write:
        kf.store_dataframes_as_dataset(store, "ds", [_df()])
    check(write, kf.MissingBucketError, OSError, "'no-such-bucket'", cause=FileNotFoundError)
    with pytest.raises(kf.MissingBucketError):
        kf.read_table("ds", store)


@pytest.mark.s3
def test_missing_s3_credentials(
    s3_server: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    import botocore.exceptions

    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    store = kf.Store(
        "s3://bucket/root", client_kwargs={"endpoint_url": s3_server}, skip_instance_cache=True
    )
    with pytest.raises(kf.StorageCredentialsError) as info:
        kf.store_dataframes_as_dataset(store, "ds", [_df()])
    e = check(info, kf.StorageCredentialsError, PermissionError, "credentials", "s3://bucket/root")
    assert isinstance(e, kf.StorageError)
    assert isinstance(e.__cause__, botocore.exceptions.NoCredentialsError)
    with pytest.raises(kf.StorageCredentialsError):
        kf.read_table("ds", store)


@pytest.mark.filterwarnings(
    "ignore::pytest.PytestUnraisableExceptionWarning"
)  # fsspec's FTP __del__
def test_ftp_url_without_host_is_refused_clearly() -> None:
    store = kf.Store("ftp:///data", retries=1)
    with pytest.raises(kf.InvalidInputError) as info:
        kf.read_table("ds", store)
    check(info, kf.InvalidInputError, ValueError, "ftp:///data", "'ftp'", "host", cause=TypeError)


@pytest.mark.filterwarnings(
    "ignore::pytest.PytestUnraisableExceptionWarning"
)  # fsspec's FTP __del__
def test_ftp_url_with_credentials_connects_with_them() -> None:
    # host, port, user and password come from the URL (was: TypeError, no host); port 1 of
    # the loopback refuses the connection: a StorageError that hides the password
    store = kf.Store("ftp://user:hunter2@127.0.0.1:1/data", retries=1)
    assert "hunter2" not in repr(store) and "user:***@127.0.0.1:1" in repr(store)
    with pytest.raises(kf.StorageError) as info:
        kf.read_table("ds", store)
    e = check(
        info,
        kf.StorageError,
        OSError,
        "ftp://user:***@127.0.0.1:1/data",
        cause=ConnectionRefusedError,
    )
    assert "hunter2" not in str(e)


# -- credentials are masked -------------------------------------------------------------------
NESTED_SECRETS = {
    "client_kwargs": {
        "endpoint_url": "http://admin:hunter2@minio.internal:9000",
        "aws_session_token": "tok-123456",
    },
    "config_kwargs": {"proxies": {"https": "http://proxyuser:pr0xypw@proxy:3128"}},
    "proxy_pass": "passw0rd",
    "account_url": "https://acct.blob.core.windows.net/c?sv=2020&sig=S1GNATURE",
    "nested": [{"api_key": "k-987"}],
}
SECRETS = ("hunter2", "tok-123456", "pr0xypw", "passw0rd", "S1GNATURE", "k-987")


def test_nested_credentials_are_masked_in_repr() -> None:
    store = kf.Store("s3://bucket/prefix", **NESTED_SECRETS)
    text = repr(store)
    for secret in SECRETS:
        assert secret not in text, secret
    assert "http://admin:***@minio.internal:9000" in text
    assert "http://proxyuser:***@proxy:3128" in text
    assert "sv=2020&sig=***" in text
    assert store.storage_options == NESTED_SECRETS  # the options themselves are unchanged


def test_nested_credentials_are_masked_in_errors() -> None:
    store = kf.Store("memory://masking", retries=1, **NESTED_SECRETS)

    def fail() -> None:  # what a client reports when it cannot reach its endpoint or proxy
        raise ConnectionError(
            'Could not connect to "http://admin:hunter2@minio.internal:9000" via '
            "http://proxyuser:pr0xypw@proxy:3128 (token tok-123456, sig S1GNATURE, passw0rd, k-987)"
        )

    with pytest.raises(kf.StorageError) as info:
        store.with_retry("get", "ds/x", fail)
    e = check(info, kf.StorageError, OSError, "'ds/x'", "memory://masking")
    for secret in SECRETS:
        assert secret not in str(e), secret
    assert e.__cause__ is None  # the original names the secrets: not chained


def test_store_url_password_is_masked_in_cli_output(capsys: pytest.CaptureFixture[str]) -> None:
    from kartoframe.cli import main

    url = "ftp://user:hunter2@127.0.0.1:1/data"
    for args in ([url, "ls"], [url, "--json", "info", "ds"]):
        code = main(args)
        out = capsys.readouterr()
        assert code == 1, (args, out)
        assert "hunter2" not in out.out + out.err
        assert "user:***@127.0.0.1:1" in out.err


# -- the command line reports corruption as corruption -------------------------------------------
def test_cli_reports_a_missing_data_file_as_corruption(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from kartoframe.cli import main

    store = kf.Store(str(tmp_path))
    kf.store_dataframes_as_dataset(store, "ds", [_df()], partition_on=["p"])
    key = _data_keys(store)[0]
    store.delete(key)
    assert main([str(tmp_path), "query", "ds", "--json"]) == 1
    err = json.loads(capsys.readouterr().err)["error"]
    assert (err["kind"], err["type"], err["exit_code"]) == ("corrupt", "MissingDataFileError", 1)
    assert key in err["message"] and "missing" in err["message"]
    store.put(key, b"garbage")
    assert main([str(tmp_path), "query", "ds"]) == 1
    assert "cannot be read as Parquet" in capsys.readouterr().err


# -- retention windows --------------------------------------------------------------------------
@pytest.mark.parametrize("hours", [math.inf, -math.inf, math.nan], ids=["inf", "-inf", "nan"])
@pytest.mark.parametrize("call", ["garbage_collect_dataset", "vacuum_dataset"])
def test_retention_hours_that_are_not_finite(dataset: kf.Store, call: str, hours: float) -> None:
    keys = list(dataset.iter_keys())
    with pytest.raises(kf.InvalidInputError) as info:
        getattr(kf, call)("ds", dataset, retention_hours=hours)
    check(info, kf.InvalidInputError, ValueError, "retention_hours")
    assert list(dataset.iter_keys()) == keys
