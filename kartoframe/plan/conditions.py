"""The cube condition language: ``C("x") > 1``, ``.isin``, ``.in_interval``, ``&``.

Conditions are values (frozen, hashable); a :class:`Conjunction` is the AND of several.
They compile to one DNF conjunction of :mod:`kartoframe.plan.predicates`
(:meth:`Conjunction.predicate`), so pruning by partition keys and secondary indices and
row filtering reuse the dataset machinery. There is no OR, no NOT, no column-vs-column
comparison and no NULL literal, exactly as in kartothek's cube conditions.

Row semantics are SQL-like: a comparison with a NULL cell is false (``!=`` included).

Examples
--------
>>> from kartoframe import C
>>> cond = (C("COUNTRY_CODE") == "DE") & C("DATE").in_interval(None, 20)
>>> sorted(cond.columns)
['COUNTRY_CODE', 'DATE']
>>> cond.predicate
[('COUNTRY_CODE', '==', 'DE'), ('DATE', '<', 20)]
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, NoReturn

import numpy as np
import pandas as pd
import pyarrow as pa

from kartoframe.errors import InvalidInputError, InvalidPredicateError, InvalidTypeError
from kartoframe.format.values import is_null_value, normalize_literal

__all__ = [
    "C",
    "Condition",
    "ConditionsArg",
    "Conjunction",
    "InIntervalCondition",
    "IsInCondition",
    "SimpleCondition",
    "VirtualColumn",
    "check_condition_types",
]


def _check_value(column: str, value: object) -> None:
    if isinstance(value, VirtualColumn):
        raise InvalidTypeError("Cannot compare two columns.")
    if isinstance(value, Condition | Conjunction):
        raise InvalidTypeError("Cannot use nested conditions.")
    if isinstance(value, list | tuple | set | frozenset | dict | np.ndarray | pd.Series):
        raise InvalidTypeError(
            f'Cannot compare column "{column}" with a collection {value!r}; use .isin([...]).'
        )
    if is_null_value(value):
        raise InvalidInputError(f'Cannot use NULL-value to compare w/ column "{column}"')


def _hashable(value: Any) -> Any:
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


class VirtualColumn:
    """A column reference that builds conditions with Python operators.

    ``C("a") == 1``, ``!=``, ``<``, ``<=``, ``>``, ``>=``, ``C("a").isin([1, 2])`` and
    ``C("a").in_interval(start, stop)`` (start inclusive, stop exclusive, either None).
    """

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        if isinstance(name, bytes):
            name = name.decode("utf-8")
        if not isinstance(name, str):
            raise InvalidTypeError(f"Object of type {type(name).__name__} is not a string: {name}")
        self.name = name

    def __repr__(self) -> str:
        return f"C({self.name!r})"

    __hash__ = object.__hash__

    def __eq__(self, other: object) -> SimpleCondition:  # type: ignore[override]
        return SimpleCondition(self.name, "==", other)

    def __ne__(self, other: object) -> SimpleCondition:  # type: ignore[override]
        return SimpleCondition(self.name, "!=", other)

    def __lt__(self, other: object) -> SimpleCondition:
        return SimpleCondition(self.name, "<", other)

    def __le__(self, other: object) -> SimpleCondition:
        return SimpleCondition(self.name, "<=", other)

    def __gt__(self, other: object) -> SimpleCondition:
        return SimpleCondition(self.name, ">", other)

    def __ge__(self, other: object) -> SimpleCondition:
        return SimpleCondition(self.name, ">=", other)

    def isin(self, values: Iterable[Any]) -> IsInCondition:
        """Values of the column must be one of ``values``."""
        return IsInCondition(self.name, values)  # type: ignore[arg-type]

    def in_interval(self, start: Any = None, stop: Any = None) -> InIntervalCondition:
        """``start <= column < stop``; a None bound is open (both None: no condition)."""
        return InIntervalCondition(self.name, start, stop)


#: ``C("col")`` builds conditions (kartothek's name).
C = VirtualColumn


@dataclasses.dataclass(frozen=True, slots=True)
class Condition:
    """A condition on one column (abstract). Combine conditions with ``&``."""

    column: str

    def __bool__(self) -> NoReturn:
        raise InvalidTypeError(
            "Cannot check if a condition is non-zero.\n"
            "Hint: Did you just tried something like `bool(condition)` or `A <= column < B`?"
        )

    def __and__(self, other: Condition | Conjunction) -> Conjunction:
        return Conjunction([self]) & other

    @property
    def active(self) -> bool:
        """False for conditions that restrict nothing (an open interval)."""
        return True

    @property
    def predicate_part(self) -> list[tuple[str, str, Any]]:
        """The ``(column, op, value)`` literals of this condition (AND-ed)."""
        raise NotImplementedError

    def filter_df(self, df: pd.DataFrame) -> pd.DataFrame:
        """Rows of ``df`` for which the condition holds."""
        return Conjunction([self]).filter_df(df)

    @staticmethod
    def from_string(text: str, all_types: Mapping[str, pa.DataType]) -> Condition:
        """Parse ``"col op value"`` (``op`` in ``== = != < <= > >=``) using the column type.

        Parameters
        ----------
        text
            E.g. ``"x > 1"``, ``"(COUNTRY_CODE == 'DE')"``, ``"DATE >= 2024-01-31"``.
        all_types
            Arrow type of every known column (to parse the value).

        Raises
        ------
        InvalidInputError
            Unparsable text, unknown column, or a value not of the column's type.

        Examples
        --------
        >>> import pyarrow as pa
        >>> from kartoframe import Condition
        >>> Condition.from_string("x > 1", {"x": pa.int64()})
        SimpleCondition(column='x', op='>', value=1)
        """
        m = _CONDITION_RE.match(text)
        if not m:
            raise InvalidInputError(f'Cannot parse condition "{text}"')
        col, op, raw = m.groups()
        pa_type = all_types.get(col)
        if pa_type is None:
            raise InvalidInputError(f'Unknown column "{col}" in condition "{text}"')
        try:
            value = _string_parser(pa_type)(raw.strip())
        except (ValueError, TypeError) as e:
            raise InvalidInputError(
                f'Cannot parse value "{raw.strip()}" of condition "{text}" as {pa_type}: {e}'
            ) from e
        return SimpleCondition(col, "==" if op == "=" else op, value)


_CONDITION_RE = re.compile(
    r"""^\s*\(?\s*([^!<>=\s]+)\s*(==|=|<=|<|>=|>|!=)([^)=]+)\)?\s*$""",
)


def bool_word(x: str) -> bool | None:
    """The boolean a word of a condition stands for (``1 t y true yes`` / ``0 f n false
    no``, any case), or None for any other word.
    """
    low = x.lower()
    if low in ("0", "f", "n", "false", "no"):
        return False
    if low in ("1", "t", "y", "true", "yes"):
        return True
    return None


def _parse_bool(x: str) -> bool:
    value = bool_word(x)
    if value is None:
        raise ValueError(f"Cannot parse bool: {x}")
    return value


def _unquote(x: str) -> str:
    if len(x) > 1:
        for char in ('"', "'"):
            if x.startswith(char) and x.endswith(char):
                return x[1:-1]
    return x


def _string_parser(t: pa.DataType) -> Callable[[str], Any]:
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_boolean(t):
        return _parse_bool
    if pa.types.is_floating(t):
        return float
    if pa.types.is_integer(t):
        return int
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return _unquote
    if pa.types.is_timestamp(t):
        return lambda x: pd.Timestamp(_unquote(x)).to_pydatetime()
    if pa.types.is_date(t):
        return lambda x: dt.date.fromisoformat(_unquote(x))
    raise ValueError(f"Cannot handle type {t}")


_OPS = ("==", "!=", "<", "<=", ">", ">=")


@dataclasses.dataclass(frozen=True, slots=True)
class SimpleCondition(Condition):
    """``column op value`` with ``op`` one of ``== != < <= > >=``."""

    op: str
    value: Any

    def __post_init__(self) -> None:
        if self.op not in _OPS:
            raise InvalidInputError(f"Unknown operator {self.op!r}; use one of {_OPS}.")
        _check_value(self.column, self.value)

    def __hash__(self) -> int:
        return hash((self.column, self.op, _hashable(self.value)))

    def __str__(self) -> str:
        return f"{self.column} {self.op} {self.value}"

    @property
    def predicate_part(self) -> list[tuple[str, str, Any]]:
        """One literal."""
        return [(self.column, self.op, self.value)]


@dataclasses.dataclass(frozen=True, slots=True)
class IsInCondition(Condition):
    """``column in values``."""

    values: tuple[Any, ...]

    def __post_init__(self) -> None:
        vals = self.values
        if isinstance(vals, str | bytes) or not isinstance(vals, Iterable):
            raise InvalidTypeError(
                f'isin on column "{self.column}" needs a list of values, got {vals!r}.'
            )
        items = tuple(vals)
        for v in items:
            _check_value(self.column, v)
        object.__setattr__(self, "values", items)

    def __hash__(self) -> int:
        return hash((self.column, "in", tuple(_hashable(v) for v in self.values)))

    def __str__(self) -> str:
        return f"{self.column} in {self.values}"

    @property
    def value(self) -> tuple[Any, ...]:
        """The accepted values (kartothek's attribute name)."""
        return self.values

    @property
    def predicate_part(self) -> list[tuple[str, str, Any]]:
        """One ``in`` literal."""
        return [(self.column, "in", list(self.values))]


@dataclasses.dataclass(frozen=True, slots=True)
class InIntervalCondition(Condition):
    """``start <= column < stop``; a None bound is open."""

    start: Any = None
    stop: Any = None

    def __post_init__(self) -> None:
        for v in (self.start, self.stop):
            if v is not None:
                _check_value(self.column, v)

    def __hash__(self) -> int:
        return hash((self.column, "in_interval", _hashable(self.start), _hashable(self.stop)))

    def __str__(self) -> str:
        return f"{self.column}.in_interval({self.start}, {self.stop})"

    @property
    def active(self) -> bool:
        """Whether at least one bound is set."""
        return self.start is not None or self.stop is not None

    @property
    def predicate_part(self) -> list[tuple[str, str, Any]]:
        """Up to two literals."""
        out: list[tuple[str, str, Any]] = []
        if self.start is not None:
            out.append((self.column, ">=", self.start))
        if self.stop is not None:
            out.append((self.column, "<", self.stop))
        return out


class Conjunction:
    """The AND of several conditions (possibly on several columns).

    Parameters
    ----------
    conditions
        None, a :class:`Condition`, a :class:`Conjunction` or an iterable of conditions.
    """

    __slots__ = ("conditions",)
    conditions: tuple[Condition, ...]

    def __init__(self, conditions: object = None) -> None:
        if conditions is None:
            items: tuple[Any, ...] = ()
        elif isinstance(conditions, Conjunction):
            items = conditions.conditions
        elif isinstance(conditions, Condition):
            items = (conditions,)
        elif isinstance(conditions, Iterable) and not isinstance(conditions, str | bytes):
            items = tuple(conditions)
        else:
            items = (conditions,)
        flat: list[Condition] = []
        for c in items:
            if isinstance(c, Conjunction):
                flat.extend(c.conditions)
            elif isinstance(c, Condition):
                flat.append(c)
            else:
                raise InvalidTypeError("Can only build conjunction out of conditions.")
        object.__setattr__(self, "conditions", tuple(flat))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Conjunction is immutable")

    def __and__(self, other: Condition | Conjunction) -> Conjunction:
        if not isinstance(other, Condition | Conjunction):
            raise InvalidTypeError("Can only build conjunction out of conditions.")
        return Conjunction([*self.conditions, *Conjunction(other).conditions])

    def __bool__(self) -> NoReturn:
        raise InvalidTypeError("Cannot check if a conjunction is non-zero.")

    def __iter__(self) -> Iterator[Condition]:
        return iter(self.conditions)

    def __len__(self) -> int:
        return len(self.conditions)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Conjunction) and self.conditions == other.conditions

    def __hash__(self) -> int:
        return hash(self.conditions)

    def __repr__(self) -> str:
        return f"Conjunction({list(self.conditions)!r})"

    def __str__(self) -> str:
        return " & ".join(f"({c})" for c in self.conditions)

    def __getstate__(self) -> tuple[Condition, ...]:
        return self.conditions

    def __setstate__(self, state: tuple[Condition, ...]) -> None:
        object.__setattr__(self, "conditions", state)

    @property
    def columns(self) -> set[str]:
        """Columns restricted by the (active) conditions."""
        return {c.column for c in self.conditions if c.active}

    @property
    def predicate(self) -> list[tuple[str, str, Any]]:
        """One DNF conjunction: the AND-ed ``(column, op, value)`` literals."""
        return [lit for c in self.conditions for lit in c.predicate_part]

    def split_by_column(self) -> dict[str, Conjunction]:
        """One conjunction per restricted column."""
        out: dict[str, list[Condition]] = {}
        for c in self.conditions:
            if c.active:
                out.setdefault(c.column, []).append(c)
        return {col: Conjunction(conds) for col, conds in out.items()}

    def restrict(self, columns: Iterable[str]) -> Conjunction:
        """The sub-conjunction of conditions on ``columns``."""
        cols = set(columns)
        return Conjunction([c for c in self.conditions if c.active and c.column in cols])

    def to_predicates(self) -> list[list[tuple[str, str, Any]]] | None:
        """DNF predicates (one conjunction) for :func:`kartoframe.plan.predicates.bind`."""
        lits = self.predicate
        return [lits] if lits else None

    def filter_df(self, df: pd.DataFrame) -> pd.DataFrame:
        """Rows of ``df`` satisfying every condition (NULL cells never match)."""
        mask = np.ones(len(df), dtype=bool)
        for col, op, value in self.predicate:
            s = df[col]
            if op == "in":
                m = s.isin(list(value))
            elif op == "==":
                m = s == value
            elif op == "!=":
                m = s != value
            elif op == "<":
                m = s < value
            elif op == "<=":
                m = s <= value
            elif op == ">":
                m = s > value
            else:
                m = s >= value
            mask &= np.asarray(m.fillna(False), dtype=bool) & np.asarray(s.notna(), dtype=bool)
        return df.loc[mask]


#: What the ``conditions`` arguments accept.
ConditionsArg = Condition | Conjunction | Iterable[Condition] | None


def _pd_type_name(t: pa.DataType) -> str:
    try:
        return str(t.to_pandas_dtype().__name__)
    except (NotImplementedError, AttributeError, TypeError):
        return str(t)


def check_condition_types(conditions: Conjunction, schemas: Mapping[str, pa.Schema]) -> None:
    """Check every literal against the column type in every dataset holding the column.

    All-NULL columns (arrow type ``null``) are skipped; numpy signed/unsigned integers must
    match the column's signedness.

    Raises
    ------
    InvalidTypeError
        ``Condition `x > 1.5` has wrong type. Expected `int64 (int64)` but got `1.5 (float)```.
    """
    for cond in conditions.conditions:
        for col, op, value in cond.predicate_part:
            values = list(value) if op == "in" else [value]
            for ds_id in sorted(schemas):
                schema = schemas[ds_id]
                if col not in schema.names:
                    continue
                t = schema.field(col).type
                if pa.types.is_null(t):
                    continue
                for v in values:
                    if not _literal_ok(col, t, v):
                        raise InvalidTypeError(
                            f"Condition `{cond}` has wrong type. Expected `{t} "
                            f"({_pd_type_name(t)})` but got `{v} ({type(v).__name__})`"
                        )


def _literal_ok(col: str, t: pa.DataType, v: Any) -> bool:
    dtype = getattr(v, "dtype", None)
    if isinstance(dtype, np.dtype) and dtype.kind in "iu":
        base = t.value_type if pa.types.is_dictionary(t) else t
        if dtype.kind == "u" and pa.types.is_signed_integer(base):
            return False
        if dtype.kind == "i" and pa.types.is_unsigned_integer(base):
            return False
    try:
        normalize_literal(col, t, v)
    except InvalidPredicateError:
        raise  # an integer the column cannot hold: say so, not "wrong type"
    except (InvalidTypeError, ValueError, TypeError, OverflowError):
        return False
    return True
