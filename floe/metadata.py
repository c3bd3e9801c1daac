"""Table metadata files (spec "Table Metadata", "Table Metadata Fields", Appendix C).

:func:`parse_metadata` reads format versions 1 to 3 (v3 read-tolerant) and turns every problem
into :class:`floe.errors.MetadataError` naming the file. :func:`metadata_to_json` writes the
fields Iceberg Java's ``TableMetadataParser`` writes for the table's version, in its order,
so that ``parse → write → parse`` gives an equal object. Keys floe does not know are kept in
:attr:`TableMetadata.extra` and written back.
"""

from __future__ import annotations

import functools
import json
import uuid
import weakref
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from floe.avro import MAX_INFLATE_RATIO, MIN_INFLATE_LIMIT, AvroCorrupt, inflate
from floe.clock import now_ms
from floe.errors import FloeError, MetadataError, UnsupportedFormatVersion, ValidationError
from floe.partitioning import PARTITION_FIELD_ID_START, PartitionField, PartitionSpec
from floe.schema import Schema, assign_fresh_type_ids
from floe.snapshots import (
    INITIAL_SEQUENCE_NUMBER,
    MAIN_BRANCH,
    MetadataLogEntry,
    PartitionStatisticsFile,
    Snapshot,
    SnapshotLogEntry,
    SnapshotRef,
    SnapshotRefType,
    StatisticsFile,
)
from floe.sorting import (
    INITIAL_SORT_ORDER_ID,
    UNSORTED_SORT_ORDER,
    SortField,
    SortOrder,
)
from floe.types import StructType

__all__ = [
    "DEFAULT_FORMAT_VERSION",
    "HISTORY_TOLERANCE_MS",
    "METADATA_DIR",
    "VERSION_HINT",
    "RESERVED_PROPERTIES",
    "SUPPORTED_FORMAT_VERSIONS",
    "TableMetadata",
    "assign_fresh_ids",
    "check_history_order",
    "metadata_from_json",
    "metadata_text",
    "metadata_to_json",
    "new_table_metadata",
    "partition_type_for",
    "parse_metadata",
    "serialize_metadata",
    "metadata_file_location",
    "version_hint_location",
]

SUPPORTED_FORMAT_VERSIONS = (1, 2, 3)
DEFAULT_FORMAT_VERSION = 2
#: Java ``TableProperties.RESERVED_PROPERTIES``: used at create time, never persisted.
RESERVED_PROPERTIES = frozenset({
    "format-version", "uuid", "snapshot-count", "current-snapshot-id",
    "current-snapshot-summary", "current-snapshot-timestamp-ms", "current-schema",
    "default-partition-spec", "default-sort-order",
})
#: Java sets this for every new table since 1.4.0 (``PARQUET_COMPRESSION_DEFAULT_SINCE_1_4_0``).
_NEW_TABLE_DEFAULTS = {"write.parquet.compression-codec": "zstd"}
_GZIP_MAGIC = b"\x1f\x8b"

# Spec "Table Metadata Fields" / Appendix C keys, in the order Java writes them.
FORMAT_VERSION = "format-version"
TABLE_UUID = "table-uuid"
LOCATION = "location"
LAST_SEQUENCE_NUMBER = "last-sequence-number"
LAST_UPDATED_MS = "last-updated-ms"
LAST_COLUMN_ID = "last-column-id"
SCHEMA = "schema"
CURRENT_SCHEMA_ID = "current-schema-id"
SCHEMAS = "schemas"
PARTITION_SPEC = "partition-spec"
DEFAULT_SPEC_ID = "default-spec-id"
PARTITION_SPECS = "partition-specs"
LAST_PARTITION_ID = "last-partition-id"
DEFAULT_SORT_ORDER_ID = "default-sort-order-id"
SORT_ORDERS = "sort-orders"
PROPERTIES = "properties"
CURRENT_SNAPSHOT_ID = "current-snapshot-id"
NEXT_ROW_ID = "next-row-id"
ENCRYPTION_KEYS = "encryption-keys"
REFS = "refs"
SNAPSHOTS = "snapshots"
STATISTICS = "statistics"
PARTITION_STATISTICS = "partition-statistics"
SNAPSHOT_LOG = "snapshot-log"
METADATA_LOG = "metadata-log"

_KNOWN_KEYS = frozenset({
    FORMAT_VERSION, TABLE_UUID, LOCATION, LAST_SEQUENCE_NUMBER, LAST_UPDATED_MS,
    LAST_COLUMN_ID, SCHEMA, CURRENT_SCHEMA_ID, SCHEMAS, PARTITION_SPEC, DEFAULT_SPEC_ID,
    PARTITION_SPECS, LAST_PARTITION_ID, DEFAULT_SORT_ORDER_ID, SORT_ORDERS, PROPERTIES,
    CURRENT_SNAPSHOT_ID, NEXT_ROW_ID, ENCRYPTION_KEYS, REFS, SNAPSHOTS, STATISTICS,
    PARTITION_STATISTICS, SNAPSHOT_LOG, METADATA_LOG,
})


@dataclass(frozen=True)
class TableMetadata:
    """Spec "Table Metadata Fields": everything a metadata file records.

    ``current_snapshot_id`` is None when the table has no current snapshot (files write -1
    for v1/v2, null for v3). ``table_uuid`` may be None only for v1 files that lack it.
    ``encryption_keys`` (v3) are kept as raw JSON objects; ``extra`` holds unknown keys.
    Change it with :func:`dataclasses.replace`.
    """

    format_version: int
    table_uuid: str | None
    location: str
    last_sequence_number: int
    last_updated_ms: int
    last_column_id: int
    schemas: tuple[Schema, ...]
    current_schema_id: int
    partition_specs: tuple[PartitionSpec, ...]
    default_spec_id: int
    last_partition_id: int
    properties: dict[str, str] = field(default_factory=dict)
    current_snapshot_id: int | None = None
    snapshots: tuple[Snapshot, ...] = ()
    snapshot_log: tuple[SnapshotLogEntry, ...] = ()
    metadata_log: tuple[MetadataLogEntry, ...] = ()
    sort_orders: tuple[SortOrder, ...] = (UNSORTED_SORT_ORDER,)
    default_sort_order_id: int = 0
    refs: dict[str, SnapshotRef] = field(default_factory=dict)
    statistics: tuple[StatisticsFile, ...] = ()
    partition_statistics: tuple[PartitionStatisticsFile, ...] = ()
    next_row_id: int | None = None
    encryption_keys: tuple[dict[str, Any], ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    # -- schemas, specs, orders -------------------------------------------------------------

    def schema(self) -> Schema:
        """The current schema."""
        s = self.schema_by_id(self.current_schema_id)
        if s is None:
            raise ValidationError(f"current schema {self.current_schema_id} is not in schemas")
        return s

    def schema_by_id(self, schema_id: int) -> Schema | None:
        return next((s for s in self.schemas if s.schema_id == schema_id), None)

    def spec(self) -> PartitionSpec:
        """The default partition spec (new data is written with it)."""
        s = self.spec_by_id(self.default_spec_id)
        if s is None:
            raise ValidationError(f"default spec {self.default_spec_id} is not in partition-specs")
        return s

    def spec_by_id(self, spec_id: int) -> PartitionSpec | None:
        return next((s for s in self.partition_specs if s.spec_id == spec_id), None)

    def sort_order(self) -> SortOrder:
        """The default sort order."""
        o = self.sort_order_by_id(self.default_sort_order_id)
        if o is None:
            raise ValidationError(
                f"default sort order {self.default_sort_order_id} is not in sort-orders"
            )
        return o

    def sort_order_by_id(self, order_id: int) -> SortOrder | None:
        return next((o for o in self.sort_orders if o.order_id == order_id), None)

    # -- snapshots --------------------------------------------------------------------------

    def snapshot_by_id(self, snapshot_id: int) -> Snapshot | None:
        return self._snapshots_by_id.get(snapshot_id)

    @functools.cached_property
    def _snapshots_by_id(self) -> dict[int, Snapshot]:
        """Snapshots by id, built on first lookup (metadata never changes: a change makes a
        new instance). Per-entry lookups in a table of 10k snapshots made scans crawl."""
        by_id: dict[int, Snapshot] = {}
        for s in self.snapshots:
            by_id.setdefault(s.snapshot_id, s)  # the first of duplicated ids, as a scan would
        return by_id

    def current_snapshot(self) -> Snapshot | None:
        if self.current_snapshot_id is None:
            return None
        return self.snapshot_by_id(self.current_snapshot_id)

    def snapshot_by_ref(self, name: str) -> Snapshot | None:
        """The snapshot a branch or tag points to (None when there is no such ref)."""
        ref = self.refs.get(name)
        if ref is None:
            if name == MAIN_BRANCH:
                return self.current_snapshot()
            return None
        return self.snapshot_by_id(ref.snapshot_id)

    def snapshot_as_of(self, timestamp_ms: int) -> Snapshot | None:
        """The snapshot that was current at ``timestamp_ms``, from the ``snapshot-log``.

        None when the table had no current snapshot yet at that time.
        """
        found: int | None = None
        for entry in self.snapshot_log:
            if entry.timestamp_ms <= timestamp_ms:
                found = entry.snapshot_id
        return None if found is None else self.snapshot_by_id(found)

    def ancestors_of(self, snapshot_id: int) -> Iterator[Snapshot]:
        """The snapshot and its parents, newest first, until a parent is missing (expired)."""
        seen: set[int] = set()
        snap = self.snapshot_by_id(snapshot_id)
        while snap is not None and snap.snapshot_id not in seen:
            yield snap
            seen.add(snap.snapshot_id)
            if snap.parent_snapshot_id is None:
                return
            snap = self.snapshot_by_id(snap.parent_snapshot_id)

    def next_sequence_number(self) -> int:
        """Spec "Sequence Numbers": v1 always uses 0."""
        if self.format_version == 1:
            return INITIAL_SEQUENCE_NUMBER
        return self.last_sequence_number + 1

    def property(self, key: str, default: str | None = None) -> str | None:
        return self.properties.get(key, default)


# -- reading --------------------------------------------------------------------------------


class _Problem(Exception):
    """Internal: a readable problem, turned into MetadataError(location, problem)."""


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _int(o: Mapping[str, Any], key: str) -> int:
    if key not in o:
        raise _Problem(f"missing required field {key!r}")
    v = o[key]
    if not _is_int(v):
        raise _Problem(f"{key!r} must be an integer, got {v!r:.100}")
    return int(v)


def _opt_int(o: Mapping[str, Any], key: str) -> int | None:
    return None if o.get(key) is None else _int(o, key)


def _array(o: Mapping[str, Any], key: str) -> list[Any]:
    v = o.get(key)
    if not isinstance(v, list):
        raise _Problem(f"{key!r} must be an array, got {v!r:.100}")
    return v


def _decode(data: bytes, location: str) -> Any:
    if data[:2] == _GZIP_MAGIC:
        try:  # bounded: a gzip bomb stops at the limit (floe.avro.inflate)
            data = inflate(data, 16 + zlib.MAX_WBITS,
                           max(MIN_INFLATE_LIMIT, MAX_INFLATE_RATIO * len(data)))
        except (AvroCorrupt, zlib.error) as e:
            raise MetadataError(location, f"cannot decompress gzip metadata: {e}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise MetadataError(location, f"metadata is not UTF-8 text ({e})") from None
    if not text.strip():
        raise MetadataError(location, "metadata file is empty")
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise MetadataError(
            location, f"malformed JSON at line {e.lineno} column {e.colno}: {e.msg}"
        ) from None
    except ValueError as e:  # a number of more digits than Python converts
        raise MetadataError(location, f"malformed JSON: {e}") from None
    except RecursionError:
        raise MetadataError(location, "malformed JSON: nested too deeply") from None


def parse_metadata(data: bytes, location: str) -> TableMetadata:
    """Parse a table metadata file's bytes (gzip detected by its magic bytes).

    Raises :class:`UnsupportedFormatVersion` for a format version above 3 and
    :class:`MetadataError` (message starting with ``location``) for anything malformed.
    """
    return metadata_from_json(_decode(data, location), location)


def metadata_from_json(doc: Any, location: str) -> TableMetadata:
    """:func:`parse_metadata` of a decoded JSON document (the ``metadata`` of a REST
    catalog's answer), with the same checks and errors."""
    if not isinstance(doc, dict):
        raise MetadataError(
            location, f"table metadata must be a JSON object, got {type(doc).__name__}"
        )
    try:
        version = _int(doc, FORMAT_VERSION)
    except _Problem as e:
        raise MetadataError(location, str(e)) from None
    if version > max(SUPPORTED_FORMAT_VERSIONS):
        raise UnsupportedFormatVersion(
            location, f"format version {version} is not supported (floe reads 1-3)"
        )
    if version < 1:
        raise UnsupportedFormatVersion(location, f"format version {version} is not valid")
    try:
        return _from_json(doc, version)
    except _Problem as e:
        raise MetadataError(location, str(e)) from None
    except FloeError as e:
        raise MetadataError(location, str(e)) from None
    except (KeyError, TypeError, ValueError, AttributeError) as e:  # last-resort net
        raise MetadataError(location, f"invalid table metadata: {type(e).__name__}: {e}") from None


def _from_json(doc: dict[str, Any], version: int) -> TableMetadata:
    """Java ``TableMetadataParser.fromJson`` rules: v1 fallbacks, v2+ required fields."""
    table_uuid = doc.get(TABLE_UUID)
    if table_uuid is not None and not isinstance(table_uuid, str):
        raise _Problem(f"{TABLE_UUID!r} must be a string")
    if table_uuid is None and version > 1:
        raise _Problem(f"missing required field {TABLE_UUID!r} (required in v{version})")
    location = doc.get(LOCATION)
    if not isinstance(location, str):
        raise _Problem(f"missing required string field {LOCATION!r}")
    last_sequence_number = (
        _int(doc, LAST_SEQUENCE_NUMBER) if version > 1 else INITIAL_SEQUENCE_NUMBER
    )
    last_updated_ms = _int(doc, LAST_UPDATED_MS)
    last_column_id = _int(doc, LAST_COLUMN_ID)

    # Schemas: v1 writers before "schemas" existed wrote only "schema".
    if SCHEMAS in doc:
        schemas = tuple(Schema.from_json(s) for s in _array(doc, SCHEMAS))
        current_schema_id = _int(doc, CURRENT_SCHEMA_ID)
        if not any(s.schema_id == current_schema_id for s in schemas):
            raise _Problem(f"current-schema-id {current_schema_id} is not in 'schemas'")
    elif version == 1:
        if SCHEMA not in doc:
            raise _Problem(f"missing required field {SCHEMAS!r} (or v1 {SCHEMA!r})")
        schema = Schema.from_json(doc[SCHEMA])
        schemas, current_schema_id = (schema,), schema.schema_id
    else:
        raise _Problem(f"missing required field {SCHEMAS!r} (required in v{version})")

    if PARTITION_SPECS in doc:
        specs = tuple(PartitionSpec.from_json(s) for s in _array(doc, PARTITION_SPECS))
        default_spec_id = _int(doc, DEFAULT_SPEC_ID)
        if not any(s.spec_id == default_spec_id for s in specs):
            raise _Problem(f"default-spec-id {default_spec_id} is not in 'partition-specs'")
    elif version == 1:
        if not isinstance(doc.get(PARTITION_SPEC), list):
            raise _Problem(f"missing required field {PARTITION_SPECS!r} (or v1 {PARTITION_SPEC!r})")
        specs = (PartitionSpec.from_json_fields(doc[PARTITION_SPEC], spec_id=0),)
        default_spec_id = 0
    else:
        raise _Problem(f"missing required field {PARTITION_SPECS!r} (required in v{version})")

    last_partition_id = _opt_int(doc, LAST_PARTITION_ID)
    if last_partition_id is None:
        if version > 1:
            raise _Problem(f"missing required field {LAST_PARTITION_ID!r}")
        last_partition_id = max(s.last_assigned_field_id for s in specs)

    if SORT_ORDERS in doc:
        sort_orders = tuple(SortOrder.from_json(o) for o in _array(doc, SORT_ORDERS))
        default_sort_order_id = _int(doc, DEFAULT_SORT_ORDER_ID)
        if not any(o.order_id == default_sort_order_id for o in sort_orders):
            raise _Problem(f"default-sort-order-id {default_sort_order_id} is not in 'sort-orders'")
    elif version == 1:
        sort_orders, default_sort_order_id = (UNSORTED_SORT_ORDER,), 0
    else:
        raise _Problem(f"missing required field {SORT_ORDERS!r} (required in v{version})")

    properties = doc.get(PROPERTIES) or {}
    if not isinstance(properties, dict):
        raise _Problem(f"{PROPERTIES!r} must be an object")
    # Java reads every property as a string; numbers and booleans written by other tools
    # become their JSON text.
    properties = {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in properties.items()}

    # -1 is Java's "no current snapshot" in v1/v2 files; v3 writes null.
    current_snapshot_id = _opt_int(doc, CURRENT_SNAPSHOT_ID)
    if current_snapshot_id == -1:
        current_snapshot_id = None

    snapshots = tuple(Snapshot.from_json(s) for s in _array(doc, SNAPSHOTS)) \
        if SNAPSHOTS in doc else ()
    by_id = {s.snapshot_id: s for s in snapshots}
    if len(by_id) != len(snapshots):
        raise _Problem("two snapshots have the same snapshot-id")
    if current_snapshot_id is not None and current_snapshot_id not in by_id:
        raise _Problem(f"current-snapshot-id {current_snapshot_id} is not in 'snapshots'")

    if REFS in doc:
        raw_refs = doc[REFS]
        if not isinstance(raw_refs, dict):
            raise _Problem(f"{REFS!r} must be an object")
        refs = {name: SnapshotRef.from_json(r, name) for name, r in raw_refs.items()}
    elif current_snapshot_id is not None:
        # Written before refs existed: the main branch is implied by current-snapshot-id.
        refs = {MAIN_BRANCH: SnapshotRef(current_snapshot_id, SnapshotRefType.BRANCH)}
    else:
        refs = {}
    for name, ref in refs.items():
        if ref.snapshot_id not in by_id:
            raise _Problem(f"ref {name!r} points to unknown snapshot {ref.snapshot_id}")
    main = refs.get(MAIN_BRANCH)
    if main is not None and main.snapshot_id != current_snapshot_id:
        raise _Problem(
            f"current-snapshot-id {current_snapshot_id} does not match the main branch "
            f"({main.snapshot_id})"
        )

    statistics = tuple(StatisticsFile.from_json(s) for s in _array(doc, STATISTICS)) \
        if doc.get(STATISTICS) is not None else ()
    partition_statistics = (
        tuple(PartitionStatisticsFile.from_json(s) for s in _array(doc, PARTITION_STATISTICS))
        if doc.get(PARTITION_STATISTICS) is not None else ()
    )
    snapshot_log = tuple(SnapshotLogEntry.from_json(e) for e in _array(doc, SNAPSHOT_LOG)) \
        if doc.get(SNAPSHOT_LOG) is not None else ()
    metadata_log = tuple(MetadataLogEntry.from_json(e) for e in _array(doc, METADATA_LOG)) \
        if doc.get(METADATA_LOG) is not None else ()

    next_row_id = _int(doc, NEXT_ROW_ID) if version >= 3 else None
    encryption_keys: tuple[dict[str, Any], ...] = ()
    if doc.get(ENCRYPTION_KEYS) is not None:
        keys = _array(doc, ENCRYPTION_KEYS)
        if not all(isinstance(k, dict) for k in keys):
            raise _Problem(f"{ENCRYPTION_KEYS!r} must be an array of objects")
        encryption_keys = tuple(keys)

    return TableMetadata(
        format_version=version,
        table_uuid=table_uuid.lower() if table_uuid is not None else None,
        location=location,
        last_sequence_number=last_sequence_number,
        last_updated_ms=last_updated_ms,
        last_column_id=last_column_id,
        schemas=schemas,
        current_schema_id=current_schema_id,
        partition_specs=specs,
        default_spec_id=default_spec_id,
        last_partition_id=last_partition_id,
        properties=properties,
        current_snapshot_id=current_snapshot_id,
        snapshots=snapshots,
        snapshot_log=snapshot_log,
        metadata_log=metadata_log,
        sort_orders=sort_orders,
        default_sort_order_id=default_sort_order_id,
        refs=refs,
        statistics=statistics,
        partition_statistics=partition_statistics,
        next_row_id=next_row_id,
        encryption_keys=encryption_keys,
        extra={k: v for k, v in doc.items() if k not in _KNOWN_KEYS},
    )


# -- writing --------------------------------------------------------------------------------


def metadata_to_json(md: TableMetadata) -> dict[str, Any]:
    """The JSON object Java's ``TableMetadataParser.toJson`` writes, in the same key order.

    v1 also writes the current ``schema`` and the default spec's fields as ``partition-spec``
    for old readers, and no ``last-sequence-number``; v3 writes ``next-row-id`` and a null
    ``current-snapshot-id`` when there is none (v1/v2 write -1).
    """
    v = md.format_version
    out: dict[str, Any] = {FORMAT_VERSION: v}
    if md.table_uuid is not None:
        out[TABLE_UUID] = md.table_uuid
    out[LOCATION] = md.location
    if v > 1:
        out[LAST_SEQUENCE_NUMBER] = md.last_sequence_number
    out[LAST_UPDATED_MS] = md.last_updated_ms
    out[LAST_COLUMN_ID] = md.last_column_id
    if v == 1:
        out[SCHEMA] = md.schema().to_json()
    out[CURRENT_SCHEMA_ID] = md.current_schema_id
    out[SCHEMAS] = [s.to_json() for s in md.schemas]
    if v == 1:
        out[PARTITION_SPEC] = md.spec().fields_to_json()
    out[DEFAULT_SPEC_ID] = md.default_spec_id
    out[PARTITION_SPECS] = [s.to_json() for s in md.partition_specs]
    out[LAST_PARTITION_ID] = md.last_partition_id
    out[DEFAULT_SORT_ORDER_ID] = md.default_sort_order_id
    out[SORT_ORDERS] = [o.to_json() for o in md.sort_orders]
    out[PROPERTIES] = dict(md.properties)
    if md.current_snapshot_id is not None:
        out[CURRENT_SNAPSHOT_ID] = md.current_snapshot_id
    else:
        out[CURRENT_SNAPSHOT_ID] = None if v >= 3 else -1
    if v >= 3:
        out[NEXT_ROW_ID] = md.next_row_id if md.next_row_id is not None else 0
    if md.encryption_keys:
        out[ENCRYPTION_KEYS] = [dict(k) for k in md.encryption_keys]
    out[REFS] = {name: ref.to_json() for name, ref in md.refs.items()}
    out[SNAPSHOTS] = [s.to_json() for s in md.snapshots]
    out[STATISTICS] = [s.to_json() for s in md.statistics]
    out[PARTITION_STATISTICS] = [s.to_json() for s in md.partition_statistics]
    out[SNAPSHOT_LOG] = [e.to_json() for e in md.snapshot_log]
    out[METADATA_LOG] = [e.to_json() for e in md.metadata_log]
    for key, value in md.extra.items():
        out.setdefault(key, value)
    return out


def serialize_metadata(md: TableMetadata, compress: bool = False) -> bytes:
    """UTF-8 JSON bytes of :func:`metadata_to_json`, gzip-compressed when ``compress``
    (for ``*.gz.metadata.json`` files). The gzip header has no timestamp, so equal metadata
    gives equal bytes.

    One top-level field per line, and one element per line of a list field (a snapshot, a
    schema, a log entry), each written compactly: as readable as an indented file, but
    every part goes through json's C encoder (``indent`` falls back to its pure-Python
    encoder, several times slower: the cost of every commit of a table with many
    snapshots)."""
    data = metadata_text(md).encode("utf-8")
    if compress:
        import gzip  # only to write gzipped metadata

        return gzip.compress(data, mtime=0)
    return data


#: The metadata encoded last and its text: a commit writes the metadata file, and the REST
#: catalog then answers the same metadata (a CommitTableResponse): one encoding for both. A
#: weak reference, so it never keeps metadata alive; compared by identity.
_last_text: tuple[weakref.ref[TableMetadata], str] | None = None


def metadata_text(md: TableMetadata) -> str:
    """The JSON text of ``md`` as a metadata file holds it (:func:`serialize_metadata`,
    uncompressed); the metadata encoded last is not encoded again."""
    global _last_text
    last = _last_text
    if last is not None and last[0]() is md:
        return last[1]
    text = _layout(metadata_to_json(md))
    _last_text = (weakref.ref(md), text)
    return text


#: One encoder for every part of a metadata file (json.dumps with options makes a new one
#: per call, a cost per snapshot and log entry).
_ENCODER = json.JSONEncoder(ensure_ascii=False)


def _layout(doc: dict[str, Any]) -> str:
    dumps = _ENCODER.encode

    def field(key: str, value: Any) -> str:
        name = dumps(key)
        if isinstance(value, list) and value:
            items = ",\n".join(f"    {dumps(v)}" for v in value)
            return f"  {name}: [\n{items}\n  ]"
        return f"  {name}: {dumps(value)}"

    if not doc:
        return "{}"
    return "{\n" + ",\n".join(field(k, v) for k, v in doc.items()) + "\n}"


# -- new tables -----------------------------------------------------------------------------


def assign_fresh_ids(schema: Schema, schema_id: int = 0) -> Schema:
    """Java ``TypeUtil.assignFreshIds``: renumber every field from 1.

    A struct's own fields are numbered before any of their children (breadth first per
    struct), a list's element and a map's key and value before their nested types.
    Identifier fields are carried over by name.
    """
    counter = [0]

    def next_id() -> int:
        counter[0] += 1
        return counter[0]

    root = assign_fresh_type_ids(StructType(*schema.fields), next_id)
    assert isinstance(root, StructType)
    fresh = Schema(*root.fields, schema_id=schema_id)
    identifier_names = [schema.find_column_name(i) for i in schema.identifier_field_ids]
    identifier_ids = [fresh.find_field_id(n) for n in identifier_names if n is not None]
    return Schema(*fresh.fields, schema_id=schema_id, identifier_field_ids=identifier_ids)


# -- where a file-system table keeps its metadata (spec "File System Tables") ----------------

METADATA_DIR = "metadata"
VERSION_HINT = "version-hint.text"


def version_hint_location(table_location: str) -> str:
    return f"{table_location.rstrip('/')}/{METADATA_DIR}/{VERSION_HINT}"


def metadata_file_location(table_location: str, version: int, compressed: bool = False) -> str:
    """Where a Hadoop table keeps version ``version``: ``metadata/v<N>[.gz].metadata.json``."""
    suffix = ".gz.metadata.json" if compressed else ".metadata.json"
    return f"{table_location.rstrip('/')}/{METADATA_DIR}/v{version}{suffix}"


#: Java ``TableMetadata``: history entries may be this much out of order (clock skew between
#: the machines that commit), no more.
HISTORY_TOLERANCE_MS = 60_000


def check_history_order(md: TableMetadata) -> None:
    """Refuse metadata whose history goes back in time, as Iceberg Java's ``TableMetadata``
    does when it is built or loaded: the snapshot log and the metadata log each sorted, and
    ``last-updated-ms`` not before the last entry of either, all within one minute
    (``HISTORY_TOLERANCE_MS``). Java fails such a commit (it is not retried) and refuses to
    load such a file, so floe never writes one: the usual cause is a committer whose clock
    runs behind the clocks of the table's earlier writers."""
    _check_log_order(md, md.snapshot_log, "snapshot log")
    _check_log_order(md, md.metadata_log, "metadata log")


def _check_log_order(md: TableMetadata,
                     entries: Sequence[SnapshotLogEntry | MetadataLogEntry],
                     what: str) -> None:
    for earlier, later in zip(entries, entries[1:]):
        if later.timestamp_ms - earlier.timestamp_ms < -HISTORY_TOLERANCE_MS:
            raise ValidationError(
                f"{what} goes back in time: an entry at {later.timestamp_ms} follows one at "
                f"{earlier.timestamp_ms}, more than a minute later (Iceberg Java refuses such "
                f"metadata; is a committer's clock behind?)")
    if entries and md.last_updated_ms - entries[-1].timestamp_ms < -HISTORY_TOLERANCE_MS:
        raise ValidationError(
            f"last-updated-ms {md.last_updated_ms} is more than a minute before the last "
            f"{what} entry at {entries[-1].timestamp_ms}: this commit's clock is behind the "
            f"table's history (Iceberg Java refuses such metadata; check the clock of the "
            f"machine that commits)")


def new_table_metadata(
    schema: Schema,
    spec: PartitionSpec,
    sort_order: SortOrder,
    location: str,
    properties: Mapping[str, str] | None = None,
    format_version: int | None = None,
) -> TableMetadata:
    """Java ``TableMetadata.newTableMetadata``: metadata for a table with no snapshots.

    Column ids are reassigned from 1 (:func:`assign_fresh_ids`); the spec gets id 0 and
    partition field ids from 1000, rebound to the new column ids by source column name; the
    sort order gets id 1 (0 when unsorted). ``format_version`` defaults to the
    ``format-version`` property, then to 2. Reserved properties are dropped and Java's
    new-table defaults (``write.parquet.compression-codec=zstd``) are added.
    """
    props = dict(properties or {})
    if format_version is None:
        raw = props.get("format-version", str(DEFAULT_FORMAT_VERSION))
        try:
            format_version = int(raw)
        except ValueError:
            raise ValidationError(f"invalid format-version property {raw!r}") from None
    if format_version not in SUPPORTED_FORMAT_VERSIONS:
        raise ValidationError(
            f"cannot create a table with format version {format_version} "
            f"(supported: {', '.join(map(str, SUPPORTED_FORMAT_VERSIONS))})"
        )
    fresh_schema = assign_fresh_ids(schema, schema_id=0)

    def rebind(source_id: int) -> int:
        name = schema.find_column_name(source_id)
        if name is None:
            raise ValidationError(f"source column id {source_id} is not in the schema")
        return fresh_schema.find_field_id(name)

    part_fields = [
        PartitionField(rebind(f.source_id), PARTITION_FIELD_ID_START + i, f.transform, f.name)
        for i, f in enumerate(spec.fields)
    ]
    fresh_spec = PartitionSpec(*part_fields, spec_id=0)
    if sort_order.is_unsorted:
        fresh_order = UNSORTED_SORT_ORDER
    else:
        fresh_order = SortOrder(
            *(SortField(rebind(f.source_id), f.transform, f.direction, f.null_order)
              for f in sort_order.fields),
            order_id=INITIAL_SORT_ORDER_ID,
        )
    persisted = dict(_NEW_TABLE_DEFAULTS)
    persisted.update((k, v) for k, v in props.items() if k not in RESERVED_PROPERTIES)
    return TableMetadata(
        format_version=format_version,
        table_uuid=str(uuid.uuid4()),
        location=location.rstrip("/") or location,
        last_sequence_number=INITIAL_SEQUENCE_NUMBER,
        last_updated_ms=now_ms(),
        last_column_id=fresh_schema.highest_field_id,
        schemas=(fresh_schema,),
        current_schema_id=0,
        partition_specs=(fresh_spec,),
        default_spec_id=0,
        last_partition_id=fresh_spec.last_assigned_field_id,
        properties=persisted,
        current_snapshot_id=None,
        sort_orders=(fresh_order,),
        default_sort_order_id=fresh_order.order_id,
        next_row_id=0 if format_version >= 3 else None,
    )


def partition_type_for(md: TableMetadata, spec: PartitionSpec) -> StructType:
    """The partition struct of a spec, using the newest schema that has its source columns.

    A partition source column may have been dropped from the current schema; older specs
    still describe old files, so their types come from the schema they were made against.
    """
    schemas = [md.schema()] + sorted(md.schemas, key=lambda s: -s.schema_id)
    for schema in schemas:
        try:
            return spec.partition_type(schema)
        except (ValidationError, KeyError):
            continue
    raise ValidationError(
        f"no schema of table {md.location} has the source columns of spec {spec.spec_id}"
    )
