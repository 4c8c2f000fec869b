"""Listing ``memory://`` while other threads write.

fsspec lists its in-memory filesystem with ``tuple(store.items())`` over its process-wide
dict: one new tuple per key, and any allocation may start a garbage collection whose
finalizers run Python code, which lets another thread in. A write in that moment failed
the listing with ``RuntimeError: dictionary changed size during iteration``: concurrent
creates and GC on ``memory://`` failed that way in full test runs (where the dict holds
every earlier test's files). Listings now copy the dict first (``dict.copy``: one C call
that runs no Python code).

The test makes that interleaving certain: the filesystem's dict is replaced by one that
lets "another writer" add a key in the middle of any iteration over it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from fsspec.implementations.memory import MemoryFileSystem

import kartoframe as kf


class _WrittenDuringIteration(dict):  # type: ignore[type-arg]
    """A dict to which a concurrent writer adds a key while it is being iterated."""

    def _writer(self) -> None:
        dict.__setitem__(self, f"/concurrent/{uuid.uuid4().hex}", None)

    def __iter__(self) -> Iterator[Any]:
        for i, k in enumerate(dict.__iter__(self)):
            if i == 1:
                self._writer()
            yield k

    def items(self) -> Any:  # what fsspec's find/ls iterate
        def gen() -> Iterator[Any]:
            for i, kv in enumerate(dict.items(self)):
                if i == 1:
                    self._writer()
                yield kv

        return gen()


def test_listing_while_another_thread_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    store = kf.Store(f"memory://kf-list-race-{uuid.uuid4().hex}")
    for i in range(5):
        store.put(f"bulk/{i}", b"")
        store.put(f"_kartoframe/log/{i:020d}.json", b"{}")
    racing = _WrittenDuringIteration(MemoryFileSystem.store)
    monkeypatch.setattr(MemoryFileSystem, "store", racing)
    assert list(store.iter_keys("bulk/")) == [f"bulk/{i}" for i in range(5)]
    assert {p.rstrip("/") for p in store.iter_prefixes("")} == {"bulk", "_kartoframe"}
    assert len(store.find_details(store.path("bulk"))) == 5  # GC's listing with times
    assert list(store.iter_keys("_kartoframe/log/")) == [
        f"_kartoframe/log/{i:020d}.json" for i in range(5)
    ]
