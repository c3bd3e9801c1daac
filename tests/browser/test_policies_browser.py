"""A policy's page in a real browser (issue 22): the policy, what it would do now (from the
recorded health) and its history, the run it made leading to its task page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from explorer import celery_app
from explorer.maintenance.autopilot import policies_tick
from explorer.maintenance.metrics import metrics_sweep
from explorer.models import MaintenancePolicy, TaskRun
from tests.explorer.tasks_support import make_table

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_policys_page_shows_what_it_would_do_and_what_it_did(
        page: Any, live_server: Any, tmp_path: Path, settings: Any) -> None:
    lake = tmp_path / "warehouse"
    make_table(lake, "web", "events")  # nine small files
    make_table(lake, "sales", "orders", appends=1, partition_by="")
    settings.FLOE_WAREHOUSE = str(lake)
    settings.FLOE_ALLOW_ANONYMOUS = True
    settings.FLOE_TASK_HEARTBEAT_SECONDS = 0
    metrics_sweep()
    MaintenancePolicy.objects.create(
        name="web-compact", action="compact", catalog="local", tables="web.*",
        params={"small_file_ratio": 0.5, "min_input_files": 2}, every_seconds=3600)
    site = str(live_server.url)
    page.goto(site + "/policies/")
    row = page.locator('#policy-decisions tr[data-table="web.events"]')
    assert row.get_attribute("data-due") == "true"
    assert "small files 100% > 50%" in row.inner_text()
    assert page.locator("#policy-runs-none").is_visible()

    celery_app.conf.task_always_eager = True  # the run is made in this process
    try:
        assert policies_tick().submitted == 1
    finally:
        celery_app.conf.task_always_eager = False
    (run,) = TaskRun.objects.filter(policy__name="web-compact")
    page.goto(site + "/policies/")
    done = page.locator(f'#policy-runs tr[data-run="{run.pk}"]')
    assert done.get_attribute("data-state") == "SUCCEEDED"
    assert done.locator('[data-col="outcome"]').inner_text().startswith("Compacted 9 files")
    with page.expect_navigation():
        done.locator("a").first.click()
    assert page.url.endswith(f"/tasks/{run.pk}/")
    assert page.locator("#nav-policies").is_visible()
