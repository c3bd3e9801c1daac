"""The Iceberg REST catalog served under ``/iceberg/`` (a client's ``uri`` is
``http://HOST:PORT/iceberg``): thin views over :mod:`floe.rest_server` that authenticate
(:mod:`api.iceberg_auth`), authorise by role (:func:`explorer.rest.services.authorize`), call
the protocol core, audit what changed and log every request with its user and table.
Exempt from CSRF (clients send tokens, never cookies: a session alone authenticates nothing
here).
"""

from __future__ import annotations

import logging
import time
import urllib.parse
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from api import iceberg_auth
from explorer.rest import services as services_rest
from floe.rest_server import NotAuthorized, Request, Response, RestError, json_response

__all__ = ["endpoint", "oauth_tokens", "openapi"]

log = logging.getLogger("explorer.iceberg")

#: Where the protocol is mounted (explorer/urls.py).
MOUNT = "/iceberg"


def _http(response: Response) -> HttpResponse:
    out = HttpResponse(response.body, status=response.status)
    if "Content-Type" not in response.headers:
        del out["Content-Type"]
    for name, value in response.headers.items():
        out[name] = value
    return out


def _refusal(error: RestError) -> Response:
    r = json_response(error.to_json(), error.status)
    r.error = error
    return r


def _path(request: HttpRequest, rest: str) -> tuple[str, bool]:
    """The path below the mount as the client sent it (percent-encoded) when the server
    passes it on (waitress: REQUEST_URI, gunicorn: RAW_URI), else the decoded one."""
    decoded = "/" + rest
    raw = request.META.get("REQUEST_URI") or request.META.get("RAW_URI")
    if raw:
        raw = raw.split("?", 1)[0]
        if "://" in raw:  # an absolute-form request target
            raw = "/" + raw.split("://", 1)[1].partition("/")[2]
        mount = request.META.get("SCRIPT_NAME", "").rstrip("/") + MOUNT
        if raw.startswith(mount + "/"):
            below = raw[len(mount):]
            if urllib.parse.unquote(below) == decoded:
                return below, False
    return decoded, True


def _headers(request: HttpRequest) -> dict[str, str]:
    return {k.lower(): v for k, v in request.headers.items()}


def _read_body(request: HttpRequest, limit: int) -> bytes | None:
    """The body, or None when it is larger than ``limit`` (not read further)."""
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    if declared > limit:
        return None
    data = request.read(limit + 1)
    return None if len(data) > limit else data


@csrf_exempt
def endpoint(request: HttpRequest, rest: str = "") -> HttpResponse:
    """Every route of the protocol but the OAuth2 endpoint."""
    started, clock = timezone.now(), time.monotonic()
    server = services_rest.rest_server()
    headers = _headers(request)
    engine = services_rest.engine_of(headers)
    path, decoded = _path(request, rest)
    user: Any = None
    try:
        user = iceberg_auth.bearer_user(headers.get("authorization"))
    except NotAuthorized as e:
        response = _refusal(e)
        response.headers["WWW-Authenticate"] = 'Bearer realm="floe"'
    else:
        body = _read_body(request, server.max_body_bytes)
        if body is None:
            response = server.too_large()
        else:
            query = {k: request.GET.get(k, "") for k in request.GET}
            response = server.handle(
                Request(request.method or "GET", path, query, headers, body, str(user.pk),
                        path_decoded=decoded),
                authorize=lambda op: services_rest.authorize(user, op))
    if response.changes and user is not None and response.operation is not None:
        try:
            services_rest.audit_changes(user=user, engine=engine, operation=response.operation,
                                        changes=response.changes, started_at=started,
                                        finished_at=timezone.now())
        except Exception:  # the change is made: answer it, and say the audit failed
            log.exception("could not record the audit entries of %s", response.operation)
    _log(request, path, user, engine, response, time.monotonic() - clock)
    return _http(response)


def _log(request: HttpRequest, path: str, user: Any, engine: str, response: Response,
         seconds: float) -> None:
    op = response.operation
    where = ""
    if op is not None:
        where = op.catalog or ""
        if op.namespace is not None:
            where += ":" + ".".join(op.namespace)
        if op.table is not None:
            where += "." + op.table
    who = user.get_username() if user is not None else "-"
    error = f" {response.error.type}" if response.error is not None else ""
    replay = " (replayed)" if response.replayed else ""
    log.log(logging.WARNING if response.status >= 500 else logging.INFO,
            "iceberg %s %s %s %s -> %d%s%s %.0f ms [%s]", who, request.method,
            op.name if op is not None else path[:200], where or "-", response.status, error,
            replay, seconds * 1000, engine or "-")


def openapi(request: HttpRequest) -> HttpResponse:
    """The OpenAPI document of what ``/iceberg/`` serves (the reference page reads it)."""
    base = request.META.get("SCRIPT_NAME", "").rstrip("/") + MOUNT
    doc = services_rest.rest_server().openapi(server_url=base)
    doc["paths"]["/v1/oauth/tokens"] = {"post": {
        "operationId": "getToken", "tags": ["Iceberg REST catalog"],
        "summary": "An access token for OAuth2 client credentials (client id = user name, "
                   "client secret = an API token; form body or HTTP Basic)",
        "security": [],
        "requestBody": {"required": True, "content": {
            "application/x-www-form-urlencoded": {"schema": {"type": "object", "properties": {
                "grant_type": {"type": "string", "enum": [
                    "client_credentials", "urn:ietf:params:oauth:grant-type:token-exchange"]},
                "client_id": {"type": "string"}, "client_secret": {"type": "string"},
                "subject_token": {"type": "string"}, "scope": {"type": "string"}}}}}},
        "responses": {"200": {"description": "access_token, token_type, expires_in"},
                      "400": {"description": "invalid_request, unsupported_grant_type"},
                      "401": {"description": "invalid_client"}}}}
    doc["components"]["securitySchemes"] = {
        "BearerAuth": {"type": "http", "scheme": "bearer",
                       "description": "an API token, or an access token from getToken"},
        "OAuth2": {"type": "oauth2", "flows": {"clientCredentials": {
            "tokenUrl": base + "/v1/oauth/tokens", "scopes": {"catalog": "the catalog"}}}}}
    doc["security"] = [{"BearerAuth": []}, {"OAuth2": ["catalog"]}]
    return JsonResponse(doc)


@csrf_exempt
def oauth_tokens(request: HttpRequest) -> HttpResponse:
    """``POST /iceberg/v1/oauth/tokens``: OAuth2 client credentials (and token exchange, to
    renew) for an access token (:mod:`api.iceberg_auth`)."""
    no_store = {"Cache-Control": "no-store", "Pragma": "no-cache"}
    if request.method != "POST":
        return JsonResponse({"error": "invalid_request", "error_description": "POST a form"},
                            status=405, headers={"Allow": "POST", **no_store})
    form = {k: request.POST.get(k, "") for k in request.POST}
    grant = form.get("grant_type", "")
    authorization = request.headers.get("Authorization")
    try:
        if grant == "client_credentials":
            answer = iceberg_auth.client_credentials(form, authorization)
        elif grant == "urn:ietf:params:oauth:grant-type:token-exchange":
            answer = iceberg_auth.token_exchange(form, authorization)
        else:
            raise iceberg_auth.OAuthError(
                "unsupported_grant_type" if grant else "invalid_request",
                f"grant_type {grant!r} is not supported (client_credentials, token exchange)"
                if grant else "grant_type is missing")
    except iceberg_auth.OAuthError as e:
        log.info("iceberg oauth %s -> %d %s", form.get("client_id") or "-", e.status, e.error)
        return JsonResponse({"error": e.error, "error_description": e.description},
                            status=e.status, headers=no_store)
    log.info("iceberg oauth %s -> 200 (%s)", form.get("client_id") or "Basic", grant)
    return JsonResponse(answer, headers=no_store)

