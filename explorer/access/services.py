"""Who may do what, written: grants given and taken (admins; :func:`grant_bootstrap` for the
``floe_grant`` command), users created and (de)activated, API tokens created and revoked
(admins of every catalog, from the site). Each change is an audit entry. Keyword-only, named
noun_verb."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction

from explorer.access import permissions
from explorer.audit.record import audit_access, audit_grant
from explorer.catalogs import catalog_info
from explorer.errors import AccessInvalid
from explorer.models import CatalogGrant
from floe.errors import NotFound

# --- grants ---------------------------------------------------------------------------------------


def _grant_check(*, username: Any, catalog: Any, role: Any) -> tuple[Any, str, str]:
    if not isinstance(username, str) or not username:
        raise AccessInvalid("user", "user must be a user name")
    if not isinstance(catalog, str) or not catalog:
        raise AccessInvalid("catalog", "catalog must be a catalog name or *")
    if not isinstance(role, str) or role.lower() not in CatalogGrant.Role.values:
        raise AccessInvalid("role", f"role {role!r} is not one of "
                                    f"{', '.join(CatalogGrant.Role.values)}")
    if catalog != CatalogGrant.EVERY_CATALOG:
        try:
            catalog_info(catalog)
        except NotFound as exc:
            raise AccessInvalid("catalog", str(exc)) from None
    user = get_user_model().objects.filter(**{get_user_model().USERNAME_FIELD: username}).first()
    if user is None:
        raise AccessInvalid("user", f"user {username!r} does not exist")
    return user, catalog, role.lower()


def _grant_put(*, actor: Any, via: str, username: Any, catalog: Any, role: Any
               ) -> CatalogGrant:
    user, catalog, role = _grant_check(username=username, catalog=catalog, role=role)
    with transaction.atomic():
        grant, _ = CatalogGrant.objects.update_or_create(
            user=user, catalog=catalog,
            defaults={"role": role,
                      "granted_by": actor if actor is not None and actor.is_authenticated
                      else None})
        audit_grant(actor=actor, via=via, action="grant_add", grant=grant)
    return grant


def grant_add(*, actor: Any, username: Any, catalog: Any, role: Any,
              via: str = "session") -> CatalogGrant:
    """Give ``username`` ``role`` on ``catalog`` (``*``: every catalog), replacing the role
    they had there. Needs admin on that catalog."""
    if not isinstance(catalog, str) or not catalog:
        raise AccessInvalid("catalog", "catalog must be a catalog name or *")
    permissions.require_administer(user=actor, catalog=catalog)
    return _grant_put(actor=actor, via=via, username=username, catalog=catalog, role=role)


def grant_remove(*, actor: Any, grant_id: Any, via: str = "session") -> None:
    """Revoke a grant. Needs admin on its catalog."""
    try:
        grant = CatalogGrant.objects.select_related("user").get(pk=grant_id)
    except (CatalogGrant.DoesNotExist, ValueError, TypeError):
        raise NotFound(f"grant {grant_id} does not exist") from None
    permissions.require_administer(user=actor, catalog=grant.catalog)
    with transaction.atomic():
        audit_grant(actor=actor, via=via, action="grant_remove", grant=grant)
        grant.delete()


def grant_bootstrap(*, username: str, catalog: str, role: str) -> CatalogGrant:
    """``manage.py floe_grant USER CATALOG ROLE``: whoever runs the command on the server
    may grant (how the first admin is made)."""
    return _grant_put(actor=None, via="command", username=username, catalog=catalog, role=role)


def grant_revoke_bootstrap(*, username: str, catalog: str) -> str | None:
    """``manage.py floe_grant USER CATALOG --revoke``: the role revoked, or None."""
    grant = CatalogGrant.objects.select_related("user").filter(
        user__username=username, catalog=catalog).first()
    if grant is None:
        return None
    with transaction.atomic():
        audit_grant(actor=None, via="command", action="grant_remove", grant=grant)
        grant.delete()
    return grant.role


# --- users and API tokens (admins of every catalog, from the site) -----------------------------


def _user_get(user_id: Any) -> Any:
    try:
        return get_user_model().objects.get(pk=user_id)
    except (get_user_model().DoesNotExist, ValueError, TypeError):
        raise NotFound(f"user {user_id} does not exist") from None


def user_create(*, actor: Any, username: Any, password: Any, via: str = "session") -> Any:
    """A new active user (no role beyond FLOE_DEFAULT_ROLE until granted one). The name
    follows Django's rules and must be free; the password passes the site's password
    validators. Needs admin on every catalog."""
    from django.contrib.auth.password_validation import validate_password
    from django.core.exceptions import ValidationError as DjangoValidationError

    permissions.require_manage_users(user=actor)
    model = get_user_model()
    name = username.strip() if isinstance(username, str) else ""
    if not name:
        raise AccessInvalid("user", "give a user name")
    try:
        model.username_validator(name)
    except DjangoValidationError as exc:
        raise AccessInvalid("user", f"user name {name!r}: {' '.join(exc.messages)}") from None
    longest = model._meta.get_field(model.USERNAME_FIELD).max_length
    if longest is not None and len(name) > longest:
        raise AccessInvalid("user", f"a user name has at most {longest} characters")
    if model.objects.filter(**{f"{model.USERNAME_FIELD}__iexact": name}).exists():
        raise AccessInvalid("user", f"user {name!r} already exists")
    if not isinstance(password, str) or not password:
        raise AccessInvalid("password", "give a password")
    try:
        validate_password(password, model(**{model.USERNAME_FIELD: name}))
    except DjangoValidationError as exc:
        raise AccessInvalid("password", " ".join(exc.messages)) from None
    with transaction.atomic():
        user = model.objects.create_user(**{model.USERNAME_FIELD: name}, password=password)
        audit_access(actor=actor, via=via, action="user_create", user=user)
    return user


def user_active_set(*, actor: Any, user_id: Any, active: bool, via: str = "session") -> Any:
    """Deactivate a user (they can no longer sign in, their token stops working, they keep
    their grants for when they come back) or reactivate them. Not oneself; a superuser only
    by a superuser. Needs admin on every catalog."""
    permissions.require_manage_users(user=actor)
    user = _user_get(user_id)
    if user.pk == actor.pk:
        raise AccessInvalid("active", "you cannot deactivate or reactivate yourself")
    if user.is_superuser and not actor.is_superuser:
        raise AccessInvalid("active", f"{user.get_username()} is a superuser: only a "
                                      "superuser may change that account")
    if user.is_active == active:
        return user
    with transaction.atomic():
        user.is_active = active
        user.save(update_fields=["is_active"])
        audit_access(actor=actor, via=via, user=user,
                      action="user_activate" if active else "user_deactivate")
    return user


def token_create(*, actor: Any, user_id: Any, via: str = "session") -> str:
    """A new API token for a user (replacing the one they had): its key, to be shown once
    (``Authorization: Token KEY``). Needs admin on every catalog."""
    from rest_framework.authtoken.models import Token

    permissions.require_manage_users(user=actor)
    user = _user_get(user_id)
    if not user.is_active:
        raise AccessInvalid("user", f"{user.get_username()} is deactivated: reactivate them "
                                    "first")
    with transaction.atomic():
        replaced = Token.objects.filter(user=user).delete()[0] > 0
        token = Token.objects.create(user=user)
        audit_access(actor=actor, via=via, action="token_create", user=user,
                      replaced=replaced)
    return str(token.key)


def token_revoke(*, actor: Any, user_id: Any, via: str = "session") -> bool:
    """Revoke a user's API token; False when they had none. Needs admin on every catalog."""
    from rest_framework.authtoken.models import Token

    permissions.require_manage_users(user=actor)
    user = _user_get(user_id)
    with transaction.atomic():
        if not Token.objects.filter(user=user).delete()[0]:
            return False
        audit_access(actor=actor, via=via, action="token_revoke", user=user)
    return True
