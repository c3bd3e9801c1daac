"""Fixtures of the API tests: a fresh rate-limit window for every test; ``submit`` posts a task
and runs it in this process (Celery's eager mode) when the request's transaction commits."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from explorer import celery_app


@pytest.fixture(autouse=True)
def _fresh_rate_limit() -> Iterator[None]:
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def submit(django_capture_on_commit_callbacks: Any) -> Iterator[Callable[..., Any]]:
    """``submit(client, kind, **params)``: POST /api/tasks/ and run what it queued, in-process;
    returns the response."""
    celery_app.conf.task_always_eager = True

    def post(client: APIClient, kind: str, **params: Any) -> Any:
        with django_capture_on_commit_callbacks(execute=True):
            return client.post("/api/tasks/", {"kind": kind, "params": params}, format="json")

    yield post
    celery_app.conf.task_always_eager = False
