"""Writing a DataFrame into a table: executors write Parquet data files, the driver commits
one snapshot through floe's commit loop (Java ``SparkWrite``: ``BatchAppend``,
``DynamicOverwrite``, ``OverwriteByFilter``).

* **Check** (on the driver, before any task runs): the DataFrame's columns against the table
  schema by name (:func:`floe.spark.types.check_write_schema`), the options, the branch.
* **Tasks** (:class:`TaskWriter`): each Spark task converts its Arrow batches to the table's
  types, partitions the rows by the table's spec, sorts them by its sort order, and writes
  files of about the target size (``target-file-size-bytes`` option, else
  ``write.target-file-size-bytes``) with Iceberg metrics (:func:`floe.table.writer.
  write_data_files`). Rows are buffered (Spark hands over batches of
  ``spark.sql.execution.arrow.maxRecordsPerBatch`` rows); a partition's buffer becomes a file
  when its Parquet size (estimated from the bytes per row of what was written) reaches the
  target, or when the task's buffers pass ``buffer-size-bytes`` (default 256 MiB of Arrow
  data, the bound on a task's memory). A sorted table's rows are sorted per buffer, so a
  task whose rows outgrow the buffer writes sorted files whose ranges overlap.
* **Commit** (in the separate Python process Spark runs it in: everything it needs travels
  pickled in the writer): ``append`` (a merge or fast append per
  ``commit.manifest-merge.enabled``), ``overwrite`` with ``overwrite-mode=dynamic`` (replace
  the partitions written; nothing when no row was written) or ``static`` (replace the rows
  matching ``filter``, default every row; the new rows must match it, checked by the
  tasks), to ``branch``; validated from the branch head the write started at when
  ``isolation-level`` is given (``serializable`` / ``snapshot``, as floe's overwrites). The
  snapshot's summary carries ``floe.spark.write-id``.
* **Failure**: a task deletes what it wrote before it re-raises; ``abort`` (a failed job, or
  a failed commit) deletes the files the tasks reported and every file under the table's data
  directory whose name holds the write id (a task that was killed reports nothing, and the
  file it was writing is a hidden ``.*.tmp`` file named after the data file), several times
  over a few seconds while killed tasks wind down. It deletes nothing when the snapshot of
  this write is in the table (the commit's outcome was unknown but it landed). A worker killed
  outright may still leave a file behind: its name holds the write id and no snapshot
  references it, so ``floe remove-orphans`` finds it.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from floe import expressions as ex
from floe.errors import FloeError, ValidationError
from floe.io import FileIO, is_local, local_path
from floe.io.parquet import schema_to_arrow, write_parquet
from floe.manifest import DataFile
from floe.metadata import TableMetadata
from floe.properties import (
    COPY_ON_WRITE,
    MANIFEST_MERGE_ENABLED,
    MANIFEST_MERGE_ENABLED_DEFAULT,
    PARQUET_COMPRESSION,
    PARQUET_COMPRESSION_DEFAULT,
    TARGET_FILE_SIZE,
    TARGET_FILE_SIZE_DEFAULT,
    bool_property,
    int_property,
)
from floe.schema import Schema
from floe.snapshots import MAIN_BRANCH, Operation
from floe.sorting import SortOrder
from floe.spark.source import Options, TableRef, metadata_at
from floe.spark.types import WriteConverter, check_write_schema
from floe.table.row_level import (
    ISOLATION_LEVELS,
    check_rows_match,
    overwrite_by_filter_operation,
    plan_delete,
    remove_written,
    replace_partitions_operation,
)
from floe.table.snapshot_producer import PendingOperation, SnapshotProducer, branch_head
from floe.table.transaction import Transaction
from floe.table.writer import data_dir, partition_rows, write_data_files

__all__ = ["FloeWriter", "FloeCommitMessage", "TaskWriter", "WRITE_ID", "remove_files_of",
           "committed_snapshot_id", "task_attempt_id"]

log = logging.getLogger(__name__)

#: Snapshot summary key naming the write a snapshot came from.
WRITE_ID = "floe.spark.write-id"
BUFFER_BYTES_OPTION = "buffer-size-bytes"
BUFFER_BYTES_DEFAULT = 256 * 1024 * 1024
TARGET_FILE_SIZE_OPTION = "target-file-size-bytes"
OVERWRITE_MODES = ("static", "dynamic")
#: Seconds at which abort lists the data directory again for files of the write.
ABORT_SWEEPS = (0.0, 1.0, 2.5)
#: write_data_files must write exactly the rows it is given as one file
_NO_ROLL = str(2 ** 62)
#: Rows encoded to learn the Parquet bytes per Arrow byte of a task's first file.
_SAMPLE_ROWS = 65_536


# -- the files of one task -----------------------------------------------------------------


class TaskWriter:
    """Buffers one task's rows (already of the table schema) and writes them as data files of
    ``md``'s current schema and default spec (see the module docstring), named after
    ``write_id`` so the write's files can be found."""

    def __init__(self, io: FileIO, md: TableMetadata, *, write_id: str, task_id: int,
                 target_size: int, sort_order: SortOrder | None = None,
                 buffer_bytes: int = BUFFER_BYTES_DEFAULT,
                 check: Callable[[pa.Table], None] | None = None) -> None:
        if target_size <= 0:
            raise ValidationError(f"the target file size must be positive, not {target_size}")
        self.io = io
        self.md = replace(md, properties={**md.properties, TARGET_FILE_SIZE: _NO_ROLL})
        self.schema: Schema = md.schema()
        self.arrow = schema_to_arrow(self.schema)
        self.compression = md.properties.get(PARQUET_COMPRESSION, PARQUET_COMPRESSION_DEFAULT)
        self.write_id = uuid.UUID(write_id)
        self.task_id = task_id
        self.target = target_size
        self.order = None if sort_order is None or sort_order.is_unsorted else sort_order
        self.buffer_bytes = buffer_bytes
        self.check = check
        self.buffers: dict[tuple[Any, ...], list[pa.Table]] = {}
        self.buffered: dict[tuple[Any, ...], tuple[int, int]] = {}  # rows, bytes
        self.total_bytes = 0
        self.sorted_rows: list[pa.Table] = []
        self.ratio: float | None = None  # Parquet bytes per Arrow byte
        self.arrow_written = 0
        self.parquet_written = 0
        self.calls = 0
        self.written: list[str] = []
        self.files: list[DataFile] = []

    # -- input -----------------------------------------------------------------------------

    def add(self, rows: pa.Table | pa.RecordBatch) -> None:
        table = rows if isinstance(rows, pa.Table) else pa.Table.from_batches([rows])
        if table.num_rows == 0:
            return
        if self.check is not None:
            self.check(table)
        self.total_bytes += table.nbytes
        if self.order is not None:
            self.sorted_rows.append(table)
            if self.total_bytes >= self.buffer_bytes:
                self._flush_sorted()
            return
        for key, part in partition_rows(self.md, table):
            self.buffers.setdefault(key, []).append(part)
            rows_, bytes_ = self.buffered.get(key, (0, 0))
            self.buffered[key] = (rows_ + part.num_rows, bytes_ + part.nbytes)
            self._cut_full_files(key)
        while self.total_bytes >= self.buffer_bytes and self.buffers:
            largest = max(self.buffered, key=lambda k: self.buffered[k][1])
            self._write(self._take(largest))

    def close(self) -> list[DataFile]:
        """Write what is buffered; the task's data files."""
        if self.order is not None:
            self._flush_sorted()
        for key in list(self.buffers):
            rows = self._take(key)
            for piece in self._pieces(rows):
                self._write(piece)
        return self.files

    def write_all(self, batches: Iterable[pa.RecordBatch | pa.Table],
                  convert: Callable[[pa.RecordBatch], pa.Table | pa.RecordBatch] | None = None
                  ) -> FloeCommitMessage:
        """Add every batch (through ``convert``) and close: the task's commit message. On
        any failure the files written so far are deleted before the exception propagates."""
        try:
            for batch in batches:
                if batch.num_rows:
                    self.add(convert(batch) if convert is not None else batch)
            files = self.close()
        except BaseException:
            self.discard()
            raise
        return FloeCommitMessage(tuple(files), tuple(self.written))

    def discard(self) -> None:
        """Delete every file this task wrote (it failed)."""
        remove_written(self.io, self.written)
        self.written.clear()

    # -- sizing ----------------------------------------------------------------------------

    def _ratio(self, rows: pa.Table) -> float:
        if self.ratio is None:
            sample = rows.slice(0, _SAMPLE_ROWS)
            data, _ = write_parquet(sample, self.schema, compression=self.compression)
            self.ratio = max(1e-6, len(data) / max(1, sample.nbytes))
        return self.ratio

    def _rows_per_file(self, rows: pa.Table) -> int:
        per_row = rows.nbytes / max(1, rows.num_rows)
        return max(1, int(self.target / max(1e-9, per_row * self._ratio(rows))))

    def _pieces(self, rows: pa.Table) -> Iterator[pa.Table]:
        if rows.num_rows == 0:
            return
        n = self._rows_per_file(rows) if rows.nbytes >= self.target else rows.num_rows
        for start in range(0, rows.num_rows, n):
            yield rows.slice(start, n)

    def _cut_full_files(self, key: tuple[Any, ...]) -> None:
        rows_, bytes_ = self.buffered[key]
        if bytes_ * (self.ratio if self.ratio is not None else 1.0) < self.target:
            return  # until a file is written, Parquet is assumed no larger than Arrow
        rows = self._take(key)
        n = self._rows_per_file(rows)
        while rows.num_rows >= n:
            self._write(rows.slice(0, n))
            rows = rows.slice(n)
        if rows.num_rows:
            self.buffers[key] = [rows]
            self.buffered[key] = (rows.num_rows, rows.nbytes)
            self.total_bytes += rows.nbytes

    def _take(self, key: tuple[Any, ...]) -> pa.Table:
        parts = self.buffers.pop(key)
        _, bytes_ = self.buffered.pop(key)
        self.total_bytes -= bytes_
        return pa.concat_tables(parts) if len(parts) > 1 else parts[0]

    def _flush_sorted(self) -> None:
        if not self.sorted_rows:
            return
        from floe.maintenance.compaction import sort_rows

        rows = pa.concat_tables(self.sorted_rows)
        self.sorted_rows = []
        self.total_bytes = 0
        assert self.order is not None
        rows = sort_rows(rows, self.order, self.schema)
        for _, part in partition_rows(self.md, rows):
            for piece in self._pieces(part):
                self._write(piece)

    # -- output ----------------------------------------------------------------------------

    def _write(self, rows: pa.Table) -> None:
        if rows.num_rows == 0:
            return
        self.calls += 1
        # write_data_files numbers files from 1 per call: the call goes into the task id
        task_id = self.task_id * 1_000_000 + self.calls
        files = write_data_files(self.io, self.md, rows, operation_id=self.write_id,
                                 task_id=task_id, written=self.written)
        for f in files:
            self.arrow_written += rows.nbytes
            self.parquet_written += f.file_size_in_bytes
            if self.order is not None:
                f = f._replace(sort_order_id=self.order.order_id)
            self.files.append(f)
        self.ratio = self.parquet_written / max(1, self.arrow_written)


def task_attempt_id() -> int:
    """Spark's id of the running task attempt (unique in the application), so a retried
    task never meets the file names of the attempt before it."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return ctx.taskAttemptId() if ctx is not None else uuid.uuid4().int % 10 ** 9


def files_of(io: FileIO, directory: str, write_id: str) -> list[str]:
    """Every file under ``directory`` whose name holds ``write_id`` (locally, hidden
    temporary files of unfinished writes included)."""
    if not is_local(directory):
        return [f.location for f in io.list_info(directory)
                if write_id in f.location.rsplit("/", 1)[-1]]
    out = []
    for dirpath, _, names in os.walk(local_path(directory)):
        for name in names:
            if write_id in name:
                out.append(os.path.join(dirpath, name))
    return out


def remove_files_of(io: FileIO, md: TableMetadata, write_id: str,
                    reported: Iterable[str] = ()) -> int:
    """Delete the files a write left in the table's data directory (see the module docstring);
    returns how many were deleted."""
    paths = set(reported)
    removed = 0
    for delay in ABORT_SWEEPS:
        if delay:
            time.sleep(delay)
        paths |= set(files_of(io, data_dir(md), str(uuid.UUID(write_id))))
        present = [p for p in paths
                   if (os.path.lexists(local_path(p)) if is_local(p) else io.exists(p))]
        remove_written(io, present)
        removed += len(present)
        paths = set()
    return removed


def committed_snapshot_id(md: TableMetadata, write_id: str) -> int | None:
    """The snapshot a write committed, found by its summary's write id."""
    for s in md.snapshots:
        if s.summary.get(WRITE_ID) == write_id:
            return s.snapshot_id
    return None


# -- the data source writer -----------------------------------------------------------------


@dataclass(frozen=True)
class FloeCommitMessage(WriterCommitMessage):
    """What one task wrote: its data files and every path it created."""

    files: tuple[DataFile, ...]
    written: tuple[str, ...]


def _choice(opts: Options, key: str, choices: Sequence[str], default: str | None
            ) -> str | None:
    value = opts.get(key)
    if value is None:
        return default
    if value.lower() not in choices:
        raise ValidationError(f"option {key}={value!r}: use one of {', '.join(choices)}")
    return value.lower()


class FloeWriter(DataSourceArrowWriter):
    """Checks on the driver, writes on executors, commits in Spark's commit process."""

    def __init__(self, table: TableRef, opts: Options, schema: StructType,
                 overwrite: bool) -> None:
        io, location, md = table.load()
        self.table = table
        self.io = io
        self.location = location
        check_write_schema(md.schema(), schema, table.name)
        self.overwrite_mode = _choice(opts, "overwrite-mode", OVERWRITE_MODES, "static") \
            if overwrite else None
        self.filter = opts.get("filter")
        if self.filter is not None and self.overwrite_mode != "static":
            raise ValidationError("the filter option of a write needs mode('overwrite') with "
                                  "overwrite-mode static: it names the rows to replace")
        self.case_sensitive = opts.bool("case-sensitive", True)
        if self.filter is not None:
            ex.bind(md.schema(), ex.parse_filter(self.filter), self.case_sensitive)
        self.isolation_level = _choice(opts, "isolation-level", ISOLATION_LEVELS, None)
        self.branch = opts.get("branch") or MAIN_BRANCH
        head = branch_head(md, self.branch)  # a tag is refused here
        self.start_snapshot_id = head.snapshot_id if head is not None else None
        self.write_id = str(uuid.UUID(opts.get("write-id") or uuid.uuid4().hex))
        self.target_size = opts.int(TARGET_FILE_SIZE_OPTION,
                                    int_property(md, TARGET_FILE_SIZE, TARGET_FILE_SIZE_DEFAULT))
        self.buffer_bytes = opts.int(BUFFER_BYTES_OPTION, BUFFER_BYTES_DEFAULT)
        if self.target_size <= 0 or self.buffer_bytes <= 0:
            raise ValidationError("target-file-size-bytes and buffer-size-bytes must be "
                                  "positive")

    # -- executors -------------------------------------------------------------------------

    def write(self, iterator: Iterator[pa.RecordBatch]) -> FloeCommitMessage:
        md = metadata_at(self.io, self.location)
        writer = TaskWriter(self.io, md, write_id=self.write_id, task_id=task_attempt_id(),
                            target_size=self.target_size, sort_order=md.sort_order(),
                            buffer_bytes=self.buffer_bytes, check=self._row_check(md))
        return writer.write_all(iterator, WriteConverter(md.schema()))

    def _row_check(self, md: TableMetadata) -> Callable[[pa.Table], None] | None:
        """Static overwrite: every new row must match the filter (Java
        ``validateAddedFilesMatchOverwriteFilter``, on the rows)."""
        if self.filter is None:
            return None
        schema = md.schema()
        bound = ex.bind(schema, ex.parse_filter(self.filter), self.case_sensitive)
        text, cs = self.filter, self.case_sensitive

        def check(rows: pa.Table) -> None:
            check_rows_match(schema, bound, text, rows, cs)

        return check

    # -- the driver ------------------------------------------------------------------------

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        files = [f for m in messages if isinstance(m, FloeCommitMessage) for f in m.files]
        written = [p for m in messages if isinstance(m, FloeCommitMessage) for p in m.written]
        with self.table.open() as table:
            txn = table.new_transaction()
            if self._stage(txn, files, written):
                txn.commit()

    def _stage(self, txn: Transaction, files: list[DataFile], written: list[str]) -> bool:
        """Add this write's snapshot to ``txn``; False when there is nothing to commit."""
        io = txn.table.io
        summary = {WRITE_ID: self.write_id}
        if self.overwrite_mode is None:
            merge = bool_property(txn.base_metadata, MANIFEST_MERGE_ENABLED,
                                  MANIFEST_MERGE_ENABLED_DEFAULT)
            txn.add_operation(SnapshotProducer(
                io, added=files, merge=merge, operation=Operation.APPEND, owned_files=written,
                branch=self.branch, summary_properties=summary))
            return True
        if self.overwrite_mode == "dynamic":
            if not files:
                return False  # Spark skips an empty dynamic overwrite
            txn.add_operation(self._dynamic(io, files, written, summary))
            return True
        txn.add_operation(self._static(io, files, written, summary))
        return True

    def _dynamic(self, io: FileIO, files: list[DataFile], written: list[str],
                 summary: dict[str, str]) -> PendingOperation:
        """Java ``ReplacePartitions`` (floe's :meth:`~floe.table.Transaction.
        overwrite_partitions`), validated from the branch head the write started at."""
        return replace_partitions_operation(
            io, metadata_at(self.io, self.location), files, written, branch=self.branch,
            start_snapshot_id=self.start_snapshot_id, isolation_level=self.isolation_level,
            case_sensitive=self.case_sensitive, summary_properties=summary)

    def _static(self, io: FileIO, files: list[DataFile], written: list[str],
                summary: dict[str, str]) -> PendingOperation:
        """Java ``OverwriteByFilter`` (floe's :meth:`~floe.table.Transaction.
        overwrite_by_filter`): planned at the state the write started from, files that match
        the filter only partly rewritten without the matching rows, the removals worked out
        again at every attempt."""
        md = metadata_at(self.io, self.location)
        plan = plan_delete(io, md, self.filter if self.filter is not None else "true",
                           mode=COPY_ON_WRITE, branch=self.branch,
                           case_sensitive=self.case_sensitive)
        return overwrite_by_filter_operation(
            io, plan, files, list(written), uuid.UUID(self.write_id),
            isolation_level=self.isolation_level, summary_properties=summary)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        reported = [p for m in messages if isinstance(m, FloeCommitMessage) for p in m.written]
        try:
            with self.table.open() as table:
                if committed_snapshot_id(table.metadata, self.write_id) is not None:
                    return  # the commit landed although it reported a failure
        except FloeError as e:
            log.warning("abort of write %s: cannot check the table: %s", self.write_id, e)
        md = metadata_at(self.io, self.location)
        remove_files_of(self.io, md, self.write_id, reported)
