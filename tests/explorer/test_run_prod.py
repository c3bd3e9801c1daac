"""``python -m explorer.run --prod`` for real: gunicorn with two processes, two Celery workers and
one beat, on the PostgreSQL and the Redis the tests start (each run its own database and
queue), supervised like the embedded mode; and the settings it refuses to start without.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, make_url, text

from tests.explorer.tasks_support import redis_url
from tests.explorer.test_run_supervisor import _alive, _free_port
from tests.factories import SnapshotSpec, write_table
from tests.postgres import fresh_postgres_database

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
STARTUP_TIMEOUT = 90.0


@pytest.fixture(scope="module")
def prod_database(postgres_url: str) -> Iterator[str]:
    """A fresh PostgreSQL database for these runs, as a DATABASE_URL."""
    with fresh_postgres_database(postgres_url, "floe_prod") as url:
        yield url.set(drivername="postgres").render_as_string(hide_password=False)


@pytest.fixture(scope="module")
def broker() -> str:
    import redis  # noqa: F401 - kombu's Redis transport needs the client

    url = redis_url()
    if url is None:
        pytest.skip("Redis is not running on 127.0.0.1:6379 and cannot be started here")
    return url


def _clean_environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("FLOE_", "DJANGO_", "CELERY_"))}
    env.pop("DATABASE_URL", None)
    return env


@pytest.fixture(scope="module")
def static_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """FLOE_STATIC_ROOT, so that explorer.run does not collect the static files, as in the
    image (collected when it is built). Left empty: these tests ask for JSON only, and
    collecting (and compressing) takes seconds; test_run_supervisor checks the files."""
    return tmp_path_factory.mktemp("static")


def _environment(tmp_path: Path, static_root: Path, **extra: str) -> dict[str, str]:
    env = _clean_environment()
    warehouse = tmp_path / "warehouse"
    if not warehouse.exists():
        write_table(warehouse, "sales", "orders", [SnapshotSpec(2, 100, 2048)])
    catalogs = tmp_path / "catalogs.toml"
    catalogs.write_text("")
    env.update(
        FLOE_VAR_DIR=str(tmp_path / "var"), FLOE_WAREHOUSE=str(warehouse),
        FLOE_CATALOGS=str(catalogs), FLOE_STATIC_ROOT=str(static_root), FLOE_HOST="127.0.0.1",
        FLOE_PORT=str(_free_port()),
        FLOE_SECRET_KEY="a-test-secret-key-" + uuid.uuid4().hex,
        FLOE_ALLOWED_HOSTS="127.0.0.1,localhost", FLOE_TASK_QUEUE=f"prod-{uuid.uuid4().hex[:8]}",
        FLOE_WORKER_CONCURRENCY="1", FLOE_REAPER_INTERVAL="1", FLOE_METRICS_SWEEP_SECONDS="0",
        FLOE_POLICY_TICK_SECONDS="0", FLOE_ALERT_CHECK_SECONDS="0", FLOE_PLAN_PROCESSES="0",
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


@dataclass
class Prod:
    proc: subprocess.Popen[bytes]
    log: Path
    env: dict[str, str]

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.env['FLOE_PORT']}{path}"

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def children(self) -> dict[str, int]:
        return {m.group(1): int(m.group(2))
                for m in re.finditer(r"Floe: started (\S+) \(pid (\d+)\)", self.output())}

    def wait_for(self, condition: Any, what: str, timeout: float = STARTUP_TIMEOUT) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = condition()
            if value:
                return value
            if self.proc.poll() is not None:
                pytest.fail(f"--prod exited with {self.proc.returncode} while waiting for "
                            f"{what}:\n{self.output()}")
            time.sleep(0.25)
        pytest.fail(f"timed out waiting for {what}:\n{self.output()[-5000:]}")


def _start(tmp_path: Path, env: dict[str, str]) -> Prod:
    log = tmp_path / f"prod-{uuid.uuid4().hex[:6]}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "explorer.run", "--prod"], cwd=REPO,
                                env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    return Prod(proc, log, env)


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Any]:
    started: list[Prod] = []

    def run(env: dict[str, str]) -> Prod:
        started.append(_start(tmp_path, env))
        return started[-1]

    yield run
    for prod in started:
        if prod.proc.poll() is None:
            os.killpg(prod.proc.pid, signal.SIGKILL)
            prod.proc.wait()
        for pid in prod.children().values():
            if _alive(pid):
                os.killpg(pid, signal.SIGKILL)


def _get(url: str, token: str | None = None) -> tuple[int, Any]:
    """The status and the JSON body (None when the body is not JSON; 0 without an answer)."""
    headers = {"Authorization": f"Token {token}"} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers),
                                    timeout=15) as response:
            status, body = response.status, response.read()
    except urllib.error.HTTPError as error:
        with error:
            status, body = error.code, error.read()
    except OSError:
        return 0, None
    try:
        return status, json.loads(body)
    except ValueError:
        return status, None


def _post(url: str, body: dict[str, Any], token: str) -> tuple[int, Any]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), method="POST",
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=15) as response:
        return response.status, json.loads(response.read())


def _admin_token(database_url: str) -> str:
    """A superuser's API token, written straight into the database (a manage.py command would
    start Django once more while the workers start)."""
    key = uuid.uuid4().hex + uuid.uuid4().hex[:8]
    engine = create_engine(make_url(database_url).set(drivername="postgresql+psycopg"))
    with engine.begin() as conn:
        user = conn.execute(text(
            "INSERT INTO auth_user (password, is_superuser, username, first_name, last_name, "
            "email, is_staff, is_active, date_joined) VALUES ('!', true, 'admin', '', '', "
            "'admin@example.com', true, true, now()) RETURNING id")).scalar_one()
        conn.execute(text("INSERT INTO authtoken_token (key, user_id, created) "
                          "VALUES (:key, :user, now())"), {"key": key, "user": user})
    engine.dispose()
    return key


def _children_of(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


def test_serves_with_two_web_processes_two_workers_and_beat_and_stops_on_sigterm(
        tmp_path: Path, prod_database: str, broker: str, static_root: Path, start: Any) -> None:
    prod = start(_environment(tmp_path, static_root, DATABASE_URL=prod_database,
                              CELERY_BROKER_URL=broker, FLOE_WEB_PROCESSES="2",
                              FLOE_WORKERS="2"))
    prod.wait_for(lambda: _get(prod.url("/healthz"))[0] == 200, "/healthz")
    assert _get(prod.url("/healthz")) == (200, {"status": "ok"})
    status, body = prod.wait_for(
        lambda: (got := _get(prod.url("/readyz")))[0] == 200 and got, "/readyz 200")
    assert body == {"status": "ready", "database": "ok", "broker": "ok",
                    "catalogs": {"local": "ok"}}

    # queued at once: it waits on the broker for a worker if none is ready yet
    token = _admin_token(prod.env["DATABASE_URL"])
    status, created = _post(prod.url("/api/tasks/"), {"kind": "refresh_table_stats"}, token)
    assert status == 201 and created["state"] == "QUEUED"

    children = prod.children()
    assert set(children) == {"web", "worker-1", "worker-2", "beat"}, prod.output()
    assert len(_children_of(children["web"])) == 2  # gunicorn's two processes
    # both workers answer a ping on the broker, one ran the task, one beat's reaper
    from celery import Celery

    # (other test runs' workers may share this Redis database and answer too)
    with Celery(broker=broker, set_as_current=False) as control:  # not the tests' app
        prod.wait_for(lambda: {"floe-1", "floe-2"} <= {
            name.split("@")[0] for reply in control.control.ping(timeout=1) for name in reply},
            "both workers to answer a ping")
    prod.wait_for(lambda: len(re.findall(r"floe-[12]@\S+ ready\.", prod.output())) == 2,
                  "both workers to say they are ready")
    run = prod.wait_for(
        lambda: (got := _get(prod.url(f"/api/tasks/{created['id']}/"), token)[1])
        and got["state"] in ("SUCCEEDED", "FAILED") and got, "the task to finish")
    assert run["state"] == "SUCCEEDED", run
    prod.wait_for(lambda: re.search(r"Task explorer\.tasks\.reap\[\S+\] succeeded",
                                    prod.output()), "beat's reaper run by a worker")

    processes = [pid for child in children.values() for pid in [child, *_children_of(child)]]
    os.kill(prod.proc.pid, signal.SIGTERM)
    assert prod.proc.wait(timeout=60) == 0, prod.output()
    assert "SIGTERM received; stopping" in prod.output()
    assert not [pid for pid in processes if _alive(pid)], prod.output()


def test_readyz_names_the_broker_that_does_not_answer(
        tmp_path: Path, prod_database: str, static_root: Path, start: Any) -> None:
    closed = _free_port()
    prod = start(_environment(tmp_path, static_root, DATABASE_URL=prod_database,
                              CELERY_BROKER_URL=f"redis://:broker-s3cret@127.0.0.1:{closed}/0",
                              FLOE_WEB_PROCESSES="1", FLOE_WORKERS="1"))
    prod.wait_for(lambda: _get(prod.url("/healthz"))[0] == 200, "/healthz")
    status, body = _get(prod.url("/readyz"))
    assert status == 503, body
    assert body["status"] == "not ready"
    assert body["database"] == "ok" and body["catalogs"] == {"local": "ok"}
    assert body["broker"].startswith("unreachable: ") and str(closed) in body["broker"]
    assert "s3cret" not in json.dumps(body)


@pytest.mark.parametrize(("unset", "change", "message"), [
    ("FLOE_SECRET_KEY", {}, "FLOE_SECRET_KEY is not set"),
    ("FLOE_ALLOWED_HOSTS", {}, "FLOE_ALLOWED_HOSTS is not set"),
    (None, {"DATABASE_URL": "sqlite:///floe.sqlite3"}, "DATABASE_URL is SQLite"),
    (None, {"CELERY_BROKER_URL": "sqla+sqlite:///broker.sqlite3"},
     "CELERY_BROKER_URL is the SQLite broker"),
])
def test_refuses_to_start_without_the_production_settings(
        tmp_path: Path, unset: str | None, change: dict[str, str], message: str) -> None:
    env = _clean_environment()
    env.update(FLOE_SECRET_KEY="k" * 50, FLOE_ALLOWED_HOSTS="floe.example.com",
               DATABASE_URL="postgres://floe@127.0.0.1:1/floe",
               CELERY_BROKER_URL="redis://127.0.0.1:1/0", FLOE_VAR_DIR=str(tmp_path / "var"))
    env.update(change)
    if unset:
        del env[unset]
    done = subprocess.run([sys.executable, "-m", "explorer.run", "--prod"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], done.stderr
    assert not (tmp_path / "var").exists()  # nothing started, no key generated
