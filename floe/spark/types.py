"""Iceberg types ↔ Spark SQL types, and Arrow batches between the two.

The mapping is Iceberg Spark's (``TypeToSparkType`` / ``SparkTypeToType`` at 1.10):
``timestamptz`` is Spark's ``timestamp`` (instants, UTC), ``timestamp`` is ``timestamp_ntz``,
``uuid`` is a ``string``, ``fixed(L)`` a ``binary``; a required field is a non-nullable one.
Spark has no nanosecond timestamps: they are read at microsecond precision. ``time`` is
Spark 4's ``time(6)``.

Reads hand Spark Arrow batches of exactly the Arrow schema Spark derives from the read schema
(``to_arrow_schema(schema, timezone="UTC")``): Spark refuses anything else
(DATA_SOURCE_RETURN_SCHEMA_MISMATCH). Writes check the DataFrame's schema against the table by
name (:func:`check_write_schema`) and turn Spark's batches into the table's Arrow types
(:class:`WriteConverter`).
"""

from __future__ import annotations

import uuid

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as st

from floe.errors import ValidationError
from floe.io.parquet import schema_to_arrow, to_arrow_type
from floe.schema import Schema
from floe.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

__all__ = [
    "to_spark_type",
    "to_spark_schema",
    "spark_arrow_schema",
    "ReadConverter",
    "WriteConverter",
    "check_write_schema",
    "check_read_schema",
]

_SIMPLE: dict[type, st.DataType] = {
    BooleanType: st.BooleanType(), IntegerType: st.IntegerType(), LongType: st.LongType(),
    FloatType: st.FloatType(), DoubleType: st.DoubleType(), DateType: st.DateType(),
    TimestamptzType: st.TimestampType(), TimestampType: st.TimestampNTZType(),
    TimestamptzNanoType: st.TimestampType(), TimestampNanoType: st.TimestampNTZType(),
    StringType: st.StringType(), UUIDType: st.StringType(), FixedType: st.BinaryType(),
    BinaryType: st.BinaryType(),
}


def to_spark_type(t: IcebergType) -> st.DataType:
    """The Spark type a column of Iceberg type ``t`` reads as (Java ``TypeToSparkType``)."""
    if type(t) in _SIMPLE:
        return _SIMPLE[type(t)]
    if isinstance(t, DecimalType):
        return st.DecimalType(t.precision, t.scale)
    if isinstance(t, TimeType):
        return st.TimeType(6)
    if isinstance(t, StructType):
        return st.StructType([_spark_field(f) for f in t.fields])
    if isinstance(t, ListType):
        return st.ArrayType(to_spark_type(t.element_type), not t.element_required)
    if isinstance(t, MapType):
        return st.MapType(to_spark_type(t.key_type), to_spark_type(t.value_type),
                          not t.value_required)
    raise ValidationError(f"Spark cannot read Iceberg {t} columns")


def _spark_field(f: NestedField) -> st.StructField:
    metadata = {"comment": f.doc} if f.doc else {}
    return st.StructField(f.name, to_spark_type(f.field_type), not f.required, metadata)


def to_spark_schema(schema: Schema) -> st.StructType:
    """The Spark schema of an Iceberg schema (top-level order kept)."""
    return st.StructType([_spark_field(f) for f in schema.fields])


def spark_arrow_schema(schema: st.StructType) -> pa.Schema:
    """The Arrow schema Spark expects from a Python data source reading ``schema``."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")


def _has_uuid(t: IcebergType) -> bool:
    if isinstance(t, UUIDType):
        return True
    if isinstance(t, (StructType, ListType, MapType)):
        return any(_has_uuid(f.field_type) for f in t.fields)
    return False


def _mask(arr: pa.Array) -> pa.Array | None:
    return arr.is_null() if arr.null_count else None


# -- reads: floe's Arrow batches → Spark's -----------------------------------------------------


def _to_spark(arr: pa.Array, t: IcebergType, target: pa.DataType) -> pa.Array:
    """One column of floe's Arrow types (large strings, large lists, 16-byte uuids) as the
    Arrow type Spark expects."""
    if not _has_uuid(t):
        if arr.type == target:
            return arr
        lossy = isinstance(t, (TimestampNanoType, TimestamptzNanoType))
        return arr.cast(target, safe=not lossy)
    if isinstance(t, UUIDType):
        return pa.array([None if v is None else str(uuid.UUID(bytes=v))
                         for v in arr.to_pylist()], target)
    if isinstance(t, StructType):
        children = [_to_spark(arr.field(i), f.field_type, target.field(i).type)
                    for i, f in enumerate(t.fields)]
        return pa.StructArray.from_arrays(children, fields=list(target), mask=_mask(arr))
    if isinstance(t, ListType):
        values = _to_spark(arr.values, t.element_type, target.value_type)
        return pa.ListArray.from_arrays(arr.offsets.cast(pa.int32()), values, type=target,
                                        mask=_mask(arr))
    assert isinstance(t, MapType)
    keys = _to_spark(arr.keys, t.key_type, target.key_type)
    items = _to_spark(arr.items, t.value_type, target.item_type)
    return pa.MapArray.from_arrays(arr.offsets, keys, items, type=target, mask=_mask(arr))


class ReadConverter:
    """Batches of an Iceberg schema's columns (floe's Arrow types) → Spark's Arrow schema."""

    def __init__(self, schema: Schema, spark_schema: st.StructType) -> None:
        self.fields = [schema.find_field(f.name) for f in spark_schema.fields]
        self.target = spark_arrow_schema(spark_schema)

    def __call__(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        arrays = [_to_spark(batch.column(f.name), f.field_type, self.target.field(i).type)
                  for i, f in enumerate(self.fields)]
        return pa.RecordBatch.from_arrays(arrays, schema=self.target)


def check_read_schema(schema: Schema, spark_schema: st.StructType, table: str) -> Schema:
    """The table columns a caller's ``.schema(...)`` selects: every name must be a column
    of the table, with the type the table's column reads as."""
    names = []
    for f in spark_schema.fields:
        try:
            field = schema.find_field(f.name)
        except ValidationError:
            raise ValidationError(f"column {f.name!r} of the given schema is not in table "
                                  f"{table} (columns: {', '.join(schema.column_names())})"
                                  ) from None
        if schema.find_column_name(field.field_id) != f.name:
            raise ValidationError(f"column {f.name!r} of the given schema is nested; a read "
                                  "schema selects top-level columns")
        expected = to_spark_type(field.field_type)
        if f.dataType != expected:
            raise ValidationError(
                f"column {f.name!r} reads as {expected.simpleString()} from table {table}, "
                f"not {f.dataType.simpleString()} as the given schema says")
        names.append(f.name)
    return schema.select(*names)


# -- writes: the DataFrame's schema against the table ------------------------------------------

_INTEGRAL = (st.ByteType, st.ShortType, st.IntegerType)


def _accepts(t: IcebergType, s: st.DataType) -> bool:
    """Whether Spark values of type ``s`` may be written to an Iceberg column of type ``t``
    without loss (Spark's store assignment: widening only)."""
    if isinstance(s, st.NullType):
        return True
    if isinstance(t, (StructType, ListType, MapType)):
        return _nested_accepts(t, s)
    if isinstance(t, IntegerType):
        return isinstance(s, _INTEGRAL)
    if isinstance(t, LongType):
        return isinstance(s, (*_INTEGRAL, st.LongType))
    if isinstance(t, FloatType):
        return isinstance(s, st.FloatType)
    if isinstance(t, DoubleType):
        return isinstance(s, (st.FloatType, st.DoubleType))
    if isinstance(t, DecimalType):
        return (isinstance(s, st.DecimalType) and s.scale == t.scale
                and s.precision <= t.precision)
    if isinstance(t, UUIDType):
        return isinstance(s, st.StringType)
    if isinstance(t, TimeType):
        return isinstance(s, st.TimeType)
    return to_spark_type(t) == s


def _nested_accepts(t: IcebergType, s: st.DataType) -> bool:
    if isinstance(t, StructType):
        if not isinstance(s, st.StructType):
            return False
        by_name = {f.name: f for f in t.fields}
        if any(f.name not in by_name for f in s.fields):
            return False
        given = set(s.names)
        return (all(not f.required or f.name in given for f in t.fields)
                and all(_accepts(by_name[f.name].field_type, f.dataType) for f in s.fields))
    if isinstance(t, ListType):
        return isinstance(s, st.ArrayType) and _accepts(t.element_type, s.elementType)
    assert isinstance(t, MapType)
    return (isinstance(s, st.MapType) and _accepts(t.key_type, s.keyType)
            and _accepts(t.value_type, s.valueType))


def check_write_schema(schema: Schema, spark_schema: st.StructType, table: str) -> None:
    """Refuse a DataFrame whose columns do not fit the table, by name (Java
    ``CheckCompatibility.writeCompatibilityErrors``): every column must be a table column of a
    type it widens to, and every required table column must be there. Optional columns the
    DataFrame lacks are written as nulls; nulls in a required column fail the task that
    meets them (Spark only knows a column *may* hold nulls)."""
    columns = {f.name: f for f in schema.fields}
    seen: set[str] = set()
    for f in spark_schema.fields:
        if f.name in seen:
            raise ValidationError(f"the DataFrame has two columns named {f.name!r}")
        seen.add(f.name)
        field = columns.get(f.name)
        if field is None:
            close = [n for n in columns if n.lower() == f.name.lower()]
            hint = f"; did you mean {close[0]!r}?" if close else \
                f" (columns: {', '.join(columns)})"
            raise ValidationError(f"column {f.name!r} of the DataFrame is not in table "
                                  f"{table}{hint}")
        if not _accepts(field.field_type, f.dataType):
            raise ValidationError(
                f"column {f.name!r} is {f.dataType.simpleString()} in the DataFrame, which "
                f"cannot be written to column {field.name} of table {table} "
                f"({field.field_type}{' not null' if field.required else ''})")
    missing = [f.name for f in schema.fields if f.required and f.name not in seen]
    if missing:
        raise ValidationError(f"the DataFrame has no column {missing[0]!r}, which table "
                              f"{table} requires")


def _nulls(arr: pa.Array, valid: pa.Array | None) -> int:
    """Nulls of ``arr`` where its parent struct is not null (``valid``)."""
    if not arr.null_count:
        return 0
    if valid is None:
        return int(arr.null_count)
    return int(pc.sum(pc.and_(arr.is_null(), valid)).as_py() or 0)


def _from_spark(arr: pa.Array, field: NestedField, where: str,
                valid: pa.Array | None = None) -> pa.Array:
    """One column of Spark's Arrow batch as the Iceberg field's Arrow type; ``valid`` marks
    the rows whose parent struct is not null (a required field may be null under a null
    parent)."""
    t = field.field_type
    target = to_arrow_type(t)
    nulls = _nulls(arr, valid) if field.required else 0
    if nulls:
        raise ValidationError(f"column {where}{field.name} is required but the DataFrame has "
                              f"{nulls} null value(s) in it")
    if pa.types.is_null(arr.type):
        return pa.nulls(len(arr), target)
    if isinstance(t, StructType):
        names = arr.type.names if pa.types.is_struct(arr.type) else []
        here = arr.is_valid() if arr.null_count else None
        if here is not None and valid is not None:
            here = pc.and_(here, valid)
        children = []
        for child in t.fields:
            if child.name in names:
                children.append(_from_spark(arr.field(names.index(child.name)), child,
                                            f"{where}{field.name}.", here if here is not None
                                            else valid))
            elif child.required:
                raise ValidationError(f"column {where}{field.name}.{child.name} is required "
                                      "but not in the DataFrame")
            else:
                children.append(pa.nulls(len(arr), to_arrow_type(child.field_type)))
        return pa.StructArray.from_arrays(children, fields=list(target), mask=_mask(arr))
    if isinstance(t, ListType):
        values = _from_spark(arr.values, t.element_field, f"{where}{field.name}.")
        return pa.LargeListArray.from_arrays(arr.offsets.cast(pa.int64()), values, type=target,
                                             mask=_mask(arr))
    if isinstance(t, MapType):
        keys = _from_spark(arr.keys, t.key_field, f"{where}{field.name}.")
        items = _from_spark(arr.items, t.value_field, f"{where}{field.name}.")
        return pa.MapArray.from_arrays(arr.offsets, keys, items, type=target, mask=_mask(arr))
    if isinstance(t, UUIDType):
        try:
            return pa.array([None if v is None else uuid.UUID(v).bytes
                             for v in arr.to_pylist()], target)
        except ValueError as e:
            raise ValidationError(f"column {where}{field.name}: {e} (not a UUID)") from None
    if arr.type == target:
        return arr
    try:
        return arr.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise ValidationError(f"column {where}{field.name}: cannot write {arr.type} values as "
                              f"{t}: {e}") from None


class WriteConverter:
    """Spark's Arrow batches of the DataFrame's columns → batches of the table schema (columns
    the DataFrame lacks are null), checked for nulls in required columns."""

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self.target = schema_to_arrow(schema)

    def __call__(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        names = batch.schema.names
        arrays = []
        for f in self.schema.fields:
            if f.name in names:
                arrays.append(_from_spark(batch.column(names.index(f.name)), f, ""))
            elif f.required:
                raise ValidationError(f"column {f.name} is required but not in the DataFrame")
            else:
                arrays.append(pa.nulls(batch.num_rows, to_arrow_type(f.field_type)))
        return pa.RecordBatch.from_arrays(arrays, schema=self.target)
