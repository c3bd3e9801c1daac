"""Reads about access: who may do what on which catalog, said to the person asking (their
roles, who administers a catalog, why the Actions tab is not theirs and how to get it), and,
for admins, the users with their roles and API tokens. Decisions stay in
:mod:`explorer.access.permissions`; changes are :mod:`explorer.access.services`'."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Q
from django.urls import reverse

from explorer.access import permissions
from explorer.models import CatalogGrant
from explorer.tables import selectors

__all__ = ["CatalogAccess", "UserRow", "access_of", "actions_hint", "catalog_admins",
           "grant_catalogs", "users_list"]

#: What each role allows, as the pages say it (explorer.access.permissions decides).
ROLE_ALLOWS = {
    "none": "nothing on this catalog",
    "viewer": "read its tables, task runs and audit trail",
    "maintainer": "also change its tables: every task on the Actions tab, cancelling runs",
    "admin": "also grant and revoke roles on it",
}
#: How the first admin is made on the server (README "Getting write access").
FIRST_ADMIN = ("the first admin is made on the server: .venv/bin/python manage.py "
               "createsuperuser (admin of every catalog), or manage.py floe_grant USER {catalog} "
               "admin for an existing user")


def catalog_admins(*, catalog: str) -> list[str]:
    """The active users who may grant roles on ``catalog``: superusers and the admins of it
    or of every catalog, by name."""
    admins = get_user_model().objects.filter(is_active=True).filter(
        Q(is_superuser=True) | Q(catalog_grants__role=CatalogGrant.Role.ADMIN,
                                 catalog_grants__catalog__in=[
                                     catalog, CatalogGrant.EVERY_CATALOG]))
    return sorted({u.get_username() for u in admins})


def _ask(catalog: str) -> str:
    admins = catalog_admins(catalog=catalog)
    if admins:
        return f"ask an admin ({', '.join(admins)})"
    return f"no one administers catalog {catalog} yet: {FIRST_ADMIN.format(catalog=catalog)}"


def actions_hint(*, user: Any, catalog: str, next_url: str = "") -> dict[str, str] | None:
    """Why the Actions tab of a table of ``catalog`` is not the user's and how to get it
    (``text``; ``url``, the page to go on to; ``label``, a word for the tab); None when it is
    theirs."""
    if permissions.can_change(user=user, catalog=catalog):
        return None
    if not (user is not None and user.is_authenticated):
        login = reverse("login") + (f"?next={next_url}" if next_url else "")
        return {"text": f"Sign in to act on tables: changes need the maintainer role on "
                        f"catalog {catalog}.", "url": login, "label": "sign in"}
    role = permissions.role_of(user=user, catalog=catalog).label
    return {"text": f"You are signed in as {user.get_username()} with the {role} role on "
                    f"catalog {catalog}; {_ask(catalog)} for maintainer.",
            "url": reverse("access:mine") + f"#catalog-{catalog}", "label": "maintainers"}


@dataclass(frozen=True)
class CatalogAccess:
    """A configured catalog as the access page shows it to one person."""

    catalog: str
    role: str
    allows: str
    admins: list[str]
    ask: str


def access_of(*, user: Any) -> list[CatalogAccess]:
    """The user's role on every configured catalog (``*`` first when they have a grant on
    it), what it allows and whom to ask for more."""
    names = [c.name for c in selectors.catalog_list()]
    rows = []
    for name in names:
        role = permissions.role_of(user=user, catalog=name).label
        rows.append(CatalogAccess(name, role, ROLE_ALLOWS[role],
                                  catalog_admins(catalog=name), _ask(name)))
    return rows


def grant_catalogs(*, user: Any) -> list[str]:
    """The catalogs the user may grant roles on (``*`` first for admins of every catalog)."""
    names = [c.name for c in selectors.catalog_list()]
    every = [CatalogGrant.EVERY_CATALOG] if permissions.can_administer(
        user=user, catalog=CatalogGrant.EVERY_CATALOG) else []
    return every + [n for n in names if permissions.can_administer(user=user, catalog=n)]


@dataclass(frozen=True)
class UserRow:
    """A user on the page that manages access: their grants on the catalogs the viewer
    administers, and whether (since when) they have an API token; never the token's key."""

    pk: int
    username: str
    is_active: bool
    is_superuser: bool
    last_login: dt.datetime | None
    token_created: dt.datetime | None
    grants: list[CatalogGrant] = field(default_factory=list)


def users_list(*, user: Any) -> list[UserRow]:
    """Every user, by name, for admins (of any catalog: they grant roles by name); each with
    the grants the viewer may revoke."""
    permissions.require_administer_any(user=user)
    allowed = set(grant_catalogs(user=user))
    grants: dict[int, list[CatalogGrant]] = {}
    for g in CatalogGrant.objects.select_related("user").order_by("catalog"):
        if g.catalog in allowed:
            grants.setdefault(g.user_id, []).append(g)
    users: Iterable[Any] = get_user_model().objects.select_related("auth_token").order_by(
        get_user_model().USERNAME_FIELD)
    rows = []
    for u in users:
        token = getattr(u, "auth_token", None)
        rows.append(UserRow(u.pk, u.get_username(), u.is_active, u.is_superuser, u.last_login,
                            token.created if token is not None else None, grants.get(u.pk, [])))
    return rows
