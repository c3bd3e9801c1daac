"""Iceberg data types (spec "Schemas and Data Types", JSON in Appendix C).

Types are immutable values: primitive types without parameters compare equal by class, so
``LongType() == LongType()``; a module-level instance of each exists for convenience
(``LONG``, ``STRING``, ...). Nested types carry their field ids.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

from floe.errors import ValidationError

__all__ = [
    "IcebergType", "PrimitiveType", "NestedType",
    "BooleanType", "IntegerType", "LongType", "FloatType", "DoubleType", "DecimalType",
    "DateType", "TimeType", "TimestampType", "TimestamptzType", "TimestampNanoType",
    "TimestamptzNanoType", "StringType", "UUIDType", "FixedType", "BinaryType",
    "UnknownType", "VariantType", "GeometryType", "GeographyType",
    "NestedField", "StructType", "ListType", "MapType",
    "parse_primitive", "parse_type", "type_from_json", "type_to_json", "can_promote",
]


class IcebergType:
    """Base of every Iceberg type."""

    __slots__ = ()

    @property
    def is_primitive(self) -> bool:
        return isinstance(self, PrimitiveType)

    @property
    def is_nested(self) -> bool:
        return isinstance(self, NestedType)


class PrimitiveType(IcebergType):
    __slots__ = ()
    #: the spec's name of the type in schema JSON, e.g. "long"
    type_name: ClassVar[str] = ""

    def __str__(self) -> str:
        return self.type_name

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self))


class NestedType(IcebergType):
    __slots__ = ()

    @property
    def fields(self) -> tuple[NestedField, ...]:  # pragma: no cover - overridden
        raise NotImplementedError


class BooleanType(PrimitiveType):
    __slots__ = ()
    type_name = "boolean"


class IntegerType(PrimitiveType):
    __slots__ = ()
    type_name = "int"
    MIN: ClassVar[int] = -(2**31)
    MAX: ClassVar[int] = 2**31 - 1


class LongType(PrimitiveType):
    __slots__ = ()
    type_name = "long"
    MIN: ClassVar[int] = -(2**63)
    MAX: ClassVar[int] = 2**63 - 1


class FloatType(PrimitiveType):
    __slots__ = ()
    type_name = "float"


class DoubleType(PrimitiveType):
    __slots__ = ()
    type_name = "double"


class DateType(PrimitiveType):
    __slots__ = ()
    type_name = "date"


class TimeType(PrimitiveType):
    __slots__ = ()
    type_name = "time"


class TimestampType(PrimitiveType):
    __slots__ = ()
    type_name = "timestamp"


class TimestamptzType(PrimitiveType):
    __slots__ = ()
    type_name = "timestamptz"


class TimestampNanoType(PrimitiveType):
    """v3: timestamp with nanosecond precision, without zone."""

    __slots__ = ()
    type_name = "timestamp_ns"


class TimestamptzNanoType(PrimitiveType):
    """v3: timestamp with nanosecond precision, with zone (stored as UTC)."""

    __slots__ = ()
    type_name = "timestamptz_ns"


class StringType(PrimitiveType):
    __slots__ = ()
    type_name = "string"


class UUIDType(PrimitiveType):
    __slots__ = ()
    type_name = "uuid"


class BinaryType(PrimitiveType):
    __slots__ = ()
    type_name = "binary"


class UnknownType(PrimitiveType):
    """v3: a column whose values are all null and whose type is not known yet."""

    __slots__ = ()
    type_name = "unknown"


class VariantType(PrimitiveType):
    """v3: semi-structured values. Read-tolerated only."""

    __slots__ = ()
    type_name = "variant"


class DecimalType(PrimitiveType):
    __slots__ = ("precision", "scale")
    type_name = "decimal"
    precision: int
    scale: int

    def __init__(self, precision: int, scale: int) -> None:
        if not 0 < precision <= 38:
            raise ValidationError(f"decimal precision must be 1..38, got {precision}")
        object.__setattr__(self, "precision", precision)
        object.__setattr__(self, "scale", scale)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("types are immutable")

    def __str__(self) -> str:
        return f"decimal({self.precision}, {self.scale})"

    def __repr__(self) -> str:
        return f"DecimalType({self.precision}, {self.scale})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, DecimalType)
            and self.precision == other.precision
            and self.scale == other.scale
        )

    def __hash__(self) -> int:
        return hash((DecimalType, self.precision, self.scale))


class FixedType(PrimitiveType):
    __slots__ = ("length",)
    type_name = "fixed"
    length: int

    def __init__(self, length: int) -> None:
        if length < 0:
            raise ValidationError(f"fixed length must not be negative, got {length}")
        object.__setattr__(self, "length", length)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("types are immutable")

    def __str__(self) -> str:
        return f"fixed[{self.length}]"

    def __repr__(self) -> str:
        return f"FixedType({self.length})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FixedType) and self.length == other.length

    def __hash__(self) -> int:
        return hash((FixedType, self.length))


class GeometryType(PrimitiveType):
    """v3: geometry(C) with a CRS (default OGC:CRS84). Read-tolerated only."""

    __slots__ = ("crs",)
    type_name = "geometry"
    crs: str
    DEFAULT_CRS: ClassVar[str] = "OGC:CRS84"

    def __init__(self, crs: str = "OGC:CRS84") -> None:
        object.__setattr__(self, "crs", crs)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("types are immutable")

    def __str__(self) -> str:
        return "geometry" if self.crs == self.DEFAULT_CRS else f"geometry({self.crs})"

    def __repr__(self) -> str:
        return f"GeometryType({self.crs!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GeometryType) and self.crs == other.crs

    def __hash__(self) -> int:
        return hash((GeometryType, self.crs))


class GeographyType(PrimitiveType):
    """v3: geography(C, A) with a CRS and an edge-interpolation algorithm. Read-tolerated."""

    __slots__ = ("crs", "algorithm")
    type_name = "geography"
    crs: str
    algorithm: str
    DEFAULT_CRS: ClassVar[str] = "OGC:CRS84"
    DEFAULT_ALGORITHM: ClassVar[str] = "spherical"

    def __init__(self, crs: str = "OGC:CRS84", algorithm: str = "spherical") -> None:
        object.__setattr__(self, "crs", crs)
        object.__setattr__(self, "algorithm", algorithm)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("types are immutable")

    def __str__(self) -> str:
        if self.crs == self.DEFAULT_CRS and self.algorithm == self.DEFAULT_ALGORITHM:
            return "geography"
        if self.algorithm == self.DEFAULT_ALGORITHM:
            return f"geography({self.crs})"
        return f"geography({self.crs}, {self.algorithm})"

    def __repr__(self) -> str:
        return f"GeographyType({self.crs!r}, {self.algorithm!r})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, GeographyType)
            and self.crs == other.crs
            and self.algorithm == other.algorithm
        )

    def __hash__(self) -> int:
        return hash((GeographyType, self.crs, self.algorithm))


@dataclass(frozen=True, slots=True)
class NestedField:
    """A named, id'd field of a struct (spec: "struct" fields)."""

    field_id: int
    name: str
    field_type: IcebergType
    required: bool = False
    doc: str | None = None
    initial_default: Any = None
    write_default: Any = None

    @property
    def optional(self) -> bool:
        return not self.required

    def __str__(self) -> str:
        req = "required" if self.required else "optional"
        doc = f" ({self.doc})" if self.doc else ""
        return f"{self.field_id}: {self.name}: {req} {self.field_type}{doc}"


class StructType(NestedType):
    """A tuple of typed, id'd fields."""

    __slots__ = ("_fields", "_by_id")
    _fields: tuple[NestedField, ...]
    _by_id: dict[int, NestedField]

    def __init__(self, *fields: NestedField) -> None:
        object.__setattr__(self, "_fields", tuple(fields))
        object.__setattr__(self, "_by_id", {f.field_id: f for f in fields})

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("types are immutable")

    def __repr__(self) -> str:
        return "StructType(" + ", ".join(repr(f) for f in self._fields) + ")"

    @property
    def fields(self) -> tuple[NestedField, ...]:
        return self._fields

    def field(self, field_id: int) -> NestedField | None:
        return self._by_id.get(field_id)

    def field_by_name(self, name: str, case_sensitive: bool = True) -> NestedField | None:
        if case_sensitive:
            return next((f for f in self._fields if f.name == name), None)
        lname = name.lower()
        return next((f for f in self._fields if f.name.lower() == lname), None)

    def __iter__(self) -> Iterator[NestedField]:
        return iter(self._fields)

    def __len__(self) -> int:
        return len(self._fields)

    def __str__(self) -> str:
        return "struct<" + ", ".join(str(f) for f in self._fields) + ">"

    def __hash__(self) -> int:
        return hash(self._fields)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StructType) and self._fields == other._fields


@dataclass(frozen=True, slots=True)
class ListType(NestedType):
    element_id: int
    element_type: IcebergType
    element_required: bool = True

    @property
    def element_field(self) -> NestedField:
        return NestedField(self.element_id, "element", self.element_type, self.element_required)

    @property
    def fields(self) -> tuple[NestedField, ...]:
        return (self.element_field,)

    def __str__(self) -> str:
        return f"list<{self.element_type}>"


@dataclass(frozen=True, slots=True)
class MapType(NestedType):
    key_id: int
    key_type: IcebergType
    value_id: int
    value_type: IcebergType
    value_required: bool = True

    @property
    def key_field(self) -> NestedField:
        return NestedField(self.key_id, "key", self.key_type, True)

    @property
    def value_field(self) -> NestedField:
        return NestedField(self.value_id, "value", self.value_type, self.value_required)

    @property
    def fields(self) -> tuple[NestedField, ...]:
        return (self.key_field, self.value_field)

    def __str__(self) -> str:
        return f"map<{self.key_type}, {self.value_type}>"


BOOLEAN = BooleanType()
INT = IntegerType()
LONG = LongType()
FLOAT = FloatType()
DOUBLE = DoubleType()
DATE = DateType()
TIME = TimeType()
TIMESTAMP = TimestampType()
TIMESTAMPTZ = TimestamptzType()
TIMESTAMP_NS = TimestampNanoType()
TIMESTAMPTZ_NS = TimestamptzNanoType()
STRING = StringType()
UUID = UUIDType()
BINARY = BinaryType()
UNKNOWN = UnknownType()
VARIANT = VariantType()

_SIMPLE: dict[str, PrimitiveType] = {
    t.type_name: t
    for t in (BOOLEAN, INT, LONG, FLOAT, DOUBLE, DATE, TIME, TIMESTAMP, TIMESTAMPTZ,
              TIMESTAMP_NS, TIMESTAMPTZ_NS, STRING, UUID, BINARY, UNKNOWN, VARIANT)
}
_DECIMAL = re.compile(r"decimal\(\s*(\d+)\s*,\s*(-?\d+)\s*\)")
_FIXED = re.compile(r"fixed\[\s*(\d+)\s*\]")
_GEOMETRY = re.compile(r"geometry(?:\(\s*([^)]*?)\s*\))?")
_GEOGRAPHY = re.compile(r"geography(?:\(\s*([^,)]*?)\s*(?:,\s*([^)]*?)\s*)?\))?")


def parse_primitive(text: str) -> PrimitiveType:
    """Parse a primitive type string as written in schema JSON: ``"decimal(9,2)"``."""
    s = text.strip().lower()
    if s in _SIMPLE:
        return _SIMPLE[s]
    if m := _DECIMAL.fullmatch(s):
        return DecimalType(int(m.group(1)), int(m.group(2)))
    if m := _FIXED.fullmatch(s):
        return FixedType(int(m.group(1)))
    raw = text.strip()
    if m := _GEOMETRY.fullmatch(raw):
        return GeometryType(m.group(1) or GeometryType.DEFAULT_CRS)
    if m := _GEOGRAPHY.fullmatch(raw):
        return GeographyType(
            m.group(1) or GeographyType.DEFAULT_CRS,
            (m.group(2) or GeographyType.DEFAULT_ALGORITHM).lower(),
        )
    raise ValidationError(f"unknown Iceberg type: {text!r}")


def parse_type(text: str) -> IcebergType:
    """A type as a person types it: a primitive (``"decimal(9,2)"``) or a nested type in
    Spark DDL style, ``struct<x: double, y: double not null>``, ``list<long>``,
    ``map<string, struct<a: int>>``. Nested field ids are placeholders (0, 1, ...): whoever
    adds the type to a schema assigns fresh ones. Element and value types are optional."""
    counter = iter(range(1 << 30))
    pos = 0
    s = text.strip()

    def fail(expected: str) -> ValidationError:
        return ValidationError(f"cannot parse type {text!r} at position {pos}: expected "
                               f"{expected}")

    def skip() -> None:
        nonlocal pos
        while pos < len(s) and s[pos].isspace():
            pos += 1

    def eat(token: str) -> bool:
        nonlocal pos
        skip()
        if s.startswith(token, pos):
            pos += len(token)
            return True
        return False

    def word() -> str:
        nonlocal pos
        skip()
        start = pos
        depth = 0
        while pos < len(s) and (depth or s[pos] not in ",<>:"):
            depth += s[pos] in "(["
            depth -= s[pos] in ")]"
            pos += 1
        return s[start:pos].strip()

    def one() -> IcebergType:
        nonlocal pos
        skip()
        lower = s[pos:].lower()
        if lower.startswith("struct<"):
            pos += len("struct<")
            fields: list[NestedField] = []
            while not eat(">"):
                if fields and not eat(","):
                    raise fail("',' or '>'")
                name = word()
                if not name or not eat(":"):
                    raise fail("'name: type'")
                ftype = one()
                skip()
                required = False
                if m := re.match(r"not\s+null", s[pos:], re.IGNORECASE):
                    pos += m.end()
                    required = True
                fields.append(NestedField(next(counter), name, ftype, required))
            return StructType(*fields)
        if lower.startswith("list<") or lower.startswith("array<"):
            pos += lower.index("<") + 1
            element = one()
            if not eat(">"):
                raise fail("'>'")
            return ListType(next(counter), element, False)
        if lower.startswith("map<"):
            pos += len("map<")
            key = one()
            if not eat(","):
                raise fail("','")
            value = one()
            if not eat(">"):
                raise fail("'>'")
            return MapType(next(counter), key, next(counter), value, False)
        start = pos
        name = word()
        if not name:
            raise fail("a type")
        m = re.search(r"\s+not\s+null$", name, re.IGNORECASE)
        if m:  # leave "not null" to the struct field that owns this type
            name = name[:m.start()]
            pos = start + s[start:].index(name) + len(name)
        return parse_primitive(name)

    result = one()
    skip()
    if pos != len(s):
        raise fail("the end of the type")
    return result


def type_from_json(obj: Any) -> IcebergType:
    """Appendix C: a type is a string (primitive) or an object (struct, list, map)."""
    if isinstance(obj, str):
        return parse_primitive(obj)
    if not isinstance(obj, dict):
        raise ValidationError(f"a type must be a string or an object, got {obj!r}")
    kind = obj.get("type")
    try:
        if kind == "struct":
            return StructType(*(field_from_json(f) for f in obj["fields"]))
        if kind == "list":
            return ListType(
                int(obj["element-id"]),
                type_from_json(obj["element"]),
                bool(obj["element-required"]),
            )
        if kind == "map":
            return MapType(
                int(obj["key-id"]),
                type_from_json(obj["key"]),
                int(obj["value-id"]),
                type_from_json(obj["value"]),
                bool(obj["value-required"]),
            )
    except KeyError as e:
        raise ValidationError(f"{kind} type is missing {e.args[0]!r}: {obj!r}") from None
    raise ValidationError(f"unknown nested type {kind!r}")


def field_from_json(obj: Any) -> NestedField:
    if not isinstance(obj, dict):
        raise ValidationError(f"a struct field must be an object, got {obj!r}")
    try:
        return NestedField(
            field_id=int(obj["id"]),
            name=str(obj["name"]),
            field_type=type_from_json(obj["type"]),
            required=bool(obj["required"]),
            doc=obj.get("doc"),
            initial_default=obj.get("initial-default"),
            write_default=obj.get("write-default"),
        )
    except KeyError as e:
        raise ValidationError(f"struct field is missing {e.args[0]!r}: {obj!r}") from None


def field_to_json(f: NestedField) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": f.field_id,
        "name": f.name,
        "required": f.required,
        "type": type_to_json(f.field_type),
    }
    if f.doc is not None:
        out["doc"] = f.doc
    if f.initial_default is not None:
        out["initial-default"] = f.initial_default
    if f.write_default is not None:
        out["write-default"] = f.write_default
    return out


def type_to_json(t: IcebergType) -> Any:
    if isinstance(t, PrimitiveType):
        return str(t)
    if isinstance(t, StructType):
        return {"type": "struct", "fields": [field_to_json(f) for f in t.fields]}
    if isinstance(t, ListType):
        return {
            "type": "list",
            "element-id": t.element_id,
            "element": type_to_json(t.element_type),
            "element-required": t.element_required,
        }
    if isinstance(t, MapType):
        return {
            "type": "map",
            "key-id": t.key_id,
            "key": type_to_json(t.key_type),
            "value-id": t.value_id,
            "value": type_to_json(t.value_type),
            "value-required": t.value_required,
        }
    raise ValidationError(f"cannot serialise type {t!r}")


def can_promote(old: IcebergType, new: IcebergType, format_version: int = 2) -> bool:
    """Spec "Schema Evolution": the allowed type promotions.

    int → long, float → double, decimal(P, S) → decimal(P', S) with P' > P, and in v3
    date → timestamp / timestamp_ns. Equal types are trivially allowed.
    """
    if old == new:
        return True
    if isinstance(old, IntegerType):
        return isinstance(new, LongType)
    if isinstance(old, FloatType):
        return isinstance(new, DoubleType)
    if isinstance(old, DecimalType) and isinstance(new, DecimalType):
        return new.scale == old.scale and new.precision > old.precision
    if isinstance(old, DateType) and format_version >= 3:
        return isinstance(new, (TimestampType, TimestampNanoType))
    if isinstance(old, UnknownType):
        return format_version >= 3
    return False
