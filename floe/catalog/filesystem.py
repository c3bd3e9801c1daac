"""Find a table's current metadata file in a directory (spec "File System Tables").

Two layouts exist in the wild:

* Hadoop tables (spec "File System Tables"): ``metadata/v<N>.metadata.json`` (also
  ``v<N>.gz.metadata.json`` and the older ``v<N>.metadata.json.gz``) plus
  ``metadata/version-hint.text`` holding the latest ``N``. The hint is written after the
  metadata file, so it may lag behind: Java's ``HadoopTableOperations`` reads it and then
  probes ``N+1, N+2, ...``; when it is missing or unreadable it lists the directory.
* Metastore tables (Hive, Glue, JDBC, REST): ``metadata/<NNNNN>-<uuid>.metadata.json``; the
  catalog holds the pointer, so without it the highest ``NNNNN`` is the best guess.

Hadoop's checksum side files (``.v3.metadata.json.crc``) and other hidden files are ignored.
"""

from __future__ import annotations

import re

from floe.errors import NotFound
from floe.io import FileIO
from floe.metadata import TableMetadata, parse_metadata

__all__ = [
    "load_table_metadata",
    "metadata_file_location",
    "resolve_metadata_location",
    "version_hint_location",
]

METADATA_DIR = "metadata"
VERSION_HINT = "version-hint.text"
_HADOOP_NAME = re.compile(r"^v(\d+)(?:\.gz)?\.metadata\.json(?:\.gz)?$")
_METASTORE_NAME = re.compile(
    r"^(\d+)-[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"
    r"(?:\.gz)?\.metadata\.json(?:\.gz)?$"
)
# Probed in this order for each Hadoop version (Java's codec order: plain, then gzip).
_HADOOP_SUFFIXES = (".metadata.json", ".gz.metadata.json", ".metadata.json.gz")


def _join(base: str, name: str) -> str:
    return f"{base.rstrip('/')}/{name}"


def _basename(location: str) -> str:
    return location.rstrip("/").rsplit("/", 1)[-1]


def is_metadata_file_name(name: str) -> bool:
    return name.endswith((".metadata.json", ".metadata.json.gz"))


def version_hint_location(table_location: str) -> str:
    return _join(_join(table_location, METADATA_DIR), VERSION_HINT)


def metadata_file_location(table_location: str, version: int, compressed: bool = False) -> str:
    """Where a Hadoop table keeps version ``version``: ``metadata/v<N>[.gz].metadata.json``."""
    suffix = ".gz.metadata.json" if compressed else ".metadata.json"
    return _join(_join(table_location, METADATA_DIR), f"v{version}{suffix}")


def _hadoop_file(io: FileIO, metadata_dir: str, version: int) -> str | None:
    for suffix in _HADOOP_SUFFIXES:
        candidate = _join(metadata_dir, f"v{version}{suffix}")
        if io.exists(candidate):
            return candidate
    return None


def _read_hint(io: FileIO, metadata_dir: str) -> int | None:
    try:
        text = io.read(_join(metadata_dir, VERSION_HINT)).decode("utf-8").strip()
    except (NotFound, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


def _scan(io: FileIO, metadata_dir: str) -> str | None:
    """The newest metadata file by name: Hadoop versions first, else metastore sequence."""
    hadoop: list[tuple[int, str]] = []
    metastore: list[tuple[int, str]] = []
    for location in io.list(metadata_dir):
        rel = location[len(metadata_dir.rstrip("/")) + 1:]
        if "/" in rel or rel.startswith(".") or rel.endswith(".crc"):
            continue
        if m := _HADOOP_NAME.match(rel):
            hadoop.append((int(m.group(1)), location))
        elif m := _METASTORE_NAME.match(rel):
            metastore.append((int(m.group(1)), location))
    if hadoop:
        return max(hadoop)[1]
    if metastore:
        return max(metastore)[1]
    return None


def _probe_upward(io: FileIO, metadata_dir: str, location: str) -> str:
    m = _HADOOP_NAME.match(_basename(location))
    if m is None:
        return location
    version = int(m.group(1))
    while (newer := _hadoop_file(io, metadata_dir, version + 1)) is not None:
        location, version = newer, version + 1
    return location


def resolve_metadata_location(io: FileIO, table_arg: str) -> str:
    """The metadata file ``table_arg`` refers to.

    ``table_arg`` is a metadata file (returned as is), a table directory, or the table's
    ``metadata`` directory. Raises NotFound when nothing usable is there.
    """
    if not io.exists(table_arg):
        raise NotFound(f"{table_arg}: no such file or directory")
    if not io.is_dir(table_arg):
        return table_arg
    metadata_dir = _join(table_arg, METADATA_DIR)
    if not io.is_dir(metadata_dir):
        if _basename(table_arg) == METADATA_DIR:
            metadata_dir = table_arg
        else:
            raise NotFound(
                f"{table_arg}: not an Iceberg table directory (it has no {METADATA_DIR}/ "
                f"directory)"
            )
    hint = _read_hint(io, metadata_dir)
    found = _hadoop_file(io, metadata_dir, hint) if hint is not None else None
    if found is None:
        found = _scan(io, metadata_dir)
    if found is None:
        raise NotFound(
            f"{table_arg}: no table metadata found in {metadata_dir} (looked for "
            f"v<N>.metadata.json, v<N>.gz.metadata.json and <NNNNN>-<uuid>.metadata.json)"
        )
    return _probe_upward(io, metadata_dir, found)


def load_table_metadata(io: FileIO, table_arg: str) -> tuple[str, TableMetadata]:
    """Resolve ``table_arg`` and parse the metadata file: ``(location, metadata)``."""
    location = resolve_metadata_location(io, table_arg)
    return location, parse_metadata(io.read(location), location)
