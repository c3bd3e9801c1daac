"""Maintenance benchmarks, side by side with Spark + Iceberg Java (oracle tool, local[2]):
compaction of 10M rows in 2,000 files (``maintenance_compaction.py``), then expire on a
table with 10k snapshots and orphan listing over 1M files (``maintenance_expire_orphans.py``),
each printing its own table with peak memory. Options after ``--`` go to both scripts (for
instance ``-- --no-spark``); each script also runs alone with its own options.

Usage: ``python benchmarks/maintenance.py [-- OPTIONS]``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    extra = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
    worst = 0
    for script in ("maintenance_compaction.py", "maintenance_expire_orphans.py"):
        print(f"== {script}", flush=True)
        worst = max(worst, subprocess.run([sys.executable, str(HERE / script), *extra]).returncode)
    return worst


if __name__ == "__main__":
    sys.exit(main())
