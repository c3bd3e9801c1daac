"""Reading a table state through Spark: floe plans on the driver, executors read the files.

* **State**: the current snapshot, ``snapshot-id``, ``as-of-timestamp`` (ms), ``branch`` or
  ``tag`` (one of them, :func:`floe.scan.planning.select_snapshot` rules: ids, times and tags
  read with the snapshot's schema, the current state and branches with the table's), or the
  rows appended in ``(start-snapshot-id, end-snapshot-id]`` (:func:`floe.scan.incremental.
  plan_appends`, the current schema). Java's option checks and messages.
* **Filters**: the ``filter`` option (a floe filter) and, with ``pushdown``, the filters Spark
  pushes (``pushFilters``) are planned by floe (partition and metrics pruning) and applied to
  every row by the executors (the tasks' residuals). A pushed filter is handed back to Spark
  unless floe's result is exactly Spark's: comparisons on float / double columns (Spark
  orders NaN above every number and equates -0.0 with 0.0, Iceberg does neither), on
  nanosecond timestamps (Spark sees them truncated) and anything floe cannot express
  (``LIKE '%x'``, arrays) go back. Spark drops a filter that is not handed back.

  ``pushdown`` is off by default on Spark 4.3 and older: there ``PythonScanBuilder.
  pushFilters`` stores the partitions and read function it planned on the data source
  object that every query of one DataFrame shares (``PythonDataSourceV2.setReadInfo``), and
  a later query of that DataFrame that pushes no filter (``df.count()`` after
  ``df.filter(...).count()``) reads them: the rows of the earlier filter. Later Spark keeps
  them per scan. With ``pushdown=true`` on 4.3, give each query a DataFrame of its own.
* **Splits** (Java ``TableScanUtil.planTasks``): one file scan task per file, or, for a file
  larger than the split size, per range of its row groups cut at its split offsets (floe's
  reader reads only the row groups starting in a task's range,
  ``floe.scan.readers.READS_SPLITS``); the tasks are bin-packed in order into input
  partitions of ``split-size`` bytes (default ``read.split.target-size``), each weighing its
  length plus its delete files, at least ``file-open-cost``. One Spark input partition per
  bin.
* **Reading**: each partition reads its tasks with :func:`floe.scan.readers.read_plan` (deletes
  applied, residual filtered) and hands Spark Arrow batches cast to Spark's Arrow schema.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import datasource as sds
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from floe import expressions as ex
from floe.errors import ValidationError
from floe.io import FileIO
from floe.scan import readers
from floe.scan.readers import read_plan
from floe.maintenance.compaction_plan import pack_groups
from floe.manifest import DataFile
from floe.metadata import TableMetadata
from floe.properties import SPLIT_SIZE, SPLIT_SIZE_DEFAULT, int_property
from floe.scan.incremental import plan_appends
from floe.scan.planning import FileScanTask, ScanPlan, TaskList, plan_files, select_snapshot
from floe.schema import Schema
from floe.spark.source import Options, TableRef, metadata_at
from floe.spark.types import ReadConverter, check_read_schema
from floe.types import (
    DoubleType,
    FloatType,
    IcebergType,
    TimestampNanoType,
    TimestamptzNanoType,
    UUIDType,
)

__all__ = ["FloeReader", "FloePartition", "ReadState", "read_state", "translate_filter",
           "split_tasks", "plan_partitions"]

#: Java ``SparkReadOptions`` / ``TableProperties.SPLIT_OPEN_FILE_COST_DEFAULT``.
SPLIT_SIZE_OPTION = "split-size"
FILE_OPEN_COST_OPTION = "file-open-cost"
FILE_OPEN_COST_DEFAULT = 4 * 1024 * 1024
BATCH_SIZE_OPTION = "batch-size"
PUSHDOWN_OPTION = "pushdown"


def _spark_version() -> tuple[int, int]:
    import pyspark

    major, minor = pyspark.__version__.split(".")[:2]
    return int(major), int("".join(c for c in minor if c.isdigit()) or 0)


#: Filters Spark pushes are used unless the ``pushdown`` option says otherwise: not on Spark
#: 4.3 and older, whose pushdown result leaks into later queries (module docstring).
PUSHDOWN_DEFAULT = _spark_version() > (4, 3)


@dataclass(frozen=True)
class ReadState:
    """Which table state a read sees, fixed when the read is planned."""

    io: FileIO
    location: str
    metadata: TableMetadata
    schema: Schema
    snapshot_id: int | None
    as_of_ms: int | None
    ref: str | None
    start_snapshot_id: int | None
    end_snapshot_id: int | None


def _ref(md: TableMetadata, name: str, kind: str) -> str:
    ref = md.refs.get(name)
    if ref is None and not (kind == "branch" and name == "main"):
        raise ValidationError(f"table {md.location} has no {kind} named {name!r}")
    if ref is not None and str(ref.ref_type).lower() != kind:
        raise ValidationError(f"{name!r} is a {str(ref.ref_type).lower()} of table "
                              f"{md.location}, not a {kind}: use the {str(ref.ref_type).lower()}"
                              " option")
    return name


def read_state(table: TableRef, opts: Options) -> ReadState:
    """The table state the options select (Java ``SparkScanBuilder``'s option checks)."""
    io, location, md = table.load()
    snapshot_id = opts.int("snapshot-id")
    as_of = opts.int("as-of-timestamp")
    branch, tag = opts.get("branch"), opts.get("tag")
    start, end = opts.int("start-snapshot-id"), opts.int("end-snapshot-id")
    if start is not None or end is not None:
        if snapshot_id is not None or as_of is not None or branch or tag:
            raise ValidationError(
                "cannot set start-snapshot-id and end-snapshot-id for incremental scans when "
                "snapshot-id, as-of-timestamp, branch or tag is set")
        if start is None:
            raise ValidationError("cannot only specify option end-snapshot-id to do an "
                                  "incremental scan: give start-snapshot-id too")
        return ReadState(io, location, md, md.schema(), None, None, None, start, end)
    if branch and tag:
        raise ValidationError("give either the branch or the tag option, not both")
    ref = _ref(md, branch, "branch") if branch else _ref(md, tag, "tag") if tag else None
    sel = select_snapshot(md, snapshot_id, as_of, ref)
    return ReadState(io, location, md, sel.schema, snapshot_id, as_of, ref, None, None)


# -- filter pushdown ---------------------------------------------------------------------------

_INEXACT_TYPES = (FloatType, DoubleType, TimestampNanoType, TimestamptzNanoType)
_SIMPLE_VALUE = (bool, int, str, bytes, bytearray)


def _column(schema: Schema, attribute: Sequence[str]) -> tuple[str, IcebergType] | None:
    if any("." in part for part in attribute):
        return None  # a dotted name would be read as a nested path
    name = ".".join(attribute)
    try:
        return name, schema.find_type(name)
    except ValidationError:
        return None


def _value(value: Any) -> Any:
    if isinstance(value, bytearray):
        return bytes(value)
    if isinstance(value, (list, tuple, dict)):
        raise ValidationError("complex literal")
    return value


def _translate(f: sds.Filter, schema: Schema) -> ex.BooleanExpression | None:
    """A Spark filter as a floe expression with the same rows, or None."""
    if isinstance(f, sds.Not):
        if isinstance(f.child, sds.EqualNullSafe) and f.child.value is not None:
            inner = _translate(sds.EqualTo(f.child.attribute, f.child.value), schema)
            if inner is None:
                return None
            col = ".".join(f.child.attribute)
            return ex.Or(ex.IsNull(col), ex.Not(inner))  # NOT (a <=> v): null rows pass
        if isinstance(f.child, sds.In) and any(v is None for v in f.child.value):
            # NOT (a IN (.., NULL)) is false or NULL for every row
            return None if _column(schema, f.child.attribute) is None else ex.AlwaysFalse()
        inner = _translate(f.child, schema)
        return None if inner is None else ex.Not(inner)
    found = _column(schema, getattr(f, "attribute", ()))
    if found is None:
        return None
    col, t = found
    if isinstance(f, sds.IsNull):
        return ex.IsNull(col)
    if isinstance(f, sds.IsNotNull):
        return ex.NotNull(col)
    if isinstance(t, _INEXACT_TYPES):
        return None
    if isinstance(f, sds.EqualNullSafe):
        return ex.IsNull(col) if f.value is None else ex.EqualTo(col, _value(f.value))
    if isinstance(f, sds.EqualTo):
        return ex.EqualTo(col, _value(f.value))
    if isinstance(f, sds.In):
        return ex.In(col, [_value(v) for v in f.value if v is not None])
    if isinstance(t, UUIDType):
        return None  # Spark orders uuids as strings
    if isinstance(f, sds.GreaterThan):
        return ex.GreaterThan(col, _value(f.value))
    if isinstance(f, sds.GreaterThanOrEqual):
        return ex.GreaterThanOrEqual(col, _value(f.value))
    if isinstance(f, sds.LessThan):
        return ex.LessThan(col, _value(f.value))
    if isinstance(f, sds.LessThanOrEqual):
        return ex.LessThanOrEqual(col, _value(f.value))
    if isinstance(f, sds.StringStartsWith):
        return ex.StartsWith(col, _value(f.value))
    return None  # StringEndsWith, StringContains: floe has no such predicate


def translate_filter(f: sds.Filter, schema: Schema) -> ex.BooleanExpression | None:
    """A pushed Spark filter as a floe expression that selects exactly the rows Spark's
    filter selects (None when there is none): checked by binding it to ``schema``."""
    try:
        expr = _translate(f, schema)
        if expr is not None:
            ex.bind(schema, expr)
        return expr
    except (ValidationError, TypeError, ValueError):
        return None


# -- splits and partitions ----------------------------------------------------------------------


def _stripped(df: DataFile) -> DataFile:
    """A data file without the metrics reading does not use (smaller partitions to ship)."""
    return df._replace(column_sizes=None, value_counts=None, null_value_counts=None,
                       nan_value_counts=None, lower_bounds=None, upper_bounds=None)


def ship_task(task: FileScanTask) -> FileScanTask:
    deletes = tuple(dataclasses.replace(d, data_file=_stripped(d.data_file))
                    for d in task.delete_files)
    return task._replace(data_file=_stripped(task.data_file), delete_files=deletes)


def split_tasks(tasks: Iterable[FileScanTask], split_size: int,
                splittable: bool | None = None) -> list[FileScanTask]:
    """Tasks of files larger than ``split_size`` cut into byte ranges at their split offsets
    (Java ``OffsetsAwareSplitScanTaskIterator``): each range starts at an offset and takes the
    row groups that follow while the range stays within the split size, at least one row
    group. Other tasks, files whose offsets are not ascending within the file (Java ignores
    such offsets) and files without offsets stay whole. Only when floe's reader reads byte
    ranges (``splittable``, default: whether it does)."""
    if splittable is None:
        splittable = bool(getattr(readers, "READS_SPLITS", False))
    out: list[FileScanTask] = []
    for t in tasks:
        df = t.data_file
        offsets = list(df.split_offsets or ())
        size = df.file_size_in_bytes
        if (not splittable or size <= split_size or len(offsets) < 2
                or str(df.file_format).upper() != "PARQUET" or offsets != sorted(set(offsets))
                or offsets[0] < 0 or offsets[-1] >= size):
            out.append(t)
            continue
        ends = [*offsets[1:], size]
        i = 0
        while i < len(offsets):
            start, end = offsets[i], ends[i]
            i += 1
            while i < len(offsets) and ends[i] - start <= split_size:
                end = ends[i]
                i += 1
            out.append(t._replace(start=start, length=end - start))
    return out


def _weight(task: FileScanTask, open_cost: int) -> int:
    length = task.length if task.length is not None else task.data_file.file_size_in_bytes
    deletes = sum(d.data_file.file_size_in_bytes for d in task.delete_files)
    return max(length + deletes, open_cost)


class FloePartition(InputPartition):
    """The tasks one Spark task reads, with the snapshot they were planned at."""

    def __init__(self, index: int, tasks: tuple[FileScanTask, ...], snapshot_id: int | None
                 ) -> None:
        super().__init__(index)
        self.tasks = tasks
        self.snapshot_id = snapshot_id


def plan_partitions(plan: ScanPlan, split_size: int, open_cost: int) -> list[FloePartition]:
    """The input partitions of a planned scan (see the module docstring)."""
    pieces = split_tasks(plan.tasks, split_size)
    bins = pack_groups(pieces, lambda t: _weight(t, open_cost), split_size)
    snapshot_id = plan.snapshot.snapshot_id if plan.snapshot is not None else None
    return [FloePartition(i, tuple(ship_task(t) for t in b), snapshot_id)
            for i, b in enumerate(bins)]


# -- the reader ------------------------------------------------------------------------------


class FloeReader(DataSourceReader):
    """Plans in :meth:`partitions` (on the driver), reads in :meth:`read` (on executors).

    Spark pickles the reader for :meth:`read` before it calls :meth:`partitions`: what
    :meth:`read` needs is set in ``__init__`` / :meth:`pushFilters` or travels in the
    partition.
    """

    def __init__(self, table: TableRef, opts: Options, schema: StructType) -> None:
        state = read_state(table, opts)
        self.table_name = table.name
        self.io = state.io
        self.location = state.location
        # the selection, not the metadata: every process re-reads the (immutable) file
        self.schema = state.schema
        self.selection = (state.snapshot_id, state.as_of_ms, state.ref)
        self.increment = (state.start_snapshot_id, state.end_snapshot_id)
        self.spark_schema = schema
        self.columns = check_read_schema(state.schema, schema, table.name).column_names()
        self.case_sensitive = opts.bool("case-sensitive", True)
        self.pushdown = opts.bool(PUSHDOWN_OPTION, PUSHDOWN_DEFAULT)
        option_filter = opts.get("filter")
        self.filters: list[ex.BooleanExpression] = []
        if option_filter is not None:
            self.filters.append(ex.parse_filter(option_filter))
            ex.bind(state.schema, self.filters[0], self.case_sensitive)  # fail at load()
        md = state.metadata
        self.split_size = opts.int(SPLIT_SIZE_OPTION,
                                   int_property(md, SPLIT_SIZE, SPLIT_SIZE_DEFAULT))
        self.open_cost = opts.int(FILE_OPEN_COST_OPTION, FILE_OPEN_COST_DEFAULT)
        self.batch_size = opts.int(BATCH_SIZE_OPTION, readers.DEFAULT_BATCH_SIZE)
        if self.split_size <= 0 or self.open_cost < 0 or self.batch_size <= 0:
            raise ValidationError("split-size and batch-size must be positive, "
                                  "file-open-cost not negative")

    def pushFilters(self, filters: list[sds.Filter]) -> Iterable[sds.Filter]:  # noqa: N802
        if not self.pushdown:
            yield from filters  # Spark filters every row itself, nothing planned depends on it
            return
        for f in filters:
            expr = translate_filter(f, self.schema)
            if expr is None:
                yield f
            else:
                self.filters.append(expr)

    def _row_filter(self) -> ex.BooleanExpression | None:
        if not self.filters:
            return None
        return self.filters[0] if len(self.filters) == 1 else ex.And(*self.filters)

    def plan(self) -> ScanPlan:
        """floe's plan of this read (the driver's side of :meth:`partitions`)."""
        md = metadata_at(self.io, self.location)
        start, end = self.increment
        if start is not None:
            return plan_appends(self.io, md, start, end, self._row_filter(),
                                self.case_sensitive)
        snapshot_id, as_of_ms, ref = self.selection
        return plan_files(self.io, md, snapshot_id, as_of_ms, ref, self._row_filter(),
                          self.case_sensitive)

    def partitions(self) -> list[InputPartition]:
        return list(plan_partitions(self.plan(), self.split_size, self.open_cost))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, FloePartition) or not partition.tasks:
            return iter(())
        return self._read(partition)

    def _read(self, partition: FloePartition) -> Iterator[pa.RecordBatch]:
        md = metadata_at(self.io, self.location)
        snapshot = (md.snapshot_by_id(partition.snapshot_id)
                    if partition.snapshot_id is not None else None)
        plan = ScanPlan(md, snapshot, self.schema, None, tasks=TaskList(partition.tasks),
                        case_sensitive=self.case_sensitive)
        convert = ReadConverter(self.schema, self.spark_schema)
        for batch in read_plan(self.io, plan, self.columns, self.batch_size, threads=1):
            yield convert(batch)

