"""Scan planning and the delete index (spec "Scan Planning").

``plan_files(io, metadata, ...)`` returns a :class:`ScanPlan` of :class:`FileScanTask`;
:mod:`floe.scan.readers` reads the tasks as Arrow record batches.
"""

from floe.scan.delete_index import DeleteFile, DeleteFileIndex, DeleteMatch
from floe.scan.explain import Funnel, PlanExplain
from floe.scan.manifests import DEFAULT_CACHE, ManifestCache, read_live_entries
from floe.scan.planning import (
    FileScanTask,
    ScanPlan,
    SnapshotSelection,
    plan_files,
    select_snapshot,
)

__all__ = [
    "DeleteFile", "DeleteFileIndex", "DeleteMatch", "Funnel", "PlanExplain",
    "DEFAULT_CACHE", "ManifestCache", "read_live_entries", "FileScanTask", "ScanPlan",
    "SnapshotSelection", "plan_files", "select_snapshot",
]
