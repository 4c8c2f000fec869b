"""Shared numpydoc fragments of the public docstrings.

A docstring line that is only ``$name`` is replaced by the fragment ``name`` (indented as
the line): the parameter descriptions the public functions share are written once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

# "== name" starts fragment ``name``; a line "$other" in it inserts fragment ``other``
_TEXT = """\
== store
store
    Store URL, :class:`kartoframe.Store` or factory.
== uuid
dataset_uuid
    The dataset.
== dataset
$uuid
$store
== store_dataset
$store
$uuid
== factory
factory
    plateau's ``DatasetFactory`` (or any object with ``dataset_uuid`` and
    ``store_factory``) instead of ``dataset_uuid`` and ``store``.
== not_found
DatasetNotFoundError
    The dataset does not exist.
== grace_hours
grace_hours
    Minimum age of a deleted file (default 1 hour). Shorter windows need ``force``.
== params_dataset
Parameters
----------
$dataset
== params_store_dataset
Parameters
----------
$store_dataset
== returns_deleted
Returns
-------
list of str
    The deleted keys (with ``dry_run``: the keys that would be deleted), sorted.
== returns_delayed
Returns
-------
dask.delayed.Delayed
    Computes to a :class:`kartoframe.DatasetMetadataResult`.
== raises_not_found
Raises
------
$not_found
== examples
Examples
--------
>>> import pandas as pd, kartoframe as kf
"""


def _fragments(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    name = ""
    for line in text.splitlines():
        if line.startswith("== "):
            name = line[3:]
            out[name] = []
        elif line.startswith("$"):
            out[name] += out[line[1:]]
        else:
            out[name].append(line)
    return out


FRAGMENTS = _fragments(_TEXT)


def expand(doc: str | None, extra: Mapping[str, str] | None = None) -> str | None:
    """``doc`` with every ``$name`` line replaced by its fragment: one of ``extra``
    (name -> text, e.g. a front's own fragments), else a shared one.
    """
    if doc is None:  # python -OO
        return None
    out: list[str] = []
    for line in doc.split("\n"):
        name = line.strip()[1:] if line.strip().startswith("$") else ""
        if extra is not None and name in extra:
            lines = extra[name].split("\n")
        elif name in FRAGMENTS:
            lines = FRAGMENTS[name]
        else:
            out.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip())]
        out += [indent + x for x in lines]
    return "\n".join(out)


def fill(func: F) -> F:
    """Decorator: expand the fragments of ``func``'s docstring."""
    func.__doc__ = expand(func.__doc__)
    return func
