"""Store construction and ``ensure_store``: accepted inputs, refused inputs, identity."""

from __future__ import annotations

import os
import pickle
import uuid
from pathlib import Path
from typing import Any

import fsspec
import pandas as pd
import pytest

import kartoframe as kf
from kartoframe.storage.store_arg import ensure_store


# -- accepted inputs -------------------------------------------------------------------------
def test_url_strings() -> None:
    s = ensure_store("memory://kf-construct")
    assert isinstance(s, kf.Store) and s.url == "memory://kf-construct"
    assert s.protocol == "memory" and not s.is_local
    s3 = ensure_store("s3://bucket/prefix/")
    assert s3.url == "s3://bucket/prefix" and s3.protocol == "s3"
    assert s3.path("a/b") == "bucket/prefix/a/b"


@pytest.mark.parametrize("form", ["file", "plain", "hfs", "pathlib", "relative"])
def test_local_forms_name_the_same_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, form: str
) -> None:
    folder = tmp_path / "store"
    monkeypatch.chdir(tmp_path)
    arg: Any = {
        "file": f"file://{folder}",
        "plain": str(folder),
        "hfs": f"hfs://{folder}",
        "pathlib": folder,
        "relative": "store",
    }[form]
    s = ensure_store(arg)
    assert s.is_local and s.url == f"file://{folder}"
    assert kf.Store(arg) == s
    assert s == kf.Store(f"file://{folder}")
    assert s.path("a/b") == f"{folder}/a/b"


def test_store_and_factories(tmp_path: Path) -> None:
    store = kf.Store(f"file://{tmp_path}")
    assert ensure_store(store) is store
    assert ensure_store(lambda: store) is store
    assert ensure_store(lambda: str(tmp_path)) == store
    assert ensure_store(lambda: tmp_path) == store


def test_public_functions_accept_every_form(tmp_path: Path) -> None:
    df = pd.DataFrame({"p": [1, 2], "v": [3, 4]})
    kf.store_dataframes_as_dataset(tmp_path, "a", [df], partition_on=["p"])
    kf.store_dataframes_as_dataset(lambda: str(tmp_path), "b", [df])
    for form in (str(tmp_path), f"hfs://{tmp_path}", tmp_path, lambda: kf.Store(str(tmp_path))):
        assert sorted(kf.read_table("a", form)["v"]) == [3, 4]
        assert sorted(kf.read_table("b", form)["v"]) == [3, 4]


# -- refused inputs ------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [5, None, b"/tmp/x", 1.5, ["memory://x"], {"url": "x"}], ids=repr)
def test_wrong_types(bad: Any) -> None:
    with pytest.raises(kf.InvalidTypeError) as info:
        ensure_store(bad)
    assert isinstance(info.value, TypeError) and type(bad).__name__ in str(info.value)


@pytest.mark.parametrize(
    "made",
    [5, None, b"x", object()],
    ids=lambda v: type(v).__name__ if type(v) is object else repr(v),
)
def test_factory_returning_the_wrong_type(made: Any) -> None:
    with pytest.raises(kf.InvalidTypeError, match=r"factory .* returned"):
        ensure_store(lambda: made)


def test_a_factory_returning_a_factory_is_refused() -> None:
    with pytest.raises(kf.InvalidTypeError):
        ensure_store(lambda: lambda: "memory://x")


@pytest.mark.parametrize(
    "bad", ["", "nope://bucket/x", "file://", "hfs://", "memory://x['u']"], ids=repr
)
def test_invalid_urls(bad: str) -> None:
    with pytest.raises(kf.InvalidInputError) as info:
        ensure_store(bad)
    assert isinstance(info.value, ValueError)


def test_invalid_constructor_arguments() -> None:
    with pytest.raises(kf.InvalidTypeError):
        kf.Store(5)  # type: ignore[arg-type]
    with pytest.raises(kf.InvalidTypeError):
        kf.Store("memory://x", filesystem="memory")  # type: ignore[arg-type]
    with pytest.raises(kf.InvalidTypeError):
        kf.Store("memory://x", retries="3")  # type: ignore[arg-type]
    assert kf.Store("memory://x", retries=0).retries == 1


# -- identity, laziness, roots ---------------------------------------------------------------------
def test_opening_is_lazy() -> None:
    """Nothing is contacted before the first verb (the endpoint here does not exist)."""
    s = kf.Store(
        "s3://bucket/x", key="k", secret="s", client_kwargs={"endpoint_url": "http://127.0.0.1:9"}
    )
    assert s.path("k") == "bucket/x/k"
    clone = pickle.loads(pickle.dumps(s))
    assert clone == s and repr(clone) == repr(s)


def test_password_in_url_is_hidden() -> None:
    s = kf.Store("ftp://user:SuperSecret789@example.invalid/dir")
    assert s.display_url == "ftp://user:***@example.invalid/dir"
    for text in (repr(s), repr(pickle.loads(pickle.dumps(s)))):
        assert "SuperSecret789" not in text and "user:***@" in text


def test_stores_with_shared_name_prefixes_are_separate(tmp_path: Path) -> None:
    tag = uuid.uuid4().hex
    for a, b in [
        (f"memory://kf-{tag}", f"memory://kf-{tag}x"),
        (f"file://{tmp_path}/s", f"file://{tmp_path}/s2"),
    ]:
        sa, sb = kf.Store(a), kf.Store(b)
        sa.put("k/a", b"a")
        sb.put("k/b", b"b")
        assert list(sa.iter_keys()) == ["k/a"]
        assert list(sb.iter_keys()) == ["k/b"]
        assert list(sa.iter_prefixes()) == ["k/"]
        sa.delete_many(list(sa.iter_keys()))
        sb.delete_many(list(sb.iter_keys()))


def test_injected_filesystem_is_used_and_travels() -> None:
    fs = fsspec.filesystem("memory")
    name = f"kf-inject-{uuid.uuid4().hex}"
    s = kf.Store(f"memory://{name}", filesystem=fs)
    assert s.fs is fs
    s.put("k", b"1")
    assert fs.cat_file(f"/{name}/k") == b"1"
    clone = pickle.loads(pickle.dumps(s))
    assert clone.get("k") == b"1"
    s.delete("k")


def test_local_delete_prunes_empty_folders(tmp_path: Path) -> None:
    s = kf.Store(f"file://{tmp_path}/store")
    s.put("a/b/c/k", b"1")
    s.put("a/x", b"1")
    s.delete("a/b/c/k")
    assert sorted(os.listdir(tmp_path / "store" / "a")) == ["x"]
    s.delete("a/x")
    assert os.listdir(tmp_path / "store") == []  # the root itself stays
    s.put("a/b/c/k", b"2")  # folders come back on the next write
    assert s.get("a/b/c/k") == b"2"
