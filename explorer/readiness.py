"""The probes a deployment asks (the Dockerfile's HEALTHCHECK, docker-compose, a load balancer):
``/healthz``, the process answers (nothing else is touched), and ``/readyz``, it can serve:
the database answers, the broker answers and every configured catalog is reachable.

They are answered by :class:`ProbeMiddleware`, first of the site's middleware, so no other
middleware sees them: a probe comes from the machine itself or the orchestrator, under a host
name that is not one of FLOE_ALLOWED_HOSTS, without a session, over plain HTTP. Each check of
``/readyz`` runs in a thread of its own and has FLOE_READY_TIMEOUT seconds; the answer names
each part, ``"ok"`` or why not, without a secret (passwords in URLs are redacted).
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse

from floe.catalog.config import redact

OK = "ok"
HEALTH_PATH = "/healthz"
READY_PATH = "/readyz"


def database_status() -> str:
    """``SELECT 1`` on a connection of its own, closed after (the check runs in a thread
    that is not reused, whose connection Django would otherwise keep)."""
    from django.db import connections

    connection = connections["default"]
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    finally:
        connection.close()
    return OK


def broker_status() -> str:
    """A new connection to the broker (not the app's pool), and a PING where the transport
    has one (Redis)."""
    from explorer.celery import app

    timeout = settings.FLOE_READY_TIMEOUT
    with app.connection_for_write(connect_timeout=timeout, transport_options={
            "socket_timeout": timeout, "socket_connect_timeout": timeout}) as connection:
        connection.ensure_connection(max_retries=0)
        client = getattr(connection.default_channel, "client", None)
        if client is not None and hasattr(client, "ping"):
            client.ping()
    return OK


def catalog_status(name: str) -> str:
    """The catalog is configured without a problem and lists its namespaces."""
    from explorer.catalogs import catalog_call, catalog_get, catalog_info

    problem = catalog_info(name).problem
    if problem is not None:
        return f"misconfigured: {problem}"
    catalog = catalog_get(name)
    with catalog_call(catalog):
        catalog.list_namespaces()
    return OK


def readiness() -> tuple[bool, dict[str, Any]]:
    """Whether the site can serve, and the answer naming each part: ``database``,
    ``broker`` and ``catalogs`` (each catalog by name), ``"ok"`` or why not."""
    from explorer.catalogs import catalog_names

    checks: dict[tuple[str, ...], Callable[[], str]] = {
        ("database",): database_status, ("broker",): broker_status}
    try:
        names = catalog_names()
    except Exception as exc:  # noqa: BLE001 - the catalog file itself is unreadable
        catalogs_problem: str | None = f"unreadable: {_why(exc)}"
    else:
        catalogs_problem = None
        for name in names:
            checks[("catalogs", name)] = lambda name=name: catalog_status(name)
    results = _run_bounded(checks, settings.FLOE_READY_TIMEOUT)
    body: dict[str, Any] = {"database": results[("database",)],
                            "broker": results[("broker",)],
                            "catalogs": catalogs_problem or {
                                key[1]: value for key, value in results.items()
                                if key[0] == "catalogs"}}
    ready = catalogs_problem is None and all(v == OK for v in results.values())
    return ready, {"status": "ready" if ready else "not ready", **body}


#: Checks still running, by part: a probe finds the one an earlier probe started (a hanging
#: catalog keeps one thread, not one per probe).
_running: dict[tuple[str, ...], concurrent.futures.Future[str]] = {}
_running_lock = threading.Lock()


def _check(key: tuple[str, ...], check: Callable[[], str]) -> concurrent.futures.Future[str]:
    """The running check of ``key``, or a new one on a thread of its own."""
    with _running_lock:
        future = _running.get(key)
        if future is not None and not future.done():
            return future
        future = _running[key] = concurrent.futures.Future()

    def run() -> None:
        future.set_running_or_notify_cancel()
        try:
            future.set_result(check())
        except BaseException as exc:  # noqa: BLE001 - reported in the answer
            future.set_exception(exc)

    threading.Thread(target=run, name=f"floe-readyz-{'-'.join(key)}", daemon=True).start()
    return future


def _run_bounded(checks: dict[tuple[str, ...], Callable[[], str]],
                 timeout: float) -> dict[tuple[str, ...], str]:
    """Every check at once, each in its own thread; one still running after ``timeout``
    seconds is reported as such and left to finish on its own: until it does, later probes
    wait for it instead of starting another (at most one thread per part)."""
    futures = {key: _check(key, check) for key, check in checks.items()}
    concurrent.futures.wait(futures.values(), timeout=timeout)
    results = {}
    for key, future in futures.items():
        if not future.done():
            results[key] = f"unreachable: no answer within {timeout:g} s"
        elif (exc := future.exception()) is not None:
            results[key] = f"unreachable: {_why(exc)}"
        else:
            results[key] = future.result()
    return results


def _why(exc: BaseException) -> str:
    text = " ".join(str(exc).split())[:300] or type(exc).__name__
    return redact(text)


def health_response(request: HttpRequest) -> HttpResponse:
    return _no_store(JsonResponse({"status": "ok"}))


def ready_response(request: HttpRequest) -> HttpResponse:
    ready, body = readiness()
    return _no_store(JsonResponse(body, status=200 if ready else 503))


def _no_store(response: HttpResponse) -> HttpResponse:
    response["Cache-Control"] = "no-store"
    return response


PROBES: dict[str, Callable[[HttpRequest], HttpResponse]] = {
    HEALTH_PATH: health_response, READY_PATH: ready_response}


class ProbeMiddleware:
    """Answers GET and HEAD of the probe paths before any other middleware (no host check,
    no redirect, no session, no login)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        probe = PROBES.get(request.path_info)
        if probe is not None and request.method in ("GET", "HEAD"):
            return probe(request)
        return self.get_response(request)
