"""Schema evolution (spec "Schema Evolution"; Java ``SchemaUpdate``).

:class:`UpdateSchema` collects column changes against the schema a transaction started from,
then :meth:`UpdateSchema.apply` builds the new schema the way Java does: deletes, then the
updates (rename, type, doc, nullability) merged per field, then additions appended to their
struct, then moves, in call order. New field ids continue from the table's
``last-column-id``: the added field first, then its nested fields (Java
``TypeUtil.assignFreshIds``), in call order.

Columns are named by dotted paths (``point.x``; a list's element struct is ``points`` or
``points.element``, a map's value struct ``m`` or ``m.value``) or by a tuple of name parts
for names that contain dots. Every change Java refuses is refused here with a
:class:`~floe.errors.ValidationError`, plus dropping a column the current partition spec or
sort order uses (Java fails later, when it builds the metadata).

:meth:`UpdateSchema.commit` stages ``AddSchema`` + ``SetCurrentSchema`` with requirements on
the current schema id and last column id (a concurrent schema change makes this commit fail
with ``CommitConflict``), and updates the ``schema.name-mapping.default`` property
(:func:`floe.name_mapping.update_mapping`) and the per-column metrics properties of renamed
and dropped columns, as Java's ``SchemaUpdate.applyChangesToMetadata`` does.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from floe.errors import ValidationError
from floe.metadata import TableMetadata
from floe.name_mapping import (
    TABLE_ROOT_ID,
    java_hash_set_order,
    java_string_hash,
    name_mapping_to_json,
    parse_name_mapping,
    update_mapping,
)
from floe.properties import COLUMN_PROPERTY_PREFIXES, NAME_MAPPING
from floe.schema import Schema, assign_fresh_type_ids, index_by_id
from floe.table.updates import (
    LAST_ADDED,
    AddSchema,
    AssertCurrentSchemaId,
    AssertLastAssignedFieldId,
    RemoveProperties,
    SetCurrentSchema,
    SetProperties,
    TableUpdate,
)
from floe.types import (
    DoubleType,
    FloatType,
    GeographyType,
    GeometryType,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    TimestampNanoType,
    TimestamptzNanoType,
    UnknownType,
    VariantType,
    can_promote,
    parse_type,
)

if TYPE_CHECKING:
    from floe.table.table import Table
    from floe.table.transaction import Transaction

__all__ = ["UpdateSchema", "SchemaChange", "ColumnPath"]

log = logging.getLogger(__name__)

#: A column: a dotted name (``"point.x"``) or its name parts (``("a.b", "c")``).
ColumnPath = str | tuple[str, ...] | list[str]

#: Java ``Schema.MIN_FORMAT_VERSIONS``: types a table may use only from format v3 on.
_V3_TYPES: tuple[type[PrimitiveType], ...] = (
    TimestampNanoType, TimestamptzNanoType, UnknownType, VariantType, GeometryType,
    GeographyType)


class _MoveKind(Enum):
    FIRST = "first"
    BEFORE = "before"
    AFTER = "after"


@dataclass(frozen=True, slots=True)
class _Move:
    name: str
    field_id: int
    kind: _MoveKind
    reference_name: str | None = None
    reference_id: int | None = None


@dataclass(frozen=True, slots=True)
class SchemaChange:
    """One change of an update, for previews: ``compatible`` tells whether data files
    written before the change still read correctly under the new schema (only a required
    column added, or a column made required, can break that)."""

    kind: str
    column: str
    description: str
    compatible: bool

    def __str__(self) -> str:
        return self.description if self.compatible else f"{self.description} (incompatible)"


def _name(path: ColumnPath) -> str:
    """Java joins name parts with dots and looks the result up in the name index."""
    if isinstance(path, str):
        return path
    return ".".join(path)


def _split(path: ColumnPath) -> tuple[str | None, str]:
    if isinstance(path, str):
        parent, dot, leaf = path.rpartition(".")
        return (parent if dot else None), leaf
    parts = list(path)
    if not parts:
        raise ValidationError("a column path must not be empty")
    return (".".join(parts[:-1]) if len(parts) > 1 else None), parts[-1]


def _as_type(t: IcebergType | str) -> IcebergType:
    return parse_type(t) if isinstance(t, str) else t


def _structs(t: IcebergType, owner: str = "") -> Iterator[tuple[str, StructType]]:
    """Every struct of a type tree with the dotted name of its owner ('' for the table)."""
    if isinstance(t, StructType):
        yield owner, t
        for f in t.fields:
            yield from _structs(f.field_type, f"{owner}.{f.name}" if owner else f.name)
    elif isinstance(t, ListType):
        yield from _structs(t.element_type, f"{owner}.element")
    elif isinstance(t, MapType):
        yield from _structs(t.key_type, f"{owner}.key")
        yield from _structs(t.value_type, f"{owner}.value")


class UpdateSchema:
    """Java ``UpdateSchema``: chainable column changes, applied together by :meth:`commit`.

    ``allow_incompatible`` permits adding required columns and making optional columns
    required (old data may then not satisfy the schema). ``case_sensitive=False`` finds
    existing columns ignoring case.
    """

    def __init__(self, transaction: Transaction, *, allow_incompatible: bool = False,
                 case_sensitive: bool = True, autocommit: bool = False) -> None:
        self._transaction = transaction
        self._base: TableMetadata = transaction.base_metadata
        self._schema: Schema = self._base.schema()
        self._allow_incompatible = allow_incompatible
        self._case_sensitive = case_sensitive
        self._autocommit = autocommit
        self._last_column_id = self._base.last_column_id
        self._deletes: list[int] = []
        self._updates: dict[int, NestedField] = {}
        self._parent_to_added: dict[int, list[int]] = {}
        self._added_name_to_id: dict[str, int] = {}
        self._added_parent: dict[int, int] = {}
        self._moves: dict[int, list[_Move]] = {}
        self._identifier_names: list[str] | None = None
        self._committed = False

    # -- lookups -------------------------------------------------------------------------

    def _find(self, name: str) -> NestedField | None:
        try:
            return self._schema.find_field(name, self._case_sensitive)
        except ValidationError:
            return None

    def _find_for_update(self, name: str) -> NestedField | None:
        existing = self._find(name)
        if existing is not None:
            return self._updates.get(existing.field_id, existing)
        added = self._added_name_to_id.get(name)
        return self._updates[added] if added is not None else None

    def _find_for_move(self, name: str) -> int | None:
        added = self._added_name_to_id.get(name)
        if added is not None:
            return added
        existing = self._find(name)
        return existing.field_id if existing is not None else None

    def _parent_of(self, field_id: int) -> int | None:
        if field_id in self._added_parent:
            return self._added_parent[field_id]
        return self._schema.parent_id(field_id)

    def _next_id(self) -> int:
        self._last_column_id += 1
        return self._last_column_id

    # -- builders ------------------------------------------------------------------------

    def add_column(self, path: ColumnPath, field_type: IcebergType | str,
                   doc: str | None = None, required: bool = False) -> UpdateSchema:
        """Add a column at the end of its struct (Java ``addColumn`` /
        ``addRequiredColumn``). The parent may be a struct, a list (its element struct) or
        a map (its value struct). A name that exists is refused unless that column is
        dropped in this update."""
        parent, name = _split(path)
        new_type = _as_type(field_type)
        parent_id = TABLE_ROOT_ID
        if parent is not None:
            parent_field = self._find(parent)
            if parent_field is None:
                raise ValidationError(f"Cannot find parent struct: {parent}")
            pt = parent_field.field_type
            if isinstance(pt, MapType):
                parent_field = pt.value_field
            elif isinstance(pt, ListType):
                parent_field = pt.element_field
            if not isinstance(parent_field.field_type, StructType):
                raise ValidationError(
                    f"Cannot add to non-struct column: {parent}: {parent_field.field_type}")
            parent_id = parent_field.field_id
            if parent_id in self._deletes:
                raise ValidationError(f"Cannot add to a column that will be deleted: {parent}")
            current = self._find(f"{parent}.{name}")
            shown = f"{parent}.{name}"
            full_name = f"{self._schema.find_column_name(parent_id)}.{name}"
        else:
            current = self._find(name)
            shown = full_name = name
        if (current is not None and current.field_id not in self._deletes) \
                or full_name in self._added_name_to_id:
            raise ValidationError(f"Cannot add column, name already exists: {shown}")
        if required and not self._allow_incompatible:
            raise ValidationError(
                f"Incompatible change: cannot add required column without a default value: "
                f"{full_name} (format v{self._base.format_version} tables have no column "
                f"defaults, so existing rows would have no value; add it optional, or allow "
                f"incompatible changes)")
        new_id = self._next_id()
        self._added_name_to_id[full_name] = new_id
        if parent_id != TABLE_ROOT_ID:
            self._added_parent[new_id] = parent_id
        self._updates[new_id] = NestedField(new_id, name,
                                            assign_fresh_type_ids(new_type, self._next_id),
                                            required, doc)
        self._parent_to_added.setdefault(parent_id, []).append(new_id)
        return self

    def drop_column(self, path: ColumnPath) -> UpdateSchema:
        """Java ``deleteColumn``: the column and everything nested in it."""
        name = _name(path)
        field = self._find(name)
        if field is None:
            raise ValidationError(f"Cannot delete missing column: {name}")
        if field.field_id in self._parent_to_added:
            raise ValidationError(f"Cannot delete a column that has additions: {name}")
        if field.field_id in self._updates:
            raise ValidationError(f"Cannot delete a column that has updates: {name}")
        if field.field_id not in self._deletes:
            self._deletes.append(field.field_id)
        return self

    def rename_column(self, path: ColumnPath, new_name: str) -> UpdateSchema:
        """Java ``renameColumn``: ``new_name`` is the new leaf name (same struct)."""
        name = _name(path)
        field = self._find(name)
        if field is None:
            raise ValidationError(f"Cannot rename missing column: {name}")
        if not new_name:
            raise ValidationError(f"Cannot rename column {name} to an empty name")
        if field.field_id in self._deletes:
            raise ValidationError(f"Cannot rename a column that will be deleted: {field.name}")
        current = self._updates.get(field.field_id, field)
        self._updates[field.field_id] = dataclasses.replace(current, name=new_name)
        return self

    def update_column(self, path: ColumnPath,
                      new_type: PrimitiveType | str) -> UpdateSchema:
        """Java ``updateColumn``: widen a primitive type (int → long, float → double,
        decimal(P, S) → decimal(P', S) with P' > P)."""
        name = _name(path)
        target = _as_type(new_type)
        field = self._checked_for_update(name)
        if field.field_type == target:
            return self
        if not isinstance(target, PrimitiveType) or not can_promote(
                field.field_type, target, self._base.format_version):
            raise ValidationError(
                f"Cannot change column type: {name}: {field.field_type} -> {target} (Iceberg "
                f"only widens int to long, float to double, and a decimal's precision at the "
                f"same scale)")
        self._updates[field.field_id] = dataclasses.replace(field, field_type=target)
        return self

    def make_optional(self, path: ColumnPath) -> UpdateSchema:
        """Java ``makeColumnOptional``."""
        return self._set_required(_name(path), False)

    def require_column(self, path: ColumnPath) -> UpdateSchema:
        """Java ``requireColumn``: only with ``allow_incompatible`` (old rows may be null)."""
        return self._set_required(_name(path), True)

    def _set_required(self, name: str, required: bool) -> UpdateSchema:
        field = self._find_for_update(name)
        if field is None:
            raise ValidationError(f"Cannot update missing column: {name}")
        if field.required == required:
            return self  # a no-op is allowed even when it would be incompatible
        if required and not self._allow_incompatible:
            raise ValidationError(
                f"Cannot change column nullability: {name}: optional -> required (existing "
                f"rows may hold nulls; allow incompatible changes to do it anyway)")
        if field.field_id in self._deletes:
            raise ValidationError(f"Cannot update a column that will be deleted: {field.name}")
        self._updates[field.field_id] = dataclasses.replace(field, required=required)
        return self

    def update_doc(self, path: ColumnPath, doc: str | None) -> UpdateSchema:
        """Java ``updateColumnDoc``."""
        field = self._checked_for_update(_name(path))
        if field.doc != doc:
            self._updates[field.field_id] = dataclasses.replace(field, doc=doc)
        return self

    def _checked_for_update(self, name: str) -> NestedField:
        field = self._find_for_update(name)
        if field is None:
            raise ValidationError(f"Cannot update missing column: {name}")
        if field.field_id in self._deletes:
            raise ValidationError(f"Cannot update a column that will be deleted: {field.name}")
        return field

    def move_first(self, path: ColumnPath) -> UpdateSchema:
        name = _name(path)
        return self._move(_Move(name, self._movable(name), _MoveKind.FIRST))

    def move_before(self, path: ColumnPath, other: ColumnPath) -> UpdateSchema:
        return self._move_relative(_name(path), _name(other), _MoveKind.BEFORE)

    def move_after(self, path: ColumnPath, other: ColumnPath) -> UpdateSchema:
        return self._move_relative(_name(path), _name(other), _MoveKind.AFTER)

    def _movable(self, name: str) -> int:
        fid = self._find_for_move(name)
        if fid is None:
            raise ValidationError(f"Cannot move missing column: {name}")
        return fid

    def _move_relative(self, name: str, other: str, kind: _MoveKind) -> UpdateSchema:
        fid = self._movable(name)
        ref = self._find_for_move(other)
        if ref is None:
            raise ValidationError(f"Cannot move {name} {kind.value} missing column: {other}")
        if ref == fid:
            raise ValidationError(f"Cannot move {name} {kind.value} itself")
        return self._move(_Move(name, fid, kind, other, ref))

    def _move(self, move: _Move) -> UpdateSchema:
        """Java ``internalMove``: moves stay within the struct that holds the column."""
        parent_id = self._parent_of(move.field_id)
        if parent_id is not None:
            parent = self._schema.find_field(parent_id)
            if not isinstance(parent.field_type, StructType):
                raise ValidationError(
                    f"Cannot move fields in non-struct type: {parent.field_type}")
        if move.reference_id is not None and self._parent_of(move.reference_id) != parent_id:
            raise ValidationError(f"Cannot move field {move.name} to a different struct")
        key = TABLE_ROOT_ID if parent_id is None else parent_id
        self._moves.setdefault(key, []).append(move)
        return self

    def set_identifier_fields(self, *paths: ColumnPath) -> UpdateSchema:
        """Java ``setIdentifierFields``: names resolved against the new schema (so added or
        renamed columns can be named by their new names); replaces the current set."""
        self._identifier_names = [_name(p) for p in paths]
        return self

    # -- applying ------------------------------------------------------------------------

    def apply(self) -> Schema:
        """The new schema (with the id a commit gives it), without committing anything."""
        self._check_identifier_deletes()
        struct = self._apply_struct(self._schema.as_struct(), TABLE_ROOT_ID)
        _check_unique_names(struct)
        identifier_ids = self._identifier_ids(struct)
        schema = Schema(*struct.fields, schema_id=self._schema_id_for(struct, identifier_ids),
                        identifier_field_ids=identifier_ids)
        self._check_metadata_compatibility(schema)
        return schema

    def _schema_id_for(self, struct: StructType, identifier_ids: Sequence[int]) -> int:
        # the id AddSchema gives it: an identical schema is reused, else the next id
        for existing in self._base.schemas:
            if existing.fields == struct.fields \
                    and existing.identifier_field_ids == tuple(identifier_ids):
                return existing.schema_id
        return max((s.schema_id for s in self._base.schemas), default=-1) + 1

    def _apply_struct(self, struct: StructType, owner_id: int) -> StructType:
        fields = []
        for f in struct.fields:
            t = self._apply_field_type(f)
            if t is None:
                continue
            fields.append(dataclasses.replace(self._updates.get(f.field_id, f), field_type=t))
        return StructType(*self._add_and_move(fields, owner_id))

    def _apply_field_type(self, field: NestedField) -> IcebergType | None:
        """Java ``ApplyChanges.field``: None when deleted, else the field's new type."""
        if field.field_id in self._deletes:
            return None
        update = self._updates.get(field.field_id)
        if update is not None and update.field_type != field.field_type:
            return update.field_type  # a promoted primitive
        t = field.field_type
        if isinstance(t, StructType):
            return self._apply_struct(t, field.field_id)
        if isinstance(t, ListType):
            element = self._apply_field_type(t.element_field)
            if element is None:
                raise ValidationError(f"Cannot delete element type from list: {field.name}")
            upd = self._updates.get(t.element_id)
            return ListType(t.element_id, element,
                            upd.required if upd is not None else t.element_required)
        if isinstance(t, MapType):
            return self._apply_map(field.name, t)
        return t

    def _apply_map(self, name: str, t: MapType) -> MapType:
        key_id = t.key_id
        if key_id in self._deletes:
            raise ValidationError(f"Cannot delete map keys: {name}")
        if key_id in self._updates:
            raise ValidationError(f"Cannot update map keys: {name}")
        if key_id in self._parent_to_added:
            raise ValidationError(f"Cannot add fields to map keys: {name}")
        if self._apply_field_type(t.key_field) != t.key_type:
            raise ValidationError(f"Cannot alter map keys: {name}")
        value = self._apply_field_type(t.value_field)
        if value is None:
            raise ValidationError(f"Cannot delete value type from map: {name}")
        upd = self._updates.get(t.value_id)
        return MapType(key_id, t.key_type, t.value_id, value,
                       upd.required if upd is not None else t.value_required)

    def _add_and_move(self, fields: list[NestedField], owner_id: int) -> list[NestedField]:
        """Java ``addAndMoveFields``: additions first (so they can be moved), then moves in
        call order."""
        out = fields + [self._updates[i] for i in self._parent_to_added.get(owner_id, ())]
        for move in self._moves.get(owner_id, ()):
            i = _index_of(out, move.field_id)
            if i is None:
                raise ValidationError(f"Cannot move column {move.name}: it will be deleted")
            moving = out.pop(i)
            if move.kind is _MoveKind.FIRST:
                out.insert(0, moving)
                continue
            assert move.reference_id is not None
            j = _index_of(out, move.reference_id)
            if j is None:
                raise ValidationError(
                    f"Cannot move {move.name} {move.kind.value} {move.reference_name}: "
                    f"{move.reference_name} will be deleted")
            out.insert(j if move.kind is _MoveKind.BEFORE else j + 1, moving)
        return out

    # -- identifier fields ---------------------------------------------------------------

    def _identifier_base_ids(self) -> list[int]:
        """The identifier fields as ids of the current schema (names not in it skipped)."""
        if self._identifier_names is None:
            return list(self._schema.identifier_field_ids)
        found = (self._find(n) for n in self._identifier_names)
        return [f.field_id for f in found if f is not None]

    def _check_identifier_deletes(self) -> None:
        for fid in self._identifier_base_ids():
            name = self._schema.find_column_name(fid)
            if fid in self._deletes:
                raise ValidationError(
                    f"Cannot delete identifier field {name}. To force deletion, also call "
                    f"set_identifier_fields to update identifier fields.")
            parent = self._schema.parent_id(fid)
            while parent is not None:
                if parent in self._deletes:
                    raise ValidationError(
                        f"Cannot delete field {self._schema.find_column_name(parent)} as it "
                        f"will delete nested identifier field {name}")
                parent = self._schema.parent_id(parent)

    def _identifier_ids(self, struct: StructType) -> list[int]:
        """Java resolves identifier names in the new schema and keeps them in a HashSet;
        the ids come out in Java's HashSet order so the schema JSON equals Java's."""
        preview = Schema(*struct.fields)
        if self._identifier_names is None:
            # by id: a renamed identifier column (or parent) stays an identifier (Java tracks
            # names and loses renamed nested ones)
            ids = list(self._schema.identifier_field_ids)
            names = [preview.find_column_name(i) or "" for i in ids]
            size: int | None = None
        else:
            names = self._identifier_names
            ids = []
            for name in names:
                try:
                    ids.append(preview.find_field_id(name, self._case_sensitive))
                except ValidationError:
                    raise ValidationError(
                        f"Cannot add field {name} as an identifier field: not found in current "
                        f"schema or added columns") from None
            size = len(names)
        by_name = dict(zip(names, ids, strict=True))
        ordered_names = java_hash_set_order(names, java_string_hash, initial_size=size)
        ordered = java_hash_set_order([by_name[n] for n in ordered_names], lambda i: i)
        for fid in ordered:
            _validate_identifier_field(preview, fid)
        return ordered

    # -- checks Java makes when it builds the table metadata -----------------------------

    def _check_metadata_compatibility(self, schema: Schema) -> None:
        md = self._base
        ids = index_by_id(schema.as_struct())
        if md.format_version < 3:
            for fid, f in sorted(ids.items()):
                if isinstance(f.field_type, _V3_TYPES):
                    raise ValidationError(
                        f"Invalid type for {schema.find_column_name(fid)}: {f.field_type} is "
                        f"not supported until v3 (the table is format v{md.format_version})")
        spec = md.spec()
        for pf in spec.fields:
            if pf.transform.is_void:
                continue  # v1 keeps dropped partition fields as void, which needs no source
            source = ids.get(pf.source_id)
            if source is None:
                raise ValidationError(
                    f"Cannot drop column {self._schema.find_column_name(pf.source_id)}: it is "
                    f"the source of partition field {pf.name!r} of the current partition spec "
                    f"(spec {spec.spec_id}); remove that partition field first")
            if not pf.transform.can_transform(source.field_type):
                raise ValidationError(
                    f"Cannot change column {schema.find_column_name(pf.source_id)} to "
                    f"{source.field_type}: partition field {pf.name!r} applies "
                    f"{pf.transform}, which cannot transform it")
        for sf in md.sort_order().fields:
            if sf.source_id not in ids:
                raise ValidationError(
                    f"Cannot drop column {self._schema.find_column_name(sf.source_id)}: the "
                    f"table's sort order (order {md.default_sort_order_id}) sorts by it; "
                    f"replace the sort order first")

    # -- committing ----------------------------------------------------------------------

    def _staged(self) -> tuple[Schema, list[TableUpdate]]:
        base = self._base
        schema = self.apply()
        last = max(base.last_column_id, schema.highest_field_id)
        updates: list[TableUpdate] = [AddSchema(schema, last), SetCurrentSchema(LAST_ADDED)]
        removed, changed = self._property_changes(schema)
        if removed:
            updates.append(RemoveProperties(tuple(sorted(removed))))
        if changed:
            updates.append(SetProperties(changed))
        return schema, updates

    def _property_changes(self, schema: Schema) -> tuple[set[str], dict[str, str]]:
        """Java ``applyChangesToMetadata``: the name mapping gains renamed and added fields;
        per-column metrics settings follow renames and go with dropped columns."""
        props = self._base.properties
        changed: dict[str, str] = {}
        removed: set[str] = set()
        raw = props.get(NAME_MAPPING)
        if raw is not None:
            try:
                mapping = update_mapping(parse_name_mapping(raw), self._updates,
                                         self._parent_to_added)
                changed[NAME_MAPPING] = name_mapping_to_json(mapping)
            except ValidationError as e:
                # Java logs and leaves the property alone rather than failing the update
                log.warning("could not update %s (%s); left unchanged", NAME_MAPPING, e)
        deleted = {self._schema.find_column_name(i) for i in self._deletes}
        renamed: dict[str, str] = {}
        added = set(self._added_name_to_id.values())
        for fid in self._updates:
            old, new = self._schema.find_column_name(fid), schema.find_column_name(fid)
            if fid not in added and old is not None and new is not None and old != new:
                renamed[old] = new
        for key, value in props.items():
            prefix = next((p for p in COLUMN_PROPERTY_PREFIXES if key.startswith(p)), None)
            if prefix is None:
                continue
            column = key[len(prefix):]
            if column in renamed:
                removed.add(key)
                changed[prefix + renamed[column]] = value
            elif column in deleted:
                removed.add(key)
        return removed - set(changed), changed

    def commit(self) -> Transaction | Table:
        """Stage the new schema in the transaction (returned), or with ``autocommit``
        commit the transaction and return the table."""
        if self._committed:
            raise ValidationError("this schema update was already committed")
        if any(isinstance(x, AddSchema) for op in self._transaction.operations
               for x in getattr(op, "updates", ())):
            # every builder of a transaction starts from the transaction's first metadata:
            # a second schema change would not see the first and would reuse its new ids
            raise ValidationError(
                "this transaction already has a schema change; commit it before changing "
                "the schema again")
        _, updates = self._staged()
        base = self._base
        self._transaction.add_updates(updates, [
            AssertCurrentSchemaId(base.current_schema_id),
            AssertLastAssignedFieldId(base.last_column_id)])
        self._committed = True
        if self._autocommit:
            return self._transaction.commit()
        return self._transaction

    # -- previews ------------------------------------------------------------------------

    def describe_changes(self) -> list[SchemaChange]:
        """What this update does, one line a change, with whether old data still reads
        correctly (raises ValidationError like :meth:`apply` when the update is invalid)."""
        new = self.apply()
        old = self._schema
        out: list[SchemaChange] = []
        for fid in self._deletes:
            name = old.find_column_name(fid) or str(fid)
            out.append(SchemaChange("drop-column", name, f"drop column {name}", True))
        added = set(self._added_name_to_id.values())
        for fid, upd in self._updates.items():
            if fid in added:
                continue
            before = old.find_field(fid)
            name = old.find_column_name(fid) or str(fid)
            if before.name != upd.name:
                out.append(SchemaChange("rename-column", name,
                                        f"rename column {name} to {upd.name}", True))
            if before.field_type != upd.field_type:
                out.append(SchemaChange(
                    "update-column-type", name,
                    f"widen column {name} from {before.field_type} to {upd.field_type}", True))
            if before.required != upd.required:
                what = "required" if upd.required else "optional"
                out.append(SchemaChange(f"make-{what}", name, f"make column {name} {what}",
                                        not upd.required))
            if before.doc != upd.doc:
                out.append(SchemaChange("update-doc", name,
                                        f"set the doc of column {name} to {upd.doc!r}", True))
        for fid in sorted(added):
            f = self._updates[fid]
            name = new.find_column_name(fid) or f.name
            req = "required" if f.required else "optional"
            out.append(SchemaChange("add-column", name,
                                    f"add {req} column {name} {f.field_type}", not f.required))
        for moves in self._moves.values():
            for m in moves:
                where = "first" if m.kind is _MoveKind.FIRST \
                    else f"{m.kind.value} {m.reference_name}"
                out.append(SchemaChange("move-column", m.name, f"move column {m.name} {where}",
                                        True))
        if set(new.identifier_field_ids) != set(old.identifier_field_ids):
            names = ", ".join(new.find_column_name(i) or str(i)
                              for i in new.identifier_field_ids) or "none"
            out.append(SchemaChange("set-identifier-fields", names,
                                    f"set identifier fields to {names}", True))
        return out


def _index_of(fields: list[NestedField], field_id: int) -> int | None:
    return next((i for i, f in enumerate(fields) if f.field_id == field_id), None)


def _check_unique_names(struct: StructType) -> None:
    """Java's ``Schema`` refuses two fields of one struct with the same name (a rename onto
    an existing name)."""
    for owner, s in _structs(struct):
        seen: dict[str, int] = {}
        for f in s.fields:
            if f.name in seen:
                where = f"struct {owner}" if owner else "the table"
                raise ValidationError(
                    f"Invalid schema: {where} would have two fields named {f.name!r} (ids "
                    f"{seen[f.name]} and {f.field_id})")
            seen[f.name] = f.field_id


def _validate_identifier_field(schema: Schema, field_id: int) -> None:
    """Java ``Schema.validateIdentifierField``: a required primitive, not float/double,
    nested only in required structs."""
    f = schema.find_field(field_id)
    if not isinstance(f.field_type, PrimitiveType):
        raise ValidationError(
            f"Cannot add field {f.name} as an identifier field: not a primitive type field")
    if not f.required:
        raise ValidationError(
            f"Cannot add field {f.name} as an identifier field: not a required field")
    if isinstance(f.field_type, (FloatType, DoubleType)):
        raise ValidationError(
            f"Cannot add field {f.name} as an identifier field: must not be float or double "
            f"field")
    chain: list[int] = []
    parent = schema.parent_id(field_id)
    while parent is not None:
        chain.append(parent)
        parent = schema.parent_id(parent)
    for pid in reversed(chain):  # from the root, for a better message on lists and maps
        p = schema.find_field(pid)
        if not isinstance(p.field_type, StructType):
            raise ValidationError(
                f"Cannot add field {f.name} as an identifier field: must not be nested in "
                f"{schema.find_column_name(pid)} ({p.field_type})")
        if not p.required:
            raise ValidationError(
                f"Cannot add field {f.name} as an identifier field: must not be nested in an "
                f"optional field {schema.find_column_name(pid)}")

