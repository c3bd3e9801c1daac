"""Partition transforms (spec "Partition Transforms", Appendix B "32-bit Hash Requirements").

A transform is a small immutable value (``bucket[16]`` equals ``bucket[16]``) that does not
know its source type; :meth:`Transform.transform` binds it to one and returns a plain
callable (None → None) for the hot path. :func:`transform_arrow` is the vectorised form the
writers use, with results identical to the scalar form.

Where the reference implementations differ from the spec text, floe follows the reference
implementations because their output lands in shared metadata:

* ``day`` reports result type ``date`` (Java ``Days.getResultType``, PyIceberg), where the
  spec's table says ``int``. The stored value is the same int (days from 1970-01-01); only
  the type annotation in manifests and the human string differ.
* ``timestamp_ns`` / ``timestamptz_ns`` values are floored to microseconds before hashing
  (Appendix B note 3), so a nanosecond column buckets like its microsecond twin.
* The temporal transforms floor: one microsecond before the epoch is day -1, hour -1,
  month -1 and year -1.
"""

from __future__ import annotations

import math
import re
import struct
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import mmh3

from floe import conversions
from floe.conversions import (
    MICROS_PER_DAY,
    MICROS_PER_HOUR,
    NANOS_PER_DAY,
    NANOS_PER_MICRO,
    civil_from_days,
    decimal_to_min_bytes,
    decimal_to_unscaled,
    human_day,
    unscaled_to_decimal,
)
from floe.errors import ValidationError
from floe.types import (
    DATE,
    INT,
    STRING,
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    GeographyType,
    GeometryType,
    IcebergType,
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
    VariantType,
)

if TYPE_CHECKING:  # Arrow is imported by the vectorised transforms that use it
    import pyarrow as pa

__all__ = [
    "BucketTransform",
    "DayTransform",
    "HourTransform",
    "IdentityTransform",
    "MonthTransform",
    "Transform",
    "TruncateTransform",
    "UnknownTransform",
    "VoidTransform",
    "YearTransform",
    "bucket_hash",
    "parse_transform",
    "transform_arrow",
]

Fn = Callable[[Any], Any]

_INT_MAX = 2**31 - 1
_EPOCH_YEAR = 1970
_NANOS_PER_HOUR = MICROS_PER_HOUR * NANOS_PER_MICRO
_I64 = struct.Struct("<q")
_F64 = struct.Struct("<d")
_CANONICAL_NAN = struct.pack("<Q", 0x7FF8000000000000)

_MICROS_TS = (TimeType, TimestampType, TimestamptzType)
_NANOS_TS = (TimestampNanoType, TimestamptzNanoType)
_TIMESTAMPS = (TimestampType, TimestamptzType, TimestampNanoType, TimestamptzNanoType)
_BUCKET_SOURCES = (
    IntegerType, LongType, DecimalType, DateType, TimeType, TimestampType, TimestamptzType,
    TimestampNanoType, TimestamptzNanoType, StringType, UUIDType, FixedType, BinaryType,
)
_TRUNCATE_SOURCES = (IntegerType, LongType, DecimalType, StringType, BinaryType)
_NOT_IDENTITY = (GeometryType, GeographyType, VariantType)


# -- Appendix B: 32-bit hash ---------------------------------------------------------------


def _hash_long(v: int) -> int:
    return mmh3.hash(_I64.pack(v))


def _hash_nanos(v: int) -> int:
    return mmh3.hash(_I64.pack(v // NANOS_PER_MICRO))


def _hash_string(v: str) -> int:
    return mmh3.hash(v.encode("utf-8"))


def _hash_bytes(v: bytes) -> int:
    return mmh3.hash(bytes(v))


def _hash_uuid(v: uuid.UUID | bytes) -> int:
    return mmh3.hash(v.bytes if isinstance(v, uuid.UUID) else bytes(v))


def _hash_bool(v: bool) -> int:
    return _hash_long(1 if v else 0)


def _hash_double(v: float) -> int:
    # doubleToLongBits with NaN canonicalised and -0.0 folded into 0.0 (note 5)
    if math.isnan(v):
        return mmh3.hash(_CANONICAL_NAN)
    return mmh3.hash(_F64.pack(v if v != 0 else 0.0))


def _hash_fn(source_type: IcebergType) -> Fn:
    if isinstance(source_type, (IntegerType, LongType, DateType, *_MICROS_TS)):
        return _hash_long
    if isinstance(source_type, _NANOS_TS):
        return _hash_nanos
    if isinstance(source_type, StringType):
        return _hash_string
    if isinstance(source_type, UUIDType):
        return _hash_uuid
    if isinstance(source_type, (FixedType, BinaryType)):
        return _hash_bytes
    if isinstance(source_type, DecimalType):
        scale = source_type.scale
        return lambda v: mmh3.hash(decimal_to_min_bytes(decimal_to_unscaled(v, scale)))
    # Not valid bucket sources, but Appendix B defines their hash for the future.
    if isinstance(source_type, BooleanType):
        return _hash_bool
    if isinstance(source_type, (FloatType, DoubleType)):
        return _hash_double
    raise ValidationError(f"Appendix B defines no 32-bit hash for {source_type}")


def bucket_hash(source_type: IcebergType, value: Any) -> int:
    """Appendix B: the signed 32-bit Murmur3 (x86, seed 0) hash of a non-null value."""
    if value is None:
        raise ValidationError("null has no bucket hash; the bucket of null is null")
    result: int = _hash_fn(source_type)(value)
    return result


# -- the transforms ------------------------------------------------------------------------


class Transform(ABC):
    """A partition or sort transform. Immutable; equal when the spec strings are equal."""

    __slots__ = ()

    @abstractmethod
    def __str__(self) -> str: ...

    @abstractmethod
    def can_transform(self, source_type: IcebergType) -> bool: ...

    @abstractmethod
    def result_type(self, source_type: PrimitiveType) -> PrimitiveType: ...

    @abstractmethod
    def _bind(self, source_type: PrimitiveType) -> Fn: ...

    def transform(self, source_type: IcebergType) -> Fn:
        """A callable applying this transform to values of ``source_type`` (None → None)."""
        if not isinstance(source_type, PrimitiveType) or not self.can_transform(source_type):
            raise ValidationError(f"cannot apply {self} to type {source_type}")
        return self._bind(source_type)

    def to_human_string(self, value_type: PrimitiveType, value: Any) -> str:
        """The value in a partition path, as Java's ``Transform.toHumanString``.

        ``value_type`` is the source (or, the same thing for value-preserving transforms,
        the result) type; ``None`` gives ``null``.
        """
        return conversions.to_human_string(value_type, value)

    @property
    def preserves_order(self) -> bool:
        """Whether ``a < b`` implies ``f(a) <= f(b)``."""
        return False

    def satisfies_order_of(self, other: Transform, source_type: IcebergType | None = None) -> bool:
        """Whether data ordered by this transform is also ordered by ``other``."""
        return self == other

    @property
    def dedup_name(self) -> str:
        """Two fields of one source column with the same dedup name clash in a spec."""
        return str(self)

    @property
    def is_identity(self) -> bool:
        return False

    @property
    def is_void(self) -> bool:
        return False


@dataclass(frozen=True, slots=True, repr=False)
class IdentityTransform(Transform):
    def __str__(self) -> str:
        return "identity"

    def __repr__(self) -> str:
        return "IdentityTransform()"

    def can_transform(self, source_type: IcebergType) -> bool:
        return isinstance(source_type, PrimitiveType) and not isinstance(
            source_type, _NOT_IDENTITY
        )

    def result_type(self, source_type: PrimitiveType) -> PrimitiveType:
        return source_type

    def _bind(self, source_type: PrimitiveType) -> Fn:
        return _identity

    @property
    def preserves_order(self) -> bool:
        return True

    def satisfies_order_of(self, other: Transform, source_type: IcebergType | None = None) -> bool:
        # ordering by the value orders by any monotonic function of it
        return other.preserves_order

    @property
    def is_identity(self) -> bool:
        return True


def _identity(v: Any) -> Any:
    return v


@dataclass(frozen=True, slots=True, repr=False)
class BucketTransform(Transform):
    """``bucket[N]``: ``(hash(v) & Integer.MAX_VALUE) % N``, an ``int``."""

    num_buckets: int

    def __post_init__(self) -> None:
        if isinstance(self.num_buckets, bool) or not isinstance(self.num_buckets, int) or (
            not 0 < self.num_buckets <= _INT_MAX
        ):
            raise ValidationError(f"bucket count must be a positive int, got {self.num_buckets!r}")

    def __str__(self) -> str:
        return f"bucket[{self.num_buckets}]"

    def __repr__(self) -> str:
        return f"BucketTransform({self.num_buckets})"

    def can_transform(self, source_type: IcebergType) -> bool:
        return isinstance(source_type, _BUCKET_SOURCES)

    def result_type(self, source_type: PrimitiveType) -> PrimitiveType:
        return INT

    def _bind(self, source_type: PrimitiveType) -> Fn:
        hash_fn = _hash_fn(source_type)
        n = self.num_buckets

        def bucket(v: Any) -> int | None:
            return None if v is None else (hash_fn(v) & _INT_MAX) % n

        return bucket

    def to_human_string(self, value_type: PrimitiveType, value: Any) -> str:
        return "null" if value is None else str(value)


@dataclass(frozen=True, slots=True, repr=False)
class TruncateTransform(Transform):
    """``truncate[W]``: ints floor to a multiple of W, decimals likewise on the unscaled
    value, strings keep W code points, binary keeps W bytes."""

    width: int

    def __post_init__(self) -> None:
        if isinstance(self.width, bool) or not isinstance(self.width, int) or (
            not 0 < self.width <= _INT_MAX
        ):
            raise ValidationError(f"truncate width must be a positive int, got {self.width!r}")

    def __str__(self) -> str:
        return f"truncate[{self.width}]"

    def __repr__(self) -> str:
        return f"TruncateTransform({self.width})"

    def can_transform(self, source_type: IcebergType) -> bool:
        return isinstance(source_type, _TRUNCATE_SOURCES)

    def result_type(self, source_type: PrimitiveType) -> PrimitiveType:
        return source_type

    def _bind(self, source_type: PrimitiveType) -> Fn:
        w = self.width
        if isinstance(source_type, (IntegerType, LongType)):
            # Python's % is a floor modulo, so this is the spec's v - (((v % W) + W) % W).
            # Java computes it in 32 / 64 bits and wraps near the minimum
            # (truncate[10](-2**31) == 2**31 - 2); tables Java wrote carry those values.
            bits = 32 if isinstance(source_type, IntegerType) else 64
            return lambda v: None if v is None else _wrap(v - v % w, bits)
        if isinstance(source_type, DecimalType):
            scale = source_type.scale

            def truncate_decimal(v: Any) -> Any:
                if v is None:
                    return None
                unscaled = decimal_to_unscaled(v, scale)
                return unscaled_to_decimal(unscaled - unscaled % w, scale)

            return truncate_decimal
        # str slices by code point (spec note 3), bytes by byte (note 4)
        return lambda v: None if v is None else v[:w]

    @property
    def preserves_order(self) -> bool:
        return True

    def satisfies_order_of(self, other: Transform, source_type: IcebergType | None = None) -> bool:
        """A coarser order is satisfied by a finer one.

        Strings and binary: a longer prefix satisfies a shorter one. Numbers: truncate[W]
        satisfies truncate[V] when V is a multiple of W. Without the source type only an
        equal width is known to satisfy.
        """
        if not isinstance(other, TruncateTransform):
            return False
        if isinstance(source_type, (StringType, BinaryType)):
            return self.width >= other.width
        if isinstance(source_type, (IntegerType, LongType, DecimalType)):
            return other.width % self.width == 0
        return self.width == other.width


class _TimeTransform(Transform):
    """year, month, day, hour: floor of the value to a calendar unit, counted from 1970."""

    __slots__ = ()
    #: hours in one unit, ordering the granularities: hour < day < month < year
    _granularity: ClassVar[int]
    _name: ClassVar[str]
    _sources: ClassVar[tuple[type, ...]] = (DateType, *_TIMESTAMPS)

    def __str__(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def can_transform(self, source_type: IcebergType) -> bool:
        return isinstance(source_type, self._sources)

    def result_type(self, source_type: PrimitiveType) -> PrimitiveType:
        return INT

    @property
    def preserves_order(self) -> bool:
        return True

    def satisfies_order_of(self, other: Transform, source_type: IcebergType | None = None) -> bool:
        return isinstance(other, _TimeTransform) and self._granularity <= other._granularity

    @property
    def dedup_name(self) -> str:
        return "time"


def _days_fn(source_type: PrimitiveType) -> Fn:
    """Value → days from 1970-01-01 (floored), for a date or timestamp source."""
    if isinstance(source_type, DateType):
        return _identity
    per_day = NANOS_PER_DAY if isinstance(source_type, _NANOS_TS) else MICROS_PER_DAY
    return lambda v: v // per_day


@dataclass(frozen=True, slots=True, repr=False)
class YearTransform(_TimeTransform):
    _granularity = 24 * 366
    _name = "year"

    def _bind(self, source_type: PrimitiveType) -> Fn:
        days = _days_fn(source_type)
        return lambda v: None if v is None else civil_from_days(days(v))[0] - _EPOCH_YEAR

    def to_human_string(self, value_type: PrimitiveType, value: Any) -> str:
        return "null" if value is None else f"{_EPOCH_YEAR + value:04d}"


@dataclass(frozen=True, slots=True, repr=False)
class MonthTransform(_TimeTransform):
    _granularity = 24 * 31
    _name = "month"

    def _bind(self, source_type: PrimitiveType) -> Fn:
        days = _days_fn(source_type)

        def month(v: Any) -> int | None:
            if v is None:
                return None
            y, m, _ = civil_from_days(days(v))
            return (y - _EPOCH_YEAR) * 12 + m - 1

        return month

    def to_human_string(self, value_type: PrimitiveType, value: Any) -> str:
        if value is None:
            return "null"
        return f"{_EPOCH_YEAR + value // 12:04d}-{value % 12 + 1:02d}"


@dataclass(frozen=True, slots=True, repr=False)
class DayTransform(_TimeTransform):
    _granularity = 24
    _name = "day"

    def result_type(self, source_type: PrimitiveType) -> PrimitiveType:
        """``date``, as Java and PyIceberg report it; the spec's table says ``int``.

        Both are the same int of days from 1970-01-01 when stored; ``date`` is what Java
        writes into manifests' partition schema, so floe does too.
        """
        return DATE

    def _bind(self, source_type: PrimitiveType) -> Fn:
        if isinstance(source_type, DateType):
            return _identity
        per_day = NANOS_PER_DAY if isinstance(source_type, _NANOS_TS) else MICROS_PER_DAY
        return lambda v: None if v is None else v // per_day

    def to_human_string(self, value_type: PrimitiveType, value: Any) -> str:
        return "null" if value is None else human_day(value)


@dataclass(frozen=True, slots=True, repr=False)
class HourTransform(_TimeTransform):
    _granularity = 1
    _name = "hour"
    _sources = _TIMESTAMPS

    def _bind(self, source_type: PrimitiveType) -> Fn:
        per_hour = _NANOS_PER_HOUR if isinstance(source_type, _NANOS_TS) else MICROS_PER_HOUR
        return lambda v: None if v is None else v // per_hour

    def to_human_string(self, value_type: PrimitiveType, value: Any) -> str:
        if value is None:
            return "null"
        days, hour = divmod(value, 24)
        return f"{human_day(days)}-{hour:02d}"


@dataclass(frozen=True, slots=True, repr=False)
class VoidTransform(Transform):
    """Always null; replaces a dropped partition field in v1 tables."""

    def __str__(self) -> str:
        return "void"

    def __repr__(self) -> str:
        return "VoidTransform()"

    def can_transform(self, source_type: IcebergType) -> bool:
        return True

    def result_type(self, source_type: PrimitiveType) -> PrimitiveType:
        return source_type

    def _bind(self, source_type: PrimitiveType) -> Fn:
        return _always_null

    def to_human_string(self, value_type: PrimitiveType, value: Any) -> str:
        return "null"

    @property
    def is_void(self) -> bool:
        return True


def _always_null(v: Any) -> None:
    return None


@dataclass(frozen=True, slots=True, repr=False)
class UnknownTransform(Transform):
    """A transform floe does not know, kept verbatim so metadata round-trips.

    Readers ignore such fields when filtering (required in v3); nothing can be computed
    with it, and writers must not commit data with a spec that has one.
    """

    text: str

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"UnknownTransform({self.text!r})"

    def can_transform(self, source_type: IcebergType) -> bool:
        return False

    def result_type(self, source_type: PrimitiveType) -> PrimitiveType:
        # the real type is unknowable; Java and PyIceberg both report string
        return STRING

    def _bind(self, source_type: PrimitiveType) -> Fn:  # pragma: no cover - unreachable
        raise ValidationError(f"cannot apply unknown transform {self.text!r}")

    def transform(self, source_type: IcebergType) -> Fn:
        raise ValidationError(f"cannot apply unknown transform {self.text!r}")


_SINGLETONS: dict[str, Transform] = {
    "identity": IdentityTransform(),
    "year": YearTransform(),
    "month": MonthTransform(),
    "day": DayTransform(),
    "hour": HourTransform(),
    "void": VoidTransform(),
}
_WITH_ARGUMENT = re.compile(r"(\w+)\[(\d+)\]")


def parse_transform(text: str) -> Transform:
    """A transform from its spec string (Appendix C), case-insensitive as in Java.

    ``bucket[0]`` and ``truncate[0]`` are errors; any other unrecognised text is an
    :class:`UnknownTransform`, which metadata readers must tolerate.
    """
    s = text.strip()
    lowered = s.lower()
    if lowered in _SINGLETONS:
        return _SINGLETONS[lowered]
    m = _WITH_ARGUMENT.fullmatch(lowered)
    if m is not None:
        if m.group(1) == "bucket":
            return BucketTransform(int(m.group(2)))
        if m.group(1) == "truncate":
            return TruncateTransform(int(m.group(2)))
    return UnknownTransform(text)


# -- vectorised (pyarrow) ------------------------------------------------------------------


def transform_arrow(
    transform: Transform, source_type: IcebergType, array: pa.Array | pa.ChunkedArray
) -> pa.Array | pa.ChunkedArray:
    """Apply ``transform`` to an Arrow array of ``source_type`` values.

    The result holds the same values as the scalar :meth:`Transform.transform` would give,
    in the Arrow type of the result (``int32`` for bucket, year, month, day and hour; the
    input's type for identity, truncate and void). Temporal inputs may come in any Arrow
    unit; integer arrays are taken as the Iceberg representation (days, micros, nanos).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(array, pa.ChunkedArray):
        chunks = array.chunks or [pa.array([], type=array.type)]
        return pa.chunked_array([transform_arrow(transform, source_type, c) for c in chunks])
    if not isinstance(source_type, PrimitiveType) or not transform.can_transform(source_type):
        raise ValidationError(f"cannot apply {transform} to type {source_type}")
    if isinstance(transform, IdentityTransform):
        return array
    if isinstance(transform, VoidTransform):
        return pa.nulls(len(array), type=array.type)
    if isinstance(transform, _TimeTransform):
        return _temporal_arrow(transform, source_type, _iceberg_ints(source_type, array))
    if isinstance(transform, TruncateTransform):
        if isinstance(source_type, (IntegerType, LongType)):
            w = transform.width
            # unchecked multiply: wraps in 64 bits exactly as Java's long arithmetic does
            floor = pc.multiply(_floor_div(array.cast(pa.int64()), w), w)
            if isinstance(source_type, IntegerType):
                floor = pc.subtract(pc.bit_wise_and(pc.add(floor, 1 << 31), (1 << 32) - 1),
                                    1 << 31)  # wrap into 32 bits like Java's int arithmetic
            return floor.cast(array.type)
        if isinstance(source_type, StringType):
            return pc.utf8_slice_codeunits(array, 0, transform.width)  # slices code points
        if isinstance(source_type, BinaryType):
            return pc.binary_slice(array, 0, transform.width)
        return _scalar_arrow(transform, source_type, array, array.type)
    return _scalar_arrow(transform, source_type, _iceberg_ints(source_type, array), pa.int32())


def _wrap(value: int, bits: int) -> int:
    """``value`` as a ``bits``-wide two's-complement integer (Java's overflow)."""
    half = 1 << (bits - 1)
    return ((value + half) & ((1 << bits) - 1)) - half


def _scalar_arrow(
    transform: Transform, source_type: PrimitiveType, array: pa.Array, out_type: pa.DataType
) -> pa.Array:
    import pyarrow as pa

    fn = transform.transform(source_type)
    return pa.array([fn(v) for v in array.to_pylist()], type=out_type)


def _iceberg_ints(source_type: PrimitiveType, array: pa.Array) -> pa.Array:
    """Temporal Arrow values as the ints floe uses (days, micros or nanos); others as is."""
    import pyarrow as pa

    t = array.type
    if pa.types.is_integer(t):
        return array
    if isinstance(source_type, DateType):
        return array.cast(pa.date32()).cast(pa.int32())
    if isinstance(source_type, TimeType):
        return array.cast(pa.time64("us")).cast(pa.int64())
    if isinstance(source_type, _TIMESTAMPS):
        unit = "ns" if isinstance(source_type, _NANOS_TS) else "us"
        # the tz only labels the values, which are UTC already: keep it through the cast
        tz = t.tz if pa.types.is_timestamp(t) else None
        return array.cast(pa.timestamp(unit, tz=tz)).cast(pa.int64())
    return array


def _floor_div(values: pa.Array, divisor: int) -> pa.Array:
    """Floor division (Arrow's integer divide truncates toward zero)."""
    import pyarrow.compute as pc

    quotient = pc.divide(values, divisor)
    remainder = pc.subtract(values, pc.multiply(quotient, divisor))
    return pc.if_else(pc.less(remainder, 0), pc.subtract(quotient, 1), quotient)


def _temporal_arrow(
    transform: _TimeTransform, source_type: PrimitiveType, ints: pa.Array
) -> pa.Array:
    import pyarrow as pa
    import pyarrow.compute as pc

    ints = ints.cast(pa.int64())
    nanos = isinstance(source_type, _NANOS_TS)
    if isinstance(transform, HourTransform):
        return _floor_div(ints, _NANOS_PER_HOUR if nanos else MICROS_PER_HOUR).cast(pa.int32())
    if isinstance(source_type, DateType):
        days = ints
    else:
        days = _floor_div(ints, NANOS_PER_DAY if nanos else MICROS_PER_DAY)
    days = days.cast(pa.int32())
    if isinstance(transform, DayTransform):
        return days
    dates = days.cast(pa.date32())
    years = pc.subtract(pc.year(dates), _EPOCH_YEAR)
    if isinstance(transform, YearTransform):
        return years.cast(pa.int32())
    months = pc.add(pc.multiply(years, 12), pc.subtract(pc.month(dates), 1))
    return months.cast(pa.int32())
