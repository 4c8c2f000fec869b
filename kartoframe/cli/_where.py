"""The ``--where`` language of the command line: a small parser (pure, no I/O).

A condition is an ``or`` of ``and`` groups of comparisons, with parentheses; it becomes the
DNF predicates of the dataset API (``[[(column, op, value), ...], ...]``, see
:mod:`kartoframe.plan.predicates`), each value read with its column's Arrow type. Cubes
take one conjunction of ``== != < <= > >= in`` (kartothek's cube conditions):
:func:`to_cube_conditions` converts or explains what a cube cannot take.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from kartoframe.cli._common import BadInput
from kartoframe.plan.conditions import bool_word

__all__ = ["GRAMMAR", "parse_predicates", "to_cube_conditions"]

#: Shown with every parse error (and in docs/cli.md).
GRAMMAR = """\
--where grammar (keywords are case-insensitive; repeated --where options are and-ed):
  CONDITION  := GROUP [or GROUP ...]                  (also: ||, |)
  GROUP      := TERM [and TERM ...]                   (also: &&, &)
  TERM       := COMPARISON | ( CONDITION )
  COMPARISON := COLUMN OP VALUE                       OP: == = != <> < <= > >=
              | COLUMN [not] in ( VALUE, ... )
              | COLUMN is [not] null
              | COLUMN is [not] distinct from VALUE
  VALUE      := word | 'quoted text' | "quoted text" | null
Values are read with the column's type (2024-01-31, true, 1.5); quote a string holding
spaces, commas, parentheses, operators or a keyword. A timestamp without an offset on a
tz-aware column is read in the column's time zone."""

_KEYWORDS = {"and", "or", "not", "in", "is", "null", "distinct", "from"}
_NULL_WORDS = {"null", "none"}
_OPERATORS = ("==", "!=", "<>", "<=", ">=", "<", ">", "=")
_SYMBOLS = {"&&": "and", "&": "and", "||": "or", "|": "or"}
#: Characters that end a bare word.
_DELIMITERS = set(" \t\r\n(),'\"=!<>&|")
#: An expansion to DNF larger than this is refused (``(a or b) and (c or d) ...``).
MAX_GROUPS = 256


@dataclasses.dataclass(frozen=True)
class _Tok:
    kind: str  # word, string, op, lparen, rparen, comma, and, or, end
    text: str
    pos: int


@dataclasses.dataclass(frozen=True)
class _Raw:
    """A value as written: text, and whether it was quoted (``'null'`` is a string)."""

    text: str
    quoted: bool

    @property
    def is_null(self) -> bool:
        return not self.quoted and self.text.lower() in _NULL_WORDS


#: One comparison before typing: column, operator, value(s) (None: null).
_Lit = tuple[str, str, Any]


def _error(text: str, pos: int, reason: str) -> BadInput:
    pointer = f"\n  {text}\n  {' ' * pos}^" if "\n" not in text else ""
    return BadInput(f"Cannot parse --where {text!r}: {reason}.{pointer}\n{GRAMMAR}")


def _tokenize(text: str) -> list[_Tok]:
    out: list[_Tok] = []
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
            continue
        if ch in "(),":
            out.append(_Tok({"(": "lparen", ")": "rparen", ",": "comma"}[ch], ch, i))
            i += 1
            continue
        if ch in "'\"":
            j = i + 1
            buf: list[str] = []
            while True:
                if j >= n:
                    raise _error(text, i, f"the quote {ch} is never closed")
                if text[j] == ch:
                    if j + 1 < n and text[j + 1] == ch:  # '' inside '...' is one quote
                        buf.append(ch)
                        j += 2
                        continue
                    break
                buf.append(text[j])
                j += 1
            out.append(_Tok("string", "".join(buf), i))
            i = j + 1
            continue
        sym = next((s for s in ("&&", "||", "&", "|") if text.startswith(s, i)), None)
        if sym is not None:
            out.append(_Tok(_SYMBOLS[sym], sym, i))
            i += len(sym)
            continue
        op = next((o for o in _OPERATORS if text.startswith(o, i)), None)
        if op is not None:
            out.append(_Tok("op", op, i))
            i += len(op)
            continue
        if ch in _DELIMITERS:
            raise _error(text, i, f"unexpected {ch!r}")
        j = i
        while j < n and text[j] not in _DELIMITERS:
            j += 1
        word = text[i:j]
        low = word.lower()
        kind = low if low in ("and", "or") else "word"
        out.append(_Tok(kind, word, i))
        i = j
    out.append(_Tok("end", "", n))
    return out


class _Parser:
    """Recursive descent over the tokens of one ``--where`` text; returns DNF groups."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokenize(text)
        self.i = 0

    def peek(self) -> _Tok:
        return self.toks[self.i]

    def take(self) -> _Tok:
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def keyword(self, word: str) -> bool:
        tok = self.peek()
        if tok.kind == "word" and tok.text.lower() == word:
            self.i += 1
            return True
        return False

    def fail(self, reason: str, tok: _Tok | None = None) -> BadInput:
        tok = tok or self.peek()
        found = "the end" if tok.kind == "end" else repr(tok.text)
        return _error(self.text, tok.pos, f"{reason}, found {found}")

    def parse(self) -> list[list[_Lit]]:
        if self.peek().kind == "end":
            raise _error(self.text, 0, "the condition is empty")
        groups = self.disjunction()
        if self.peek().kind != "end":
            raise self.fail("expected 'and', 'or' or the end")
        return groups

    def disjunction(self) -> list[list[_Lit]]:
        groups = self.conjunction()
        while self.peek().kind == "or":
            self.take()
            groups = groups + self.conjunction()
            self.check_size(groups)
        return groups

    def conjunction(self) -> list[list[_Lit]]:
        groups = self.term()
        while self.peek().kind == "and":
            self.take()
            right = self.term()
            groups = [a + b for a, b in itertools.product(groups, right)]
            self.check_size(groups)
        return groups

    def check_size(self, groups: list[list[_Lit]]) -> None:
        if len(groups) > MAX_GROUPS:
            raise _error(
                self.text, 0, f"it expands to more than {MAX_GROUPS} 'and' groups; simplify it"
            )

    def term(self) -> list[list[_Lit]]:
        if self.peek().kind == "lparen":
            self.take()
            groups = self.disjunction()
            if self.peek().kind != "rparen":
                raise self.fail("expected ')'")
            self.take()
            return groups
        return [[self.comparison()]]

    def comparison(self) -> _Lit:
        tok = self.peek()
        if tok.kind == "string" or (tok.kind == "word" and tok.text.lower() not in _KEYWORDS):
            column = self.take().text
        else:
            raise self.fail("expected a column name")
        tok = self.peek()
        if tok.kind == "op":
            self.take()
            op = {"=": "==", "<>": "!="}.get(tok.text, tok.text)
            return (column, op, self.value())
        if self.keyword("in"):
            return (column, "in", self.value_list())
        if self.keyword("not"):
            if not self.keyword("in"):
                raise self.fail("expected 'in' after 'not'")
            return (column, "not in", self.value_list())
        if self.keyword("is"):
            negated = self.keyword("not")
            if self.keyword("null"):
                return (column, "!=" if negated else "==", None)
            if self.keyword("distinct"):
                if not self.keyword("from"):
                    raise self.fail("expected 'from' after 'distinct'")
                return (
                    column,
                    "is not distinct from" if negated else "is distinct from",
                    self.value(),
                )
            raise self.fail("expected 'null', 'not null' or 'distinct from' after 'is'")
        raise self.fail(
            f"expected an operator (== != < <= > >=, in, not in, is) after column {column!r}"
        )

    def value(self) -> _Raw:
        tok = self.peek()
        if tok.kind == "string":
            self.take()
            return _Raw(tok.text, True)
        if tok.kind != "word":
            raise self.fail("expected a value")
        words = [self.take().text]
        # an unquoted value may hold spaces (2024-01-31 10:00, New York) up to a keyword
        while self.peek().kind == "word" and self.peek().text.lower() not in _KEYWORDS:
            words.append(self.take().text)
        return _Raw(" ".join(words), False)

    def value_list(self) -> list[_Raw]:
        if self.peek().kind != "lparen":
            raise self.fail("expected '(' to open the list of values")
        self.take()
        values = [self.value()]
        while self.peek().kind == "comma":
            self.take()
            values.append(self.value())
        if self.peek().kind != "rparen":
            raise self.fail("expected ',' or ')' in the list of values")
        self.take()
        return values


# -- typing ------------------------------------------------------------------------------


def _parse_bool(x: str) -> bool:
    value = bool_word(x)
    if value is None:
        raise ValueError("expected true or false")
    return value


def _read_value(raw: str, t: pa.DataType) -> Any:
    """``raw`` read as a value of Arrow type ``t``."""
    import pandas as pd

    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_boolean(t):
        return _parse_bool(raw)
    if pa.types.is_integer(t):
        return int(raw)
    if pa.types.is_floating(t):
        return float(raw)
    if pa.types.is_decimal(t):
        try:
            return decimal.Decimal(raw)
        except decimal.InvalidOperation:
            raise ValueError("not a decimal number") from None
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t):
        return raw
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return raw.encode("utf-8")
    if pa.types.is_date(t):
        return dt.date.fromisoformat(raw)
    if pa.types.is_timestamp(t):
        ts = pd.Timestamp(raw)
        if t.tz is None:
            if ts.tzinfo is not None:
                raise ValueError("the column holds timestamps without a time zone: drop the offset")
            return ts
        # a naive literal is read in the column's time zone
        return ts.tz_localize(t.tz) if ts.tzinfo is None else ts.tz_convert(t.tz)
    if pa.types.is_time(t):
        return dt.time.fromisoformat(raw)
    raise ValueError(f"columns of type {t} cannot be compared on the command line")


def _typed(text: str, column: str, raw: _Raw, types: Mapping[str, pa.DataType]) -> Any:
    if raw.is_null:
        return None
    t = types[column]
    try:
        return _read_value(raw.text, t)
    except (ValueError, TypeError, OverflowError) as e:
        raise BadInput(
            f"Cannot read {raw.text!r} as {t} (column {column!r}) in --where {text!r}: {e}."
        ) from None


def _type_literal(text: str, lit: _Lit, types: Mapping[str, pa.DataType]) -> tuple[str, str, Any]:
    column, op, raw = lit
    if column not in types:
        raise BadInput(
            f'Unknown column "{column}" in --where {text!r} (columns: {", ".join(types)}).'
        )
    if op in ("in", "not in"):
        return (column, op, [_typed(text, column, r, types) for r in raw])
    value = None if raw is None else _typed(text, column, raw, types)
    if op == "is not distinct from":
        # equal, or both null
        return (column, "==", value)
    if op == "is distinct from" and value is None:
        return (column, "!=", None)
    if value is None and op not in ("==", "!=", "is distinct from"):
        raise BadInput(
            f"Cannot compare column {column!r} with null using {op!r} in --where {text!r}: "
            "use 'is null' / 'is not null' (or == null / != null)."
        )
    return (column, op, value)


def parse_predicates(
    texts: Sequence[str], types: Mapping[str, pa.DataType]
) -> list[list[tuple[str, str, Any]]] | None:
    """Parse ``--where`` texts into DNF predicates, typed by the columns' Arrow types.

    Several texts are and-ed. ``None`` when there is no text.

    Raises
    ------
    BadInput
        Unparsable text (the message shows :data:`GRAMMAR`), an unknown column, or a
        value not of its column's type.
    """
    if not texts:
        return None
    groups: list[list[tuple[str, str, Any]]] = [[]]
    for text in texts:
        parsed = _Parser(text).parse()
        typed = [[_type_literal(text, lit, types) for lit in g] for g in parsed]
        groups = [a + b for a, b in itertools.product(groups, typed)]
        if len(groups) > MAX_GROUPS:
            raise _error(text, 0, f"the --where options expand to more than {MAX_GROUPS} groups")
    _check_with_api(texts, groups, types)
    return groups


def _check_with_api(
    texts: Sequence[str],
    groups: list[list[tuple[str, str, Any]]],
    types: Mapping[str, pa.DataType],
) -> None:
    """Bind the predicates as a read would, so every refusal names the --where text."""
    from kartoframe.errors import KartoframeError
    from kartoframe.plan.predicates import bind

    schema = pa.schema([pa.field(c, t) for c, t in types.items()])
    try:
        bind(groups, schema)
    except KartoframeError as e:
        joined = " and ".join(f"({t})" for t in texts) if len(texts) > 1 else texts[0]
        raise BadInput(f"Invalid --where {joined!r}: {e}") from e


#: The operators of cube conditions (kartothek's ``C("x") > 1``, ``.isin``).
CUBE_OPERATORS = ("==", "!=", "<", "<=", ">", ">=", "in")


def to_cube_conditions(predicates: list[list[tuple[str, str, Any]]] | None) -> list[Any]:
    """DNF predicates as cube conditions (one ``and`` group, no null, no ``not in``).

    Raises
    ------
    BadInput
        An ``or``, a null comparison, ``not in`` or ``is distinct from``: cube conditions
        are one conjunction of ``== != < <= > >= in`` with non-null values.
    """
    from kartoframe.plan.conditions import C, Condition, SimpleCondition

    if not predicates:
        return []
    if len(predicates) > 1:
        raise BadInput(
            "A cube query takes one 'and' group of conditions (no 'or'): run one query per "
            "alternative, or query a dataset of the cube (PREFIX++ID), which takes 'or'."
        )
    out: list[Condition] = []
    for column, op, value in predicates[0]:
        nulls = value is None or (op == "in" and any(v is None for v in value))
        if op not in CUBE_OPERATORS or nulls:
            what = "null" if nulls else f"'{op}'"
            raise BadInput(
                f"Cube conditions cannot use {what} (on column {column!r}): they take "
                f"{', '.join(CUBE_OPERATORS)} with non-null values. A dataset of the cube "
                "(PREFIX++ID) takes the full --where language."
            )
        out.append(C(column).isin(value) if op == "in" else SimpleCondition(column, op, value))
    return out
