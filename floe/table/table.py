"""A table of a catalog: its current metadata and the way to change it (a transaction)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import pyarrow as pa

from floe.io import FileIO
from floe.metadata import TableMetadata, parse_metadata
from floe.partitioning import PartitionSpec
from floe.schema import Schema
from floe.snapshots import Snapshot
from floe.sorting import SortOrder

if TYPE_CHECKING:
    from floe.catalog.base import Catalog, TableIdentifier
    from floe.table.transaction import Transaction

__all__ = ["Table"]


class Table:
    """One table as last loaded: ``metadata`` is immutable, :meth:`refresh` reloads it.

    Changes go through :meth:`new_transaction` (many changes, one commit) or the
    one-commit conveniences (:meth:`append`, :meth:`delete_files`, :meth:`set_properties`).
    """

    def __init__(
        self,
        catalog: Catalog,
        identifier: TableIdentifier,
        metadata: TableMetadata,
        metadata_location: str,
    ) -> None:
        self.catalog = catalog
        self.identifier = identifier
        self.metadata = metadata
        self.metadata_location = metadata_location

    def __repr__(self) -> str:
        return f"Table({self.catalog.name}:{self.identifier}, {self.metadata_location})"

    @property
    def io(self) -> FileIO:
        return self.catalog.io

    @property
    def location(self) -> str:
        return self.metadata.location

    @property
    def properties(self) -> dict[str, str]:
        return self.metadata.properties

    @property
    def format_version(self) -> int:
        return self.metadata.format_version

    def schema(self) -> Schema:
        return self.metadata.schema()

    def spec(self) -> PartitionSpec:
        return self.metadata.spec()

    def sort_order(self) -> SortOrder:
        return self.metadata.sort_order()

    def current_snapshot(self) -> Snapshot | None:
        return self.metadata.current_snapshot()

    def snapshots(self) -> tuple[Snapshot, ...]:
        return self.metadata.snapshots

    def snapshot_by_id(self, snapshot_id: int) -> Snapshot | None:
        return self.metadata.snapshot_by_id(snapshot_id)

    def refresh(self, *, force: bool = False) -> Table:
        """Reload the current metadata from the catalog (parsed when it moved, or always with
        ``force``: a file-system table dropped and re-created reuses version names)."""
        location = self.catalog.metadata_location(self.identifier)
        if force or location != self.metadata_location:
            self.metadata = parse_metadata(self.io.read(location), location)
            self.metadata_location = location
        return self

    def new_transaction(self) -> Transaction:
        from floe.table.transaction import Transaction

        return Transaction(self)

    # -- one-commit conveniences ---------------------------------------------------------

    def append(self, rows: pa.Table, *, timestamp_ms: int | None = None) -> Table:
        """Write ``rows`` as data files partitioned by the table's spec and commit them in one
        append snapshot (a merge append, governed by ``commit.manifest-merge.enabled``)."""
        txn = self.new_transaction()
        txn.append(rows, timestamp_ms=timestamp_ms)
        txn.commit()
        return self

    def delete_files(self, paths: Iterable[str]) -> Table:
        """Remove data or delete files by path in one ``delete`` snapshot."""
        txn = self.new_transaction()
        txn.delete_files(paths)
        txn.commit()
        return self

    def set_properties(self, updates: Mapping[str, str]) -> Table:
        txn = self.new_transaction()
        txn.set_properties(updates)
        txn.commit()
        return self
