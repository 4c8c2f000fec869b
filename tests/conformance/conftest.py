"""Fixtures of the conformance suite: reference datasets and a dask.distributed cluster."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from conformance_suite import all_types, write_reference

import kartoframe as kf


def _reference_store(store: kf.Store) -> Iterator[kf.Store]:
    write_reference(store)
    kf.store_dataframes_as_dataset(store=store, dataset_uuid="types", dfs=[all_types()])
    snapshot = sorted(store.iter_keys())
    yield store
    assert sorted(store.iter_keys()) == snapshot, "a read-only conformance test wrote"


@pytest.fixture(scope="session")
def file_ref_store(tmp_path_factory) -> Iterator[kf.Store]:
    """:func:`ref_store` in a local folder."""
    yield from _reference_store(kf.Store(f"file://{tmp_path_factory.mktemp('conformance')}/store"))


@pytest.fixture(scope="session")
def memory_ref_store() -> Iterator[kf.Store]:
    """:func:`ref_store` on ``memory://``."""
    yield from _reference_store(kf.Store(f"memory://kf-conformance-{uuid.uuid4().hex}"))


@pytest.fixture(scope="session", params=["file", "memory"])
def ref_store(request) -> kf.Store:
    """A store holding the reference datasets ``ds`` and ``types`` (read-only tests only).

    Written once per session with the eager writer; the read, predicate and dispatch suites
    must not modify it.
    """
    return request.getfixturevalue(f"{request.param}_ref_store")
