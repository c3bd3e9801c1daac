"""The live paths of a manifest without decoding its entries, where its manifest-list counts
allow (:class:`ManifestScanner`); reached through :mod:`floe.scan.manifests`, the one entry
point for reading manifest entries."""

from __future__ import annotations

import json
import re
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from floe import stats
from floe.avro import (
    MAGIC,
    AvroCorrupt,
    AvroTruncated,
    compile_decoder,
    container_blocks,
    encode_long,
)
from floe.errors import NotFound
from floe.io import FileIO
from floe.manifest import FileContent, ManifestContent, ManifestFile, read_manifest

__all__ = ["ManifestScanner"]


#: ``file_format`` values (spec "Manifests"), which follow ``file_path`` in ``data_file``.
_FORMATS = frozenset({b"PARQUET", b"AVRO", b"ORC", b"PUFFIN"})


@dataclass(frozen=True)
class _EntryLayout:
    """Where ``data_file.file_path`` is in a manifest-entry schema, when ``file_format``
    follows it (the layout every writer uses); None otherwise."""

    decode: Callable[..., int]
    data_file: int
    file_path: int


def _entry_layout(schema: Any) -> _EntryLayout | None:
    try:
        fields = schema["fields"]
        names = [f["name"] for f in fields]
        df_pos = names.index("data_file")
        df = fields[df_pos]["type"]
        df_fields = df["fields"] if isinstance(df, dict) else None
        if df_fields is None:
            return None
        df_names = [f["name"] for f in df_fields]
        fp = df_names.index("file_path")
        if df_names[fp + 1] != "file_format" or df_fields[fp]["type"] != "string" \
                or df_fields[fp + 1]["type"] != "string":
            return None
    except (KeyError, TypeError, ValueError, IndexError):
        return None
    return _EntryLayout(compile_decoder(schema, frozenset(
        {"column_sizes", "value_counts", "null_value_counts", "nan_value_counts"})), df_pos, fp)


#: ``file_format`` as Avro strings (length, then the name), which follow ``file_path``.
_FORMAT_AFTER = b"|".join(re.escape(bytes([2 * len(f)]) + f) + b"|" + re.escape(
    bytes([2 * len(f)]) + f.lower()) for f in sorted(_FORMATS))


_LENGTHS: dict[int, bytes] = {}


def _length_prefix(n: int) -> bytes:
    enc = _LENGTHS.get(n)
    if enc is None:
        enc = _LENGTHS[n] = encode_long(n)
    return enc


class ManifestScanner:
    """The live files of manifests, by full decoding or, when the manifest-list counts say
    every entry is live (no DELETED entry) in a data manifest, by scanning the decompressed
    Avro blocks for the paths.

    Decoding a manifest entry costs ~30 us (partition, bounds, counts); finding the paths in
    the bytes is ~50x cheaper. The scan learns the path prefix (up to the table location)
    from the first entry, which it decodes, finds each occurrence of that prefix, and reads
    the string there only when exactly one Avro length in front of it and a ``file_format``
    string right after it fit. It is used only when it finds exactly as many paths in each
    block as the block has entries; otherwise (a path elsewhere, a string that looks like a
    path) the manifest is decoded. ``scanned`` / ``decoded`` count manifests.
    """

    def __init__(self, io: FileIO, table_location: str) -> None:
        self.io = io
        self.location = table_location.rstrip("/")
        self.location_path = _location_path(self.location)
        self._layouts: dict[bytes, _EntryLayout | None] = {}
        self._patterns: dict[bytes, re.Pattern[bytes]] = {}
        self.scanned = 0
        self.decoded = 0

    def live_files(self, manifest: ManifestFile) -> dict[str, FileContent]:
        """Path → content of every live entry (NotFound / MetadataError when unreadable)."""
        if manifest.content == ManifestContent.DATA and manifest.deleted_files_count == 0 \
                and manifest.added_files_count is not None \
                and manifest.existing_files_count is not None:
            paths = self.scan(manifest)
            if paths is not None:
                self.scanned += 1
                return dict.fromkeys(paths, FileContent.DATA)
        self.decoded += 1
        return {e.data_file.file_path: e.data_file.content
                for e in read_manifest(self.io, manifest, discard_deleted=True)}

    def scan(self, manifest: ManifestFile) -> list[str] | None:
        """Every ``file_path`` of the manifest by scanning, or None when it cannot vouch for
        the result. Counts as a manifest read."""
        location = manifest.manifest_path
        try:
            data = self.io.read(location)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            raise NotFound(f"{location}: file does not exist") from None
        stats.count_read(stats.MANIFEST)
        try:
            return self._scan(data, manifest)
        except (AvroTruncated, AvroCorrupt, IndexError, struct.error, zlib.error, ValueError,
                KeyError, TypeError, UnicodeDecodeError, AttributeError, RecursionError):
            return None  # the decoder will say what is wrong with it

    def _scan(self, data: bytes, manifest: ManifestFile) -> list[str] | None:
        if data[:4] != MAGIC:
            return None
        meta, stored = container_blocks(data)
        raw_schema = meta.get("avro.schema", b"")
        if raw_schema not in self._layouts:
            self._layouts[raw_schema] = _entry_layout(json.loads(raw_schema))
        layout = self._layouts[raw_schema]
        if layout is None:
            return None
        blocks = [(count, block) for count, block, _ in stored]
        total = sum(c for c, _ in blocks)
        if total != (manifest.added_files_count or 0) + (manifest.existing_files_count or 0):
            return None
        first = next((b for c, b in blocks if c), None)
        if first is None:
            return []
        one: list[Any] = []
        layout.decode(first, 0, 1, one.append)
        prefix = self._prefix(one[0][layout.data_file][layout.file_path])
        if prefix is None:
            return None
        pattern = self._patterns.get(prefix)
        if pattern is None:
            # a path: the prefix and no control character, then the file_format string
            # (whose length byte is one)
            pattern = self._patterns[prefix] = re.compile(
                re.escape(prefix) + rb"[^\x00-\x1f]*(?=" + _FORMAT_AFTER + rb")")
        out: list[bytes] = []
        lengths = _LENGTHS
        for count, block in blocks:
            start = len(out)
            for m in pattern.finditer(block):
                a, b = m.span()
                enc = lengths.get(b - a) or _length_prefix(b - a)
                if block[a - len(enc):a] != enc:
                    return None  # inside another string: not a path of its own
                out.append(block[a:b])
            if len(out) - start != count:
                return None
        return [p.decode() for p in out]

    def _prefix(self, path: str) -> bytes | None:
        """``path`` up to the table location and the slash after it."""
        at = path.find(self.location_path + "/")
        if at < 0 or len(self.location_path) < 2:
            return None
        return path[:at + len(self.location_path) + 1].encode()


def _location_path(location: str) -> str:
    """The path part of a location (``file:/a/b`` → ``/a/b``, ``s3://b/a`` → ``/a``)."""
    scheme, sep, rest = location.partition(":")
    if not sep or "/" in scheme or len(scheme) < 2:
        return location
    if rest.startswith("//"):
        rest = "/" + rest[2:].partition("/")[2]
    return rest
