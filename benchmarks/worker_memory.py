"""The memory of one Celery pool process over many maintenance tasks, per allocator behind
pyarrow's buffers and with or without the process keeping what its tasks cached (issue 23:
why the site's workers grew through ``benchmarks/load.py``'s soak, and what keeps them flat).

Each configuration runs in a fresh process of its own, configured as a worker's pool process
is (``explorer.settings``, a SQLite database of its own under ``--dir``): a small table made
with 10 appends, then ``--cycles`` cycles of what ``benchmarks/load.py``'s task driver does to
its table: 20 appends of a few rows (with floe, in this process), a compaction, an expiry dry
run and its confirmation, each a task run traced as a pool process runs a message (Celery's
tracer, not eagerly: its signals fire, ``explorer.celery``'s hook included). The
configurations:

- ``FLOE_ARROW_MEMORY_POOL``: ``system`` (the site's default) or ``mimalloc`` (pyarrow's);
- caches: ``cleared`` after each task (the site's behaviour, explorer.celery) or ``kept``
  (the hook disconnected: the explorer's and floe's in-memory caches fill up to their
  bounds).

Printed: the RSS (``/proc/self/status``) after the first cycle, every ``--every`` cycles and
after the last, then a table: RSS after the first and the last cycle and the change, the
entries the caches held at the end. The persistent manifest cache is on (under ``--dir``);
the OS page cache holds the table's files (just written).

Usage::

    python benchmarks/worker_memory.py [--cycles 100] [--every 10] [--dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = [("system", "cleared"), ("mimalloc", "cleared"), ("system", "kept"),
           ("mimalloc", "kept")]


def _rss_mb() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def child(directory: Path, caches: str, cycles: int, every: int) -> dict[str, Any]:
    """One configuration, in this (fresh) process; its samples."""
    os.environ.update(DJANGO_SETTINGS_MODULE="explorer.settings",
                      FLOE_VAR_DIR=str(directory / "var"),
                      FLOE_WAREHOUSE=str(directory / "warehouse"),
                      FLOE_MANIFEST_CACHE=str(directory / "var" / "manifest-cache"))
    for name in ("FLOE_CATALOGS", "DATABASE_URL", "CELERY_BROKER_URL"):
        os.environ.pop(name, None)
    (directory / "warehouse").mkdir(parents=True)
    sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]
    import django

    django.setup()
    from celery.app.trace import build_tracer
    from celery.signals import task_postrun
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    import load
    from explorer import celery_app
    from explorer.cache import CACHE
    from explorer.celery import _keep_nothing_of_a_task
    from explorer.models import TaskRun
    from explorer.tasks import jobs
    from explorer.tasks.services import task_submit
    from floe.scan.manifests import DEFAULT_CACHE

    call_command("migrate", interactive=False, verbosity=0)
    admin = get_user_model().objects.create_superuser("admin", "admin@example.com", None)
    celery_app.conf.task_always_eager = False
    if caches == "kept":
        task_postrun.disconnect(_keep_nothing_of_a_task)
    trace = build_tracer(jobs.run_task.name, jobs.run_task, eager=False, app=celery_app)
    load.build_maint_table(directory / "warehouse")
    table = {"catalog": "local", "namespace": load.MAINT_NS, "table": load.MAINT_TABLE}

    def run(kind: str, params: dict[str, Any]) -> TaskRun:
        # submitted as the API does; its broker message is never read (no worker runs here)
        submitted = task_submit(kind=kind, params=params, user=admin, via="api")
        trace(f"run-{submitted.pk}", (submitted.pk,), {}, {"delivery_info": {}})
        done = TaskRun.objects.get(pk=submitted.pk)
        if done.state != TaskRun.State.SUCCEEDED:
            raise RuntimeError(f"{kind}: {done.state} {done.error}")
        return done

    samples: list[tuple[int, int]] = []
    t0 = time.perf_counter()
    for cycle in range(1, cycles + 1):
        load.append_small_files(directory / "warehouse", 20)
        run("compact", {**table, "engine": "local", "options": {"min-input-files": "2"}})
        dry = run("expire_snapshots_dry_run",
                  {**table, "older_than_ms": int(time.time() * 1000), "retain_last": 1})
        if not (dry.result or {}).get("nothing_to_do"):
            run("expire_snapshots", {"dry_run_task_id": dry.pk})
        if cycle == 1 or cycle % every == 0 or cycle == cycles:
            samples.append((cycle, _rss_mb()))
    return {"samples": samples, "seconds": time.perf_counter() - t0,
            "held": {"metadata files": len(CACHE.metadata),
                     "manifest entries": DEFAULT_CACHE.weight + CACHE.entries.weight
                     + CACHE.live.weight}}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--cycles", type=int, default=100)
    p.add_argument("--every", type=int, default=10)
    p.add_argument("--dir", default=None, help="where each run's files go (default: a "
                   "temporary directory, removed at the end)")
    p.add_argument("--child", nargs=2, metavar=("DIR", "CACHES"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(child(Path(args.child[0]), args.child[1], args.cycles, args.every)))
        return 0

    with tempfile.TemporaryDirectory(dir=args.dir, prefix="worker-memory-") as tmp:
        results = []
        for pool, caches in CONFIGS:
            directory = Path(tmp) / f"{pool}-{caches}"
            env = {k: v for k, v in os.environ.items() if not k.startswith("ARROW_")}
            env["FLOE_ARROW_MEMORY_POOL"] = pool
            done = subprocess.run(
                [sys.executable, __file__, "--cycles", str(args.cycles), "--every",
                 str(args.every), "--child", str(directory), caches],
                env=env, capture_output=True, text=True)
            if done.returncode != 0:
                print(done.stderr[-3000:], file=sys.stderr)
                return 1
            out = json.loads(done.stdout.strip().splitlines()[-1])
            line = "  ".join(f"{c}: {mb}" for c, mb in out["samples"])
            print(f"{pool:>8} / caches {caches:<7} RSS MB after cycle  {line}  "
                  f"({out['seconds']:.0f} s)", flush=True)
            results.append((pool, caches, out))

    print(f"\n{args.cycles} cycles (20 appends, compaction, expiry dry run + confirmation), "
          f"one pool process each")
    header = (f"{'allocator':<10} {'caches':<8} {'RSS cycle 1':>12} {'RSS last':>9} "
              f"{'change':>14} {'held at the end':>40}")
    print(header)
    print("-" * len(header))
    for pool, caches, out in results:
        first, last = out["samples"][0][1], out["samples"][-1][1]
        held = ", ".join(f"{v:,} {k}" for k, v in out["held"].items())
        print(f"{pool:<10} {caches:<8} {first:>9} MB {last:>6} MB "
              f"{last - first:>+6} MB ({(last - first) / first:+.0%}) {held:>40}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
