"""Partition spec evolution and sort-order replacement (spec "Partition Evolution", "Sorting").

:class:`UpdateSpec` follows Java's ``BaseUpdatePartitionSpec`` (Iceberg 1.10.2) and
:class:`ReplaceSortOrder` Java's ``BaseReplaceSortOrder``: the same field ids, names, reuse
of earlier specs and orders, and the same refusals, so that a table evolved by floe and one
evolved by Spark's ``ALTER TABLE ... ADD / DROP / REPLACE PARTITION FIELD`` and
``WRITE ORDERED BY`` end with identical ``partition-specs`` and ``sort-orders``.

Both builders stage their change into a :class:`~floe.table.transaction.Transaction` on
``commit()`` (``Table.update_spec()`` / ``Table.replace_sort_order()`` commit at once).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from floe.errors import ValidationError
from floe.metadata import TableMetadata
from floe.partitioning import PARTITION_FIELD_ID_START, PartitionField, PartitionSpec, parse_term
from floe.schema import Schema
from floe.sorting import NullOrder, SortDirection, SortField, SortOrder, parse_sort_by
from floe.table.updates import (
    LAST_ADDED,
    AddPartitionSpec,
    AddSortOrder,
    SetDefaultSortOrder,
    SetDefaultSpec,
    apply_updates,
)
from floe.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    MonthTransform,
    Transform,
    TruncateTransform,
    UnknownTransform,
    VoidTransform,
    YearTransform,
)
from floe.types import PrimitiveType, StructType

if TYPE_CHECKING:
    from floe.table.table import Table
    from floe.table.transaction import Transaction

__all__ = ["ReplaceSortOrder", "UpdateSpec"]

_TIME_TRANSFORMS = (YearTransform, MonthTransform, DayTransform, HourTransform)


def _resolve(text: str, schema: Schema, case_sensitive: bool) -> tuple[int, Transform]:
    """``(source id, transform)`` of a term such as ``bucket(16, id)`` (Java's ``resolve``)."""
    if not text.strip():
        raise ValidationError("empty partition or sort term")
    transform, source, _ = parse_term(text, schema, case_sensitive)
    return source.field_id, transform


def _describe(schema: Schema, source_id: int, transform: Transform) -> str:
    column = schema.find_column_name(source_id) or f"column id {source_id}"
    return f"{transform}({column})"


def _evolution_name(schema: Schema, source_id: int, transform: Transform) -> str:
    """Java ``BaseUpdatePartitionSpec.PartitionNameGenerator``: unlike CREATE TABLE's names
    (``id_bucket``), an evolved field's default name carries the argument (``id_bucket_16``,
    ``s_trunc_4``)."""
    column = schema.find_column_name(source_id) or str(source_id)
    if isinstance(transform, BucketTransform):
        return f"{column}_bucket_{transform.num_buckets}"
    if isinstance(transform, TruncateTransform):
        return f"{column}_trunc_{transform.width}"
    if isinstance(transform, _TIME_TRANSFORMS):
        return f"{column}_{transform}"
    return column  # identity (add_field refuses void)


def _table_name(transaction: Transaction) -> str:
    return str(transaction.table.identifier)


class UpdateSpec:
    """Evolve the default partition spec (Java ``UpdatePartitionSpec``); calls chain.

    - ``add_field(term, name=None)``: ``"bucket(16, id)"``, ``"day(ts)"``, ``"truncate(4, s)"``,
      ``"id"``. New fields get ids from the table's ``last-partition-id`` + 1; in v2 a
      (column, transform) pair that any earlier spec had comes back with that field's id and
      name. Default names are Java's evolution names (``id_bucket_16``).
    - ``remove_field(name_or_term)``: by partition field name (Java ``removeField(String)``),
      else by term. In v2 the field disappears; in v1 it stays as a ``void`` field with its id
      (v1 readers locate partition values by position).
    - ``rename_field(name, new_name)``.

    Refused like Java: a field that already exists or was already added, two time fields on
    one column added together, removing or renaming a field added in the same update,
    renaming a removed field, removing a renamed one, a name used twice or naming another
    column of the schema. ``commit()`` stages ``AddPartitionSpec`` + ``SetDefaultSpec`` with
    ``AssertDefaultSpecId`` / ``AssertLastAssignedPartitionId`` (a concurrent spec change is a
    CommitConflict); an equivalent earlier spec is reused, and no change stages nothing.
    """

    def __init__(self, transaction: Transaction, *, case_sensitive: bool = True,
                 autocommit: bool = False) -> None:
        base = transaction.base_metadata
        self._transaction = transaction
        self._autocommit = autocommit
        self._base = base
        self._spec = base.spec()
        self._schema = base.schema()
        self._case_sensitive = case_sensitive
        self._last_partition_id = base.last_partition_id
        for f in self._spec.fields:
            if isinstance(f.transform, UnknownTransform):
                raise ValidationError(
                    f"cannot evolve the partition spec of table {_table_name(transaction)}: "
                    f"field {f.name!r} has the unknown transform {f.transform}")
        self._name_to_field = {f.name: f for f in self._spec.fields}
        self._transform_to_field = {(f.source_id, str(f.transform)): f for f in self._spec.fields}
        self._adds: list[PartitionField] = []
        self._added_time_fields: dict[int, PartitionField] = {}
        self._transform_to_added: dict[tuple[int, str], PartitionField] = {}
        self._name_to_added: dict[str, PartitionField] = {}
        self._deletes: set[int] = set()
        self._renames: dict[str, str] = {}

    # -- changes --------------------------------------------------------------------------

    def add_identity(self, column: str) -> UpdateSpec:
        """``add_field`` of the column itself (backquoted, so any column name works)."""
        return self.add_field(f"`{column}`")

    def add_field(self, term: str, name: str | None = None) -> UpdateSpec:
        """Add ``transform(column)`` as a partition field named ``name`` (Java ``addField``)."""
        if name is not None and name in self._name_to_added:
            raise ValidationError(
                f"cannot add partition field {name!r} twice in one update")
        source_id, transform = _resolve(term, self._schema, self._case_sensitive)
        if isinstance(transform, VoidTransform):
            raise ValidationError(f"cannot add {term!r}: a void partition field is only the "
                                  f"trace a removed v1 field leaves")
        key = (source_id, str(transform))
        what = _describe(self._schema, source_id, transform)
        existing = self._transform_to_field.get(key)
        if existing is not None:
            if existing.field_id in self._deletes:
                # removing then re-adding the same field cancels the removal (Java's
                # rewriteDeleteAndAddField), renaming it when another name is asked for
                self._deletes.discard(existing.field_id)
                if name is not None and name != existing.name:
                    self.rename_field(existing.name, name)
                return self
            raise ValidationError(
                f"cannot add partition field {what}: the spec already has it as "
                f"{existing.name!r}")
        added = self._transform_to_added.get(key)
        if added is not None:
            raise ValidationError(
                f"cannot add partition field {what} twice: it was already added as "
                f"{added.name!r}")
        new_field = self._recycle_or_create(source_id, transform, name)
        if isinstance(transform, _TIME_TRANSFORMS):
            other = self._added_time_fields.get(source_id)
            if other is not None:
                raise ValidationError(
                    f"cannot add redundant partition field {what}: it conflicts with "
                    f"{_describe(self._schema, other.source_id, other.transform)} added in "
                    f"the same update")
        clash = self._name_to_field.get(new_field.name)
        if clash is not None and clash.field_id not in self._deletes:
            if not isinstance(clash.transform, VoidTransform):
                raise ValidationError(
                    f"cannot add partition field {what} as {new_field.name!r}: the spec "
                    f"already has a field {clash.name!r} "
                    f"({_describe(self._schema, clash.source_id, clash.transform)})")
            # a v1 void field gives its name up and is renamed <name>_<field id>
            self.rename_field(clash.name, f"{clash.name}_{clash.field_id}")
        elif clash is not None:
            self._renames[clash.name] = f"{clash.name}_{clash.field_id}"
        if new_field.field_id > self._last_partition_id:
            self._last_partition_id = new_field.field_id
        if isinstance(transform, _TIME_TRANSFORMS):
            self._added_time_fields[source_id] = new_field
        self._transform_to_added[key] = new_field
        self._name_to_added[new_field.name] = new_field
        self._adds.append(new_field)
        return self

    def _recycle_or_create(self, source_id: int, transform: Transform,
                           name: str | None) -> PartitionField:
        """Java ``recycleOrCreatePartitionField``: from v2 on, a (column, transform) pair any
        earlier spec had comes back with that field's id and name (when ``name`` is given, only
        a field of that name). Java searches a hash set, so which of several candidates wins
        is unspecified there; floe takes the one of the newest spec."""
        if self._base.format_version >= 2:
            for spec in reversed(self._base.partition_specs):
                for f in spec.fields:
                    if (f.source_id == source_id and str(f.transform) == str(transform)
                            and (name is None or f.name == name)):
                        return f
        field_id = self._last_partition_id + 1
        return PartitionField(source_id, field_id, transform,
                              name if name is not None
                              else _evolution_name(self._schema, source_id, transform))

    def remove_field(self, name_or_term: str) -> UpdateSpec:
        """Remove a field by its partition name, or else by its term (``"bucket(16, id)"``)."""
        if name_or_term in self._name_to_added:
            raise ValidationError(
                f"cannot remove partition field {name_or_term!r}: it is added in this same "
                f"update")
        if name_or_term in self._name_to_field:
            if name_or_term in self._renames:
                raise ValidationError(
                    f"cannot remove partition field {name_or_term!r}: it is renamed in this "
                    f"same update")
            self._deletes.add(self._name_to_field[name_or_term].field_id)
            return self
        if "(" not in name_or_term and not self._is_column(name_or_term):
            raise self._not_found("remove", name_or_term)
        source_id, transform = _resolve(name_or_term, self._schema, self._case_sensitive)
        key = (source_id, str(transform))
        added = self._transform_to_added.get(key)
        if added is not None:
            raise ValidationError(
                f"cannot remove partition field {name_or_term!r}: it is added in this same "
                f"update as {added.name!r}")
        field = self._transform_to_field.get(key)
        if field is None:
            raise self._not_found("remove", name_or_term)
        if field.name in self._renames:
            raise ValidationError(
                f"cannot remove partition field {field.name!r}: it is renamed in this same "
                f"update")
        self._deletes.add(field.field_id)
        return self

    def rename_field(self, name: str, new_name: str) -> UpdateSpec:
        """Rename a partition field of the current spec (its id and data stay)."""
        if name in self._name_to_added:
            raise ValidationError(
                f"cannot rename partition field {name!r}: it is added in this same update")
        field = self._name_to_field.get(name)
        if field is None:
            raise self._not_found("rename", name)
        if field.field_id in self._deletes:
            raise ValidationError(
                f"cannot rename partition field {name!r}: it is removed in this same update")
        taken = self._name_to_field.get(new_name)
        if taken is not None and taken is not field and isinstance(taken.transform,
                                                                    VoidTransform):
            # Java: a v1 void field holding the wanted name is renamed <name>_<field id>
            self.rename_field(taken.name, f"{taken.name}_{taken.field_id}")
        self._renames[name] = new_name
        return self

    def _is_column(self, name: str) -> bool:
        try:
            self._schema.find_field(name, self._case_sensitive)
        except ValidationError:
            return False
        return True

    def _not_found(self, verb: str, name: str) -> ValidationError:
        names = ", ".join(repr(f.name) for f in self._spec.fields) or "none"
        return ValidationError(
            f"cannot {verb} partition field {name!r}: spec {self._spec.spec_id} of table "
            f"{_table_name(self._transaction)} has no such field (fields: {names})")

    # -- result ---------------------------------------------------------------------------

    def _fields(self) -> list[PartitionField]:
        """Java ``apply``: kept fields in order (renamed), removed ones as ``void`` in v1,
        then the added fields."""
        out: list[PartitionField] = []
        for f in self._spec.fields:
            new_name = self._renames.get(f.name, f.name)
            if f.field_id not in self._deletes:
                out.append(PartitionField(f.source_id, f.field_id, f.transform, new_name))
            elif self._base.format_version < 2:
                out.append(PartitionField(f.source_id, f.field_id, VoidTransform(), new_name))
        out.extend(self._adds)
        self._check(out)
        return out

    def _check(self, fields: list[PartitionField]) -> None:
        """Java's ``PartitionSpec.Builder.add`` and ``checkCompatibility`` for the new spec."""
        schema, seen = self._schema, set()
        for f in fields:
            if not f.name:
                raise ValidationError("partition field names must not be empty")
            if f.name in seen:
                raise ValidationError(f"partition field name {f.name!r} is used twice")
            seen.add(f.name)
            # Java lets a partition field carry a column's name only when it is that column's
            # own field (whatever the transform)
            try:
                column_id: int | None = schema.find_field_id(f.name)
            except ValidationError:
                column_id = None
            if column_id is not None and column_id != f.source_id:
                raise ValidationError(
                    f"partition field name {f.name!r} is the name of another column of the "
                    f"table; choose another name")
            if isinstance(f.transform, VoidTransform):
                continue
            self._check_source(f)

    def _check_source(self, f: PartitionField) -> None:
        schema = self._schema
        column = schema.find_column_name(f.source_id)
        if column is None:
            raise ValidationError(
                f"partition field {f.name!r}: its source column id {f.source_id} is not in the "
                f"current schema")
        source_type = schema.find_type(f.source_id)
        if not isinstance(source_type, PrimitiveType):
            raise ValidationError(
                f"cannot partition by non-primitive column {column!r} ({source_type})")
        if not f.transform.can_transform(source_type):
            raise ValidationError(
                f"transform {f.transform} cannot be applied to {column!r} of type {source_type}")
        parent = schema.parent_id(f.source_id)
        while parent is not None:
            if not isinstance(schema.find_type(parent), StructType):
                raise ValidationError(
                    f"cannot partition by {column!r}: it is inside a list or a map")
            parent = schema.parent_id(parent)

    def _updated(self) -> TableMetadata:
        spec = PartitionSpec(*self._fields(), spec_id=self._spec.spec_id)
        return apply_updates(self._base, [AddPartitionSpec(spec), SetDefaultSpec(LAST_ADDED)])

    def apply(self) -> PartitionSpec:
        """The new default spec as the table will hold it (its final spec id, the earlier
        spec's ids when an equivalent one is reused)."""
        md = self._updated()
        spec = md.spec()
        if (md.format_version == 1 and md.default_spec_id != self._base.default_spec_id
                and self._base.spec_by_id(spec.spec_id) is None
                and any(f.field_id != PARTITION_FIELD_ID_START + i
                        for i, f in enumerate(spec.fields))):
            raise ValidationError(
                f"cannot evolve the partition spec of v1 table "
                f"{_table_name(self._transaction)}: the new spec's field ids are not "
                f"sequential from {PARTITION_FIELD_ID_START}, as v1 requires")
        return spec

    def commit(self) -> Transaction | Table:
        """Stage the new spec into the transaction (and commit it with ``autocommit``).

        Returns the transaction, or with ``autocommit`` the committed table. When the
        result is the current default spec nothing is staged (Java commits no new metadata)."""
        spec = self.apply()
        if spec.spec_id != self._base.default_spec_id:
            self._transaction.set_spec(spec)
        return _finish(self._transaction, self._autocommit)


class ReplaceSortOrder:
    """Replace the default sort order (Java ``ReplaceSortOrder``); calls chain.

    ``asc(term)`` / ``desc(term)`` add a sort field (terms as in :class:`UpdateSpec`;
    ``nulls_first=None`` is Java's default: first when ascending, last when descending),
    ``from_text("id desc nulls last, day(ts)")`` adds the fields of a sort clause,
    ``unsorted()`` drops every field added so far. ``commit()`` stages ``AddSortOrder`` +
    ``SetDefaultSortOrder`` checked by ``AssertDefaultSortOrderId``; an order equal to an
    existing one reuses its id, the empty order is order 0.
    """

    def __init__(self, transaction: Transaction, *, case_sensitive: bool = True,
                 autocommit: bool = False) -> None:
        self._transaction = transaction
        self._autocommit = autocommit
        self._base = transaction.base_metadata
        self._schema = self._base.schema()
        self._case_sensitive = case_sensitive
        self._fields: list[SortField] = []

    def asc(self, term: str, nulls_first: bool | None = None) -> ReplaceSortOrder:
        return self._add(term, SortDirection.ASC, nulls_first)

    def desc(self, term: str, nulls_first: bool | None = None) -> ReplaceSortOrder:
        return self._add(term, SortDirection.DESC, nulls_first)

    def _add(self, term: str, direction: SortDirection,
             nulls_first: bool | None) -> ReplaceSortOrder:
        source_id, transform = _resolve(term, self._schema, self._case_sensitive)
        if nulls_first is None:
            null_order = NullOrder.default_for(direction)
        else:
            null_order = NullOrder.NULLS_FIRST if nulls_first else NullOrder.NULLS_LAST
        self._fields.append(SortField(source_id, transform, direction, null_order))
        return self

    def from_text(self, text: str) -> ReplaceSortOrder:
        """Add the fields of ``"id desc nulls last, day(ts)"`` (floe.sorting's sort clause)."""
        order = parse_sort_by(text, self._schema, case_sensitive=self._case_sensitive)
        self._fields.extend(order.fields)
        return self

    def unsorted(self) -> ReplaceSortOrder:
        self._fields.clear()
        return self

    def apply(self) -> SortOrder:
        """The new default order as the table will hold it (with its final order id)."""
        order = SortOrder(*self._fields)
        md = apply_updates(self._base, [AddSortOrder(order), SetDefaultSortOrder(LAST_ADDED)])
        return md.sort_order()

    def commit(self) -> Transaction | Table:
        """Stage the new order (and commit it with ``autocommit``); returns the transaction
        or the committed table. The current default order again stages nothing."""
        order = self.apply()
        if order.order_id != self._base.default_sort_order_id:
            self._transaction.set_sort_order(order)
        return _finish(self._transaction, self._autocommit)


def _finish(transaction: Transaction, autocommit: bool) -> Transaction | Table:
    if not autocommit:
        return transaction
    if not transaction.operations:
        return transaction.table  # nothing changed: Java writes no new metadata either
    return transaction.commit()
