"""floe on Spark: a PySpark 4 data source (``format("floe")``), compaction on Spark, and the
helpers that set a session up for them.

::

    from floe.spark import session, read, write
    spark = session()                                   # FLOE_SPARK_MASTER, default local[*]
    df = read(spark, "/warehouse/web/events", snapshot_id=123, filter="kind = 'click'")
    write(df, "local:web.events_copy", mode="overwrite", overwrite_mode="dynamic")

floe plans reads and commits writes (:mod:`floe.spark.reader`, :mod:`floe.spark.writer`); Spark's
executors read and write the data files. :func:`read` / :func:`write` / :func:`floe.spark.
compaction.compact` turn a failed Spark job into the floe error it was, in one line
(:func:`spark_errors`); the plain ``spark.read.format("floe")`` API works too, with Spark's
own exceptions.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from floe.spark import _pickle
from floe.spark.errors import SparkJobError, spark_errors
from floe.spark.source import FORMAT, Options, TableRef, options_of

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["FORMAT", "MASTER_ENV", "session", "register", "activate", "read", "write",
           "spark_errors", "SparkJobError", "default_master"]

#: The Spark master when none is given (the explorer's setting of the same name).
MASTER_ENV = "FLOE_SPARK_MASTER"
DEFAULT_MASTER = "local[*]"
#: Rows per Arrow batch between the JVM and Python (Spark's default, 10,000, makes writes
#: spend their time per batch); floe reads in batches of this size too.
ARROW_BATCH_ROWS = 131_072
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


_pickle.register()


def default_master() -> str:
    return os.environ.get(MASTER_ENV) or DEFAULT_MASTER


def _worker_environment() -> None:
    """Spark starts its Python workers with ``$PYSPARK_PYTHON`` (``python3`` on the PATH by
    default, which may lack pyarrow and floe): this interpreter, with floe's directory on
    ``PYTHONPATH``. Only effective before the session's JVM starts."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    root = str(Path(__file__).resolve().parents[2])
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([root, *paths])


def session(master: str | None = None, *, app_name: str = "floe",
            config: Mapping[str, str] | None = None, log_level: str = "ERROR"
            ) -> SparkSession:
    """A SparkSession with the floe source registered and what it needs: filter pushdown on
    (``spark.sql.python.filterPushdown.enabled``), UTC session time zone, Arrow batches of
    :data:`ARROW_BATCH_ROWS` rows, the TIME type, the workers running this interpreter with
    floe importable.
    ``master`` defaults to ``$FLOE_SPARK_MASTER``, else ``local[*]``; ``config`` adds or
    overrides Spark settings. An existing session is reused (and configured)."""
    from pyspark.sql import SparkSession

    _worker_environment()
    runtime = {
        PUSHDOWN_CONF: "true",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.execution.arrow.maxRecordsPerBatch": str(ARROW_BATCH_ROWS),
        # Iceberg's time columns are Spark 4's TIME(6), off by default in Spark 4.x
        "spark.sql.timeType.enabled": "true",
    }
    builder = SparkSession.builder.master(master or default_master()).appName(app_name)
    builder = builder.config("spark.executorEnv.PYTHONPATH", os.environ["PYTHONPATH"])
    builder = builder.config("spark.ui.showConsoleProgress", "false")
    for key, value in {**runtime, **(config or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    for key, value in {**runtime, **(config or {})}.items():
        if key in runtime:
            spark.conf.set(key, value)
    if log_level:
        spark.sparkContext.setLogLevel(log_level)
    register(spark)
    return spark


def activate(spark: SparkSession) -> None:
    """Make ``spark`` the active session of the calling thread's JVM thread: a Python thread
    runs on a JVM thread of its own, where Spark would look data sources up in no session
    (DATA_SOURCE_NOT_FOUND for ``format("floe")``)."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    jvm.SparkSession.setActiveSession(spark._jsparkSession)


def register(spark: SparkSession) -> None:
    """Make ``format("floe")`` known to ``spark`` (registration is per session), with filter
    pushdown on: Spark refuses a source that can take filters otherwise."""
    from floe.spark.source import FloeDataSource

    spark.conf.set(PUSHDOWN_CONF, "true")
    spark.dataSource.register(FloeDataSource)


def read(spark: SparkSession, table: str | TableRef, **options: Any) -> DataFrame:
    """``spark.read.format("floe")`` of ``table`` (a table directory, a metadata file or
    ``CATALOG:namespace.table``) with keyword options (``snapshot_id=…``, ``as_of_timestamp``,
    ``branch``, ``tag``, ``filter``, ``start_snapshot_id``, ``end_snapshot_id``,
    ``split_size``…). Errors while the table is opened and planned are floe errors; run
    actions under :func:`spark_errors` for the same on errors from executors."""
    activate(spark)
    with spark_errors():
        return spark.read.format(FORMAT).options(**options_of(table, options)).load()


def write(df: DataFrame, table: str | TableRef, *, mode: str = "append",
          **options: Any) -> int | None:
    """Write ``df`` into ``table`` in one commit: ``mode`` ``append`` or ``overwrite``
    (``overwrite_mode="dynamic"`` replaces the partitions written, ``"static"`` the rows
    matching ``filter``, default all), ``branch=…``, ``isolation_level=…``,
    ``target_file_size_bytes=…``. Returns the id of the snapshot committed (None when nothing
    was committed: an empty dynamic overwrite). Failures are floe errors of one line."""
    import uuid

    if mode not in ("append", "overwrite"):
        raise _validation_error(f"unknown write mode {mode!r}: use append or overwrite")
    write_id = str(uuid.uuid4())
    spark_options = options_of(table, {**options, "write_id": write_id})
    # the table as the writer's processes open it: a path with its storage options
    # (s3.* ...) or the catalog's configuration
    ref = TableRef.from_options(Options(spark_options))
    activate(df.sparkSession)
    with spark_errors():
        df.write.format(FORMAT).mode(mode).options(**spark_options).save()
    from floe.spark.writer import committed_snapshot_id

    with ref.open() as t:
        return committed_snapshot_id(t.metadata, write_id)


def _validation_error(message: str) -> Exception:
    from floe.errors import ValidationError

    return ValidationError(message)
