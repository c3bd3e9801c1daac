"""Each kind of task is declared once (explorer.tasks.kinds), and what the pages, the API and
the worker do with a kind is what its declaration says: its runner, its sentence, its form,
its preview."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from explorer.models import TaskRun
from explorer.tasks import kinds
from explorer.tasks.kinds import KINDS, action_forms
from tests.explorer.tasks_support import client_for, make_table, user_with


def test_every_kind_is_declared_once_with_a_runner_and_a_sentence() -> None:
    assert Counter(s.kind for s in kinds._DECLARED) == Counter(TaskRun.Kind.values)
    for kind, spec in KINDS.items():
        assert spec.kind == kind
        assert callable(spec.runner), kind
        said = spec.say({}, {})  # a result and parameters with nothing in them still read
        assert isinstance(said, str) and said.strip(), kind


def test_the_forms_are_the_declared_ones_with_a_preview_button_where_a_preview_is() -> None:
    forms = action_forms()
    assert [f.kind for f in forms] == [k for k, s in KINDS.items() if s.form is not None]
    for form in forms:
        assert KINDS[form.kind].form is form
        assert form.preview == (KINDS[form.kind].preview is not None), form.kind


@pytest.mark.django_db
def test_the_preview_endpoint_accepts_exactly_the_kinds_declared_with_a_preview(
        tmp_path: Path, settings: Any) -> None:
    make_table(tmp_path, "ns")
    settings.FLOE_WAREHOUSE = str(tmp_path)
    api = client_for(user_with("mia", "maintainer"))
    accepted = set()
    for kind in TaskRun.Kind.values:
        response = api.post("/api/tasks/preview/", {"kind": kind, "params": {
            "namespace": "ns", "table": "events"}}, format="json")
        refused = response.status_code == 400 and "has no preview" in " ".join(
            response.json().get("kind", []))
        if not refused:  # a preview, or a parameter of one refused (evolve needs changes)
            assert response.status_code in (200, 400), (kind, response.content)
            accepted.add(kind)
    declared = {k for k, s in KINDS.items() if s.preview is not None}
    assert declared == {"evolve", "delete_rows", "compact", "rewrite_manifests",
                        "compute_partition_stats"}
    assert accepted == declared
    assert not TaskRun.objects.exists()
