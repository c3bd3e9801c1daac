"""Many users on the production shape (issue 23, part 2): ``--users`` concurrent simulated
users for ``--seconds`` while maintenance tasks run, then a soak at a lower rate; latency per
page, errors, and the memory of the web and worker processes.

The site is ``python -m explorer.run --prod`` (the Dockerfile's command): gunicorn with
``--web-processes`` processes, ``--workers`` Celery workers and one beat, on a fresh
PostgreSQL database (created at the start, dropped at the end) and a Redis database (a queue
of its own, removed at the end), every setting at its production default except the ones
the production shape requires (secret key, allowed hosts) and where things live (so beat's
metrics sweep, policies and alerts run on their default schedules too). Loopback only. The
site serves two catalogs:

- ``local``: the 10k-snapshot / 1M-file table ``bench.big`` built by
  ``benchmarks/big_table.py`` under ``<dir>/warehouse`` (reused when built already, see its
  stamp file; ``benchmarks/web.py`` uses the same place), and ``bench_load.maint``, a small
  table the tasks work on (made again each run);
- ``fleet``: ``--catalog-tables`` small tables in 20 namespaces (one row in every tenth
  table, the others empty), built once under ``<dir>/fleet-warehouse`` (a stamp file).

Before the site starts, the database is migrated and holds one user per simulated user (the
default viewer role), each with an API token and a signed-in session, plus one admin who
submits the tasks; the persistent manifest cache (``<dir>/load-var/manifest-cache``, kept
between runs like ``make run``'s) holds the current snapshot of ``bench.big``.

Each simulated user is a thread with one keep-alive HTTP connection (stdlib ``http.client``)
that picks a request at random (weights in :func:`pages`), waits for the whole answer, then
thinks for ``--think`` seconds (uniform): the table list, the fleet catalog, the overview of
``bench.big`` or of a fleet table, a page of snapshots, the partitions, a scan plan with a
filter (eight filters, a page of its files), and through the API (its token) a page of a
namespace's tables, of snapshots and of the current snapshot's files. Pages go with the
session cookie, the API with the token. A request that answers anything but 200, or no
answer within 120 s, is an error. One sent on a keep-alive connection that the server closed
as it left (gunicorn closes idle ones after 2 s) is sent again once on a new connection, as
browsers do; the count is printed. The users first run ``--warm-up`` seconds untimed, so
that "start" and "end" compare processes whose caches are filled.

While the users run, a task driver repeats a cycle on ``bench_load.maint`` through the API
(the admin's token): append 20 small files (with floe, outside the site), compact it, then
expire its snapshots (a dry run, then its confirmation), each waited for.

The table printed: per page p50 / p95 / p99 (ms), requests and errors (goal 0); the RSS
(summed over a process tree, from ``/proc``) of the web processes (gunicorn's master and
workers) and of the worker processes (each Celery worker with its pool, and beat) when the
site is ready, after the warm-up and at the end (goal: flat from the warm-up to the end); the
tasks that succeeded; the machine's load average; which caches were warm. Then, unless
``--soak-seconds 0``, ``--soak-users`` users for ``--soak-seconds`` with the memory sampled
every ``--sample-seconds`` (a table: one line per sample).

Ctrl-C (or SIGTERM) at any point stops the users, the site and every process it started, and
drops the database.

Usage::

    python benchmarks/load.py [--dir DIR] [--snapshots 10000 --files 1000000]
                              [--catalog-tables 1000] [--users 50] [--seconds 300]
                              [--warm-up 60] [--soak-users 5] [--soak-seconds 1800]
                              [--sample-seconds 60]
                              [--web-processes 2] [--workers 2] [--think 1 3]
                              [--postgres URL] [--redis URL]
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import math
import os
import random
import re
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(HERE)]

from big_table import NAMESPACE, TABLE, build_big_table  # noqa: E402

FLEET = "fleet"
FLEET_NAMESPACES = 20
FLEET_STAMP = ".fleet-stamp.json"
MAINT_NS, MAINT_TABLE = "bench_load", "maint"
PAGE_SIZE = 50  # FLOE_PAGE_SIZE's default: the pages and the API
REQUEST_TIMEOUT = 120.0
#: How a request sent on a keep-alive connection the server has just closed fails.
_STALE = ("RemoteDisconnected", "ConnectionResetError", "BrokenPipeError")
STARTUP_TIMEOUT = 180.0
#: How often the tasks driver asks about a run it waits for.
TASK_POLL_SECONDS = 1.0


# --- the data: the big table, the fleet catalog, the maintained table ---------------------------


def _schema() -> Any:
    from floe.schema import Schema
    from floe.types import LONG, STRING, NestedField

    return Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "s", STRING))


def _rows(first: int, n: int) -> Any:
    import pyarrow as pa

    return pa.table({"id": pa.array(range(first, first + n), pa.int64()),
                     "s": [f"s{i % 7}" for i in range(first, first + n)]})


def build_fleet(root: Path, tables: int) -> bool:
    """``tables`` tables in FLEET_NAMESPACES namespaces under ``root``; False when a stamp
    says they exist already."""
    import shutil

    from floe.catalog.filesystem import FileSystemCatalog

    stamp = root / FLEET_STAMP
    params = {"tables": tables, "format": 1}
    with contextlib.suppress(OSError, ValueError):
        if json.loads(stamp.read_text()) == params:
            return False
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    catalog = FileSystemCatalog(FLEET, str(root))
    for n in range(FLEET_NAMESPACES):
        catalog.create_namespace((_fleet_ns(n),))
    for t in range(tables):
        table = catalog.create_table(f"{_fleet_ns(t % FLEET_NAMESPACES)}.{_fleet_table(t)}",
                                     _schema())
        if t % 10 == 0:
            table.append(_rows(t, 1))
    stamp.write_text(json.dumps(params))
    return True


def _fleet_ns(n: int) -> str:
    return f"n{n:02d}"


def _fleet_table(t: int) -> str:
    return f"t{t:05d}"


def build_maint_table(warehouse: Path) -> None:
    """``bench_load.maint``, made again: 10 appends of 2 small files each."""
    import shutil

    from floe.catalog.filesystem import FileSystemCatalog

    if (warehouse / MAINT_NS).exists():
        shutil.rmtree(warehouse / MAINT_NS)
    catalog = FileSystemCatalog("local", str(warehouse))
    catalog.create_namespace((MAINT_NS,))
    table = catalog.create_table(f"{MAINT_NS}.{MAINT_TABLE}", _schema())
    for k in range(10):
        table.append(_rows(k * 1000, 1000))


def append_small_files(warehouse: Path, files: int) -> None:
    """A writer outside the site: ``files`` appends of a few rows to the maintained table."""
    from floe.catalog.filesystem import FileSystemCatalog

    catalog = FileSystemCatalog("local", str(warehouse))
    for _ in range(files):
        table = catalog.load_table(f"{MAINT_NS}.{MAINT_TABLE}")
        table.append(_rows(random.randrange(10**9), 50))


# --- the site: database, broker, provisioning, explorer.run --prod -----------------------------


# Run with the site's environment before it starts: migrate, the users with their tokens and
# sessions, the manifest cache of the big table's current snapshot; prints one JSON line.
_PROVISION = """
import json, os, sys, time
import django
django.setup()
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.core.management import call_command
from importlib import import_module
from rest_framework.authtoken.models import Token
call_command("migrate", interactive=False, verbosity=0)
users, big = int(sys.argv[1]), sys.argv[2]
User = get_user_model()
Store = import_module(settings.SESSION_ENGINE).SessionStore
def make(name, admin=False):
    user = (User.objects.create_superuser if admin else User.objects.create_user)(
        name, f"{name}@example.com", None)
    session = Store()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0]
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.create()
    return {"token": Token.objects.create(user=user).key, "session": session.session_key}
out = {"users": [make(f"load-{i}") for i in range(users)], "admin": make("load-admin", True),
       "cookie": settings.SESSION_COOKIE_NAME}
from floe.catalog.filesystem import FileSystemCatalog
from floe.scan import plan_files
table = FileSystemCatalog("local", settings.FLOE_WAREHOUSE).load_table(big)
t0 = time.perf_counter()
plan = plan_files(table.io, table.metadata, cache=None)
out["manifest_cache"] = {"manifests": plan.funnel.manifests_total,
                         "seconds": time.perf_counter() - t0}
print(json.dumps(out))
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def fresh_database(admin_url: str) -> Iterator[str]:
    """A new PostgreSQL database for this run (a DATABASE_URL), dropped at the end."""
    from tests.postgres import fresh_postgres_database

    with fresh_postgres_database(admin_url, "floe_load") as url:
        yield url.set(drivername="postgres").render_as_string(hide_password=False)


@contextlib.contextmanager
def own_queue(redis_url: str) -> Iterator[str]:
    """A task queue name of this run's own on the Redis database; its keys removed at the
    end (other users of the database keep theirs)."""
    import redis

    queue = f"floe-load-{uuid.uuid4().hex[:8]}"
    try:
        yield queue
    finally:
        client = redis.Redis.from_url(redis_url)
        try:
            keys = list(client.scan_iter(match=f"*{queue}*"))
            if keys:
                client.delete(*keys)
        finally:
            client.close()


@dataclass
class Site:
    """``explorer.run --prod`` running: its supervisor process, log and port."""

    proc: subprocess.Popen[bytes]
    log: Path
    port: int

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def children(self) -> dict[str, int]:
        """The supervisor's children by name (web, worker-1…, beat), from its log."""
        return {m.group(1): int(m.group(2))
                for m in re.finditer(r"Floe: started (\S+) \(pid (\d+)\)", self.output())}


def site_environment(args: argparse.Namespace, database: str, queue: str) -> dict[str, str]:
    directory = Path(args.dir)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("FLOE_", "DJANGO_", "CELERY_"))}
    env.pop("DATABASE_URL", None)
    catalogs = directory / "load-catalogs.toml"
    catalogs.write_text(f'[catalogs.{FLEET}]\ntype = "filesystem"\n'
                        f'warehouse = "{directory / "fleet-warehouse"}"\n')
    var_dir = directory / "load-var"
    env.update(
        DJANGO_SETTINGS_MODULE="explorer.settings", PYTHONUNBUFFERED="1",
        DATABASE_URL=database, CELERY_BROKER_URL=args.redis, FLOE_TASK_QUEUE=queue,
        FLOE_SECRET_KEY=secrets.token_urlsafe(50), FLOE_ALLOWED_HOSTS="127.0.0.1,localhost",
        FLOE_HOST="127.0.0.1", FLOE_PORT=str(_free_port()), FLOE_VAR_DIR=str(var_dir),
        FLOE_WAREHOUSE=str(directory / "warehouse"), FLOE_CATALOGS=str(catalogs),
        FLOE_WEB_PROCESSES=str(args.web_processes), FLOE_WORKERS=str(args.workers),
        FLOE_MANIFEST_CACHE=str(var_dir / "manifest-cache"),
    )
    if (var_dir / "static" / "staticfiles.json").exists():
        env["FLOE_STATIC_ROOT"] = str(var_dir / "static")  # collected by an earlier run
    return env


def provision(env: dict[str, str], users: int) -> dict[str, Any]:
    Path(env["FLOE_VAR_DIR"]).mkdir(parents=True, exist_ok=True)
    done = subprocess.run([sys.executable, "-c", _PROVISION, str(users), f"{NAMESPACE}.{TABLE}"],
                          env=env, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"provisioning the site failed:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


@contextlib.contextmanager
def running_site(env: dict[str, str], log: Path, workers: int) -> Iterator[Site]:
    """``python -m explorer.run --prod`` until the end of the block: /readyz answers 200 and
    every worker said it is ready; then SIGTERM, and SIGKILL for whatever is left."""
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "explorer.run", "--prod"], cwd=ROOT,
                                env=env, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    site = Site(proc, log, int(env["FLOE_PORT"]))
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while not (_status(site.port, "/readyz") == 200
                   and len(re.findall(r"floe-\d+@\S+ ready\.", site.output())) >= workers):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the site did not start (see {log}):\n"
                                 f"{site.output()[-3000:]}")
            time.sleep(0.5)
        yield site
    finally:
        stop_site(site)


def stop_site(site: Site) -> None:
    everything = [pid for child in site.children().values() for pid in _tree(child)]
    if site.proc.poll() is None:
        site.proc.send_signal(signal.SIGTERM)
        try:
            site.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            site.proc.kill()
            site.proc.wait()
    for pid in everything:  # the supervisor stops them; this is for a supervisor killed
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    left = [pid for pid in everything if _alive(pid)]
    if left:
        print(f"warning: processes still alive after the stop: {left}", file=sys.stderr)


def _status(port: int, path: str) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path)
        answer = conn.getresponse()
        answer.read()
        return answer.status
    except (OSError, http.client.HTTPException):
        return 0
    finally:
        conn.close()


# --- processes and memory (/proc) --------------------------------------------------------------


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _tree(pid: int) -> list[int]:
    """``pid`` and every process below it."""
    parents: dict[int, list[int]] = defaultdict(list)
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        parents[ppid].append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        todo.extend(parents.get(p, []))
    return found


def _rss_bytes(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
    return total


@dataclass(frozen=True)
class Memory:
    web: int
    workers: int
    web_processes: int
    worker_processes: int


def memory(site: Site) -> Memory:
    """RSS summed over the web server's processes and over the workers' (with beat)."""
    web: list[int] = []
    workers: list[int] = []
    for name, pid in site.children().items():
        (web if name == "web" else workers).extend(_tree(pid))
    return Memory(_rss_bytes(web), _rss_bytes(workers), len(web), len(workers))


# --- the simulated users -----------------------------------------------------------------------


@dataclass
class Pages:
    """What the users ask for: ``(name, weight, path(rng), api)``."""

    choices: list[tuple[str, int, Callable[[random.Random], str], bool]]

    def pick(self, rng: random.Random) -> tuple[str, str, bool]:
        name, _, path, api = rng.choices(self.choices, [c[1] for c in self.choices])[0]
        return name, path(rng), api


def pages(warehouse: Path, catalog_tables: int) -> Pages:
    from floe.catalog.filesystem import FileSystemCatalog

    md = FileSystemCatalog("local", str(warehouse)).load_table(f"{NAMESPACE}.{TABLE}").metadata
    current = md.current_snapshot()
    assert current is not None
    sid = current.snapshot_id
    files = int(current.summary.get("total-data-files", "0") or 0)
    snapshot_pages = max(1, math.ceil(len(md.snapshots) / PAGE_SIZE))
    file_pages = max(1, math.ceil(files / PAGE_SIZE))
    base = f"/catalogs/local/namespaces/{NAMESPACE}/tables/{TABLE}/"
    api = f"/api/catalogs/local/namespaces/{NAMESPACE}/tables/{TABLE}/"
    last_ms = current.timestamp_ms
    days = [time.strftime("%Y-%m-%d", time.gmtime(last_ms / 1000 - d * 86_400))
            for d in range(1, 7)]
    filters = [f"ts >= TIMESTAMP '{d} 00:00:00' AND ts < TIMESTAMP '{d} 12:00:00'"
               for d in days] + [f"id = {7 + 1000 * k}" for k in range(2)]
    per_ns = max(1, math.ceil(catalog_tables / FLEET_NAMESPACES))
    fleet_pages = max(1, math.ceil(catalog_tables / PAGE_SIZE))

    def fleet_table(rng: random.Random) -> str:
        t = rng.randrange(catalog_tables)
        return (f"/catalogs/{FLEET}/namespaces/{_fleet_ns(t % FLEET_NAMESPACES)}/tables/"
                f"{_fleet_table(t)}/")

    def plan(rng: random.Random) -> str:
        return base + "plan/?" + urlencode({"filter": rng.choice(filters),
                                            "fpage": rng.randint(1, 3)})

    def api_tables(rng: random.Random) -> str:
        ns = _fleet_ns(rng.randrange(FLEET_NAMESPACES))
        page = rng.randint(1, max(1, math.ceil(per_ns / 20)))
        return f"/api/catalogs/{FLEET}/namespaces/{ns}/tables/?page={page}&page_size=20"

    return Pages([
        ("table list", 1, lambda r: "/", False),
        ("fleet catalog", 1, lambda r: f"/catalogs/{FLEET}/?page={r.randint(1, fleet_pages)}",
         False),
        ("overview (big)", 3, lambda r: base, False),
        ("overview (fleet table)", 2, fleet_table, False),
        ("snapshots", 2, lambda r: base + f"snapshots/?page={r.randint(1, snapshot_pages)}",
         False),
        ("partitions", 1, lambda r: base + "partitions/", False),
        ("plan (filter)", 2, plan, False),
        ("api tables", 2, api_tables, True),
        ("api snapshots", 2,
         lambda r: api + f"snapshots/?page={r.randint(1, snapshot_pages)}&page_size={PAGE_SIZE}",
         True),
        ("api files", 2, lambda r: api + f"snapshots/{sid}/files/?page="
                                         f"{r.randint(1, file_pages)}&page_size={PAGE_SIZE}", True),
    ])


@dataclass
class Record:
    """Every answer of one phase (thread-safe)."""

    #: Milliseconds of the answers that were not errors, per page and in order of arrival.
    samples: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    in_order: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    examples: list[str] = field(default_factory=list)
    #: Requests sent again on a new connection (a keep-alive connection closed by the server).
    retries: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, name: str, ms: float, error: str | None) -> None:
        with self.lock:
            if error is None:
                self.samples[name].append(ms)
                self.in_order.append(ms)
                return
            self.errors[name] += 1
            if len(self.examples) < 10:
                self.examples.append(f"{name}: {error}")

    def retried(self) -> None:
        with self.lock:
            self.retries += 1

    def count(self) -> tuple[int, int]:
        """Requests answered (errors included) and errors."""
        with self.lock:
            errors = sum(self.errors.values())
            return len(self.in_order) + errors, errors


class User(threading.Thread):
    """One simulated user: one keep-alive connection, a request, think time, again."""

    def __init__(self, n: int, port: int, identity: dict[str, str], cookie: str, choice: Pages,
                 think: tuple[float, float], until: float, stop: threading.Event,
                 record: Record) -> None:
        super().__init__(name=f"user-{n}", daemon=True)
        self.rng = random.Random(n)
        self.port, self.choice, self.think = port, choice, think
        self.until, self.stop, self.record = until, stop, record
        self.page_headers = {"Cookie": f"{cookie}={identity['session']}"}
        self.api_headers = {"Authorization": f"Token {identity['token']}",
                            "Accept": "application/json"}

    def run(self) -> None:
        conn: http.client.HTTPConnection | None = None
        # users arrive over the first think time, not all in the same millisecond
        self.stop.wait(self.rng.uniform(0, self.think[1]))
        while not self.stop.is_set() and time.monotonic() < self.until:
            name, path, api = self.choice.pick(self.rng)
            headers = self.api_headers if api else self.page_headers
            t0 = time.perf_counter()
            reused = conn is not None
            conn, error = self._get(conn, path, headers)
            if error is not None and reused and error.startswith(_STALE):
                # the server closed the idle keep-alive connection as this request left
                # (gunicorn's keep-alive is 2 s, the think time longer): a browser sends it
                # again on a new connection, and so does this user, once
                self.record.retried()
                conn, error = self._get(None, path, headers)
            self.record.add(name, (time.perf_counter() - t0) * 1000, error)
            self.stop.wait(self.rng.uniform(*self.think))
        if conn is not None:
            conn.close()

    def _get(self, conn: http.client.HTTPConnection | None, path: str, headers: dict[str, str]
             ) -> tuple[http.client.HTTPConnection | None, str | None]:
        """One request; the connection to use next (None: open a new one) and the error."""
        if conn is None:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=REQUEST_TIMEOUT)
        try:
            conn.request("GET", path, headers=headers)
            answer = conn.getresponse()
            body = answer.read()
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            return None, f"{type(exc).__name__}: {exc} ({path})"
        if answer.getheader("Connection", "").lower() == "close":
            conn.close()
            conn = None
        if answer.status != 200:
            return conn, f"{answer.status} {path} {body[:200]!r}"
        return conn, None


def run_users(site: Site, provisioned: dict[str, Any], choice: Pages, count: int,
              seconds: float, think: tuple[float, float], record: Record,
              tick: Callable[[], None] | None = None, tick_seconds: float = 60.0) -> None:
    """``count`` users for ``seconds``; ``tick`` called every ``tick_seconds`` meanwhile."""
    identities = provisioned["users"]
    stop = threading.Event()
    until = time.monotonic() + seconds
    users = [User(n, site.port, identities[n % len(identities)], provisioned["cookie"], choice,
                  think, until, stop, record) for n in range(count)]
    for user in users:
        user.start()
    try:
        next_tick = time.monotonic() + tick_seconds
        while any(u.is_alive() for u in users):
            if site.proc.poll() is not None:
                raise SystemExit(f"the site stopped on its own:\n{site.output()[-3000:]}")
            if tick is not None and time.monotonic() >= next_tick:
                tick()
                next_tick += tick_seconds
            time.sleep(0.2)
    finally:
        stop.set()  # done already, or leaving on an error or Ctrl-C
        for user in users:
            user.join(timeout=REQUEST_TIMEOUT + 5)


# --- the tasks ---------------------------------------------------------------------------------


class TaskDriver(threading.Thread):
    """Repeats: append small files, compact, expire (dry run + confirm), through the API."""

    def __init__(self, port: int, token: str, warehouse: Path, stop: threading.Event) -> None:
        super().__init__(name="tasks", daemon=True)
        self.port, self.token, self.warehouse, self.stop = port, token, warehouse, stop
        self.outcomes: list[tuple[str, str, float, str]] = []  # kind, state, seconds, note
        self.lock = threading.Lock()
        self.failure: str | None = None

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None
              ) -> tuple[int, Any]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=REQUEST_TIMEOUT)
        try:
            conn.request(method, path, body=json.dumps(body) if body is not None else None,
                         headers={"Authorization": f"Token {self.token}",
                                  "Content-Type": "application/json",
                                  "Accept": "application/json"})
            answer = conn.getresponse()
            raw = answer.read()
        finally:
            conn.close()
        try:
            return answer.status, json.loads(raw)
        except ValueError:
            return answer.status, raw[:300]

    def _task(self, kind: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """Submit and wait; the finished run (None when stopped first)."""
        t0 = time.monotonic()
        status, run = self._call("POST", "/api/tasks/", {"kind": kind, "params": params})
        if status != 201:
            self._note(kind, f"REFUSED {status}", 0.0, str(run)[:200])
            return None
        while not self.stop.wait(TASK_POLL_SECONDS):
            status, run = self._call("GET", f"/api/tasks/{run['id']}/")
            if status == 200 and run["state"] in ("SUCCEEDED", "FAILED", "CANCELLED"):
                self._note(kind, run["state"], time.monotonic() - t0,
                           str(run.get("error") or "")[:200])
                return dict(run)
        return None

    def _note(self, kind: str, state: str, seconds: float, note: str) -> None:
        with self.lock:
            self.outcomes.append((kind, state, seconds, note))

    def run(self) -> None:
        table = {"namespace": MAINT_NS, "table": MAINT_TABLE}
        try:
            while not self.stop.is_set():
                append_small_files(self.warehouse, 20)
                compacted = self._task("compact", {**table, "engine": "local",
                                                   "options": {"min-input-files": "2"}})
                if compacted is None:
                    break
                dry = self._task("expire_snapshots_dry_run",
                                 {**table, "older_than_ms": int(time.time() * 1000),
                                  "retain_last": 1})
                if dry is None:
                    break
                if dry["state"] == "SUCCEEDED" and not (dry.get("result") or {}).get(
                        "nothing_to_do"):
                    self._task("expire_snapshots", {"dry_run_task_id": dry["id"]})
                self.stop.wait(2.0)
        except Exception as exc:  # a benchmark reports, the users go on
            self.failure = f"{type(exc).__name__}: {exc}"

    def summary(self) -> str:
        with self.lock:
            outcomes = list(self.outcomes)
        parts = []
        for kind in ("compact", "expire_snapshots_dry_run", "expire_snapshots"):
            runs = [o for o in outcomes if o[0] == kind]
            ok = [o for o in runs if o[1] == "SUCCEEDED"]
            if runs:
                mean = sum(o[2] for o in ok) / len(ok) if ok else 0.0
                parts.append(f"{kind} {len(ok)}/{len(runs)} succeeded (mean {mean:.1f} s)")
        bad = [f"{o[0]} {o[1]}: {o[3]}" for o in outcomes if o[1] != "SUCCEEDED"]
        text = "; ".join(parts) or "none finished"
        if bad:
            text += "\n  not succeeded: " + "\n  ".join(bad[:5])
        if self.failure:
            text += f"\n  the task driver stopped: {self.failure}"
        return text


# --- printing ----------------------------------------------------------------------------------


def _pct(samples: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(samples)
    k = max(0, min(len(ordered) - 1, math.ceil(p / 100 * len(ordered)) - 1))
    return ordered[k]


def print_latency(record: Record, names: list[str], seconds: float) -> None:
    """One line per page: requests (errors included), errors, percentiles of the others."""
    header = (f"{'page':<24} {'requests':>9} {'errors':>7} {'p50 ms':>9} {'p95 ms':>9} "
              f"{'p99 ms':>9}")
    print(header)
    print("-" * len(header))
    for name in names:
        samples, errors = record.samples.get(name, []), record.errors.get(name, 0)
        pcts = [f"{_pct(samples, q):>9.0f}" if samples else f"{'-':>9}" for q in (50, 95, 99)]
        print(f"{name:<24} {len(samples) + errors:>9} {errors:>7} {' '.join(pcts)}")
    requests, errors = record.count()
    pcts = [f"{_pct(record.in_order, q):>9.0f}" if record.in_order else f"{'-':>9}"
            for q in (50, 95, 99)]
    print(f"{'all':<24} {requests:>9} {errors:>7} {' '.join(pcts)}")
    print(f"{requests / max(seconds, 1e-9):.1f} requests/s; percentiles over the answers that "
          f"were not errors; {record.retries} requests sent again on a new connection (the "
          "server had closed the idle keep-alive one)")
    for example in record.examples:
        print(f"  error: {example}")


def _mb(n: int) -> str:
    return f"{n / 2**20:.0f} MB"


def _load() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def print_memory(*readings: tuple[str, Memory]) -> None:
    """RSS of the web and the worker processes at each reading; the change is from the
    second reading (after the warm-up) to the last."""
    labels = [label for label, _ in readings]
    print(f"{'RSS':<12} " + " ".join(f"{label:>14}" for label in labels) + f" {'change':>20}")
    for what in ("web", "workers"):
        values = [getattr(m, what) for _, m in readings]
        first, last = values[min(1, len(values) - 1)], values[-1]
        processes = getattr(readings[-1][1], f"{what.rstrip('s')}_processes")
        change = f"{(last - first) / 2**20:+.0f} MB {(last - first) / max(first, 1) * 100:+.1f} %"
        print(f"{what:<12} " + " ".join(f"{_mb(v):>14}" for v in values)
              + f" {change:>20}  ({processes} processes)")


def _cache_state(var_dir: Path) -> tuple[int, int]:
    root = var_dir / "manifest-cache"
    files = [p for p in root.rglob("*") if p.is_file()] if root.exists() else []
    return len(files), sum(p.stat().st_size for p in files)


# --- main --------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "floe-bench"),
                   help="where the warehouses and the site's var directory live")
    p.add_argument("--snapshots", type=int, default=10_000)
    p.add_argument("--files", type=int, default=1_000_000)
    p.add_argument("--catalog-tables", type=int, default=1000)
    p.add_argument("--users", type=int, default=50)
    p.add_argument("--seconds", type=float, default=300)
    p.add_argument("--warm-up", type=float, default=60,
                   help="seconds the users run, untimed, before the load (0: none)")
    p.add_argument("--soak-users", type=int, default=5)
    p.add_argument("--soak-seconds", type=float, default=1800, help="0: no soak")
    p.add_argument("--sample-seconds", type=float, default=60,
                   help="memory sampled this often during the soak")
    p.add_argument("--think", type=float, nargs=2, default=(1.0, 3.0), metavar=("MIN", "MAX"),
                   help="seconds a user waits between two requests (uniform)")
    p.add_argument("--web-processes", type=int, default=2)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--postgres", default="postgres://postgres@127.0.0.1:5432/postgres",
                   help="a PostgreSQL server where this run may create a database")
    p.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    args = p.parse_args(argv)

    def on_sigterm(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        return _run(args)
    except KeyboardInterrupt:
        print("\ninterrupted: everything started was stopped", file=sys.stderr)
        return 130


def _run(args: argparse.Namespace) -> int:
    directory = Path(args.dir)
    warehouse = directory / "warehouse"
    t0 = time.perf_counter()
    timings: dict[str, float] = {}
    build_big_table(str(warehouse / NAMESPACE / TABLE), args.snapshots, args.files,
                    timings=timings)
    print(f"table local.{NAMESPACE}.{TABLE}: {args.snapshots:,} snapshots, {args.files:,} files "
          + (f"built in {time.perf_counter() - t0:.0f} s" if timings else "(built before)"))
    t0 = time.perf_counter()
    built = build_fleet(directory / "fleet-warehouse", args.catalog_tables)
    print(f"catalog {FLEET}: {args.catalog_tables:,} tables in {FLEET_NAMESPACES} namespaces "
          + (f"built in {time.perf_counter() - t0:.0f} s" if built else "(built before)"))
    build_maint_table(warehouse)
    choice = pages(warehouse, args.catalog_tables)
    names = [c[0] for c in choice.choices]
    stop = threading.Event()

    with contextlib.ExitStack() as stack:
        database = stack.enter_context(fresh_database(args.postgres))
        queue = stack.enter_context(own_queue(args.redis))
        env = site_environment(args, database, queue)
        var_dir = Path(env["FLOE_VAR_DIR"])
        cache_before = _cache_state(var_dir)
        t0 = time.perf_counter()
        provisioned = provision(env, max(args.users, args.soak_users))
        print(f"database {database.rsplit('/', 1)[1]}: migrated, {len(provisioned['users'])} "
              f"users with a token and a session, in {time.perf_counter() - t0:.0f} s")
        t0 = time.perf_counter()
        site = stack.enter_context(running_site(env, directory / "load-site.log", args.workers))
        stack.callback(stop.set)  # first thing on the way out: the threads stop
        children = site.children()
        print(f"site: explorer.run --prod on 127.0.0.1:{site.port}, ready in "
              f"{time.perf_counter() - t0:.0f} s: {', '.join(children)}; broker {args.redis} "
              f"(queue {queue}); log {site.log}")

        driver = TaskDriver(site.port, provisioned["admin"]["token"], warehouse, stop)
        driver.start()
        cold_mem = memory(site)
        if args.warm_up > 0:
            warm = Record()
            print(f"\nwarm-up: {args.users} users for {args.warm_up:.0f} s, not timed", flush=True)
            run_users(site, provisioned, choice, args.users, args.warm_up, tuple(args.think),
                      warm)
            requests, errors = warm.count()
            print(f"  {requests} requests, {errors} errors")
        start_mem, start_load = memory(site), _load()
        print(f"\nload: {args.users} users for {args.seconds:.0f} s, think "
              f"{args.think[0]:g}–{args.think[1]:g} s, while compactions and expires run on "
              f"local.{MAINT_NS}.{MAINT_TABLE}", flush=True)
        record = Record()

        def progress() -> None:
            requests, errors = record.count()
            print(f"  … {requests} requests, {errors} errors, load {_load()}", flush=True)

        t0 = time.monotonic()
        run_users(site, provisioned, choice, args.users, args.seconds, tuple(args.think),
                  record, tick=progress)
        elapsed = time.monotonic() - t0
        end_mem = memory(site)
        print()
        print_latency(record, names, elapsed)
        print_memory(("site started", cold_mem), ("load start", start_mem), ("load end", end_mem))
        print(f"tasks: {driver.summary()}")
        print(f"machine: {os.cpu_count()} cores, load average (1 / 5 / 15 min) {start_load} at "
              f"the start, {_load()} at the end")
        cache_after = _cache_state(var_dir)
        warmth = (f"warmed by the {args.warm_up:.0f} s warm-up" if args.warm_up > 0 else
                  "cold at the start (fresh processes, no warm-up)")
        print("caches: the persistent manifest cache was "
              f"{'warm from an earlier run' if cache_before[0] else 'empty'} "
              f"({cache_before[0]} files), then held {NAMESPACE}.{TABLE}'s current snapshot "
              f"({provisioned['manifest_cache']['manifests']} manifests, planned in "
              f"{provisioned['manifest_cache']['seconds']:.0f} s) before the site started; "
              f"{cache_after[0]} files, {_mb(cache_after[1])} at the end. The web processes' "
              f"in-memory caches (metadata, derived values, plans, manifest entries) were "
              f"{warmth}. The OS page cache held the tables' files (built or read just before).")

        if args.soak_seconds > 0:
            soak(site, provisioned, choice, args, names)
        stop.set()
        driver.join(timeout=REQUEST_TIMEOUT)
        if args.soak_seconds > 0:
            print(f"tasks (load and soak): {driver.summary()}")
    return 0


def soak(site: Site, provisioned: dict[str, Any], choice: Pages, args: argparse.Namespace,
         names: list[str]) -> None:
    print(f"\nsoak: {args.soak_users} users for {args.soak_seconds:.0f} s, memory every "
          f"{args.sample_seconds:.0f} s", flush=True)
    header = (f"{'minute':>7} {'web RSS':>9} {'workers RSS':>12} {'requests':>9} "
              f"{'errors':>7} {'p95 ms':>8} {'load 1 min':>11}")
    print(header)
    print("-" * len(header))
    record = Record()
    started = time.monotonic()
    seen = [0, 0, 0]  # requests, errors, answers counted by the previous lines
    last = [0.0]

    def sample() -> None:
        last[0] = time.monotonic()
        mem = memory(site)
        requests, errors = record.count()
        with record.lock:
            fresh = record.in_order[seen[2]:]
            seen[2] = len(record.in_order)
        p95 = f"{_pct(fresh, 95):.0f}" if fresh else "-"
        print(f"{(time.monotonic() - started) / 60:>7.1f} {_mb(mem.web):>9} "
              f"{_mb(mem.workers):>12} {requests - seen[0]:>9} {errors - seen[1]:>7} "
              f"{p95:>8} {os.getloadavg()[0]:>11.2f}", flush=True)
        seen[0], seen[1] = requests, errors

    sample()
    run_users(site, provisioned, choice, args.soak_users, args.soak_seconds, tuple(args.think),
              record, tick=sample, tick_seconds=args.sample_seconds)
    if time.monotonic() - last[0] > 5:
        sample()
    print()
    print("soak, every request:")
    print_latency(record, names, time.monotonic() - started)


if __name__ == "__main__":
    sys.exit(main())
