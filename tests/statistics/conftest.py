"""The session SparkSession of ``tests/spark/conftest.py``, for the Spark statistics test."""

from __future__ import annotations

import importlib.util
import pathlib

_path = pathlib.Path(__file__).parent.parent / "spark" / "conftest.py"
_spec = importlib.util.spec_from_file_location("_kartoframe_spark_conftest", _path)
assert _spec is not None and _spec.loader is not None
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)

spark = _module.spark
