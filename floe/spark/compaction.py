"""Compaction with Spark moving the bytes: floe plans the file groups (the local engine's
planner, :func:`floe.maintenance.compaction_plan.plan_compaction`), Spark rewrites them, floe
commits the ``replace`` snapshots with the local engine's validation and partial-progress
rules (:func:`floe.maintenance.compaction.commit_groups`).

Per file group, as Java's ``SparkBinPackFileRewriteRunner`` / ``SparkSortFileRewriteRunner``:

* **binpack**: the group's files are bin-packed into read splits of the group's input split
  size; one Spark task per split reads its files with every delete applied and writes data
  files of the output spec, rolled at the group's max output file size. The rows stay in
  Python (an RDD of splits): nothing crosses into the JVM.
* **sort**: the splits are read into a DataFrame through the floe source, range-partitioned
  by the sort order's leading order-preserving fields into ``expected output files *
  shuffle-partitions-per-file`` partitions, and each partition is sorted by the full sort
  order (:func:`floe.maintenance.compaction.sort_rows`) and written through the floe source
  (:class:`RewriteJob`: the source's ``rewrite-job`` option; its commit hands the files
  back instead of committing). Spark's ``mapInArrow`` would be shorter but needs pandas.

Groups run concurrently, up to ``max-concurrent-file-group-rewrites`` Spark jobs at once; they
are committed (and reported through ``on_progress``) in plan order. A group whose job fails
deletes the files its tasks wrote (by the group's write id in the file names, as data source
writes do); a :class:`~floe.maintenance.Cancelled` from ``on_progress`` cancels the running
jobs and deletes what uncommitted groups wrote.
"""

from __future__ import annotations

import logging
import os
import pickle
import tempfile
import threading
import uuid
from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from floe.io import FileIO
from floe.scan.readers import read_plan
from floe.maintenance import Cancelled, ProgressCallback, report
from floe.maintenance import compaction as local
from floe.maintenance.compaction_plan import SORT, CompactionPlan, FileGroup, pack_groups
from floe.manifest import DataFile
from floe.metadata import TableMetadata
from floe.scan.planning import FileScanTask
from floe.sorting import NullOrder, SortDirection, SortOrder
from floe.spark import activate, session
from floe.spark.errors import spark_errors
from floe.spark.reader import ship_task
from floe.spark.types import ReadConverter, WriteConverter, to_spark_schema
from floe.spark.writer import FloeCommitMessage, TaskWriter, remove_files_of, task_attempt_id

if TYPE_CHECKING:
    from pyspark import Broadcast
    from pyspark.sql import Column, SparkSession

    from floe.table.table import Table

__all__ = ["compact", "SparkRewriter", "RewriteJob", "RewriteReader", "RewriteWriter"]

log = logging.getLogger(__name__)

#: The writer never cuts a file for lack of memory: a compacted file is held whole, as the
#: local engine holds it.
_UNBOUNDED = 2 ** 62


def _sort_order_id(md: TableMetadata, order: SortOrder | None) -> SortOrder | None:
    """The table's sort order equal to ``order`` (its files may then carry its id), else
    None: files sorted by an order the table does not know carry no sort order id."""
    if order is None:
        return None
    return next((o for o in md.sort_orders if o.fields == order.fields and not o.is_unsorted),
                None)


# -- what the executors run ----------------------------------------------------------------------


def _rewrite_split(io: FileIO, metadata: Broadcast[TableMetadata], snapshot_id: int | None,
                   group: FileGroup, write_id: str, item: tuple[int, tuple[FileScanTask, ...]]
                   ) -> tuple[list[DataFile], list[str]]:
    """binpack: one split's rows (deletes applied) written as files of the output spec."""
    _, tasks = item
    md = metadata.value
    writer = TaskWriter(io, local.output_metadata(md, group), write_id=write_id,
                        task_id=task_attempt_id(),
                        target_size=group.max_output_file_size, buffer_bytes=_UNBOUNDED)
    message = writer.write_all(read_plan(io, local.group_scan(md, snapshot_id, tasks),
                                         threads=1))
    return list(message.files), list(message.written)


@dataclass(frozen=True)
class RewriteJob:
    """One sort-strategy group as the floe source reads and writes it (``rewrite-job``
    option: the path of this object, pickled on the driver): the splits to read, how to
    write, and the file the commit hands the written files back through."""

    io: FileIO
    metadata: TableMetadata
    snapshot_id: int | None
    splits: list[tuple[FileScanTask, ...]]
    group: FileGroup
    sort_order: SortOrder
    sort_order_id: int
    write_id: str
    handoff: str

    @staticmethod
    def load(path: str) -> RewriteJob:
        with open(path, "rb") as f:
            job = pickle.load(f)
        assert isinstance(job, RewriteJob)
        return job

    def spark_schema(self) -> StructType:
        return to_spark_schema(self.metadata.schema())


class _Split(InputPartition):
    def __init__(self, index: int, tasks: tuple[FileScanTask, ...]) -> None:
        super().__init__(index)
        self.tasks = tasks


class RewriteReader(DataSourceReader):
    """The rows of a job's splits, every delete applied (no residual: whole files)."""

    def __init__(self, job: RewriteJob) -> None:
        self.io = job.io
        self.metadata = job.metadata
        self.snapshot_id = job.snapshot_id
        self.splits = job.splits
        self.spark_schema = job.spark_schema()

    def partitions(self) -> list[InputPartition]:
        return [_Split(i, tasks) for i, tasks in enumerate(self.splits)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, _Split)
        convert = ReadConverter(self.metadata.schema(), self.spark_schema)
        scan = local.group_scan(self.metadata, self.snapshot_id, partition.tasks)
        for batch in read_plan(self.io, scan, threads=1):
            yield convert(batch)


class RewriteWriter(DataSourceArrowWriter):
    """Writes a job's range partitions sorted; the commit hands the files to the driver
    (floe commits them with the other groups), the abort deletes them."""

    def __init__(self, job: RewriteJob) -> None:
        self.job = replace(job, splits=[])

    def write(self, iterator: Iterator[pa.RecordBatch]) -> FloeCommitMessage:
        job = self.job
        md = job.metadata
        writer = TaskWriter(job.io, local.output_metadata(md, job.group), write_id=job.write_id,
                            task_id=task_attempt_id(),
                            target_size=job.group.max_output_file_size,
                            sort_order=job.sort_order, buffer_bytes=_UNBOUNDED)
        message = writer.write_all(iterator, WriteConverter(md.schema()))
        files = tuple(f._replace(sort_order_id=job.sort_order_id) for f in message.files)
        return FloeCommitMessage(files, message.written)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        files = [f for m in messages if isinstance(m, FloeCommitMessage) for f in m.files]
        written = [p for m in messages if isinstance(m, FloeCommitMessage) for p in m.written]
        with open(self.job.handoff, "wb") as f:
            pickle.dump((files, written), f)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        reported = [p for m in messages if isinstance(m, FloeCommitMessage) for p in m.written]
        job = self.job
        remove_files_of(job.io, local.output_metadata(job.metadata, job.group), job.write_id,
                        reported)


# -- the driver ----------------------------------------------------------------------------------


def _quoted(name: str) -> str:
    return ".".join(f"`{part}`" for part in name.split("."))


def _range_keys(md: TableMetadata, order: SortOrder) -> list[Column]:
    """Spark sort keys for the range partitioning: the leading fields whose transform keeps
    the order of its source column (a bucket breaks it), on the source columns."""
    from pyspark.sql import functions as F

    schema = md.schema()
    keys = []
    for f in order.fields:
        if not f.transform.preserves_order:
            break
        name = schema.find_column_name(f.source_id)
        if name is None:
            break
        col = F.col(_quoted(name))
        asc = f.direction is SortDirection.ASC
        first = f.null_order is NullOrder.NULLS_FIRST
        keys.append(col.asc_nulls_first() if asc and first else col.asc_nulls_last() if asc
                    else col.desc_nulls_first() if first else col.desc_nulls_last())
    return keys


class SparkRewriter:
    """Rewrites the file groups of one plan as Spark jobs (the engine of :func:`compact`)."""

    def __init__(self, spark: SparkSession, io: FileIO, plan: CompactionPlan) -> None:
        self.spark = spark
        self.io = io
        self.plan = plan
        self.metadata = spark.sparkContext.broadcast(plan.metadata)
        self.job_groups: set[str] = set()
        self.lock = threading.Lock()
        self.cancelled = False

    def _splits(self, group: FileGroup) -> list[tuple[FileScanTask, ...]]:
        packed = pack_groups(list(group.tasks), lambda t: t.data_file.file_size_in_bytes,
                             group.input_split_size)
        return [tuple(ship_task(t) for t in split) for split in packed]

    def rewrite(self, group: FileGroup) -> local.GroupOutput:
        """One group's Spark job; on failure the files it wrote are deleted."""
        write_id = str(uuid.uuid4())
        job_group = f"floe-compaction-{write_id}"
        sc = self.spark.sparkContext
        activate(self.spark)  # a thread of the pool: a JVM thread without a session
        with self.lock:
            if self.cancelled:
                raise Cancelled("the compaction was cancelled")
            self.job_groups.add(job_group)
        sc.setJobGroup(job_group, f"floe compaction of {self.plan.table_location}: file group "
                                  f"{group.global_index} ({group.input_files_count} files)",
                       interruptOnCancel=True)
        try:
            with spark_errors():
                if self.plan.strategy == SORT and self.plan.sort_order is not None:
                    files, written = self._sort(group, write_id)
                else:
                    files, written = self._binpack(group, write_id)
        except BaseException:
            remove_files_of(self.io, local.output_metadata(self.plan.metadata, group), write_id)
            raise
        finally:
            with self.lock:
                self.job_groups.discard(job_group)
        return local.GroupOutput(group, tuple(files), tuple(written))

    def _binpack(self, group: FileGroup, write_id: str) -> tuple[list[DataFile], list[str]]:
        splits = self._splits(group)
        fn = partial(_rewrite_split, self.io, self.metadata, self.plan.starting_snapshot_id,
                     group, write_id)
        rdd = self.spark.sparkContext.parallelize(list(enumerate(splits)), len(splits))
        files: list[DataFile] = []
        written: list[str] = []
        for f, w in rdd.map(fn).collect():
            files += f
            written += w
        return files, written

    def _sort(self, group: FileGroup, write_id: str) -> tuple[list[DataFile], list[str]]:
        """Read through the floe source, range-partition in Spark, write through the floe
        source; the files come back through the job's hand-off file."""
        from floe.spark.source import FORMAT, REWRITE_JOB

        md = self.plan.metadata
        order = self.plan.sort_order
        assert order is not None
        known = _sort_order_id(md, order)
        with tempfile.TemporaryDirectory(prefix="floe-compaction-") as tmp:
            job = RewriteJob(
                io=self.io, metadata=md, snapshot_id=self.plan.starting_snapshot_id,
                splits=self._splits(group), group=group, sort_order=order,
                sort_order_id=known.order_id if known is not None else 0, write_id=write_id,
                handoff=os.path.join(tmp, "files.pickle"))
            path = os.path.join(tmp, "job.pickle")
            with open(path, "wb") as f:
                pickle.dump(job, f)
            rows = self.spark.read.format(FORMAT).option(REWRITE_JOB, path).load()
            n = max(1, group.expected_output_files
                    * self.plan.options.shuffle_partitions_per_file)
            keys = _range_keys(md, order)
            rows = rows.repartitionByRange(n, *keys) if keys else rows.repartition(n)
            rows.write.format(FORMAT).option(REWRITE_JOB, path).mode("append").save()
            with open(job.handoff, "rb") as f:
                files, written = pickle.load(f)
        return files, written

    def cancel(self) -> None:
        """Cancel the running jobs; groups not started yet raise Cancelled."""
        with self.lock:
            self.cancelled = True
            groups = list(self.job_groups)
        for job_group in groups:
            self.spark.sparkContext.cancelJobGroup(job_group)

    def close(self) -> None:
        self.metadata.unpersist()


class _SparkRun(local._Run):
    """The local engine's run (commits, partial progress, reports), its groups rewritten by
    :class:`SparkRewriter` jobs started ahead, up to ``max-concurrent-file-group-rewrites``
    at once."""

    def __init__(self, table: Table, plan: CompactionPlan, on_progress: ProgressCallback | None,
                 spark: SparkSession) -> None:
        super().__init__(table, plan, on_progress)
        self.engine = SparkRewriter(spark, table.io, plan)
        self.futures: dict[int, Future[local.GroupOutput]] = {}

    def run(self) -> local.CompactionResult:
        workers = max(1, self.plan.options.max_concurrent_file_group_rewrites)
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="floe-compact") as pool:
            self.futures = {g.global_index: pool.submit(self.engine.rewrite, g)
                            for g in self.plan.groups}
            try:
                return super().run()
            except BaseException:
                self._abandon()
                raise
            finally:
                self.engine.close()

    def _abandon(self) -> None:
        """Stop the jobs still running and delete what finished groups wrote."""
        self.engine.cancel()
        for future in self.futures.values():
            future.cancel()
        for future in self.futures.values():
            if future.cancelled():
                continue
            try:
                output = future.result()
            except BaseException:  # noqa: BLE001 - its own files are already deleted
                continue
            local.remove_written(self.table.io, output.written)
        self.futures = {}

    def _rewrite(self, group: FileGroup) -> None:
        future = self.futures.pop(group.global_index)
        try:
            self.pending.append(future.result())
        except Cancelled:
            raise
        except Exception as e:
            if not self.partial:
                raise
            log.warning("file group %s failed: %s", group.global_index, e)
            self.failures.append(local.GroupResult.of(self.md, group,
                                                      error=local._one_line(e)))


def compact(
    table: Table,
    plan: CompactionPlan | Mapping[str, str] | None = None,
    *,
    spark: SparkSession | None = None,
    master: str | None = None,
    filter: Any = None,  # noqa: A002 - Java's and the CLI's name
    strategy: str | None = None,
    sort_order: SortOrder | str | None = None,
    options: Mapping[str, str] | None = None,
    branch: str | None = None,
    case_sensitive: bool | None = None,
    dry_run: bool = False,
    on_progress: ProgressCallback | None = None,
) -> local.CompactionResult:
    """Compact ``table`` on Spark: the arguments and the result of
    :func:`floe.maintenance.compaction.compact` (a plan, or the planning arguments), plus the
    ``spark`` session to use (default :func:`floe.spark.session` on ``master``, default
    ``$FLOE_SPARK_MASTER`` or ``local[*]``). A dry run or a plan without groups starts no
    Spark. Progress: ``planning``, then per group ``rewriting`` / ``committing`` reports.
    """
    report(on_progress, "planning")
    the_plan = local._plan_for(table, plan, {
        "filter": filter, "strategy": strategy, "sort_order": sort_order, "options": options,
        "branch": branch, "case_sensitive": case_sensitive})
    if dry_run or not the_plan.groups:
        return local.compact(table, the_plan, dry_run=dry_run)
    with spark_errors():
        return _SparkRun(table, the_plan, on_progress, spark or session(master)).run()
