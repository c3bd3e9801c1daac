"""Manifests and manifest lists (spec "Manifests", "Manifest Lists").

Reading applies the spec's inheritance rules ("Snapshot ID Inheritance", "Sequence Number
Inheritance", "First Row ID Inheritance") and types partition tuples in floe's value
representation (dates, times and timestamps as ints, decimals as ``Decimal``, uuids as
``UUID``). Bounds stay raw Appendix D bytes by field id; :func:`decode_bounds` decodes them.

Performance: a manifest is decoded by :mod:`floe.avro` into tuples, and entries are built
as named tuples straight from them. ``column_sizes``, ``value_counts``, ``null_value_counts``
and ``nan_value_counts`` are decoded on first use (``lazy_stats=True``), since scan planning
reads bounds and partitions, rarely counts. :class:`DataFile` and :class:`ManifestEntry` are
immutable named tuples rather than frozen dataclasses: a reader builds 100k of them per
manifest and tuple construction is several times cheaper; use ``_replace`` to change one.

Writing follows Java's ``ManifestWriter`` / ``ManifestListWriter``: the Avro schemas of
:mod:`floe.avro_schemas`, the same key/value metadata, deflate compression.
"""

from __future__ import annotations

import enum
import io as _io
import json
import math
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from operator import itemgetter
from typing import IO, TYPE_CHECKING, Any, NamedTuple, Protocol

from floe import avro_schemas as S
from floe import stats
from floe.avro import AvroFile, read_avro, write_avro
from floe.conversions import decimal_to_unscaled, unscaled_to_decimal
from floe.errors import MetadataError, NotFound, ValidationError
from floe.schema import Schema
from floe.types import DecimalType, PrimitiveType, StructType, UUIDType

if TYPE_CHECKING:
    from floe.partitioning import PartitionSpec

__all__ = [
    "ManifestContent", "FileContent", "ManifestEntryStatus", "FileFormat",
    "PartitionFieldSummary", "ManifestFile", "DataFile", "ManifestEntry", "ManifestMetadata",
    "read_manifest_list", "read_manifest", "read_manifest_metadata", "decode_bounds",
    "ManifestWriter", "ManifestListWriter", "UNASSIGNED_SEQ", "LAZY_STATS_FIELDS",
]

#: Sequence number of a manifest written but not committed yet (Java's ``UNASSIGNED_SEQ``).
UNASSIGNED_SEQ = -1
#: Stats maps decoded on first use when reading with ``lazy_stats=True``.
LAZY_STATS_FIELDS = frozenset(
    {"column_sizes", "value_counts", "null_value_counts", "nan_value_counts", "lower_bounds",
     "upper_bounds"}
)


class ManifestContent(enum.IntEnum):
    DATA = 0
    DELETES = 1


class FileContent(enum.IntEnum):
    DATA = 0
    POSITION_DELETES = 1
    EQUALITY_DELETES = 2


_CONTENT_NAMES = {0: "data", 1: "position_deletes", 2: "equality_deletes"}


def file_content_name(content: int) -> str:
    """A data file's content as plans, pages and the API name it (``position_deletes``...);
    an unknown value as its number."""
    return _CONTENT_NAMES.get(int(content), str(content))


class ManifestEntryStatus(enum.IntEnum):
    EXISTING = 0
    ADDED = 1
    DELETED = 2


class FileFormat(enum.StrEnum):
    """File format names as Java writes them into manifests (upper case)."""

    AVRO = "AVRO"
    ORC = "ORC"
    PARQUET = "PARQUET"
    PUFFIN = "PUFFIN"


_FORMATS: dict[str, FileFormat] = {
    **{f.value: f for f in FileFormat}, **{f.value.lower(): f for f in FileFormat}
}


class IO_(Protocol):
    """What the manifest code needs of :class:`floe.io.FileIO`."""

    def read(self, location: str) -> bytes: ...

    def write(self, location: str, data: bytes, overwrite: bool = False) -> None: ...


@dataclass(frozen=True, slots=True)
class PartitionFieldSummary:
    """Spec ``field_summary``: bounds are Appendix D bytes of the partition field's type."""

    contains_null: bool
    contains_nan: bool | None = None
    lower_bound: bytes | None = None
    upper_bound: bytes | None = None


@dataclass(frozen=True, slots=True)
class ManifestFile:
    """A manifest list entry. v1 lists have no content or sequence numbers: DATA and 0."""

    manifest_path: str
    manifest_length: int
    partition_spec_id: int
    content: ManifestContent = ManifestContent.DATA
    sequence_number: int = 0
    min_sequence_number: int = 0
    added_snapshot_id: int | None = None
    added_files_count: int | None = None
    existing_files_count: int | None = None
    deleted_files_count: int | None = None
    added_rows_count: int | None = None
    existing_rows_count: int | None = None
    deleted_rows_count: int | None = None
    partitions: list[PartitionFieldSummary] | None = None
    key_metadata: bytes | None = None
    first_row_id: int | None = None

    def has_added_files(self) -> bool:
        return self.added_files_count is None or self.added_files_count > 0

    def has_existing_files(self) -> bool:
        return self.existing_files_count is None or self.existing_files_count > 0


class DataFile(NamedTuple):
    """A data or delete file of a manifest entry (spec ``data_file``).

    ``partition`` is a tuple in partition spec order; ``lower_bounds``/``upper_bounds`` map
    field ids to Appendix D bytes; the count maps may be lazy read-only mappings.
    """

    content: FileContent
    file_path: str
    file_format: FileFormat | str
    partition: tuple[Any, ...]
    record_count: int
    file_size_in_bytes: int
    column_sizes: Mapping[int, int] | None = None
    value_counts: Mapping[int, int] | None = None
    null_value_counts: Mapping[int, int] | None = None
    nan_value_counts: Mapping[int, int] | None = None
    lower_bounds: Mapping[int, bytes] | None = None
    upper_bounds: Mapping[int, bytes] | None = None
    key_metadata: bytes | None = None
    split_offsets: list[int] | None = None
    equality_ids: list[int] | None = None
    sort_order_id: int | None = None
    spec_id: int = 0
    first_row_id: int | None = None
    referenced_data_file: str | None = None
    content_offset: int | None = None
    content_size_in_bytes: int | None = None


class ManifestEntry(NamedTuple):
    """Spec ``manifest_entry``; ``sequence_number`` is the data sequence number."""

    status: ManifestEntryStatus
    snapshot_id: int | None
    sequence_number: int | None
    file_sequence_number: int | None
    data_file: DataFile


@dataclass(frozen=True, slots=True)
class ManifestMetadata:
    """The key/value metadata of a manifest file (spec "Manifest Metadata")."""

    schema: dict[str, Any] | None
    schema_id: int | None
    partition_spec: list[dict[str, Any]]
    partition_spec_id: int
    format_version: int
    content: ManifestContent
    raw: dict[str, str] = field(default_factory=dict)


# -- reading ----------------------------------------------------------------------------------


def load_bytes(io: IO_, location: str) -> bytes:
    """The bytes of a manifest or manifest list; :class:`NotFound` when there are none."""
    try:
        return io.read(location)
    except NotFound:
        raise
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        raise NotFound(f"{location}: file does not exist") from None


def _load(io: IO_, location: str, lazy: frozenset[str] = frozenset()) -> AvroFile:
    return read_avro(load_bytes(io, location), location, lazy)


def _field_index(record_schema: dict[str, Any], location: str) -> dict[str, int]:
    """Writer field name → position, also by field id (as ``#<id>``)."""
    fields = record_schema.get("fields")
    if not isinstance(fields, list):
        raise MetadataError(location, "the Avro schema is not a record")
    out: dict[str, int] = {}
    for i, f in enumerate(fields):
        out[str(f.get("iceberg-field-name", f["name"]))] = i
        if "field-id" in f:
            out[f"#{f['field-id']}"] = i
    return out


def _lookup(index: dict[str, int], f: Any) -> int | None:
    i = index.get(f"#{f.field_id}")
    return i if i is not None else index.get(f.name)


def _record_of(field_schema: Any, named: dict[str, Any]) -> dict[str, Any]:
    t = _strip_null(field_schema["type"], named)
    if isinstance(t, dict) and t.get("type") == "array":
        t = _strip_null(t["items"], named)
    if not isinstance(t, dict) or t.get("type") != "record":
        raise ValidationError(f"field {field_schema.get('name')!r} is not a record")
    return t


def _strip_null(t: Any, named: dict[str, Any]) -> Any:
    if isinstance(t, list):
        rest = [b for b in t if b != "null"]
        t = rest[0] if len(rest) == 1 else t
    if isinstance(t, str) and t in named:
        return named[t]
    if isinstance(t, dict) and isinstance(t.get("type"), (dict, list)):
        return _strip_null(t["type"], named)
    return t


def _named_types(schema: Any, out: dict[str, Any]) -> dict[str, Any]:
    if isinstance(schema, list):
        for s in schema:
            _named_types(s, out)
    elif isinstance(schema, dict):
        if schema.get("type") in ("record", "fixed", "enum") and "name" in schema:
            out.setdefault(str(schema["name"]), schema)
            out.setdefault(str(schema["name"]).rsplit(".", 1)[-1], schema)
        for key in ("fields", "items", "values", "type"):
            if key in schema:
                sub = schema[key]
                if key == "fields":
                    for f in sub:
                        _named_types(f.get("type"), out)
                else:
                    _named_types(sub, out)
    return out


#: A manifest list's fields as :class:`ManifestFile` takes them, in this order, and the value
#: a field takes when the list has no such field or holds a null in it (v1 lists: DATA and
#: sequence numbers 0). ``partitions`` (the summaries) comes back as a list of records.
LIST_FIELDS = (
    S.MANIFEST_PATH, S.MANIFEST_LENGTH, S.SPEC_ID, S.MANIFEST_CONTENT,
    S.MANIFEST_SEQUENCE_NUMBER, S.MIN_SEQUENCE_NUMBER, S.ADDED_SNAPSHOT_ID,
    S.ADDED_FILES_COUNT, S.EXISTING_FILES_COUNT, S.DELETED_FILES_COUNT,
    S.ADDED_ROWS_COUNT, S.EXISTING_ROWS_COUNT, S.DELETED_ROWS_COUNT,
    S.PARTITION_SUMMARIES, S.MANIFEST_KEY_METADATA, S.MANIFEST_FIRST_ROW_ID)
LIST_DEFAULTS: tuple[Any, ...] = (None,) * 3 + (0, 0, 0) + (None,) * 10
#: The fields a manifest list must have.
LIST_REQUIRED = (S.MANIFEST_PATH, S.MANIFEST_LENGTH, S.SPEC_ID)


def read_manifest_list(io: IO_, location: str) -> list[ManifestFile]:
    """Spec "Manifest Lists": every manifest of a snapshot, v1 values defaulted.

    The C extension decodes the list when it is built (:func:`floe.avro_native.
    decode_manifest_list`); what it declines is decoded here in Python, the reference."""
    stats.count_read(stats.MANIFEST_LIST)
    data = load_bytes(io, location)
    from floe import avro_native as native  # imports floe.manifest: here, not at the top

    if native.available():
        decoded = native.decode_manifest_list(data, location)
        if decoded is not None:
            return decoded
    f = read_avro(data, location)
    try:
        return _manifest_files(f, location)
    except (ValueError, KeyError, TypeError, IndexError) as e:  # an unknown content too
        raise MetadataError(location, f"not a valid manifest list: {e}") from None


def _manifest_files(f: AvroFile, location: str) -> list[ManifestFile]:
    named = _named_types(f.schema, {})
    idx = _field_index(f.schema, location)
    for required in LIST_REQUIRED:
        if _lookup(idx, required) is None:
            raise MetadataError(location, f"manifest list has no {required.name!r} field")
    summary_getter: Callable[[Any], tuple[Any, ...]] | None = None
    p = _lookup(idx, S.PARTITION_SUMMARIES)
    if p is not None:
        sidx = _field_index(_record_of(f.schema["fields"][p], named), location)
        positions = [_lookup(sidx, sf) for sf in S.PARTITION_SUMMARY.fields]

        def summary_getter(t: Any) -> tuple[Any, ...]:
            return tuple(None if i is None else t[i] for i in positions)

    # each field's position in the records, looked up once (None: not in this list)
    at = [_lookup(idx, nf) for nf in LIST_FIELDS]
    contents = {c.value: c for c in ManifestContent}

    out = []
    for rec in f.records:
        (path, length, spec_id, content, seq, min_seq, snapshot_id, added_files,
         existing_files, deleted_files, added_rows, existing_rows, deleted_rows, parts,
         key_metadata, first_row_id) = [
            d if i is None or rec[i] is None else rec[i]
            for i, d in zip(at, LIST_DEFAULTS, strict=True)]
        out.append(ManifestFile(
            manifest_path=path,
            manifest_length=length,
            partition_spec_id=spec_id,
            content=contents[content] if content in contents else ManifestContent(content),
            sequence_number=seq,
            min_sequence_number=min_seq,
            added_snapshot_id=snapshot_id,
            added_files_count=added_files,
            existing_files_count=existing_files,
            deleted_files_count=deleted_files,
            added_rows_count=added_rows,
            existing_rows_count=existing_rows,
            deleted_rows_count=deleted_rows,
            partitions=None if parts is None or summary_getter is None else [
                PartitionFieldSummary(*summary_getter(s)) for s in parts
            ],
            key_metadata=key_metadata,
            first_row_id=first_row_id,
        ))
    return out


def _metadata(f: AvroFile, location: str) -> ManifestMetadata:
    m = f.metadata
    try:
        schema = json.loads(m["schema"]) if "schema" in m else None
        spec = json.loads(m.get("partition-spec", "[]"))
        if isinstance(spec, dict):  # some writers store the whole spec object
            spec = spec.get("fields", [])
        schema_id = m.get("schema-id")
        return ManifestMetadata(
            schema=schema,
            schema_id=int(schema_id) if schema_id not in (None, "", "null") else (
                schema.get("schema-id") if isinstance(schema, dict) else None),
            partition_spec=spec,
            partition_spec_id=int(m.get("partition-spec-id", 0)),
            format_version=int(m.get("format-version", 1)),
            content=ManifestContent.DELETES if m.get("content") == "deletes"
            else ManifestContent.DATA,
            raw=dict(m),
        )
    except (ValueError, TypeError) as e:
        raise MetadataError(location, f"bad manifest metadata: {e}") from None


def read_manifest_metadata(io: IO_, location: str) -> ManifestMetadata:
    """The key/value metadata of a manifest: schema, partition-spec, format-version, ..."""
    return _metadata(_load(io, location), location)


def _partition_converters(partition_schema: dict[str, Any], named: dict[str, Any]
                          ) -> list[Callable[[Any], Any] | None]:
    """Per partition field: how to turn the raw Avro value into floe's representation."""
    out: list[Callable[[Any], Any] | None] = []
    for f in partition_schema["fields"]:
        t = _strip_null(f["type"], named)
        logical = t.get("logicalType") if isinstance(t, dict) else None
        conv: Callable[[Any], Any] | None = None
        if logical == "decimal":
            scale = int(t.get("scale", 0))

            def conv(b: Any, scale: int = scale) -> Any:
                return unscaled_to_decimal(int.from_bytes(b, "big", signed=True), scale)
        elif logical == "uuid":
            if t.get("type") == "string":
                def conv(s: Any) -> Any:
                    return uuid.UUID(s)
            else:
                def conv(b: Any) -> Any:
                    return uuid.UUID(bytes=bytes(b))
        elif logical in ("timestamp-millis", "time-millis", "local-timestamp-millis"):
            def conv(v: Any) -> Any:
                return v * 1000
        out.append(conv)
    return out


_DATA_FILE_FIELDS = (
    S.CONTENT, S.FILE_PATH, S.FILE_FORMAT, None, S.RECORD_COUNT, S.FILE_SIZE,
    S.COLUMN_SIZES, S.VALUE_COUNTS, S.NULL_VALUE_COUNTS, S.NAN_VALUE_COUNTS,
    S.LOWER_BOUNDS, S.UPPER_BOUNDS, S.KEY_METADATA, S.SPLIT_OFFSETS, S.EQUALITY_IDS,
    S.SORT_ORDER_ID, None, S.FIRST_ROW_ID, S.REFERENCED_DATA_FILE, S.CONTENT_OFFSET,
    S.CONTENT_SIZE,
)
_PARTITION_POS = 3
_SPEC_ID_POS = 16
_FIRST_ROW_ID_POS = 17


def read_manifest(
    io: IO_,
    manifest: ManifestFile,
    *,
    discard_deleted: bool = False,
    lazy_stats: bool = True,
) -> list[ManifestEntry]:
    """Every entry of a manifest, with inherited snapshot ids and sequence numbers.

    Spec "Snapshot ID Inheritance": a null ``snapshot_id`` becomes the manifest's
    ``added_snapshot_id``. "Sequence Number Inheritance": null data and file sequence numbers
    become the manifest's ``sequence_number`` for ADDED entries only, and for every entry
    when that is 0 (v1). Like Java, nothing is inherited from a manifest file that has no
    ``added_snapshot_id`` (one that is not in a manifest list yet).
    """
    location = manifest.manifest_path
    stats.count_read(stats.MANIFEST)
    f = _load(io, location, LAZY_STATS_FIELDS if lazy_stats else frozenset())
    try:
        return _entries(f, manifest, discard_deleted)
    except (ValidationError, KeyError, TypeError, IndexError) as e:
        raise MetadataError(location, f"not a valid manifest: {e}") from None


def _entries(f: AvroFile, manifest: ManifestFile, discard_deleted: bool) -> list[ManifestEntry]:
    location = manifest.manifest_path
    named = _named_types(f.schema, {})
    idx = _field_index(f.schema, location)
    i_status, i_sid = _lookup(idx, S.STATUS), _lookup(idx, S.SNAPSHOT_ID)
    i_seq, i_fseq = _lookup(idx, S.SEQUENCE_NUMBER), _lookup(idx, S.FILE_SEQUENCE_NUMBER)
    i_df = idx.get(f"#{S.DATA_FILE_ID}", idx.get("data_file"))
    if i_status is None or i_df is None:
        raise MetadataError(location, "not a manifest: no 'status' or 'data_file' field")
    df_schema = _record_of(f.schema["fields"][i_df], named)
    didx = _field_index(df_schema, location)
    idx_part = didx.get(f"#{S.PARTITION_ID}", didx.get("partition"))
    if idx_part is None:
        raise MetadataError(location, "data_file has no 'partition' field")
    i_part: int = idx_part
    converters = _partition_converters(_record_of(df_schema["fields"][i_part], named), named)
    convert = any(c is not None for c in converters)

    # DataFile values are picked from the decoded data_file tuple followed by constants
    width = len(df_schema["fields"])
    consts: list[Any] = [None, 0, manifest.partition_spec_id]  # null, DATA, spec id
    positions: list[int] = []
    for pos, nf in enumerate(_DATA_FILE_FIELDS):
        if pos == _PARTITION_POS:
            positions.append(i_part)
        elif pos == _SPEC_ID_POS:
            positions.append(width + 2)
        else:
            assert nf is not None
            i = _lookup(didx, nf)
            positions.append(i if i is not None else width + (1 if nf is S.CONTENT else 0))
    pick = itemgetter(*positions)
    # the usual case (no partition values to convert, no row ids to assign): content and
    # format mapped, the other values taken as they are
    simple = not convert and manifest.first_row_id is None
    pick_head, pick_rest = itemgetter(*positions[:3]), itemgetter(*positions[3:])
    tail = tuple(consts)

    inherit = manifest.added_snapshot_id is not None
    m_sid = manifest.added_snapshot_id
    m_seq = manifest.sequence_number if inherit else None
    next_row_id = manifest.first_row_id
    new_df = tuple.__new__
    formats = _FORMATS
    deleted = ManifestEntryStatus.DELETED
    statuses = {s.value: s for s in ManifestEntryStatus}
    contents = {c.value: c for c in FileContent}

    out: list[ManifestEntry] = []
    append = out.append
    for rec in f.records:
        status = statuses[rec[i_status]]
        if discard_deleted and status is deleted:
            continue
        row = rec[i_df] + tail
        if simple:
            content, path, fmt = pick_head(row)
            data_file = new_df(DataFile, (contents[content], path, formats.get(fmt, fmt))
                               + pick_rest(row))
        else:
            values = list(pick(row))
            values[0] = contents[values[0]]
            values[2] = formats.get(values[2], values[2])
            if convert:
                values[_PARTITION_POS] = tuple(
                    v if c is None or v is None else c(v)
                    for c, v in zip(converters, values[_PARTITION_POS], strict=True)
                )
            if next_row_id is not None and values[0] == 0 and \
                    values[_FIRST_ROW_ID_POS] is None:
                values[_FIRST_ROW_ID_POS] = next_row_id
                next_row_id += values[4]
            data_file = new_df(DataFile, values)
        sid = rec[i_sid] if i_sid is not None else None
        seq = rec[i_seq] if i_seq is not None else None
        fseq = rec[i_fseq] if i_fseq is not None else None
        if inherit:
            if sid is None:
                sid = m_sid
            if seq is None and (m_seq == 0 or status == 1):
                seq = m_seq
            if fseq is None and (m_seq == 0 or status == 1):
                fseq = m_seq
        append(new_df(ManifestEntry, (status, sid, seq, fseq, data_file)))
    return out


def decode_bounds(
    data_file: DataFile, schema: Schema
) -> tuple[dict[int, Any], dict[int, Any]]:
    """Lower and upper bounds by field id, decoded with the schema's types (Appendix D).

    Bounds of field ids the schema does not have, or of non-primitive fields, are left out.
    """
    from floe.conversions import from_bytes

    out: list[dict[int, Any]] = []
    for bounds in (data_file.lower_bounds, data_file.upper_bounds):
        decoded: dict[int, Any] = {}
        for fid, raw in (bounds or {}).items():
            try:
                t = schema.find_type(fid)
            except ValidationError:
                continue
            if isinstance(t, PrimitiveType):
                decoded[fid] = from_bytes(t, raw)
        out.append(decoded)
    return out[0], out[1]


# -- writing ----------------------------------------------------------------------------------


def _unscaled_bytes(value: Decimal, t: DecimalType) -> bytes:
    unscaled = decimal_to_unscaled(value, t.scale)
    return unscaled.to_bytes(S.decimal_required_bytes(t.precision), "big", signed=True)


def _avro_value(t: Any, value: Any) -> Any:
    """Raw Avro value of a partition value (logical types are written undecoded)."""
    if value is None:
        return None
    if isinstance(t, DecimalType):
        return _unscaled_bytes(value, t)
    if isinstance(t, UUIDType):
        return value.bytes if isinstance(value, uuid.UUID) else uuid.UUID(str(value)).bytes
    return value


def _kv(m: Mapping[int, Any] | None) -> list[dict[str, Any]] | None:
    return None if m is None else [{"key": k, "value": v} for k, v in m.items()]


class _Sink:
    """Where a finished Avro file goes: a FileIO location or a binary file object."""

    def __init__(self, target: IO_ | IO[bytes], location: str) -> None:
        self.target = target
        self.location = location

    def put(self, data: bytes) -> None:
        if isinstance(self.target, _io.IOBase):
            self.target.write(data)
        else:
            self.target.write(self.location, data)  # type: ignore[call-overload]


class ManifestWriter:
    """Writes one manifest (Java's ``ManifestWriter``): entries, then :meth:`close`.

    ``add`` records a new file (status ADDED, this writer's snapshot id, sequence numbers
    inherited unless a data sequence number is given), ``existing`` carries a file over
    unchanged, ``delete`` marks it deleted in this snapshot. Formats 1 and 2.
    """

    def __init__(
        self,
        io: IO_ | IO[bytes],
        location: str,
        spec: PartitionSpec,
        schema: Schema,
        format_version: int,
        snapshot_id: int | None,
        content: ManifestContent = ManifestContent.DATA,
        codec: str = "deflate",
    ) -> None:
        if format_version not in (1, 2):
            raise ValidationError(f"cannot write manifests for format version {format_version}")
        if format_version == 1 and content != ManifestContent.DATA:
            raise ValidationError("format version 1 has no delete manifests")
        self._sink = _Sink(io, location)
        self.location = location
        self.spec = spec
        self.schema = schema
        self.format_version = format_version
        self.snapshot_id = snapshot_id
        self.content = ManifestContent(content)
        self.codec = codec
        self._ptype: StructType = spec.partition_type(schema)
        self._pnames = [S.avro_name(f.name) for f in self._ptype.fields]
        self._ptypes = [f.field_type for f in self._ptype.fields]
        self._records: list[dict[str, Any]] = []
        self._counts = {s: [0, 0] for s in ManifestEntryStatus}
        self._min_seq: int | None = None
        self._stats = [_FieldStats(t) for t in self._ptypes]
        self._result: ManifestFile | None = None

    # -- entries ------------------------------------------------------------------------

    def add(self, entry: ManifestEntry | DataFile, sequence_number: int | None = None
            ) -> ManifestWriter:
        if isinstance(entry, ManifestEntry):
            data_file = entry.data_file
            sequence_number = entry.sequence_number
        else:
            data_file = entry
        return self.add_entry(ManifestEntry(
            ManifestEntryStatus.ADDED, self.snapshot_id, sequence_number, None, data_file))

    def existing(self, entry: ManifestEntry) -> ManifestWriter:
        return self.add_entry(entry._replace(status=ManifestEntryStatus.EXISTING))

    def delete(self, entry: ManifestEntry) -> ManifestWriter:
        return self.add_entry(entry._replace(
            status=ManifestEntryStatus.DELETED, snapshot_id=self.snapshot_id))

    def add_entry(self, entry: ManifestEntry) -> ManifestWriter:
        """Write an entry as given (status, snapshot id, sequence numbers)."""
        if self._result is not None:
            raise ValidationError(f"{self.location}: manifest writer is closed")
        status = ManifestEntryStatus(entry.status)
        df = entry.data_file
        if self.format_version >= 2 and entry.sequence_number is None:
            if status != ManifestEntryStatus.ADDED:
                raise ValidationError(
                    "only entries with status ADDED can have a null sequence number")
            if entry.snapshot_id is not None and entry.snapshot_id != self.snapshot_id:
                raise ValidationError(
                    f"found unassigned sequence number for an entry from snapshot "
                    f"{entry.snapshot_id}")
        if len(df.partition) != len(self._ptypes):
            raise ValidationError(
                f"{df.file_path}: partition tuple has {len(df.partition)} values, spec "
                f"{self.spec.spec_id} has {len(self._ptypes)} fields")
        counts = self._counts[status]
        counts[0] += 1
        counts[1] += df.record_count
        if status != ManifestEntryStatus.DELETED and entry.sequence_number is not None:
            if self._min_seq is None or entry.sequence_number < self._min_seq:
                self._min_seq = entry.sequence_number
        for st, v in zip(self._stats, df.partition, strict=True):
            st.update(v)
        self._records.append(self._record(status, entry, df))
        return self

    def _record(self, status: ManifestEntryStatus, entry: ManifestEntry, df: DataFile
                ) -> dict[str, Any]:
        partition = {
            n: _avro_value(t, v)
            for n, t, v in zip(self._pnames, self._ptypes, df.partition, strict=True)
        }
        d: dict[str, Any] = {
            "content": int(df.content), "file_path": df.file_path,
            "file_format": str(df.file_format).upper(), "partition": partition,
            "record_count": df.record_count, "file_size_in_bytes": df.file_size_in_bytes,
            "block_size_in_bytes": S.DEFAULT_BLOCK_SIZE,
            "column_sizes": _kv(df.column_sizes), "value_counts": _kv(df.value_counts),
            "null_value_counts": _kv(df.null_value_counts),
            "nan_value_counts": _kv(df.nan_value_counts),
            "lower_bounds": _kv(df.lower_bounds), "upper_bounds": _kv(df.upper_bounds),
            "key_metadata": df.key_metadata,
            "split_offsets": None if df.split_offsets is None else list(df.split_offsets),
            "equality_ids": None if df.equality_ids is None else list(df.equality_ids),
            "sort_order_id": df.sort_order_id,
            "referenced_data_file": df.referenced_data_file,
        }
        return {
            "status": int(status), "snapshot_id": entry.snapshot_id,
            "sequence_number": entry.sequence_number,
            "file_sequence_number": entry.file_sequence_number, "data_file": d,
        }

    # -- output -------------------------------------------------------------------------

    def _metadata(self) -> dict[str, str]:
        compact = (",", ":")
        meta = {
            "schema": json.dumps(self.schema.to_json(), separators=compact),
            "schema-id": str(self.schema.schema_id),
            "partition-spec": json.dumps(self.spec.fields_to_json(), separators=compact),
            "partition-spec-id": str(self.spec.spec_id),
            "format-version": str(self.format_version),
        }
        if self.format_version >= 2:
            meta["content"] = "deletes" if self.content == ManifestContent.DELETES else "data"
        return meta

    def avro_schema(self) -> dict[str, Any]:
        return S.to_avro_schema(
            S.manifest_entry_type(self.format_version, self._ptype), "manifest_entry")

    def close(self) -> ManifestFile:
        """Write the file and return its manifest list entry (sequence numbers unassigned)."""
        if self._result is not None:
            return self._result
        buf = _io.BytesIO()
        write_avro(buf, self.avro_schema(), self._records, self._metadata(), self.codec)
        data = buf.getvalue()
        self._sink.put(data)
        c = self._counts
        self._result = ManifestFile(
            manifest_path=self.location,
            manifest_length=len(data),
            partition_spec_id=self.spec.spec_id,
            content=self.content,
            sequence_number=UNASSIGNED_SEQ,
            min_sequence_number=self._min_seq if self._min_seq is not None else UNASSIGNED_SEQ,
            added_snapshot_id=self.snapshot_id,
            added_files_count=c[ManifestEntryStatus.ADDED][0],
            existing_files_count=c[ManifestEntryStatus.EXISTING][0],
            deleted_files_count=c[ManifestEntryStatus.DELETED][0],
            added_rows_count=c[ManifestEntryStatus.ADDED][1],
            existing_rows_count=c[ManifestEntryStatus.EXISTING][1],
            deleted_rows_count=c[ManifestEntryStatus.DELETED][1],
            partitions=[s.summary() for s in self._stats],
        )
        self._records = []
        return self._result

    def to_manifest_file(self) -> ManifestFile:
        return self.close()

    def __enter__(self) -> ManifestWriter:
        return self

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        if exc_type is None:
            self.close()


class _FieldStats:
    """Java's ``PartitionSummary``: nulls, NaNs, and min/max of the other values."""

    __slots__ = ("type", "contains_null", "contains_nan", "lower", "upper")

    def __init__(self, t: Any) -> None:
        self.type = t
        self.contains_null = False
        self.contains_nan = False
        self.lower: Any = None
        self.upper: Any = None

    def update(self, v: Any) -> None:
        if v is None:
            self.contains_null = True
        elif isinstance(v, float) and math.isnan(v):
            self.contains_nan = True
        else:
            if self.lower is None or v < self.lower:
                self.lower = v
            if self.upper is None or v > self.upper:
                self.upper = v

    def summary(self) -> PartitionFieldSummary:
        from floe.conversions import to_bytes

        if self.lower is None or not isinstance(self.type, PrimitiveType):
            return PartitionFieldSummary(self.contains_null, self.contains_nan, None, None)
        return PartitionFieldSummary(
            self.contains_null, self.contains_nan,
            to_bytes(self.type, self.lower), to_bytes(self.type, self.upper),
        )


class ManifestListWriter:
    """Writes a snapshot's manifest list (Java's ``ManifestListWriter``), formats 1 and 2.

    In v2, manifests written in this snapshot still carry ``UNASSIGNED_SEQ``; they get the
    snapshot's sequence number here, after checking that they were added by this snapshot.
    """

    def __init__(
        self,
        io: IO_ | IO[bytes],
        location: str,
        format_version: int,
        snapshot_id: int,
        parent_snapshot_id: int | None,
        sequence_number: int | None = None,
        codec: str = "deflate",
    ) -> None:
        if format_version not in (1, 2):
            raise ValidationError(
                f"cannot write manifest lists for format version {format_version}")
        if format_version >= 2 and sequence_number is None:
            raise ValidationError("a v2 manifest list needs the snapshot's sequence number")
        self._sink = _Sink(io, location)
        self.location = location
        self.format_version = format_version
        self.snapshot_id = snapshot_id
        self.parent_snapshot_id = parent_snapshot_id
        self.sequence_number = sequence_number if format_version >= 2 else 0
        self.codec = codec
        self._records: list[dict[str, Any]] = []
        self._closed = False

    def add_manifests(self, manifests: Iterable[ManifestFile]) -> ManifestListWriter:
        for m in manifests:
            self._records.append(self._record(m))
        return self

    def _assigned(self, value: int, m: ManifestFile) -> int:
        if value != UNASSIGNED_SEQ:
            return value
        if m.added_snapshot_id != self.snapshot_id:
            raise ValidationError(
                f"found unassigned sequence number for a manifest from snapshot "
                f"{m.added_snapshot_id}: {m.manifest_path}")
        assert self.sequence_number is not None
        return self.sequence_number

    def _record(self, m: ManifestFile) -> dict[str, Any]:
        if self.format_version == 1 and m.content != ManifestContent.DATA:
            raise ValidationError(f"{m.manifest_path}: a v1 table has no delete manifests")
        d: dict[str, Any] = {
            "manifest_path": m.manifest_path, "manifest_length": m.manifest_length,
            "partition_spec_id": m.partition_spec_id, "content": int(m.content),
            "added_snapshot_id": m.added_snapshot_id,
            "added_files_count": m.added_files_count,
            "existing_files_count": m.existing_files_count,
            "deleted_files_count": m.deleted_files_count,
            "added_rows_count": m.added_rows_count,
            "existing_rows_count": m.existing_rows_count,
            "deleted_rows_count": m.deleted_rows_count,
            "partitions": None if m.partitions is None else [
                {"contains_null": p.contains_null, "contains_nan": p.contains_nan,
                 "lower_bound": p.lower_bound, "upper_bound": p.upper_bound}
                for p in m.partitions
            ],
            "key_metadata": m.key_metadata,
        }
        if self.format_version >= 2:
            d["sequence_number"] = self._assigned(m.sequence_number, m)
            d["min_sequence_number"] = self._assigned(m.min_sequence_number, m)
            for k in ("added_files_count", "existing_files_count", "deleted_files_count",
                      "added_rows_count", "existing_rows_count", "deleted_rows_count"):
                if d[k] is None:
                    raise ValidationError(f"{m.manifest_path}: {k} is required in v2")
        return d

    def _metadata(self) -> dict[str, str]:
        meta = {
            "snapshot-id": str(self.snapshot_id),
            # Java writes String.valueOf(null) for a snapshot without a parent
            "parent-snapshot-id": str(self.parent_snapshot_id)
            if self.parent_snapshot_id is not None else "null",
        }
        if self.format_version >= 2:
            meta["sequence-number"] = str(self.sequence_number)
        meta["format-version"] = str(self.format_version)
        return meta

    def avro_schema(self) -> dict[str, Any]:
        return S.to_avro_schema(S.manifest_file_type(self.format_version), "manifest_file")

    def close(self) -> None:
        if self._closed:
            return
        buf = _io.BytesIO()
        write_avro(buf, self.avro_schema(), self._records, self._metadata(), self.codec)
        self._sink.put(buf.getvalue())
        self._closed = True

    def __enter__(self) -> ManifestListWriter:
        return self

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        if exc_type is None:
            self.close()
