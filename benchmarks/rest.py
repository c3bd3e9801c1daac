"""The served Iceberg REST catalog (issue 21): loadTable latency, warm and with
``If-None-Match``, and commits per second, Floe beside SeaweedFS's REST catalog doing the same
work on the same machine.

Servers, each a real HTTP server process on loopback:

- **Floe** as ``make run`` serves it (explorer/serve.py: waitress with 8 threads, explorer.run's
  web command; the Celery worker is not started: nothing here queues a task), with one SQL
  catalog ``bench``
  (the JDBC catalog's pointer table, the table's files in a local warehouse directory), twice:
  SQLite (the site's database and the catalog's: files under the run's temporary directory)
  and PostgreSQL (``DATABASE_URL`` and the catalog in one fresh database, dropped at the end;
  ``--postgres-url`` names the server, trust auth on loopback). The client is a superuser with
  an API token (``Authorization: Bearer``); request logging is on, as in ``make run``.
- **SeaweedFS** ``weed mini`` from the tests' harness (tests/object_store.py): its Iceberg
  REST catalog over its S3 Tables bucket, an OAuth2 token from its client credentials.

The same table in each (a nested namespace, ``--snapshots`` appends of ``--files`` files each,
partitioned by identity, written by floe's REST client through that server), then:

- **loadTable**: ``GET /v1/{prefix}/namespaces/{ns}/tables/{t}`` on one keep-alive connection
  (http.client), ``--loads`` requests after ``--warm`` untimed ones, p50 / p95 (the server's
  caches warm: its parsed metadata and the answer's bytes);
- **304**: the same with ``If-None-Match`` = the ETag answered (a server that sends no ETag, or
  answers 200 anyway, is shown as such; answers that close the connection are counted:
  plain waitress 3.0 closes it after every 204 and 304, explorer/serve.py keeps it);
- **commits/s**: an append as DuckDB and PyIceberg send it: requirement
  ``assert-ref-snapshot-id`` (main = the snapshot the client saw), updates ``add-snapshot``
  (the next sequence number, the parent, a new id) + ``set-snapshot-ref`` main. The manifest
  list is the table's last one, written once beforehand (neither server reads it on a
  commit), so what is timed is the catalog's work: read the current metadata, check, write
  the next metadata file, swap the pointer, answer the new metadata. Each client keeps the
  metadata a commit answers; a 409 ``CommitFailedException`` is counted and the client loads
  the table again and retries. One client (``--commits``), then ``--clients`` client
  processes at once (``--commits`` in all), rate = commits / (last end - first start).

The clients run on the same 2-core machine as the servers (other work on it shows in the
numbers). Goals (Floe): loadTable p95 ≤ 20 ms, 304 p95 ≤ 5 ms, ≥ 50 commits/s one client.

Usage: ``python benchmarks/rest.py [--snapshots 20] [--files 4] [--loads 200]
[--commits 200] [--clients 4] [--only floe-sqlite,floe-postgresql,seaweedfs]``.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing as mp
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(HERE)]

from web_rest import NAMESPACE, TABLE, _fill, _pct  # noqa: E402

LOAD_P95_GOAL_MS = 20.0
NOT_MODIFIED_P95_GOAL_MS = 5.0
COMMITS_GOAL = 50.0
DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
START_TIMEOUT = 60.0
TARGETS = ("floe-sqlite", "floe-postgresql", "seaweedfs")

# Run in the Floe server's environment before it starts: the site's tables, a superuser and
# its API token (printed).
_PROVISION = """
import django
django.setup()
from django.contrib.auth.models import User
from django.core.management import call_command
from rest_framework.authtoken.models import Token
call_command("migrate", interactive=False, verbosity=0)
user = User.objects.create_superuser("bench", "bench@example.com", None)
print(Token.objects.create(user=user).key)
"""


@dataclass
class Target:
    """A REST catalog to measure: where it answers, the warehouse a client names, the headers
    that authorise a request, and the properties floe's REST client needs to fill it."""

    name: str
    uri: str
    warehouse: str
    headers: dict[str, str]
    client_props: dict[str, str]
    prefix: str = ""
    results: dict[str, Any] = field(default_factory=dict)

    @property
    def table_path(self) -> str:
        base = urllib.parse.urlsplit(self.uri).path.rstrip("/")
        ns = urllib.parse.quote("\x1f".join(NAMESPACE), safe="")
        prefix = urllib.parse.quote(self.prefix, safe="")
        return f"{base}/v1/{prefix}/namespaces/{ns}/tables/{TABLE}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _connection(uri: str) -> http.client.HTTPConnection:
    parts = urllib.parse.urlsplit(uri)
    return http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=60)


def _request(conn: http.client.HTTPConnection, method: str, path: str,
             headers: dict[str, str], body: bytes | None = None
             ) -> tuple[int, dict[str, str], bytes]:
    conn.request(method, path, body=body, headers=headers)
    answer = conn.getresponse()
    data = answer.read()
    return answer.status, {k.lower(): v for k, v in answer.getheaders()}, data


# -- Floe, served --------------------------------------------------------------------------


@contextmanager
def _postgres_database(admin_url: str) -> Iterator[str]:
    """A fresh database on the server ``admin_url`` names (its URL), dropped afterwards."""
    from tests.postgres import fresh_postgres_database

    with fresh_postgres_database(admin_url, "floe_bench") as url:
        yield url.render_as_string(hide_password=False)


@contextmanager
def _floe_server(name: str, tmp: Path, database_url: str | None) -> Iterator[Target]:
    """Floe's web server process over one SQL catalog ``bench`` (SQLite in ``tmp`` when
    ``database_url`` is None, else that PostgreSQL database for the site and the catalog)."""
    from explorer.run import web_command

    tmp.mkdir(parents=True)
    if database_url is None:
        catalog_uri = f"sqlite:///{tmp / 'catalog.db'}"
    else:
        catalog_uri = database_url.replace("postgresql://", "postgresql+psycopg://", 1)
    catalogs = tmp / "catalogs.toml"
    catalogs.write_text(f'[catalogs.bench]\ntype = "sql"\nuri = "{catalog_uri}"\n'
                        f'warehouse = "{tmp / "warehouse"}"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FLOE_", "DATABASE_URL"))}
    env.update(DJANGO_SETTINGS_MODULE="explorer.settings", FLOE_VAR_DIR=str(tmp / "var"),
               FLOE_CATALOGS=str(catalogs), FLOE_WAREHOUSE=str(tmp / "local"),
               PYTHONPATH=str(ROOT))
    (tmp / "local").mkdir()
    if database_url is not None:
        env["DATABASE_URL"] = database_url
    key = subprocess.run([sys.executable, "-c", _PROVISION], env=env, cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout.strip().splitlines()[-1]
    port = _free_port()
    log_path = tmp / "server.log"
    with open(log_path, "ab") as log:
        server = subprocess.Popen(web_command("127.0.0.1", port), env=env, cwd=ROOT,
                                  stdin=subprocess.DEVNULL, stdout=log,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    try:
        uri = f"http://127.0.0.1:{port}/iceberg"
        _wait_for(uri + "/v1/config?warehouse=bench", server, log_path)
        headers = {"Authorization": f"Bearer {key}"}
        yield Target(name, uri, "bench", headers, {"uri": uri, "warehouse": "bench",
                                                   "token": key})
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _wait_for(url: str, process: subprocess.Popen[bytes], log_path: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the server exited ({process.returncode}):\n"
                             f"{log_path.read_text()[-3000:]}")
        try:
            conn = _connection(url)
            conn.request("GET", urllib.parse.urlsplit(url).path + "?warehouse=bench")
            conn.getresponse().read()
            conn.close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"the server did not answer within {START_TIMEOUT:.0f} s")


# -- SeaweedFS -------------------------------------------------------------------------------


@contextmanager
def _seaweedfs(tmp: Path) -> Iterator[Target]:
    from tests.object_store import SeaweedFS

    server = SeaweedFS.create(tmp / "sw", tmp)
    server.start()
    try:
        props = {"uri": server.catalog_uri, "warehouse": server.warehouse,
                 "credential": f"{server.access_key}:{server.secret_key}",
                 "oauth2-server-uri": server.token_url,
                 "header.X-Iceberg-Access-Delegation": "",
                 "s3.access-key-id": server.access_key,
                 "s3.secret-access-key": server.secret_key}
        headers = {"Authorization": f"Bearer {server.catalog_token()}"}
        yield Target("SeaweedFS", server.catalog_uri, server.warehouse, headers, props)
    finally:
        server.stop()


# -- the measurements ----------------------------------------------------------------------


def _prepare(target: Target, snapshots: int, files: int) -> None:
    """The prefix from ``/v1/config``, and the table."""
    from floe.catalog.rest import RestCatalog

    conn = _connection(target.uri)
    base = urllib.parse.urlsplit(target.uri).path.rstrip("/")
    query = urllib.parse.urlencode({"warehouse": target.warehouse})
    status, _, data = _request(conn, "GET", f"{base}/v1/config?{query}", target.headers)
    conn.close()
    if status != 200:
        raise SystemExit(f"{target.name}: /v1/config answered {status}: {data[:300]!r}")
    config = json.loads(data)
    target.prefix = str({**config.get("defaults", {}), **config.get("overrides", {})}
                        .get("prefix", ""))
    with RestCatalog("bench", target.client_props) as catalog:
        _fill(catalog, snapshots, files)


def _loads(target: Target, warm: int, n: int) -> None:
    conn = _connection(target.uri)
    path = target.table_path
    etag = None
    for _ in range(warm):
        status, headers, data = _request(conn, "GET", path, target.headers)
        if status != 200:
            raise SystemExit(f"{target.name}: loadTable answered {status}: {data[:300]!r}")
        etag = headers.get("etag")
    target.results["body KiB"] = len(data) / 1024

    def timed(headers: dict[str, str]) -> tuple[list[float], Counter[int], int]:
        samples, statuses, closed = [], Counter[int](), 0
        for _ in range(n):
            t0 = time.perf_counter()
            status, answer, _ = _request(conn, "GET", path, headers)
            samples.append((time.perf_counter() - t0) * 1000)
            statuses[status] += 1
            # http.client opens a new connection for the next request after this
            closed += answer.get("connection", "").lower() == "close"
        return samples, statuses, closed

    target.results["load"], _, closed = timed(target.headers)
    target.results["closed"] = {"200": closed}
    if etag is None:
        target.results["304"] = "no ETag"
    else:
        samples, statuses, closed = timed({**target.headers, "If-None-Match": etag})
        target.results["closed"]["304"] = closed
        target.results["304"] = samples if set(statuses) == {304} else \
            "answered " + ", ".join(f"{s} x{c}" for s, c in sorted(statuses.items()))
    conn.close()


def _append_request(md: dict[str, Any], manifest_list: str) -> bytes:
    current = md.get("current-snapshot-id")
    if current is not None and current < 0:  # v1's "no snapshot"
        current = None
    snapshot_id = random.getrandbits(62) + 1
    snapshot: dict[str, Any] = {
        "snapshot-id": snapshot_id, "timestamp-ms": int(time.time() * 1000),
        "manifest-list": manifest_list, "summary": {"operation": "append"},
        "schema-id": md.get("current-schema-id", 0)}
    if current is not None:
        snapshot["parent-snapshot-id"] = current
    if md.get("format-version", 1) >= 2:
        snapshot["sequence-number"] = int(md.get("last-sequence-number", 0)) + 1
    return json.dumps({
        "requirements": [{"type": "assert-ref-snapshot-id", "ref": "main",
                          "snapshot-id": current}],
        "updates": [{"action": "add-snapshot", "snapshot": snapshot},
                    {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch",
                     "snapshot-id": snapshot_id}]}).encode()


def _manifest_list(md: dict[str, Any]) -> str:
    current = md["current-snapshot-id"]
    return next(str(s["manifest-list"]) for s in md["snapshots"]
                if s["snapshot-id"] == current)


def committer(uri: str, path: str, headers: dict[str, str], n: int, start: Any,
              results: Any) -> None:
    """One client process: ``n`` appends, retried after each 409 on freshly loaded metadata;
    puts (start, end, conflicts) on ``results``."""
    conn = _connection(uri)
    post = {**headers, "Content-Type": "application/json"}

    def load() -> dict[str, Any]:
        status, _, data = _request(conn, "GET", path, headers)
        if status != 200:
            raise RuntimeError(f"loadTable answered {status}: {data[:300]!r}")
        return dict(json.loads(data)["metadata"])

    md = load()
    manifest_list = _manifest_list(md)
    start.wait()
    t0, conflicts, done = time.monotonic(), 0, 0
    while done < n:
        status, _, data = _request(conn, "POST", path, post, _append_request(md, manifest_list))
        if status == 200:
            md = json.loads(data)["metadata"]
            done += 1
        elif status == 409:
            conflicts += 1
            md = load()
        else:
            raise RuntimeError(f"commit answered {status}: {data[:300]!r}")
    results.put((t0, time.monotonic(), conflicts))
    conn.close()


def _commits(target: Target, clients: int, total: int) -> dict[str, float]:
    ctx = mp.get_context("spawn")
    start, results = ctx.Barrier(clients), ctx.Queue()
    each = [total // clients + (1 if i < total % clients else 0) for i in range(clients)]
    procs = [ctx.Process(target=committer, args=(target.uri, target.table_path,
                                                  target.headers, k, start, results))
             for k in each]
    for p in procs:
        p.start()
    got = [results.get(timeout=600) for _ in procs]
    for p in procs:
        p.join()
        if p.exitcode != 0:
            raise SystemExit(f"{target.name}: a client failed (exit {p.exitcode})")
    wall = max(end for _, end, _ in got) - min(begin for begin, _, _ in got)
    return {"rate": total / wall, "conflicts": sum(c for _, _, c in got)}


def _snapshot_count(target: Target) -> int:
    conn = _connection(target.uri)
    status, _, data = _request(conn, "GET", target.table_path, target.headers)
    conn.close()
    return len(json.loads(data)["metadata"]["snapshots"])


def _measure(target: Target, args: argparse.Namespace) -> None:
    t0 = time.perf_counter()
    _prepare(target, args.snapshots, args.files)
    print(f"{target.name}: table filled ({time.perf_counter() - t0:.1f} s)", flush=True)
    _loads(target, args.warm, args.loads)
    before = _snapshot_count(target)
    target.results["one"] = _commits(target, 1, args.commits)
    target.results["many"] = _commits(target, args.clients, args.commits)
    made = _snapshot_count(target) - before
    if made != 2 * args.commits:  # every commit answered 200 is in the table, once
        raise SystemExit(f"{target.name}: {2 * args.commits} commits answered, {made} "
                         "snapshots added")


# -- the table -------------------------------------------------------------------------------


def _p(samples: Any, p: float) -> str:
    return f"{_pct(samples, p):.2f}" if isinstance(samples, list) else "-"


def _report(targets: list[Target], args: argparse.Namespace) -> int:
    head = (f"{'REST catalog':<18} {'load p50':>9} {'load p95':>9} {'304 p50':>8} "
            f"{'304 p95':>8} {'KiB':>6} {'commits/s 1':>12} {f'commits/s {args.clients}':>12} "
            f"{'409s':>5}")
    print()
    print(f"loadTable: {args.loads} warm requests (ms); commits: {args.commits} appends "
          f"per run; table: {args.snapshots} appends of {args.files} files + the commits")
    print(head)
    print("-" * len(head))
    for t in targets:
        r = t.results
        print(f"{t.name:<18} {_p(r['load'], 50):>9} {_p(r['load'], 95):>9} "
              f"{_p(r['304'], 50):>8} {_p(r['304'], 95):>8} {r['body KiB']:>6.1f} "
              f"{r['one']['rate']:>12.1f} {r['many']['rate']:>12.1f} "
              f"{int(r['many']['conflicts']):>5}")
    for t in targets:
        if isinstance(t.results["304"], str):
            print(f"{t.name}: If-None-Match: {t.results['304']}")
        for kind, closed in t.results["closed"].items():
            if closed:
                print(f"{t.name}: {closed} of {args.loads} {kind} answers closed the "
                      "connection (Connection: close): the next request opened a new one")
    missed = 0
    for t in (t for t in targets if t.name.startswith("Floe")):
        r = t.results
        checks = [(f"loadTable p95 ≤ {LOAD_P95_GOAL_MS:g} ms",
                   _pct(r["load"], 95) <= LOAD_P95_GOAL_MS),
                  (f"304 p95 ≤ {NOT_MODIFIED_P95_GOAL_MS:g} ms",
                   isinstance(r["304"], list)
                   and _pct(r["304"], 95) <= NOT_MODIFIED_P95_GOAL_MS),
                  (f"≥ {COMMITS_GOAL:g} commits/s (1 client)", r["one"]["rate"] >= COMMITS_GOAL)]
        missed += sum(not ok for _, ok in checks)
        print(f"{t.name}: " + "; ".join(f"{what}: {'met' if ok else 'MISSED'}"
                                        for what, ok in checks))
    return 1 if missed else 0


def _start(stack: ExitStack, which: str, tmp: Path, args: argparse.Namespace
           ) -> Target | None:
    if which == "floe-sqlite":
        return stack.enter_context(_floe_server("Floe · SQLite", tmp, None))
    if which == "floe-postgresql":
        try:
            database = stack.enter_context(_postgres_database(args.postgres_url))
        except Exception as e:  # noqa: BLE001 - no server: say so, measure the others
            print(f"PostgreSQL at {args.postgres_url}: {e}; skipped", file=sys.stderr)
            return None
        return stack.enter_context(_floe_server("Floe · PostgreSQL", tmp, database))
    return stack.enter_context(_seaweedfs(tmp))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--snapshots", type=int, default=20, help="appends that fill the table")
    p.add_argument("--files", type=int, default=4, help="data files per append (partitions)")
    p.add_argument("--warm", type=int, default=20, help="untimed loads first")
    p.add_argument("--loads", type=int, default=200, help="timed loads (each kind)")
    p.add_argument("--commits", type=int, default=200, help="appends per commit run")
    p.add_argument("--clients", type=int, default=4, help="client processes at once")
    p.add_argument("--only", default=",".join(TARGETS),
                   help=f"which servers (of {', '.join(TARGETS)})")
    p.add_argument("--postgres-url", default=os.environ.get("FLOE_BENCH_POSTGRES_URL",
                                                            DEFAULT_POSTGRES_URL),
                   help="a PostgreSQL server where a database may be created")
    args = p.parse_args(argv)
    only = [t.strip() for t in args.only.split(",") if t.strip()]
    unknown = set(only) - set(TARGETS)
    if unknown:
        p.error(f"unknown --only {', '.join(sorted(unknown))} (of {', '.join(TARGETS)})")

    targets: list[Target] = []
    with tempfile.TemporaryDirectory() as tmp_name:
        for which in only:  # one server at a time, stopped before the next starts
            with ExitStack() as stack:
                target = _start(stack, which, Path(tmp_name) / which, args)
                if target is not None:
                    _measure(target, args)
                    targets.append(target)
    return _report(targets, args)


if __name__ == "__main__":
    raise SystemExit(main())
