"""Snapshots, refs, history logs and statistics files (spec "Snapshots", "Snapshot References",
"Table Statistics", "Partition Statistics", and the "Table Metadata Fields" that list them).

Every class has ``to_json()`` / ``from_json(obj)`` with the field names of the spec and the
field order Iceberg Java writes. ``from_json`` raises :class:`floe.errors.ValidationError`
with a readable message; :mod:`floe.metadata` adds the file location.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, TypeAlias

from floe.errors import ValidationError

__all__ = [
    "INITIAL_SEQUENCE_NUMBER",
    "MAIN_BRANCH",
    "BlobMetadata",
    "MetadataLogEntry",
    "Operation",
    "PartitionStatisticsFile",
    "Snapshot",
    "SnapshotLogEntry",
    "SnapshotRef",
    "SnapshotRefType",
    "StatisticsFile",
    "Summary",
]

#: Spec "Sequence Numbers": v1 snapshots and files have sequence number 0.
INITIAL_SEQUENCE_NUMBER = 0
#: Spec "Snapshot References": the branch that ``current-snapshot-id`` mirrors.
MAIN_BRANCH = "main"

#: A snapshot summary: string keys to string values, including ``operation``.
Summary: TypeAlias = dict[str, str]


class Operation(Enum):
    """Spec "Snapshots": the ``operation`` summary field."""

    APPEND = "append"
    REPLACE = "replace"
    OVERWRITE = "overwrite"
    DELETE = "delete"

    def __str__(self) -> str:
        return self.value


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _obj(obj: Any, what: str) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise ValidationError(f"{what} must be a JSON object, got {obj!r:.200}")
    return obj


def _int(obj: Mapping[str, Any], key: str, what: str) -> int:
    v = obj.get(key)
    if not isinstance(v, int) or isinstance(v, bool):
        if key not in obj:
            raise ValidationError(f"{what} is missing required field {key!r}")
        raise ValidationError(f"{what}: {key!r} must be an integer, got {v!r:.100}")
    return v


def _opt_int(obj: Mapping[str, Any], key: str, what: str) -> int | None:
    if obj.get(key) is None:
        return None
    return _int(obj, key, what)


def _str(obj: Mapping[str, Any], key: str, what: str) -> str:
    v = obj.get(key)
    if not isinstance(v, str):
        if key not in obj:
            raise ValidationError(f"{what} is missing required field {key!r}")
        raise ValidationError(f"{what}: {key!r} must be a string, got {v!r:.100}")
    return v


def _str_map(obj: Any, what: str) -> dict[str, str]:
    if not isinstance(obj, dict) or not all(isinstance(v, str) for v in obj.values()):
        raise ValidationError(f"{what} must be an object of strings, got {obj!r:.200}")
    return dict(obj)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Spec "Snapshots". ``summary`` includes ``operation``; ``manifests`` is the v1 inline
    manifest list (used when ``manifest_list`` is None). ``first_row_id``/``added_rows`` are
    v3 row lineage, ``key_id`` v3 encryption; all are carried through unchanged."""

    snapshot_id: int
    parent_snapshot_id: int | None = None
    sequence_number: int = INITIAL_SEQUENCE_NUMBER
    timestamp_ms: int = 0
    manifest_list: str | None = None
    summary: Summary = field(default_factory=dict)
    schema_id: int | None = None
    manifests: tuple[str, ...] | None = None
    first_row_id: int | None = None
    added_rows: int | None = None
    key_id: str | None = None

    @property
    def operation(self) -> Operation | None:
        op = self.summary.get("operation")
        if op is None:
            return None
        try:
            return Operation(op)
        except ValueError:
            return None

    def to_json(self) -> dict[str, Any]:
        """Java's ``SnapshotParser`` order; ``sequence-number`` only when above 0."""
        out: dict[str, Any] = {}
        if self.sequence_number > INITIAL_SEQUENCE_NUMBER:
            out["sequence-number"] = self.sequence_number
        out["snapshot-id"] = self.snapshot_id
        if self.parent_snapshot_id is not None:
            out["parent-snapshot-id"] = self.parent_snapshot_id
        out["timestamp-ms"] = self.timestamp_ms
        if "operation" in self.summary:
            summary = {"operation": self.summary["operation"]}
            summary.update((k, v) for k, v in self.summary.items() if k != "operation")
            out["summary"] = summary
        if self.manifest_list is not None:
            out["manifest-list"] = self.manifest_list
        else:
            out["manifests"] = list(self.manifests or ())
        if self.schema_id is not None:
            out["schema-id"] = self.schema_id
        if self.first_row_id is not None:
            out["first-row-id"] = self.first_row_id
        if self.added_rows is not None:
            out["added-rows"] = self.added_rows
        if self.key_id is not None:
            out["key-id"] = self.key_id
        return out

    @classmethod
    def from_json(cls, obj: Any) -> Snapshot:
        o = _obj(obj, "a snapshot")
        snapshot_id = _int(o, "snapshot-id", "snapshot")
        what = f"snapshot {snapshot_id}"
        summary: Summary = {}
        if "summary" in o:
            summary = _str_map(o["summary"], f"{what}: 'summary'")
            # Java reads a summary without an operation as an overwrite rather than failing.
            if summary and "operation" not in summary:
                summary = {"operation": Operation.OVERWRITE.value, **summary}
        manifest_list = o.get("manifest-list")
        manifests: tuple[str, ...] | None = None
        if manifest_list is not None:
            manifest_list = _str(o, "manifest-list", what)
        else:
            raw = o.get("manifests")
            if not isinstance(raw, list) or not all(isinstance(m, str) for m in raw):
                raise ValidationError(
                    f"{what} has neither a 'manifest-list' nor a 'manifests' list of paths"
                )
            manifests = tuple(raw)
        key_id = o.get("key-id")
        if key_id is not None and not isinstance(key_id, str):
            raise ValidationError(f"{what}: 'key-id' must be a string")
        return cls(
            snapshot_id=snapshot_id,
            parent_snapshot_id=_opt_int(o, "parent-snapshot-id", what),
            sequence_number=_opt_int(o, "sequence-number", what) or INITIAL_SEQUENCE_NUMBER,
            timestamp_ms=_int(o, "timestamp-ms", what),
            manifest_list=manifest_list,
            summary=summary,
            schema_id=_opt_int(o, "schema-id", what),
            manifests=manifests,
            first_row_id=_opt_int(o, "first-row-id", what),
            added_rows=_opt_int(o, "added-rows", what),
            key_id=key_id,
        )


class SnapshotRefType(Enum):
    BRANCH = "branch"
    TAG = "tag"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class SnapshotRef:
    """Spec "Snapshot References": a named branch or tag with optional retention settings.

    ``min_snapshots_to_keep`` and ``max_snapshot_age_ms`` apply to branches only.
    """

    snapshot_id: int
    ref_type: SnapshotRefType = SnapshotRefType.BRANCH
    min_snapshots_to_keep: int | None = None
    max_snapshot_age_ms: int | None = None
    max_ref_age_ms: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.ref_type, str):  # accept "branch" / "tag"
            object.__setattr__(self, "ref_type", _ref_type(self.ref_type))
        if self.ref_type is SnapshotRefType.TAG and (
            self.min_snapshots_to_keep is not None or self.max_snapshot_age_ms is not None
        ):
            raise ValidationError("tags cannot have min-snapshots-to-keep or max-snapshot-age-ms")
        if self.min_snapshots_to_keep is not None and self.min_snapshots_to_keep <= 0:
            raise ValidationError("min-snapshots-to-keep must be greater than 0")
        if self.max_snapshot_age_ms is not None and self.max_snapshot_age_ms <= 0:
            raise ValidationError("max-snapshot-age-ms must be greater than 0")
        if self.max_ref_age_ms is not None and self.max_ref_age_ms <= 0:
            raise ValidationError("max-ref-age-ms must be greater than 0")

    @property
    def is_branch(self) -> bool:
        return self.ref_type is SnapshotRefType.BRANCH

    @property
    def is_tag(self) -> bool:
        return self.ref_type is SnapshotRefType.TAG

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"snapshot-id": self.snapshot_id, "type": self.ref_type.value}
        if self.min_snapshots_to_keep is not None:
            out["min-snapshots-to-keep"] = self.min_snapshots_to_keep
        if self.max_snapshot_age_ms is not None:
            out["max-snapshot-age-ms"] = self.max_snapshot_age_ms
        if self.max_ref_age_ms is not None:
            out["max-ref-age-ms"] = self.max_ref_age_ms
        return out

    @classmethod
    def from_json(cls, obj: Any, name: str = "ref") -> SnapshotRef:
        o = _obj(obj, f"ref {name!r}")
        what = f"ref {name!r}"
        return cls(
            snapshot_id=_int(o, "snapshot-id", what),
            ref_type=_ref_type(_str(o, "type", what)),
            min_snapshots_to_keep=_opt_int(o, "min-snapshots-to-keep", what),
            max_snapshot_age_ms=_opt_int(o, "max-snapshot-age-ms", what),
            max_ref_age_ms=_opt_int(o, "max-ref-age-ms", what),
        )


def _ref_type(text: str) -> SnapshotRefType:
    try:
        return SnapshotRefType(text.lower())
    except ValueError:
        raise ValidationError(f"invalid ref type {text!r} (expected 'branch' or 'tag')") from None


@dataclass(frozen=True, slots=True)
class SnapshotLogEntry:
    """A ``snapshot-log`` entry: ``snapshot_id`` became current at ``timestamp_ms``."""

    timestamp_ms: int
    snapshot_id: int

    def to_json(self) -> dict[str, Any]:
        return {"timestamp-ms": self.timestamp_ms, "snapshot-id": self.snapshot_id}

    @classmethod
    def from_json(cls, obj: Any) -> SnapshotLogEntry:
        o = _obj(obj, "a snapshot-log entry")
        return cls(
            _int(o, "timestamp-ms", "snapshot-log entry"),
            _int(o, "snapshot-id", "snapshot-log entry"),
        )


@dataclass(frozen=True, slots=True)
class MetadataLogEntry:
    """A ``metadata-log`` entry: a previous metadata file and when it was replaced."""

    timestamp_ms: int
    metadata_file: str

    def to_json(self) -> dict[str, Any]:
        return {"timestamp-ms": self.timestamp_ms, "metadata-file": self.metadata_file}

    @classmethod
    def from_json(cls, obj: Any) -> MetadataLogEntry:
        o = _obj(obj, "a metadata-log entry")
        return cls(
            _int(o, "timestamp-ms", "metadata-log entry"),
            _str(o, "metadata-file", "metadata-log entry"),
        )


@dataclass(frozen=True, slots=True)
class BlobMetadata:
    """Spec "Table Statistics": one blob of a Puffin statistics file."""

    type: str
    snapshot_id: int
    sequence_number: int
    fields: tuple[int, ...]
    properties: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": self.type,
            "snapshot-id": self.snapshot_id,
            "sequence-number": self.sequence_number,
            "fields": list(self.fields),
        }
        if self.properties:
            out["properties"] = dict(self.properties)
        return out

    @classmethod
    def from_json(cls, obj: Any) -> BlobMetadata:
        o = _obj(obj, "blob metadata")
        fields = o.get("fields")
        if not isinstance(fields, list) or not all(_is_int(f) for f in fields):
            raise ValidationError(f"blob metadata needs an integer list 'fields': {o!r:.200}")
        props = _str_map(o["properties"], "blob properties") if "properties" in o else {}
        return cls(
            type=_str(o, "type", "blob metadata"),
            snapshot_id=_int(o, "snapshot-id", "blob metadata"),
            sequence_number=_int(o, "sequence-number", "blob metadata"),
            fields=tuple(fields),
            properties=props,
        )


@dataclass(frozen=True, slots=True)
class StatisticsFile:
    """Spec "Table Statistics": a Puffin file of statistics for one snapshot."""

    snapshot_id: int
    statistics_path: str
    file_size_in_bytes: int
    file_footer_size_in_bytes: int
    blob_metadata: tuple[BlobMetadata, ...] = ()
    key_metadata: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "snapshot-id": self.snapshot_id,
            "statistics-path": self.statistics_path,
            "file-size-in-bytes": self.file_size_in_bytes,
            "file-footer-size-in-bytes": self.file_footer_size_in_bytes,
        }
        if self.key_metadata is not None:
            out["key-metadata"] = self.key_metadata
        out["blob-metadata"] = [b.to_json() for b in self.blob_metadata]
        return out

    @classmethod
    def from_json(cls, obj: Any) -> StatisticsFile:
        o = _obj(obj, "a statistics file")
        what = "statistics file"
        blobs = o.get("blob-metadata")
        if not isinstance(blobs, list):
            raise ValidationError(f"{what} needs a 'blob-metadata' array: {o!r:.200}")
        # The spec names it "key-metadata"; some Java releases wrote "key-id".
        key = o.get("key-metadata", o.get("key-id"))
        if key is not None and not isinstance(key, str):
            raise ValidationError(f"{what}: 'key-metadata' must be a string")
        return cls(
            snapshot_id=_int(o, "snapshot-id", what),
            statistics_path=_str(o, "statistics-path", what),
            file_size_in_bytes=_int(o, "file-size-in-bytes", what),
            file_footer_size_in_bytes=_int(o, "file-footer-size-in-bytes", what),
            blob_metadata=tuple(BlobMetadata.from_json(b) for b in blobs),
            key_metadata=key,
        )


@dataclass(frozen=True, slots=True)
class PartitionStatisticsFile:
    """Spec "Partition Statistics": a file of per-partition statistics for one snapshot."""

    snapshot_id: int
    statistics_path: str
    file_size_in_bytes: int

    def to_json(self) -> dict[str, Any]:
        return {
            "snapshot-id": self.snapshot_id,
            "statistics-path": self.statistics_path,
            "file-size-in-bytes": self.file_size_in_bytes,
        }

    @classmethod
    def from_json(cls, obj: Any) -> PartitionStatisticsFile:
        o = _obj(obj, "a partition statistics file")
        what = "partition statistics file"
        return cls(
            snapshot_id=_int(o, "snapshot-id", what),
            statistics_path=_str(o, "statistics-path", what),
            file_size_in_bytes=_int(o, "file-size-in-bytes", what),
        )
