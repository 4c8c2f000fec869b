"""The file of a read plan: one data file and the partition values in its key.

Its own module because both :mod:`kartoframe.plan.scan` (the plans) and
:mod:`kartoframe.plan.integers` (decided while planning) use it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["FilePart"]


@dataclasses.dataclass(frozen=True, slots=True)
class FilePart:
    """One data file to read and the partition values encoded in its key."""

    label: str
    key: str
    partition_values: tuple[Any, ...]
