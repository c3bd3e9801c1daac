"""Planning a compaction (Java ``SizeBasedFileRewritePlanner`` / ``BinPackRewriteFilePlanner``
at Iceberg 1.10, with the options of ``RewriteDataFilesSparkAction``): which data files are
rewritten, in which groups, into how many files. Planning reads metadata only (and the
``file_path`` column of position delete files that may become dangling); nothing is written,
so the same :class:`CompactionPlan` serves a dry run, the local engine
(:mod:`floe.maintenance.compaction`) and an engine that moves the bytes elsewhere.

The rules, as Java applies them:

1. Plan a scan of the starting snapshot with the filter, ignoring residuals (whole files).
2. Group the tasks by partition of the table's *current* spec; a file of another spec goes to
   the group of the empty partition (Java: "data inside could contain values which belong to
   multiple partitions in the current spec").
3. Per partition, keep the files outside ``[min-file-size-bytes, max-file-size-bytes]`` or
   with at least ``delete-file-threshold`` delete files or a deleted-row ratio of at least
   ``delete-ratio-threshold`` (everything with ``rewrite-all``).
4. Bin-pack them in order into groups of at most ``max-file-group-size-bytes`` (a new group
   when the next file does not fit).
5. Keep a group when it has at least ``min-input-files`` files (and more than one), or more
   than one file and more bytes than the target, or more bytes than the max file size, or a
   file with too many deletes (every group with ``rewrite-all``).
6. Order groups by ``rewrite-job-order``; each group expects
   :meth:`RewriteOptions.expected_output_files` files of about the target size.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow.compute as pc

from floe.errors import InvalidArgument, ValidationError
from floe.inspect import partition_json
from floe.io import FileIO
from floe.table.delete_writer import POSITION_DELETE_SCHEMA
from floe.scan.readers import ReadOptions, read_task
from floe.manifest import DataFile, FileContent, ManifestContent, read_manifest_list
from floe.metadata import TableMetadata
from floe.properties import (
    DELETE_TARGET_FILE_SIZE,
    DELETE_TARGET_FILE_SIZE_DEFAULT,
    TARGET_FILE_SIZE,
    TARGET_FILE_SIZE_DEFAULT,
    int_property,
)
from floe.scan.delete_index import DeleteFile, referenced_data_file
from floe.scan.manifests import DEFAULT_CACHE, read_live_entries
from floe.scan.filters import ScanFilter
from floe.scan.planning import FileScanTask, plan_files
from floe.snapshots import MAIN_BRANCH, Snapshot
from floe.sorting import SortOrder, parse_sort_by
from floe.table.snapshot_producer import branch_head

if TYPE_CHECKING:
    from floe.table.table import Table

__all__ = [
    "BINPACK",
    "SORT",
    "STRATEGIES",
    "JOB_ORDERS",
    "JOB_ORDER_KEYS",
    "CompactionPlan",
    "FileGroup",
    "check_compaction",
    "RewriteOptions",
    "parse_options",
    "plan_compaction",
    "pack_groups",
    "select_groups",
    "referenced_data_file",
    "referenced_data_files",
    "live_data_files",
]

BINPACK = "binpack"
SORT = "sort"
STRATEGIES = (BINPACK, SORT)
#: Java ``RewriteJobOrder`` names.
JOB_ORDERS = ("none", "bytes-asc", "bytes-desc", "files-asc", "files-desc")

# -- option names (Java SizeBasedFileRewritePlanner, BinPackRewriteFilePlanner,
#    RewriteDataFiles, SparkShufflingDataRewritePlanner / SparkShufflingFileRewriteRunner) ----
TARGET_FILE_SIZE_BYTES = "target-file-size-bytes"
MIN_FILE_SIZE_BYTES = "min-file-size-bytes"
MAX_FILE_SIZE_BYTES = "max-file-size-bytes"
MIN_INPUT_FILES = "min-input-files"
REWRITE_ALL = "rewrite-all"
MAX_FILE_GROUP_SIZE_BYTES = "max-file-group-size-bytes"
DELETE_FILE_THRESHOLD = "delete-file-threshold"
DELETE_RATIO_THRESHOLD = "delete-ratio-threshold"
REWRITE_JOB_ORDER = "rewrite-job-order"
MAX_FILES_TO_REWRITE = "max-files-to-rewrite"
PARTIAL_PROGRESS_ENABLED = "partial-progress.enabled"
PARTIAL_PROGRESS_MAX_COMMITS = "partial-progress.max-commits"
PARTIAL_PROGRESS_MAX_FAILED_COMMITS = "partial-progress.max-failed-commits"
USE_STARTING_SEQUENCE_NUMBER = "use-starting-sequence-number"
REMOVE_DANGLING_DELETES = "remove-dangling-deletes"
OUTPUT_SPEC_ID = "output-spec-id"
MAX_CONCURRENT_FILE_GROUP_REWRITES = "max-concurrent-file-group-rewrites"
COMPRESSION_FACTOR = "compression-factor"
SHUFFLE_PARTITIONS_PER_FILE = "shuffle-partitions-per-file"

_SIZE_OPTIONS = (TARGET_FILE_SIZE_BYTES, MIN_FILE_SIZE_BYTES, MAX_FILE_SIZE_BYTES,
                 MIN_INPUT_FILES, REWRITE_ALL, MAX_FILE_GROUP_SIZE_BYTES)
#: Options of ``rewrite_data_files`` per strategy (Java's action + planner + runner).
DATA_OPTIONS = {
    BINPACK: frozenset((*_SIZE_OPTIONS, DELETE_FILE_THRESHOLD, DELETE_RATIO_THRESHOLD,
                        REWRITE_JOB_ORDER, MAX_FILES_TO_REWRITE, PARTIAL_PROGRESS_ENABLED,
                        PARTIAL_PROGRESS_MAX_COMMITS, PARTIAL_PROGRESS_MAX_FAILED_COMMITS,
                        USE_STARTING_SEQUENCE_NUMBER, REMOVE_DANGLING_DELETES, OUTPUT_SPEC_ID,
                        MAX_CONCURRENT_FILE_GROUP_REWRITES)),
}
DATA_OPTIONS[SORT] = DATA_OPTIONS[BINPACK] | {COMPRESSION_FACTOR, SHUFFLE_PARTITIONS_PER_FILE}
#: Options of ``rewrite_position_delete_files`` (RewritePositionDeleteFilesSparkAction).
POSITION_DELETE_OPTIONS = frozenset((*_SIZE_OPTIONS, REWRITE_JOB_ORDER,
                                     MAX_CONCURRENT_FILE_GROUP_REWRITES,
                                     PARTIAL_PROGRESS_ENABLED, PARTIAL_PROGRESS_MAX_COMMITS))

_MIN_FILE_SIZE_DEFAULT_RATIO = 0.75
_MAX_FILE_SIZE_DEFAULT_RATIO = 1.80
_MIN_INPUT_FILES_DEFAULT = 5
_MAX_FILE_GROUP_SIZE_BYTES_DEFAULT = 100 * 1024 ** 3
_DELETE_FILE_THRESHOLD_DEFAULT = 2 ** 31 - 1  # Integer.MAX_VALUE: off
_DELETE_RATIO_THRESHOLD_DEFAULT = 0.3
_PARTIAL_PROGRESS_MAX_COMMITS_DEFAULT = 10
_MAX_CONCURRENT_FILE_GROUP_REWRITES_DEFAULT = 5
_SPLIT_OVERHEAD = 5 * 1024
T = TypeVar("T")


# -- options -------------------------------------------------------------------------------------


def _int(options: Mapping[str, str], key: str, default: int) -> int:
    raw = options.get(key)
    if raw is None:
        return default
    try:
        return int(str(raw).strip())
    except ValueError:
        raise ValidationError(f"option {key}={raw!r} is not an integer") from None


def _float(options: Mapping[str, str], key: str, default: float) -> float:
    raw = options.get(key)
    if raw is None:
        return default
    try:
        return float(str(raw).strip())
    except ValueError:
        raise ValidationError(f"option {key}={raw!r} is not a number") from None


def _bool(options: Mapping[str, str], key: str, default: bool) -> bool:
    raw = options.get(key)
    if raw is None:
        return default
    value = str(raw).strip().lower()
    if value not in ("true", "false"):
        raise ValidationError(f"option {key}={raw!r} is not a boolean (true or false)")
    return value == "true"


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ValidationError(message)


@dataclass(frozen=True)
class RewriteOptions:
    """Parsed options of a rewrite, with Java's defaults and checks
    (``SizeBasedFileRewritePlanner.init`` and the action's ``validateAndInitOptions``)."""

    strategy: str
    target_file_size_bytes: int
    min_file_size_bytes: int
    max_file_size_bytes: int
    min_input_files: int = _MIN_INPUT_FILES_DEFAULT
    rewrite_all: bool = False
    max_file_group_size_bytes: int = _MAX_FILE_GROUP_SIZE_BYTES_DEFAULT
    delete_file_threshold: int = _DELETE_FILE_THRESHOLD_DEFAULT
    delete_ratio_threshold: float = _DELETE_RATIO_THRESHOLD_DEFAULT
    rewrite_job_order: str = "none"
    max_files_to_rewrite: int | None = None
    partial_progress_enabled: bool = False
    partial_progress_max_commits: int = _PARTIAL_PROGRESS_MAX_COMMITS_DEFAULT
    partial_progress_max_failed_commits: int = _PARTIAL_PROGRESS_MAX_COMMITS_DEFAULT
    use_starting_sequence_number: bool = True
    remove_dangling_deletes: bool = False
    output_spec_id: int = 0
    max_concurrent_file_group_rewrites: int = _MAX_CONCURRENT_FILE_GROUP_REWRITES_DEFAULT
    compression_factor: float = 1.0
    shuffle_partitions_per_file: int = 1
    given: tuple[tuple[str, str], ...] = ()

    # -- sizing (Java SizeBasedFileRewritePlanner) --------------------------------------------

    @property
    def write_max_file_size(self) -> int:
        """The size output files roll at: the target plus half the way to the max
        (``writeMaxFileSize``), so a group slightly over the target stays one file."""
        return int(self.target_file_size_bytes
                   + (self.max_file_size_bytes - self.target_file_size_bytes) * 0.5)

    def expected_output_files(self, input_size: int) -> int:
        """How many files ``input_size`` bytes become (``expectedOutputFiles``): round down
        when spreading the remainder keeps files within 10% of the target, else keep a
        remainder file; the sort strategy first scales by ``compression-factor``."""
        if self.strategy == SORT:
            return max(1, self._expected(int(input_size * self.compression_factor)))
        return self._expected(input_size)

    def _expected(self, input_size: int) -> int:
        target = self.target_file_size_bytes
        if input_size < target:
            return 1
        with_remainder = -(-input_size // target)
        without_remainder = input_size // target
        avg_without = input_size // without_remainder
        if input_size % target > self.min_file_size_bytes:
            return with_remainder
        if avg_without < min(1.1 * target, float(self.write_max_file_size)):
            return without_remainder
        return with_remainder

    def input_split_size(self, input_size: int) -> int:
        """Bytes of input per read split (``inputSplitSize``): the input spread over the
        expected files, at least the target and at most the write max size."""
        estimated = input_size // self.expected_output_files(input_size) + _SPLIT_OVERHEAD
        if estimated < self.target_file_size_bytes:
            return self.target_file_size_bytes
        return min(estimated, self.write_max_file_size)

    def to_json(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "target_file_size_bytes": self.target_file_size_bytes,
            "min_file_size_bytes": self.min_file_size_bytes,
            "max_file_size_bytes": self.max_file_size_bytes,
            "min_input_files": self.min_input_files,
            "rewrite_all": self.rewrite_all,
            "max_file_group_size_bytes": self.max_file_group_size_bytes,
            "delete_file_threshold": self.delete_file_threshold,
            "delete_ratio_threshold": self.delete_ratio_threshold,
            "rewrite_job_order": self.rewrite_job_order,
            "max_files_to_rewrite": self.max_files_to_rewrite,
            "partial_progress_enabled": self.partial_progress_enabled,
            "partial_progress_max_commits": self.partial_progress_max_commits,
            "use_starting_sequence_number": self.use_starting_sequence_number,
            "remove_dangling_deletes": self.remove_dangling_deletes,
            "output_spec_id": self.output_spec_id,
            "given": dict(self.given),
        }


def _refuse_unknown(options: Mapping[str, str], valid: frozenset[str], what: str) -> None:
    unknown = sorted(set(options) - valid)
    if unknown:
        raise ValidationError(
            f"cannot use option{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} "
            f"with {what}; valid options: {', '.join(sorted(valid))}")


def parse_options(md: TableMetadata, options: Mapping[str, str] | None, *,
                  strategy: str = BINPACK, position_deletes: bool = False) -> RewriteOptions:
    """Check and parse rewrite options (unknown names refused, listing the valid ones).

    ``position_deletes`` parses the options of a position delete rewrite, whose target
    defaults to ``write.delete.target-file-size-bytes``.
    """
    opts = {str(k): str(v) for k, v in (options or {}).items()}
    if position_deletes:
        _refuse_unknown(opts, POSITION_DELETE_OPTIONS, "rewrite_position_deletes")
        default_target = int_property(md, DELETE_TARGET_FILE_SIZE,
                                      DELETE_TARGET_FILE_SIZE_DEFAULT)
    else:
        _refuse_unknown(opts, DATA_OPTIONS[strategy], f"the {strategy} strategy")
        default_target = int_property(md, TARGET_FILE_SIZE, TARGET_FILE_SIZE_DEFAULT)
    target = _int(opts, TARGET_FILE_SIZE_BYTES, default_target)
    lo = _int(opts, MIN_FILE_SIZE_BYTES, int(target * _MIN_FILE_SIZE_DEFAULT_RATIO))
    hi = _int(opts, MAX_FILE_SIZE_BYTES, int(target * _MAX_FILE_SIZE_DEFAULT_RATIO))
    _check(target > 0, f"'{TARGET_FILE_SIZE_BYTES}' is set to {target} but must be > 0")
    _check(lo >= 0, f"'{MIN_FILE_SIZE_BYTES}' is set to {lo} but must be >= 0")
    _check(target > lo, f"'{TARGET_FILE_SIZE_BYTES}' ({target}) must be > "
                        f"'{MIN_FILE_SIZE_BYTES}' ({lo}), all new files will be smaller than "
                        "the min threshold")
    _check(target < hi, f"'{TARGET_FILE_SIZE_BYTES}' ({target}) must be < "
                        f"'{MAX_FILE_SIZE_BYTES}' ({hi}), all new files will be larger than "
                        "the max threshold")
    min_input = _int(opts, MIN_INPUT_FILES, _MIN_INPUT_FILES_DEFAULT)
    _check(min_input > 0, f"'{MIN_INPUT_FILES}' is set to {min_input} but must be > 0")
    group_size = _int(opts, MAX_FILE_GROUP_SIZE_BYTES, _MAX_FILE_GROUP_SIZE_BYTES_DEFAULT)
    _check(group_size > 0,
           f"'{MAX_FILE_GROUP_SIZE_BYTES}' is set to {group_size} but must be > 0")
    file_threshold = _int(opts, DELETE_FILE_THRESHOLD, _DELETE_FILE_THRESHOLD_DEFAULT)
    _check(file_threshold >= 0,
           f"'{DELETE_FILE_THRESHOLD}' is set to {file_threshold} but must be >= 0")
    ratio = _float(opts, DELETE_RATIO_THRESHOLD, _DELETE_RATIO_THRESHOLD_DEFAULT)
    _check(0 < ratio <= 1, f"'{DELETE_RATIO_THRESHOLD}' is set to {ratio} but must be > 0 "
                           "and <= 1")
    order = opts.get(REWRITE_JOB_ORDER, "none").strip().lower()
    _check(order in JOB_ORDERS, f"invalid rewrite job order name: {opts.get(REWRITE_JOB_ORDER)} "
                                f"(use one of {', '.join(JOB_ORDERS)})")
    max_files = opts.get(MAX_FILES_TO_REWRITE)
    max_files_to_rewrite = None if max_files is None else _int(opts, MAX_FILES_TO_REWRITE, 0)
    _check(max_files_to_rewrite is None or max_files_to_rewrite > 0,
           f"cannot set {MAX_FILES_TO_REWRITE} to {max_files}, the value must be positive")
    partial = _bool(opts, PARTIAL_PROGRESS_ENABLED, False)
    max_commits = _int(opts, PARTIAL_PROGRESS_MAX_COMMITS, _PARTIAL_PROGRESS_MAX_COMMITS_DEFAULT)
    _check(not partial or max_commits > 0,
           f"cannot set {PARTIAL_PROGRESS_MAX_COMMITS} to {max_commits}, the value must be "
           f"positive when {PARTIAL_PROGRESS_ENABLED} is true")
    concurrent = _int(opts, MAX_CONCURRENT_FILE_GROUP_REWRITES,
                      _MAX_CONCURRENT_FILE_GROUP_REWRITES_DEFAULT)
    _check(concurrent >= 1, f"cannot set {MAX_CONCURRENT_FILE_GROUP_REWRITES} to {concurrent}, "
                            "the value must be positive")
    output_spec_id = _int(opts, OUTPUT_SPEC_ID, md.default_spec_id)
    _check(md.spec_by_id(output_spec_id) is not None,
           f"cannot use output spec id {output_spec_id} because the table does not contain a "
           "reference to this spec-id")
    factor = _float(opts, COMPRESSION_FACTOR, 1.0)
    _check(factor > 0, f"'{COMPRESSION_FACTOR}' is set to {factor} but must be > 0")
    shuffle = _int(opts, SHUFFLE_PARTITIONS_PER_FILE, 1)
    _check(shuffle > 0, f"'{SHUFFLE_PARTITIONS_PER_FILE}' is set to {shuffle} but must be > 0")
    return RewriteOptions(
        strategy=strategy, target_file_size_bytes=target, min_file_size_bytes=lo,
        max_file_size_bytes=hi, min_input_files=min_input,
        rewrite_all=_bool(opts, REWRITE_ALL, False), max_file_group_size_bytes=group_size,
        delete_file_threshold=file_threshold, delete_ratio_threshold=ratio,
        rewrite_job_order=order, max_files_to_rewrite=max_files_to_rewrite,
        partial_progress_enabled=partial, partial_progress_max_commits=max_commits,
        partial_progress_max_failed_commits=_int(opts, PARTIAL_PROGRESS_MAX_FAILED_COMMITS,
                                                 max_commits),
        use_starting_sequence_number=_bool(opts, USE_STARTING_SEQUENCE_NUMBER, True),
        remove_dangling_deletes=_bool(opts, REMOVE_DANGLING_DELETES, False),
        output_spec_id=output_spec_id, max_concurrent_file_group_rewrites=concurrent,
        compression_factor=factor, shuffle_partitions_per_file=shuffle,
        given=tuple(sorted(opts.items())))


# -- delete files --------------------------------------------------------------------------------


def referenced_data_files(io: FileIO, md: TableMetadata, d: DeleteFile) -> frozenset[str]:
    """Every data file path a position delete file names: from its metadata when it is
    file-scoped, else from its ``file_path`` column."""
    one = referenced_data_file(d.data_file)
    if one is not None:
        return frozenset((one,))
    task = FileScanTask(d.data_file, (), None, d.spec_id, d.sequence_number)
    options = ReadOptions(md, POSITION_DELETE_SCHEMA, ["file_path"])
    paths: set[str] = set()
    for batch in read_task(io, task, options):
        paths.update(pc.unique(batch.column(0)).to_pylist())
    return frozenset(paths)


def live_data_files(io: FileIO, snapshot: Snapshot | None) -> dict[str, tuple[int, tuple[Any, ...],
                                                                               int]]:
    """Live data files of a snapshot: path → (spec id, partition, data sequence number)."""
    if snapshot is None or snapshot.manifest_list is None:
        return {}
    manifests = [m for m in read_manifest_list(io, snapshot.manifest_list)
                 if m.content == ManifestContent.DATA]
    out: dict[str, tuple[int, tuple[Any, ...], int]] = {}
    for m, live in zip(manifests, read_live_entries(io, manifests, DEFAULT_CACHE), strict=True):
        for e in live:
            out[e.data_file.file_path] = (m.partition_spec_id, tuple(e.data_file.partition),
                                          e.sequence_number or 0)
    return out


# -- the plan ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FileGroup:
    """One group of data files rewritten together (Java ``RewriteFileGroup``).

    ``partition`` is the grouping key in the table's default spec at planning
    (``partition_spec_id``); ``removed_delete_files`` are position delete files (and deletion
    vectors) that name only data files of this group or data files no longer live: the
    group's commit removes them, since they cannot apply to anything afterwards.
    """

    global_index: int
    partition_index: int
    partition_spec_id: int
    partition: tuple[Any, ...]
    tasks: tuple[FileScanTask, ...]
    output_spec_id: int
    max_output_file_size: int
    input_split_size: int
    expected_output_files: int
    removed_delete_files: tuple[DataFile, ...] = ()

    @property
    def input_files_count(self) -> int:
        return len(self.tasks)

    @property
    def input_size(self) -> int:
        """Bytes of the input data files (``inputFilesSizeInBytes``)."""
        return sum(t.data_file.file_size_in_bytes for t in self.tasks)

    @property
    def input_records(self) -> int:
        """Rows of the input files before deletes."""
        return sum(t.data_file.record_count for t in self.tasks)

    @property
    def data_files(self) -> tuple[DataFile, ...]:
        return tuple(t.data_file for t in self.tasks)

    @property
    def needs_repartition(self) -> bool:
        """The rows do not all land in one partition of the output spec as they are: files
        of another spec, or of several partitions (Java's range distribution case)."""
        first = self.tasks[0]
        return any(t.spec_id != self.output_spec_id for t in self.tasks) or any(
            tuple(t.data_file.partition) != tuple(first.data_file.partition)
            for t in self.tasks)

    def to_json(self, md: TableMetadata) -> dict[str, Any]:
        return {
            "global_index": self.global_index,
            "partition_index": self.partition_index,
            "partition": partition_json(md, self.partition_spec_id, self.partition),
            "partition_spec_id": self.partition_spec_id,
            "output_spec_id": self.output_spec_id,
            "input_files_count": self.input_files_count,
            "input_size_bytes": self.input_size,
            "input_records": self.input_records,
            "expected_output_files": self.expected_output_files,
            "max_output_file_size_bytes": self.max_output_file_size,
            "input_split_size_bytes": self.input_split_size,
            "input_files": [
                {"file_path": t.data_file.file_path, "spec_id": t.spec_id,
                 "partition": partition_json(md, t.spec_id, t.data_file.partition),
                 "file_size_in_bytes": t.data_file.file_size_in_bytes,
                 "record_count": t.data_file.record_count,
                 "sequence_number": t.sequence_number,
                 "delete_files": [d.path for d in t.delete_files]}
                for t in self.tasks],
            "removed_delete_files": [f.file_path for f in self.removed_delete_files],
        }


@dataclass(frozen=True)
class CompactionPlan:
    """What a compaction rewrites, planned at ``starting_snapshot_id`` of ``branch``.

    ``total_group_count`` counts every group the planner formed (with
    ``max-files-to-rewrite`` some are left out of ``groups``, as in Java); partial progress
    commits ``groups_per_commit`` groups at a time. A table without snapshots plans nothing
    (Java's ``rewrite_data_files`` returns an empty result), explained by ``note``.
    """

    metadata: TableMetadata
    table_location: str
    branch: str
    strategy: str
    sort_order: SortOrder | None
    row_filter: str | None
    options: RewriteOptions
    starting_snapshot_id: int | None
    starting_sequence_number: int | None
    groups: tuple[FileGroup, ...]
    total_group_count: int
    case_sensitive: bool = True
    note: str = ""

    @property
    def groups_per_commit(self) -> int:
        """Java: ``ceil(totalGroupCount / partial-progress.max-commits)``."""
        commits = max(1, self.options.partial_progress_max_commits)
        return max(1, -(-self.total_group_count // commits))

    @property
    def rewritten_files(self) -> tuple[str, ...]:
        return tuple(t.data_file.file_path for g in self.groups for t in g.tasks)

    @property
    def removed_delete_files(self) -> tuple[str, ...]:
        return tuple(f.file_path for g in self.groups for f in g.removed_delete_files)

    def to_json(self) -> dict[str, Any]:
        """What ``floe compact --dry-run --json`` prints."""
        return {
            "table": self.table_location,
            "branch": self.branch,
            "strategy": self.strategy,
            "sort_order": None if self.sort_order is None else self.sort_order.to_json(),
            "filter": self.row_filter,
            "starting_snapshot_id": self.starting_snapshot_id,
            "starting_sequence_number": self.starting_sequence_number,
            "options": self.options.to_json(),
            "total_group_count": self.total_group_count,
            "groups_per_commit": self.groups_per_commit
            if self.options.partial_progress_enabled else None,
            "rewritten_files_count": len(self.rewritten_files),
            "rewritten_bytes": sum(g.input_size for g in self.groups),
            "expected_output_files": sum(g.expected_output_files for g in self.groups),
            "groups": [g.to_json(self.metadata) for g in self.groups],
            "note": self.note,
        }


# -- selection and grouping ----------------------------------------------------------------------


def pack_groups(items: Sequence[Any], weight: Any, max_weight: int) -> list[list[Any]]:
    """Java ``BinPacking.ListPacker(max, lookback=1, largestBinFirst=false).pack``: items in
    order into the open bin while they fit, else a new bin (an item heavier than the limit
    gets a bin of its own)."""
    bins: list[list[Any]] = []
    current: list[Any] = []
    total = 0
    for item in items:
        w = weight(item)
        if current and total + w > max_weight:
            bins.append(current)
            current, total = [], 0
        current.append(item)
        total += w
    if current:
        bins.append(current)
    return bins


class _Selector:
    """The per-file and per-group rules of ``BinPackRewriteFilePlanner``."""

    def __init__(self, options: RewriteOptions) -> None:
        self.o = options

    def outside_size_range(self, task: FileScanTask) -> bool:
        size = task.data_file.file_size_in_bytes
        return size < self.o.min_file_size_bytes or size > self.o.max_file_size_bytes

    def too_many_deletes(self, task: FileScanTask) -> bool:
        return len(task.delete_files) >= self.o.delete_file_threshold

    def too_high_delete_ratio(self, task: FileScanTask) -> bool:
        """Rows deleted by file-scoped deletes (the only ones whose count is known from
        metadata) over the file's rows, at least ``delete-ratio-threshold``."""
        if not task.delete_files:
            return False
        known = sum(d.data_file.record_count for d in task.delete_files
                    if referenced_data_file(d.data_file) is not None)
        records = task.data_file.record_count
        if records <= 0:
            return False  # Java: 0 / 0 is NaN, never >= the threshold
        return min(known, records) / records >= self.o.delete_ratio_threshold

    def select_file(self, task: FileScanTask) -> bool:
        return (self.outside_size_range(task) or self.too_many_deletes(task)
                or self.too_high_delete_ratio(task))

    def select_group(self, group: Sequence[FileScanTask]) -> bool:
        n = len(group)
        size = sum(t.data_file.file_size_in_bytes for t in group)
        return ((n > 1 and n >= self.o.min_input_files)
                or (n > 1 and size > self.o.target_file_size_bytes)
                or size > self.o.max_file_size_bytes
                or any(self.too_many_deletes(t) for t in group)
                or any(self.too_high_delete_ratio(t) for t in group))

    def groups(self, tasks: Sequence[FileScanTask]) -> list[list[FileScanTask]]:
        chosen = list(tasks) if self.o.rewrite_all else [t for t in tasks if self.select_file(t)]
        packed = pack_groups(chosen, lambda t: t.data_file.file_size_in_bytes,
                             self.o.max_file_group_size_bytes)
        return packed if self.o.rewrite_all else [g for g in packed if self.select_group(g)]


def select_groups(options: RewriteOptions, tasks: Sequence[FileScanTask]
                  ) -> list[list[FileScanTask]]:
    """The groups one partition's tasks form under ``options`` (Java ``planFileGroups``):
    selected files, bin-packed, groups kept by the group rules."""
    return _Selector(options).groups(tasks)


#: ``rewrite-job-order`` as sort keys over groups with ``input_size`` and
#: ``input_files_count`` (Java ``RewriteFileGroup.comparator``; ``none`` keeps planning order).
JOB_ORDER_KEYS: dict[str, Any] = {
    "bytes-asc": lambda g: g.input_size,
    "bytes-desc": lambda g: -g.input_size,
    "files-asc": lambda g: g.input_files_count,
    "files-desc": lambda g: -g.input_files_count,
}


def _sort_order(md: TableMetadata, strategy: str, sort_order: SortOrder | str | None,
                case_sensitive: bool) -> SortOrder | None:
    """Java's procedure: ``sort`` without an order uses the table's (which must be sorted);
    ``binpack`` with an order is refused."""
    if strategy == BINPACK:
        if sort_order is not None:
            raise ValidationError(
                "a sort order needs strategy 'sort' (the binpack strategy does not sort)")
        return None
    if sort_order is None:
        order = md.sort_order()
        if order.is_unsorted:
            raise ValidationError(
                f"cannot sort data without a valid sort order: table {md.location} is "
                "unsorted and no sort order is provided")
        return order
    if isinstance(sort_order, str):
        order = parse_sort_by(sort_order, md.schema(), case_sensitive=case_sensitive)
    else:
        order = sort_order
    if order.is_unsorted:
        raise ValidationError("cannot sort data without a valid sort order: the provided sort "
                              "order is empty")
    return order


def _strategy(strategy: str) -> str:
    s = strategy.strip().lower()
    if s not in STRATEGIES:
        raise InvalidArgument(
            "strategy", f"unsupported strategy: {strategy!r}; only binpack or sort is supported")
    return s


def _as_argument(name: str, check: Callable[[], T]) -> T:
    try:
        return check()
    except InvalidArgument:
        raise
    except ValidationError as e:
        raise InvalidArgument(name, str(e)) from None


def check_compaction(
    md: TableMetadata,
    *,
    filter: Any = None,  # noqa: A002 - Java's and the CLI's name
    strategy: str = BINPACK,
    sort_order: SortOrder | str | None = None,
    options: Mapping[str, str] | None = None,
    branch: str = MAIN_BRANCH,
    case_sensitive: bool = True,
) -> tuple[str, RewriteOptions, SortOrder | None]:
    """The checks :func:`plan_compaction` makes before reading any manifest (a caller may run
    them first, e.g. before queueing a task): the strategy, the options, the sort order, a
    branch that can take a commit, a filter that binds. Returns (strategy, options, order);
    InvalidArgument naming the argument."""
    strat = _strategy(strategy)
    opts = _as_argument("options", lambda: parse_options(md, options, strategy=strat))
    order = _as_argument("sort_order", lambda: _sort_order(md, strat, sort_order,
                                                           case_sensitive))
    _as_argument("branch", lambda: branch_head(md, branch))
    if filter is not None and filter != "":
        # a branch is read with the current schema (floe.scan.select_snapshot)
        _as_argument("filter", lambda: ScanFilter(md, md.schema(), filter, case_sensitive))
    return strat, opts, order


def _metadata(source: Table | TableMetadata, io: FileIO | None
              ) -> tuple[TableMetadata, FileIO]:
    if isinstance(source, TableMetadata):
        return source, io if io is not None else FileIO()
    return source.metadata, io if io is not None else source.io


def plan_compaction(
    source: Table | TableMetadata,
    io: FileIO | None = None,
    *,
    filter: Any = None,  # noqa: A002 - Java's and the CLI's name
    strategy: str = BINPACK,
    sort_order: SortOrder | str | None = None,
    options: Mapping[str, str] | None = None,
    branch: str = MAIN_BRANCH,
    case_sensitive: bool = True,
) -> CompactionPlan:
    """Plan a compaction of a table (or of table metadata read with ``io``).

    ``filter`` (a filter string or expression) limits the candidate files to those that may
    hold matching rows; ``strategy`` is ``binpack`` or ``sort`` (``sort_order``: a
    :class:`SortOrder` or ``"id desc nulls last, ..."``; default the table's order);
    ``options`` are Java's ``rewrite_data_files`` options. Unknown options, a filter on an
    unknown column and bad values raise ValidationError.
    """
    md, io = _metadata(source, io)
    strat, opts, order = check_compaction(md, filter=filter, strategy=strategy,
                                          sort_order=sort_order, options=options,
                                          branch=branch, case_sensitive=case_sensitive)
    head = branch_head(md, branch)
    ref = branch if branch in md.refs else None
    scan = plan_files(io, md, ref=ref, row_filter=filter, case_sensitive=case_sensitive)
    row_filter = None if scan.row_filter is None else str(scan.row_filter)
    if head is None:
        return CompactionPlan(
            md, md.location, branch, strat, order, row_filter, opts, None, None, (), 0,
            case_sensitive, note=f"table {md.location} has no snapshot on branch {branch}: "
                                 "nothing to compact (as Java's rewrite_data_files)")
    spec = md.spec()
    empty = tuple(None for _ in spec.fields)
    by_partition: dict[tuple[Any, ...], list[FileScanTask]] = {}
    for task in scan.tasks:
        key = tuple(task.data_file.partition) if task.spec_id == spec.spec_id else empty
        by_partition.setdefault(key, []).append(task._replace(residual=None))
    planned = {key: select_groups(opts, tasks) for key, tasks in by_partition.items()}
    live = live_data_files(io, head)
    claimed: set[str] = set()
    groups: list[FileGroup] = []
    files_taken = 0
    partition_counts: dict[tuple[Any, ...], int] = {}
    for key, packed in planned.items():
        for tasks in packed:
            size = sum(t.data_file.file_size_in_bytes for t in tasks)
            chosen = tasks
            if opts.max_files_to_rewrite is not None:
                if files_taken >= opts.max_files_to_rewrite:
                    continue
                chosen = tasks[:opts.max_files_to_rewrite - files_taken]
                files_taken += len(chosen)
            partition_counts[key] = partition_counts.get(key, 0) + 1
            groups.append(FileGroup(
                global_index=len(groups) + 1, partition_index=partition_counts[key],
                partition_spec_id=spec.spec_id, partition=key, tasks=tuple(chosen),
                output_spec_id=opts.output_spec_id,
                max_output_file_size=opts.write_max_file_size,
                input_split_size=opts.input_split_size(size),
                expected_output_files=opts.expected_output_files(size),
                removed_delete_files=_dangling_after(io, md, chosen, live, claimed)))
    if opts.rewrite_job_order in JOB_ORDER_KEYS:
        groups.sort(key=JOB_ORDER_KEYS[opts.rewrite_job_order])  # stable, as Java's sorted()
    return CompactionPlan(
        md, md.location, branch, strat, order, row_filter, opts, head.snapshot_id,
        head.sequence_number, tuple(groups), sum(len(p) for p in planned.values()),
        case_sensitive, note="" if groups else _why_no_group(opts, by_partition, row_filter,
                                                             branch))


def _why_no_group(opts: RewriteOptions, by_partition: Mapping[Any, Sequence[FileScanTask]],
                  row_filter: str | None, branch: str) -> str:
    """Why the planner formed no group, in the terms of the options that decided it."""
    files = sum(len(tasks) for tasks in by_partition.values())
    if not files:
        if row_filter is not None:
            return f"nothing to compact: the filter {row_filter} matches no data file"
        return f"nothing to compact: branch {branch} has no data files"
    selector = _Selector(opts)
    chosen = [sum(1 for t in tasks if selector.select_file(t))
              for tasks in by_partition.values()]
    if not any(chosen):
        return (f"nothing to compact: every one of the {files} data file(s) is already "
                f"between {MIN_FILE_SIZE_BYTES} ({opts.min_file_size_bytes} bytes) and "
                f"{MAX_FILE_SIZE_BYTES} ({opts.max_file_size_bytes} bytes) with too few "
                f"deletes to rewrite ({REWRITE_ALL}=true rewrites them anyway)")
    if all(len(tasks) == 1 for tasks in by_partition.values()):
        where = "the table has one data file" if len(by_partition) == 1 else \
            f"every partition has one data file ({len(by_partition)} partitions)"
        return f"nothing to compact: {where}; nothing to combine"
    return (f"nothing to compact: no partition has enough files to combine (at most "
            f"{max(chosen)} to rewrite in one partition; a group needs {MIN_INPUT_FILES} "
            f"({opts.min_input_files}) files, or more than one file and more than "
            f"{TARGET_FILE_SIZE_BYTES} ({opts.target_file_size_bytes} bytes))")


def _dangling_after(io: FileIO, md: TableMetadata, tasks: Sequence[FileScanTask],
                    live: Mapping[str, Any], claimed: set[str]) -> tuple[DataFile, ...]:
    """Position delete files (and deletion vectors) of the group's tasks that name only the
    group's data files or data files no longer live: removing the group leaves them applying
    to nothing (Java removes the group's deletion vectors, ``RewriteFileGroup.danglingDVs``;
    floe extends that to every position delete file it can prove dangling). A file already
    ``claimed`` by an earlier group is left to that group, so no two commits remove it."""
    group_paths = {t.data_file.file_path for t in tasks}
    seen: dict[str, DeleteFile] = {}
    for t in tasks:
        for d in t.delete_files:
            if d.content == FileContent.POSITION_DELETES and d.path not in claimed:
                seen.setdefault(d.path, d)
    out = []
    for path, d in seen.items():
        referenced = referenced_data_files(io, md, d)
        if all(p in group_paths or p not in live for p in referenced):
            claimed.add(path)
            out.append(d.data_file)
    return tuple(out)
