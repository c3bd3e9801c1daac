"""Partition specs (spec "Partitioning", "Partition Transforms", Appendix C "Partition Specs").

A :class:`PartitionSpec` is an ordered tuple of :class:`PartitionField`; each field applies a
transform to one source column and produces one value of the partition tuple. Spec objects do
not hold a schema: methods that need source types take the schema as an argument, so one spec
can be interpreted against the schema a data file was written with.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from floe.errors import ValidationError
from floe.schema import Schema
from floe.transforms import Transform, parse_transform
from floe.types import UNKNOWN, NestedField, PrimitiveType, StructType

__all__ = [
    "PARTITION_FIELD_ID_START",
    "UNPARTITIONED",
    "PartitionField",
    "PartitionSpec",
    "java_url_encode",
    "parse_partition_by",
    "parse_term",
]

#: Spec "Partitioning": partition field ids start at 1000 so they never collide with column ids.
PARTITION_FIELD_ID_START = 1000

# Appendix C JSON keys of a partition field and a spec.
_NAME = "name"
_TRANSFORM = "transform"
_SOURCE_ID = "source-id"
_SOURCE_IDS = "source-ids"
_FIELD_ID = "field-id"
_SPEC_ID = "spec-id"
_FIELDS = "fields"


@dataclass(frozen=True, slots=True)
class PartitionField:
    """One field of a partition spec: ``transform(source column)`` stored under ``name``."""

    source_id: int
    field_id: int
    transform: Transform
    name: str

    def __str__(self) -> str:
        return f"{self.field_id}: {self.name}: {self.transform}({self.source_id})"

    def to_json(self) -> dict[str, Any]:
        """Appendix C: ``{"name", "transform", "source-id", "field-id"}`` (Java's order)."""
        return {
            _NAME: self.name,
            _TRANSFORM: str(self.transform),
            _SOURCE_ID: self.source_id,
            _FIELD_ID: self.field_id,
        }


class PartitionSpec:
    """An immutable partition spec: fields plus a spec id.

    Two specs are equal when their ids and fields are equal; :meth:`compatible_with` ignores
    the spec id and the partition field ids (Java's ``PartitionSpec.compatibleWith``).
    """

    __slots__ = ("_fields", "_last_assigned_field_id", "_spec_id")

    _fields: tuple[PartitionField, ...]
    _spec_id: int
    _last_assigned_field_id: int

    def __init__(
        self,
        *fields: PartitionField,
        spec_id: int = 0,
        last_assigned_field_id: int | None = None,
    ) -> None:
        seen_ids: set[int] = set()
        seen_names: set[str] = set()
        for f in fields:
            if f.field_id in seen_ids:
                raise ValidationError(f"partition field id {f.field_id} is used twice")
            if f.name in seen_names:
                raise ValidationError(f"partition field name {f.name!r} is used twice")
            if not f.name:
                raise ValidationError("partition field names must not be empty")
            seen_ids.add(f.field_id)
            seen_names.add(f.name)
        highest = max(seen_ids, default=PARTITION_FIELD_ID_START - 1)
        if last_assigned_field_id is None:
            last_assigned_field_id = highest
        object.__setattr__(self, "_fields", tuple(fields))
        object.__setattr__(self, "_spec_id", spec_id)
        object.__setattr__(self, "_last_assigned_field_id", max(last_assigned_field_id, highest))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("partition specs are immutable")

    # -- plain accessors ------------------------------------------------------------------

    @property
    def fields(self) -> tuple[PartitionField, ...]:
        return self._fields

    @property
    def spec_id(self) -> int:
        return self._spec_id

    @property
    def last_assigned_field_id(self) -> int:
        """Highest partition field id of this spec (999 for an unpartitioned spec)."""
        return self._last_assigned_field_id

    @property
    def is_unpartitioned(self) -> bool:
        """True when no field produces a value (no fields, or only void fields)."""
        return all(_transform_name(f.transform) == "void" for f in self._fields)

    def __len__(self) -> int:
        return len(self._fields)

    def __iter__(self) -> Iterator[PartitionField]:
        return iter(self._fields)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, PartitionSpec)
            and self._spec_id == other._spec_id
            and self._fields == other._fields
        )

    def __hash__(self) -> int:
        return hash((self._spec_id, self._fields))

    def __repr__(self) -> str:
        inner = ", ".join(repr(f) for f in self._fields)
        sep = ", " if inner else ""
        return f"PartitionSpec({inner}{sep}spec_id={self._spec_id})"

    def __str__(self) -> str:
        if not self._fields:
            return "[]"
        return "[\n" + "".join(f"  {f}\n" for f in self._fields) + "]"

    def field_by_id(self, field_id: int) -> PartitionField | None:
        return next((f for f in self._fields if f.field_id == field_id), None)

    def fields_by_source_id(self, source_id: int) -> list[PartitionField]:
        return [f for f in self._fields if f.source_id == source_id]

    def identity_source_ids(self) -> set[int]:
        return {f.source_id for f in self._fields if _transform_name(f.transform) == "identity"}

    def compatible_with(self, other: PartitionSpec) -> bool:
        """Same fields in the same order (source, transform, name), ignoring ids."""
        if self == other:
            return True
        if len(self._fields) != len(other._fields):
            return False
        return all(
            a.source_id == b.source_id
            and str(a.transform) == str(b.transform)
            and a.name == b.name
            for a, b in zip(self._fields, other._fields, strict=True)
        )

    # -- partition tuples -----------------------------------------------------------------

    def partition_type(self, schema: Schema) -> StructType:
        """Spec "Partitioning": the struct of partition values a data file carries.

        Field ids are the partition field ids, names the partition names, and every field is
        optional. A source column missing from ``schema`` (dropped since) raises
        ValidationError so a caller can retry with an older schema; only a ``void`` field
        tolerates it (type ``unknown``). Java would type such a field ``unknown`` instead.
        """
        return StructType(
            *(
                NestedField(f.field_id, f.name, self._result_type(f, schema), required=False)
                for f in self._fields
            )
        )

    @staticmethod
    def _result_type(field: PartitionField, schema: Schema) -> PrimitiveType:
        source = schema.find_column_name(field.source_id)
        if source is None:
            if _transform_name(field.transform) == "void":
                return UNKNOWN
            raise ValidationError(
                f"partition field {field.name!r}: source column id {field.source_id} is not in "
                f"schema {schema.schema_id}"
            )
        source_type = schema.find_type(field.source_id)
        if not isinstance(source_type, PrimitiveType):
            raise ValidationError(
                f"partition field {field.name!r} has a non-primitive source {source!r}"
            )
        return field.transform.result_type(source_type)

    def partition_to_path(self, values: tuple[Any, ...] | list[Any], schema: Schema) -> str:
        """Java's ``PartitionSpec.partitionToPath``: ``name=value/name=value``.

        Each value is rendered with the transform's human string (null → ``null``), then the
        name and the value are escaped with ``java.net.URLEncoder`` rules.
        """
        if len(values) != len(self._fields):
            raise ValidationError(
                f"partition tuple has {len(values)} values, spec {self._spec_id} has "
                f"{len(self._fields)} fields"
            )
        ptype = self.partition_type(schema)
        parts = []
        for field, out, value in zip(self._fields, ptype.fields, values, strict=True):
            assert isinstance(out.field_type, PrimitiveType)  # partition_type only makes these
            text = field.transform.to_human_string(out.field_type, value)
            parts.append(f"{java_url_encode(field.name)}={java_url_encode(text)}")
        return "/".join(parts)

    # -- JSON (Appendix C) ----------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """``{"spec-id": N, "fields": [...]}`` as in ``partition-specs``."""
        return {_SPEC_ID: self._spec_id, _FIELDS: self.fields_to_json()}

    def fields_to_json(self) -> list[dict[str, Any]]:
        """The bare field array, as v1 metadata writes it under ``partition-spec``."""
        return [f.to_json() for f in self._fields]

    @classmethod
    def from_json(cls, obj: Any) -> PartitionSpec:
        """Parse a spec object, or (v1) a bare array of fields, which gets spec id 0."""
        if isinstance(obj, list):
            return cls.from_json_fields(obj, spec_id=0)
        if not isinstance(obj, dict):
            raise ValidationError(f"a partition spec must be an object, got {obj!r:.200}")
        spec_id = _get_int(obj, _SPEC_ID, "partition spec")
        fields = obj.get(_FIELDS)
        if not isinstance(fields, list):
            raise ValidationError(f"partition spec {spec_id} has no 'fields' array")
        return cls.from_json_fields(fields, spec_id=spec_id)

    @classmethod
    def from_json_fields(cls, fields: list[Any], spec_id: int = 0) -> PartitionSpec:
        """Parse a field array. v1 writers may omit ``field-id``: ids then count up from 1000
        in field order, as Java's ``PartitionSpecParser.fromJsonFields`` assigns them."""
        out: list[PartitionField] = []
        last_id = PARTITION_FIELD_ID_START - 1
        for item in fields:
            if not isinstance(item, dict):
                raise ValidationError(f"a partition field must be an object, got {item!r:.200}")
            name = item.get(_NAME)
            if not isinstance(name, str):
                raise ValidationError(f"partition field has no string 'name': {item!r:.200}")
            transform_text = item.get(_TRANSFORM)
            if not isinstance(transform_text, str):
                raise ValidationError(f"partition field {name!r} has no string 'transform'")
            source_id = _source_id(item, name)
            if _FIELD_ID in item:
                field_id = _get_int(item, _FIELD_ID, f"partition field {name!r}")
            else:
                field_id = last_id + 1
            last_id = max(last_id, field_id)
            out.append(PartitionField(source_id, field_id, parse_transform(transform_text), name))
        return cls(*out, spec_id=spec_id)

    def with_spec_id(self, spec_id: int) -> PartitionSpec:
        return PartitionSpec(
            *self._fields, spec_id=spec_id, last_assigned_field_id=self._last_assigned_field_id
        )


#: The unpartitioned spec: no fields, spec id 0, last assigned field id 999.
UNPARTITIONED = PartitionSpec(spec_id=0)


def _source_id(item: dict[str, Any], name: str) -> int:
    if _SOURCE_ID in item:
        return _get_int(item, _SOURCE_ID, f"partition field {name!r}")
    # v3 multi-argument transforms write "source-ids"; floe keeps the first argument.
    ids = item.get(_SOURCE_IDS)
    if isinstance(ids, list) and ids and all(_is_int(i) for i in ids):
        return int(ids[0])
    raise ValidationError(f"partition field {name!r} has no integer 'source-id'")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _get_int(obj: dict[str, Any], key: str, what: str) -> int:
    v = obj.get(key)
    if not isinstance(v, int) or isinstance(v, bool):
        raise ValidationError(f"{what} needs an integer {key!r}, got {v!r:.100}")
    return v


def _transform_name(t: Transform) -> str:
    """The spec name without arguments: ``bucket`` for ``bucket[16]``."""
    return str(t).split("[", 1)[0]


# -- java.net.URLEncoder ------------------------------------------------------------------

_URL_SAFE = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-*_")


def java_url_encode(text: str) -> str:
    """``URLEncoder.encode(text, "UTF-8")``: letters, digits and ``.-*_`` stay, space becomes
    ``+``, every other byte of the UTF-8 encoding becomes ``%XX`` (upper-case hex).

    Differs from :func:`urllib.parse.quote_plus`, which keeps ``~`` unescaped.
    """
    out: list[str] = []
    for b in text.encode("utf-8", "surrogatepass"):
        if b in _URL_SAFE:
            out.append(chr(b))
        elif b == 0x20:
            out.append("+")
        else:
            out.append(f"%{b:02X}")
    return "".join(out)


# -- the PARTITIONED BY mini-language -----------------------------------------------------

# Spark's plural function names and a few spellings users type map to spec transform names.
_ALIASES = {
    "years": "year", "months": "month", "days": "day", "hours": "hour",
    "buckets": "bucket", "trunc": "truncate", "identity": "identity", "void": "void",
    "year": "year", "month": "month", "day": "day", "hour": "hour", "bucket": "bucket",
    "truncate": "truncate", "alwaysnull": "void", "always_null": "void",
    "date": "day", "date_hour": "hour",
}
# Java PartitionSpec.Builder's default partition names: source name + suffix.
_SUFFIX = {
    "identity": "", "bucket": "_bucket", "truncate": "_trunc", "year": "_year",
    "month": "_month", "day": "_day", "hour": "_hour", "void": "_null",
}
_CALL = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\[\s*(\d+)\s*\])?\s*\((.*)\)\s*$", re.DOTALL)
_AS = re.compile(r"^(.*?)\s+as\s+(`[^`]+`|[A-Za-z_][A-Za-z0-9_.]*)\s*$", re.DOTALL | re.IGNORECASE)


def split_terms(text: str) -> list[str]:
    """Split on commas that are not inside parentheses, brackets or backquotes."""
    terms: list[str] = []
    depth = 0
    quoted = False
    start = 0
    for i, ch in enumerate(text):
        if ch == "`":
            quoted = not quoted
        elif quoted:
            continue
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
            if depth < 0:
                raise ValidationError(f"unbalanced parentheses in {text!r}")
        elif ch == "," and depth == 0:
            terms.append(text[start:i].strip())
            start = i + 1
    if depth != 0 or quoted:
        raise ValidationError(f"unbalanced parentheses or quotes in {text!r}")
    last = text[start:].strip()
    if last or terms:
        terms.append(last)
    if any(not t for t in terms):
        raise ValidationError(f"empty term in {text!r}")
    return terms


def _unquote(name: str) -> str:
    name = name.strip()
    if len(name) >= 2 and name[0] == name[-1] == "`":
        return name[1:-1]
    return name


def parse_term(text: str, schema: Schema, case_sensitive: bool = True
               ) -> tuple[Transform, NestedField, str]:
    """Parse one ``col`` / ``transform(col)`` / ``bucket(16, col)`` term.

    Returns the transform, the source field and Java's default partition name for it
    (``id_bucket``, ``ts_day``, ``s_trunc``, ``x`` for identity, ``x_null`` for void).
    Accepts Spark's spellings (``days(ts)``, ``bucket(16, id)``, ``truncate(id, 4)``) and the
    spec's (``bucket[16](id)``).
    """
    m = _CALL.match(text)
    if m is None:
        column, kind, arg = _unquote(text), "identity", None
    else:
        func, bracket_arg, inner = m.group(1), m.group(2), m.group(3)
        canonical = _ALIASES.get(func.lower())
        if canonical is None:
            raise ValidationError(f"unknown partition transform {func!r} in {text!r}")
        args = [a.strip() for a in split_terms(inner)] if inner.strip() else []
        numbers = [a for a in args if re.fullmatch(r"\d+", a)]
        names = [a for a in args if not re.fullmatch(r"\d+", a)]
        if bracket_arg is not None:
            numbers.insert(0, bracket_arg)
        needs_arg = canonical in ("bucket", "truncate")
        if len(names) != 1 or len(numbers) != (1 if needs_arg else 0):
            usage = f"{func}(N, column)" if needs_arg else f"{func}(column)"
            raise ValidationError(f"cannot parse {text!r}: expected {usage}")
        column, kind = _unquote(names[0]), canonical
        arg = int(numbers[0]) if needs_arg else None
    transform = parse_transform(kind if arg is None else f"{kind}[{arg}]")
    source = schema.find_field(column, case_sensitive)
    if not isinstance(source.field_type, PrimitiveType):
        raise ValidationError(f"cannot partition or sort by non-primitive column {column!r}")
    if not transform.can_transform(source.field_type):
        raise ValidationError(
            f"transform {transform} cannot be applied to {column!r} of type {source.field_type}"
        )
    full_name = schema.find_column_name(source.field_id) or source.name
    return transform, source, full_name + _SUFFIX[kind]


# Java's Transform.dedupName: every time transform shares "time", so day(ts) + hour(ts) clash.
def _dedup_name(t: Transform) -> str | None:
    name = _transform_name(t)
    if name in ("year", "month", "day", "hour"):
        return "time"
    if name == "identity":
        return name
    return None


def parse_partition_by(
    text: str,
    schema: Schema,
    spec_id: int = 0,
    last_partition_id: int = PARTITION_FIELD_ID_START - 1,
) -> PartitionSpec:
    """Build a spec from ``"day(ts), bucket(16, id), truncate(4, s), x AS part_x"``.

    Partition names default to Java ``PartitionSpec.Builder``'s (what Spark DDL produces);
    field ids count up from ``last_partition_id + 1`` so that, in v2, they stay unique across
    all specs of a table. An empty text gives an unpartitioned spec.
    """
    if not text.strip():
        return PartitionSpec(spec_id=spec_id, last_assigned_field_id=last_partition_id)
    fields: list[PartitionField] = []
    dedup: dict[tuple[int, str], str] = {}
    next_id = last_partition_id
    for term in split_terms(text):
        alias = None
        if m := _AS.match(term):
            term, alias = m.group(1).strip(), _unquote(m.group(2))
        transform, source, default_name = parse_term(term, schema)
        key = _dedup_name(transform)
        if key is not None:
            clash = dedup.get((source.field_id, key))
            if clash is not None:
                raise ValidationError(f"redundant partition: {term!r} conflicts with {clash!r}")
            dedup[(source.field_id, key)] = term
        next_id += 1
        fields.append(PartitionField(source.field_id, next_id, transform, alias or default_name))
    return PartitionSpec(*fields, spec_id=spec_id, last_assigned_field_id=next_id)
