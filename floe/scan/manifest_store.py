"""A persistent cache of decoded manifests, shared by every process on the machine.

Manifests are immutable, so the live entries decoded from one can serve every later process
(a CLI run, a web worker, a Celery task) instead of decoding the Avro again. Each manifest
becomes one Arrow IPC file under the cache directory, named by a digest of its key: the
manifest's path and length and the two values its entries inherit from the manifest list
(sequence number, added snapshot id). The key is also written inside the file and compared
on every read, so an entry is never trusted for another manifest.

Safe by construction:

* each entry ends with the CRC-32 of its bytes, checked on every read;
* written atomically (a temporary file in the same directory, then a rename), so a reader
  sees a whole entry or none, and two processes filling the same entry at once each write a
  whole, identical file;
* an entry that cannot be read (truncated, corrupt, another format version, a key that does
  not match) is ignored and removed; the manifest is decoded and the entry written again;
* a manifest whose entries would not read back exactly (a partition value Arrow stores as
  another Python type) is not cached at all;
* bounded in bytes: when the entries written exceed the bound, the least recently used are
  removed (a hit refreshes an entry's modification time).

Configuration (environment): ``FLOE_MANIFEST_CACHE`` — the directory (default
``$XDG_CACHE_HOME/floe/manifests``, else ``~/.cache/floe/manifests``; ``off`` turns the
cache off); ``FLOE_MANIFEST_CACHE_BYTES`` — the bound (default 2 GiB). The explorer points it
under its var directory.
"""

from __future__ import annotations

import math
import os
import struct
import threading
import time
import zlib
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from floe import stats
from floe.avro import LazyBytesMap, LazyIntMap, LazyMap, encode_bytes_map, encode_int_map
from floe.bulk import LazyList
from floe.manifest import (
    DataFile,
    FileContent,
    FileFormat,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
)

if TYPE_CHECKING:  # Arrow is imported when the cache is used (`floe` starts faster)
    import pyarrow as pa

__all__ = ["ManifestStore", "StoredEntries", "manifest_store", "wire", "unwire",
           "FORMAT_VERSION", "table_of", "columns"]

#: Bumped whenever the layout of an entry file changes: files of other versions are ignored.
FORMAT_VERSION = "2"
DEFAULT_MAX_BYTES = 2 << 30

_NAMES = (
    "status", "snapshot_id", "sequence_number", "file_sequence_number", "content",
    "file_path", "file_format", "partition", "record_count", "file_size_in_bytes",
    "column_sizes", "value_counts", "null_value_counts", "nan_value_counts", "lower_bounds",
    "upper_bounds", "key_metadata", "split_offsets", "equality_ids", "sort_order_id",
    "spec_id", "first_row_id", "referenced_data_file", "content_offset",
    "content_size_in_bytes",
)


@cache
def columns() -> tuple[tuple[str, pa.DataType], ...]:
    """The columns of the flat entry tuples of :func:`wire`, in order (the
    stats maps as their Avro bytes), with their Arrow types; the partition tuple (position
    7) is stored as one column per partition field instead."""
    import pyarrow as pa

    i8, i32, i64, binary, string = pa.int8(), pa.int32(), pa.int64(), pa.binary(), pa.string()
    types = (i8, i64, i64, i64, i8, string, string, pa.null(), i64, i64, binary, binary,
             binary, binary, binary, binary, binary, pa.list_(i64), pa.list_(i32), i32, i32,
             i64, string, i64, i64)
    return tuple(zip(_NAMES, types, strict=True))


_PARTITION = 7
# After the Arrow IPC file: the CRC-32 of its bytes and a magic (IPC files carry no checksum,
# and a changed data byte would otherwise read back as another value).
_MAGIC = b"FLC1"
_TRAILER = struct.Struct("<I4s")


def _key(manifest: ManifestFile) -> dict[bytes, bytes]:
    return {b"floe.format": FORMAT_VERSION.encode(),
            b"floe.path": manifest.manifest_path.encode(),
            b"floe.length": str(manifest.manifest_length).encode(),
            b"floe.sequence_number": str(manifest.sequence_number).encode(),
            b"floe.added_snapshot_id": str(manifest.added_snapshot_id).encode()}


def _same(a: Any, b: Any) -> bool:
    """``b`` is ``a`` read back: the same type and value (NaN is NaN; a decimal keeps its
    exponent)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b) and (not hasattr(a, "as_tuple") or str(a) == str(b))


class ManifestStore:
    """The cache directory ``root``, bounded by ``max_bytes`` (module docstring)."""

    def __init__(self, root: str | os.PathLike[str], max_bytes: int = DEFAULT_MAX_BYTES
                 ) -> None:
        self.root = Path(root)
        self.max_bytes = max_bytes
        self._written = 0
        self._lock = threading.Lock()

    def path_for(self, manifest: ManifestFile) -> Path:
        import hashlib  # OpenSSL's bindings: not loaded by a run with the store off

        digest = hashlib.sha256(b"\0".join(_key(manifest).values())).hexdigest()
        return self.root / digest[:2] / f"{digest[2:]}.arrow"

    # -- reading ---------------------------------------------------------------------------

    def get(self, manifest: ManifestFile) -> StoredEntries | None:
        """The live entries of ``manifest`` as stored, or None (absent, or unreadable: then
        the file is removed). The whole entry is checked here (checksum, key, columns); the
        entries become Python objects when first used (:class:`StoredEntries`)."""
        import pyarrow as pa

        path = self.path_for(manifest)
        try:
            data = path.read_bytes()
        except OSError:  # absent (most often), or unreadable: decode instead
            return None
        if len(data) < _TRAILER.size or data[-4:] != _MAGIC or \
                _TRAILER.unpack_from(data, len(data) - _TRAILER.size)[0] != \
                zlib.crc32(memoryview(data)[:-_TRAILER.size]):
            self._discard(path)  # truncated, or bytes changed since it was written
            return None
        try:
            buffer = pa.py_buffer(data).slice(0, len(data) - _TRAILER.size)
            table = pa.ipc.open_file(buffer).read_all()
        except (pa.ArrowException, ValueError):
            self._discard(path)
            return None
        try:
            meta = table.schema.metadata or {}
            if any(meta.get(k) != v for k, v in _key(manifest).items()):
                return None  # another manifest's entry (or another format): not trusted
            entries = StoredEntries.of(table)
        except (KeyError, ValueError, TypeError, IndexError, pa.ArrowException):
            self._discard(path)
            return None
        try:
            os.utime(path)  # recently used
        except OSError:
            pass
        stats.count_read(stats.MANIFEST_CACHE)
        return entries

    # -- writing ---------------------------------------------------------------------------

    def put(self, manifest: ManifestFile, entries: Sequence[ManifestEntry]) -> bool:
        """Store the live entries of ``manifest``; False when they cannot be stored exactly
        (nothing is written then) or the directory cannot be written."""
        table = self._table(manifest, [wire(e) for e in entries])
        return table is not None and self.put_table(manifest, table)

    def put_table(self, manifest: ManifestFile, table: pa.Table) -> bool:
        """Store the live entries of ``manifest`` as the table :meth:`_table` builds (made by
        floe/scan/native.py straight from the Avro); False when the directory cannot be
        written."""
        import pyarrow as pa

        import tempfile  # here: a plan with the cache off does not import it

        path = self.path_for(manifest)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            sink = pa.BufferOutputStream()
            with pa.ipc.new_file(sink, table.schema) as writer:
                writer.write_table(table)
            body = sink.getvalue()
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".arrow", dir=path.parent)
            try:
                with os.fdopen(fd, "wb") as out:
                    out.write(body)
                    out.write(_TRAILER.pack(zlib.crc32(body), _MAGIC))
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
            size = path.stat().st_size
        except OSError:
            return False
        with self._lock:
            self._written += size
            due = self._written > self.max_bytes // 10
            if due:
                self._written = 0
        if due:
            self.trim()
        return True

    @staticmethod
    def _table(manifest: ManifestFile, rows: list[tuple[Any, ...]]) -> pa.Table | None:
        import pyarrow as pa

        n_parts = len(rows[0][_PARTITION]) if rows else 0
        if any(len(r[_PARTITION]) != n_parts for r in rows):
            return None
        cols = list(zip(*rows, strict=True)) if rows else [()] * len(columns())
        arrays: dict[str, pa.Array] = {}
        try:
            for i, (name, type_) in enumerate(columns()):
                values = list(cols[i])
                if i == _PARTITION:
                    for k in range(n_parts):
                        part = [p[k] for p in values]
                        arr = pa.array(part)
                        if not all(_same(a, b)
                                   for a, b in zip(part, arr.to_pylist(), strict=True)):
                            return None
                        arrays[f"p{k}"] = arr
                    continue
                arrays[name] = pa.array(values, type=type_)
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            return None
        return table_of(manifest, arrays, n_parts)

    # -- bounding --------------------------------------------------------------------------

    def trim(self) -> None:
        """Remove the least recently used entries until the cache holds at most 90% of its
        bound, and temporary files over an hour old (younger ones may be being written)."""
        files: list[tuple[float, int, Path]] = []
        stale = time.time() - 3600
        try:
            for sub in os.scandir(self.root):
                if not sub.is_dir():
                    continue
                for f in os.scandir(sub.path):
                    st = f.stat()
                    if f.name.startswith(".tmp-"):
                        if st.st_mtime < stale:  # left by a process killed while writing
                            self._discard(Path(f.path))
                    elif f.name.endswith(".arrow"):
                        files.append((st.st_mtime, st.st_size, Path(f.path)))
        except OSError:
            return
        total = sum(size for _, size, _ in files)
        if total <= self.max_bytes:
            return
        for _, size, path in sorted(files, key=lambda f: f[0]):
            if total <= self.max_bytes * 0.9:
                break
            self._discard(path)
            total -= size

    @staticmethod
    def _discard(path: Path) -> None:
        try:
            path.unlink()
        except OSError:
            pass


def table_of(manifest: ManifestFile, arrays: dict[str, pa.Array], n_parts: int) -> pa.Table:
    """The stored table of ``manifest`` from its columns (in :func:`columns` order, the
    partition as ``p0``.. ``p<n_parts - 1>``), with the key in its schema metadata."""
    import pyarrow as pa

    meta = {**_key(manifest), b"floe.partition_fields": str(n_parts).encode()}
    return pa.table(arrays).replace_schema_metadata(meta)


_ENTRY_FIELDS = frozenset(ManifestEntry._fields)
#: Columns that hold one value for most manifests (built as one shared value then).
_FEW_VALUES = frozenset({"status", "snapshot_id", "sequence_number", "file_sequence_number",
                         "content", "file_format", "sort_order_id", "spec_id"})


def _values(column: pa.ChunkedArray, few: bool) -> list[Any]:
    """A column as Python values; one shared value when every row holds it (no nulls, one
    distinct value; checked only for ``few``-valued columns) or none does."""
    n = len(column)
    if column.null_count == n:
        return [None] * n
    if few and column.null_count == 0:
        from floe import arrow_compute as pc

        distinct = pc.unique(column)
        if len(distinct) == 1:
            return [distinct[0].as_py()] * n
    return column.to_pylist()


class StoredEntries(LazyList[ManifestEntry]):
    """The live entries of one manifest as the cache stores them (an Arrow table already
    checked against its checksum and key), built as Python objects on first read: a plan
    that keeps every file of a manifest needs only how many there are
    (:class:`floe.scan.planning.TaskBlock`), partitions need a few columns."""

    __slots__ = ("_n_parts",)

    def __init__(self, table: pa.Table, n_parts: int) -> None:
        names = [name for name, _ in columns()]
        expected = [*names[:_PARTITION], *(f"p{i}" for i in range(n_parts)),
                    *names[_PARTITION + 1:]]
        if table.column_names != expected or any(
                table.column(name).type != type_ for name, type_ in columns()
                if name != "partition"):
            raise ValueError("the stored columns are not the ones this version writes")
        super().__init__(table, table.num_rows)
        self._n_parts = n_parts

    @classmethod
    def of(cls, table: pa.Table) -> StoredEntries:
        """The entries of a table of :func:`table_of` (its metadata says how many partition
        fields); KeyError / ValueError when it is not one."""
        return cls(table, int((table.schema.metadata or {})[b"floe.partition_fields"]))

    def _build(self, source: pa.Table) -> list[ManifestEntry]:
        return _entries(source, self._n_parts)

    @property
    def partition_fields(self) -> int:
        """How many partition columns (``p0``...) the table holds."""
        return self._n_parts

    def take(self, rows: Sequence[int]) -> list[ManifestEntry]:
        """The entries at ``rows`` (in that order), built alone while the others are not."""
        table = self.source
        if table is None:
            entries = self.items()
            return [entries[i] for i in rows]
        if not rows:
            return []
        from floe import arrow_compute as pc

        return _entries(pc.take(table, rows), self._n_parts)

    def fresh(self) -> list[ManifestEntry]:
        """Every entry, built without being kept: the columns stay what a cache holds (a
        scalar evaluator decodes the statistics maps of the entries it reads, which would
        stay decoded in built entries)."""
        table = self.source
        return list(self.items()) if table is None else _entries(table, self._n_parts)

    def data_file_column(self, name: str) -> list[Any]:
        """One field of every entry's data file (``file_path``, ``record_count``...) or of the
        entry (``sequence_number``...), without building the entries."""
        table = self.source
        if table is None:
            entries = self.items()
            if name in _ENTRY_FIELDS:
                return [getattr(e, name) for e in entries]
            return [getattr(e.data_file, name) for e in entries]
        return _values(table.column(name), name in _FEW_VALUES)

    def arrow_column(self, name: str) -> pa.Array | None:
        """:meth:`data_file_column` as an Arrow array while the entries are not built (None
        once they are)."""
        table = self.source
        return None if table is None else table.column(name).combine_chunks()

    def partition_groups(self) -> list[tuple[Any, ...]] | None:
        """The entries grouped by (spec id, partition, content), each group as ``(spec_id,
        partition tuple, content, files, record count, size in bytes, [file sizes])``, read
        from the columns (None once the entries are built, or for partition values Arrow
        cannot group: then read the entries)."""
        import pyarrow as pa

        table = self.source
        if table is None:
            return None
        parts = [f"p{i}" for i in range(self._n_parts)]
        keys = ["spec_id", *parts, "content"]
        try:
            grouped = table.select([*keys, "record_count", "file_size_in_bytes"]).group_by(
                keys, use_threads=False).aggregate([
                    ("record_count", "sum"), ("file_size_in_bytes", "sum"),
                    ("file_size_in_bytes", "list")])
        except pa.ArrowException:
            return None
        col = {name: grouped.column(name).to_pylist() for name in grouped.column_names}
        partitions = list(zip(*(col[p] for p in parts), strict=True)) if parts \
            else [()] * grouped.num_rows
        return [(spec_id, partition, content, len(sizes), records, size, sizes)
                for spec_id, partition, content, records, size, sizes in zip(
                    col["spec_id"], partitions, col["content"], col["record_count_sum"],
                    col["file_size_in_bytes_sum"], col["file_size_in_bytes_list"],
                    strict=True)]


# -- the flat form of an entry (the cache's rows, what worker processes send) --------------

_COUNT_FIELDS = (6, 7, 8, 9)  # column_sizes ... nan_value_counts positions in DataFile
_BOUND_FIELDS = (10, 11)
_CONTENT_POS, _FORMAT_POS = 0, 2
_STATUSES = {s.value: s for s in ManifestEntryStatus}
_CONTENTS = {c.value: c for c in FileContent}
_FORMATS = {f.value: f for f in FileFormat}


def _raw_map(m: Any, encode: Any) -> bytes | None:
    """A stats map as its Avro bytes: kept as read while undecoded, else encoded again."""
    if m is None:
        return None
    raw = m.raw if isinstance(m, LazyMap) else None
    return raw if raw is not None else encode(m)


def wire(e: ManifestEntry) -> tuple[Any, ...]:
    """An entry as a flat tuple of plain values in :data:`_NAMES` order (no enums, stats maps
    as their Avro bytes): what the cache stores and what worker processes send (it pickles
    fast). :func:`unwire` reads it back."""
    values: list[Any] = list(e.data_file)
    values[_CONTENT_POS] = int(values[_CONTENT_POS])
    values[_FORMAT_POS] = str(values[_FORMAT_POS])
    for i in _COUNT_FIELDS:
        values[i] = _raw_map(values[i], encode_int_map)
    for i in _BOUND_FIELDS:
        values[i] = _raw_map(values[i], encode_bytes_map)
    return (int(e.status), e.snapshot_id, e.sequence_number, e.file_sequence_number, *values)


def unwire(rows: Sequence[tuple[Any, ...]]) -> list[ManifestEntry]:
    """The entries of :func:`wire` rows."""
    if not rows:
        return []
    cols = list(zip(*rows, strict=True))
    return _build({name: list(cols[i]) for i, name in enumerate(_NAMES) if i != _PARTITION},
                  list(cols[_PARTITION]))


def _entries(table: pa.Table, n_parts: int) -> list[ManifestEntry]:
    """The entries of a stored table (its columns as Python values, one partition column
    per partition field)."""
    col = {name: _values(table.column(name), name in _FEW_VALUES)
           for name, _ in columns() if name != "partition"}
    parts = [table.column(f"p{i}").to_pylist() for i in range(n_parts)]
    partitions = list(zip(*parts, strict=True)) if parts else [()] * table.num_rows
    return _build(col, partitions)


def _build(col: dict[str, list[Any]], partitions: list[Any]) -> list[ManifestEntry]:
    """Entries from the columns of their flat form, built column by column (several times
    faster than row by row): enums and lazy stats maps back in place."""
    lazy, packed = LazyIntMap, LazyBytesMap
    for name in ("column_sizes", "value_counts", "null_value_counts", "nan_value_counts"):
        col[name] = [None if v is None else lazy(v) for v in col[name]]
    for name in ("lower_bounds", "upper_bounds"):
        col[name] = [None if v is None else packed(v) for v in col[name]]
    new, contents, formats = tuple.__new__, _CONTENTS, _FORMATS
    files = [new(DataFile, t) for t in zip(
        [contents[v] for v in col["content"]], col["file_path"],
        [formats.get(v, v) for v in col["file_format"]], partitions, col["record_count"],
        col["file_size_in_bytes"], col["column_sizes"], col["value_counts"],
        col["null_value_counts"], col["nan_value_counts"], col["lower_bounds"],
        col["upper_bounds"], col["key_metadata"], col["split_offsets"], col["equality_ids"],
        col["sort_order_id"], col["spec_id"], col["first_row_id"],
        col["referenced_data_file"], col["content_offset"], col["content_size_in_bytes"],
        strict=True)]
    return [new(ManifestEntry, t) for t in zip(
        [_STATUSES[v] for v in col["status"]], col["snapshot_id"], col["sequence_number"],
        col["file_sequence_number"], files, strict=True)]


_stores: dict[tuple[str, int], ManifestStore] = {}
_stores_lock = threading.Lock()


def _default_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "floe" / "manifests"


def manifest_store() -> ManifestStore | None:
    """The store the environment configures (module docstring), or None when it is off."""
    raw = os.environ.get("FLOE_MANIFEST_CACHE", "").strip()
    if raw.lower() in ("off", "0", "false", "no", "none"):
        return None
    root = os.path.abspath(raw) if raw else str(_default_root())
    try:
        max_bytes = int(os.environ.get("FLOE_MANIFEST_CACHE_BYTES", "") or DEFAULT_MAX_BYTES)
    except ValueError:
        max_bytes = DEFAULT_MAX_BYTES
    with _stores_lock:
        store = _stores.get((root, max_bytes))
        if store is None:
            store = _stores[(root, max_bytes)] = ManifestStore(root, max_bytes)
        return store
