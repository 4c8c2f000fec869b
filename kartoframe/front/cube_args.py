"""What the cube fronts (eager, dask, Spark) share: the cube check, docstring fragments.

The cube and Spark fragments below extend :mod:`kartoframe.front.docs` (use their ``$name``
lines with :func:`fill`, imported from here so the fragments are registered first).
Fronts with the same parameters share one signature with
:func:`kartoframe.front.args.same_parameters`.
"""

from __future__ import annotations

from kartoframe.errors import InvalidTypeError
from kartoframe.format.cube import Cube
from kartoframe.front.docs import _TEXT, FRAGMENTS, _fragments, fill

__all__ = ["check_cube", "fill"]

# parsed after the shared text, so ``$store`` and the like resolve
FRAGMENTS.update(
    _fragments(
        _TEXT
        + """\
== cube_prefix
uuid_prefix
    The cube prefix.
$store
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


def check_cube(cube: object) -> Cube:
    """``cube`` is a :class:`kartoframe.Cube` (the first check of every cube front)."""
    if not isinstance(cube, Cube):
        raise InvalidTypeError(f"cube must be a kartoframe.Cube, got {type(cube).__name__}.")
    return cube
