"""The fleet view (issue 22, part 2): every table of every catalog ranked worst first, from
the stored health, for ``--tables`` tables (goal: ≤ 1 s for 10,000).

Floe is served as ``make run`` serves it (explorer/serve.py, waitress; the site's SQLite
database under a temporary directory, the embedded defaults: anonymous visitors read). The
database holds ``--history`` recorded states per table (``TableMetrics`` rows, the newest
current), with health spread so the ranking has work to do; no table exists on disk: the
page never opens one. Then ``--runs`` requests of each page, one connection each (what a
browser's first request costs: the server's whole work and the transfer of the HTML), after
one untimed request (the process warm, Python's imports done; no cache holds the page):

- **first page**: ``/fleet/`` (the 100 worst of every catalog);
- **namespace**: ``/fleet/?namespace=ns7`` (one namespace and those below it);
- **last page**: the last page of the unfiltered list.

Usage: ``python benchmarks/fleet.py [--tables 10000] [--history 3] [--runs 20]``.
"""

from __future__ import annotations

import argparse
import http.client
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT)]

GOAL_S = 1.0

_PROVISION = """
import random, sys
import django
django.setup()
from django.core.management import call_command
from explorer.models import TableMetrics
call_command("migrate", interactive=False, verbosity=0)
tables, history = int(sys.argv[1]), int(sys.argv[2])
rng = random.Random(7)
WARN = ["small_file_ratio", "delete_file_ratio", "deleted_row_ratio",
        "manifests_per_snapshot", "snapshots_not_expired"]
batch = []
for t in range(tables):
    for h in range(history):
        small = rng.random()
        warnings = [w for w in WARN if rng.random() < 0.2]
        batch.append(TableMetrics(
            catalog="local", namespace=f"ns{t % 50}" + (".deep" if t % 7 == 0 else ""),
            table=f"t{t:06d}", metadata_location=f"/w/ns/t{t}/metadata/v{h}.metadata.json",
            source="sweep", external=bool(t % 3), engine="Spark 3.5.8 · Apache Iceberg 1.10.2",
            snapshot_id=rng.getrandbits(62), last_commit_ms=1_790_000_000_000 + t * 1000,
            data_files=rng.randint(1, 50_000), delete_files=rng.randint(0, 500),
            records=rng.randint(0, 10**9), total_bytes=rng.randint(0, 10**12),
            avg_data_file_bytes=rng.randint(10**3, 10**9), target_file_bytes=512 * 2**20,
            small_files=rng.randint(0, 1000), small_file_ratio=small,
            delete_file_ratio=rng.random() / 5, position_deletes=rng.randint(0, 10**6),
            equality_deletes=0, deleted_row_ratio=rng.random() / 5,
            manifests=rng.randint(1, 500), data_manifests=1, snapshots=rng.randint(1, 900),
            snapshots_past_expiry=rng.randint(0, 50), metadata_bytes=rng.randint(10**3, 10**7),
            warnings=warnings, attention=len(warnings) + 0.99 * small,
            current=h == history - 1))
        if len(batch) >= 5000:
            TableMetrics.objects.bulk_create(batch)
            batch = []
TableMetrics.objects.bulk_create(batch)
print(TableMetrics.objects.filter(current=True).count())
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(port: int, path: str) -> tuple[float, int, int]:
    """Seconds for one request on a new connection, its status, the body's size."""
    start = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", path)
    answer = conn.getresponse()
    body = answer.read()
    conn.close()
    return time.perf_counter() - start, answer.status, len(body)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--tables", type=int, default=10_000)
    ap.add_argument("--history", type=int, default=3)
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args(argv)
    from explorer.run import web_command

    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("FLOE_", "DATABASE_URL"))}
        env.update(DJANGO_SETTINGS_MODULE="explorer.settings", FLOE_VAR_DIR=f"{tmp}/var",
                   FLOE_WAREHOUSE=f"{tmp}/local", FLOE_CATALOGS=f"{tmp}/none.toml",
                   PYTHONPATH=str(ROOT))
        Path(tmp, "local").mkdir()
        Path(tmp, "none.toml").write_text("")  # the local catalog only (no ~/.floe file)
        started = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", _PROVISION, str(args.tables),
                              str(args.history)], env=env, cwd=ROOT, check=True,
                             capture_output=True, text=True).stdout.split()[-1]
        print(f"{out} tables, {args.tables * args.history:,} recorded states "
              f"({time.perf_counter() - started:.0f} s to fill)")
        port = _free_port()
        server = subprocess.Popen(web_command("127.0.0.1", port), env=env, cwd=ROOT,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    _get(port, "/fleet/")
                    break
                except OSError:
                    if time.monotonic() > deadline or server.poll() is not None:
                        raise SystemExit("the server did not start") from None
                    time.sleep(0.2)
            last = -(-args.tables // 100)
            pages = {"first page": "/fleet/", "namespace": "/fleet/?namespace=ns7",
                     "last page": f"/fleet/?page={last}"}
            print(f"\n/fleet/ over {args.tables:,} tables: {args.runs} requests each, a new "
                  "connection per request, the server warm (one untimed request first)")
            print(f"{'page':<12} {'p50 ms':>8} {'p95 ms':>8} {'KiB':>7}")
            worst = 0.0
            for name, path in pages.items():
                _, status, _ = _get(port, path)
                if status != 200:
                    raise SystemExit(f"{path} answered {status}")
                samples, size = [], 0
                for _ in range(args.runs):
                    seconds, status, size = _get(port, path)
                    samples.append(seconds * 1000)
                samples.sort()
                p95 = samples[max(0, int(len(samples) * 0.95) - 1)]
                worst = max(worst, p95)
                print(f"{name:<12} {statistics.median(samples):>8.1f} {p95:>8.1f} "
                      f"{size / 1024:>7.1f}")
        finally:
            server.send_signal(signal.SIGINT)
            try:
                server.wait(15)
            except subprocess.TimeoutExpired:
                server.kill()
    met = worst <= GOAL_S * 1000
    print(f"\ngoal: every page ≤ {GOAL_S:.0f} s (p95): {'met' if met else 'MISSED'}")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
