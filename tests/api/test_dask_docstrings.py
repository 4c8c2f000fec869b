"""The examples in the docstrings of the dask API, the accessors and the statistics run."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "kartoframe.api.dask",
    "kartoframe.api.dask_write",
    "kartoframe.api.accessor",
    "kartoframe.api.stats",
]


@pytest.mark.parametrize("module", MODULES)
def test_docstring_examples(module: str) -> None:
    mod = importlib.import_module(module)
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0
