"""Literals of expressions: a Python value with its Iceberg type, convertible with ``to``.

Values use floe's one representation (docs/core-api.md "Values"). Conversions follow Java's
``Literals``: a long that does not fit an int becomes :data:`ABOVE_MAX` / :data:`BELOW_MIN`
(binding then decides the predicate: ``int_col < 2**40`` is always true), a double beyond
the float range likewise; a conversion that makes no sense raises :class:`ValidationError`.
"""

from __future__ import annotations

import datetime as _dt
import math
import struct
import uuid
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from floe.conversions import from_json_value, to_human_string
from floe.errors import ValidationError
from floe.types import (
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    LONG,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMPTZ,
    UUID,
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IntegerType,
    LongType,
    PrimitiveType,
    StringType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

__all__ = [
    "ABOVE_MAX", "BELOW_MIN", "AboveMax", "BelowMin", "BinaryLiteral", "BooleanLiteral",
    "DateLiteral", "DecimalLiteral", "DoubleLiteral", "FixedLiteral", "FloatLiteral",
    "IntLiteral", "Literal", "LongLiteral", "StringLiteral", "TimeLiteral", "TimestampLiteral",
    "UUIDLiteral", "literal",
]

_FLOAT32_MAX = 3.4028234663852886e38
_MICROS_PER_DAY = 86_400_000_000
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


class Literal:
    """An immutable typed value. Equal when type and value are equal."""

    __slots__ = ("type", "value")
    type: PrimitiveType
    value: Any

    def __init__(self, value: Any, type_: PrimitiveType) -> None:
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "type", type_)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("literals are immutable")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Literal):
            return False
        if isinstance(self, _Bound) or isinstance(other, _Bound):
            return type(self) is type(other)
        return self.type == other.type and self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.value!r})"

    def __str__(self) -> str:
        """SQL-style text, as :func:`floe.expressions.parse_filter` reads it back."""
        t, v = self.type, self.value
        if isinstance(t, BooleanType):
            return "TRUE" if v else "FALSE"
        if isinstance(t, (IntegerType, LongType, FloatType, DoubleType, DecimalType)):
            return str(v)
        if isinstance(t, DateType):
            return f"DATE '{to_human_string(t, v)}'"
        if isinstance(t, (TimestampType, TimestamptzType)):
            return f"TIMESTAMP '{to_human_string(t, v)}'"
        if isinstance(t, (StringType, UUIDType)):
            return "'" + str(v).replace("'", "''") + "'"
        if isinstance(v, bytes):
            return f"X'{v.hex().upper()}'"
        return "'" + to_human_string(t, v).replace("'", "''") + "'"

    def to(self, target: PrimitiveType) -> Literal:
        """This literal as a value of ``target`` (Java ``Literal.to``).

        Returns :data:`ABOVE_MAX` / :data:`BELOW_MIN` for values outside an int or float
        range; raises :class:`ValidationError` when there is no conversion.
        """
        if self.type == target and not isinstance(target, (IntegerType, LongType)):
            return self
        fn = _CONVERSIONS.get((type(self.type), type(target)))
        if fn is None:
            raise ValidationError(f"cannot convert {self} ({self.type}) to {target}")
        return fn(self.value, target)


class _Bound(Literal):
    """A value beyond the range of the target type; only binding looks at it."""

    __slots__ = ()

    def to(self, target: PrimitiveType) -> Literal:
        return self


class AboveMax(_Bound):
    __slots__ = ()

    def __repr__(self) -> str:
        return "ABOVE_MAX"

    __str__ = __repr__


class BelowMin(_Bound):
    __slots__ = ()

    def __repr__(self) -> str:
        return "BELOW_MIN"

    __str__ = __repr__


ABOVE_MAX = AboveMax(None, LONG)
BELOW_MIN = BelowMin(None, LONG)


class BooleanLiteral(Literal):
    __slots__ = ()

    def __init__(self, value: bool) -> None:
        super().__init__(bool(value), BOOLEAN)


class IntLiteral(Literal):
    __slots__ = ()

    def __init__(self, value: int) -> None:
        super().__init__(value, IntegerType())


class LongLiteral(Literal):
    __slots__ = ()

    def __init__(self, value: int) -> None:
        super().__init__(value, LONG)


class FloatLiteral(Literal):
    __slots__ = ()

    def __init__(self, value: float) -> None:
        super().__init__(_round_float32(value), FLOAT)


class DoubleLiteral(Literal):
    __slots__ = ()

    def __init__(self, value: float) -> None:
        super().__init__(float(value), DOUBLE)


class DecimalLiteral(Literal):
    """A decimal; its type is ``decimal(max(digits, scale), scale)`` of the value."""

    __slots__ = ()

    def __init__(self, value: Decimal, type_: DecimalType | None = None) -> None:
        if type_ is None:
            exp = value.as_tuple().exponent
            scale = -exp if isinstance(exp, int) else 0
            type_ = DecimalType(max(len(value.as_tuple().digits), scale, 1), scale)
        super().__init__(value, type_)


class DateLiteral(Literal):
    __slots__ = ()

    def __init__(self, value: int) -> None:
        super().__init__(value, DATE)


class TimeLiteral(Literal):
    __slots__ = ()

    def __init__(self, value: int) -> None:
        super().__init__(value, TIME)


class TimestampLiteral(Literal):
    """Microseconds from the epoch; converts to timestamp and timestamptz alike (Java)."""

    __slots__ = ()

    def __init__(self, value: int, type_: PrimitiveType = TIMESTAMP) -> None:
        super().__init__(value, type_)


class StringLiteral(Literal):
    __slots__ = ()

    def __init__(self, value: str) -> None:
        super().__init__(value, STRING)


class UUIDLiteral(Literal):
    __slots__ = ()

    def __init__(self, value: uuid.UUID) -> None:
        super().__init__(value, UUID)


class FixedLiteral(Literal):
    __slots__ = ()

    def __init__(self, value: bytes) -> None:
        super().__init__(bytes(value), FixedType(len(value)))


class BinaryLiteral(Literal):
    __slots__ = ()

    def __init__(self, value: bytes) -> None:
        super().__init__(bytes(value), BinaryType())


def literal(value: Any) -> Literal:
    """The literal of a Python value: ``int`` → long, ``float`` → double, ``str`` → string,
    ``Decimal``, ``uuid.UUID``, ``bytes`` → binary, ``datetime.date`` → date,
    ``datetime.datetime`` → timestamp (timestamptz when aware), ``datetime.time`` → time."""
    if isinstance(value, Literal):
        return value
    if value is None:
        raise ValidationError("a literal cannot be null; use IS NULL")
    if isinstance(value, bool):
        return BooleanLiteral(value)
    if isinstance(value, int):
        return LongLiteral(value)
    if isinstance(value, float):
        return DoubleLiteral(value)
    if isinstance(value, str):
        return StringLiteral(value)
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ValidationError(f"decimal literal must be finite, got {value}")
        return DecimalLiteral(value)
    if isinstance(value, uuid.UUID):
        return UUIDLiteral(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return BinaryLiteral(bytes(value))
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            micros = _micros(value.replace(tzinfo=_dt.timezone.utc))
            return TimestampLiteral(micros)
        return TimestampLiteral(_micros(value), TIMESTAMPTZ)
    if isinstance(value, _dt.date):
        return DateLiteral((value - _dt.date(1970, 1, 1)).days)
    if isinstance(value, _dt.time):
        return TimeLiteral(
            ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond
        )
    raise ValidationError(f"cannot make a literal of {type(value).__name__} {value!r:.50}")


def _micros(d: _dt.datetime) -> int:
    delta = d - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _round_float32(v: float) -> float:
    value: float = struct.unpack("<f", struct.pack("<f", v))[0]
    return value


# -- conversions (Java Literals.*Literal.to) ------------------------------------------------

Conv = Callable[[Any, PrimitiveType], Literal]


def _to_int(v: int, t: PrimitiveType) -> Literal:
    if v > IntegerType.MAX:
        return ABOVE_MAX
    if v < IntegerType.MIN:
        return BELOW_MIN
    return IntLiteral(v)


def _to_long(v: int, t: PrimitiveType) -> Literal:
    if v > LongType.MAX:
        return ABOVE_MAX
    if v < LongType.MIN:
        return BELOW_MIN
    return LongLiteral(v)


def _to_float(v: Any, t: PrimitiveType) -> Literal:
    f = float(v)
    if f > _FLOAT32_MAX:
        return ABOVE_MAX
    if f < -_FLOAT32_MAX:
        return BELOW_MIN
    return FloatLiteral(f)


def _to_double(v: Any, t: PrimitiveType) -> Literal:
    return DoubleLiteral(float(v))


def _to_decimal_exact(v: Any, t: PrimitiveType) -> Literal:
    assert isinstance(t, DecimalType)
    d = Decimal(v)
    try:
        q = d.quantize(Decimal(1).scaleb(-t.scale))
    except InvalidOperation:
        raise ValidationError(f"{v} does not fit {t}") from None
    if q != d:
        raise ValidationError(f"{v} has more fraction digits than {t} allows")
    return DecimalLiteral(q, t)


def _to_decimal_rounded(v: Any, t: PrimitiveType) -> Literal:
    # Java: BigDecimal.valueOf(double).setScale(scale, HALF_UP)
    assert isinstance(t, DecimalType)
    if not math.isfinite(v):
        raise ValidationError(f"cannot convert {v} to {t}")
    return DecimalLiteral(Decimal(repr(v)).quantize(Decimal(1).scaleb(-t.scale), ROUND_HALF_UP), t)


def _same(cls: Callable[[Any], Literal]) -> Conv:
    return lambda v, t: cls(v)


def _ts(v: int, t: PrimitiveType) -> Literal:
    return TimestampLiteral(v, t)


def _ts_to_nanos(v: int, t: PrimitiveType) -> Literal:
    return Literal(v * 1000, t)


def _date_to_ts(v: int, t: PrimitiveType) -> Literal:
    scale = 1000 if isinstance(t, (TimestampNanoType, TimestamptzNanoType)) else 1
    return Literal(v * _MICROS_PER_DAY * scale, t)


def _parse_string(v: str, t: PrimitiveType) -> Literal:
    text = v
    if isinstance(t, (TimestampType, TimestamptzType, TimestampNanoType, TimestamptzNanoType)):
        if len(text) > 10 and text[10] == " ":
            text = text[:10] + "T" + text[11:]
        if isinstance(t, (TimestamptzType, TimestamptzNanoType)) and not _has_zone(text):
            text += "+00:00"  # a timestamp without offset compared with timestamptz is UTC
    elif isinstance(t, DecimalType):
        try:
            return _to_decimal_exact(Decimal(text), t)
        except InvalidOperation:
            raise ValidationError(f"not a decimal: {v!r}") from None
    value = from_json_value(t, text)
    if isinstance(t, DateType):
        return DateLiteral(value)
    if isinstance(t, TimeType):
        return TimeLiteral(value)
    if isinstance(t, UUIDType):
        return UUIDLiteral(value)
    if isinstance(t, (TimestampType, TimestamptzType)):
        return TimestampLiteral(value, t)
    return Literal(value, t)


def _has_zone(text: str) -> bool:
    tail = text[19:] if len(text) > 19 else ""
    return tail.upper().endswith("Z") or "+" in tail or "-" in tail


def _string_to_binary(v: str, t: PrimitiveType) -> Literal:
    data = v.encode("utf-8")
    if isinstance(t, FixedType):
        if len(data) != t.length:
            raise ValidationError(f"{t} needs {t.length} bytes, {v!r} has {len(data)}")
        return FixedLiteral(data)
    return BinaryLiteral(data)


def _bytes_to(v: bytes, t: PrimitiveType) -> Literal:
    if isinstance(t, FixedType):
        if len(v) != t.length:
            raise ValidationError(f"{t} needs {t.length} bytes, got {len(v)}")
        return FixedLiteral(v)
    if isinstance(t, UUIDType) and len(v) == 16:
        return UUIDLiteral(uuid.UUID(bytes=v))
    return BinaryLiteral(v)


_INTS = (IntegerType, LongType)
_TS = (TimestampType, TimestamptzType)
_TS_NS = (TimestampNanoType, TimestamptzNanoType)
_CONVERSIONS: dict[tuple[type, type], Conv] = {}
_src: type
_t: type
for _src in _INTS:
    _CONVERSIONS[(_src, IntegerType)] = _to_int
    _CONVERSIONS[(_src, LongType)] = _to_long
    _CONVERSIONS[(_src, FloatType)] = _to_float
    _CONVERSIONS[(_src, DoubleType)] = _to_double
    _CONVERSIONS[(_src, DecimalType)] = _to_decimal_exact
    _CONVERSIONS[(_src, DateType)] = lambda v, t: DateLiteral(v)
    _CONVERSIONS[(_src, TimeType)] = lambda v, t: TimeLiteral(v)
    for _t in _TS:
        _CONVERSIONS[(_src, _t)] = _ts
    for _t in _TS_NS:
        _CONVERSIONS[(_src, _t)] = lambda v, t: Literal(v, t)
for _src in (FloatType, DoubleType):
    _CONVERSIONS[(_src, FloatType)] = _to_float
    _CONVERSIONS[(_src, DoubleType)] = _to_double
    _CONVERSIONS[(_src, DecimalType)] = _to_decimal_rounded
_CONVERSIONS[(DecimalType, DecimalType)] = _to_decimal_exact
_CONVERSIONS[(DecimalType, FloatType)] = _to_float
_CONVERSIONS[(DecimalType, DoubleType)] = _to_double
_CONVERSIONS[(DateType, DateType)] = lambda v, t: DateLiteral(v)
for _t in (*_TS, *_TS_NS):
    _CONVERSIONS[(DateType, _t)] = _date_to_ts
for _src in _TS:
    for _t in _TS:
        _CONVERSIONS[(_src, _t)] = _ts
    for _t in _TS_NS:
        _CONVERSIONS[(_src, _t)] = _ts_to_nanos
for _src in _TS_NS:
    for _t in _TS_NS:
        _CONVERSIONS[(_src, _t)] = lambda v, t: Literal(v, t)
for _t in (StringType, DateType, TimeType, DecimalType, UUIDType, *_TS, *_TS_NS):
    _CONVERSIONS[(StringType, _t)] = _parse_string
_CONVERSIONS[(StringType, StringType)] = lambda v, t: StringLiteral(v)
_CONVERSIONS[(StringType, FixedType)] = _string_to_binary
_CONVERSIONS[(StringType, BinaryType)] = _string_to_binary
for _src in (BinaryType, FixedType):
    for _t in (BinaryType, FixedType, UUIDType):
        _CONVERSIONS[(_src, _t)] = _bytes_to
_CONVERSIONS[(UUIDType, UUIDType)] = lambda v, t: UUIDLiteral(v)
_CONVERSIONS[(BooleanType, BooleanType)] = lambda v, t: BooleanLiteral(v)
_CONVERSIONS[(TimeType, TimeType)] = lambda v, t: TimeLiteral(v)
