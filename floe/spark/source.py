"""The ``floe`` Python data source for PySpark 4 (``spark.read.format("floe")`` /
``df.write.format("floe")``): floe plans and commits, Spark's executors move the bytes.

Spark calls the pieces of a data source in separate Python processes (SPARK_NOTES): the
:class:`FloeDataSource` is built from the options wherever it is needed, the reader and
writer are pickled from the driver's planning process to the executors and to the process
that commits. So everything here is small and picklable: a :class:`TableRef` naming the table
(a path, or a catalog with its resolved configuration), the metadata location the operation
started from, and parsed options. Metadata files are immutable, so each process parses one at
most once (:func:`metadata_at`).

Options (keys are case-insensitive, values strings; Java's names where Java has the option):

* ``table`` — a table directory, a ``*.metadata.json`` file (read only) or
  ``CATALOG:namespace.table`` (:mod:`floe.catalog.config`); ``load(path)`` works too.
* reads: ``snapshot-id``, ``as-of-timestamp`` (ms), ``branch``, ``tag``, ``filter`` (a floe
  filter, applied exactly), ``start-snapshot-id`` / ``end-snapshot-id`` (appended rows of
  ``(start, end]``), ``split-size``, ``file-open-cost``, ``case-sensitive``
  (:mod:`floe.spark.reader`).
* writes: ``overwrite-mode`` (``static`` / ``dynamic``), ``filter`` (static overwrite),
  ``branch``, ``isolation-level``, ``target-file-size-bytes``, ``write-id``
  (:mod:`floe.spark.writer`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, overload

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceWriter
from pyspark.sql.types import StructType

from floe.catalog.base import TableIdentifier, read_metadata
from floe.catalog.config import (
    STORAGE_PREFIXES,
    CatalogConfig,
    load_catalog,
    load_catalogs,
    parse_table_arg,
)
from floe.errors import ValidationError
from floe.io import FileIO
from floe.metadata import TableMetadata

if TYPE_CHECKING:
    from floe.table import Table

__all__ = ["FORMAT", "FloeDataSource", "TableRef", "metadata_at", "Options"]

#: The name Spark knows the source by: ``spark.read.format(FORMAT)``.
FORMAT = "floe"
#: Option carrying a resolved catalog configuration (set by :func:`floe.spark.read` /
#: :func:`floe.spark.write`, so the processes Spark starts need no catalog file). "secret" in
#: the key makes Spark redact the value (a SQL catalog's URI may hold a password) wherever it
#: shows options (``spark.redaction.regex``).
CATALOG_CONFIG = "catalog-config-secret"

#: Option naming a pickled :class:`floe.spark.compaction.RewriteJob` (compaction's sort).
REWRITE_JOB = "rewrite-job"

def metadata_at(io: FileIO, location: str) -> TableMetadata:
    """The parsed metadata file at ``location``, cached per process (Python workers are
    reused; floe.catalog.base.read_metadata)."""
    return read_metadata(io, location)


class Options:
    """The options Spark passes (keys lower-cased, values strings), read with checks."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.raw = {str(k).lower(): str(v) for k, v in options.items()}

    def get(self, key: str) -> str | None:
        value = self.raw.get(key)
        return None if value is None or value.strip() == "" else value.strip()

    @overload
    def int(self, key: str) -> int | None: ...

    @overload
    def int(self, key: str, default: int) -> int: ...

    def int(self, key: str, default: int | None = None) -> int | None:
        """The option as an integer; ``default`` when it is not given (0 is given)."""
        value = self.get(key)
        if value is None:
            return default
        try:
            return int(value)
        except ValueError:
            raise ValidationError(f"option {key}={value!r} is not an integer") from None

    def bool(self, key: str, default: bool) -> bool:
        value = self.get(key)
        if value is None:
            return default
        if value.lower() not in ("true", "false"):
            raise ValidationError(f"option {key}={value!r} is not true or false")
        return value.lower() == "true"


@dataclass(frozen=True)
class TableRef:
    """Which table an operation is on, in a form every Spark process can open: a path (with
    the storage properties to reach it: ``s3.*``, ``gcs.*``, ``adls.*`` options), or a
    catalog's configuration (its storage properties in it) and the identifier in it. Spark's
    JVM reads and writes no table file: the Python side does, with floe's FileIO."""

    name: str
    path: str | None = None
    catalog: CatalogConfig | None = None
    identifier: TableIdentifier | None = None
    properties: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_options(cls, options: Options) -> TableRef:
        name = options.get("table") or options.get("path")
        if name is None and options.get("paths"):
            paths = json.loads(options.raw["paths"])
            if len(paths) != 1:
                raise ValidationError("the floe source reads one table: give one path")
            name = paths[0]
        if name is None:
            raise ValidationError(
                "no table given: use .option('table', ...) or .load(TABLE) with a table "
                "directory or CATALOG:namespace.table")
        storage = tuple(sorted((k, v) for k, v in options.raw.items()
                               if k.startswith(STORAGE_PREFIXES)))
        if storage and parse_table_arg(name) is None:
            return cls(name, path=name, properties=storage)
        raw_config = options.get(CATALOG_CONFIG)
        if raw_config is not None:
            parsed = parse_table_arg(name)
            if parsed is None:
                raise ValidationError(f"option {CATALOG_CONFIG} needs a CATALOG:namespace.table "
                                      f"table, not {name!r}")
            doc = json.loads(raw_config)
            return cls(name, catalog=CatalogConfig(doc["name"], doc["type"],
                                                   dict(doc["options"])),
                       identifier=parsed[1])
        return cls.resolve(name)

    @classmethod
    def resolve(cls, name: str) -> TableRef:
        """A path stays a path; ``CATALOG:ns.table`` is looked up in the catalog file (and
        ``$FLOE_WAREHOUSE``) of this process, and its configuration kept."""
        parsed = parse_table_arg(name)
        if parsed is None or os.path.exists(name):
            return cls(name, path=name)
        configs = load_catalogs()
        if parsed[0] not in configs:
            load_catalog(parsed[0], configs)  # raises NotFound naming the configured ones
        return cls(name, catalog=configs[parsed[0]], identifier=parsed[1])

    def catalog_option(self) -> str | None:
        """The value of :data:`CATALOG_CONFIG` that makes another process open this table."""
        if self.catalog is None:
            return None
        c = self.catalog
        return json.dumps({"name": c.name, "type": c.type, "options": c.options})

    def load(self) -> tuple[FileIO, str, TableMetadata]:
        """(io, metadata location, metadata) of the table's current state."""
        if self.catalog is None:
            from floe.catalog.filesystem import resolve_metadata_location

            io = FileIO(dict(self.properties))
            assert self.path is not None
            location = resolve_metadata_location(io, self.path)
            return io, location, metadata_at(io, location)
        with self.open() as table:
            return table.io, table.metadata_location, table.metadata

    @contextmanager
    def open(self) -> Iterator[Table]:
        """The table, committing through its catalog while the block runs."""
        if self.catalog is None:
            from floe.catalog.filesystem import directory_table

            assert self.path is not None
            if self.path.endswith(".json"):
                raise ValidationError(f"{self.path} is a metadata file: give the table "
                                      "directory (or CATALOG:namespace.table) to write")
            yield directory_table(self.path, FileIO(dict(self.properties)))
            return
        assert self.identifier is not None
        catalog = self.catalog.create()
        try:
            yield catalog.load_table(self.identifier)
        finally:
            catalog.close()


class FloeDataSource(DataSource):
    """``format("floe")``: reads planned by floe, writes committed by floe."""

    def __init__(self, options: dict[str, str]) -> None:
        super().__init__(options)
        self.opts = Options(options)
        job = self.opts.get(REWRITE_JOB)
        if job is not None:
            from floe.spark.compaction import RewriteJob

            self.job: RewriteJob | None = RewriteJob.load(job)
            return
        self.job = None
        self.table = TableRef.from_options(self.opts)

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> StructType:
        if self.job is not None:
            return self.job.spark_schema()
        from floe.spark.reader import read_state
        from floe.spark.types import to_spark_schema

        state = read_state(self.table, self.opts)
        row_filter = self.opts.get("filter")
        if row_filter is not None:  # a bad filter fails at load(), not at the first action
            from floe.expressions import bind, parse_filter

            bind(state.schema, parse_filter(row_filter), self.opts.bool("case-sensitive", True))
        return to_spark_schema(state.schema)

    def reader(self, schema: StructType) -> DataSourceReader:
        if self.job is not None:
            from floe.spark.compaction import RewriteReader

            return RewriteReader(self.job)
        from floe.spark.reader import FloeReader

        return FloeReader(self.table, self.opts, schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        if self.job is not None:
            from floe.spark.compaction import RewriteWriter

            return RewriteWriter(self.job)
        from floe.spark.writer import FloeWriter

        return FloeWriter(self.table, self.opts, schema, overwrite)


def options_of(table: str | TableRef, options: Mapping[str, Any]) -> dict[str, str]:
    """Spark options for ``table`` and keyword options (``snapshot_id=1`` →
    ``snapshot-id``), with the catalog resolved here when ``table`` names one, and the
    storage properties of a :class:`TableRef` path (under the options given)."""
    ref = table if isinstance(table, TableRef) else TableRef.resolve(table)
    out = dict(ref.properties)
    out.update({k.replace("_", "-"): str(v) for k, v in options.items() if v is not None})
    out["table"] = ref.name
    config = ref.catalog_option()
    if config is not None:
        out[CATALOG_CONFIG] = config
    return out
