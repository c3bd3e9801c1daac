"""Fixtures of the explorer tests: a real Celery worker (session-scoped, SQLite broker; a Redis
variant where Redis runs) and the test process pointed at it, and a fresh rate-limit window
for every test."""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.cache import cache
from kombu import Queue as KombuQueue
from kombu import pools as kombu_pools

from explorer import celery_app
from explorer.models import TaskRun
from tests.explorer.tasks_support import Worker, redis_url, wait_for, worker_env


@pytest.fixture
def eager(django_capture_on_commit_callbacks: Any) -> Iterator[Any]:
    """``eager(fn)``: call fn and run the tasks it queued, in this process (Celery's eager
    mode, when the request's transaction commits)."""
    celery_app.conf.task_always_eager = True

    def call(fn: Any) -> Any:
        with django_capture_on_commit_callbacks(execute=True):
            return fn()

    yield call
    celery_app.conf.task_always_eager = False


@pytest.fixture(autouse=True)
def _fresh_rate_limit() -> Iterator[None]:
    cache.clear()
    yield
    cache.clear()


def point_celery_at(broker_url: str, queue: str) -> None:
    """Publish from this process to ``broker_url``'s ``queue`` (connection pools dropped, so a
    change of broker takes effect)."""
    conf = celery_app.conf
    if conf.broker_url != broker_url:
        if celery_app._pool is not None:
            celery_app._pool.force_close_all()
            celery_app._pool = None
        celery_app.amqp._producer_pool = None
        # kombu keeps producer and connection pools per broker in module-wide registries;
        # coming back to a broker used before would find its (closed) pools there
        kombu_pools.reset()
        conf.broker_url = broker_url
    conf.task_default_queue = queue
    conf.task_always_eager = False
    # Declaring the queue connects now; kombu's SQL models, configured on first use, warn
    # under SQLAlchemy 2.1 (their "noload" relationship), which the tests' filters would
    # turn into an error in whichever test published first.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with celery_app.connection_for_write() as conn:
            KombuQueue(queue).bind(conn.default_channel).declare()


def _database(django_db_setup: Any, django_db_blocker: Any) -> str:
    from django.conf import settings

    name = str(settings.DATABASES["default"]["NAME"])
    assert name and "memory" not in name and Path(name).parent.is_dir(), (
        f"the test database must be a file a worker process can open, not {name!r}")
    return name


@pytest.fixture(scope="session")
def worker_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The warehouse (and beside it the catalog file) every test worker serves."""
    root = tmp_path_factory.mktemp("worker-warehouse")
    (root / "warehouse").mkdir()
    (root / "catalogs.toml").write_text("")
    return root


def _start(root: Path, shared: Path, database: str, broker: str) -> Worker:
    queue = f"floe-test-{uuid.uuid4().hex[:10]}"
    env = worker_env(root, database=database, broker_url=broker, queue=queue,
                     warehouse=shared / "warehouse", catalogs=shared / "catalogs.toml")
    return Worker(broker, queue, root, env).start()


@pytest.fixture(scope="session")
def worker(tmp_path_factory: pytest.TempPathFactory, worker_warehouse: Path,
           django_db_setup: Any, django_db_blocker: Any) -> Iterator[Worker]:
    """``celery -A explorer worker --beat`` on kombu's SQLAlchemy transport (a SQLite file),
    with its own var directory, serving ``worker_warehouse``."""
    root = tmp_path_factory.mktemp("worker-sqlite")
    database = _database(django_db_setup, django_db_blocker)
    w = _start(root, worker_warehouse, database, f"sqla+sqlite:///{root / 'broker.sqlite3'}")
    yield w
    w.stop()


@pytest.fixture(scope="session")
def redis_worker(tmp_path_factory: pytest.TempPathFactory, worker_warehouse: Path,
                 django_db_setup: Any, django_db_blocker: Any) -> Iterator[Worker]:
    import redis  # noqa: F401 - kombu's Redis transport needs the client (the dev extra)
    url = redis_url()
    if url is None:
        pytest.skip("Redis is not running on 127.0.0.1:6379 and cannot be started here")
    root = tmp_path_factory.mktemp("worker-redis")
    w = _start(root, worker_warehouse, _database(django_db_setup, django_db_blocker), url)
    yield w
    w.stop()


@pytest.fixture(params=["sqlite", "redis"])
def any_worker(request: pytest.FixtureRequest) -> Worker:
    """The SQLite-broker worker, and the Redis one."""
    w: Worker = request.getfixturevalue("worker" if request.param == "sqlite"
                                        else "redis_worker")
    return w


def _use(w: Worker, settings: Any) -> Iterator[Worker]:
    settings.FLOE_WAREHOUSE = str(w.warehouse)
    settings.FLOE_CATALOGS = str(w.catalogs_file)
    settings.FLOE_EXPORT_DIR = w.export_dir
    point_celery_at(w.broker_url, w.queue)
    yield w
    # Nothing of this test may still run when the next one starts (its database is flushed).
    wait_for(lambda: not TaskRun.objects.filter(
        state__in=(TaskRun.State.QUEUED, TaskRun.State.RUNNING)).exists(), 120,
        "this test's task runs to finish", interval=0.2, on_timeout=lambda: "\n" + w.log_tail())


@pytest.fixture
def on_worker(worker: Worker, settings: Any) -> Iterator[Worker]:
    """This test's tasks run on the SQLite-broker worker (use with
    ``django_db(transaction=True)``)."""
    yield from _use(worker, settings)


@pytest.fixture
def on_any_worker(any_worker: Worker, settings: Any) -> Iterator[Worker]:
    yield from _use(any_worker, settings)
