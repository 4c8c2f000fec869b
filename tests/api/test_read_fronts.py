"""Every dataset read front checks the shared read arguments alike (front/args.read_front)."""

from __future__ import annotations

import pandas as pd
import pytest

import kartoframe as kf
from kartoframe.errors import InvalidInputError, InvalidTypeError

FRONTS = [
    kf.read_table,
    kf.read_dataset_as_dataframes,
    lambda *a, **k: list(kf.read_dataset_as_dataframes__iterator(*a, **k)),
    kf.read_dataset_as_ddf,
    kf.read_dataset_as_delayed,
    kf.read_dataset_as_dataframe_bag,
]


@pytest.fixture(scope="module")
def url() -> str:
    url = "memory://read-fronts"
    df = pd.DataFrame({"p": [1, 2], "x": [3, 4]})
    kf.store_dataframes_as_dataset(url, "ds", [df], partition_on=["p"], overwrite=True)
    return url


@pytest.mark.parametrize("front", FRONTS)
def test_the_same_checks_in_the_same_order(front, url: str) -> None:
    with pytest.raises(InvalidInputError, match="predicate_pushdown_to_io must be a bool"):
        front("ds", url, predicate_pushdown_to_io="yes")
    # the pushdown flag is checked before plateau's factory
    with pytest.raises(InvalidInputError, match="predicate_pushdown_to_io must be a bool"):
        front(predicate_pushdown_to_io="yes", factory=object())
    with pytest.raises(InvalidTypeError, match="factory must be a plateau DatasetFactory"):
        front(factory=object())
    with pytest.raises(InvalidInputError, match="differs from the factory's"):
        front("other", factory=type("F", (), {"dataset_uuid": "ds", "store_factory": url})())


def _rows(result: object) -> pd.DataFrame:
    """The rows a front's result computes to, in one frame sorted by ``p``."""
    import dask
    import dask.bag as db
    import dask.dataframe as dd

    if isinstance(result, dd.DataFrame | db.Bag):
        result = result.compute(scheduler="sync")
    if isinstance(result, list) and result and not isinstance(result[0], pd.DataFrame):
        result = list(dask.compute(*result, scheduler="sync"))
    frames = result if isinstance(result, list) else [result]
    return pd.concat(frames).sort_values("p").reset_index(drop=True)


@pytest.mark.parametrize("front", FRONTS)
def test_a_factory_reads_like_uuid_and_store(front, url: str) -> None:
    factory = type("F", (), {"dataset_uuid": "ds", "store_factory": url})()
    by_factory = _rows(front(factory=factory, columns=["p", "x"]))
    pd.testing.assert_frame_equal(by_factory, _rows(front("ds", url, columns=["p", "x"])))
    assert by_factory["x"].tolist() == [3, 4]
