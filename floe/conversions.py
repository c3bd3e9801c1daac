"""Single values of primitive types: Appendix D "Single-value serialization" and display.

Three representations of one Python value (the representation of docs/core-api.md):

* binary (Appendix D, "Binary single-value serialization"): column bounds, partition
  summaries. :func:`to_bytes` / :func:`from_bytes`.
* JSON (Appendix D, "JSON single-value serialization"): default values, REST payloads.
  :func:`to_json_value` / :func:`from_json_value`.
* human strings, as Java's ``Transform.toHumanString(type, value)`` renders them in partition
  paths (dates ``2024-01-01``, timestamps ISO-8601, binary as base64): :func:`to_human_string`.

Reading is tolerant where the spec's type promotion makes old bytes legal: a 4-byte bound of
a column promoted from ``int`` to ``long`` reads as an ``int``, a 4-byte ``float`` bound read
as ``double`` reads as a float, and (v3) a 4-byte ``date`` bound read as ``timestamp`` or
``timestamp_ns`` is converted from days. Everything else of the wrong length is a
:class:`~floe.errors.ValidationError`, never a bare ``struct.error``.
"""

from __future__ import annotations

import base64
import decimal
import math
import re
import struct
import uuid
from collections.abc import Callable
from datetime import date
from decimal import Decimal
from typing import Any

from floe.errors import ValidationError
from floe.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    GeographyType,
    GeometryType,
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
    "MICROS_PER_DAY",
    "MICROS_PER_HOUR",
    "MICROS_PER_SECOND",
    "NANOS_PER_DAY",
    "NANOS_PER_MICRO",
    "civil_from_days",
    "days_from_civil",
    "decimal_to_min_bytes",
    "decimal_to_unscaled",
    "from_bytes",
    "from_json_value",
    "human_day",
    "to_bytes",
    "to_human_string",
    "to_json_value",
    "unscaled_to_decimal",
]

MICROS_PER_SECOND = 1_000_000
MICROS_PER_HOUR = 3_600 * MICROS_PER_SECOND
MICROS_PER_DAY = 24 * MICROS_PER_HOUR
NANOS_PER_MICRO = 1_000
NANOS_PER_SECOND = 1_000_000_000
NANOS_PER_DAY = MICROS_PER_DAY * NANOS_PER_MICRO

_BOOL_TRUE = b"\x01"
_BOOL_FALSE = b"\x00"
_I32 = struct.Struct("<i")
_I64 = struct.Struct("<q")
_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")

# Exact decimal arithmetic: scaleb under the default context would round past 28 digits.
_EXACT = decimal.Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)


# -- calendar ------------------------------------------------------------------------------

_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_MIN_ORDINAL = date.min.toordinal()
_MAX_ORDINAL = date.max.toordinal()


def civil_from_days(days: int) -> tuple[int, int, int]:
    """(year, month, day) of a day count from 1970-01-01, proleptic Gregorian, any year."""
    ordinal = days + _EPOCH_ORDINAL
    if _MIN_ORDINAL <= ordinal <= _MAX_ORDINAL:
        d = date.fromordinal(ordinal)
        return d.year, d.month, d.day
    # Outside 0001..9999: Howard Hinnant's civil_from_days, with floor division throughout.
    z = days + 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1_460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, day


def days_from_civil(year: int, month: int, day: int) -> int:
    """Days from 1970-01-01 of a proleptic Gregorian date, any year."""
    if 1 <= year <= 9999:
        return date(year, month, day).toordinal() - _EPOCH_ORDINAL
    y = year - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * ((month + 9) % 12) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146_097 + doe - 719_468


# -- decimals ------------------------------------------------------------------------------


def decimal_to_unscaled(value: Decimal, scale: int) -> int:
    """The unscaled integer of ``value`` at ``scale`` (``14.2`` at scale 2 → ``1420``).

    Raises :class:`ValidationError` when the value needs more fraction digits than the
    scale allows (no silent rounding) or is not finite.
    """
    if not isinstance(value, Decimal):
        raise ValidationError(f"expected a decimal.Decimal, got {type(value).__name__}")
    if not value.is_finite():
        raise ValidationError(f"decimal value must be finite, got {value}")
    scaled = value.scaleb(scale, _EXACT)
    unscaled = int(scaled)
    if scaled != unscaled:
        raise ValidationError(f"decimal {value} has more than {scale} fraction digits")
    return unscaled


def unscaled_to_decimal(unscaled: int, scale: int) -> Decimal:
    """The decimal ``unscaled * 10**-scale`` with exponent exactly ``-scale``."""
    return Decimal(unscaled).scaleb(-scale, _EXACT)


def decimal_to_min_bytes(unscaled: int) -> bytes:
    """Minimal two's-complement big-endian bytes, as Java's ``BigInteger.toByteArray``."""
    bits = unscaled.bit_length() if unscaled >= 0 else (~unscaled).bit_length()
    return unscaled.to_bytes(bits // 8 + 1, "big", signed=True)


def _check_precision(t: DecimalType, unscaled: int, value: Any) -> None:
    if abs(unscaled) >= 10**t.precision:
        raise ValidationError(f"{value} does not fit {t}")


# -- binary (Appendix D) -------------------------------------------------------------------


def _pack(s: struct.Struct, t: PrimitiveType, value: Any) -> bytes:
    try:
        return s.pack(value)
    except (struct.error, OverflowError, TypeError) as e:
        raise ValidationError(f"cannot serialize {value!r:.100} as {t}: {e}") from None


def _bool_to_bytes(t: PrimitiveType, value: Any) -> bytes:
    return _BOOL_TRUE if value else _BOOL_FALSE


def _int_to_bytes(t: PrimitiveType, value: Any) -> bytes:
    return _pack(_I32, t, value)


def _long_to_bytes(t: PrimitiveType, value: Any) -> bytes:
    return _pack(_I64, t, value)


def _float_to_bytes(t: PrimitiveType, value: Any) -> bytes:
    return _pack(_F32, t, value)


def _double_to_bytes(t: PrimitiveType, value: Any) -> bytes:
    return _pack(_F64, t, value)


def _string_to_bytes(t: PrimitiveType, value: Any) -> bytes:
    if not isinstance(value, str):
        raise ValidationError(f"expected a str for {t}, got {type(value).__name__}")
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValidationError(f"string is not valid Unicode: {e}") from None


def _uuid_to_bytes(t: PrimitiveType, value: Any) -> bytes:
    if isinstance(value, uuid.UUID):
        return value.bytes
    if isinstance(value, (bytes, bytearray)) and len(value) == 16:
        return bytes(value)
    raise ValidationError(f"expected a uuid.UUID, got {value!r:.100}")


def _fixed_to_bytes(t: PrimitiveType, value: Any) -> bytes:
    data = _binary_to_bytes(t, value)
    assert isinstance(t, FixedType)
    if len(data) != t.length:
        raise ValidationError(f"{t} value must have {t.length} bytes, got {len(data)}")
    return data


def _binary_to_bytes(t: PrimitiveType, value: Any) -> bytes:
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise ValidationError(f"expected bytes for {t}, got {type(value).__name__}")
    return bytes(value)


def _decimal_to_bytes(t: PrimitiveType, value: Any) -> bytes:
    assert isinstance(t, DecimalType)
    unscaled = decimal_to_unscaled(value, t.scale)
    _check_precision(t, unscaled, value)
    return decimal_to_min_bytes(unscaled)


_TO_BYTES: dict[type, Callable[[PrimitiveType, Any], bytes]] = {
    BooleanType: _bool_to_bytes,
    IntegerType: _int_to_bytes,
    LongType: _long_to_bytes,
    FloatType: _float_to_bytes,
    DoubleType: _double_to_bytes,
    DateType: _int_to_bytes,
    TimeType: _long_to_bytes,
    TimestampType: _long_to_bytes,
    TimestamptzType: _long_to_bytes,
    TimestampNanoType: _long_to_bytes,
    TimestamptzNanoType: _long_to_bytes,
    StringType: _string_to_bytes,
    UUIDType: _uuid_to_bytes,
    FixedType: _fixed_to_bytes,
    BinaryType: _binary_to_bytes,
    DecimalType: _decimal_to_bytes,
    # v3 geospatial values are WKB bytes in floe; a bound is already its encoded point.
    GeometryType: _binary_to_bytes,
    GeographyType: _binary_to_bytes,
}


def to_bytes(t: PrimitiveType, value: Any) -> bytes:
    """Appendix D binary single-value serialization of a non-null value."""
    fn = _TO_BYTES.get(type(t))
    if fn is None:
        raise ValidationError(f"type {t} has no binary single-value serialization")
    return fn(t, value)


def _wrong_length(t: PrimitiveType, data: bytes, expected: str) -> ValidationError:
    return ValidationError(
        f"cannot read a {t} value from {len(data)} bytes (expected {expected}): "
        f"{bytes(data[:32]).hex()}"
    )


def _bool_from_bytes(t: PrimitiveType, data: bytes) -> Any:
    if len(data) != 1:
        raise _wrong_length(t, data, "1")
    return data[0] != 0


def _int_from_bytes(t: PrimitiveType, data: bytes) -> Any:
    if len(data) != 4:
        raise _wrong_length(t, data, "4")
    return _I32.unpack(data)[0]


def _long_from_bytes(t: PrimitiveType, data: bytes) -> Any:
    n = len(data)
    if n == 8:
        return _I64.unpack(data)[0]
    if n == 4:  # written before the column was promoted from int
        return _I32.unpack(data)[0]
    raise _wrong_length(t, data, "8, or 4 for a promoted int")


def _instant_from_bytes(t: PrimitiveType, data: bytes) -> Any:
    if len(data) != 8:
        raise _wrong_length(t, data, "8")
    return _I64.unpack(data)[0]


def _timestamp_from_bytes(t: PrimitiveType, data: bytes) -> Any:
    n = len(data)
    if n == 8:
        return _I64.unpack(data)[0]
    if n == 4:  # v3: written as days before the column was promoted from date
        days = _I32.unpack(data)[0]
        return days * (NANOS_PER_DAY if isinstance(t, TimestampNanoType) else MICROS_PER_DAY)
    raise _wrong_length(t, data, "8, or 4 for a promoted date")


def _float_from_bytes(t: PrimitiveType, data: bytes) -> Any:
    if len(data) != 4:
        raise _wrong_length(t, data, "4")
    return _F32.unpack(data)[0]


def _double_from_bytes(t: PrimitiveType, data: bytes) -> Any:
    n = len(data)
    if n == 8:
        return _F64.unpack(data)[0]
    if n == 4:  # written before the column was promoted from float
        return _F32.unpack(data)[0]
    raise _wrong_length(t, data, "8, or 4 for a promoted float")


def _string_from_bytes(t: PrimitiveType, data: bytes) -> Any:
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValidationError(f"string value is not valid UTF-8: {e}") from None


def _uuid_from_bytes(t: PrimitiveType, data: bytes) -> Any:
    if len(data) != 16:
        raise _wrong_length(t, data, "16")
    return uuid.UUID(bytes=bytes(data))


def _binary_from_bytes(t: PrimitiveType, data: bytes) -> Any:
    # fixed(L) is not length-checked on read: a reader should not fail on another writer's
    # (possibly truncated) bound.
    return bytes(data)


def _decimal_from_bytes(t: PrimitiveType, data: bytes) -> Any:
    assert isinstance(t, DecimalType)
    if not data:
        raise _wrong_length(t, data, "at least 1")
    return unscaled_to_decimal(int.from_bytes(data, "big", signed=True), t.scale)


_FROM_BYTES: dict[type, Callable[[PrimitiveType, bytes], Any]] = {
    BooleanType: _bool_from_bytes,
    IntegerType: _int_from_bytes,
    LongType: _long_from_bytes,
    FloatType: _float_from_bytes,
    DoubleType: _double_from_bytes,
    DateType: _int_from_bytes,
    TimeType: _instant_from_bytes,
    TimestampType: _timestamp_from_bytes,
    TimestamptzType: _instant_from_bytes,
    TimestampNanoType: _timestamp_from_bytes,
    TimestamptzNanoType: _instant_from_bytes,
    StringType: _string_from_bytes,
    UUIDType: _uuid_from_bytes,
    FixedType: _binary_from_bytes,
    BinaryType: _binary_from_bytes,
    DecimalType: _decimal_from_bytes,
    GeometryType: _binary_from_bytes,
    GeographyType: _binary_from_bytes,
}


def from_bytes(t: PrimitiveType, data: bytes) -> Any:
    """Read an Appendix D binary single value (see the module doc for promoted types)."""
    fn = _FROM_BYTES.get(type(t))
    if fn is None:
        raise ValidationError(f"type {t} has no binary single-value serialization")
    return fn(t, data)


# -- ISO-8601 text -------------------------------------------------------------------------


def _iso_year(year: int) -> str:
    """Year as java.time's ISO formatters print it: 4 digits, a sign beyond 0000..9999."""
    if 0 <= year <= 9999:
        return f"{year:04d}"
    return f"+{year}" if year > 0 else f"-{-year:04d}"


def _iso_date(days: int) -> str:
    y, m, d = civil_from_days(days)
    return f"{_iso_year(y)}-{m:02d}-{d:02d}"


def _hms(seconds_of_day: int) -> str:
    h, rest = divmod(seconds_of_day, 3600)
    m, s = divmod(rest, 60)
    return f"{h:02d}:{m:02d}:{s:02d}"


def _split(value: int, per_second: int) -> tuple[int, int, int]:
    """(days, seconds of day, sub-second units) of an instant, floored."""
    seconds, frac = divmod(value, per_second)
    days, sod = divmod(seconds, 86_400)
    return days, sod, frac


_DATE_RE = r"([+-]?\d{4,})-(\d{2})-(\d{2})"
_TIME_RE = r"(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?"
_DATE_PATTERN = re.compile(_DATE_RE)
_TIME_PATTERN = re.compile(_TIME_RE)
_TIMESTAMP_PATTERN = re.compile(
    _DATE_RE + "T" + _TIME_RE + r"(Z|[+-]\d{2}:\d{2}(?::\d{2})?)?", re.IGNORECASE
)


_DAYS_IN_MONTH = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _parse_days(text: str, y: str, m: str, d: str) -> int:
    year, month, day = int(y), int(m), int(d)
    if not 1 <= month <= 12:
        raise ValidationError(f"invalid month in {text!r}")
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    if not 1 <= day <= (29 if month == 2 and leap else _DAYS_IN_MONTH[month - 1]):
        raise ValidationError(f"invalid day of month in {text!r}")
    return days_from_civil(year, month, day)


def _parse_nanos_of_day(text: str, h: str, mi: str, s: str | None, f: str | None) -> int:
    hour, minute, second = int(h), int(mi), int(s or 0)
    if hour > 23 or minute > 59 or second > 59:
        raise ValidationError(f"invalid time of day in {text!r}")
    nanos = int((f or "").ljust(9, "0"))
    return ((hour * 60 + minute) * 60 + second) * NANOS_PER_SECOND + nanos


def _to_micros(text: str, nanos: int) -> int:
    micros, rest = divmod(nanos, NANOS_PER_MICRO)
    if rest:
        raise ValidationError(f"{text!r} has more than microsecond precision")
    return micros


def _parse_offset_seconds(text: str, zone: str) -> int:
    if zone.upper() == "Z":
        return 0
    sign = -1 if zone[0] == "-" else 1
    parts = [int(p) for p in zone[1:].split(":")]
    hours, minutes, seconds = (parts + [0])[:3]
    if hours > 18 or minutes > 59 or seconds > 59:
        raise ValidationError(f"invalid zone offset in {text!r}")
    return sign * (hours * 3600 + minutes * 60 + seconds)


def _parse_timestamp_nanos(text: str, with_zone: bool) -> int:
    m = _TIMESTAMP_PATTERN.fullmatch(text)
    if m is None:
        raise ValidationError(f"not an ISO-8601 timestamp: {text!r}")
    days = _parse_days(text, m.group(1), m.group(2), m.group(3))
    nanos = _parse_nanos_of_day(text, m.group(4), m.group(5), m.group(6), m.group(7))
    zone = m.group(8)
    if with_zone:
        if zone is None:
            raise ValidationError(f"timestamptz value needs a zone offset: {text!r}")
        nanos -= _parse_offset_seconds(text, zone) * NANOS_PER_SECOND
    elif zone is not None:
        raise ValidationError(f"timestamp without zone must not have an offset: {text!r}")
    return days * NANOS_PER_DAY + nanos


# -- JSON (Appendix D) ---------------------------------------------------------------------


def _decimal_text(t: PrimitiveType, value: Any) -> str:
    assert isinstance(t, DecimalType)
    unscaled = decimal_to_unscaled(value, t.scale)
    _check_precision(t, unscaled, value)
    exact = unscaled_to_decimal(unscaled, t.scale)
    # Spec: a positive scale shows as that many fraction digits, never in E notation; a
    # negative scale uses E notation with exponent = -scale, as str() gives.
    return format(exact, "f") if t.scale >= 0 else str(exact)


def _time_json(t: PrimitiveType, value: Any) -> Any:
    seconds, micros = divmod(value, MICROS_PER_SECOND)
    if not 0 <= seconds < 86_400:
        raise ValidationError(f"time value out of range: {value}")
    return f"{_hms(seconds)}.{micros:06d}"


def _timestamp_json(t: PrimitiveType, value: Any) -> Any:
    nanos = isinstance(t, (TimestampNanoType, TimestamptzNanoType))
    days, sod, frac = _split(value, NANOS_PER_SECOND if nanos else MICROS_PER_SECOND)
    fraction = f"{frac:09d}" if nanos else f"{frac:06d}"
    text = f"{_iso_date(days)}T{_hms(sod)}.{fraction}"
    if isinstance(t, (TimestamptzType, TimestamptzNanoType)):
        text += "+00:00"
    return text


def _float32_json(value: Any) -> float:
    """A float's number as Java writes it (``Float.toString`` digits): the shortest decimal
    that reads back as the same 32-bit float, so ``0.1f`` is ``0.1``, not the double
    ``0.10000000149011612`` it widens to. NaN and infinities stay floats (the JSON writer
    decides how to spell them)."""
    value = float(value)
    if not math.isfinite(value):
        return value
    return float(_shortest_float32(_F32.unpack(_F32.pack(value))[0]))


_TO_JSON: dict[type, Callable[[PrimitiveType, Any], Any]] = {
    BooleanType: lambda t, v: bool(v),
    IntegerType: lambda t, v: int(v),
    LongType: lambda t, v: int(v),
    FloatType: lambda t, v: _float32_json(v),
    DoubleType: lambda t, v: float(v),
    DecimalType: _decimal_text,
    DateType: lambda t, v: _iso_date(v),
    TimeType: _time_json,
    TimestampType: _timestamp_json,
    TimestamptzType: _timestamp_json,
    TimestampNanoType: _timestamp_json,
    TimestamptzNanoType: _timestamp_json,
    StringType: lambda t, v: str(v),
    UUIDType: lambda t, v: str(v if isinstance(v, uuid.UUID) else uuid.UUID(bytes=bytes(v))),
    FixedType: lambda t, v: bytes(v).hex(),
    BinaryType: lambda t, v: bytes(v).hex(),
}


def to_json_value(t: PrimitiveType, value: Any) -> Any:
    """Appendix D JSON single-value serialization (``None`` → JSON null)."""
    if value is None:
        return None
    fn = _TO_JSON.get(type(t))
    if fn is None:
        raise ValidationError(f"type {t} has no JSON single-value serialization in floe")
    return fn(t, value)


def _expect(t: PrimitiveType, obj: Any, kinds: type | tuple[type, ...]) -> None:
    if not isinstance(obj, kinds) or (isinstance(obj, bool) and kinds is not bool):
        raise ValidationError(f"cannot read a {t} value from JSON {obj!r:.100}")


def _bool_json(t: PrimitiveType, obj: Any) -> Any:
    _expect(t, obj, bool)
    return obj


def _integer_json(t: PrimitiveType, obj: Any) -> Any:
    _expect(t, obj, int)
    bound = IntegerType if isinstance(t, IntegerType) else LongType
    if not bound.MIN <= obj <= bound.MAX:
        raise ValidationError(f"{obj} is out of range for {t}")
    return obj


_FLOAT_WORDS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _floating_json(t: PrimitiveType, obj: Any) -> Any:
    if isinstance(obj, str) and obj in _FLOAT_WORDS:
        return _FLOAT_WORDS[obj]
    _expect(t, obj, (int, float))
    return float(obj)


def _decimal_json(t: PrimitiveType, obj: Any) -> Any:
    assert isinstance(t, DecimalType)
    _expect(t, obj, str)
    try:
        value = Decimal(obj)
    except decimal.InvalidOperation:
        raise ValidationError(f"not a decimal: {obj!r:.100}") from None
    if not value.is_finite() or value.as_tuple().exponent != -t.scale:
        raise ValidationError(f"{obj!r:.100} is not a {t} value: the scale does not match")
    _check_precision(t, decimal_to_unscaled(value, t.scale), obj)
    return value


def _date_json(t: PrimitiveType, obj: Any) -> Any:
    _expect(t, obj, str)
    m = _DATE_PATTERN.fullmatch(obj)
    if m is None:
        raise ValidationError(f"not an ISO-8601 date: {obj!r:.100}")
    return _parse_days(obj, *m.groups())


def _time_from_json(t: PrimitiveType, obj: Any) -> Any:
    _expect(t, obj, str)
    m = _TIME_PATTERN.fullmatch(obj)
    if m is None:
        raise ValidationError(f"not an ISO-8601 time: {obj!r:.100}")
    return _to_micros(obj, _parse_nanos_of_day(obj, *m.groups()))


def _timestamp_from_json(t: PrimitiveType, obj: Any) -> Any:
    _expect(t, obj, str)
    with_zone = isinstance(t, (TimestamptzType, TimestamptzNanoType))
    nanos = _parse_timestamp_nanos(obj, with_zone)
    if isinstance(t, (TimestampNanoType, TimestamptzNanoType)):
        return nanos
    return _to_micros(obj, nanos)


def _string_json(t: PrimitiveType, obj: Any) -> Any:
    _expect(t, obj, str)
    return obj


def _uuid_json(t: PrimitiveType, obj: Any) -> Any:
    _expect(t, obj, str)
    try:
        return uuid.UUID(obj)
    except ValueError:
        raise ValidationError(f"not a UUID: {obj!r:.100}") from None


def _hex_json(t: PrimitiveType, obj: Any) -> Any:
    _expect(t, obj, str)
    try:
        data = bytes.fromhex(obj)
    except ValueError:
        raise ValidationError(f"not a hexadecimal string: {obj!r:.100}") from None
    if isinstance(t, FixedType) and len(data) != t.length:
        raise ValidationError(f"{t} value must have {t.length} bytes, got {len(data)}")
    return data


_FROM_JSON: dict[type, Callable[[PrimitiveType, Any], Any]] = {
    BooleanType: _bool_json,
    IntegerType: _integer_json,
    LongType: _integer_json,
    FloatType: _floating_json,
    DoubleType: _floating_json,
    DecimalType: _decimal_json,
    DateType: _date_json,
    TimeType: _time_from_json,
    TimestampType: _timestamp_from_json,
    TimestamptzType: _timestamp_from_json,
    TimestampNanoType: _timestamp_from_json,
    TimestamptzNanoType: _timestamp_from_json,
    StringType: _string_json,
    UUIDType: _uuid_json,
    FixedType: _hex_json,
    BinaryType: _hex_json,
}


def from_json_value(t: PrimitiveType, obj: Any) -> Any:
    """Read an Appendix D JSON single value (JSON null → ``None``).

    Timestamps with zone accept any offset (and ``Z``) and are converted to UTC; timestamps
    without zone reject an offset; fractions finer than the type's precision are rejected.
    """
    if obj is None:
        return None
    fn = _FROM_JSON.get(type(t))
    if fn is None:
        raise ValidationError(f"type {t} has no JSON single-value serialization in floe")
    return fn(t, obj)


# -- human strings (Java Transform.toHumanString) ------------------------------------------


def _java_float_text(value: float, single: bool) -> str:
    """``Float.toString`` / ``Double.toString``: shortest digits, E notation outside
    [1e-3, 1e7)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if single:
        value = _F32.unpack(_F32.pack(value))[0]
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    shortest = _shortest_float32(value) if single else repr(value)
    sign, digit_tuple, exponent = Decimal(shortest).as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple)).rstrip("0") or "0"
    point = len(digit_tuple) + exponent  # position of the decimal point after the 1st digit
    if 1e-3 <= abs(value) < 1e7:
        if point <= 0:
            text = "0." + "0" * -point + digits
        elif point >= len(digits):
            text = digits + "0" * (point - len(digits)) + ".0"
        else:
            text = digits[:point] + "." + digits[point:]
    else:
        text = f"{digits[0]}.{digits[1:] or '0'}E{point - 1}"
    return "-" + text if sign else text


def _shortest_float32(value: float) -> str:
    for precision in range(1, 10):
        text = f"{value:.{precision}g}"
        try:
            if _F32.unpack(_F32.pack(float(text)))[0] == value:
                return text
        except OverflowError:  # rounded past the largest float (3e38 of 3.4028235e38)
            continue
    return repr(value)  # pragma: no cover - 9 digits always round-trip a float32


def _human_fraction(frac: int, width: int) -> str:
    """java.time ISO fraction: omitted when zero, trailing zeros stripped."""
    if not frac:
        return ""
    return "." + f"{frac:0{width}d}".rstrip("0")


def _human_time(micros: int) -> str:
    """``LocalTime.toString``: ``HH:mm``, seconds only when non-zero, fraction in groups
    of three digits."""
    seconds, frac = divmod(micros, MICROS_PER_SECOND)
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    text = f"{h:02d}:{m:02d}"
    if s or frac:
        text += f":{s:02d}"
        if frac:
            text += f".{frac // 1000:03d}" if frac % 1000 == 0 else f".{frac:06d}"
    return text


def _human_timestamp(t: PrimitiveType, value: int) -> str:
    nanos = isinstance(t, (TimestampNanoType, TimestamptzNanoType))
    days, sod, frac = _split(value, NANOS_PER_SECOND if nanos else MICROS_PER_SECOND)
    text = f"{_iso_date(days)}T{_hms(sod)}{_human_fraction(frac, 9 if nanos else 6)}"
    if isinstance(t, (TimestamptzType, TimestamptzNanoType)):
        text += "+00:00"
    return text


def _human_binary(t: PrimitiveType, value: Any) -> str:
    return base64.b64encode(bytes(value)).decode("ascii")


_TO_HUMAN: dict[type, Callable[[PrimitiveType, Any], str]] = {
    BooleanType: lambda t, v: "true" if v else "false",
    FloatType: lambda t, v: _java_float_text(v, single=True),
    DoubleType: lambda t, v: _java_float_text(v, single=False),
    DateType: lambda t, v: human_day(v),
    TimeType: lambda t, v: _human_time(v),
    TimestampType: _human_timestamp,
    TimestamptzType: _human_timestamp,
    TimestampNanoType: _human_timestamp,
    TimestamptzNanoType: _human_timestamp,
    UUIDType: lambda t, v: str(v if isinstance(v, uuid.UUID) else uuid.UUID(bytes=bytes(v))),
    FixedType: _human_binary,
    BinaryType: _human_binary,
    GeometryType: _human_binary,
    GeographyType: _human_binary,
}


def human_day(days: int) -> str:
    """Java ``TransformUtil.humanDay``: ``%04d-%02d-%02d``."""
    y, m, d = civil_from_days(days)
    return f"{y:04d}-{m:02d}-{d:02d}"


def to_human_string(t: PrimitiveType, value: Any) -> str:
    """A value as Java's ``Transform.toHumanString(type, value)`` renders it.

    ``null`` for None; dates ``2024-01-01``; times as ``LocalTime.toString`` (``10:00``,
    ``10:00:30.500``); timestamps ISO-8601 with the fraction's trailing zeros dropped
    (``2024-01-01T10:00:00``, ``...+00:00`` with zone); fixed and binary as base64; floats
    as Java prints them (``1.0E10``; a float32 in its shortest form, ``0.1``; ``NaN``,
    ``Infinity``, ``-Infinity``); booleans ``true`` / ``false``; UUIDs in their 8-4-4-4-12
    form; decimals as ``BigDecimal.toString``; everything else ``str``.
    """
    if value is None:
        return "null"
    fn = _TO_HUMAN.get(type(t))
    if fn is None:
        if isinstance(value, (bytes, bytearray, memoryview)):
            return _human_binary(t, value)
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)
    return fn(t, value)
