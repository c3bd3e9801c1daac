"""Explorer latency on the 10k-snapshot / 1M-file table: p50 / p95 of the main pages and API
endpoints, cold and warm, against the targets of issue 4 (p95 ≤ 150 ms warm, ≤ 2 s cold).

Builds the table with ``benchmarks/big_table.py`` (reused when already built, see its stamp
file) into ``<dir>/warehouse/bench/big``, then times requests through Django's test client
(the whole Django stack — middleware, views, templates, DRF — without a socket):

- **cold**: the first request of a URL in a fresh Python process with Django set up (every
  cache of the explorer and of floe empty; the OS page cache is warm, as on a server that
  has read the files before), ``--cold-runs`` processes per URL;
- **warm**: the same URL repeated ``--warm-runs`` times in one process after one warm-up.

It also prints how many manifests and manifest lists the cold request decoded
(:mod:`floe.stats`). The persistent manifest cache is where ``make run`` keeps it (under the
var directory) and holds the current snapshot's manifests before the first cold request
(planned once, as after the explorer's first plan): cold requests read from it, not from the
Avro.

Then the tasks (issue 10), with a real Celery worker (``explorer.run``'s command: embedded
SQLite broker, beat) on the benchmark's database:

- **queue → running**: submit a small task, time from the row's ``created_at`` to the worker's
  ``started_at`` (target ≤ 1 s), ``--task-runs`` times;
- **progress**: while a compaction of 800 small files runs, poll its row and measure the
  longest time the visible state (heartbeat, stage, counts) did not change (target ≤ 2 s);
- **pages while compacting**: per page, the warm p50 / p95 with the worker idle, then while
  a compaction runs (target still ≤ 150 ms); measured back to back, so that other load on
  the machine weighs on both alike.

Usage::

    python benchmarks/web.py [--dir DIR] [--snapshots N --files M]
                             [--cold-runs 5] [--warm-runs 30] [--only NAME ...]
                             [--task-runs 20] [--no-tasks | --tasks-only]
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

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(HERE)]

from big_table import NAMESPACE, TABLE, build_big_table  # noqa: E402

from floe.types import LONG, STRING  # noqa: E402

WARM_TARGET_MS = 150.0
QUEUE_TARGET_MS = 1000.0
PROGRESS_GAP_TARGET_MS = 2000.0
#: Where the task benchmark's own tables live (beside bench.big).
TASKS_NS = "bench_tasks"
#: Pages that read every manifest of a snapshot by design (timed with one cold process).
HEAVY = "*"
COLD_TARGET_MS = 2000.0


def _setup(warehouse: str, var_dir: str) -> None:
    os.environ["FLOE_WAREHOUSE"] = warehouse
    os.environ["FLOE_VAR_DIR"] = var_dir
    os.environ.setdefault("FLOE_ALLOW_ANONYMOUS", "true")
    # one user asks for hundreds of plans a minute here: the per-user rate limit would time
    # 429 answers instead of plans
    os.environ["FLOE_EXPENSIVE_READS_PER_MINUTE"] = "0"
    # the persistent manifest cache where `make run` keeps it (explorer.run)
    os.environ.setdefault("FLOE_MANIFEST_CACHE", os.path.join(var_dir, "manifest-cache"))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "explorer.settings")
    import django

    django.setup()


def _client() -> Any:
    from django.test import Client

    return Client(HTTP_HOST="localhost")


def _request(client: Any, url: str) -> tuple[float, int, dict[str, int]]:
    """Milliseconds, status, files decoded."""
    from floe import stats

    stats.reset()
    t0 = time.perf_counter()
    response = client.get(url)
    if getattr(response, "streaming", False):
        b"".join(response.streaming_content)
    else:
        _ = response.content
    ms = (time.perf_counter() - t0) * 1000
    if response.status_code != 200:  # an error page is not the page
        raise SystemExit(f"GET {url} answered {response.status_code}")
    return ms, response.status_code, stats.reads()


def pages(warehouse: str) -> list[tuple[str, str]]:
    """(name, URL) of the pages and endpoints timed."""
    from floe.catalog.filesystem import FileSystemCatalog

    md = FileSystemCatalog("local", warehouse).load_table(f"{NAMESPACE}.{TABLE}").metadata
    current = md.current_snapshot()
    assert current is not None and current.parent_snapshot_id is not None
    sid, parent = current.snapshot_id, current.parent_snapshot_id
    mid = md.snapshots[len(md.snapshots) // 2].snapshot_id
    base = f"/catalogs/local/namespaces/{NAMESPACE}/tables/{TABLE}/"
    api = f"/api/catalogs/local/namespaces/{NAMESPACE}/tables/{TABLE}/"
    last_day = time.strftime("%Y-%m-%d", time.gmtime(current.timestamp_ms / 1000 - 86_400))
    recent = f"ts >= TIMESTAMP '{last_day} 00:00:00'"
    # file n holds ids from n * 100,000 (benchmarks/big_table.py): 1% of the files from the
    # middle, which every manifest may hold (bucket(16, id) cannot prune a range), each file
    # decided by its bounds
    files = 1_000_000 if current.summary is None else int(
        current.summary.get("total-data-files", 1_000_000))
    ids = f"id >= {files // 2 * 100_000} AND id < {(files // 2 + files // 100) * 100_000}"
    return [
        ("table list", "/"),
        ("overview + timeline", base),
        ("snapshots p1", base + "snapshots/"),
        ("snapshots p100", base + "snapshots/?page=100"),
        ("snapshot (current)", base + f"snapshots/{sid}/"),
        ("snapshot (middle)", base + f"snapshots/{mid}/"),
        ("manifest p1", base + f"snapshots/{sid}/manifests/0/"),
        ("manifest sorted", base + f"snapshots/{sid}/manifests/0/?sort=-record_count"),
        ("file", base + f"snapshots/{sid}/manifests/0/files/0/"),
        ("history", base + "history/"),
        ("diff (parent→current)", base + f"diff/?from={parent}&to={sid}"),
        ("plan (last day)", base + "plan/?" + _q({"filter": recent})),
        (HEAVY + "plan (no filter)", base + "plan/"),
        (HEAVY + "plan (id range)", base + "plan/?" + _q({"filter": ids})),
        (HEAVY + "partitions", base + "partitions/"),
        ("api detail", api),
        ("api snapshots", api + "snapshots/"),
        ("api snapshot", api + f"snapshots/{sid}/"),
        ("api manifests", api + f"snapshots/{sid}/manifests/"),
        ("api files p1", api + f"snapshots/{sid}/files/"),
        ("api files p10000", api + f"snapshots/{sid}/files/?page=10000"),
        ("api history", api + "history/"),
        ("api plan (last day)", api + "plan/?" + _q({"filter": recent})),
        (HEAVY + "api plan (no filter)", api + "plan/"),
        (HEAVY + "api plan (id range)", api + "plan/?" + _q({"filter": ids})),
    ]


def _q(params: dict[str, str]) -> str:
    from urllib.parse import urlencode

    return urlencode(params)


def _pct(samples: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(samples)
    k = max(0, min(len(ordered) - 1, int(round(p / 100 * len(ordered) + 0.5)) - 1))
    return ordered[k]


def _child(warehouse: str, var_dir: str, url: str) -> None:
    """One cold request in this fresh process; prints a JSON line."""
    _setup(warehouse, var_dir)
    ms, status, reads = _request(_client(), url)
    print(json.dumps({"ms": ms, "status": status, "reads": reads}))


def _cold(warehouse: str, var_dir: str, url: str, runs: int) -> tuple[list[float], dict[str, int], int]:
    samples: list[float] = []
    reads: dict[str, int] = {}
    status = 0
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, __file__, "--child", url, "--dir", str(Path(warehouse).parent)],
            capture_output=True, text=True, check=True, cwd=ROOT,
        ).stdout.strip().splitlines()[-1]
        got = json.loads(out)
        samples.append(got["ms"])
        reads, status = got["reads"], got["status"]
    return samples, reads, status


def _warm(client: Any, url: str, runs: int) -> tuple[list[float], dict[str, int]]:
    _request(client, url)
    samples, last = [], {}
    for _ in range(runs):
        ms, _, last = _request(client, url)
        samples.append(ms)
    return samples, last


def _metadata_floor(warehouse: str) -> None:
    """What every cold request pays first: parsing the table's metadata file."""
    from floe.catalog.filesystem import resolve_metadata_location
    from floe.io import FileIO
    from floe.metadata import parse_metadata

    location = resolve_metadata_location(FileIO(), os.path.join(warehouse, NAMESPACE, TABLE))
    with open(location, "rb") as f:
        data = f.read()
    t0 = time.perf_counter()
    parse_metadata(data, location)
    ms = (time.perf_counter() - t0) * 1000
    print(f"metadata file: {len(data) / 1e6:.1f} MB, parsed in {ms:.0f} ms (part of every cold "
          "request)")


def _fill_manifest_cache(warehouse: str) -> None:
    """Plan the current snapshot once, as the explorer's first plan would: the persistent
    manifest cache (FLOE_MANIFEST_CACHE, under the var directory) then holds its manifests
    for every cold process."""
    from floe.catalog.filesystem import FileSystemCatalog
    from floe.scan import plan_files

    table = FileSystemCatalog("local", warehouse).load_table(f"{NAMESPACE}.{TABLE}")
    t0 = time.perf_counter()
    plan = plan_files(table.io, table.metadata, cache=None)
    print(f"manifest cache ({os.environ['FLOE_MANIFEST_CACHE']}): the current snapshot's "
          f"{plan.funnel.manifests_total} manifests ready in {time.perf_counter() - t0:.1f} s")


def _fmt_reads(reads: dict[str, int]) -> str:
    return f"{reads.get('manifest', 0)}/{reads.get('manifest_list', 0)}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "floe-bench"),
                   help="where the warehouse and the benchmark's database live")
    p.add_argument("--snapshots", type=int, default=10_000)
    p.add_argument("--files", type=int, default=1_000_000)
    p.add_argument("--cold-runs", type=int, default=5)
    p.add_argument("--warm-runs", type=int, default=30)
    p.add_argument("--only", nargs="*", default=None, help="page names to time (substrings)")
    p.add_argument("--task-runs", type=int, default=20, help="submissions timed queue → running")
    p.add_argument("--no-tasks", action="store_true", help="time the pages only")
    p.add_argument("--tasks-only", action="store_true", help="skip the cold / warm table")
    p.add_argument("--partition-stats", action="store_true",
                   help="then compute the big table's partition statistics file and time "
                        "the partitions page and API reading it")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    warehouse = os.path.join(args.dir, "warehouse")
    var_dir = os.path.join(args.dir, "var")
    if args.child:
        _child(warehouse, var_dir, args.child)
        return 0

    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    build_big_table(os.path.join(warehouse, NAMESPACE, TABLE), args.snapshots, args.files,
                    timings=timings)
    built = time.perf_counter() - t0
    print(f"table: {args.snapshots:,} snapshots, {args.files:,} files "
          + (f"built in {built:.1f} s" if timings else "(cached)"))
    _setup(warehouse, var_dir)
    from django.core.management import call_command

    os.makedirs(var_dir, exist_ok=True)
    call_command("migrate", interactive=False, verbosity=0)
    client = _client()
    _metadata_floor(warehouse)
    _fill_manifest_cache(warehouse)
    todo = [(n, u) for n, u in pages(warehouse)
            if args.only is None or any(o in n for o in args.only)]
    if args.tasks_only:
        tasks(warehouse, var_dir, client, todo, args.task_runs, args.warm_runs)
        return 0

    header = (f"{'page':<24} {'cold p50':>9} {'cold p95':>9} {'warm p50':>9} {'warm p95':>9}"
              f"  {'reads m/l':>9}  {'status':<6} verdict")
    print(f"cold: first request in a fresh process, {args.cold_runs} processes; warm: "
          f"{args.warm_runs} repeats; ms; reads = manifests/manifest lists decoded cold")
    print(f"targets: p95 ≤ {WARM_TARGET_MS:.0f} ms warm, ≤ {COLD_TARGET_MS:.0f} ms cold")
    print(header)
    print("-" * len(header))
    failures = 0
    for name, url in todo:
        runs = min(args.cold_runs, 1) if name.startswith(HEAVY) else args.cold_runs
        cold, reads, status = _cold(warehouse, var_dir, url, runs)
        warm, warm_reads = _warm(client, url, args.warm_runs)
        c50, c95, w50, w95 = _pct(cold, 50), _pct(cold, 95), _pct(warm, 50), _pct(warm, 95)
        over = [w for w, bad in (("warm", w95 > WARM_TARGET_MS), ("cold", c95 > COLD_TARGET_MS)) if bad]
        if any(warm_reads.values()):
            over.append("re-decodes")
        failures += bool(over)
        verdict = "ok" if not over else "OVER: " + ", ".join(over)
        print(f"{name:<24} {c50:9.0f} {c95:9.0f} {w50:9.1f} {w95:9.1f}  {_fmt_reads(reads):>9}"
              f"  {status:<6} {verdict}", flush=True)
    print(f"{len(todo) - failures} of {len(todo)} within targets "
          f"({HEAVY} reads every manifest of the snapshot by design: one cold process)")
    if args.partition_stats:
        partitions_from_statistics(warehouse, var_dir, client, args.cold_runs, args.warm_runs)
    if not args.no_tasks:
        tasks(warehouse, var_dir, client, todo, args.task_runs, args.warm_runs)
    return 0


def partitions_from_statistics(warehouse: str, var_dir: str, client: Any, cold_runs: int,
                               warm_runs: int) -> None:
    """The partitions page and API once the current snapshot has a partition statistics
    file (floe.maintenance.partition_stats): they read it instead of every manifest. The
    big table is built again on the next run (the file changes its metadata)."""
    from floe.catalog.filesystem import FileSystemCatalog
    from floe.maintenance.partition_stats import compute_partition_stats

    table = FileSystemCatalog("local", warehouse).load_table(f"{NAMESPACE}.{TABLE}")
    t0 = time.perf_counter()
    result = compute_partition_stats(table)
    print(f"\npartition statistics of the current snapshot computed in "
          f"{time.perf_counter() - t0:.1f} s: {result.to_json()}")
    stamp = os.path.join(warehouse, NAMESPACE, TABLE, ".big-table-stamp.json")
    if os.path.exists(stamp):
        os.unlink(stamp)  # the table changed: build it again next time
    base = f"/catalogs/local/namespaces/{NAMESPACE}/tables/{TABLE}/"
    api = f"/api/catalogs/local/namespaces/{NAMESPACE}/tables/{TABLE}/"
    print(f"{'page':<32} {'cold p50':>9} {'cold p95':>9} {'warm p50':>9} {'warm p95':>9}"
          f"  {'reads m/l':>9}  verdict (≤ 2000 ms cold, ≤ 150 ms warm)")
    for name, url in (("partitions (statistics file)", base + "partitions/"),
                      ("api partitions (statistics file)", api + "partitions/")):
        cold, reads, _ = _cold(warehouse, var_dir, url, cold_runs)
        warm, _ = _warm(client, url, warm_runs)
        ok = _pct(cold, 95) <= COLD_TARGET_MS and _pct(warm, 95) <= WARM_TARGET_MS
        print(f"{name:<32} {_pct(cold, 50):9.0f} {_pct(cold, 95):9.0f} {_pct(warm, 50):9.1f} "
              f"{_pct(warm, 95):9.1f}  {_fmt_reads(reads):>9}  {'ok' if ok else 'OVER'}",
              flush=True)


# --- tasks: queue → running, progress, pages while compacting -----------------------------------


def _task_tables(warehouse: str) -> None:
    """``bench_tasks.tiny`` (one append) and ``bench_tasks.files800`` (800 small files, made
    again each run: compaction rewrites it)."""
    import pyarrow as pa

    from floe.catalog.filesystem import FileSystemCatalog
    from floe.partitioning import parse_partition_by
    from floe.schema import Schema
    from floe.types import NestedField

    root = os.path.join(warehouse, TASKS_NS)
    if os.path.isdir(root):
        import shutil

        shutil.rmtree(root)
    catalog = FileSystemCatalog("local", warehouse)
    catalog.create_namespace((TASKS_NS,))
    schema = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "s", STRING))

    def rows(first: int, n: int) -> pa.Table:
        return pa.table({"id": pa.array(range(first, first + n), pa.int64()),
                         "s": [f"s{i % 7}" for i in range(first, first + n)]})

    catalog.create_table(f"{TASKS_NS}.tiny", schema).append(rows(0, 10))
    files = catalog.create_table(f"{TASKS_NS}.files800", schema,
                                 parse_partition_by("bucket(400, id)", schema),
                                 properties={"commit.manifest-merge.enabled": "false"})
    for k in range(2):
        files.append(rows(k * 200_000, 200_000))


def _worker(warehouse: str, var_dir: str) -> subprocess.Popen[bytes]:
    from explorer.run import worker_command

    env = {k: v for k, v in os.environ.items() if not k.startswith(("FLOE_", "CELERY_"))}
    env.pop("DATABASE_URL", None)
    env.update(FLOE_WAREHOUSE=warehouse, FLOE_VAR_DIR=var_dir, FLOE_ALLOW_ANONYMOUS="true",
               DJANGO_SETTINGS_MODULE="explorer.settings")
    log = open(os.path.join(var_dir, "bench-worker.log"), "wb")  # noqa: SIM115 - the child's
    proc = subprocess.Popen(worker_command(Path(var_dir)), cwd=ROOT, env=env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 120
    while b" ready." not in Path(var_dir, "bench-worker.log").read_bytes():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the worker did not start; see {var_dir}/bench-worker.log")
        time.sleep(0.2)
    return proc


def _submit(user: Any, kind: str, params: dict[str, Any]) -> int:
    from explorer.tasks import services

    return int(services.task_submit(kind=kind, params=params, user=user).pk)


def _wait(run_id: int, until: Any, timeout: float = 600) -> Any:
    from explorer.models import TaskRun

    deadline = time.monotonic() + timeout
    while True:
        run = TaskRun.objects.get(pk=run_id)
        if until(run):
            return run
        if time.monotonic() > deadline:
            raise SystemExit(f"task run {run_id} stuck in {run.state}")
        time.sleep(0.01)


def _queue_latency(user: Any, runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        run_id = _submit(user, "refresh_table_stats", {"namespace": TASKS_NS})
        run = _wait(run_id, lambda r: r.started_at is not None)
        samples.append((run.started_at - run.created_at).total_seconds() * 1000)
        _wait(run_id, lambda r: r.is_finished)
    return samples


_COMPACT = {"namespace": TASKS_NS, "table": "files800", "engine": "local",
            "options": {"rewrite-all": "true", "min-input-files": "2"}}


def _progress_gaps(user: Any) -> tuple[list[float], float, str]:
    """Longest stretches (ms) without a visible change of a running compaction's row."""
    from explorer.models import TaskRun

    run_id = _submit(user, "compact", _COMPACT)
    _wait(run_id, lambda r: r.state != "QUEUED")
    gaps: list[float] = []
    last_state: tuple[Any, ...] | None = None
    last_change = time.monotonic()
    started = time.monotonic()
    while True:
        run = TaskRun.objects.get(pk=run_id)
        if run.is_finished:
            break
        state = (run.heartbeat_at, run.stage, run.progress_done, run.progress)
        now = time.monotonic()
        if state != last_state:
            if last_state is not None:
                gaps.append((now - last_change) * 1000)
            last_state, last_change = state, now
        time.sleep(0.05)
    return gaps, time.monotonic() - started, run.state


def _pages_while_compacting(user: Any, client: Any, todo: list[tuple[str, str]],
                            warm_runs: int) -> list[tuple[str, list[float], list[float]]]:
    """Per page: warm samples with the worker idle, then while a compaction runs."""
    from explorer.models import TaskRun

    out = []
    for name, url in todo:
        if name.startswith(HEAVY):
            continue
        _request(client, url)
        idle = [_request(client, url)[0] for _ in range(warm_runs)]
        busy: list[float] = []
        run_id = _submit(user, "compact", _COMPACT)
        while len(busy) < warm_runs:
            state = TaskRun.objects.get(pk=run_id).state
            if state in ("SUCCEEDED", "FAILED", "CANCELLED"):
                run_id = _submit(user, "compact", _COMPACT)
                continue
            if state != "RUNNING":
                # time only while it runs (not its stage: after the first run the table's
                # files are few and a run finishes before its progress is next saved)
                time.sleep(0.02)
                continue
            busy.append(_request(client, url)[0])
        _wait(run_id, lambda r: r.is_finished)
        out.append((name, idle, busy))
    return out


def tasks(warehouse: str, var_dir: str, client: Any, todo: list[tuple[str, str]],
          runs: int, warm_runs: int) -> None:
    from django.contrib.auth.models import User

    print()
    print("tasks: a Celery worker as explorer.run starts it (SQLite broker, beat, 2 processes)")
    t0 = time.perf_counter()
    _task_tables(warehouse)
    print(f"task tables built in {time.perf_counter() - t0:.1f} s")
    user = User.objects.filter(username="bench").first() or User.objects.create_superuser(
        "bench", "bench@example.com", None)
    worker = _worker(warehouse, var_dir)
    try:
        lat = _queue_latency(user, runs)
        ok = _pct(lat, 95) <= QUEUE_TARGET_MS
        print(f"queue → running ({runs} runs): p50 {_pct(lat, 50):.0f} ms, p95 "
              f"{_pct(lat, 95):.0f} ms, max {max(lat):.0f} ms (target ≤ {QUEUE_TARGET_MS:.0f} "
              f"ms): {'ok' if ok else 'OVER'}")
        gaps, seconds, state = _progress_gaps(user)
        worst = max(gaps, default=0.0)
        ok = worst <= PROGRESS_GAP_TARGET_MS and state == "SUCCEEDED"
        print(f"progress of a compaction ({seconds:.1f} s, {state}): {len(gaps)} visible "
              f"updates, longest gap {worst:.0f} ms, median {_pct(gaps, 50) if gaps else 0:.0f} "
              f"ms (target ≤ {PROGRESS_GAP_TARGET_MS:.0f} ms): {'ok' if ok else 'OVER'}")
        print(f"pages, warm ({warm_runs} requests each), the worker idle and then while a "
              "compaction runs:")
        header = (f"{'page':<24} {'idle p50':>9} {'idle p95':>9} {'busy p50':>9} "
                  f"{'busy p95':>9}  verdict")
        print(header)
        print("-" * len(header))
        timed = _pages_while_compacting(user, client, todo, warm_runs)
        over = 0
        for name, idle, busy in timed:
            b95 = _pct(busy, 95)
            over += b95 > WARM_TARGET_MS
            print(f"{name:<24} {_pct(idle, 50):9.1f} {_pct(idle, 95):9.1f} "
                  f"{_pct(busy, 50):9.1f} {b95:9.1f}  "
                  f"{'ok' if b95 <= WARM_TARGET_MS else 'OVER: warm while compacting'}",
                  flush=True)
        print(f"{len(timed) - over} of {len(timed)} within {WARM_TARGET_MS:.0f} ms warm while "
              "a compaction runs")
    finally:
        import signal

        worker.send_signal(signal.SIGTERM)  # warm shutdown: the worker stops pool and beat
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()


if __name__ == "__main__":
    sys.exit(main())
