"""Schemas (spec "Schemas and Data Types", Appendix C "Schemas").

A :class:`Schema` is a struct with a schema id and identifier field ids. Lookups by field id
and by dotted name reach nested fields (``location.lat``, ``tags.element``, ``props.key``)
and are indexed once per schema.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from functools import cached_property
from typing import Any

from floe.errors import ValidationError
from floe.types import (
    IcebergType,
    ListType,
    MapType,
    NestedField,
    NestedType,
    PrimitiveType,
    StructType,
    field_from_json,
    field_to_json,
)

__all__ = ["Schema", "RESERVED_FIELD_ID_START", "index_by_id", "index_by_name",
           "unknown_column", "assign_fresh_type_ids"]

#: Field ids from ``Integer.MAX_VALUE - 200`` upward are reserved for metadata columns.
RESERVED_FIELD_ID_START = 2**31 - 1 - 200


def _walk(
    struct: NestedType, prefix: str, parent_id: int | None
) -> Iterator[tuple[str, NestedField, int | None]]:
    for f in struct.fields:
        name = f"{prefix}{f.name}"
        yield name, f, parent_id
        if isinstance(f.field_type, NestedType):
            yield from _walk(f.field_type, name + ".", f.field_id)


def index_by_id(struct: StructType) -> dict[int, NestedField]:
    """Every field of a struct, nested ones included, by field id."""
    return {f.field_id: f for _, f, _ in _walk(struct, "", None)}


def index_by_name(struct: StructType) -> dict[str, int]:
    """Every field by its full dotted name (``a.b``, ``l.element``, ``m.key``, ``m.value``).

    List elements and map values that are structs also get the short names Iceberg allows
    (``points.x`` for ``points.element.x``), unless that short name is already taken.
    """
    full: dict[str, int] = {}
    for name, f, _ in _walk(struct, "", None):
        full[name] = f.field_id
    short: dict[str, int] = {}
    for name, fid in full.items():
        parts = name.split(".")
        reduced = [
            p for i, p in enumerate(parts) if not (i > 0 and p in ("element", "value"))
        ]
        s = ".".join(reduced)
        if s != name and s not in full:
            short.setdefault(s, fid)
    return {**short, **full}


def assign_fresh_type_ids(t: IcebergType, next_id: Callable[[], int]) -> IcebergType:
    """Java ``TypeUtil.assignFreshIds(type, nextId)``: renumber the fields nested in ``t``. A
    struct's own fields get ids before any of their children (breadth first per struct), a
    list's element and a map's key and value before their nested types."""
    if isinstance(t, StructType):
        ids = [next_id() for _ in t.fields]
        return StructType(*(dataclasses.replace(
            f, field_id=i, field_type=assign_fresh_type_ids(f.field_type, next_id))
            for i, f in zip(ids, t.fields, strict=True)))
    if isinstance(t, ListType):
        element_id = next_id()
        return ListType(element_id, assign_fresh_type_ids(t.element_type, next_id),
                        t.element_required)
    if isinstance(t, MapType):
        key_id, value_id = next_id(), next_id()
        return MapType(key_id, assign_fresh_type_ids(t.key_type, next_id), value_id,
                       assign_fresh_type_ids(t.value_type, next_id), t.value_required)
    return t


def unknown_column(struct: StructType, name: str, case_sensitive: bool = True) -> str:
    """The message for a column name a schema lacks, with the closest names it has:
    ``unknown column 'idd'; did you mean 'id'?`` (else the first columns)."""
    import difflib  # only for this message

    names = sorted(index_by_name(struct))
    if case_sensitive:
        close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    else:
        lowered = {n.lower(): n for n in names}
        hits = difflib.get_close_matches(name.lower(), list(lowered), n=3, cutoff=0.6)
        close = [lowered[h] for h in hits]
    msg = f"unknown column {name!r}"
    if close:
        return msg + "; did you mean " + ", ".join(repr(c) for c in close) + "?"
    return msg + "; columns: " + ", ".join(names[:20])


class Schema:
    """An Iceberg schema: top-level fields, an id and identifier field ids. Immutable."""

    fields: tuple[NestedField, ...]
    schema_id: int
    identifier_field_ids: tuple[int, ...]
    _struct: StructType

    def __init__(
        self,
        *fields: NestedField,
        schema_id: int = 0,
        identifier_field_ids: tuple[int, ...] | list[int] = (),
    ) -> None:
        object.__setattr__(self, "fields", tuple(fields))
        object.__setattr__(self, "schema_id", schema_id)
        object.__setattr__(self, "identifier_field_ids", tuple(identifier_field_ids))
        object.__setattr__(self, "_struct", StructType(*fields))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("schemas are immutable")

    def __repr__(self) -> str:
        return f"Schema({', '.join(map(repr, self.fields))}, schema_id={self.schema_id})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Schema)
            and self.fields == other.fields
            and self.schema_id == other.schema_id
            and self.identifier_field_ids == other.identifier_field_ids
        )

    def __hash__(self) -> int:
        return hash((self.fields, self.schema_id, self.identifier_field_ids))

    def same_fields(self, other: Schema) -> bool:
        """True when both schemas have the same fields and identifier ids (ids aside)."""
        return (
            self.fields == other.fields
            and self.identifier_field_ids == other.identifier_field_ids
        )

    def as_struct(self) -> StructType:
        return self._struct

    def __str__(self) -> str:
        lines = [f"table {{ (schema {self.schema_id})"]
        lines += [f"  {f}" for f in self.fields]
        lines.append("}")
        return "\n".join(lines)

    # -- indexes --------------------------------------------------------------------------

    @cached_property
    def _id_index(self) -> dict[int, NestedField]:
        return index_by_id(self._struct)

    @cached_property
    def _name_index(self) -> dict[str, int]:
        return index_by_name(self._struct)

    @cached_property
    def _lower_name_index(self) -> dict[str, int]:
        return {k.lower(): v for k, v in self._name_index.items()}

    @cached_property
    def _parent_index(self) -> dict[int, int]:
        return {
            f.field_id: parent
            for _, f, parent in _walk(self._struct, "", None)
            if parent is not None
        }

    @cached_property
    def _id_to_name(self) -> dict[int, str]:
        out: dict[int, str] = {}
        for name, f, _ in _walk(self._struct, "", None):
            out[f.field_id] = name
        return out

    @cached_property
    def highest_field_id(self) -> int:
        return max(self._id_index, default=0)

    # -- lookups --------------------------------------------------------------------------

    def find_field(self, key: int | str, case_sensitive: bool = True) -> NestedField:
        """The field with this id, or with this (dotted) name; raises ValidationError."""
        if isinstance(key, int):
            f = self._id_index.get(key)
            if f is None:
                raise ValidationError(f"no field with id {key} in schema {self.schema_id}")
            return f
        fid = self.find_field_id(key, case_sensitive)
        return self._id_index[fid]

    def find_field_id(self, name: str, case_sensitive: bool = True) -> int:
        index = self._name_index if case_sensitive else self._lower_name_index
        fid = index.get(name if case_sensitive else name.lower())
        if fid is None:
            raise ValidationError(unknown_column(self._struct, name, case_sensitive))
        return fid

    def find_type(self, key: int | str, case_sensitive: bool = True) -> IcebergType:
        return self.find_field(key, case_sensitive).field_type

    def find_column_name(self, field_id: int) -> str | None:
        """The full dotted name of a field id, or None when the schema has no such field."""
        return self._id_to_name.get(field_id)

    def parent_id(self, field_id: int) -> int | None:
        return self._parent_index.get(field_id)

    def field_ids(self) -> set[int]:
        return set(self._id_index)

    def column_names(self) -> list[str]:
        return [f.name for f in self.fields]

    def leaf_fields(self) -> list[NestedField]:
        """Primitive fields in depth-first order (what data files keep statistics for)."""
        return [f for _, f, _ in _walk(self._struct, "", None)
                if isinstance(f.field_type, PrimitiveType)]

    def select(self, *names: str, case_sensitive: bool = True) -> Schema:
        """Projection by top-level or nested names; parents of nested picks are kept."""
        wanted = {self.find_field_id(n, case_sensitive) for n in names}
        return Schema(
            *_prune(self._struct, wanted),
            schema_id=self.schema_id,
            identifier_field_ids=[i for i in self.identifier_field_ids if i in wanted],
        )

    # -- JSON (Appendix C) -----------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": "struct",
            "schema-id": self.schema_id,
        }
        if self.identifier_field_ids:
            out["identifier-field-ids"] = list(self.identifier_field_ids)
        out["fields"] = [field_to_json(f) for f in self.fields]
        return out

    @classmethod
    def from_json(cls, obj: Any) -> Schema:
        if not isinstance(obj, dict) or obj.get("type", "struct") != "struct":
            raise ValidationError(f"a schema must be a struct object, got {obj!r:.200}")
        if "fields" not in obj or not isinstance(obj["fields"], list):
            raise ValidationError("schema has no 'fields' list")
        schema = cls(
            *(field_from_json(f) for f in obj["fields"]),
            schema_id=int(obj.get("schema-id", 0)),
            identifier_field_ids=[int(i) for i in obj.get("identifier-field-ids", [])],
        )
        schema.validate()
        return schema

    def validate(self) -> None:
        """Field ids unique and outside the reserved range; identifier fields valid."""
        seen: set[int] = set()
        for name, f, _ in _walk(self._struct, "", None):
            if f.field_id in seen:
                raise ValidationError(f"field id {f.field_id} is used twice (at {name!r})")
            if f.field_id >= RESERVED_FIELD_ID_START or f.field_id < 0:
                raise ValidationError(
                    f"field {name!r} has id {f.field_id}, in the range reserved for metadata "
                    f"columns (ids must be in 0..{RESERVED_FIELD_ID_START - 1})"
                )
            seen.add(f.field_id)
        for fid in self.identifier_field_ids:
            ident = self._id_index.get(fid)
            if ident is None:
                raise ValidationError(f"identifier field id {fid} is not in the schema")
            if not isinstance(ident.field_type, PrimitiveType):
                raise ValidationError(f"identifier field {ident.name!r} must be a primitive type")


def _prune(struct: NestedType, wanted: set[int]) -> list[NestedField]:
    out: list[NestedField] = []
    for f in struct.fields:
        if f.field_id in wanted:
            out.append(f)
        elif isinstance(f.field_type, StructType):
            sub = _prune(f.field_type, wanted)
            if sub:
                out.append(
                    NestedField(f.field_id, f.name, StructType(*sub), f.required, f.doc)
                )
        elif isinstance(f.field_type, (ListType, MapType)):
            if any(c.field_id in wanted for _, c, _ in _walk(f.field_type, "", None)):
                out.append(f)
    return out
