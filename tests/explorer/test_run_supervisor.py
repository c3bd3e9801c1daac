"""``python -m explorer.run`` for real: web server and Celery worker as child processes.

Each test starts the runner on a free port with its own var/ directory and warehouse, so the
SQLite database, the SQLite broker and the tables are all temporary.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.factories import SnapshotSpec, write_table

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
STARTUP_TIMEOUT = 90.0


@dataclass
class Runner:
    proc: subprocess.Popen[bytes]
    log: Path
    port: int
    env: dict[str, str]

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def child_pid(self, name: str) -> int:
        m = re.search(rf"Floe: started {name} \(pid (\d+)\)", self.output())
        assert m, f"no pid for {name} in:\n{self.output()}"
        return int(m.group(1))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str, token: str | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers={"Authorization": f"Token {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.read()


def _post_json(url: str, body: dict[str, Any], token: str) -> tuple[int, Any]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), method="POST",
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, json.loads(response.read())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie has exited; only its parent has not collected it yet.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def _wait_for(condition: Any, timeout: float, what: str, runner: Runner) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        if runner.proc.poll() is not None:
            pytest.fail(f"runner exited with {runner.proc.returncode} while waiting for {what}:\n{runner.output()}")
        time.sleep(0.25)
    pytest.fail(f"timed out waiting for {what}:\n{runner.output()}")


@pytest.fixture
def runner(tmp_path: Path) -> Iterator[Runner]:
    warehouse = tmp_path / "warehouse"
    write_table(warehouse, "sales", "orders", [SnapshotSpec(2, 100, 2048), SnapshotSpec(1, 50, 1000)])
    write_table(warehouse, "sales", "refunds", [SnapshotSpec(1, 7, 512)])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FLOE_", "DJANGO_", "CELERY_"))}
    env.pop("DATABASE_URL", None)
    config = tmp_path / "catalogs.toml"  # one broken entry: only that catalog is unusable
    config.write_text('[catalogs.prod]\ntype = "sql"\n')  # no uri
    env.update(
        FLOE_VAR_DIR=str(tmp_path / "var"), FLOE_WAREHOUSE=str(warehouse), FLOE_HOST="127.0.0.1",
        FLOE_PORT=str(_free_port()), FLOE_ALLOW_ANONYMOUS="true", PYTHONUNBUFFERED="1",
        FLOE_CATALOGS=str(config),
    )
    log = tmp_path / "runner.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "explorer.run"], cwd=REPO, env=env, stdout=out,
            stderr=subprocess.STDOUT, start_new_session=True,
        )
    r = Runner(proc=proc, log=log, port=int(env["FLOE_PORT"]), env=env)
    try:
        yield r
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        for name in ("web", "worker"):
            m = re.search(rf"Floe: started {name} \(pid (\d+)\)", r.output())
            if m and _alive(int(m.group(1))):
                os.killpg(int(m.group(1)), signal.SIGKILL)


def _manage(runner: Runner, *args: str, **extra_env: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=REPO, env={**runner.env, **extra_env},
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _token(runner: Runner) -> str:
    _manage(runner, "createsuperuser", "--noinput", "--username", "admin", "--email", "admin@example.com",
            DJANGO_SUPERUSER_PASSWORD="a-long-test-password")
    m = re.search(r"Generated token (\w+)", _manage(runner, "drf_create_token", "admin"))
    assert m
    return m.group(1)


def _serving(runner: Runner) -> bool:
    try:
        return _get(runner.url("/"))[0] == 200
    except OSError:
        return False


def _static_files_are_hashed_compressed_and_cached(runner: Runner, page: bytes) -> None:
    """The page names its static files with content hashes (collected into var/static), and
    they come compressed with a one-year, immutable cache; so does Swagger UI's bundle."""
    urls = re.findall(rb'(?:href|src|data-plotly)="(/static/[^"]+)"', page)
    assert urls and all(re.search(rb"\.[0-9a-f]{12}\.(css|js|svg)$", u) for u in urls), urls
    assert (Path(runner.env["FLOE_VAR_DIR"]) / "static" / "staticfiles.json").exists()
    reference = _get(runner.url("/api/reference/"))[1]
    bundle = re.search(rb'src="(/static/drf_spectacular_sidecar/[^"]+bundle[^"]*\.js)"',
                       reference)
    assert bundle, reference[:2000]
    for url in [*urls, bundle.group(1)]:
        request = urllib.request.Request(runner.url(url.decode()),
                                         headers={"Accept-Encoding": "gzip"})
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read()
            assert response.headers["Content-Encoding"] == "gzip", url
            assert "max-age=315360000" in response.headers["Cache-Control"] and \
                "immutable" in response.headers["Cache-Control"], url
            assert gzip.decompress(body)


def test_serves_the_table_list_runs_a_task_in_the_worker_and_stops_on_sigint(runner: Runner) -> None:
    _wait_for(lambda: _serving(runner), STARTUP_TIMEOUT, "HTTP 200 on /", runner)
    status, page = _get(runner.url("/"))
    assert b'data-table="sales.orders"' in page and b'data-table="sales.refunds"' in page
    status, css = _get(runner.url("/static/floe/floe.css"))
    assert status == 200 and css.startswith(b"/* Floe")
    _static_files_are_hashed_compressed_and_cached(runner, page)
    # the overview's charts: the partial plotly.js bundle, a static file like the others
    status, overview = _get(runner.url("/catalogs/local/namespaces/sales/tables/orders/"))
    assert status == 200 and re.search(
        rb'data-plotly="/static/floe/plotly-partial\.min\.[0-9a-f]{12}\.js"', overview), overview
    _static_files_are_hashed_compressed_and_cached(runner, overview)

    token = _token(runner)
    status, created = _post_json(runner.url("/api/tasks/"), {"kind": "refresh_table_stats"}, token)
    assert status == 201 and created["state"] == "QUEUED"

    def finished() -> dict[str, Any] | None:
        body = json.loads(_get(runner.url(f"/api/tasks/{created['id']}/"), token)[1])
        return body if body["state"] in ("SUCCEEDED", "FAILED") else None

    run = _wait_for(finished, 60, "the worker to finish the task", runner)
    assert run["state"] == "SUCCEEDED", run
    assert run["progress"] == 100 and run["result"]["tables"] == 2
    assert run["result"]["totals"]["records"] == 157

    web, worker = runner.child_pid("web"), runner.child_pid("worker")
    runner.proc.send_signal(signal.SIGINT)
    assert runner.proc.wait(timeout=60) == 0, runner.output()
    assert not _alive(web) and not _alive(worker)
    assert not _serving(runner)
    assert "SIGINT received; stopping" in runner.output()


def test_sigterm_stops_both_too(runner: Runner) -> None:
    _wait_for(lambda: _serving(runner), STARTUP_TIMEOUT, "HTTP 200 on /", runner)
    assert "Floe: catalog 'prod' cannot be used:" in runner.output()  # named, and served on
    _wait_for(lambda: "floe@" in runner.output() and " ready." in runner.output(), 60, "the worker", runner)
    web, worker = runner.child_pid("web"), runner.child_pid("worker")
    runner.proc.send_signal(signal.SIGTERM)
    assert runner.proc.wait(timeout=60) == 0, runner.output()
    assert not _alive(web) and not _alive(worker)


def test_when_the_worker_dies_the_web_server_is_stopped_and_the_exit_is_non_zero(runner: Runner) -> None:
    _wait_for(lambda: _serving(runner), STARTUP_TIMEOUT, "HTTP 200 on /", runner)
    web, worker = runner.child_pid("web"), runner.child_pid("worker")
    os.killpg(worker, signal.SIGKILL)  # the worker and its pool process
    assert runner.proc.wait(timeout=60) == 1, runner.output()
    assert "worker exited with status -9" in runner.output()
    assert not _alive(web)
    assert not _serving(runner)


def test_a_catalog_file_that_does_not_parse_stops_the_runner_naming_it(tmp_path: Path) -> None:
    config = tmp_path / "catalogs.toml"
    config.write_text('[catalogs.prod\ntype = "sql"\n')  # not TOML: which catalogs it names
    # cannot be known
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FLOE_", "DJANGO_", "CELERY_"))}
    env.pop("DATABASE_URL", None)
    env.update(FLOE_VAR_DIR=str(tmp_path / "var"), FLOE_WAREHOUSE=str(tmp_path),
               FLOE_CATALOGS=str(config), FLOE_PORT=str(_free_port()))
    done = subprocess.run([sys.executable, "-m", "explorer.run"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=STARTUP_TIMEOUT)
    assert done.returncode == 2, done.stderr
    assert f"{config}: not a valid TOML file" in done.stderr
    assert "started web" not in done.stderr
