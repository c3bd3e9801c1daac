"""Every permission decision of the explorer, for pages and the API alike (and for the pages to
hide what a user cannot do).

Roles, granted per catalog (:class:`explorer.models.CatalogGrant`; catalog ``*`` = every
catalog), each including the ones before it:

* **viewer** reads the catalog's tables, task runs and audit trail;
* **maintainer** also changes them: submits and cancels every kind of task;
* **admin** also grants and revokes roles on the catalog.

A user's role on a catalog is the highest of their grants on it and on ``*``, and at least
``FLOE_DEFAULT_ROLE`` (``viewer`` by default: signing in is enough to read) for signed-in users.
Superusers are admin everywhere. Anonymous visitors are viewers everywhere when
``FLOE_ALLOW_ANONYMOUS`` is true (the embedded ``make run`` setup) and nothing otherwise; they
never change anything.

``can_*`` functions answer, ``require_*`` functions raise :class:`explorer.errors.Forbidden`
(403, naming the role needed and the catalog). Everything is keyword-only.
"""

from __future__ import annotations

from enum import IntEnum
from typing import TYPE_CHECKING, Any

from django.conf import settings

from explorer.errors import Forbidden
from explorer.models import CatalogGrant

if TYPE_CHECKING:
    from collections.abc import Iterable

    from explorer.models import TaskRun

__all__ = [
    "Role",
    "role_of",
    "can_read",
    "can_change",
    "can_administer",
    "can_submit",
    "can_cancel",
    "can_view_run",
    "can_download",
    "can_manage_users",
    "can_administer_any",
    "readable_catalogs",
    "visible_catalogs",
    "require_read",
    "require_change",
    "require_administer",
    "require_submit",
    "require_cancel",
    "require_download",
    "require_manage_users",
    "require_administer_any",
]

EVERY_CATALOG = CatalogGrant.EVERY_CATALOG


class Role(IntEnum):
    """Ordered: a higher role can do everything a lower one can."""

    NONE = 0
    VIEWER = 1
    MAINTAINER = 2
    ADMIN = 3

    @classmethod
    def parse(cls, name: str) -> Role:
        return cls[name.strip().upper()]

    @property
    def label(self) -> str:
        return self.name.lower()


def _authenticated(user: Any) -> bool:
    return bool(user is not None and user.is_authenticated)


def _grants(user: Any) -> dict[str, Role]:
    """The user's grants by catalog, read once per user object (one per request)."""
    cached: dict[str, Role] | None = getattr(user, "_floe_grants", None)
    if cached is None:
        cached = {catalog: Role.parse(role) for catalog, role in
                  CatalogGrant.objects.filter(user_id=user.pk).values_list("catalog", "role")}
        try:
            user._floe_grants = cached
        except AttributeError:  # a user object that takes no attributes: just don't cache
            pass
    return cached


def forget_grants(user: Any) -> None:
    """Drop the grants cached on a user object (after granting or revoking in the same
    request)."""
    if hasattr(user, "_floe_grants"):
        del user._floe_grants


def role_of(*, user: Any, catalog: str) -> Role:
    """The user's role on ``catalog`` (``"*"``: the role they have on every catalog)."""
    if not _authenticated(user):
        return Role.VIEWER if settings.FLOE_ALLOW_ANONYMOUS else Role.NONE
    if user.is_superuser:
        return Role.ADMIN
    if not user.is_active:
        return Role.NONE
    grants = _grants(user)
    role = max(Role.parse(settings.FLOE_DEFAULT_ROLE), grants.get(EVERY_CATALOG, Role.NONE))
    if catalog != EVERY_CATALOG:
        role = max(role, grants.get(catalog, Role.NONE))
    return role


# --- answers ------------------------------------------------------------------------------------


def can_read(*, user: Any, catalog: str | None = None) -> bool:
    """Read ``catalog``; without one: read anything at all (the lists across catalogs, which
    show only :func:`readable_catalogs`)."""
    if catalog is None:
        return _authenticated(user) or bool(settings.FLOE_ALLOW_ANONYMOUS)
    return role_of(user=user, catalog=catalog) >= Role.VIEWER


def can_change(*, user: Any, catalog: str) -> bool:
    """Change the catalog's tables: every task kind, and cancelling runs. Never anonymous."""
    return _authenticated(user) and role_of(user=user, catalog=catalog) >= Role.MAINTAINER


def can_administer(*, user: Any, catalog: str) -> bool:
    """Grant and revoke roles on ``catalog`` (on ``"*"``: admins of every catalog only)."""
    return _authenticated(user) and role_of(user=user, catalog=catalog) >= Role.ADMIN


def can_manage_users(*, user: Any) -> bool:
    """Create, deactivate and reactivate users and create or revoke their API tokens: admins
    of every catalog (a grant on ``*``, or superusers) only, since a user reaches every
    catalog."""
    return can_administer(user=user, catalog=EVERY_CATALOG)


def can_administer_any(*, user: Any) -> bool:
    """Admin of at least one catalog: may open the page that manages access (and there grant
    and revoke roles on the catalogs they administer)."""
    if not _authenticated(user) or not user.is_active:
        return False
    return user.is_superuser or any(r >= Role.ADMIN for r in _grants(user).values())


def can_submit(*, user: Any, kind: str, catalog: str) -> bool:
    """Submit a task of ``kind`` on ``catalog``: every kind needs maintainer (an export and a
    dry run read only, but they are work queued on the shared worker)."""
    return can_change(user=user, catalog=catalog)


def can_view_run(*, user: Any, run: TaskRun) -> bool:
    return can_read(user=user, catalog=run.catalog)


def can_cancel(*, user: Any, run: TaskRun) -> bool:
    return can_change(user=user, catalog=run.catalog)


def can_download(*, user: Any, run: TaskRun) -> bool:
    """An export's file is its creator's alone."""
    return _authenticated(user) and run.created_by_id == user.pk and user.is_active


def readable_catalogs(*, user: Any, names: Iterable[str]) -> list[str]:
    return [n for n in names if can_read(user=user, catalog=n)]


def visible_catalogs(*, user: Any) -> set[str] | None:
    """The catalogs whose runs and audit entries a user may list: None for every catalog
    (anonymous reading, the default viewer role, a grant on ``*``, superusers), else the
    catalogs of their grants."""
    if can_read(user=user, catalog=EVERY_CATALOG):
        return None
    if not _authenticated(user):
        return set()
    return {c for c, r in _grants(user).items() if r >= Role.VIEWER}


# --- refusals -----------------------------------------------------------------------------------


def _who(user: Any) -> str:
    return f"user {user.get_username()!r}" if _authenticated(user) else "anonymous visitors"


def require_read(*, user: Any, catalog: str) -> None:
    if not can_read(user=user, catalog=catalog):
        raise Forbidden(f"{_who(user)} may not read catalog {catalog!r}: that needs the viewer "
                        "role on it")


def require_change(*, user: Any, catalog: str) -> None:
    if not can_change(user=user, catalog=catalog):
        raise Forbidden(f"{_who(user)} may not change tables of catalog {catalog!r}: that "
                        "needs the maintainer role on it")


def require_administer(*, user: Any, catalog: str) -> None:
    if not can_administer(user=user, catalog=catalog):
        where = "every catalog" if catalog == EVERY_CATALOG else f"catalog {catalog!r}"
        raise Forbidden(f"{_who(user)} may not manage the roles of {where}: that needs the "
                        f"admin role on it")


def require_submit(*, user: Any, kind: str, catalog: str) -> None:
    if not can_submit(user=user, kind=kind, catalog=catalog):
        raise Forbidden(f"{_who(user)} may not run {kind} on catalog {catalog!r}: tasks need "
                        "the maintainer role on the catalog")


def require_cancel(*, user: Any, run: TaskRun) -> None:
    if not can_cancel(user=user, run=run):
        raise Forbidden(f"{_who(user)} may not cancel task run {run.pk}: that needs the "
                        f"maintainer role on catalog {run.catalog!r}")


def require_download(*, user: Any, run: TaskRun) -> None:
    if not can_download(user=user, run=run):
        raise Forbidden(f"the file of task run {run.pk} can be downloaded by the user who "
                        "exported it only")


def require_manage_users(*, user: Any) -> None:
    if not can_manage_users(user=user):
        raise Forbidden(f"{_who(user)} may not manage users and API tokens: that needs the "
                        "admin role on every catalog (*)")


def require_administer_any(*, user: Any) -> None:
    if not can_administer_any(user=user):
        raise Forbidden(f"{_who(user)} may not manage access: that needs the admin role on "
                        "a catalog")
