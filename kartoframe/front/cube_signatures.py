"""The keyword lists of the cube verbs (kartothek's API), each keyword declared once.

A group below declares some keywords (name, type, default) once; a verb's signature source
is a dataclass made of its groups, which :func:`kartoframe.front.args.same_parameters`
gives the public verb: mypy (``ParamSpec``), :func:`inspect.signature`, ``help()`` and
Sphinx then see exactly these parameters. The eager, dask and Spark verbs differ only in
the groups they add.

The groups are :class:`~kartoframe.front.args.Keywords` dataclasses (the application
transaction and schema evolution ones are the dataset fronts', from
:mod:`kartoframe.front.dataset_signatures`). Fields come in reverse MRO order: a source
lists its groups **last first** (``class Build(_Txn, _Serializer, _Placement, _Metadata,
_Input)`` takes ``data, cube, store, metadata, overwrite, partition_on, df_serializer,
app_id, ...``); keyword-only fields (``kw_only=True`` groups and sources' own keywords)
come after all the others, in the same order.
``tests/cube/test_cube_public_signatures.py`` pins every resulting signature.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kartoframe.execution.write import ParquetSerializer
from kartoframe.format.cube import Cube
from kartoframe.format.schema import SchemaEvolution
from kartoframe.front.args import Keywords, StoreInput
from kartoframe.front.dataset_signatures import _Evolution, _Txn
from kartoframe.front.metadata import DatasetMetadata
from kartoframe.plan.conditions import ConditionsArg

#: ``pyspark.sql.SparkSession`` (pyspark is imported by the Spark engine only).
SparkSession = Any

# -- the keyword groups ----------------------------------------------------------------


class _Spark(Keywords):
    spark: SparkSession


class _Data(Keywords):
    data: Any


class _CubeStore(Keywords):
    cube: Cube
    store: StoreInput


class _Input(_CubeStore, _Data):  # data, cube, store
    pass


class _Conditions(Keywords):
    conditions: ConditionsArg = None


class _RemoveConditions(Keywords):
    remove_conditions: ConditionsArg = None


class _DatasetIds(Keywords):
    ktk_cube_dataset_ids: Iterable[str] | None = None


class _Removal(_DatasetIds, _RemoveConditions):  # remove_conditions, ktk_cube_dataset_ids
    pass


class _Metadata(Keywords):
    metadata: Mapping[str, Mapping[str, Any]] | None = None


class _Placement(Keywords):
    overwrite: bool = False
    partition_on: Mapping[str, Iterable[str]] | None = None


class _Shuffle(Keywords):
    shuffle: bool = False
    num_buckets: int = 1
    bucket_by: Iterable[str] | None = None


class _Serializer(Keywords):
    df_serializer: ParquetSerializer | None = None


# Spark's cube writes take everything after ``df_serializer`` by keyword only


class _Repartition(Keywords, kw_only=True):
    repartition: bool = True


class _KwEvolution(Keywords, kw_only=True):
    schema_evolution: SchemaEvolution = "none"


class _KwTxn(Keywords, kw_only=True):
    app_id: str | None = None
    app_version: int | None = None
    commit_info: Mapping[str, Any] | None = None


class _Datasets(Keywords):
    datasets: Iterable[str] | None = None


class _Shape(Keywords):
    dimension_columns: Iterable[str] | None = None
    partition_by: Iterable[str] | None = None
    payload_columns: Iterable[str] | None = None


class _Planning(Keywords):
    consistent_integers: bool = False


# -- the verbs' signature sources (groups last first) ----------------------------------


class Build(_Txn, _Serializer, _Placement, _Metadata, _Input):
    pass


class Append(_Txn, _Evolution, _Serializer, _Metadata, _Input):
    pass


class Update(_Txn, _Evolution, _Serializer, _Metadata, _Removal, _Input):
    pass


class Remove(_Txn, _Metadata, _DatasetIds, _Conditions, _CubeStore):
    pass


class DaskBuild(_Txn, _Serializer, _Shuffle, _Placement, _Metadata, _Input):
    pass


class DaskAppend(_Txn, _Evolution, _Serializer, _Shuffle, _Metadata, _Input):
    pass


class DaskUpdate(_Txn, _Evolution, _Serializer, _Shuffle, _Metadata, _Removal, _Input):
    pass


class SparkBuild(_KwTxn, _Repartition, _Serializer, _Placement, _Metadata, _Input):
    pass


class SparkAppend(_KwTxn, _KwEvolution, _Repartition, _Serializer, _Metadata, _Input):
    pass


class SparkUpdate(_KwTxn, _KwEvolution, _Repartition, _Serializer, _Metadata, _Removal, _Input):
    pass


class Query(_Shape, _Datasets, _Conditions, _CubeStore):
    pass


class PlanQuery(_Planning, _Shape, _Datasets, _Conditions, _CubeStore, kw_only=True):
    loaded: Mapping[str, DatasetMetadata] | None = None


class SparkQuery(_Datasets, _Shape, _Conditions, _CubeStore, _Spark, kw_only=True):
    sort: bool = True
