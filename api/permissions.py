from __future__ import annotations

from typing import TYPE_CHECKING

from rest_framework.permissions import SAFE_METHODS, BasePermission

from explorer.access import permissions

if TYPE_CHECKING:  # rest_framework.views imports this module through its settings
    from rest_framework.request import Request
    from rest_framework.views import APIView


class CatalogRoles(BasePermission):
    """The API's gate, over :mod:`explorer.access.permissions`: reads need the viewer role on the
    URL's catalog (anonymous clients have it when FLOE_ALLOW_ANONYMOUS is true); every other
    method needs a signed-in user (session or token), and the service it calls checks the
    role the change needs on the catalog it acts on (maintainer for tasks, admin for grants).
    Unauthenticated clients get 401, signed-in ones without the role 403."""

    message = "your role on this catalog does not allow this"

    def has_permission(self, request: Request, view: APIView) -> bool:
        if request.method in SAFE_METHODS:
            catalog = view.kwargs.get("catalog") if hasattr(view, "kwargs") else None
            return permissions.can_read(user=request.user,
                                        catalog=catalog if isinstance(catalog, str) else None)
        return bool(request.user and request.user.is_authenticated)
