"""Path-based create / append of file-system tables (spec "File System Tables").

Thin wrappers over :class:`~floe.catalog.filesystem.DirectoryCatalog` and the transaction
machinery, for callers that address a table by its directory (the CLI, the demo warehouse).
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa

from floe.catalog.filesystem import DirectoryCatalog, directory_table
from floe.io import FileIO
from floe.metadata import TableMetadata
from floe.partitioning import UNPARTITIONED, PartitionSpec
from floe.schema import Schema
from floe.sorting import UNSORTED_SORT_ORDER, SortOrder
from floe.table.snapshot_producer import new_snapshot_id

__all__ = ["create_table", "append", "new_snapshot_id"]


def create_table(
    io: FileIO,
    table_location: str,
    schema: Schema,
    spec: PartitionSpec = UNPARTITIONED,
    sort_order: SortOrder = UNSORTED_SORT_ORDER,
    properties: Mapping[str, str] | None = None,
    format_version: int = 2,
) -> tuple[str, TableMetadata]:
    """Create an empty table in ``table_location``; TableAlreadyExists if one is there."""
    catalog = DirectoryCatalog(table_location, io)
    table = catalog.create_table(
        catalog.identifier, schema, spec, sort_order, properties, None, format_version)
    return table.metadata_location, table.metadata


def append(
    io: FileIO, table_location: str, rows: pa.Table
) -> tuple[str, TableMetadata]:
    """Append rows as new data files in one snapshot, with the commit loop's retries."""
    table = directory_table(table_location, io)
    table.append(rows)
    return table.metadata_location, table.metadata
