"""The SQL-style filter syntax of the CLI (ARCHITECTURE "EXPR").

Grammar (keywords case-insensitive; precedence NOT > AND > OR)::

    expr      := and_expr (OR and_expr)*
    and_expr  := not_expr (AND not_expr)*
    not_expr  := NOT not_expr | primary
    primary   := '(' expr ')' | TRUE | FALSE | predicate
    predicate := name op value | value op name
               | name [NOT] IN '(' value (',' value)* ')'
               | name IS [NOT] NULL | name IS [NOT] NAN
               | name [NOT] STARTS WITH string
    op        := '=' | '==' | '!=' | '<>' | '<' | '<=' | '>' | '>='
    name      := part ('.' part)*   part: identifier | "quoted" | `quoted`
    value     := string | number | TRUE | FALSE | DATE string | TIMESTAMP string

Strings are ``'...'`` with ``''`` for a quote. Numbers: integers are longs, numbers with a
fraction are decimals (exact), numbers with an exponent are doubles. Errors are
:class:`~floe.errors.FilterInvalid` (a ValidationError) with the 1-based position and a caret
line (under a window of a long filter's text).

Length is free: the parser does not recurse, and a chain of n terms joined by OR (AND) is a
balanced tree log2(n) levels deep. Nesting is not: a filter deeper than
:data:`~floe.expressions.base.MAX_DEPTH` levels (parentheses count) is refused with
:class:`~floe.errors.FilterTooDeep`, a one-line message naming the position.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from floe.conversions import from_json_value
from floe.errors import FilterInvalid, ValidationError
from floe.expressions.base import (
    MAX_DEPTH,
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNaN,
    IsNull,
    LessThan,
    LessThanOrEqual,
    NotEqualTo,
    NotIn,
    NotNaN,
    NotNull,
    NotStartsWith,
    Or,
    Reference,
    StartsWith,
    balanced,
    too_deep,
)
from floe.expressions.literals import (
    BooleanLiteral,
    DateLiteral,
    DecimalLiteral,
    DoubleLiteral,
    Literal,
    LongLiteral,
    StringLiteral,
    TimestampLiteral,
)
from floe.types import DATE, TIMESTAMP, TIMESTAMPTZ

__all__ = ["parse_filter"]

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<string>'(?:[^']|'')*')
  | (?P<qname>"(?:[^"]|"")*"|`(?:[^`]|``)*`)
  | (?P<number>-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<op><=|>=|<>|!=|==|=|<|>)
  | (?P<punct>[(),.])
  | (?P<word>[A-Za-z_][A-Za-z0-9_$]*)
    """,
    re.VERBOSE,
)

_COMPARISONS: dict[str, Callable[[Any, Any], BooleanExpression]] = {
    "=": EqualTo, "==": EqualTo, "!=": NotEqualTo, "<>": NotEqualTo,
    "<": LessThan, "<=": LessThanOrEqual, ">": GreaterThan, ">=": GreaterThanOrEqual,
}
_FLIPPED = {"=": "=", "==": "=", "!=": "!=", "<>": "!=", "<": ">", "<=": ">=", ">": "<",
            ">=": "<="}
_KEYWORDS = frozenset(
    "AND OR NOT IN IS NULL NAN STARTS WITH TRUE FALSE DATE TIMESTAMP".split()
)


class _Token:
    __slots__ = ("kind", "pos", "text", "value")

    def __init__(self, kind: str, text: str, pos: int, value: Any = None) -> None:
        self.kind, self.text, self.pos, self.value = kind, text, pos, value


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise _error(text, pos, f"unexpected character {text[pos]!r}")
        kind = m.lastgroup
        assert kind is not None
        raw = m.group()
        if kind == "string":
            tokens.append(_Token("string", raw, pos, raw[1:-1].replace("''", "'")))
        elif kind == "qname":
            q = raw[0]
            tokens.append(_Token("name", raw, pos, raw[1:-1].replace(q + q, q)))
        elif kind == "word":
            if raw.upper() in _KEYWORDS:
                tokens.append(_Token("kw", raw, pos, raw.upper()))
            else:
                tokens.append(_Token("name", raw, pos, raw))
        elif kind != "ws":
            tokens.append(_Token(kind, raw, pos, raw))
        pos = m.end()
    tokens.append(_Token("end", "", len(text)))
    return tokens


#: Characters of a long filter shown on each side of an error's position.
_CONTEXT = 60


def _error(text: str, pos: int, message: str) -> FilterInvalid:
    start = max(0, pos - _CONTEXT)
    shown = text[start:pos + _CONTEXT]
    before, after = ("…" if start else ""), ("…" if pos + _CONTEXT < len(text) else "")
    caret = " " * (pos - start + len(before))
    return FilterInvalid(
        f"cannot parse filter at position {pos + 1}: {message}\n  {before}{shown}{after}\n"
        f"  {caret}^"
    )


class _Group:
    """An open parenthesis (or the whole filter) while it is parsed: the AND chains already
    joined by OR, the operands of the current AND chain (each with its depth), the NOTs
    before the parenthesis and where it opened."""

    __slots__ = ("ands", "nots", "ors", "pos")

    def __init__(self, nots: int, pos: int) -> None:
        self.ors: list[tuple[BooleanExpression, int]] = []
        self.ands: list[tuple[BooleanExpression, int]] = []
        self.nots, self.pos = nots, pos


def _chain(op: type[And] | type[Or], items: list[tuple[BooleanExpression, int]]
           ) -> tuple[BooleanExpression, int]:
    """:func:`balanced` with each operand's depth carried along."""
    return balanced(lambda a, b: (op(a[0], b[0]), 1 + max(a[1], b[1])), items)


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.i = 0

    @property
    def tok(self) -> _Token:
        return self.tokens[self.i]

    def fail(self, message: str, tok: _Token | None = None) -> FilterInvalid:
        t = tok or self.tok
        found = "end of input" if t.kind == "end" else repr(t.text)
        return _error(self.text, t.pos, f"{message}, found {found}")

    def kw(self, *words: str) -> bool:
        if self.tok.kind == "kw" and self.tok.value in words:
            self.i += 1
            return True
        return False

    def expect_kw(self, word: str) -> None:
        if not self.kw(word):
            raise self.fail(f"expected {word}")

    def punct(self, p: str) -> bool:
        if self.tok.kind == "punct" and self.tok.value == p:
            self.i += 1
            return True
        return False

    def expect_punct(self, p: str) -> None:
        if not self.punct(p):
            raise self.fail(f"expected {p!r}")

    def parse(self) -> BooleanExpression:
        """The grammar's ``expr``, without recursion: an explicit stack of open parentheses,
        each chain of ANDs (ORs) built balanced, NOTs counted. Parentheses nested more than
        MAX_DEPTH deep are refused at the first one too many; the depth of the expression
        is counted as it is built and refused past MAX_DEPTH at the parenthesis that holds
        the level too many (before NOT is pushed down through it)."""
        if self.tok.kind == "end":
            raise self.fail("expected a predicate")
        groups = [_Group(0, 0)]
        while True:
            nots = 0
            while self.kw("NOT"):
                nots += 1
            if self.tok.kind == "punct" and self.tok.value == "(":
                if len(groups) > MAX_DEPTH:  # this parenthesis opens one level too many
                    raise too_deep(f" at position {self.tok.pos + 1}")
                groups.append(_Group(nots, self.tok.pos))
                self.i += 1
                continue
            item = (self.primary(), 0)
            if nots % 2:
                item = (item[0].negate(), 0)
            while True:  # after an operand: AND, OR, ')' or the end
                group = groups[-1]
                group.ands.append(item)
                if self.kw("AND"):
                    break
                if self.kw("OR"):
                    group.ors.append(_chain(And, group.ands))
                    group.ands = []
                    break
                if len(groups) == 1:
                    if self.tok.kind != "end":
                        raise self.fail("expected AND, OR or the end")
                    return self.close(group, None)[0]
                self.expect_punct(")")
                groups.pop()
                expr, levels = self.close(group, group.pos)
                item = (expr.negate() if group.nots % 2 else expr, levels)

    def close(self, group: _Group, pos: int | None) -> tuple[BooleanExpression, int]:
        """A group's expression and its depth: the whole filter (``pos`` None) or the part in
        the parentheses opened at ``pos``."""
        group.ors.append(_chain(And, group.ands))
        expr, levels = _chain(Or, group.ors)
        if levels > MAX_DEPTH:
            raise too_deep("" if pos is None else f" at position {pos + 1}")
        return expr, levels

    def primary(self) -> BooleanExpression:
        """An operand that is not in parentheses: TRUE, FALSE or a predicate."""
        tok = self.tok
        if tok.kind == "kw" and tok.value in ("TRUE", "FALSE"):
            nxt = self.tokens[self.i + 1]
            if nxt.kind != "op":
                self.i += 1
                return AlwaysTrue() if tok.value == "TRUE" else AlwaysFalse()
        if tok.kind == "name":
            return self.predicate(self.name())
        if tok.kind in ("string", "number", "kw"):
            start = self.tok
            try:
                value = self.value()
            except ValidationError:
                raise self.fail("expected a column name or '('", start) from None
            if self.tok.kind != "op":
                raise self.fail("expected a comparison operator")
            op = self.tok.value
            self.i += 1
            return _COMPARISONS[_FLIPPED[op]](self.name(), value)
        raise self.fail("expected a column name, NOT or '('")

    def name(self) -> str:
        if self.tok.kind != "name":
            raise self.fail("expected a column name")
        parts = [self.tok.value]
        self.i += 1
        while self.tok.kind == "punct" and self.tok.value == ".":
            self.i += 1
            if self.tok.kind not in ("name", "kw"):
                raise self.fail("expected a field name after '.'")
            parts.append(self.tok.text if self.tok.kind == "kw" else self.tok.value)
            self.i += 1
        return ".".join(parts)

    def predicate(self, name: str) -> BooleanExpression:
        ref = Reference(name)
        tok = self.tok
        if tok.kind == "op":
            self.i += 1
            return _COMPARISONS[tok.value](ref, self.value())
        if self.kw("IS"):
            negated = self.kw("NOT")
            if self.kw("NULL"):
                return NotNull(ref) if negated else IsNull(ref)
            if self.kw("NAN"):
                return NotNaN(ref) if negated else IsNaN(ref)
            raise self.fail("expected NULL or NAN")
        negated = self.kw("NOT")
        if self.kw("IN"):
            self.expect_punct("(")
            values = [self.value()]
            while self.punct(","):
                values.append(self.value())
            self.expect_punct(")")
            return NotIn(ref, values) if negated else In(ref, values)
        if self.kw("STARTS"):
            self.expect_kw("WITH")
            if self.tok.kind != "string":
                raise self.fail("expected a string after STARTS WITH")
            prefix = self.tok.value
            self.i += 1
            return NotStartsWith(ref, prefix) if negated else StartsWith(ref, prefix)
        if negated:
            raise self.fail("expected IN or STARTS WITH after NOT")
        raise self.fail("expected an operator (=, !=, <, <=, >, >=, IN, IS, STARTS WITH)")

    def value(self) -> Literal:
        tok = self.tok
        if tok.kind == "string":
            self.i += 1
            return StringLiteral(tok.value)
        if tok.kind == "number":
            self.i += 1
            text = tok.value
            if "e" in text or "E" in text:
                return DoubleLiteral(float(text))
            if "." in text:
                return DecimalLiteral(Decimal(text))
            try:
                return LongLiteral(int(text))
            except ValueError:  # more digits than Python converts (4300)
                raise _error(self.text, tok.pos, "number too long") from None
        if tok.kind == "kw" and tok.value in ("TRUE", "FALSE"):
            self.i += 1
            return BooleanLiteral(tok.value == "TRUE")
        if tok.kind == "kw" and tok.value in ("DATE", "TIMESTAMP"):
            self.i += 1
            s = self.tok
            if s.kind != "string":
                raise self.fail(f"expected a quoted {tok.value.lower()} after {tok.value}")
            self.i += 1
            try:
                return _temporal(tok.value, s.value)
            except ValidationError as e:
                raise _error(self.text, s.pos, str(e)) from None
        raise self.fail("expected a value (string, number, TRUE, FALSE, DATE, TIMESTAMP)")


def _temporal(kind: str, text: str) -> Literal:
    if kind == "DATE":
        return DateLiteral(from_json_value(DATE, text))
    iso = text[:10] + "T" + text[11:] if len(text) > 10 and text[10] == " " else text
    if len(iso) == 10:
        iso += "T00:00:00"
    tail = iso[19:]
    if tail.upper().endswith("Z") or "+" in tail or "-" in tail:
        return TimestampLiteral(from_json_value(TIMESTAMPTZ, iso), TIMESTAMPTZ)
    return TimestampLiteral(from_json_value(TIMESTAMP, iso), TIMESTAMP)


def parse_filter(text: str) -> BooleanExpression:
    """Parse a filter of the CLI syntax into an unbound expression."""
    return _Parser(text).parse()
