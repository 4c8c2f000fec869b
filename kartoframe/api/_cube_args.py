"""What the cube fronts (eager, dask, Spark) share: signatures reused, docstring fragments.

:func:`same_params` gives a front the parameters of another one: one typed signature
source, seen alike by mypy (``ParamSpec``), :func:`inspect.signature`, ``help()`` and
Sphinx. The cube fragments below extend :mod:`kartoframe.api._docs` (use its ``$name``
lines with :func:`fill`, imported from here so the fragments are registered first).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from kartoframe.api._docs import _TEXT, FRAGMENTS, _fragments, fill
from kartoframe.errors import InvalidTypeError
from kartoframe.format.cube import Cube

__all__ = ["check_cube", "fill", "same_params"]

P = ParamSpec("P")
R = TypeVar("R")

# parsed after the shared text, so ``$store`` and the like resolve
FRAGMENTS.update(
    _fragments(
        _TEXT
        + """\
== cube_query_params
cube
    The cube spec.
$store
conditions
    ``C("x") > 1``, a :class:`kartoframe.Conjunction` or a list of conditions.
datasets
    Dataset ids to query (default: all; the seed is required).
dimension_columns
    Ordered subset of the cube's dimensions (a strict subset projects).
partition_by
    Indexed columns: one frame per distinct value.
payload_columns
    Columns to return besides dimension, partition and partition-by columns.
== cube_examples
Examples
--------
>>> import pandas as pd, kartoframe as kf
>>> cube = kf.Cube(["COUNTRY_CODE"], ["YEAR"], uuid_prefix="docs_cube")
>>> df = pd.DataFrame({"COUNTRY_CODE": ["DE", "FR"], "YEAR": [2024, 2024],
...                    "SALES": [10.0, 20.0]})
== spark
spark
    The SparkSession.
== spark_store
store
    Store URL, :class:`kartoframe.Store` or factory. Local folders and fsspec
    object stores work; ``memory://`` does not (executors are other processes).
== spark_dataset
Parameters
----------
$spark
$uuid
$spark_store
== spark_raises
Raises
------
MissingDependencyError
    pyspark is not installed.
$not_found
"""
    )
)


def same_params(template: Callable[P, Any]) -> Callable[[Callable[..., R]], Callable[P, R]]:
    """Decorator: the function takes exactly ``template``'s parameters.

    The decorated function is written with ``**arguments`` and receives every parameter
    by name, defaults applied; its own return annotation and docstring (fragments
    expanded) are kept. ``__signature__`` is ``template``'s, so ``inspect.signature``,
    ``help()`` and Sphinx show the same keyword list mypy checks calls against.
    """
    signature = inspect.signature(template)

    def decorate(func: Callable[..., R]) -> Callable[P, R]:
        own = signature.replace(return_annotation=inspect.signature(func).return_annotation)

        @functools.wraps(func)
        def front(*args: P.args, **kwargs: P.kwargs) -> R:
            bound = own.bind(*args, **kwargs)
            bound.apply_defaults()
            return func(**bound.arguments)

        front.__signature__ = own  # type: ignore[attr-defined]
        front.__annotations__ = {**template.__annotations__, "return": own.return_annotation}
        del front.__wrapped__  # type: ignore[attr-defined]
        return fill(front)

    return decorate


def check_cube(cube: object) -> Cube:
    """``cube`` is a :class:`kartoframe.Cube` (the first check of every cube front)."""
    if not isinstance(cube, Cube):
        raise InvalidTypeError(f"cube must be a kartoframe.Cube, got {type(cube).__name__}.")
    return cube
