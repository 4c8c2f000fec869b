"""Shared numpydoc fragments of the public docstrings.

A docstring line that is only ``$name`` is replaced by the fragment ``name`` (indented as
the line): the parameter descriptions the public functions share are written once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

_STORE = "store\n    Store URL, :class:`kartoframe.Store` or factory."
_UUID = "dataset_uuid\n    The dataset."
FRAGMENTS = {
    "store": _STORE,
    "dataset": f"{_UUID}\n{_STORE}",
    "store_dataset": f"{_STORE}\n{_UUID}",
    "factory": "factory\n    plateau's ``DatasetFactory`` (or any object with ``dataset_uuid``"
    " and\n    ``store_factory``) instead of ``dataset_uuid`` and ``store``.",
    "not_found": "DatasetNotFoundError\n    The dataset does not exist.",
    "result": "dask.delayed.Delayed\n    Computes to a :class:`kartoframe.DatasetMetadataResult`.",
}


def expand(doc: str | None) -> str | None:
    """``doc`` with every ``$name`` line replaced by its fragment."""
    if doc is None:  # python -OO
        return None
    out: list[str] = []
    for line in doc.split("\n"):
        name = line.strip()
        if name.startswith("$") and name[1:] in FRAGMENTS:
            indent = line[: len(line) - len(line.lstrip())]
            out += [indent + x for x in FRAGMENTS[name[1:]].split("\n")]
        else:
            out.append(line)
    return "\n".join(out)


def fill(func: F) -> F:
    """Decorator: expand the fragments of ``func``'s docstring."""
    func.__doc__ = expand(func.__doc__)
    return func
