"""The ``make demo`` application: kartoframe used as a user would, outside the package.

``python -m demo --store ./demo-data`` (what ``make demo`` runs) writes and reads a realistic
partitioned, indexed dataset with pandas, dask, cubes and Spark (see :mod:`demo.run`). It
imports only kartoframe's public API; it is not part of the kartoframe package or its wheel.
"""
