"""Name mappings (spec "Column Projection": ``schema.name-mapping.default``).

A data file written without Iceberg field ids (an imported Parquet file, an ORC file read
through pyarrow) gets its ids from the table's name mapping: a list of fields, each with an
optional ``field-id``, the ``names`` a file may use for it, and the nested ``fields`` of a
struct, list (``element``) or map (``key``, ``value``)::

    [ {"field-id": 1, "names": ["id", "record_id"]},
      {"field-id": 3, "names": ["location"], "fields": [
          {"field-id": 4, "names": ["latitude", "lat"]} ]} ]

This module parses and writes that JSON as Java's ``NameMappingParser`` does (same key
order, Jackson's pretty printing), builds a mapping from a schema (Java
``MappingUtil.create``) and updates one after a schema change (Java ``MappingUtil.update``:
a renamed field keeps its old names and gains the new one; added fields get new entries).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, TypeVar

from floe.errors import ValidationError
from floe.properties import NAME_MAPPING
from floe.schema import Schema
from floe.types import IcebergType, ListType, MapType, NestedField, StructType

__all__ = [
    "MappedField",
    "NameMapping",
    "parse_name_mapping",
    "name_mapping_from_json",
    "name_mapping_to_json",
    "create_mapping",
    "update_mapping",
    "java_hash_set_order",
    "java_string_hash",
    "TABLE_ROOT_ID",
]

# Java NameMappingParser's keys, written in this order.
_FIELD_ID = "field-id"
_NAMES = "names"
_FIELDS = "fields"

#: The parent id Java's schema updates use for top-level additions.
TABLE_ROOT_ID = -1

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class MappedField:
    """One mapped field: its id (None: files' columns of these names get no id), the names
    files may use for it, and the mapping of its nested fields (None when it has none)."""

    field_id: int | None
    names: tuple[str, ...]
    fields: tuple[MappedField, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.field_id is not None:
            out[_FIELD_ID] = self.field_id
        out[_NAMES] = list(self.names)
        if self.fields is not None:
            out[_FIELDS] = [f.to_json() for f in self.fields]
        return out


@dataclass(frozen=True, slots=True)
class NameMapping:
    """A table's name mapping: the top-level mapped fields (Java ``NameMapping``)."""

    fields: tuple[MappedField, ...]

    def __iter__(self) -> Iterator[MappedField]:
        return iter(self.fields)

    def __len__(self) -> int:
        return len(self.fields)

    def find(self, *names: str) -> MappedField | None:
        """The mapped field at a path of names (``find("location", "lat")``), any alias at
        each level, or None."""
        level: Sequence[MappedField] | None = self.fields
        found: MappedField | None = None
        for name in names:
            if not level:
                return None
            found = next((f for f in level if name in f.names), None)
            if found is None:
                return None
            level = found.fields
        return found

    def find_by_id(self, field_id: int) -> MappedField | None:
        stack = list(self.fields)
        while stack:
            f = stack.pop()
            if f.field_id == field_id:
                return f
            stack.extend(f.fields or ())
        return None

    def to_json(self) -> list[dict[str, Any]]:
        """The mapping as JSON values (``json.dumps`` of this is a compact mapping)."""
        return [f.to_json() for f in self.fields]


# -- JSON --------------------------------------------------------------------------------------


def name_mapping_from_json(obj: Any) -> NameMapping:
    """Java ``NameMappingParser.fromJson`` on parsed JSON: a list of field objects; names
    keep their first occurrence's order, a missing ``field-id`` is allowed."""
    return NameMapping(_fields_from_json(obj))


def _fields_from_json(obj: Any) -> tuple[MappedField, ...]:
    if not isinstance(obj, list):
        raise ValidationError(f"cannot parse name mapping fields that are not a list: "
                              f"{obj!r:.200}")
    return tuple(_field_from_json(f) for f in obj)


def _field_from_json(obj: Any) -> MappedField:
    if not isinstance(obj, dict):
        raise ValidationError(f"cannot parse a name mapping field that is not an object: "
                              f"{obj!r:.200}")
    fid = obj.get(_FIELD_ID)
    if fid is not None and (isinstance(fid, bool) or not isinstance(fid, int)):
        raise ValidationError(f"name mapping field-id must be an integer, got {fid!r}")
    names = obj.get(_NAMES, [])
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ValidationError(f"name mapping names must be a list of strings, got {names!r}")
    nested = _fields_from_json(obj[_FIELDS]) if _FIELDS in obj else None
    return MappedField(fid, tuple(dict.fromkeys(names)), nested)


@lru_cache(maxsize=64)
def parse_name_mapping(text: str) -> NameMapping:
    """Parse the ``schema.name-mapping.default`` property (cached by text: every data file
    of a scan without ids parses the same string)."""
    try:
        obj = json.loads(text)
    except ValueError as e:
        raise ValidationError(f"table property {NAME_MAPPING} is not JSON: {e}") from None
    try:
        return name_mapping_from_json(obj)
    except ValidationError as e:
        raise ValidationError(f"table property {NAME_MAPPING} is not a name mapping: {e}") \
            from None


def name_mapping_to_json(mapping: NameMapping) -> str:
    """Java ``NameMappingParser.toJson``: Jackson's default pretty printer, so a mapping
    floe writes is byte-for-byte the one Java writes (``[ {\\n  "field-id" : 1, ...``)."""
    return _pretty_fields(mapping.fields, 0)


def _pretty_fields(fields: Sequence[MappedField], level: int) -> str:
    # Jackson prints arrays inline ("[ a, b ]", empty "[ ]") and objects one entry a line
    if not fields:
        return "[ ]"
    return "[ " + ", ".join(_pretty_field(f, level + 1) for f in fields) + " ]"


def _pretty_field(f: MappedField, level: int) -> str:
    entries: list[str] = []
    if f.field_id is not None:
        entries.append(f'"{_FIELD_ID}" : {f.field_id}')
    names = ", ".join(json.dumps(n, ensure_ascii=False) for n in f.names)
    entries.append(f'"{_NAMES}" : [ {names} ]' if names else f'"{_NAMES}" : [ ]')
    if f.fields is not None:
        entries.append(f'"{_FIELDS}" : {_pretty_fields(f.fields, level)}')
    indent = "\n" + "  " * level
    return "{" + indent + ("," + indent).join(entries) + "\n" + "  " * (level - 1) + "}"


# -- building and updating ---------------------------------------------------------------------


def create_mapping(schema: Schema) -> NameMapping:
    """Java ``MappingUtil.create``: every field of the schema under its current name, lists
    as ``element`` and maps as ``key`` / ``value``."""
    return NameMapping(_mapping_of_type(schema.as_struct()) or ())


def _mapping_of_type(t: IcebergType) -> tuple[MappedField, ...] | None:
    if isinstance(t, StructType):
        return tuple(MappedField(f.field_id, (f.name,), _mapping_of_type(f.field_type))
                     for f in t.fields)
    if isinstance(t, ListType):
        return (MappedField(t.element_id, ("element",), _mapping_of_type(t.element_type)),)
    if isinstance(t, MapType):
        return (MappedField(t.key_id, ("key",), _mapping_of_type(t.key_type)),
                MappedField(t.value_id, ("value",), _mapping_of_type(t.value_type)))
    return None


def update_mapping(
    mapping: NameMapping,
    updates: Mapping[int, NestedField],
    adds: Mapping[int, Sequence[int]],
) -> NameMapping:
    """Java ``MappingUtil.update`` after a schema change.

    ``updates``: the changed fields by id (renamed, retyped, ... and the added ones);
    ``adds``: the ids added under each parent id (:data:`TABLE_ROOT_ID` for top level).
    A mapped field whose id was updated gains the field's new name and keeps its old ones
    (files written before the rename still use them). An added field gets a new entry under
    its parent's entry (when the mapping has that parent). A name that now belongs to
    another field of the same level is taken from the field that had it.

    Like Java, every mapped field's names come out in ``java.util.HashSet`` order, so the
    JSON equals Java's. Unlike Java, a field losing two names to reassignment loses both
    (Java keeps all but the last: it edits the original field in its loop).
    """
    return NameMapping(_add_new_fields(_update_fields(mapping.fields, updates, adds),
                                       TABLE_ROOT_ID, updates, adds) or ())


def _update_fields(fields: Sequence[MappedField], updates: Mapping[int, NestedField],
                   adds: Mapping[int, Sequence[int]]) -> tuple[MappedField, ...]:
    results = [_update_field(f, updates, adds) for f in fields]
    assignments = _unique_names(
        [updates[f.field_id] for f in results if f.field_id is not None
         and f.field_id in updates], "updated")
    return tuple(_remove_reassigned_names(f, assignments) for f in results)


def _update_field(f: MappedField, updates: Mapping[int, NestedField],
                  adds: Mapping[int, Sequence[int]]) -> MappedField:
    nested = _update_fields(f.fields, updates, adds) if f.fields is not None else None
    names = list(f.names)
    update = updates.get(f.field_id) if f.field_id is not None else None
    if update is not None:
        names.append(update.name)
    # Java copies the names into a HashSet (sized for the original names) and adds the new
    # name, which fixes their order in the JSON
    ordered = java_hash_set_order(names, java_string_hash, initial_size=len(f.names))
    if f.field_id is not None:
        nested = _add_new_fields(nested, f.field_id, updates, adds)
    return MappedField(f.field_id, tuple(ordered), nested)


def _add_new_fields(fields: tuple[MappedField, ...] | None, parent_id: int,
                    updates: Mapping[int, NestedField],
                    adds: Mapping[int, Sequence[int]]) -> tuple[MappedField, ...] | None:
    added = [updates[i] for i in adds.get(parent_id, ())]
    if not added:
        return fields
    new = tuple(MappedField(a.field_id, (a.name,), _mapping_of_type(a.field_type))
                for a in added)
    if not fields:
        return new
    assignments = _unique_names(added, "added")
    return tuple(_remove_reassigned_names(f, assignments) for f in fields) + new


def _unique_names(fields: Iterable[NestedField], what: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for f in fields:
        if f.name in out:
            raise ValidationError(
                f"cannot update the name mapping: two {what} fields are named {f.name!r}")
        out[f.name] = f.field_id
    return out


def _remove_reassigned_names(f: MappedField, assignments: Mapping[str, int]) -> MappedField:
    kept = tuple(n for n in f.names
                 if assignments.get(n) is None or assignments[n] == f.field_id)
    return f if len(kept) == len(f.names) else MappedField(f.field_id, kept, f.fields)


# -- Java's hash ordering ----------------------------------------------------------------------


def java_string_hash(s: str) -> int:
    """``java.lang.String.hashCode`` (over UTF-16 code units), as an unsigned 32-bit int."""
    h = 0
    data = s.encode("utf-16-le")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] | data[i + 1] << 8)) & 0xFFFFFFFF
    return h


def java_hash_set_order(items: Iterable[T], hash_code: Callable[[T], int], *,
                        initial_size: int | None = None) -> list[T]:
    """The iteration order of a ``java.util.HashSet`` the items were added to in order.

    Java iterates buckets by index (``(h ^ h >>> 16) & (capacity - 1)``) and each bucket in
    insertion order. ``initial_size`` is the size of the collection given to
    ``new HashSet<>(collection)`` (capacity ``max(size / .75 + 1, 16)``); None for
    ``new HashSet<>()`` (16). Tables grow by doubling past 3/4 full.
    """
    distinct = list(dict.fromkeys(items))
    wanted = 16 if initial_size is None else max(int(initial_size / 0.75) + 1, 16)
    capacity = 1
    while capacity < wanted:
        capacity *= 2
    while len(distinct) > int(capacity * 0.75):
        capacity *= 2

    def bucket(item: T) -> int:
        h = hash_code(item) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(distinct, key=bucket)
