"""Which files a table's metadata reaches: the walk snapshot → manifest list → manifests →
data and delete files, plus statistics, metadata and version-hint files (Java
``ReachableFileUtil``, and the walks of ``ReachableFileCleanup``, ``DeleteOrphanFilesSparkAction``
and ``CatalogUtil.dropTableData``).

Expire snapshots and orphan-file removal both need this walk, on tables of thousands of
snapshots whose manifest lists repeat the same records over and over (every snapshot lists
the manifests it carries over from its parent, and a carried record has the same bytes in
every list). :class:`ManifestLists` therefore decodes each distinct manifest-list record once
per run and reuses it wherever the same bytes appear again; a list is still read in full and
every record of it is checked byte for byte, so the result is exactly what
:func:`floe.manifest.read_manifest_list` returns. :class:`ManifestScanner` finds the live
paths of a manifest whose counts say it has no DELETED entry by scanning its decompressed
bytes (~50x cheaper than decoding the entries; verified per block, else decoded), and
:class:`PartitionBox` tells from partition summaries which manifests need reading at all.
:func:`delete_in_phases` deletes in a crash-safe order.

"Live" follows the spec ("Manifests"): an entry whose status is ADDED or EXISTING. A file that
only a DELETED entry names is not part of any snapshot (Java ``ManifestFiles.readPaths`` and
``ManifestReader.iterator`` skip those entries too).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import struct
import zlib
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from floe import stats
from floe.avro import (
    MAGIC,
    AvroCorrupt,
    AvroFile,
    AvroTruncated,
    compile_decoder,
    container_blocks,
    decompress_block,
    read_long,
)
from floe.errors import FloeError, MetadataError, NotFound, ValidationError
from floe.io import FileIO, is_local, local_path
from floe.manifest import (
    ManifestFile,
    PartitionFieldSummary,
    _manifest_files,  # noqa: PLC2701 - see ManifestLists
    read_manifest_list,
)
from floe.metadata import TableMetadata, version_hint_location
from floe.scan.manifests import ManifestScanner, read_entries
from floe.snapshots import Snapshot
from floe.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    FixedType,
    IntegerType,
    LongType,
    PrimitiveType,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
)

__all__ = [
    "ManifestLists",
    "ReachableFiles",
    "delete_file",
    "delete_files",
    "delete_in_phases",
    "PartitionBox",
    "reachable_files",
    "snapshot_manifests",
]

log = logging.getLogger(__name__)


def snapshot_manifests(io: FileIO, snapshot: Snapshot) -> list[ManifestFile]:
    """The manifests of a snapshot's manifest list. A v1 snapshot that lists its manifests
    inline (no manifest list) is refused: floe never reads those, so it cannot tell which
    files they reach, and a maintenance operation must not guess."""
    if snapshot.manifest_list is None:
        raise ValidationError(
            f"snapshot {snapshot.snapshot_id} lists its manifests inline (format v1 without a "
            f"manifest list); floe cannot tell which files it references")
    return read_manifest_list(io, snapshot.manifest_list)


def has_live_files(manifest: ManifestFile) -> bool:
    """Whether a manifest may hold a live entry, by its manifest-list counts (unknown counts,
    as in some v1 lists, mean "may"). Scan planning skips manifests the same way."""
    return manifest.has_added_files() or manifest.has_existing_files()


# -- manifest lists, decoded once per distinct record ---------------------------------------


class _Pending:
    """A manifest-list record decoded but not yet turned into a ``ManifestFile`` (that is done
    for many records at once)."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value: ManifestFile | None = None


@dataclass
class _Decoded:
    """One list being decoded: items (``ManifestFile`` or ``_Pending``) and where the pending
    ones are."""

    items: list[Any]
    pending: list[int]


class ManifestLists:
    """Manifest lists of one maintenance run, each read once, each distinct record decoded once.

    A record is found again by its manifest path (the first field of a manifest-list record)
    and reused only when the bytes at the current position equal the bytes decoded before,
    for the same writer schema; a compressed block seen before is reused whole. New records
    of many lists are turned into ``ManifestFile`` values together (:meth:`prefetch`).
    Anything else is decoded like :func:`floe.manifest.read_manifest_list` does, which this
    falls back to for a list whose first field is not ``manifest_path``.

    This reaches into :mod:`floe.avro` / :mod:`floe.manifest` internals (the container header,
    the block loop, the record-to-``ManifestFile`` conversion): a record-level reuse needs the
    bytes of each record, which the public readers do not expose.
    """

    def __init__(self, io: FileIO) -> None:
        self.io = io
        self._lists: dict[str, list[ManifestFile]] = {}
        self._errors: dict[str, FloeError] = {}
        self._schemas: dict[bytes, tuple[int, Any, Callable[..., int]] | None] = {}
        self._records: dict[tuple[int, bytes], tuple[bytes, Any]] = {}
        self._blocks: dict[tuple[int, bytes], list[Any]] = {}
        self._new_records: list[tuple[int, bytes]] = []
        self._new_blocks: list[tuple[int, bytes]] = []
        self.decoded_records = 0
        self.reused_records = 0

    def read(self, location: str) -> list[ManifestFile]:
        """The manifests of one list (NotFound / MetadataError when it cannot be read)."""
        found = self._lists.get(location)
        if found is None:
            self.prefetch([location])
            error = self._errors.get(location)
            if error is not None:
                raise error
            found = self._lists[location]
        return found

    def snapshot(self, snapshot: Snapshot) -> list[ManifestFile]:
        """:func:`snapshot_manifests` through this cache."""
        if snapshot.manifest_list is None:
            snapshot_manifests(self.io, snapshot)  # raises the one refusal message
        assert snapshot.manifest_list is not None
        return self.read(snapshot.manifest_list)

    def prefetch(self, locations: Iterable[str],
                 progress: Callable[[int, int], None] | None = None) -> None:
        """Read these lists now (errors are raised by :meth:`read` of that list);
        ``progress(done, total)`` is called every 100 lists."""
        todo: dict[str, _Decoded] = {}
        misses: dict[int, tuple[Any, list[Any], list[_Pending]]] = {}
        locations = list(locations)
        for done, location in enumerate(locations, 1):
            if progress is not None and (done % 100 == 0 or done == len(locations)):
                progress(done, len(locations))
            if location in self._lists or location in self._errors or location in todo:
                continue
            try:
                decoded = self._read(location, misses)
            except FloeError as e:
                self._errors[location] = e
                continue
            if decoded is None:
                try:
                    self._lists[location] = read_manifest_list(self.io, location)
                except FloeError as e:
                    self._errors[location] = e
            else:
                todo[location] = decoded
        for schema, records, pendings in misses.values():
            converted = _manifest_files(AvroFile({}, schema, records), "a manifest list")
            self.decoded_records += len(converted)
            for pending, mf in zip(pendings, converted, strict=True):
                pending.value = mf
        for key in self._new_records:
            raw, item = self._records[key]
            self._records[key] = (raw, item.value)
        for bkey in self._new_blocks:
            items = self._blocks[bkey]
            self._blocks[bkey] = [x.value if type(x) is _Pending else x for x in items]
        self._new_records.clear()
        self._new_blocks.clear()
        for location, decoded in todo.items():
            items = decoded.items
            for pos in decoded.pending:
                items[pos] = items[pos].value
            self._lists[location] = items

    def _read(self, location: str, misses: dict[int, tuple[Any, list[Any], list[_Pending]]]
              ) -> _Decoded | None:
        try:
            data = self.io.read(location)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            raise NotFound(f"{location}: file does not exist") from None
        stats.count_read(stats.MANIFEST_LIST)
        try:
            return self._decode(data, misses)
        except (AvroTruncated, IndexError, struct.error):
            raise MetadataError(location, "truncated Avro file (ends in the middle of a block)")\
                from None
        except (AvroCorrupt, zlib.error, UnicodeDecodeError, ValueError, KeyError,
                TypeError, AttributeError) as e:
            raise MetadataError(location, f"not a valid manifest list: {e}") from None
        except (RecursionError, SyntaxError, MemoryError):
            raise MetadataError(location, "not a valid manifest list: the schema nests too "
                                "deeply") from None

    def _schema(self, raw: bytes) -> tuple[int, Any, Callable[..., int]] | None:
        if raw not in self._schemas:
            schema = json.loads(raw)
            fields = schema.get("fields") if isinstance(schema, dict) else None
            if not fields or fields[0].get("name") != "manifest_path" \
                    or fields[0].get("type") != "string":
                self._schemas[raw] = None
            else:
                self._schemas[raw] = (len(self._schemas), schema, compile_decoder(schema))
        return self._schemas[raw]

    def _decode(self, data: bytes, misses: dict[int, tuple[Any, list[Any], list[_Pending]]]
                ) -> _Decoded | None:
        if data[:4] != MAGIC:
            raise AvroCorrupt("missing the Avro magic bytes 'Obj\\x01'")
        meta, blocks = container_blocks(data, decompress=False)
        raw_schema = meta.get("avro.schema")
        if raw_schema is None:
            raise AvroCorrupt("the header has no avro.schema")
        known = self._schema(raw_schema)
        if known is None:
            return None
        sid, schema, decode = known
        codec = (meta.get("avro.codec") or b"null").decode()
        out = _Decoded([], [])
        items, pending = out.items, out.pending
        for count, raw, _ in blocks:
            bkey = (sid, hashlib.blake2b(raw, digest_size=20).digest() + count.to_bytes(8))
            cached = self._blocks.get(bkey)
            if cached is not None:
                base = len(items)
                pending += [base + i for i, x in enumerate(cached) if type(x) is _Pending]
                items += cached
                self.reused_records += len(cached)
                continue
            block = decompress_block(codec, raw)
            if count > len(block):  # floe.avro: no more records than bytes
                raise AvroCorrupt(f"a block of {len(block)} bytes cannot hold {count} records")
            first = len(items)
            p = 0
            for _ in range(count):
                n, q = read_long(block, p)
                key = (sid, block[q:q + n])
                hit = self._records.get(key)
                if hit is not None and block.startswith(hit[0], p):
                    if type(hit[1]) is _Pending:
                        pending.append(len(items))
                    items.append(hit[1])
                    p += len(hit[0])
                    self.reused_records += 1
                    continue
                one: list[Any] = []
                p2 = decode(block, p, 1, one.append)
                if p2 > len(block):
                    raise AvroTruncated()
                new = _Pending()
                group = misses.setdefault(sid, (schema, [], []))
                group[1].append(one[0])
                group[2].append(new)
                self._records[key] = (block[p:p2], new)
                self._new_records.append(key)
                pending.append(len(items))
                items.append(new)
                p = p2
            self._blocks[bkey] = items[first:]
            if len(pending) and pending[-1] >= first:
                self._new_blocks.append(bkey)
        return out


# -- partition summaries ----------------------------------------------------------------------

#: Result types whose partition-summary bounds compare the same way in Python and in Java's
#: comparators. Floats (NaN, -0.0) and UUIDs (Java compares them as signed longs) are left
#: out: a manifest is never skipped on them.
_ORDERED: tuple[type[PrimitiveType], ...] = (
    BooleanType, IntegerType, LongType, DateType, TimeType, TimestampType, TimestamptzType,
    TimestampNanoType, TimestamptzNanoType, DecimalType, StringType, BinaryType, FixedType,
)


def _decodable(t: Any) -> bool:
    return isinstance(t, _ORDERED)


def _bound(t: PrimitiveType, raw: bytes | None) -> Any:
    from floe.conversions import from_bytes

    if raw is None:
        return None
    try:
        return from_bytes(t, raw)
    except (ValueError, TypeError, ValidationError, struct.error, UnicodeDecodeError):
        return None


def _comparable(value: Any) -> bool:
    # Java orders strings by UTF-16 code units, Python by code points: they agree on the BMP
    if isinstance(value, str):
        return all(ord(c) < 0x10000 for c in value)
    return isinstance(value, (bool, int, Decimal, bytes))


@dataclass
class _FieldRange:
    """What a set of manifests holds in one partition field: nulls, and the range of the
    other values (``known`` False when it cannot be compared)."""

    nulls: bool = False
    lower: Any = None
    upper: Any = None
    known: bool = True

    def widen(self, t: Any, summary: PartitionFieldSummary) -> None:
        self.nulls = self.nulls or summary.contains_null is not False
        if summary.lower_bound is None and summary.upper_bound is None:
            if summary.contains_nan:
                self.known = False
            return
        lo, hi = _decoded_bounds(t, summary)
        if lo is None or hi is None:
            self.known = False
            return
        self.lower = lo if self.lower is None or lo < self.lower else self.lower
        self.upper = hi if self.upper is None or hi > self.upper else self.upper


def _decoded_bounds(t: Any, summary: PartitionFieldSummary) -> tuple[Any, Any]:
    if not _decodable(t):
        return None, None
    lo = _bound(t, summary.lower_bound)
    hi = _bound(t, summary.upper_bound)
    if lo is None or hi is None or not _comparable(lo) or not _comparable(hi) \
            or type(lo) is not type(hi):
        return None, None
    return lo, hi


class PartitionBox:
    """The partition values a group of manifests (one partition spec) may hold, from their
    partition summaries (spec "Manifest Lists": ``field_summary``): per field, whether there
    are nulls and the range of the other values. :meth:`may_overlap` tells whether another
    manifest of the spec may hold one of those values: False only when a summary proves it,
    for types that compare alike in Java and Python (not floats, whose NaN and -0.0 differ,
    nor UUIDs, which Java compares as signed longs)."""

    def __init__(self, ptype: StructType | None) -> None:
        self.ptype = ptype
        self.fields: list[_FieldRange] | None = None
        self.unknown = ptype is None

    def add(self, summaries: list[PartitionFieldSummary] | None) -> None:
        if self.unknown:
            return
        assert self.ptype is not None
        if summaries is None or len(summaries) != len(self.ptype.fields):
            self.unknown = True
            return
        if self.fields is None:
            self.fields = [_FieldRange() for _ in summaries]
        for f, r, summary in zip(self.ptype.fields, self.fields, summaries, strict=True):
            r.widen(f.field_type, summary)

    def may_overlap(self, summaries: list[PartitionFieldSummary] | None) -> bool:
        if self.unknown or self.fields is None:
            return True
        assert self.ptype is not None
        if summaries is None or len(summaries) != len(self.fields):
            return True
        for f, r, summary in zip(self.ptype.fields, self.fields, summaries, strict=True):
            if r.nulls and summary.contains_null is not False:
                continue  # both may hold a null
            if not r.known:
                continue
            if r.lower is None:
                return False  # the group holds only nulls here, the manifest none
            if summary.lower_bound is None and summary.upper_bound is None:
                return False  # the manifest holds only nulls here (not a float), the group none
            lo, hi = _decoded_bounds(f.field_type, summary)
            if lo is None or type(lo) is not type(r.lower):
                continue
            try:
                if hi < r.lower or lo > r.upper:
                    return False
            except TypeError:
                continue
        return True


# -- the whole graph ------------------------------------------------------------------------


@dataclass(frozen=True)
class ReachableFiles:
    """Every file a table's metadata reaches, by kind (full paths as stored)."""

    manifest_lists: frozenset[str]
    manifests: frozenset[str]
    content_files: frozenset[str]
    statistics_files: frozenset[str]
    metadata_files: frozenset[str]

    def all(self) -> frozenset[str]:
        return (self.manifest_lists | self.manifests | self.content_files
                | self.statistics_files | self.metadata_files)


def statistics_paths(md: TableMetadata, snapshot_ids: Iterable[int] | None = None) -> set[str]:
    """Statistics and partition-statistics files of the given snapshots (all by default)."""
    ids = None if snapshot_ids is None else set(snapshot_ids)
    out = {s.statistics_path for s in md.statistics if ids is None or s.snapshot_id in ids}
    out |= {s.statistics_path for s in md.partition_statistics
            if ids is None or s.snapshot_id in ids}
    return out


def reachable_files(
    io: FileIO,
    md: TableMetadata,
    *,
    metadata_location: str | None = None,
    include_deleted_entries: bool = False,
    missing_ok: bool = False,
    lists: ManifestLists | None = None,
    on_manifest: Callable[[int, int], None] | None = None,
) -> ReachableFiles:
    """The files ``md`` reaches: every snapshot's manifest list, its manifests, their live
    data and delete files (also the DELETED ones with ``include_deleted_entries``, as Java's
    ``dropTableData`` purges them), the statistics and partition-statistics files, the
    metadata-log files plus ``metadata_location``, and the version hint (Java
    ``ReachableFileUtil.versionHintLocation``: every table has one name for it).

    A file that cannot be read raises (NotFound / MetadataError), unless ``missing_ok``:
    then what it would have reached is skipped (for purging a table). ``on_manifest(done,
    total)`` reports manifest reads.
    """
    lists = lists if lists is not None else ManifestLists(io)
    lists.prefetch(s.manifest_list for s in md.snapshots if s.manifest_list is not None)
    manifest_lists: set[str] = set()
    manifests: dict[str, ManifestFile] = {}
    for snap in md.snapshots:
        if snap.manifest_list is None and missing_ok:
            manifests.update((p, ManifestFile(p, 0, 0)) for p in snap.manifests or ())
            continue
        if snap.manifest_list is not None:
            manifest_lists.add(snap.manifest_list)
        try:
            for m in lists.snapshot(snap):
                manifests.setdefault(m.manifest_path, m)
        except (NotFound, MetadataError):
            if not missing_ok:
                raise
    content: set[str] = set()
    total = len(manifests)
    scanner = ManifestScanner(io, md.location)
    for done, m in enumerate(manifests.values(), 1):
        try:
            if include_deleted_entries:
                content.update(e.data_file.file_path for e in read_entries(io, m))
            elif has_live_files(m):
                content.update(scanner.live_files(m))
        except (NotFound, MetadataError):
            if not missing_ok:
                raise
        if on_manifest is not None:
            on_manifest(done, total)
    metadata_files = {e.metadata_file for e in md.metadata_log}
    if metadata_location is not None:
        metadata_files.add(metadata_location)
    metadata_files.add(version_hint_location(md.location))
    return ReachableFiles(frozenset(manifest_lists), frozenset(manifests), frozenset(content),
                          frozenset(statistics_paths(md)), frozenset(metadata_files))


# -- deleting ---------------------------------------------------------------------------------


def _crc_companion(location: str) -> str:
    """Hadoop's ``ChecksumFileSystem`` keeps ``.<name>.crc`` beside each file it writes and
    deletes it with the file; Spark-written local tables have them."""
    head, _, name = location.rpartition("/")
    return f"{head}/.{name}.crc" if head else f".{name}.crc"


def delete_file(io: FileIO, location: str) -> bool:
    """Delete one table file (and its Hadoop ``.crc`` companion, as Hadoop does): True when it
    was there, False when it was already gone. Other failures raise."""
    try:
        io.delete(location, missing_ok=False)
        existed = True
    except NotFound:
        existed = False
    if is_local(location):
        companion = _crc_companion(location)
        try:
            if os.path.isfile(local_path(companion)):
                io.delete(companion, missing_ok=True)
        except (ValidationError, OSError, FloeError) as e:
            log.warning("could not delete %s: %s", companion, e)
    return existed


def delete_files(io: FileIO, locations: Sequence[str]) -> list[tuple[str, str]]:
    """Delete table files, missing ones being fine: on an object store in the store's batches
    (one request per 1,000 keys), local ones (and their ``.crc`` companions) on
    :data:`DELETE_THREADS` threads. Returns the ones that could not be deleted, with why."""
    remote = [x for x in locations if not is_local(x)]
    failed = [(path, str(e)) for path, e in io.delete_many(remote)] if remote else []

    def one(path: str) -> str | None:
        try:
            delete_file(io, path)
        except (OSError, FloeError) as e:
            return str(e)
        return None

    local = [x for x in locations if is_local(x)]
    if local:
        with ThreadPoolExecutor(max_workers=DELETE_THREADS) as pool:
            failed += [(p, e) for p, e in zip(local, pool.map(one, local), strict=True)
                       if e is not None]
    for path, error in failed:
        log.warning("could not delete %s: %s", path, error)
    return failed


#: Deleting is waiting on the file system (or an object store), not the interpreter.
DELETE_THREADS = 8


def delete_in_phases(
    phases: Sequence[Sequence[str]],
    delete: Callable[[Sequence[str]], list[tuple[str, str]]],
    on_progress: Callable[[int, int], None],
    batch: int,
) -> tuple[int, list[tuple[str, str]]]:
    """Delete files phase by phase: a phase starts only once every file of the previous one
    is gone (a crash never leaves a file whose only record was deleted first), ``batch``
    files per call of ``delete`` (:func:`delete_files`, or a caller's check around it), which
    returns the ones it could not delete. ``on_progress(done, total)`` after each batch may
    raise to stop (a Cancelled). Returns (deleted, [(path, error)]); a failure is recorded
    and does not stop the rest."""
    total = sum(len(p) for p in phases)
    done = 0
    deleted = 0
    failed: list[tuple[str, str]] = []
    on_progress(0, total)
    for phase in phases:
        for start in range(0, len(phase), batch):
            chunk = list(phase[start:start + batch])
            missed = delete(chunk)
            deleted += len(chunk) - len(missed)
            failed += missed
            done += len(chunk)
            on_progress(done, total)
    return deleted, failed
