"""Issue 23, faults as tests: what Floe survives in its production shape, with real servers.

The PostgreSQL and Redis here are private to this module (tests/service_faults.py), so
restarting or crippling them disturbs no other test. Each fault ends with the table at its
state before or after, never corrupt, and nothing half-done:

* the disk full while writing a data file or a metadata file (a 2 MiB tmpfs: the kernel's
  ENOSPC);
* the catalog database read-only;
* PostgreSQL restarted while pages are served and a task commits (pages answer 503 with
  Retry-After during the gap and recover by themselves), and restarted while a task runs
  (its heartbeat and its outcome are written after it, not left to the reaper), and stopped
  right when a run commits (its outcome is written once it is back);
* Redis restarted with tasks queued, keeping its data or losing it (the reaper sends the
  lost runs again);
* a worker killed with SIGKILL mid-commit under PostgreSQL.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from floe.catalog.filesystem import FileSystemCatalog
from floe.catalog.sql import SqlCatalog
from floe.errors import FloeError
from floe.partitioning import parse_partition_by
from floe.scan import plan_files
from floe.scan.readers import plan_to_table
from floe.schema import Schema
from floe.types import LONG, STRING, NestedField
from tests.explorer.tasks_support import REPO, Worker, wait_for, worker_env
from tests.service_faults import PrivatePostgres, PrivateRedis, free_port

pytestmark = pytest.mark.slow

SCHEMA = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "payload", STRING))


def _rows(first: int, n: int, payload_bytes: int = 8) -> pa.Table:
    # random payloads: Parquet cannot compress them below their size
    return pa.table({
        "id": pa.array(range(first, first + n), pa.int64()),
        "payload": pa.array([os.urandom(payload_bytes // 2).hex() for _ in range(n)]),
    })


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def pg() -> Iterator[PrivatePostgres]:
    server = PrivatePostgres()
    yield server
    server.close()


# --- the disk full ---------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs (root only): writes past it fail with the kernel's ENOSPC."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(disk: Path, leave: int) -> None:
    """Take the disk's free space but ``leave`` bytes."""
    st = os.statvfs(disk)
    free = st.f_bavail * st.f_frsize
    with (disk / "filler").open("wb") as f:
        f.write(b"\0" * max(0, free - leave))


def _one_line_error(exc: BaseException) -> str:
    text = str(exc)
    assert text and "\n" not in text.strip(), repr(text)
    return text


def test_disk_full_while_writing_data_files_leaves_the_table_unchanged(small_disk: Path) -> None:
    catalog = FileSystemCatalog("local", str(small_disk / "warehouse"))
    table = catalog.create_table("db.t", SCHEMA)
    table.append(_rows(0, 10))
    before, files = table.metadata_location, _files(small_disk)

    with pytest.raises(OSError) as failed:  # ~4 MiB of random rows on a 2 MiB disk
        table.append(_rows(100, 8000, payload_bytes=1000))

    message = _one_line_error(failed.value)
    assert "No space left on device" in message and ".parquet" in message, message
    assert catalog.load_table("db.t").metadata_location == before
    assert _files(small_disk) == files  # the partial data file is gone, no temporary left
    # the table still takes a commit once there is room
    assert catalog.load_table("db.t").append(_rows(10, 5)).metadata_location != before


def test_disk_full_while_writing_a_metadata_file_removes_what_the_commit_wrote(
        small_disk: Path) -> None:
    catalog = FileSystemCatalog("local", str(small_disk / "warehouse"))
    # a large table property makes each metadata file ~300 KB; a data file and its
    # manifests are a few KB
    table = catalog.create_table("db.t", SCHEMA, properties={"note": "x" * 300_000})
    before, files = table.metadata_location, _files(small_disk)
    _fill(small_disk, leave=128 * 1024)
    files = _files(small_disk)

    with pytest.raises(FloeError) as failed:
        table.append(_rows(0, 10))

    message = _one_line_error(failed.value)
    assert "No space left on device" in message and "db.t" in message, message
    assert catalog.load_table("db.t").metadata_location == before
    # neither the data file, nor the manifest and manifest list, nor a partial metadata file
    assert _files(small_disk) == files
    (small_disk / "filler").unlink()
    assert catalog.load_table("db.t").append(_rows(10, 5)).metadata_location != before


# --- the catalog database read-only -------------------------------------------------------------


def test_a_commit_to_a_read_only_catalog_database_fails_clearly_and_leaves_nothing(
        pg: PrivatePostgres, tmp_path: Path) -> None:
    name = f"ro_{uuid.uuid4().hex[:8]}"
    uri = pg.create_database(name)
    warehouse = tmp_path / "warehouse"
    catalog = SqlCatalog("lake", uri, str(warehouse))
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", SCHEMA)
    table.append(_rows(0, 10))
    before, files = table.metadata_location, _files(warehouse)
    catalog.close()

    pg.sql(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
    try:
        read_only = SqlCatalog("lake", uri, str(warehouse))
        try:
            stale = read_only.load_table("db.t")  # reads still work
            with pytest.raises(FloeError) as failed:
                stale.append(_rows(10, 10))
        finally:
            read_only.close()
    finally:
        pg.sql(f'ALTER DATABASE "{name}" SET default_transaction_read_only = off')

    message = _one_line_error(failed.value)
    assert "'lake'" in message and "read-only" in message, message
    catalog = SqlCatalog("lake", uri, str(warehouse))
    try:
        assert catalog.load_table("db.t").metadata_location == before
        # no metadata file without a pointer, no data file or manifest without a snapshot
        assert _files(warehouse) == files
    finally:
        catalog.close()


# --- the production shape: PostgreSQL, Redis, a web server and a worker, all private ----------


@dataclass
class Stack:
    """The explorer served by a real web server process (explorer.serve) and a Celery worker,
    both on the private PostgreSQL (the explorer's database and a SQL catalog ``lake``) and
    the private Redis (the broker)."""

    pg: PrivatePostgres
    redis: PrivateRedis
    root: Path
    env: dict[str, str]
    port: int
    token: str = ""
    web: subprocess.Popen[bytes] | None = None
    worker: Worker | None = None
    workers: list[Worker] = field(default_factory=list)

    @property
    def lake_uri(self) -> str:
        return self.pg.url("lake")

    @property
    def warehouse(self) -> Path:
        return self.root / "lake"

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def manage(self, *args: str, **env: str) -> str:
        done = subprocess.run([sys.executable, "manage.py", *args], cwd=REPO,
                              env={**self.env, **env}, capture_output=True, text=True,
                              timeout=180)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def start_web(self) -> None:
        """Started; ``wait_for_web`` waits for its first answer."""
        log = (self.root / "web.log").open("ab")
        self.web = subprocess.Popen(
            [sys.executable, "-m", "explorer.serve", f"--listen=127.0.0.1:{self.port}",
             "--threads=4"], cwd=REPO, env=self.env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)
        log.close()

    def wait_for_web(self) -> None:
        wait_for(lambda: get(self.url("/api/"))[0] == 200, 90, "the web server to answer")

    def start_worker(self, name: str, **env: str) -> Worker:
        w = Worker(self.env["CELERY_BROKER_URL"], self.env["FLOE_TASK_QUEUE"], self.root,
                   {**self.env, **env}).start(concurrency=1, name=name)
        self.workers.append(w)
        self.worker = w
        return w

    def submit(self, kind: str, **params: Any) -> int:
        status, body = request(self.url("/api/tasks/"), self.token, {"kind": kind, "params": {
            "catalog": "lake", "namespace": "db", "table": "t", **params}})
        assert status == 201, body
        return int(body["id"])

    def run(self, run_id: int) -> dict[str, Any]:
        (row,) = self.pg.sql(
            "SELECT state, stage, attempts, error, metadata_before FROM explorer_taskrun "
            f"WHERE id = {int(run_id)}", "floe")
        audits = self.pg.sql(f"SELECT outcome, metadata_after FROM explorer_auditentry "
                             f"WHERE task_run_id = {int(run_id)} ORDER BY id", "floe")
        return dict(zip(("state", "stage", "attempts", "error", "before"), row, strict=True),
                    audits=audits)

    def finished(self, run_id: int, timeout: float = 90) -> dict[str, Any]:
        def done() -> dict[str, Any] | None:
            run = self.run(run_id)
            return run if run["state"] in ("SUCCEEDED", "FAILED", "CANCELLED") else None
        return wait_for(done, timeout, f"task run {run_id} to finish", interval=0.2,
                        on_timeout=lambda: "\n" + (self.worker.log_tail() if self.worker
                                                    else ""))

    def lake(self) -> SqlCatalog:
        return SqlCatalog("lake", self.lake_uri, str(self.warehouse))


def get(url: str, token: str | None = None) -> tuple[int, bytes, dict[str, str]]:
    headers = {"Authorization": f"Token {token}"} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers),
                                    timeout=10) as response:
            return response.status, response.read(), dict(response.headers)
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.read(), dict(error.headers)
    except OSError as error:  # the server itself is not answering: never expected here
        return -1, str(error).encode(), {}


def request(url: str, token: str, body: dict[str, Any]) -> tuple[int, Any]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST", headers={
        "Authorization": f"Token {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.read().decode(errors="replace")


@pytest.fixture(scope="module")
def stack(pg: PrivatePostgres, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    redis = PrivateRedis()
    root = tmp_path_factory.mktemp("stack")
    pg.sql('CREATE DATABASE "floe"')
    pg.sql('CREATE DATABASE "lake"')
    (root / "lake").mkdir()
    catalogs = root / "catalogs.toml"
    catalogs.write_text(f'[catalogs.lake]\ntype = "sql"\nuri = "{pg.url("lake")}"\n'
                        f'warehouse = "{root / "lake"}"\n')
    env = worker_env(root, database=str(root / "unused.sqlite3"), broker_url=redis.url(1),
                     queue=f"faults-{uuid.uuid4().hex[:8]}", warehouse=root / "warehouse",
                     catalogs=catalogs, DATABASE_URL=pg.dsn("floe"),
                     FLOE_SECRET_KEY="fault-tests-" + uuid.uuid4().hex, FLOE_DEBUG="false")
    (root / "warehouse").mkdir()
    s = Stack(pg, redis, root, env, free_port())
    try:
        # one process (each manage.py start costs seconds): the tables, an admin, its token
        out = s.manage("shell", "-c", "; ".join((
            "from django.core.management import call_command",
            "from django.contrib.auth.models import User",
            "from rest_framework.authtoken.models import Token",
            "call_command('migrate', interactive=False, verbosity=0)",
            "u = User.objects.create_superuser('admin', 'admin@example.com', None)",
            "print('token', Token.objects.create(user=u).key)")))
        m = re.search(r"^token (\w+)$", out, re.M)
        assert m, out
        s.token = m.group(1)
        s.start_web()
        s.start_worker("w1")
        s.wait_for_web()
        yield s
    finally:
        for w in s.workers:
            w.kill()
        if s.web is not None and s.web.poll() is None:
            s.web.kill()
            s.web.wait()
        redis.close()


def _lake_table(stack: Stack, appends: int, rows: int = 50, partition_by: str = "") -> str:
    """``lake.db.t`` afresh with ``appends`` appends of ``rows`` rows; its metadata
    location."""
    catalog = stack.lake()
    try:
        if not catalog.namespace_exists("db"):
            catalog.create_namespace("db")
        if "t" in {i.name for i in catalog.list_tables("db")}:
            catalog.drop_table("db.t", purge=True)
        spec = {"spec": parse_partition_by(partition_by, SCHEMA)} if partition_by else {}
        table = catalog.create_table("db.t", SCHEMA, **spec)
        for i in range(appends):
            ids = pa.array(range(i * rows, (i + 1) * rows), pa.int64())
            table = table.append(pa.table({"id": ids, "payload": pc.cast(ids, pa.string())}))
        return table.metadata_location
    finally:
        catalog.close()


def _at_before_or_after(stack: Stack, before: str) -> str:
    """The table loads at ``before`` or at a metadata file written on top of it, and every
    row is there; its metadata location."""
    catalog = stack.lake()
    try:
        table = catalog.load_table("db.t")
        log = [e.metadata_file for e in table.metadata.metadata_log]
        assert table.metadata_location == before or log[-1] == before, (
            table.metadata_location, before, log[-3:])
        rows = plan_to_table(table.io, plan_files(table.io, table.metadata))
        assert sorted(rows.column("id").to_pylist()) == list(range(rows.num_rows))
        return table.metadata_location
    finally:
        catalog.close()


class Poller(threading.Thread):
    """GETs a page and an API list that read the explorer's database, over and over."""

    PATHS = ("/tasks/", "/api/tasks/")

    def __init__(self, stack: Stack) -> None:
        super().__init__(daemon=True)
        self.stack = stack
        # (asked, answered, path, status, body, headers)
        self.seen: list[tuple[float, float, str, int, bytes, dict[str, str]]] = []
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            for path in self.PATHS:
                asked = time.monotonic()
                status, body, headers = get(self.stack.url(path), self.stack.token)
                self.seen.append((asked, time.monotonic(), path, status, body, headers))
            time.sleep(0.05)

    def statuses(self, since: float = 0.0) -> set[int]:
        return {s for t, _, _, s, _, _ in self.seen if t >= since}


def test_postgres_restarted_while_pages_are_served_and_a_task_commits(stack: Stack) -> None:
    before = _lake_table(stack, appends=20, rows=20_000)
    data_dir = stack.warehouse / "db.db" / "t" / "data"
    files_before = set(data_dir.rglob("*"))
    poller = Poller(stack)
    poller.start()
    try:
        wait_for(lambda: 200 in poller.statuses(), 30, "the pages to answer")
        run_id = stack.submit("compact")
        # the compaction planned (from the catalog) and writes its files: its commit comes
        # once they are written, while PostgreSQL is down
        wait_for(lambda: set(data_dir.rglob("*")) - files_before, 60,
                 "the compaction to write", interval=0.005)
        stack.pg.stop()
        down = time.monotonic()
        time.sleep(3.0)
        up = time.monotonic()
        stack.pg.start()
        # the pages recover by themselves: 200 again without anything restarted but PostgreSQL
        wait_for(lambda: poller.statuses(since=up + 0.5) == {200}, 30,
                 "the pages to answer 200 again", interval=0.2)
    finally:
        poller.halt.set()
        poller.join()
    gap = [(p, s, b, h) for asked, answered, p, s, b, h in poller.seen
           if down <= asked and answered <= up]
    assert len(gap) >= 4, poller.seen
    assert {s for _, s, _, _ in gap} == {503}, {(p, s) for p, s, _, _ in gap}
    for path, _, body, headers in gap:
        assert headers.get("Retry-After") == "5", headers
        text = body.decode()
        assert "database does not answer" in text, text[:300]
        if path.startswith("/api/"):
            assert json.loads(text)["error"] == "DatabaseUnavailable"
        else:
            assert "<html" in text and "Traceback" not in text
    assert 500 not in poller.statuses() and -1 not in poller.statuses()

    # the task finished or failed cleanly (the reaper fails it when its worker lost track)
    run = stack.finished(run_id)
    assert run["state"] in ("SUCCEEDED", "FAILED"), run
    after = _at_before_or_after(stack, before)
    if run["state"] == "SUCCEEDED":
        assert after != before and run["audits"] == [("succeeded", after)], run
    # and the next task runs as usual
    again = stack.finished(stack.submit("compact"))
    assert again["state"] == "SUCCEEDED", (again, stack.worker.log_tail() if stack.worker
                                           else "")


def test_postgres_restarted_during_a_task_the_run_still_ends_with_its_own_outcome(
        stack: Stack) -> None:
    """The worker's connections (the heartbeat thread's, the task's) are replaced after a
    restart: the run is not left to the reaper as if its worker had died."""
    # sixteen groups, rewritten one after the other: PostgreSQL restarts while the first
    # are written, the commit comes after it is back
    before = _lake_table(stack, appends=10, rows=100_000, partition_by="bucket(16, id)")
    data_dir = stack.warehouse / "db.db" / "t" / "data"
    files_before = set(data_dir.rglob("*"))
    run_id = stack.submit("compact")
    wait_for(lambda: set(data_dir.rglob("*")) - files_before, 60, "the compaction to write",
             interval=0.005)
    started = time.monotonic()
    stack.pg.restart()  # down only while it restarts: the compaction goes on meanwhile
    restarted = time.monotonic() - started

    run = stack.finished(run_id)
    assert run["state"] == "SUCCEEDED", (run, restarted,
                                         stack.worker.log_tail() if stack.worker else "")
    now = _at_before_or_after(stack, before)
    assert now != before and run["audits"] == [("succeeded", now)], run


def test_postgres_down_when_a_run_commits_its_outcome_is_written_once_it_is_back(
        stack: Stack) -> None:
    """PostgreSQL stops right when a compaction commits (its manifest list written) and comes
    back seconds later: the run's outcome (succeeded, or failed on the catalog's error) is
    written by its worker once the database answers again, not left to the reaper as if the
    worker had died. The heartbeat timeout is production-like here (30 s, not 4): only a
    worker that gave up would be reaped."""
    assert stack.worker is not None
    stack.worker.kill()
    worker = stack.start_worker("w-pg", FLOE_TASK_HEARTBEAT_TIMEOUT="30")
    try:
        before = _lake_table(stack, appends=30)
        metadata_dir = stack.warehouse / "db.db" / "t" / "metadata"
        lists_before = set(metadata_dir.glob("snap-*.avro"))
        run_id = stack.submit("compact")
        wait_for(lambda: set(metadata_dir.glob("snap-*.avro")) - lists_before, 60,
                 "the compaction to write its manifest list", interval=0.002,
                 on_timeout=lambda: "\n" + worker.log_tail())
        stack.pg.restart(down_for=3.0)

        run = stack.finished(run_id)
        assert run["state"] in ("SUCCEEDED", "FAILED"), run
        assert "the worker stopped" not in run["error"], (run, worker.log_tail())
        assert [o for o, _ in run["audits"]] == [run["state"].lower()], run
        _at_before_or_after(stack, before)
    finally:
        worker.kill()
        stack.start_worker("w1-again")


def _queued_behind_a_compaction(stack: Stack, prefix: str) -> tuple[int, list[int]]:
    """The worker (one process) busy with a compaction, six tag_create runs (tags
    ``<prefix>0`` .. ``<prefix>5``) queued behind it: (the compaction's run, the tags')."""
    _lake_table(stack, appends=30)
    assert stack.worker is not None
    busy = stack.submit("compact")
    tags = [stack.submit("tag_create", name=f"{prefix}{i}") for i in range(6)]
    wait_for(lambda: stack.run(busy)["state"] != "QUEUED", 60, "the compaction to start",
             interval=0.02)
    return busy, tags


def _tags_made_once(stack: Stack, runs: list[int], prefix: str) -> None:
    """Each of ``runs`` SUCCEEDED in one attempt with one audit entry, and the six tags
    ``<prefix>0`` .. ``<prefix>5`` are on the table."""
    assert stack.worker is not None
    for run_id in runs:
        run = stack.finished(run_id, timeout=60)
        assert run["state"] == "SUCCEEDED", (run, stack.worker.log_tail())
        assert run["attempts"] == 1 and [o for o, _ in run["audits"]] == ["succeeded"], run
    catalog = stack.lake()
    try:
        refs = catalog.load_table("db.t").metadata.refs
        assert {f"{prefix}{i}" for i in range(6)} <= set(refs), sorted(refs)
    finally:
        catalog.close()


def test_redis_restarted_with_tasks_queued_runs_each_exactly_once(stack: Stack) -> None:
    busy, tags = _queued_behind_a_compaction(stack, "t")
    assert stack.worker is not None
    # a graceful restart (SHUTDOWN SAVE, as a Redis with snapshots does on a restart)
    stack.redis.restart(keep_data=True, down_for=2.0)
    _tags_made_once(stack, [busy, *tags], "t")

    # every message delivered again, as acks_late redelivers one whose ack was lost: the
    # claim refuses each, nothing runs twice
    from celery import Celery
    sender = Celery(broker=stack.redis.url(1))
    try:
        for run_id in (busy, *tags):
            sender.send_task("explorer.tasks.run_task", args=[run_id],
                             queue=stack.env["FLOE_TASK_QUEUE"])
    finally:
        sender.close()
    wait_for(lambda: all(f"task run {r} is gone or already claimed" in stack.worker.log_tail(400)
                         for r in (busy, *tags)), 60, "the worker to refuse the redeliveries",
             on_timeout=lambda: "\n" + stack.worker.log_tail())
    for run_id in (busy, *tags):
        run = stack.run(run_id)
        assert run["attempts"] == 1 and len(run["audits"]) == 1, run


def test_redis_restarted_without_its_data_the_reaper_sends_the_lost_runs_again(
        stack: Stack) -> None:
    """A Redis without persistence (or crashed) loses the queued messages: their runs stay
    QUEUED until the reaper sends them again (FLOE_TASK_REQUEUE_SECONDS after they were sent;
    here the reaper runs as of an hour later), and each then runs exactly once."""
    busy, tags = _queued_behind_a_compaction(stack, "lost")
    stack.redis.restart(keep_data=False, down_for=1.0)
    assert stack.finished(busy)["state"] == "SUCCEEDED"
    time.sleep(3.0)  # the worker is back on the new Redis and idle: the lost runs stay queued
    lost = [r for r in tags if stack.run(r)["state"] == "QUEUED"]
    assert lost, [stack.run(r) for r in tags]

    out = stack.manage("shell", "-c", "; ".join((
        "import datetime as dt",
        "from django.utils import timezone",
        "from explorer.tasks.lifecycle import task_runs_reap",
        "print('reaped', task_runs_reap(now=timezone.now() + dt.timedelta(hours=1)))")))
    assert f"'resent_runs': {len(lost)}" in out, (out, lost)
    _tags_made_once(stack, tags, "lost")


def test_a_worker_killed_mid_commit_under_postgres_is_reaped_and_a_retry_succeeds(
        stack: Stack) -> None:
    before = _lake_table(stack, appends=30)
    metadata_dir = stack.warehouse / "db.db" / "t" / "metadata"
    lists_before = set(metadata_dir.glob("snap-*.avro"))
    assert stack.worker is not None
    run_id = stack.submit("compact")
    # its manifest list written: the commit is under way (the metadata file and the pointer
    # swap follow within milliseconds)
    wait_for(lambda: set(metadata_dir.glob("snap-*.avro")) - lists_before, 60,
             "the compaction to write its manifest list", interval=0.002,
             on_timeout=lambda: "\n" + stack.worker.log_tail() if stack.worker else "")
    stack.worker.kill()

    # a new worker's reaper fails the run once its heartbeat is stale
    stack.start_worker("w2")
    run = stack.finished(run_id, timeout=60)
    assert run["state"] == "FAILED" and "the worker stopped" in run["error"], run
    assert [o for o, _ in run["audits"]] == ["failed"], run
    now = _at_before_or_after(stack, before)
    assert run["audits"][0][1] == now  # the audit entry records the state it left

    status, body = request(stack.url(f"/api/tasks/{run_id}/retry/"), stack.token, {})
    assert status == 201, body
    retry = stack.finished(int(body["id"]))
    assert retry["state"] == "SUCCEEDED", (retry, stack.worker.log_tail())
    _at_before_or_after(stack, now)
