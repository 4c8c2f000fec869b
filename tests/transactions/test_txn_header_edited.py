"""A header edited by hand (or rewritten by another tool) that kept kartoframe's log map.

It still says "I am version v" but no longer is what the log has as version v. The next
commit used to diff against it as if it were version v: its log entry then failed its
digest check whenever it was replayed, and from then on ``vacuum_dataset``,
``garbage_collect_dataset``, time travel and history raised ``CorruptMetadataError``.
Now a committer compares the stored header with the digest recorded in the log and
adopts a header that does not match as an ``EXTERNAL`` version, as it does with headers
written by plateau.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

import kartoframe as kf
from kartoframe.format import naming
from kartoframe.storage import log


def _frame(p: int, v: int) -> pd.DataFrame:
    return pd.DataFrame({"p": [p, p], "v": [v, v + 1]})


def _edit_header(store: kf.Store, uuid: str, edit) -> None:  # type: ignore[no-untyped-def]
    key = naming.header_key(uuid, "json")
    doc = json.loads(store.get(key))
    assert "kartoframe" in doc, "the edit keeps kartoframe's map"
    edit(doc)
    store.put(key, json.dumps(doc).encode())


def _drop_partition(label_prefix: str):  # type: ignore[no-untyped-def]
    def edit(doc: dict) -> None:  # type: ignore[type-arg]
        doc["partitions"] = {
            lb: v for lb, v in doc["partitions"].items() if not lb.startswith(label_prefix)
        }

    return edit


@pytest.fixture
def edited(store: kf.Store) -> kf.Store:
    """p=0 and p=1 committed by kartoframe; then p=1 removed from the header by hand."""
    kf.store_dataframes_as_dataset(store, "d", [_frame(0, 0)], partition_on=["p"])
    kf.update_dataset_from_dataframes([_frame(1, 10)], store, "d")
    _edit_header(store, "d", _drop_partition("p=1/"))
    return store


def test_commit_on_edited_header_adopts_it_and_everything_keeps_working(edited) -> None:
    store = edited
    kf.update_dataset_from_dataframes([_frame(2, 20)], store, "d")
    # the hand edit stands (p=1 is gone), the append landed
    assert sorted(kf.read_table("d", store)["v"].tolist()) == [0, 1, 20, 21]
    history = kf.dataset_history("d", store)
    assert [h.operation for h in history] == ["APPEND", "EXTERNAL", "APPEND", "CREATE"]
    # every version replays: time travel to each of them, history, checks of the log
    for h in history:
        state = log.state_at(store, "d", h.version)
        assert state.header is not None
    assert sorted(kf.read_table("d", store, version=1)["v"].tolist()) == [0, 1, 10, 11]
    assert sorted(kf.read_table("d", store, version=2)["v"].tolist()) == [0, 1]
    # maintenance works with its defaults and with the shortest window
    kf.garbage_collect_dataset("d", store)
    kf.vacuum_dataset("d", store)
    kf.vacuum_dataset("d", store, retention_hours=0, force=True)
    assert sorted(kf.read_table("d", store)["v"].tolist()) == [0, 1, 20, 21]
    kf.delete_dataset("d", store)
    assert not list(store.iter_keys("d/"))


def test_edited_header_with_a_missing_file(store) -> None:
    """Partition removed by hand and its file deleted: appends, vacuum and delete work."""
    kf.store_dataframes_as_dataset(store, "d", [_frame(0, 0), _frame(1, 10)], partition_on=["p"])
    md = kf.read_dataset_metadata("d", store)
    gone = next(k for lb, k in md.partitions.items() if lb.startswith("p=1/"))
    _edit_header(store, "d", _drop_partition("p=1/"))
    store.delete(gone)
    kf.update_dataset_from_dataframes([_frame(2, 20)], store, "d")
    kf.update_dataset_from_dataframes([_frame(3, 30)], store, "d")
    assert sorted(kf.read_table("d", store)["p"].unique().tolist()) == [0, 2, 3]
    assert [h.operation for h in kf.dataset_history("d", store)] == [
        "APPEND",
        "APPEND",
        "EXTERNAL",
        "CREATE",
    ]
    kf.vacuum_dataset("d", store, retention_hours=0, force=True)
    assert sorted(kf.read_table("d", store)["p"].unique().tolist()) == [0, 2, 3]
    kf.delete_dataset("d", store)
    assert not list(store.iter_keys("d/"))


def test_unedited_header_is_not_adopted(store) -> None:
    """The check costs nothing in history: an unedited dataset gets no EXTERNAL entry."""
    kf.store_dataframes_as_dataset(store, "d", [_frame(0, 0)], partition_on=["p"])
    for i in range(1, 4):
        kf.update_dataset_from_dataframes([_frame(i, 10 * i)], store, "d")
    ops = [h.operation for h in kf.dataset_history("d", store)]
    assert ops == ["APPEND", "APPEND", "APPEND", "CREATE"]
    entry = log.read_entry(store, "d", 3)
    assert entry is not None and entry.header_file_sha256 is not None
