"""Expire snapshots and orphan-file removal: floe vs Spark + Iceberg Java's procedures.

Tables come from ``benchmarks/big_table.py`` (``--snapshots`` snapshots, ``--files`` data
files; an append-only table with manifest merging, manifest lists of up to ~1,000 entries at
10k snapshots), built under ``--dir`` and kept between runs where possible:

* expire: a copy is expired with ``older_than`` = the commit time of the snapshot at
  ``--expire-at`` (a fraction of the history; default 0.9: the oldest 90% expire), first as a
  dry run (planning only), then for real (commit + deleting the expired manifest lists and
  the manifests no kept snapshot lists; data files stay, all being live). The real run
  changes the table, so it is rebuilt next time. With ``--spark-expire`` a second copy is
  expired by ``CALL system.expire_snapshots`` with the same cut.
* orphans: the data files of the table's current snapshot are created on disk (empty, 10 days
  old), plus ``--orphans`` unreferenced ones; floe's ``remove_orphan_files`` dry run and
  Spark's ``CALL system.remove_orphan_files(..., dry_run => true)`` list the same directory
  tree and must report the same orphans.

Each floe measurement runs in a fresh process (seconds exclude interpreter start-up and
imports; peak memory is the process's peak RSS). Spark 3.5 + Iceberg 1.10 (``local[2]``,
started the way ``tests/interop/oracle_client.py`` starts it with the oracle's python:
``--oracle-python``, default what ``../shared/tools/iceberg-oracle/setup`` prints) runs in a
warm session; its memory is the JVM's peak RSS while the call runs (sampled every 50 ms).

Usage: ``python benchmarks/maintenance_expire_orphans.py [--snapshots 10000]
[--files 1000000] [--orphans 1000] [--expire-at 0.9] [--dir DIR] [--no-spark]
[--spark-expire]``; a quick check: ``--snapshots 200 --files 20000``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
ORACLE_DIR = HERE.parent.parent / "shared" / "tools" / "iceberg-oracle"
DAY_MS = 86_400_000
FILES_STAMP = ".orphan-bench-stamp.json"


def _table_dir(warehouse: Path) -> Path:
    from big_table import NAMESPACE, TABLE

    return warehouse / NAMESPACE / TABLE


def _build(warehouse: Path, snapshots: int, files: int) -> float:
    from big_table import build_big_table

    t0 = time.perf_counter()
    build_big_table(str(_table_dir(warehouse)), snapshots, files)
    return time.perf_counter() - t0


def _create_files(warehouse: Path, orphans: int) -> tuple[float, int, list[str]]:
    """The current snapshot's data files on disk (empty, 10 days old) plus ``orphans``
    unreferenced ones; reused when already there. Returns (seconds, files, orphan paths)."""
    from floe.catalog.filesystem import directory_table
    from floe.scan.manifests import ManifestScanner
    from floe.manifest import read_manifest_list

    root = _table_dir(warehouse)
    stamp = root / FILES_STAMP
    table = directory_table(str(root))
    params = {"metadata": table.metadata_location, "orphans": orphans}
    orphan_paths = [str(root / "data" / f"orphan-{i % 97}" / f"orphan-{i}.parquet")
                    for i in range(orphans)]
    if stamp.exists() and json.loads(stamp.read_text()) == params:
        return 0.0, -1, orphan_paths
    t0 = time.perf_counter()
    scanner = ManifestScanner(table.io, table.location)
    snap = table.metadata.current_snapshot()
    assert snap is not None and snap.manifest_list is not None
    paths = [p for m in read_manifest_list(table.io, snap.manifest_list)
             for p in scanner.live_files(m)]
    old = (time.time() * 1000 - 10 * DAY_MS) / 1000
    made: set[str] = set()
    for path in paths + orphan_paths:
        parent = os.path.dirname(path)
        if parent not in made:
            os.makedirs(parent, exist_ok=True)
            made.add(parent)
        fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o644)
        os.close(fd)
        os.utime(path, (old, old))
    for p in root.rglob("*"):  # metadata too: only references keep a file
        if p.is_file():
            os.utime(p, (old, old))
    stamp.write_text(json.dumps(params))
    return time.perf_counter() - t0, len(paths) + len(orphan_paths), orphan_paths


# -- floe, in a fresh process ---------------------------------------------------------------------


def child(what: str, warehouse: str, cut: str) -> None:
    t0 = time.perf_counter()
    from floe.catalog.filesystem import directory_table
    from floe.maintenance.expire import expire_snapshots
    from floe.maintenance.orphans import remove_orphan_files

    imported = time.perf_counter()
    table = directory_table(str(_table_dir(Path(warehouse))))
    out: dict[str, Any] = {}
    if what in ("expire-dry", "expire"):
        r = expire_snapshots(table, older_than_ms=int(cut), dry_run=what == "expire-dry")
        out = {"expired": len(r.expired_snapshot_ids), "files": len(r.files()),
               "manifests": len(r.manifests), "manifest_lists": len(r.manifest_lists),
               "data_files": len(r.data_files), "deleted": r.deleted_files}
    else:
        o = remove_orphan_files(table, older_than_ms=int(cut), dry_run=True)
        out = {"listed": o.listed_files, "orphans": sorted(o.orphan_files)}
    out["seconds"] = time.perf_counter() - imported
    out["imports"] = imported - t0
    out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out))


def _floe(what: str, warehouse: Path, cut: int) -> dict[str, Any]:
    run = subprocess.run([sys.executable, __file__, "--child", what, str(warehouse), str(cut)],
                         capture_output=True, text=True, check=False)
    if run.returncode != 0:
        raise SystemExit(f"floe {what} failed: {run.stderr.strip()[-3000:]}")
    got: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    return got


# -- Spark ----------------------------------------------------------------------------------------


def _spark_call(client: Any, sql: str) -> tuple[list[dict[str, Any]], float, float]:
    """(rows, seconds, peak RSS MB of the JVM during the call)."""
    from maintenance_compaction import spark_call

    return spark_call(client, sql)


def _timestamp(ms: int) -> str:
    t = dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)
    return f"TIMESTAMP '{t.strftime('%Y-%m-%d %H:%M:%S')}.{ms % 1000:03d}'"


def _cut(warehouse: Path, at: float) -> tuple[int, int]:
    """(older_than for expiring the oldest ``at`` of the history, snapshots)."""
    from floe.catalog.filesystem import directory_table

    snaps = directory_table(str(_table_dir(warehouse))).metadata.snapshots
    return snaps[min(len(snaps) - 1, int(len(snaps) * at))].timestamp_ms, len(snaps)


def _row(name: str, floe: dict[str, Any] | None, spark: tuple[float, float] | str | None
         ) -> str:
    fs = f"{floe['seconds']:>8.2f} {floe['peak_mb']:>8.0f}" if floe else f"{'-':>8} {'-':>8}"
    if isinstance(spark, tuple):
        ss = f"{spark[0]:>8.2f} {spark[1]:>9.0f}"
    else:
        ss = f"{spark or '-':>18}"
    return f"{name:<44} {fs} {ss}"


def _spark_timed(client: Any, sql: str, timeout: float) -> tuple[list[dict[str, Any]] | None,
                                                                  tuple[float, float] | str]:
    """Run one Spark call; on timeout kill the session (its JVM keeps working otherwise)."""
    import oracle_client
    from maintenance_compaction import _jvm

    oracle_client.REQUEST_TIMEOUT = timeout
    jvm = _jvm(client)
    try:
        rows, seconds, mb = _spark_call(client, sql)
    except RuntimeError as e:
        if "no answer" not in str(e):
            raise
        if jvm is not None:
            os.kill(jvm, 9)
        client.proc.kill()
        client.proc.wait()
        return None, f"> {timeout:.0f} s"
    return rows, (seconds, mb)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--snapshots", type=int, default=10_000)
    ap.add_argument("--files", type=int, default=1_000_000)
    ap.add_argument("--orphans", type=int, default=1000)
    ap.add_argument("--expire-at", type=float, default=0.9)
    ap.add_argument("--dir", default=str(HERE / ".cache" / "expire_orphans"))
    ap.add_argument("--oracle-python")
    ap.add_argument("--no-spark", action="store_true")
    ap.add_argument("--spark-expire", action="store_true",
                    help="also expire a copy with Spark (builds one more table)")
    ap.add_argument("--spark-timeout", type=float, default=1800.0,
                    help="seconds to wait for one Spark call")
    ap.add_argument("--child", nargs=3, metavar=("WHAT", "WAREHOUSE", "CUT"))
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return
    root = Path(args.dir) / f"{args.snapshots}x{args.files}"
    root.mkdir(parents=True, exist_ok=True)
    (Path(args.dir) / ".gitignore").write_text("*\n")
    size = f"{args.snapshots:,} snapshots, {args.files:,} files"
    header = f"{'operation':<44} {'floe s':>8} {'floe MB':>8} {'spark s':>8} {'spark MB':>9}"
    rows: list[str] = []

    # -- floe: expire
    exp_wh = root / "expire"
    secs = _build(exp_wh, args.snapshots, args.files)
    print(f"expire table ({size}) ready in {secs:.1f} s", flush=True)
    cut, n = _cut(exp_wh, args.expire_at)
    dry = _floe("expire-dry", exp_wh, cut)
    real = _floe("expire", exp_wh, cut)
    (_table_dir(exp_wh) / ".big-table-stamp.json").unlink(missing_ok=True)  # changed: rebuild
    if dry["files"] != real["deleted"]:
        raise SystemExit(f"the run deleted {real['deleted']} files, the dry run listed "
                         f"{dry['files']}")
    print(f"floe expired {real['expired']:,} of {n:,} snapshots: {real['manifest_lists']:,} "
          f"manifest lists, {real['manifests']:,} manifests, {real['data_files']:,} data "
          f"files", flush=True)
    rows.append(_row(f"expire, dry run ({real['expired']:,} of {n:,} snapshots)", dry, None))
    print(rows[-1], flush=True)
    expire_name = "expire (commit + delete)"
    print(_row(expire_name, real, None), flush=True)

    # -- floe: orphans
    orph_wh = root / "orphans"
    secs = _build(orph_wh, args.snapshots, args.files)
    made_secs, made, orphan_paths = _create_files(orph_wh, args.orphans)
    print(f"orphan table ready in {secs:.1f} s; files on disk "
          f"{'reused' if made < 0 else f'{made:,} made in {made_secs:.1f} s'}", flush=True)
    older = int(time.time() * 1000) - 5 * DAY_MS
    orph = _floe("orphans", orph_wh, older)
    if sorted(orph["orphans"]) != sorted(orphan_paths):
        raise SystemExit(f"floe found {len(orph['orphans'])} orphans, expected "
                         f"{len(orphan_paths)}")
    orphans_name = f"orphans, dry run ({orph['listed']:,} files listed)"
    print(_row(orphans_name, orph, None), flush=True)

    # -- Spark
    spark_expire: tuple[float, float] | str | None = None
    spark_orph: tuple[float, float] | str | None = None
    python = None
    if not args.no_spark:
        from maintenance_compaction import _oracle_python

        python = _oracle_python(args.oracle_python)
    if python:
        sys.path.insert(0, str(HERE.parent / "tests" / "interop"))
        from oracle_client import OracleClient

        client = OracleClient(python, ORACLE_DIR, orph_wh, root / "oracle.log")
        client.sql("SELECT count(*) AS n FROM oracle.bench.big.snapshots")  # warm: not timed
        got: list[dict[str, Any]] | None
        if args.spark_expire:
            sp_wh = root / "spark-expire"
            _build(sp_wh, args.snapshots, args.files)
            (_table_dir(sp_wh) / ".big-table-stamp.json").unlink(missing_ok=True)
            client.add_catalog("exp", sp_wh)
            sp_cut, _ = _cut(sp_wh, args.expire_at)
            got, spark_expire = _spark_timed(
                client, f"CALL exp.system.expire_snapshots(table => 'bench.big', "
                        f"older_than => {_timestamp(sp_cut)})", args.spark_timeout)
            print(f"Spark expire: {got}", flush=True)
        if client.proc.poll() is None:
            got, spark_orph = _spark_timed(
                client, f"CALL oracle.system.remove_orphan_files(table => 'bench.big', "
                        f"older_than => {_timestamp(older)}, dry_run => true)",
                args.spark_timeout)
            if got is not None:
                found = sorted(r["orphan_file_location"].removeprefix("file:") for r in got)
                if found != sorted(orphan_paths):
                    raise SystemExit(f"Spark found {len(found)} orphans, floe "
                                     f"{len(orphan_paths)}")
            client.close()
    rows.append(_row(expire_name, real, spark_expire))
    rows.append(_row(orphans_name, orph, spark_orph))
    print(f"\n{size} ({os.cpu_count()} cores)\n{header}")
    for line in rows:
        print(line)


if __name__ == "__main__":
    main()
