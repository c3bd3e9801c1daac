"""A long-running process of the site does not grow with the work it does: a Celery pool
process keeps nothing of a finished task (explorer.celery), and pyarrow's buffers come from
the allocator FLOE_ARROW_MEMORY_POOL names (explorer.apps; the C library's by default). The
memory of a whole site under load is measured by ``benchmarks/load.py`` and per allocator by
``benchmarks/worker_memory.py``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from celery.app.trace import build_tracer

from explorer import celery_app
from explorer.cache import CACHE
from floe.catalog.base import METADATA_CACHE
from floe.catalog.filesystem import FileSystemCatalog
from floe.scan import plan_files
from floe.maintenance.compaction_plan import live_data_files
from floe.scan.manifests import DEFAULT_CACHE
from tests.explorer.tasks_support import make_table

ROOT = Path(__file__).resolve().parents[2]


def _held() -> dict[str, int]:
    return {"metadata": len(METADATA_CACHE), "floe manifests": DEFAULT_CACHE.weight,
            "explorer live": CACHE.live.weight}


@pytest.fixture
def reading_task(tmp_path: Path) -> Any:
    """A task that reads a table as maintenance does: its metadata, its manifests through
    floe's cache and the explorer's."""
    make_table(tmp_path, "ns", "t")
    catalog = FileSystemCatalog("local", str(tmp_path))

    @celery_app.task(name=f"tests.reading_task.{os.getpid()}", ignore_result=True)
    def read() -> int:
        table = catalog.load_table("ns.t")
        files = live_data_files(table.io, table.metadata.current_snapshot())
        plan_files(table.io, table.metadata, cache=CACHE.live)
        return len(files)

    return read


def test_a_pool_process_keeps_nothing_of_a_finished_task(reading_task: Any) -> None:
    """Traced as a worker's pool process runs a message (not eagerly): once the task has
    finished, its metadata and manifests are no longer held; run eagerly, in the caller's
    process, the caller's caches keep them."""
    reading_task.apply()  # eager: the caches stay filled
    filled = _held()
    assert all(filled.values()), filled

    trace = build_tracer(reading_task.name, reading_task, eager=False, app=celery_app)
    result = trace("id-1", (), {}, {"delivery_info": {}})
    assert result.retval > 0, result
    assert _held() == {"metadata": 0, "floe manifests": 0, "explorer live": 0}


def _allocator(tmp_path: Path, first: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("FLOE_", "DATABASE_URL", "CELERY_", "ARROW_"))}
    code = (f"import {first}; import django; django.setup(); import pyarrow as pa; "
            "print(pa.default_memory_pool().backend_name)")
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=120,
                          env={**base, "DJANGO_SETTINGS_MODULE": "explorer.settings",
                               "FLOE_VAR_DIR": str(tmp_path), **env})


@pytest.mark.parametrize("first", ["os", "pyarrow"])
def test_the_site_allocates_arrow_buffers_with_the_c_library_unless_told_otherwise(
        tmp_path: Path, first: str) -> None:
    """Whether pyarrow was imported before Django set up (the web) or after (a worker's
    pool process)."""
    done = _allocator(tmp_path, first)
    assert (done.returncode, done.stdout.strip()) == (0, "system"), done.stderr
    done = _allocator(tmp_path, first, FLOE_ARROW_MEMORY_POOL="mimalloc")
    assert (done.returncode, done.stdout.strip()) == (0, "mimalloc"), done.stderr
    done = _allocator(tmp_path, first, FLOE_ARROW_MEMORY_POOL="tcmalloc")
    assert done.returncode != 0
    assert ("FLOE_ARROW_MEMORY_POOL='tcmalloc' is not one of system, mimalloc, jemalloc"
            in done.stderr)
