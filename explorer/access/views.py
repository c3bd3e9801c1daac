"""Pages about access: ``/access/`` tells anyone their role on each catalog and how to get
more (who the admins are, how the first admin is made); ``/access/manage/`` is where admins
create and deactivate users, grant and revoke roles per catalog and create or revoke API
tokens (the key shown once).

Thin: every decision is :mod:`explorer.access.permissions`' (non-admins get 403 on every page and
POST of ``/access/manage/``), every change is a service of :mod:`explorer.access.services` (the same
``grant_add`` / ``grant_remove`` as ``/api/grants/``, the same grant as ``manage.py
floe_grant``), which writes the audit entry. Forms carry Django's CSRF token.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.http import require_GET, require_POST

from explorer.access import permissions, services
from explorer.access import selectors as selectors_access
from explorer.models import CatalogGrant
from floe.errors import ValidationError


@require_GET
def access_mine(request: HttpRequest) -> HttpResponse:
    """Who you are, your role on each catalog, what it allows, whom to ask for more."""
    user = request.user
    readable = permissions.can_read(user=user)
    return render(request, "explorer/access.html", {
        "rows": selectors_access.access_of(user=user) if readable else [],
        "default_role": settings.FLOE_DEFAULT_ROLE,
        "allow_anonymous": settings.FLOE_ALLOW_ANONYMOUS,
        "can_administer_any": permissions.can_administer_any(user=user),
        "roles": selectors_access.ROLE_ALLOWS,
        "first_admin": selectors_access.FIRST_ADMIN.format(catalog="CATALOG"),
    })


def _manage_page(request: HttpRequest, *, status: int = 200, **more: Any) -> HttpResponse:
    permissions.require_administer_any(user=request.user)
    response = render(request, "explorer/access_manage.html", {
        "users": selectors_access.users_list(user=request.user),
        "grant_catalogs": selectors_access.grant_catalogs(user=request.user),
        "grant_roles": CatalogGrant.Role.values,
        "can_manage_users": permissions.can_manage_users(user=request.user),
        "default_role": settings.FLOE_DEFAULT_ROLE, "values": {}, "error": None, **more},
        status=status)
    response["Cache-Control"] = "no-store"  # a new token's key is on it once
    return response


@require_GET
def access_manage(request: HttpRequest) -> HttpResponse:
    """Users, their roles per catalog and their API tokens (admins only: 403 for others,
    the login page for anonymous visitors)."""
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    return _manage_page(request)


def _refused(request: HttpRequest, form: str, exc: ValidationError) -> HttpResponse:
    """The page again (400) with the message next to the form's field and what was typed
    (never the password)."""
    values = {k: v for k, v in request.POST.items() if k not in ("password",
                                                               "csrfmiddlewaretoken")}
    return _manage_page(request, status=400, values=values, error={
        "form": form, "param": getattr(exc, "param", ""), "message": str(exc)})


def _done(request: HttpRequest, text: str) -> HttpResponse:
    messages.success(request, text)
    return redirect("access:manage")


@require_POST
def user_create(request: HttpRequest) -> HttpResponse:
    try:
        user = services.user_create(actor=request.user, username=request.POST.get("username"),
                                    password=request.POST.get("password"))
    except ValidationError as exc:
        return _refused(request, "user", exc)
    return _done(request, f"User {user.get_username()} created. Grant them a role below.")


@require_POST
def user_active(request: HttpRequest, pk: int) -> HttpResponse:
    active = request.POST.get("active") == "1"
    try:
        user = services.user_active_set(actor=request.user, user_id=pk, active=active)
    except ValidationError as exc:
        return _refused(request, f"active-{pk}", exc)
    return _done(request, f"{user.get_username()} is {'active' if active else 'deactivated'}.")


@require_POST
def token_create(request: HttpRequest, pk: int) -> HttpResponse:
    """The new key is on this response only (not a redirect: it is in no URL, no session)."""
    try:
        key = services.token_create(actor=request.user, user_id=pk)
    except ValidationError as exc:
        return _refused(request, f"token-{pk}", exc)
    owner = next(u for u in selectors_access.users_list(user=request.user) if u.pk == pk)
    return _manage_page(request, new_token={"user": owner.username, "key": key})


@require_POST
def token_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    services.token_revoke(actor=request.user, user_id=pk)
    return _done(request, "API token revoked.")


@require_POST
def grant_add(request: HttpRequest) -> HttpResponse:
    try:
        grant = services.grant_add(actor=request.user, username=request.POST.get("user"),
                                   catalog=request.POST.get("catalog"),
                                   role=request.POST.get("role"))
    except ValidationError as exc:
        return _refused(request, "grant", exc)
    where = "every catalog" if grant.catalog == CatalogGrant.EVERY_CATALOG \
        else f"catalog {grant.catalog}"
    return _done(request, f"{grant.user.get_username()} is {grant.role} on {where}.")


@require_POST
def grant_remove(request: HttpRequest, pk: int) -> HttpResponse:
    services.grant_remove(actor=request.user, grant_id=pk)
    return _done(request, "Role revoked.")


access_patterns = (
    [
        path("", access_mine, name="mine"),
        path("manage/", access_manage, name="manage"),
        path("manage/users/", user_create, name="user_create"),
        path("manage/users/<int:pk>/active/", user_active, name="user_active"),
        path("manage/users/<int:pk>/token/", token_create, name="token_create"),
        path("manage/users/<int:pk>/token/revoke/", token_revoke, name="token_revoke"),
        path("manage/grants/", grant_add, name="grant_add"),
        path("manage/grants/<int:pk>/revoke/", grant_remove, name="grant_remove"),
    ],
    "access",
)
