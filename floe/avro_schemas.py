"""Avro schemas of manifests and manifest lists (spec "Manifests", "Manifest Lists").

The Iceberg structs are defined once, with the field ids, names, docs and field order of the
Java reference implementation (``DataFile``, ``ManifestFile``, ``ManifestEntry``,
``V1Metadata`` / ``V2Metadata`` / ``V3Metadata``), and converted to Avro JSON the way Java's
``TypeToSchema`` does, so that the schema embedded in a file floe writes is the one Java
writes:

- ``field-id`` on every record field, ``element-id`` on arrays; structs become records named
  ``r<field id>`` (``r2`` for ``data_file``, ``r102`` for ``partition``, ``r508`` for a
  partition summary); the top-level record is ``manifest_entry`` / ``manifest_file``.
- optional fields are ``["null", T]`` unions with ``"default": null``.
- maps with string keys are Avro maps with ``key-id`` / ``value-id``; other maps
  (``column_sizes: map<int, long>``) are arrays of ``k<key id>_v<value id>`` records with
  ``"logicalType": "map"``.
- date, time, timestamps, decimal and uuid carry their Avro logical types; named fixed types
  (``fixed_16``, ``decimal_9_2``, ``uuid_fixed``) are defined once and referenced by name
  afterwards, as Avro requires.
"""

from __future__ import annotations

from typing import Any

from floe.errors import ValidationError
from floe.types import (
    BINARY,
    BOOLEAN,
    INT,
    LONG,
    STRING,
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
    UnknownType,
    UUIDType,
)

__all__ = [
    "DATA_FILE_ID",
    "PARTITION_ID",
    "data_file_type",
    "manifest_entry_type",
    "manifest_file_type",
    "partition_summary_type",
    "to_avro_schema",
    "avro_name",
    "decimal_required_bytes",
]

# -- manifest_entry (spec "Manifests") -------------------------------------------------------

STATUS = NestedField(0, "status", INT, required=True)
SNAPSHOT_ID = NestedField(1, "snapshot_id", LONG)
SEQUENCE_NUMBER = NestedField(3, "sequence_number", LONG)
FILE_SEQUENCE_NUMBER = NestedField(4, "file_sequence_number", LONG)
DATA_FILE_ID = 2

# -- data_file ----------------------------------------------------------------------------

CONTENT = NestedField(
    134, "content", INT, doc="Contents of the file: 0=data, 1=position deletes, 2=equality deletes"
)
FILE_PATH = NestedField(100, "file_path", STRING, required=True, doc="Location URI with FS scheme")
FILE_FORMAT = NestedField(
    101, "file_format", STRING, required=True, doc="File format name: avro, orc, or parquet"
)
PARTITION_ID = 102
PARTITION_NAME = "partition"
PARTITION_DOC = "Partition data tuple, schema based on the partition spec"
RECORD_COUNT = NestedField(
    103, "record_count", LONG, required=True, doc="Number of records in the file"
)
FILE_SIZE = NestedField(
    104, "file_size_in_bytes", LONG, required=True, doc="Total file size in bytes"
)
#: v1 only: deprecated, always written with a default in v1 (Java writes 64 MiB).
BLOCK_SIZE = NestedField(105, "block_size_in_bytes", LONG, required=True)
DEFAULT_BLOCK_SIZE = 64 * 1024 * 1024
COLUMN_SIZES = NestedField(
    108, "column_sizes", MapType(117, INT, 118, LONG),
    doc="Map of column id to total size on disk",
)
VALUE_COUNTS = NestedField(
    109, "value_counts", MapType(119, INT, 120, LONG),
    doc="Map of column id to total count, including null and NaN",
)
NULL_VALUE_COUNTS = NestedField(
    110, "null_value_counts", MapType(121, INT, 122, LONG),
    doc="Map of column id to null value count",
)
NAN_VALUE_COUNTS = NestedField(
    137, "nan_value_counts", MapType(138, INT, 139, LONG),
    doc="Map of column id to number of NaN values in the column",
)
LOWER_BOUNDS = NestedField(
    125, "lower_bounds", MapType(126, INT, 127, BINARY), doc="Map of column id to lower bound"
)
UPPER_BOUNDS = NestedField(
    128, "upper_bounds", MapType(129, INT, 130, BINARY), doc="Map of column id to upper bound"
)
KEY_METADATA = NestedField(131, "key_metadata", BINARY, doc="Encryption key metadata blob")
SPLIT_OFFSETS = NestedField(
    132, "split_offsets", ListType(133, LONG), doc="Splittable offsets"
)
EQUALITY_IDS = NestedField(
    135, "equality_ids", ListType(136, INT), doc="Equality comparison field IDs"
)
SORT_ORDER_ID = NestedField(140, "sort_order_id", INT, doc="Sort order ID")
FIRST_ROW_ID = NestedField(
    142, "first_row_id", LONG, doc="The first row ID assigned to the first row in the data file"
)
REFERENCED_DATA_FILE = NestedField(
    143, "referenced_data_file", STRING,
    doc="Fully qualified location (URI with FS scheme) of a data file that all deletes reference",
)
CONTENT_OFFSET = NestedField(
    144, "content_offset", LONG,
    doc="The offset in the file where the content starts",
)
CONTENT_SIZE = NestedField(
    145, "content_size_in_bytes", LONG,
    doc="The length of referenced content stored in the file",
)

# -- manifest_file (spec "Manifest Lists") -------------------------------------------------

MANIFEST_PATH = NestedField(
    500, "manifest_path", STRING, required=True, doc="Location URI with FS scheme"
)
MANIFEST_LENGTH = NestedField(
    501, "manifest_length", LONG, required=True, doc="Total file size in bytes"
)
SPEC_ID = NestedField(502, "partition_spec_id", INT, required=True, doc="Spec ID used to write")
MANIFEST_CONTENT = NestedField(
    517, "content", INT, doc="Contents of the manifest: 0=data, 1=deletes"
)
MANIFEST_SEQUENCE_NUMBER = NestedField(
    515, "sequence_number", LONG, doc="Sequence number when the manifest was added"
)
MIN_SEQUENCE_NUMBER = NestedField(
    516, "min_sequence_number", LONG, doc="Lowest sequence number in the manifest"
)
ADDED_SNAPSHOT_ID = NestedField(
    503, "added_snapshot_id", LONG, doc="Snapshot ID that added the manifest"
)
ADDED_FILES_COUNT = NestedField(504, "added_files_count", INT, doc="Added entry count")
EXISTING_FILES_COUNT = NestedField(505, "existing_files_count", INT, doc="Existing entry count")
DELETED_FILES_COUNT = NestedField(506, "deleted_files_count", INT, doc="Deleted entry count")
ADDED_ROWS_COUNT = NestedField(512, "added_rows_count", LONG, doc="Added rows count")
EXISTING_ROWS_COUNT = NestedField(513, "existing_rows_count", LONG, doc="Existing rows count")
DELETED_ROWS_COUNT = NestedField(514, "deleted_rows_count", LONG, doc="Deleted rows count")
PARTITION_SUMMARY = StructType(
    NestedField(
        509, "contains_null", BOOLEAN, required=True,
        doc="True if any file has a null partition value",
    ),
    NestedField(518, "contains_nan", BOOLEAN, doc="True if any file has a nan partition value"),
    NestedField(510, "lower_bound", BINARY, doc="Partition lower bound for all files"),
    NestedField(511, "upper_bound", BINARY, doc="Partition upper bound for all files"),
)
PARTITION_SUMMARIES = NestedField(
    507, "partitions", ListType(508, PARTITION_SUMMARY), doc="Summary for each partition"
)
MANIFEST_KEY_METADATA = NestedField(
    519, "key_metadata", BINARY, doc="Encryption key metadata blob"
)
MANIFEST_FIRST_ROW_ID = NestedField(
    520, "first_row_id", LONG, doc="Starting row ID to assign to new rows in ADDED data files"
)


def _required(f: NestedField) -> NestedField:
    return NestedField(f.field_id, f.name, f.field_type, True, f.doc)


def partition_summary_type() -> StructType:
    return PARTITION_SUMMARY


def manifest_file_type(format_version: int) -> StructType:
    """The ``manifest_file`` struct of a manifest list, field order as Java writes it."""
    if format_version == 1:
        return StructType(
            MANIFEST_PATH, MANIFEST_LENGTH, SPEC_ID, ADDED_SNAPSHOT_ID, ADDED_FILES_COUNT,
            EXISTING_FILES_COUNT, DELETED_FILES_COUNT, PARTITION_SUMMARIES, ADDED_ROWS_COUNT,
            EXISTING_ROWS_COUNT, DELETED_ROWS_COUNT, MANIFEST_KEY_METADATA,
        )
    fields = [
        MANIFEST_PATH, MANIFEST_LENGTH, SPEC_ID,
        *map(_required, (
            MANIFEST_CONTENT, MANIFEST_SEQUENCE_NUMBER, MIN_SEQUENCE_NUMBER, ADDED_SNAPSHOT_ID,
            ADDED_FILES_COUNT, EXISTING_FILES_COUNT, DELETED_FILES_COUNT, ADDED_ROWS_COUNT,
            EXISTING_ROWS_COUNT, DELETED_ROWS_COUNT,
        )),
        PARTITION_SUMMARIES, MANIFEST_KEY_METADATA,
    ]
    if format_version == 2:
        return StructType(*fields)
    if format_version == 3:
        return StructType(*fields, MANIFEST_FIRST_ROW_ID)
    raise ValidationError(f"no manifest list schema for format version {format_version}")


def data_file_type(format_version: int, partition_type: StructType) -> StructType:
    """The ``data_file`` struct for a partition type, field order as Java writes it."""
    if format_version == 1:
        # V1Metadata writes the partition field without a doc
        partition = NestedField(PARTITION_ID, PARTITION_NAME, partition_type, True)
        return StructType(
            FILE_PATH, FILE_FORMAT, partition, RECORD_COUNT, FILE_SIZE, BLOCK_SIZE,
            COLUMN_SIZES, VALUE_COUNTS, NULL_VALUE_COUNTS, NAN_VALUE_COUNTS, LOWER_BOUNDS,
            UPPER_BOUNDS, KEY_METADATA, SPLIT_OFFSETS, SORT_ORDER_ID,
        )
    partition = NestedField(PARTITION_ID, PARTITION_NAME, partition_type, True, PARTITION_DOC)
    fields = [
        _required(CONTENT), FILE_PATH, FILE_FORMAT, partition, RECORD_COUNT, FILE_SIZE,
        COLUMN_SIZES, VALUE_COUNTS, NULL_VALUE_COUNTS, NAN_VALUE_COUNTS, LOWER_BOUNDS,
        UPPER_BOUNDS, KEY_METADATA, SPLIT_OFFSETS, EQUALITY_IDS, SORT_ORDER_ID,
    ]
    if format_version == 2:
        return StructType(*fields, REFERENCED_DATA_FILE)
    if format_version == 3:
        return StructType(
            *fields, FIRST_ROW_ID, REFERENCED_DATA_FILE, CONTENT_OFFSET, CONTENT_SIZE
        )
    raise ValidationError(f"no manifest schema for format version {format_version}")


def manifest_entry_type(format_version: int, partition_type: StructType) -> StructType:
    """The ``manifest_entry`` struct of a manifest written with a partition type."""
    data_file = NestedField(
        DATA_FILE_ID, "data_file", data_file_type(format_version, partition_type), True
    )
    if format_version == 1:
        # Java writes snapshot_id as optional in v1 too, although the spec says required
        return StructType(STATUS, SNAPSHOT_ID, data_file)
    return StructType(STATUS, SNAPSHOT_ID, SEQUENCE_NUMBER, FILE_SEQUENCE_NUMBER, data_file)


# -- Iceberg type -> Avro JSON (Java's TypeToSchema) ----------------------------------------


def decimal_required_bytes(precision: int) -> int:
    """The fewest bytes whose two's complement holds every unscaled value of ``precision``."""
    if not 0 < precision <= 40:
        raise ValidationError(f"unsupported decimal precision {precision}")
    n = 1
    while 2 ** (8 * n - 1) - 1 < 10**precision - 1:
        n += 1
    return n


def _valid_first(c: str) -> bool:
    return c.isalpha() or c == "_"


def _valid_rest(c: str) -> bool:
    return c.isalnum() or c == "_"


def avro_name(name: str) -> str:
    """Java's ``AvroSchemaUtil.sanitize``: ``_x2D`` for ``-``, ``_1`` for a leading ``1``."""
    if name and _valid_first(name[0]) and all(_valid_rest(c) for c in name[1:]):
        return name
    out = []
    for i, c in enumerate(name):
        ok = _valid_first(c) if i == 0 else _valid_rest(c)
        if ok:
            out.append(c)
        elif c.isdigit():
            out.append("_" + c)
        else:
            out.append(f"_x{ord(c):X}")
    return "".join(out)


class _AvroConverter:
    """Converts one Iceberg struct to Avro JSON; named types are emitted once per schema."""

    def __init__(self) -> None:
        self._defined: set[str] = set()

    def _named(self, name: str, schema: dict[str, Any]) -> Any:
        if name in self._defined:
            return name
        self._defined.add(name)
        return schema

    def struct(self, struct: StructType, record_name: str) -> dict[str, Any]:
        fields = []
        for f in struct.fields:
            avro_type = self.type(f.field_type, f.field_id)
            name = avro_name(f.name)
            field: dict[str, Any] = {"name": name}
            if f.required:
                field["type"] = avro_type
            else:
                field["type"] = ["null", avro_type]
            if f.doc is not None:
                field["doc"] = f.doc
            if not f.required:
                field["default"] = None
            if name != f.name:
                field["iceberg-field-name"] = f.name
            field["field-id"] = f.field_id
            fields.append(field)
        return {"type": "record", "name": record_name, "fields": fields}

    def type(self, t: IcebergType, field_id: int) -> Any:
        if isinstance(t, StructType):
            return self.struct(t, f"r{field_id}")
        if isinstance(t, ListType):
            element = self.type(t.element_type, t.element_id)
            if not t.element_required:
                element = ["null", element]
            return {"type": "array", "items": element, "element-id": t.element_id}
        if isinstance(t, MapType):
            key = self.type(t.key_type, t.key_id)
            value = self.type(t.value_type, t.value_id)
            if not t.value_required:
                value = ["null", value]
            if isinstance(t.key_type, StringType):
                return {"type": "map", "values": value, "key-id": t.key_id,
                        "value-id": t.value_id}
            value_field: dict[str, Any] = {"name": "value", "type": value}
            if not t.value_required:
                value_field["default"] = None
            value_field["field-id"] = t.value_id
            return {
                "type": "array",
                "items": {
                    "type": "record",
                    "name": f"k{t.key_id}_v{t.value_id}",
                    "fields": [{"name": "key", "type": key, "field-id": t.key_id}, value_field],
                },
                "logicalType": "map",
            }
        return self.primitive(t)

    def primitive(self, t: IcebergType) -> Any:
        if isinstance(t, BooleanType):
            return "boolean"
        if isinstance(t, IntegerType):
            return "int"
        if isinstance(t, LongType):
            return "long"
        if isinstance(t, FloatType):
            return "float"
        if isinstance(t, DoubleType):
            return "double"
        if isinstance(t, DateType):
            return {"type": "int", "logicalType": "date"}
        if isinstance(t, TimeType):
            return {"type": "long", "logicalType": "time-micros"}
        if isinstance(t, (TimestampType, TimestamptzType)):
            return {"type": "long", "logicalType": "timestamp-micros",
                    "adjust-to-utc": isinstance(t, TimestamptzType)}
        if isinstance(t, (TimestampNanoType, TimestamptzNanoType)):
            return {"type": "long", "logicalType": "timestamp-nanos",
                    "adjust-to-utc": isinstance(t, TimestamptzNanoType)}
        if isinstance(t, StringType):
            return "string"
        if isinstance(t, BinaryType):
            return "bytes"
        if isinstance(t, UUIDType):
            return self._named("uuid_fixed", {"type": "fixed", "name": "uuid_fixed", "size": 16,
                                              "logicalType": "uuid"})
        if isinstance(t, FixedType):
            name = f"fixed_{t.length}"
            return self._named(name, {"type": "fixed", "name": name, "size": t.length})
        if isinstance(t, DecimalType):
            name = f"decimal_{t.precision}_{t.scale}"
            return self._named(name, {
                "type": "fixed", "name": name, "size": decimal_required_bytes(t.precision),
                "logicalType": "decimal", "precision": t.precision, "scale": t.scale,
            })
        if isinstance(t, UnknownType):
            return "null"
        raise ValidationError(f"type {t} cannot be stored in a manifest")


def to_avro_schema(struct: StructType, record_name: str) -> dict[str, Any]:
    """The Avro schema JSON (as a dict) of an Iceberg struct, named like Java names it."""
    return _AvroConverter().struct(struct, record_name)
