"""A table of a catalog: its current metadata and the way to change it (a transaction)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from floe.io import FileIO
from floe.metadata import TableMetadata
from floe.partitioning import PartitionSpec
from floe.schema import Schema
from floe.snapshots import MAIN_BRANCH, Snapshot
from floe.sorting import SortOrder

if TYPE_CHECKING:  # annotations only (opening a table needs no Arrow)
    import pyarrow as pa

    from floe.catalog.base import Catalog, TableIdentifier
    from floe.table.manage_snapshots import ManageSnapshots
    from floe.table.transaction import Transaction
    from floe.table.update_schema import UpdateSchema
    from floe.table.update_spec import ReplaceSortOrder, UpdateSpec

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
        io: FileIO | None = None,
    ) -> None:
        self.catalog = catalog
        self.identifier = identifier
        self.metadata = metadata
        self.metadata_location = metadata_location
        self._io = io

    def __repr__(self) -> str:
        return f"Table({self.catalog.name}:{self.identifier}, {self.metadata_location})"

    @property
    def io(self) -> FileIO:
        """The table's files: the catalog's FileIO, or the one its catalog made for this
        table (a REST catalog's storage config and credentials for it)."""
        return self._io if self._io is not None else self.catalog.io

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
            self.metadata = self.catalog.read_metadata(location)
            self.metadata_location = location
        return self

    def new_transaction(self) -> Transaction:
        from floe.table.transaction import Transaction

        return Transaction(self)

    # -- one-commit conveniences ---------------------------------------------------------

    def append(self, rows: pa.Table, *, branch: str = MAIN_BRANCH,
               wap_id: str | None = None) -> Table:
        """Write ``rows`` as data files partitioned by the table's spec and commit them in one
        append snapshot to ``branch`` (a merge append, governed by
        ``commit.manifest-merge.enabled``); with ``wap_id`` the snapshot is only staged."""
        txn = self.new_transaction()
        txn.append(rows, branch=branch, wap_id=wap_id)
        txn.commit()
        return self

    def delete_files(self, paths: Iterable[str], *, branch: str = MAIN_BRANCH) -> Table:
        """Remove data or delete files by path in one ``delete`` snapshot."""
        txn = self.new_transaction()
        txn.delete_files(paths, branch=branch)
        txn.commit()
        return self

    def delete_where(self, row_filter: Any, *, mode: str | None = None,
                     branch: str = MAIN_BRANCH, isolation_level: str | None = None,
                     case_sensitive: bool = True) -> Table:
        """Delete the rows matching ``row_filter`` in one commit (see
        :meth:`Transaction.delete_where`)."""
        self.new_transaction().delete_where(
            row_filter, mode=mode, branch=branch, isolation_level=isolation_level,
            case_sensitive=case_sensitive).commit()
        return self

    def overwrite_by_filter(self, row_filter: Any, rows: pa.Table, *,
                            branch: str = MAIN_BRANCH, isolation_level: str | None = None
                            ) -> Table:
        self.new_transaction().overwrite_by_filter(
            row_filter, rows, branch=branch, isolation_level=isolation_level).commit()
        return self

    def overwrite_partitions(self, rows: pa.Table, *, branch: str = MAIN_BRANCH,
                             isolation_level: str | None = None) -> Table:
        self.new_transaction().overwrite_partitions(
            rows, branch=branch, isolation_level=isolation_level).commit()
        return self

    def delete_equal(self, columns: Sequence[str], keys: pa.Table, *, scope: str = "auto",
                     branch: str = MAIN_BRANCH) -> Table:
        self.new_transaction().delete_equal(columns, keys, scope=scope, branch=branch).commit()
        return self

    def set_properties(self, updates: Mapping[str, str]) -> Table:
        txn = self.new_transaction()
        txn.set_properties(updates)
        txn.commit()
        return self

    # -- builders whose commit() commits at once ------------------------------------------

    def manage_snapshots(self) -> ManageSnapshots:
        """Rollback, set-current, cherry-pick, branches and tags (Java ``manageSnapshots``),
        committed together by the builder's ``commit()``."""
        from floe.table.manage_snapshots import ManageSnapshots

        return ManageSnapshots(self.new_transaction(), autocommit=True)

    def update_schema(self, *, allow_incompatible: bool = False,
                      case_sensitive: bool = True) -> UpdateSchema:
        """Schema changes, committed by the builder's ``commit()`` (Java ``updateSchema``)."""
        from floe.table.update_schema import UpdateSchema

        return UpdateSchema(self.new_transaction(), allow_incompatible=allow_incompatible,
                            case_sensitive=case_sensitive, autocommit=True)

    def update_spec(self, *, case_sensitive: bool = True) -> UpdateSpec:
        """Partition spec changes, committed by the builder's ``commit()``."""
        from floe.table.update_spec import UpdateSpec

        return UpdateSpec(self.new_transaction(), case_sensitive=case_sensitive,
                          autocommit=True)

    def replace_sort_order(self, *, case_sensitive: bool = True) -> ReplaceSortOrder:
        """A new default sort order, committed by the builder's ``commit()``."""
        from floe.table.update_spec import ReplaceSortOrder

        return ReplaceSortOrder(self.new_transaction(), case_sensitive=case_sensitive,
                                autocommit=True)
