"""The keyword lists of the cube verbs (kartothek's API), each keyword declared once.

A group below declares some keywords (name, type, default) once; a verb's signature source
is a dataclass made of its groups, which :func:`kartoframe.api._args.same_parameters`
gives the public verb: mypy (``ParamSpec``), :func:`inspect.signature`, ``help()`` and
Sphinx then see exactly these parameters. The eager, dask and Spark verbs differ only in
the groups they add.

Dataclass fields come in reverse MRO order: a source lists its groups **last first**
(``class Build(_Txn, _Serializer, _Placement, _Metadata, _Input)`` takes ``data, cube,
store, metadata, overwrite, partition_on, df_serializer, app_id, ...``); keyword-only
fields (``kw_only=True`` groups, fields after ``KW_ONLY``) come after all the others,
in the same order. ``tests/cube/test_cube_public_signatures.py`` pins every resulting
signature.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from kartoframe.api._args import StoreInput
from kartoframe.api.metadata import DatasetMetadata
from kartoframe.execution.write import ParquetSerializer
from kartoframe.format.cube import Cube
from kartoframe.format.schema import SchemaEvolution
from kartoframe.plan.conditions import ConditionsArg

#: ``pyspark.sql.SparkSession`` (pyspark is imported by the Spark engine only).
SparkSession = Any

# -- the keyword groups ----------------------------------------------------------------


@dataclasses.dataclass
class _Spark:
    spark: SparkSession


@dataclasses.dataclass
class _Data:
    data: Any


@dataclasses.dataclass
class _CubeStore:
    cube: Cube
    store: StoreInput


@dataclasses.dataclass
class _Input(_CubeStore, _Data):  # data, cube, store
    pass


@dataclasses.dataclass
class _Conditions:
    conditions: ConditionsArg = None


@dataclasses.dataclass
class _RemoveConditions:
    remove_conditions: ConditionsArg = None


@dataclasses.dataclass
class _DatasetIds:
    ktk_cube_dataset_ids: Iterable[str] | None = None


@dataclasses.dataclass
class _Removal(_DatasetIds, _RemoveConditions):  # remove_conditions, ktk_cube_dataset_ids
    pass


@dataclasses.dataclass
class _Metadata:
    metadata: Mapping[str, Mapping[str, Any]] | None = None


@dataclasses.dataclass
class _Placement:
    overwrite: bool = False
    partition_on: Mapping[str, Iterable[str]] | None = None


@dataclasses.dataclass
class _Shuffle:
    shuffle: bool = False
    num_buckets: int = 1
    bucket_by: Iterable[str] | None = None


@dataclasses.dataclass
class _Serializer:
    df_serializer: ParquetSerializer | None = None


@dataclasses.dataclass
class _Evolution:
    schema_evolution: SchemaEvolution = "none"


@dataclasses.dataclass
class _Txn:
    app_id: str | None = None
    app_version: int | None = None
    commit_info: Mapping[str, Any] | None = None


# Spark's cube writes take everything after ``df_serializer`` by keyword only


@dataclasses.dataclass(kw_only=True)
class _Repartition:
    repartition: bool = True


@dataclasses.dataclass(kw_only=True)
class _KwEvolution:
    schema_evolution: SchemaEvolution = "none"


@dataclasses.dataclass(kw_only=True)
class _KwTxn:
    app_id: str | None = None
    app_version: int | None = None
    commit_info: Mapping[str, Any] | None = None


@dataclasses.dataclass
class _Datasets:
    datasets: Iterable[str] | None = None


@dataclasses.dataclass
class _Shape:
    dimension_columns: Iterable[str] | None = None
    partition_by: Iterable[str] | None = None
    payload_columns: Iterable[str] | None = None


# -- the verbs' signature sources (groups last first) ----------------------------------


@dataclasses.dataclass
class Build(_Txn, _Serializer, _Placement, _Metadata, _Input):
    pass


@dataclasses.dataclass
class Append(_Txn, _Evolution, _Serializer, _Metadata, _Input):
    pass


@dataclasses.dataclass
class Update(_Txn, _Evolution, _Serializer, _Metadata, _Removal, _Input):
    pass


@dataclasses.dataclass
class Remove(_Txn, _Metadata, _DatasetIds, _Conditions, _CubeStore):
    pass


@dataclasses.dataclass
class DaskBuild(_Txn, _Serializer, _Shuffle, _Placement, _Metadata, _Input):
    pass


@dataclasses.dataclass
class DaskAppend(_Txn, _Evolution, _Serializer, _Shuffle, _Metadata, _Input):
    pass


@dataclasses.dataclass
class DaskUpdate(_Txn, _Evolution, _Serializer, _Shuffle, _Metadata, _Removal, _Input):
    pass


@dataclasses.dataclass
class SparkBuild(_KwTxn, _Repartition, _Serializer, _Placement, _Metadata, _Input):
    pass


@dataclasses.dataclass
class SparkAppend(_KwTxn, _KwEvolution, _Repartition, _Serializer, _Metadata, _Input):
    pass


@dataclasses.dataclass
class SparkUpdate(_KwTxn, _KwEvolution, _Repartition, _Serializer, _Metadata, _Removal, _Input):
    pass


@dataclasses.dataclass
class Query(_Shape, _Datasets, _Conditions, _CubeStore):
    pass


@dataclasses.dataclass
class PlanQuery(_Shape, _Datasets, _Conditions, _CubeStore):
    consistent_integers: bool = False
    _: dataclasses.KW_ONLY
    loaded: Mapping[str, DatasetMetadata] | None = None


@dataclasses.dataclass
class SparkQuery(_Datasets, _Shape, _Conditions, _CubeStore, _Spark):
    _: dataclasses.KW_ONLY
    sort: bool = True
