"""Helpers for the task, audit and permission tests (tests/explorer and tests/api): users with a
role, tables written by floe, a real Celery worker as a subprocess, waiting for a run.

The worker runs ``celery -A explorer worker --beat`` against its own broker (kombu's
SQLAlchemy transport on a SQLite file, or Redis) and the tests' database, which is a SQLite
file (explorer.settings gives the test database a file name) that the worker opens through
``DATABASE_URL``; tests that use it are ``transaction=True`` so it sees their rows.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import pyarrow as pa
from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from explorer.models import CatalogGrant, TaskRun
from floe.catalog.filesystem import FileSystemCatalog
from floe.partitioning import parse_partition_by
from floe.schema import Schema
from floe.table import Table
from floe.types import LONG, STRING, NestedField

REPO = Path(__file__).resolve().parents[2]
T = TypeVar("T")

SCHEMA = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "kind", STRING),
                NestedField(3, "amount", LONG))


def rows(first: int, n: int) -> pa.Table:
    return pa.table({
        "id": pa.array(range(first, first + n), pa.int64()),
        "kind": pa.array([("click", "view", "buy")[i % 3] for i in range(first, first + n)]),
        "amount": pa.array([i % 101 for i in range(first, first + n)], pa.int64()),
    })


def make_table(warehouse: Path | str, namespace: str, name: str = "events", *,
               appends: int = 3, rows_per_append: int = 100, partition_by: str = "kind",
               properties: dict[str, str] | None = None) -> Table:
    """A floe-written table ``namespace.name`` with ``appends`` snapshots, partitioned by
    ``kind`` (so every append writes three files)."""
    catalog = FileSystemCatalog("local", str(warehouse))
    catalog.create_namespace(tuple(namespace.split(".")))
    spec = {"spec": parse_partition_by(partition_by, SCHEMA)} if partition_by else {}
    table = catalog.create_table(
        f"{namespace}.{name}", SCHEMA, **spec,
        properties={"commit.manifest-merge.enabled": "false", **(properties or {})})
    for i in range(appends):
        table.append(rows(i * rows_per_append, rows_per_append))
    return table


def load(warehouse: Path | str, namespace: str, name: str = "events") -> Table:
    """The table as floe reads it now (not through the explorer)."""
    return FileSystemCatalog("local", str(warehouse)).load_table(f"{namespace}.{name}")


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


# --- users ---------------------------------------------------------------------------------------


#: The password of users made with ``user_with(..., password=True)`` (hashing is slow: only
#: for tests that sign in through the login form).
PASSWORD = "pw-long-enough-1"


def user_with(name: str, role: str | None = None, catalog: str = "local", *,
              superuser: bool = False, password: bool = False) -> User:
    secret = PASSWORD if password else None
    user = (User.objects.create_superuser(name, f"{name}@example.com", secret)
            if superuser else User.objects.create_user(name, password=secret))
    if role is not None:
        CatalogGrant.objects.create(user=user, catalog=catalog, role=role)
    return user


def client_for(user: User | None, *, token: bool = False) -> APIClient:
    client = APIClient()
    if user is not None:
        if token:
            client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
        else:
            client.force_authenticate(user)
    return client


# --- waiting -------------------------------------------------------------------------------------


def wait_for(check: Callable[[], T | None], timeout: float, what: str,
             interval: float = 0.1, on_timeout: Callable[[], str] = lambda: "") -> T:
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}"
                                 f"{on_timeout()}")
        time.sleep(interval)


def finished(run_id: int, timeout: float = 90.0, worker: Worker | None = None) -> TaskRun:
    """Wait for a run to reach a final state; the worker's log is shown when it does not."""
    def done() -> TaskRun | None:
        run = TaskRun.objects.get(pk=run_id)
        return run if run.is_finished else None

    return wait_for(done, timeout, f"task run {run_id} to finish",
                    on_timeout=lambda: "\n" + (worker.log_tail() if worker else ""))


# --- a Celery worker ------------------------------------------------------------------------------


@dataclass
class Worker:
    """A ``celery -A explorer worker`` child process and what it was started with."""

    broker_url: str
    queue: str
    root: Path
    env: dict[str, str]
    proc: subprocess.Popen[bytes] | None = None
    log: Path = field(default_factory=Path)

    @property
    def warehouse(self) -> Path:
        return Path(self.env["FLOE_WAREHOUSE"])

    @property
    def catalogs_file(self) -> Path:
        return Path(self.env["FLOE_CATALOGS"])

    @property
    def export_dir(self) -> Path:
        return Path(self.env["FLOE_VAR_DIR"]) / "exports"

    def variant(self, name: str, **env: str) -> Worker:
        """Another worker on the same broker, database and warehouse: on a queue of its own
        (tests send work there on purpose), with some settings changed."""
        queue = f"{self.queue}-{name}-{uuid.uuid4().hex[:6]}"
        return Worker(self.broker_url, queue, self.root,
                      {**self.env, "FLOE_TASK_QUEUE": queue, **env})

    def log_tail(self, n: int = 60) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def start(self, *, beat: bool = True, concurrency: int = 2, name: str = "w") -> Worker:
        command = [sys.executable, "-m", "celery", "-A", "explorer", "worker",
                   "--pool=prefork", f"--concurrency={concurrency}", "--loglevel=INFO",
                   "--without-gossip", "--without-mingle", "--without-heartbeat",
                   f"--hostname={name}-{os.getpid()}-{uuid.uuid4().hex[:6]}@%h",
                   f"--queues={self.queue}"]
        if beat:
            command += ["--beat", f"--schedule={self.root / f'beat-{name}'}"]
        self.log = self.root / f"worker-{name}-{uuid.uuid4().hex[:6]}.log"
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(command, cwd=REPO, env=self.env, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        wait_for(lambda: " ready." in self.log.read_text(errors="replace")
                 or self.proc.poll() is not None, 90, "the worker to start")  # type: ignore[union-attr]
        assert self.proc.poll() is None, self.log_tail()
        return self

    def kill(self) -> None:
        """SIGKILL the worker and its pool processes (its process group)."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        """Warm shutdown (SIGTERM to the main process, which stops its pool and beat)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()


def worker_env(root: Path, *, database: str, broker_url: str, queue: str, warehouse: Path,
               catalogs: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("FLOE_", "DJANGO_", "CELERY_"))}
    env.pop("DATABASE_URL", None)
    env.update(
        DJANGO_SETTINGS_MODULE="explorer.settings", DATABASE_URL=f"sqlite:///{database}",
        CELERY_BROKER_URL=broker_url, FLOE_TASK_QUEUE=queue, FLOE_VAR_DIR=str(root / "var"),
        FLOE_WAREHOUSE=str(warehouse), FLOE_CATALOGS=str(catalogs),
        FLOE_ALLOW_ANONYMOUS="true", FLOE_TASK_HEARTBEAT_SECONDS="0.3",
        FLOE_TASK_HEARTBEAT_TIMEOUT="4", FLOE_REAPER_INTERVAL="1", PYTHONUNBUFFERED="1",
        FLOE_PLAN_PROCESSES="0",
        # the shared workers neither sweep nor run policies on their own (a test that wants
        # them starts a worker with these set)
        FLOE_METRICS_SWEEP_SECONDS="0", FLOE_POLICY_TICK_SECONDS="0",
        FLOE_ALERT_CHECK_SECONDS="0")
    env.update(extra)
    return env


def redis_url() -> str | None:
    """redis://127.0.0.1:6379/N when Redis answers there (started if it is installed and
    down), else None. N (1–15) depends on the test process, so two test runs on one machine
    do not take each other's tasks off a shared queue."""
    def answers() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", 6379), timeout=1) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    if not answers():
        try:
            subprocess.run(["redis-server", "--daemonize", "yes", "--bind", "127.0.0.1",
                            "--port", "6379", "--save", "", "--appendonly", "no"],
                           check=True, capture_output=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return None
        deadline = time.monotonic() + 10
        while not answers():
            if time.monotonic() > deadline:
                return None
            time.sleep(0.2)
    return f"redis://127.0.0.1:6379/{1 + os.getpid() % 15}"
