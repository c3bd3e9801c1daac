"""Maintenance policies (issue 22, part 3, first slice): stored only when every field holds
(a 400 naming the field, nothing stored: an impossible schedule, a threshold out of range, a
pattern matching nothing), pause and resume, and what each would do now, table by table, from
the recorded health (the nearest policy of an action wins)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from explorer.maintenance.metrics import metrics_sweep
from explorer.models import MaintenancePolicy
from tests.explorer.tasks_support import client_for, load, make_table, user_with

pytestmark = pytest.mark.django_db


@pytest.fixture
def lake(tmp_path: Path, settings: Any) -> Path:
    root = tmp_path / "warehouse"
    make_table(root, "web", "events")  # nine KiB files: all small
    make_table(root, "web.logs", "sessions", appends=1, partition_by="")
    make_table(root, "sales", "orders", appends=2, partition_by="")
    settings.FLOE_WAREHOUSE = str(root)
    assert metrics_sweep().recorded == 3
    return root


GOOD = {"name": "web-compact", "action": "compact", "catalog": "local", "tables": "web.*",
        "params": {"small_file_ratio": 0.5}, "every_seconds": 3600, "window": "01:00-05:00"}


@pytest.mark.parametrize(("change", "field"), [
    ({"name": "Bad Name"}, "name"),
    ({"action": "vacuum"}, "action"),
    ({"catalog": "nowhere"}, "catalog"),
    ({"tables": "web/../x"}, "tables"),
    ({"tables": "nothing.*"}, "tables"),  # matches no table
    ({"params": {"small_file_ratio": 1.5}}, "params.small_file_ratio"),  # out of range
    ({"params": {"small_file_ratio": 0}}, "params.small_file_ratio"),
    ({"params": {}}, "params.small_file_ratio"),  # no threshold
    ({"params": {"small_file_ratio": 0.5, "spin": 1}}, "params.spin"),
    ({"params": {"small_file_ratio": "half"}}, "params.small_file_ratio"),
    ({"every_seconds": 5}, "every_seconds"),  # impossible schedules
    ({"every_seconds": 10**9}, "every_seconds"),
    ({"every_seconds": "hourly"}, "every_seconds"),
    ({"window": "25:00-05:00"}, "window"),
    ({"window": "01:00-01:00"}, "window"),
    ({"window": "nightly"}, "window"),
    ({"action": "remove_orphan_files", "params": {"older_than_days": 0.5}},
     "params.older_than_days"),
    ({"action": "rewrite_manifests", "params": {"manifests": 1}}, "params.manifests"),
])
def test_bad_input_is_a_400_naming_the_field_and_nothing_is_stored(
        lake: Path, change: dict[str, Any], field: str) -> None:
    api = client_for(user_with("ann", "admin"))
    answer = api.post("/api/policies/", {**GOOD, **change}, format="json")
    assert answer.status_code == 400, answer.content
    assert answer.json()["param"] == field, answer.json()
    assert not MaintenancePolicy.objects.exists()


def test_a_policy_needs_the_admin_role_on_its_catalog(lake: Path) -> None:
    answer = client_for(user_with("mia", "maintainer")).post("/api/policies/", GOOD,
                                                             format="json")
    assert answer.status_code == 403 and not MaintenancePolicy.objects.exists()
    assert client_for(None).post("/api/policies/", GOOD, format="json").status_code in (
        401, 403)


def test_what_the_policies_would_do_now_the_nearest_winning(lake: Path) -> None:
    api = client_for(user_with("ann", "admin"))
    created = api.post("/api/policies/", GOOD, format="json")
    assert created.status_code == 201, created.content
    assert created.json()["window"] == "01:00-05:00"
    # a nearer policy for one table: a threshold its small files do not pass
    near = api.post("/api/policies/", {**GOOD, "name": "events-lenient", "tables": "web.events",
                                       "params": {"small_file_ratio": 1.0 - 1e-9}},
                    format="json")
    assert near.status_code == 201, near.content
    every = {"name": "everywhere-manifests", "action": "rewrite_manifests", "tables": "*",
             "params": {"manifests": 2}}
    refused = api.post("/api/policies/", every, format="json")  # catalog "*": every catalog
    assert refused.status_code == 403  # ann administers catalog local only
    assert api.post("/api/policies/", {**every, "catalog": "local"},
                    format="json").status_code == 201
    plan = {(d["table"], d["action"]): d for d in api.get("/api/policies/preview/").json()}
    assert plan[("events", "compact")]["policy"] == "events-lenient"
    assert plan[("events", "compact")]["due"] is True  # 100% of its files are small
    assert plan[("sessions", "compact")] == {
        "policy": "web-compact", "action": "compact", "catalog": "local", "namespace": "web.logs",
        "table": "sessions", "due": True, "reason": "small files 100% > 50%"}
    assert ("orders", "compact") not in plan  # no compaction policy covers sales.*
    assert plan[("orders", "rewrite_manifests")]["due"] is True  # two appends: two manifests
    assert plan[("sessions", "rewrite_manifests")]["due"] is False
    one = api.get(f"/api/policies/{created.json()['id']}/preview/").json()
    assert [(d["table"], d["due"]) for d in one] == [("sessions", True)]
    # paused: it says so, and would do nothing
    assert api.post(f"/api/policies/{created.json()['id']}/pause/").json()["paused"] is True
    (paused,) = api.get(f"/api/policies/{created.json()['id']}/preview/").json()
    assert paused["due"] is False and paused["reason"].startswith("paused (small files")
    assert api.post(f"/api/policies/{created.json()['id']}/resume/").json()["paused"] is False
    viewer = client_for(user_with("vic", "viewer"))
    assert viewer.post(f"/api/policies/{created.json()['id']}/pause/").status_code == 403
    assert [p["name"] for p in viewer.get("/api/policies/").json()["results"]] == [
        "events-lenient", "everywhere-manifests", "web-compact"]


def test_a_tables_own_properties_refine_the_policy_that_covers_it(lake: Path) -> None:
    api = client_for(user_with("ann", "admin"))
    assert api.post("/api/policies/", GOOD, format="json").status_code == 201
    # web.events' own threshold: its 100% small files are not above 1 (nothing to do there)
    load(lake, "web", "events").set_properties({"floe.policy.compact.small-file-ratio": "1"})
    load(lake, "web.logs", "sessions").set_properties({"floe.policy.compact.enabled": "false"})
    load(lake, "sales", "orders").set_properties(
        {"floe.policy.compact.small-file-ratio": "lots"})
    assert metrics_sweep().recorded == 3
    plan = {d["table"]: d for d in api.get("/api/policies/preview/").json()}
    assert (plan["events"]["due"], plan["events"]["reason"]) == (False, "small files 100% ≤ 100%")
    assert (plan["sessions"]["due"], plan["sessions"]["reason"]) == (
        False, "the table's floe.policy.compact.enabled is false")
    assert "orders" not in plan  # web.* does not cover sales.orders
    sales = {**GOOD, "name": "sales-compact", "tables": "sales.*"}
    assert api.post("/api/policies/", sales, format="json").status_code == 201
    plan = {d["table"]: d for d in api.get("/api/policies/preview/").json()}
    assert plan["orders"]["due"] is False
    assert plan["orders"]["reason"].startswith(
        "the table's floe.policy.compact.small-file-ratio is not used")
