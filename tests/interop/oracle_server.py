"""A long-lived helper around the iceberg-oracle: one Spark session for a whole pytest run.

Run with the oracle venv's python (never the project venv)::

    $FLOE_ORACLE_PY oracle_server.py --warehouse DIR --log FILE

It speaks JSON lines over stdin/stdout: one request object per line in, one response object
per line out.  The first line out is ``{"ready": true, ...}`` once Spark is up.  Every response
is either ``{"result": ..., "elapsed": seconds}`` or ``{"error": "...", "traceback": "..."}``;
a failing request never stops the server.  Requests:

* ``{"op": "sql", "sql": "S1; S2" | ["S1", "S2"], "all": false}`` -- runs the statements in
  order; the result is the last statement's rows (``all``: a list of every statement's rows),
  in the JSON form of ``oracle.rows_to_json``.  An optional ``warehouse`` must be the
  session's warehouse.
* ``{"op": "catalog", "name": "copy", "warehouse": DIR}`` -- adds a Hadoop catalog;
  ``{"op": "catalog", "name": "floe", "type": "rest", "warehouse": NAME, "properties":
  {"uri": URL, "token": T}}`` a REST catalog (Iceberg Java's ``RESTCatalog``); ``properties``
  are more ``spark.sql.catalog.<name>.*`` settings.
* ``{"op": "java_class", "name": "a/b/C"}`` -- whether the JVM can load that class.
* ``{"op": "equality_delete", "table": "db.t", "column": "id", "values": [...],
  "scope": "auto", "branch": null, "catalog": "oracle"}``
* ``{"op": "pyiceberg_scan", "metadata": PATH, "snapshot_id": null, "inspect": ["files"]}``
  -- PyIceberg ``StaticTable``: ``{"rows", "columns", "metadata", "inspect": {name: rows}}``.
* ``{"op": "duckdb", "sql": "..."}`` -- rows of one DuckDB query.
* ``{"op": "read", "table": "oracle.db.t", "options": {"start-snapshot-id": "1"}}`` -- the rows
  of ``spark.read.options(...).table(...)``: DataFrame read options Spark SQL cannot pass
  (incremental reads).
* ``{"op": "java_metadata", "paths": [...]}`` -- Iceberg Java's verdict on each metadata file.
* ``{"op": "java_add_snapshot", "metadata": PATH, "snapshot": JSON}`` -- what Java's metadata
  builder does with that snapshot committed to main on that table state.
* ``{"op": "ping"}``, ``{"op": "shutdown"}`` (also on end of input).

Spark, the JVM and every library log to the ``--log`` file: stdout is the protocol channel.
"""

import argparse
import datetime
import decimal
import json
import math
import os
import sys
import time
import traceback
import uuid


def _jsonable(value):
    """A Python value from PyArrow or DuckDB -> the JSON form oracle.rows_to_json uses."""
    if value is None:
        return None
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(v, tuple) and len(v) == 2 for v in value):
            # PyArrow map values come back as [(key, value), ...]
            items = [(_jsonable(k), _jsonable(v)) for k, v in value]
            if all(isinstance(k, str) for k, _ in items):
                return dict(items)
            return [{"key": k, "value": v} for k, v in items]
        return [_jsonable(v) for v in value]
    if isinstance(value, datetime.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(datetime.timezone.utc)
        return value.isoformat()
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
    return value


def _arrow_rows(table):
    return [{k: _jsonable(v) for k, v in row.items()} for row in table.to_pylist()]


class Server:
    def __init__(self, oracle, warehouse, extra_jars=()):
        self.oracle = oracle
        self.warehouse = os.path.abspath(warehouse)
        conf = None
        if extra_jars:
            p = oracle.paths()
            conf = {"spark.jars": ",".join(
                [p["runtime_jar"], p["extensions_jar"], p["jackson_jar"], *extra_jars])}
        self.spark = oracle.spark_session(self.warehouse, conf=conf)
        self.catalogs = {"oracle": self.warehouse}
        self._duckdb = None

    # ------------------------------------------------------------------ ops
    def op_ping(self, req):
        return "pong"

    def op_sql(self, req):
        wh = req.get("warehouse")
        if wh is not None and os.path.abspath(wh) != self.warehouse:
            raise ValueError("this server's warehouse is %s, not %s (add a catalog instead)"
                             % (self.warehouse, wh))
        stmts = req["sql"]
        if isinstance(stmts, str):
            stmts = self.oracle.split_sql(stmts)
        if not stmts:
            raise ValueError("no SQL statement given")
        out = []
        for s in stmts:
            try:
                df = self.spark.sql(s)
                rows = self.oracle.rows_to_json(df)
            except Exception as ex:
                raise RuntimeError("%s\n  in statement: %s" % (_first_line(ex), s[:300])) from ex
            out.append(rows)
        return out if req.get("all") else out[-1]

    def op_catalog(self, req):
        # catalogs are made on first use, so runtime settings are enough
        name, kind = req["name"], req.get("type", "hadoop")
        wh = os.path.abspath(req["warehouse"]) if kind == "hadoop" else req["warehouse"]
        prefix = "spark.sql.catalog.%s" % name
        self.spark.conf.set(prefix, "org.apache.iceberg.spark.SparkCatalog")
        self.spark.conf.set(prefix + ".type", kind)
        self.spark.conf.set(prefix + ".warehouse", wh)
        self.spark.conf.set(prefix + ".cache-enabled", "false")
        for k, v in (req.get("properties") or {}).items():
            self.spark.conf.set("%s.%s" % (prefix, k), str(v))
        self.catalogs[name] = wh
        return {"name": name, "warehouse": wh}

    def op_java_class(self, req):
        try:
            # Spark's loader: the one that holds spark.jars
            self.spark._jvm.org.apache.spark.util.Utils.classForName(
                req["name"].replace("/", "."), False, False)
        except Exception as ex:
            return _first_line(ex)
        return None

    def op_equality_delete(self, req):
        return self.oracle.equality_delete(
            self.spark, req["table"], req["column"], [str(v) for v in req["values"]],
            catalog=req.get("catalog", "oracle"), scope=req.get("scope", "auto"),
            branch=req.get("branch"))

    def op_pyiceberg_scan(self, req):
        from pyiceberg.table import StaticTable
        table = StaticTable.from_metadata(req["metadata"])
        out = {"metadata": json.loads(table.metadata.model_dump_json(by_alias=True))}
        if req.get("scan", True):
            scan = table.scan(snapshot_id=req.get("snapshot_id"))
            arrow = scan.to_arrow()
            out["columns"] = arrow.column_names
            out["rows"] = _arrow_rows(arrow)
        inspect = {}
        for name in req.get("inspect", []):
            inspect[name] = _arrow_rows(getattr(table.inspect, name)())
        out["inspect"] = inspect
        return out

    def op_duckdb(self, req):
        if self._duckdb is None:
            self._duckdb = self.oracle.duckdb_connection()
        try:
            cur = self._duckdb.execute(req["sql"])
            if not cur.description:
                return []
            # through Arrow: DuckDB's own Python conversion of timestamptz needs pytz
            return _arrow_rows(cur.fetch_arrow_table())
        except Exception:
            # an internal error leaves the connection unusable: start afresh next time
            self._duckdb.close()
            self._duckdb = None
            raise

    def op_java_metadata(self, req):
        """Iceberg Java's ``TableMetadataParser.read`` of each metadata file in ``paths`` (the
        constructor's checks included): ``{path: null}`` when Java loads it, else the first
        line of Java's error."""
        jvm = self.spark._jvm
        io = jvm.org.apache.iceberg.hadoop.HadoopFileIO(self.spark._jsc.hadoopConfiguration())
        parser = jvm.org.apache.iceberg.TableMetadataParser
        out = {}
        for path in req["paths"]:
            try:
                parser.read(io, path)
                out[path] = None
            except Exception as ex:
                out[path] = _first_line(ex)
        return out

    def op_java_add_snapshot(self, req):
        """What Iceberg Java's metadata builder does with a commit of ``snapshot`` (its JSON,
        as ``SnapshotProducer`` would have made it: stamped by the committer's clock) on the
        table state in the metadata file ``metadata``: ``buildFrom(base).setBranchSnapshot(
        snapshot, "main").build()``. ``{"error": null, "last_updated_ms": ...}`` when Java
        builds it, else ``{"error": "..."}``."""
        jvm = self.spark._jvm
        io = jvm.org.apache.iceberg.hadoop.HadoopFileIO(self.spark._jsc.hadoopConfiguration())
        base = jvm.org.apache.iceberg.TableMetadataParser.read(io, req["metadata"])
        snapshot = jvm.org.apache.iceberg.SnapshotParser.fromJson(req["snapshot"])
        try:
            built = (jvm.org.apache.iceberg.TableMetadata.buildFrom(base)
                     .setBranchSnapshot(snapshot, "main").build())
        except Exception as ex:
            return {"error": _first_line(ex)}
        return {"error": None, "last_updated_ms": built.lastUpdatedMillis()}

    def op_read(self, req):
        opts = {str(k): str(v) for k, v in (req.get("options") or {}).items()}
        df = self.spark.read.options(**opts).table(req["table"])
        return self.oracle.rows_to_json(df)

    # ------------------------------------------------------------------ loop
    def handle(self, req):
        fn = getattr(self, "op_%s" % req.get("op"), None)
        if fn is None:
            raise ValueError("unknown op %r" % req.get("op"))
        return fn(req)

    def stop(self):
        try:
            if self._duckdb is not None:
                self._duckdb.close()
        finally:
            self.spark.stop()


def _first_line(ex):
    java = getattr(ex, "java_exception", None)     # py4j: the Java exception says what went wrong
    text = str(java.toString()) if java is not None else str(ex)
    lines = text.strip().splitlines()
    return "%s: %s" % (type(ex).__name__, lines[0][:1000] if lines else "")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--warehouse", required=True)
    p.add_argument("--log", required=True, help="file for Spark's and the JVM's output")
    p.add_argument("--oracle-dir", default=os.environ.get("FLOE_ORACLE_DIR"))
    p.add_argument("--jar", action="append", default=[],
                   help="one more jar for Spark's class path (repeatable)")
    args = p.parse_args()

    # Keep the protocol channel to ourselves: fds 1 and 2 (inherited by the JVM that py4j
    # launches) go to the log file.
    proto = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    log = open(args.log, "a", encoding="utf-8", buffering=1)
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    sys.stdout = sys.stderr = log

    def send(obj):
        proto.write(json.dumps(obj, ensure_ascii=False, allow_nan=False) + "\n")
        proto.flush()

    try:
        if not args.oracle_dir:
            raise RuntimeError("FLOE_ORACLE_DIR is not set and --oracle-dir not given")
        sys.path.insert(0, os.path.abspath(args.oracle_dir))
        import oracle
        t0 = time.monotonic()
        server = Server(oracle, args.warehouse, args.jar)
    except Exception as ex:
        traceback.print_exc()
        send({"ready": False, "error": _first_line(ex), "traceback": traceback.format_exc()})
        return 1
    send({"ready": True, "warehouse": server.warehouse, "spark": server.spark.version,
          "startup": round(time.monotonic() - t0, 3)})

    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            t0 = time.monotonic()
            try:
                req = json.loads(line)
                if req.get("op") == "shutdown":
                    send({"result": "bye"})
                    break
                resp = {"result": server.handle(req)}
            except Exception as ex:
                print("request failed: %s" % line[:500], file=log)
                traceback.print_exc(file=log)
                resp = {"error": _first_line(ex), "traceback": traceback.format_exc()}
            resp["elapsed"] = round(time.monotonic() - t0, 3)
            try:
                send(resp)
            except (TypeError, ValueError) as ex:      # a value JSON cannot carry
                send({"error": "response not serialisable: %s" % _first_line(ex),
                      "elapsed": resp["elapsed"]})
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
