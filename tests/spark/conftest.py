"""The Spark tests use the session-scoped local SparkSession ``spark`` of ``tests/conftest.py``
(shared with the Spark bindings of the conformance suites); its log4j2 file
``log4j2.properties`` lives beside this module."""
