"""``make pipeline``: the demo pipeline on Spark and floe, into the explorer's warehouse.

    python pipeline/events.py [--warehouse DIR] [--batches N] [--rows N] [--master URL]

Without ``--warehouse`` the tables go where ``make run`` looks: ``$FLOE_WAREHOUSE``, else the
demo warehouse under ``var/`` (created first, as ``make run`` creates it, so that ``make run``
keeps it). The steps are :mod:`floe.spark.pipeline`'s.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def explorer_warehouse() -> tuple[str, bool]:
    """The warehouse ``make run`` serves, created like ``make run`` creates the demo one;
    (path, whether it is the default demo warehouse)."""
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "explorer.settings")
    from django.conf import settings

    from explorer.run import ensure_demo_warehouse

    if settings.FLOE_WAREHOUSE_IS_DEMO:
        ensure_demo_warehouse(settings.FLOE_WAREHOUSE)
    return str(settings.FLOE_WAREHOUSE), bool(settings.FLOE_WAREHOUSE_IS_DEMO)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warehouse", help="warehouse directory (default: the explorer's)")
    parser.add_argument("--batches", type=int, default=4, help="appended batches (default 4)")
    parser.add_argument("--rows", type=int, default=200_000,
                        help="events per batch (default 200,000)")
    parser.add_argument("--master", help="Spark master (default $FLOE_SPARK_MASTER or local[*])")
    args = parser.parse_args(argv)

    if args.warehouse:
        warehouse, demo = str(Path(args.warehouse).resolve()), False
        Path(warehouse).mkdir(parents=True, exist_ok=True)
    else:
        warehouse, demo = explorer_warehouse()

    from floe.errors import FloeError
    from floe.spark import session
    from floe.spark.pipeline import NAMESPACE, TABLE, run_pipeline

    print(f"Floe pipeline: warehouse {warehouse}", flush=True)
    spark = session(args.master, app_name="floe-pipeline")
    try:
        result = run_pipeline(spark, warehouse, batches=args.batches, rows_per_batch=args.rows,
                              say=lambda line: print(line, flush=True))
    except FloeError as e:
        print(f"Floe pipeline failed: {e}", file=sys.stderr)
        return 1
    finally:
        spark.stop()
    page = f"http://127.0.0.1:8000/catalogs/local/namespaces/{NAMESPACE}/tables/{TABLE}/"
    same = os.environ.get("FLOE_WAREHOUSE") == warehouse
    command = "make run" if demo or same else f"FLOE_WAREHOUSE={warehouse} make run"
    print(f"Done: {result.rows:,} events in {result.identifier} ({result.location}).")
    print(f"See it in the explorer: {command}, then open {page}")
    print("  snapshots, the delete, the schema and spec evolution, the compaction: its "
          "Snapshots and History pages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
